"""Least-squares parabolas for many groups and many bootstrap resamples at once.

Points are sorted by group. Within each group ``x`` is centred and scaled to
[-1, 1] before the normal equations are formed, so the 3×3 systems stay well
conditioned; every resample of every group is solved in one batched call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Groups:
    """Contiguous groups of sorted points: ``starts[k]`` .. ``starts[k] + sizes[k]``."""

    starts: np.ndarray
    sizes: np.ndarray

    @classmethod
    def from_sorted_codes(cls, codes: np.ndarray) -> "Groups":
        codes = np.asarray(codes)
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        return cls(starts, np.diff(np.r_[starts, codes.size]))

    @property
    def member(self) -> np.ndarray:
        """Group index of every point."""
        return np.repeat(np.arange(self.sizes.size), self.sizes)


def resample_within_groups(groups: Groups, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Indices (n_boot, n) of bootstrap resamples drawn with replacement inside each group."""
    member = groups.member
    draws = rng.random((n_boot, member.size))
    offsets = np.minimum((draws * groups.sizes[member]).astype(np.intp), groups.sizes[member] - 1)
    return groups.starts[member] + offsets


def group_scaling(x: np.ndarray, groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Centre (midpoint) and half-width of ``x`` in each group."""
    lo = np.minimum.reduceat(x, groups.starts)
    hi = np.maximum.reduceat(x, groups.starts)
    return (lo + hi) / 2, np.where(hi > lo, (hi - lo) / 2, 1.0)


def fit_parabolas(x: np.ndarray, y: np.ndarray, groups: Groups,
                  indices: np.ndarray | None = None) -> np.ndarray:
    """Coefficients ``(c0, c1, c2)`` of ``y ≈ c0 + c1 u + c2 u²`` per group.

    ``u = (x - centre) / half_width`` of the group (see :func:`group_scaling`).
    With ``indices`` (B, n) of resampled points, returns (B, K, 3), else (K, 3).
    Systems with fewer than three distinct ``x`` give ``nan``.
    """
    centre, half = group_scaling(x, groups)
    member = groups.member
    u = (x - centre[member]) / half[member]
    features = np.stack([np.ones_like(u), u, u ** 2, u ** 3, u ** 4, y, u * y, u * u * y], axis=-1)
    single = indices is None
    if single:
        indices = np.arange(x.size)[None, :]
    sums = np.add.reduceat(features[indices], groups.starts, axis=1)  # (B, K, 8)
    s0, s1, s2, s3, s4, t0, t1, t2 = np.moveaxis(sums, -1, 0)
    matrix = np.stack([np.stack([s0, s1, s2], -1), np.stack([s1, s2, s3], -1),
                       np.stack([s2, s3, s4], -1)], -2)
    rhs = np.stack([t0, t1, t2], -1)
    det = np.linalg.det(matrix)
    singular = ~(np.abs(det) > 1e-9 * s0 ** 3)
    matrix[singular] = np.eye(3)
    coef = np.linalg.solve(matrix, rhs[..., None])[..., 0]
    coef[singular] = np.nan
    return coef[0] if single else coef


def vertices(coef: np.ndarray, x: np.ndarray, groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Vertex position in ``x`` units and the parabola's value there, per group.

    ``nan`` where the parabola does not open upward.
    """
    centre, half = group_scaling(x, groups)
    c0, c1, c2 = np.moveaxis(coef, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        u_star = np.where(c2 > 0, -c1 / (2 * c2), np.nan)
    return centre + half * u_star, c0 + c1 * u_star + c2 * u_star ** 2
