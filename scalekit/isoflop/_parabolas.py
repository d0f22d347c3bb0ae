"""Least-squares parabolas for many groups and many replicates of the losses at once.

Points are sorted by group. Within each group ``x`` is centred and scaled to
[-1, 1] before the normal equations are formed, so the 3×3 systems stay well
conditioned; the design is the same for every replicate of the losses, so each
group's system is inverted once and every replicate solved in one batched call.
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
    def from_sorted_codes(cls, codes: np.ndarray) -> Groups:
        codes = np.asarray(codes)
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        return cls(starts, np.diff(np.r_[starts, codes.size]))

    @property
    def member(self) -> np.ndarray:
        """Group index of every point."""
        return np.repeat(np.arange(self.sizes.size), self.sizes)


def group_scaling(x: np.ndarray, groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Centre (midpoint) and half-width of ``x`` in each group."""
    lo = np.minimum.reduceat(x, groups.starts)
    hi = np.maximum.reduceat(x, groups.starts)
    return (lo + hi) / 2, np.where(hi > lo, (hi - lo) / 2, 1.0)


def fit_parabolas(x: np.ndarray, y: np.ndarray, groups: Groups) -> np.ndarray:
    """Coefficients ``(c0, c1, c2)`` of ``y ≈ c0 + c1 u + c2 u²`` per group.

    ``u = (x - centre) / half_width`` of the group (see :func:`group_scaling`).
    ``y`` is (n,) or (B, n) — replicates of the losses at the same points — and the
    result (K, 3) or (B, K, 3). Groups with fewer than three distinct ``x`` give ``nan``.
    """
    centre, half = group_scaling(x, groups)
    u = (x - centre[groups.member]) / half[groups.member]
    s0, s1, s2, s3, s4 = np.add.reduceat(np.stack([u ** p for p in range(5)]), groups.starts,
                                         axis=1)
    matrix = np.stack([np.stack([s0, s1, s2], -1), np.stack([s1, s2, s3], -1),
                       np.stack([s2, s3, s4], -1)], -2)                      # (K, 3, 3)
    singular = ~(np.abs(np.linalg.det(matrix)) > 1e-9 * s0 ** 3)
    matrix[singular] = np.eye(3)
    y = np.asarray(y, dtype=float)
    rhs = np.add.reduceat(y[..., None, :] * np.stack([np.ones_like(u), u, u * u]),
                          groups.starts, axis=-1)                            # (..., 3, K)
    coef = np.einsum("kij,...jk->...ki", np.linalg.inv(matrix), rhs)
    coef[..., singular, :] = np.nan
    return coef


def vertices(coef: np.ndarray, x: np.ndarray, groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Vertex position in ``x`` units and the parabola's value there, per group.

    ``nan`` where the parabola does not open upward.
    """
    centre, half = group_scaling(x, groups)
    c0, c1, c2 = np.moveaxis(coef, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        u_star = np.where(c2 > 0, -c1 / (2 * c2), np.nan)
    return centre + half * u_star, c0 + c1 * u_star + c2 * u_star ** 2
