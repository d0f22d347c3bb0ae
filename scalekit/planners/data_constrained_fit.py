"""Fitting the data-constrained law as Muennighoff et al. (2023) do, or all at once.

Their protocol (Appendix A; the repository's ``utils/parametric_fit.ipynb``): the
Chinchilla terms ``E, A, B, alpha, beta`` come from a fit without repetition (for
C4, a fit with ``alpha = beta`` to Chinchilla's C4 IsoFLOP points,
:data:`PAPER_C4_BASE`); then ``R*_D`` and ``R*_N`` are fitted on the repeated runs with
those terms held, ``U_N`` being the compute-optimal size for ``U_D`` tokens under them.
Both stages minimise the Huber loss (delta 1e-3) of log residuals over a grid of starts.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scalekit.checks import check_choice, fail
from scalekit.fit import fit_law
from scalekit.fit.inputs import law_inputs
from scalekit.laws import get_law
from scalekit.laws.data_constrained import DEFAULT_RULE, data_constrained_law

#: The paper's C4 Chinchilla terms (``log A = 6.255414``, ``log B = 7.3049974``,
#: ``log E = 0.6254804``, ``alpha = beta = 0.3526596``; the datablations README).
PAPER_C4_BASE = {"E": float(np.exp(0.6254804)), "A": float(np.exp(6.255414)),
                 "B": float(np.exp(7.3049974)), "alpha": 0.3526596, "beta": 0.3526596}
BASE_NAMES = ("E", "A", "B", "alpha", "beta")
PROTOCOLS = ("two_stage", "joint")


def _single_epoch(X):
    """Points that repeat neither data nor parameters under the law's default ``U_N``."""
    scale, power = DEFAULT_RULE
    unique_data = np.minimum(X["unique_tokens"], X["tokens"])
    return (X["tokens"] <= X["unique_tokens"]) & (X["params"] <= scale * unique_data ** power)


def fit_data_constrained(X: Mapping, y, *, protocol: str = "two_stage",
                         base: Mapping[str, float] | None = None, **options):
    """Fit the data-constrained law, by the paper's two stages or jointly.

    Parameters
    ----------
    X : mapping or DataFrame
        ``params``, ``tokens`` and ``unique_tokens`` (or their usual symbols).
    y : 1-d array
        Losses.
    protocol : {"two_stage", "joint"}
        ``"two_stage"`` holds the Chinchilla terms at ``base`` and fits ``rstar_d``,
        ``rstar_n`` with ``U_N`` from them; ``"joint"`` fits all seven parameters at
        once (``U_N = 0.051 U_D``) and takes no ``base``.
    base : mapping, optional
        ``E, A, B, alpha, beta`` for the two stages (e.g. :data:`PAPER_C4_BASE`); by
        default fitted with the ``chinchilla`` law on the points of ``X`` that repeat
        neither data (``D <= U``) nor parameters (``N <= 0.051 U``).
    **options
        Passed to :func:`scalekit.fit.fit_law` for the (last) stage: ``bootstrap``,
        ``starts``, ``loss``, ``delta``, ``seed``, ...

    Returns
    -------
    FitResult
        The fit of the last stage; ``stats["protocol"]`` names the protocol and, for
        two stages, ``stats["base_points"]`` how many points the base came from (0 when
        given). Its law carries the base's ``U_N`` rule, which a ``to_dict`` round trip
        does not keep (it gives back the registered law).
    """
    check_choice("protocol", protocol, PROTOCOLS)
    law = get_law("data_constrained")
    if protocol == "joint":
        if base is not None:
            raise fail("base", "given", "None with the 'joint' protocol (it fits the "
                       "Chinchilla terms itself)")
        fit = fit_law(law, X, y, **options)
        fit.stats["protocol"] = protocol
        return fit
    inputs = law_inputs(law, X)
    y = np.asarray(y, dtype=float)
    base_points = 0
    if base is None:
        single = _single_epoch(inputs)
        base_points = int(single.sum())
        stage_one = {k: options[k] for k in ("loss", "delta", "seed") if k in options}
        first = fit_law("chinchilla", {"params": inputs["params"][single],
                                       "tokens": inputs["tokens"][single]}, y[single],
                        **stage_one)
        base = first.values
    missing = [name for name in BASE_NAMES if name not in base]
    if missing:
        raise fail("base", f"without {', '.join(missing)}",
                   f"a mapping giving {', '.join(BASE_NAMES)}")
    held = {name: float(base[name]) for name in BASE_NAMES}
    fit = fit_law(data_constrained_law(held), inputs, y, fixed=held, **options)
    fit.stats["protocol"] = protocol
    fit.stats["base_points"] = base_points
    return fit
