"""Which points of each IsoFLOP budget its parabola describes.

A parabola in log N is the second-order expansion of a budget's profile at its
minimum. IsoFLOP grids are often lopsided (the lowest loss at the second size of
ten) and profiles are not symmetric (loss climbs faster for large models trained
on few tokens), so a parabola through every size is pulled away from the
minimum (Porian et al. 2024, who read the minimum off a local interpolant for
this reason). Three ways to choose the points, per budget:

* ``"auto"`` (default) — grow a window of consecutive sizes around the lowest
  loss, starting from the three sizes nearest it, for as long as the parabola
  still describes the window: its residual variance passes an F test, at
  ``level``, against the pure error — the residual variance of cubics through
  the five sizes around each budget's minimum, pooled over budgets (a cubic there
  absorbs the asymmetry, so what is left is the scatter of the losses);
* an integer ``k`` — the ``k`` consecutive sizes centred on the lowest loss;
* ``"all"`` — every point (Hoffmann et al. 2022).

Whatever the choice, the lack-of-fit p-value of each budget's parabola against
the same pure error is reported, so a parabola that does not describe its
points is flagged (``profile_misfit``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from scalekit.checks import check_choice, check_number
from scalekit.isoflop._parabolas import Groups

#: Sizes around each minimum whose cubic residuals give the pure error.
PURE_ERROR_SIZES = 5
#: Smallest window: three sizes determine a parabola exactly.
SMALLEST = 3


@dataclass(frozen=True)
class Windows:
    """Chosen points per budget: ``start[k] .. stop[k]`` (indices into the sorted points).

    Attributes
    ----------
    start, stop : ndarray of int
    pure_error : float
        Pooled residual variance of the cubics (``nan`` when no budget has
        :data:`PURE_ERROR_SIZES` sizes).
    pure_dof : int
        Its degrees of freedom.
    misfit_p : ndarray
        Per budget, the p-value of the parabola's lack of fit against the pure error
        (``nan`` where the window leaves no residual degree of freedom or there is no
        pure error).
    method : str
        How the windows were chosen, for reports.
    """

    start: np.ndarray
    stop: np.ndarray
    pure_error: float
    pure_dof: int
    misfit_p: np.ndarray
    method: str

    def mask(self, n: int) -> np.ndarray:
        """Boolean mask over the ``n`` sorted points: inside a chosen window."""
        keep = np.zeros(n, bool)
        for a, b in zip(self.start, self.stop, strict=True):
            keep[a:b] = True
        return keep


def check_window(window) -> None:
    """Reject a ``window`` that is neither "auto", "all" nor an integer >= 3."""
    if isinstance(window, str):
        check_choice("window", window, ("auto", "all"))
    else:
        check_number("window", window, low=SMALLEST, integer=True)


def choose_windows(x: np.ndarray, y: np.ndarray, groups: Groups, *, window="auto",
                   level: float = 0.95) -> Windows:
    """Choose each budget's points (see the module docstring).

    Parameters
    ----------
    x, y : ndarray
        Log size and loss of every point, sorted by budget and then by ``x``.
    groups : Groups
        The budgets.
    window : "auto", "all" or int
    level : float
        Level of the lack-of-fit test that stops an automatic window.
    """
    check_window(window)
    pure, pure_dof = pure_error(x, y, groups)
    tested = pure_dof > 0 and pure > 0
    starts, stops, p_values = [], [], []
    for first, n in zip(groups.starts, groups.sizes, strict=True):
        xs, ys = x[first:first + n], y[first:first + n]
        best = int(np.argmin(ys))
        if window == "all":
            span = (0, n)
        elif window != "auto":
            span = _centred(n, best, min(window, n))
        elif not tested:
            span = (0, n)
        else:
            span = _centred(n, best, min(SMALLEST, n))
            for k in range(SMALLEST + 1, n + 1):
                candidate = _centred(n, best, k)
                if _misfit_p(xs[slice(*candidate)], ys[slice(*candidate)], pure,
                             pure_dof) >= 1 - level:
                    span = candidate
        p_values.append(_misfit_p(xs[slice(*span)], ys[slice(*span)], pure, pure_dof)
                        if tested else np.nan)
        starts.append(first + span[0])
        stops.append(first + span[1])
    if window == "auto":
        method = (f"grown around each minimum while the parabola passes a {level:g} F test "
                  f"against the pure error ({pure_dof} degrees of freedom)" if tested else
                  f"all points (no budget has {PURE_ERROR_SIZES} sizes to measure the pure "
                  "error, so no window could be chosen by fit quality)")
    elif window == "all":
        method = "all points"
    else:
        method = f"the {window} sizes centred on each budget's lowest loss"
    return Windows(np.array(starts), np.array(stops), float(pure), int(pure_dof),
                   np.array(p_values, dtype=float), method)


def pure_error(x: np.ndarray, y: np.ndarray, groups: Groups) -> tuple[float, int]:
    """Pooled residual variance of cubics through the sizes around each budget's minimum."""
    rss, dof = 0.0, 0
    for first, n in zip(groups.starts, groups.sizes, strict=True):
        if n < PURE_ERROR_SIZES:
            continue
        xs, ys = x[first:first + n], y[first:first + n]
        lo, hi = _centred(n, int(np.argmin(ys)), PURE_ERROR_SIZES)
        r, d = polynomial_rss(xs[lo:hi], ys[lo:hi], 3)
        rss, dof = rss + r, dof + d
    return (rss / dof if dof else float("nan")), dof


def polynomial_rss(x: np.ndarray, y: np.ndarray, degree: int) -> tuple[float, int]:
    """Residual sum of squares and residual degrees of freedom of a least-squares polynomial."""
    half = np.ptp(x) / 2
    u = (x - x.mean()) / (half if half > 0 else 1.0)
    design = np.vander(u, degree + 1)
    coef, _, rank, _ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    return float(residual @ residual), int(x.size - rank)


def _misfit_p(x, y, pure: float, pure_dof: int) -> float:
    rss, dof = polynomial_rss(x, y, 2)
    if dof == 0 or not pure_dof or not pure > 0:
        return float("nan")
    return float(special.fdtrc(dof, pure_dof, rss / dof / pure))  # F survival function


def _centred(n: int, best: int, k: int) -> tuple[int, int]:
    """The ``k`` consecutive indices of ``0..n-1`` centred on ``best`` (shifted at the ends)."""
    start = max(0, min(best - k // 2, n - k))
    return start, start + k
