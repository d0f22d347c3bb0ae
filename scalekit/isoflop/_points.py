"""The columns IsoFLOP analyses read, and the FLOP convention that links them.

Two conventions, stated in every report:

* ``"6ND"`` — compute is ``k·N·D`` with ``k = flops_per_param_token`` (6 for a
  dense transformer's forward and backward pass, Kaplan et al. 2020); given two
  of compute, params and tokens the third follows.
* ``"counted"`` — the data carry counted FLOPs in ``compute`` and those are
  used as they are; a missing N or D is still derived from ``C = k·N·D``.

Whether N counts embedding parameters is whatever the ``params`` column holds;
choose the column (``--map params=...``) to change it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.curves import Curves
from scalekit.compute import (FLOPS_PER_PARAM_TOKEN, flops_rule, params_for_compute,
                              tokens_for_compute, training_flops)
from scalekit.errors import InputError

CONVENTIONS = ("6ND", "counted")


def convention_text(convention: str, flops_per_param_token: float) -> str:
    """One line naming the FLOP convention, for reports."""
    if convention == "6ND":
        return f"{flops_rule(flops_per_param_token)} (N as given in the params column)"
    return (f"counted FLOPs as given; a missing N or D derived from "
            f"{flops_rule(flops_per_param_token)}")


def isoflop_points(data, *, loss: str = "loss", convention: str = "6ND",
                   flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN,
                   source: str | None = None) -> Curves:
    """Curves whose frame has ``compute``, ``params``, ``tokens``, ``loss`` (and ``run`` if
    given); their ``notes`` say what was derived.

    Parameters
    ----------
    data : DataFrame or mapping of arrays
        Tidy points with ``loss`` and at least two of ``compute``, ``params``, ``tokens``.
    loss : str
        Name of the metric column.
    convention : {"6ND", "counted"}
    flops_per_param_token : float
        k in C = k·N·D.
    source : str, optional
        File name for error messages.
    """
    check_choice("convention", convention, CONVENTIONS)
    check_number("flops_per_param_token", flops_per_param_token, low=0, low_open=True)
    frame = pd.DataFrame(dict(data)) if isinstance(data, Mapping) else pd.DataFrame(data)
    if frame.empty:
        raise InputError("no points to analyse", source=source)
    if loss not in frame:
        raise InputError(f"no {loss!r} column", source=source)
    have = {name for name in ("compute", "params", "tokens") if name in frame}
    if len(have) < 2 or (convention == "counted" and "compute" not in have):
        need = ("compute and one of params, tokens" if convention == "counted"
                else "two of compute, params, tokens")
        raise InputError(f"IsoFLOP analysis needs {need}; the data have "
                         f"{', '.join(sorted(have)) or 'none of them'}", source=source)
    out = pd.DataFrame({"run": frame["run"]} if "run" in frame else {}, index=frame.index)
    for name in sorted(have) + [loss]:
        values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
        if bad.size:
            raise InputError(f"{name} must be a positive finite number, got "
                             f"{frame[name].iloc[bad[0]]!r} (data row {bad[0] + 1})",
                             source=source, column=name)
        out[name if name != loss else "loss"] = values
    sizes = out[[c for c in out.columns if c not in ("run", "loss")]].drop_duplicates()
    if len(sizes) > 1 and np.ptp(out["loss"].to_numpy()) == 0:
        raise InputError(f"every point has {loss} = {out['loss'].iloc[0]:g}, but IsoFLOP "
                         "profiles need it to vary: check the column", source=source, column=loss)
    k = flops_per_param_token
    notes = []
    if "params" not in have:
        out["params"] = params_for_compute(out["compute"], out["tokens"], flops_per_param_token=k)
        notes.append(f"params derived as N = C/({k:g}·D)")
    elif "tokens" not in have:
        out["tokens"] = tokens_for_compute(out["compute"], out["params"], flops_per_param_token=k)
        notes.append(f"tokens derived as D = C/({k:g}·N)")
    elif convention == "6ND":
        given = out["compute"].to_numpy() if "compute" in out else None
        out["compute"] = training_flops(out["params"], out["tokens"], flops_per_param_token=k)
        if given is not None and not np.allclose(given, out["compute"], rtol=1e-6, atol=0):
            notes.append(f"compute recomputed as C = {k:g}·N·D (the compute column is ignored; "
                         "use the counted convention to keep it)")
    return Curves(out.reset_index(drop=True), notes=tuple(notes), source=source)


def final_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run's last logged point (by step, else by compute); rows as they are without runs."""
    if "run" not in frame or frame["run"].is_unique:
        return frame
    order = "step" if "step" in frame else "compute"
    return frame.sort_values(["run", order]).groupby("run", sort=False).tail(1)
