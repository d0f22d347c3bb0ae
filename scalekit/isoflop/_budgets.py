"""Group IsoFLOP points by compute budget.

Points of one IsoFLOP profile share a budget, but files carry it with rounding
noise (``1.0e19`` vs ``9.99e18``) or, for digitised figures, with a few percent
of scatter. Two ways to group them, both reported:

* round every compute to ``figures`` significant figures (default 2, halves
  rounded up); the budget's value in later fits is the geometric mean of its
  points' compute, so rounding does not shift it;
* snap every compute to the nearest of the study's ``nominal`` budgets when it
  lies within ``tolerance`` decades of it; points near no nominal budget are
  left out, and how many is reported.

By default (``figures=None``) the budgets are first looked for as clusters of
log-spaced compute (:func:`find_budgets`): points read off a figure scatter by
a few percent around each budget, so rounding splits one budget into several.
When clusters hold most points they are the nominal budgets; otherwise every
compute is rounded to 2 significant figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalekit.checks import check_number, fail
from scalekit.errors import InputError
from scalekit.formatting import format_number


@dataclass(frozen=True)
class BudgetAssignment:
    """Budget of each point (``nan`` where a point belongs to no budget).

    Attributes
    ----------
    budget : ndarray
        Budget in FLOPs per point, ``nan`` for points left out.
    method : str
        ``"round to 2 significant figures"`` or ``"nearest nominal budget within 0.1 dex"``.
    n_left_out : int
        Points that fell near no nominal budget.
    """

    budget: np.ndarray
    method: str
    n_left_out: int

    @property
    def budgets(self) -> np.ndarray:
        """The distinct budgets, ascending."""
        return np.unique(self.budget[np.isfinite(self.budget)])


def round_significant(values, figures: int = 2) -> np.ndarray:
    """Round positive ``values`` to ``figures`` significant figures, halves up.

    The result is the float nearest to the rounded decimal (built from its
    digits, not by multiplying by a power of ten), so rounding it again
    changes nothing.
    """
    values = np.asarray(values, dtype=float)
    exponent = np.floor(np.log10(values)) - (figures - 1)
    mantissa = np.floor(values / 10.0 ** exponent + 0.5)
    rounded = [float(f"{m:.0f}e{e:.0f}") for m, e in zip(mantissa.ravel(), exponent.ravel(), strict=True)]
    return np.array(rounded).reshape(values.shape)


#: find_budgets: the half-width (decades) of the densest window, the half-width of a
#: budget around its centre, the fewest points a budget holds, and the share of all
#: points the budgets must hold for the compute to count as clustered.
CLUSTER_WIDTH, CLUSTER_TOLERANCE, CLUSTER_MIN_POINTS, CLUSTER_SHARE = 0.02, 0.05, 5, 0.5


def find_budgets(compute) -> np.ndarray | None:
    """The budgets around which log-spaced ``compute`` clusters, ascending, or None.

    Greedily, the point with the most neighbours within :data:`CLUSTER_WIDTH` decades
    gives a budget (the median of those neighbours); the points within
    :data:`CLUSTER_TOLERANCE` decades of it are taken and the search goes on while a
    window holds :data:`CLUSTER_MIN_POINTS` points. None unless at least three budgets
    hold :data:`CLUSTER_SHARE` of the points and some budget merges points that
    rounding to 2 significant figures would split (else rounding finds them as well).
    """
    x = np.log10(check_compute(compute))
    left = np.ones(x.size, bool)
    centres = []
    while left.sum() >= CLUSTER_MIN_POINTS:
        xs = x[left]
        near = np.abs(xs[:, None] - xs[None, :]) <= CLUSTER_WIDTH
        best = int(near.sum(axis=1).argmax())
        if near[best].sum() < CLUSTER_MIN_POINTS:
            break
        centre = float(np.median(xs[near[best]]))
        centres.append(centre)
        left &= np.abs(x - centre) > CLUSTER_TOLERANCE
    taken = 1.0 - left.mean()
    if len(centres) < 3 or taken < CLUSTER_SHARE:
        return None
    centres = np.sort(np.array(centres))
    members = np.abs(x[:, None] - centres[None, :]) <= CLUSTER_TOLERANCE
    rounded = round_significant(10.0 ** x)
    if all(np.unique(rounded[members[:, k]]).size <= 1 for k in range(centres.size)):
        return None
    return 10.0 ** centres


def check_compute(compute, *, column: str = "compute") -> np.ndarray:
    """Return ``compute`` as floats, rejecting non-finite or non-positive values."""
    compute = np.asarray(compute, dtype=float)
    bad = np.flatnonzero(~(np.isfinite(compute) & (compute > 0)))
    if bad.size:
        raise InputError(f"compute must be a positive finite number of FLOPs, got "
                         f"{compute[bad[0]]!r} (data row {bad[0] + 1})", column=column)
    return compute


def assign_budgets(compute, *, figures: int | None = 2, nominal=None,
                   tolerance: float = 0.1) -> BudgetAssignment:
    """Give every point its compute budget.

    Parameters
    ----------
    compute : array
        FLOPs of each point (positive).
    figures : int or None
        Significant figures kept when rounding (used when ``nominal`` is None); None:
        the budgets :func:`find_budgets` finds, as nominal budgets within
        :data:`CLUSTER_TOLERANCE` decades, else 2 figures.
    nominal : sequence of float, optional
        The study's budgets in FLOPs (e.g. Hoffmann et al. 2022: 6e18, 1e19, …, 3e21).
    tolerance : float
        Largest distance, in decades of compute, from a point to its nominal budget.
    """
    compute = check_compute(compute)
    if figures is None and nominal is None:
        found = find_budgets(compute)
        if found is not None:
            assignment = assign_budgets(compute, nominal=found, tolerance=CLUSTER_TOLERANCE)
            listed = ", ".join(format_number(b, 2) for b in found)
            return BudgetAssignment(assignment.budget, f"{found.size} budgets found as "
                                    f"clusters of compute ({listed}) within "
                                    f"{CLUSTER_TOLERANCE:g} dex", assignment.n_left_out)
        figures = 2
    if nominal is None:
        check_number("figures", figures, low=1, high=15, integer=True)
        return BudgetAssignment(round_significant(compute, figures),
                                f"round to {figures} significant figures", 0)
    check_number("tolerance", tolerance, low=0, low_open=True)
    nominal = np.unique(np.asarray(nominal, dtype=float))
    if nominal.size == 0 or not np.all(np.isfinite(nominal) & (nominal > 0)):
        raise fail("budgets", nominal.tolist(), "a non-empty list of positive FLOP counts")
    distance = np.abs(np.log10(compute)[:, None] - np.log10(nominal)[None, :])
    nearest = distance.argmin(axis=1)
    near = distance[np.arange(compute.size), nearest] <= tolerance
    budget = np.where(near, nominal[nearest], np.nan)
    return BudgetAssignment(budget, f"nearest nominal budget within {tolerance:g} dex",
                            int((~near).sum()))
