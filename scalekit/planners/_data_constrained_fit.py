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
from scipy.stats import chi2

from scalekit.checks import check_choice, fail
from scalekit.diagnostics import Diagnostic
from scalekit.fit import fit_law
from scalekit.fit import law_inputs
from scalekit.fit import profile_parameter
from scalekit.laws import get_law
from scalekit.laws import DEFAULT_RULE, data_constrained_law

#: The paper's C4 Chinchilla terms (``log A = 6.255414``, ``log B = 7.3049974``,
#: ``log E = 0.6254804``, ``alpha = beta = 0.3526596``; the datablations README).
PAPER_C4_BASE = {"E": float(np.exp(0.6254804)), "A": float(np.exp(6.255414)),
                 "B": float(np.exp(7.3049974)), "alpha": 0.3526596, "beta": 0.3526596}
BASE_NAMES = ("E", "A", "B", "alpha", "beta")
PROTOCOLS = ("two_stage", "joint")
#: Values at which ``rstar_d`` and ``rstar_n`` are profiled: 8 a decade from 0.1 to 1e5.
PROFILE_GRID = np.geomspace(0.1, 1e5, 49)
DECAY_NAMES = ("rstar_d", "rstar_n")


def _single_epoch(X):
    """Points that repeat neither data nor parameters under the law's default ``U_N``."""
    scale, power = DEFAULT_RULE
    unique_data = np.minimum(X["unique_tokens"], X["tokens"])
    return (X["tokens"] <= X["unique_tokens"]) & (X["params"] <= scale * unique_data ** power)


def fit_data_constrained(X: Mapping, y, *, protocol: str = "two_stage",
                         base: Mapping[str, float] | None = None, profile: bool = True,
                         **options):
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
    profile : bool
        Profile the objective over ``rstar_d`` and ``rstar_n`` (:data:`PROFILE_GRID`,
        :func:`scalekit.fit._profile.profile_parameter`, at the fit's ``ci_level``): each
        one's profile-likelihood interval goes into ``stats["profile_intervals"]`` (None
        for an end the grid leaves open) and a ``not_identified`` diagnostic names a decay
        constant whose interval is open (the whole profiles: ``profile_parameter``).
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
        return _profiled(fit, law, law_inputs(law, X), np.asarray(y, dtype=float), {},
                         options) if profile else fit
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
    return _profiled(fit, data_constrained_law(held), inputs, y, held, options) if profile else fit


def _grid(value):
    """:data:`PROFILE_GRID` with the fitted ``value`` and values 10% and 25% either side."""
    return np.unique(np.concatenate([PROFILE_GRID, value * np.array([0.8, 0.9, 1.0, 1.1, 1.25])]))


def _profiled(fit, law, X, y, held, options):
    """``fit`` with the profiles of the decay constants in its stats and diagnostics."""
    settings = {k: options[k] for k in ("loss", "delta", "seed") if k in options}
    profiles = {name: profile_parameter(law, X, y, name, _grid(fit.values[name]), fixed=held,
                                        level=fit.ci_level, minimum=fit.stats["objective"],
                                        **settings)
                for name in DECAY_NAMES}
    fit.stats["profile_intervals"] = {name: list(p.interval) for name, p in profiles.items()}
    for name, p in profiles.items():
        if p.identified:
            continue
        low, high = (f"{end:.3g}" if end is not None else "open" for end in p.interval)
        edge = -1 if p.interval[1] is None else 0
        fit.diagnostics.append(Diagnostic(
            "not_identified", "warning",
            f"`{name}` is not pinned by these data: its profile-likelihood "
            f"{fit.ci_level:.0%} interval is ({low}, {high}); held at {p.values[edge]:g} the "
            f"objective is {p.objective[edge] / p.objective.min() - 1:.2%} above its least "
            f"value (deviance {p.deviance[edge]:.2f}, under the {chi2.ppf(p.level, 1):.2f} of "
            "the interval); add runs with more repetitions or hold it",
            param=name, value=list(p.interval)))
    return fit
