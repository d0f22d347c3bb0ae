"""Which runs of a sweep are prefixes of one another, read off their curves.

Under a constant learning rate (or a WSD schedule before its decay) the run that
stops sooner *is* the first part of the longer run of the same configuration:
training the longer one after the shorter continues from the shorter's last
checkpoint instead of starting again. A replay cannot see the schedules, so it
asks the data: a run of the same size is the prefix of a longer one where their
losses agree to the shorter one's end (:func:`is_prefix`). Cosine runs of different
lengths are not: their rates differ from the first step after the warm-up, and so do
their curves.
"""

from __future__ import annotations

import numpy as np

from scalekit.allocate._sweep import Sweep

#: Fewest points two curves must share before they are compared.
MIN_SHARED = 3
#: Largest relative gap over the last fifth of the shorter run: 0.08% between the
#: constant-rate runs of 24k and 72k steps of Luo et al. (2025), 0.19-0.79% between a run
#: and a longer one whose schedule differs (cosine, two-stage; their data and the
#: (Mis)Fitting cosine runs of different lengths).
TOLERANCE = 0.0015


def prefix_groups(sweep: Sweep, runs: list[str] | None = None, *,
                  tolerance: float = TOLERANCE) -> dict[str, list[str]]:
    """``run -> the longer runs it is a prefix of`` (only runs that are one's prefix): of
    the same size, ending later, and agreeing with it to the end of the shorter run
    (:func:`is_prefix`)."""
    runs = list(runs if runs is not None else sweep.runs)
    related: dict[str, list[str]] = {}
    for a in runs:
        for b in runs:
            if (a != b and sweep.params.get(a) == sweep.params.get(b)
                    and sweep.max_resource[a] < sweep.max_resource[b]
                    and is_prefix(sweep, a, b, tolerance=tolerance)):
                related.setdefault(a, []).append(b)
    return related


def is_prefix(sweep: Sweep, short: str, long: str, *, tolerance: float = TOLERANCE) -> bool:
    """Whether ``short``'s curve is the first part of ``long``'s: ``long``'s loss,
    interpolated in log-log at the points of ``short`` (at least :data:`MIN_SHARED`
    within ``long``'s range, ``short`` ending within it), is within ``tolerance``
    (relative) of it in the median (another learning rate departs early) and over the
    last fifth of those points (a schedule that decays towards ``short``'s end departs
    from one that does not yet there)."""
    a, b = sweep.curves[short], sweep.curves[long]
    if not (len(a) and len(b)):
        return False
    inside = (a.resource >= b.resource[0]) & (a.resource <= b.resource[-1])
    if inside.sum() < MIN_SHARED or a.resource[-1] > b.resource[-1]:
        return False
    at = np.exp(np.interp(np.log(a.resource[inside]), np.log(b.resource), np.log(b.loss)))
    gap = np.abs(a.loss[inside] / at - 1)
    return bool(gap[int(0.8 * len(gap)):].max() <= tolerance and np.median(gap) <= tolerance)
