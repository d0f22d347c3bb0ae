"""Is a fitted floor believable? Checks of a law's asymptote against the losses reached.

A law's asymptote (Chinchilla's ``E`` in the task law's step 1, the depth law's ``L0``,
the inference-k law's ``E``) is the loss no size reaches. :func:`asymptote_checks`
says when it should not be believed:

- ``on_bound``: it sits on its lower bound 0 (below a millionth of the least loss
  fitted): the data do not bound it from below, and the law's fall is carried by
  its other terms alone;
- ``asymptote_above_data``: it lies above a loss already reached, by the data or by a
  target run, by more than two residual scales (in log, so noise alone rarely
  trips it): the law says no run can get there, and one did.
"""

from __future__ import annotations

import numpy as np

from scalekit.diagnostics import Diagnostic
from scalekit.formatting import format_number

#: An asymptote below this share of the least loss fitted counts as on its bound 0.
ON_ZERO = 1e-6
#: Residual scales (log) by which a reached loss must lie below the asymptote to count.
MARGIN = 2.0


def asymptote_checks(floor: float, reached, *, residual_scale: float, name: str,
                     where: str = "", target: float | None = None) -> list[Diagnostic]:
    """Diagnostics of the fitted asymptote ``floor`` (parameter ``name``) against the losses
    ``reached`` by the data and, where known, ``target`` (the loss a target run reached).

    ``where`` prefixes the messages (e.g. the task); ``residual_scale`` is the fit's root
    mean square log residual.
    """
    reached = np.asarray(reached, dtype=float)
    least = float(np.min(reached))
    prefix = f"{where}: " if where else ""
    if not floor > ON_ZERO * least:
        return [Diagnostic(
            "on_bound", "warning", f"{prefix}the asymptote `{name}` = {format_number(floor)} "
            f"sits on its bound 0: the data do not bound it from below, so the law's fall "
            f"towards larger models rests on its other terms alone; fix `{name}` or add larger "
            "runs", param=name, value=float(floor))]
    found = []
    margin = np.exp(MARGIN * max(float(residual_scale), 0.0))
    for loss, what in ((least, "a loss the data reached"), (target, "the target run's loss")):
        if loss is not None and np.isfinite(loss) and floor > loss * margin:
            found.append(Diagnostic(
                "asymptote_above_data", "warning", f"{prefix}the fitted floor `{name}` = "
                f"{format_number(floor)} lies above {what}, {format_number(loss)} (by more "
                f"than {MARGIN:g} residual scales): the law says no model gets there, and one "
                f"did; do not read `{name}` as the irreducible loss: add larger runs, or fix it "
                "below", param=name, value=float(floor)))
    return found
