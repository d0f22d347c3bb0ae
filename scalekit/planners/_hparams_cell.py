"""The loss surface of one (N, D) cell around its optimum, in log learning rate and log batch.

A cell's runs share N and D and differ in learning rate ``lr`` and batch size ``batch``. Its
surface is a least-squares fit, to the runs whose loss is within ``window`` of the cell's
best, of one of :data:`SURFACES` in ``x = ln lr`` and ``z = ln batch``:

- ``quadratic``: ``c0 + c1 x + c2 z + c3 x² + c4 z² + c5 x z``;
- ``additive``: the same without the ``x z`` term (the optimum lr does not move with batch).

The optimum is the surface's stationary point where its Hessian is positive definite and
the point lies inside the cell's grid; otherwise the least value on a fine grid over the
cell's box, which lies on an edge: that axis is then not bracketed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SURFACES = {"quadratic": 6, "additive": 5}
_EDGE_GRID = 61
_LN2 = float(np.log(2.0))


@dataclass(frozen=True)
class CellFit:
    """One cell's fitted surface and optimum (``lr``, ``batch`` and ``loss`` at it)."""

    lr: float
    batch: float
    loss: float
    bracketed_lr: bool
    bracketed_batch: bool
    used: int
    loo_rmse: float
    penalty_lr_2x: float
    penalty_batch_2x: float


def design(x, z, surface: str) -> np.ndarray:
    """The columns of ``surface`` at log lr ``x`` and log batch ``z``."""
    columns = [np.ones_like(x), x, z, x * x, z * z]
    if surface == "quadratic":
        columns.append(x * z)
    return np.stack(columns, axis=-1)


def window_rows(loss: np.ndarray, x: np.ndarray, z: np.ndarray, window: float,
                surface: str) -> np.ndarray:
    """Indices of the runs a cell's surface is fitted to: those within ``window`` (relative)
    of the best loss, widened by the next-best runs until there are two more runs than
    coefficients and three distinct values on each axis (or every run)."""
    order = np.argsort(loss, kind="stable")
    needed = SURFACES[surface] + 2
    k = max(int(np.sum(loss <= loss[order[0]] * (1.0 + window))), needed)
    while k < len(order):
        chosen = order[:k]
        if len(np.unique(x[chosen])) >= 3 and len(np.unique(z[chosen])) >= 3:
            break
        k += 1
    return order[:min(k, len(order))]


def loo_rmse(A: np.ndarray, y: np.ndarray) -> float:
    """Leave-one-run-out root mean squared error of the least-squares fit (hat matrix)."""
    if len(y) <= A.shape[1]:
        return float("nan")
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    hat = np.einsum("ij,ji->i", A, np.linalg.pinv(A))
    residual = (y - A @ coef) / np.clip(1.0 - hat, 1e-9, None)
    return float(np.sqrt(np.mean(residual ** 2)))


def fit_cell(lr, batch, loss, *, surface: str, window: float) -> CellFit | None:
    """Fit one cell; ``None`` when it has too few distinct settings for ``surface``."""
    x_all, z_all = np.log(np.asarray(lr, float)), np.log(np.asarray(batch, float))
    loss = np.asarray(loss, float)
    rows = window_rows(loss, x_all, z_all, window, surface)
    x, z, y = x_all[rows], z_all[rows], loss[rows]
    if len(y) < SURFACES[surface] + 1 or len(np.unique(x)) < 3 or len(np.unique(z)) < 3:
        return None
    x0, z0 = x[0], z[0]  # centred on the cell's best run
    A = design(x - x0, z - z0, surface)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    box = (x_all.min() - x0, x_all.max() - x0, z_all.min() - z0, z_all.max() - z0)
    (dx, dz), bracketed = _optimum(coef, surface, box)
    best = float(design(np.array(dx), np.array(dz), surface) @ coef)
    curvature_x, curvature_z = coef[3], coef[4]
    return CellFit(lr=float(np.exp(x0 + dx)), batch=float(np.exp(z0 + dz)), loss=best,
                   bracketed_lr=bracketed[0], bracketed_batch=bracketed[1], used=len(y),
                   loo_rmse=loo_rmse(A, y),
                   penalty_lr_2x=float(curvature_x * _LN2 ** 2 / best),
                   penalty_batch_2x=float(curvature_z * _LN2 ** 2 / best))


def _optimum(coef, surface, box):
    """The surface's least point over ``box`` and whether it is inside on each axis."""
    cross = coef[5] if surface == "quadratic" else 0.0
    hessian = np.array([[2 * coef[3], cross], [cross, 2 * coef[4]]])
    low_x, high_x, low_z, high_z = box
    if np.all(np.linalg.eigvalsh(hessian) > 0):
        point = np.linalg.solve(hessian, -np.asarray(coef[1:3]))
        inside = (low_x < point[0] < high_x, low_z < point[1] < high_z)
        if all(inside):
            return point, inside
    xs = np.linspace(low_x, high_x, _EDGE_GRID)
    zs = np.linspace(low_z, high_z, _EDGE_GRID)
    gx, gz = np.meshgrid(xs, zs, indexing="ij")
    values = design(gx, gz, surface) @ coef
    i, j = np.unravel_index(int(np.argmin(values)), values.shape)
    return np.array([xs[i], zs[j]]), (0 < i < _EDGE_GRID - 1, 0 < j < _EDGE_GRID - 1)
