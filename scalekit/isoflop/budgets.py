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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scalekit.checks import check_number, fail
from scalekit.errors import InputError


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
    rounded = [float(f"{m:.0f}e{e:.0f}") for m, e in zip(mantissa.ravel(), exponent.ravel())]
    return np.array(rounded).reshape(values.shape)


def check_compute(compute, *, column: str = "compute") -> np.ndarray:
    """Return ``compute`` as floats, rejecting non-finite or non-positive values."""
    compute = np.asarray(compute, dtype=float)
    bad = np.flatnonzero(~(np.isfinite(compute) & (compute > 0)))
    if bad.size:
        raise InputError(f"compute must be a positive finite number of FLOPs, got "
                         f"{compute[bad[0]]!r} (data row {bad[0] + 1})", column=column)
    return compute


def assign_budgets(compute, *, figures: int = 2, nominal=None,
                   tolerance: float = 0.1) -> BudgetAssignment:
    """Give every point its compute budget.

    Parameters
    ----------
    compute : array
        FLOPs of each point (positive).
    figures : int
        Significant figures kept when rounding (used when ``nominal`` is None).
    nominal : sequence of float, optional
        The study's budgets in FLOPs (e.g. Hoffmann et al. 2022: 6e18, 1e19, …, 3e21).
    tolerance : float
        Largest distance, in decades of compute, from a point to its nominal budget.
    """
    compute = check_compute(compute)
    check_number("figures", figures, low=1, high=15, integer=True)
    if nominal is None:
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
