"""Width, depth and data: ``L(m, l, D) = c_m m^-alpha_m + c_l l^-alpha_l + c_D D^-alpha_D + L0``.

Liu, Kangaslahti, Liu and Gore (2026), "Inverse depth scaling from most layers
being similar": loss falls with depth ``l`` as a separate power law next to
width ``m`` and tokens ``D``. An exponent ``alpha_l`` near 1 says layers act like
an ensemble that averages errors; near 3, like a smooth, ODE-like refinement.
On the Chinchilla runs (203 lowest losses, depth counted in layers) they report
alpha_m = 0.98 +- 0.08, alpha_l = 1.2 +- 0.3, alpha_D = 0.30 +- 0.01.

Fitted in the log space as ``logsumexp(log c_m - alpha_m log m, ...,  log L0)``.
"""

from __future__ import annotations

import numpy as np

from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms
from scalekit.laws._registry import register_law

#: Terms of the law: (scale name, exponent name, input column).
TERMS = (("c_m", "alpha_m", "width"), ("c_l", "alpha_l", "depth"), ("c_D", "alpha_D", "tokens"))

_LOG_SCALE_GRID = (0.0, 4.0, 8.0)
_LOG_FLOOR_GRID = (0.5,)


def _terms(X, z):
    z = np.asarray(z, dtype=float)
    parts = [z[..., 2 * k:2 * k + 1] - z[..., 2 * k + 1:2 * k + 2] * np.log(X[column])
             for k, (_, _, column) in enumerate(TERMS)]
    return logsumexp_terms(*parts, z[..., 6:7])


def _function(X, theta):
    theta = np.asarray(theta, dtype=float)
    total = theta[..., 6:7]
    for k, (_, _, column) in enumerate(TERMS):
        total = total + theta[..., 2 * k:2 * k + 1] * X[column] ** -theta[..., 2 * k + 1:2 * k + 2]
    return total


def _log_function(X, z):
    return _terms(X, z)[0]


def _log_jacobian(X, z):
    _, weights = _terms(X, z)
    columns = []
    for k, (_, _, column) in enumerate(TERMS):
        columns += [weights[k], -weights[k] * np.log(X[column])]
    return np.stack(columns + [weights[3]], axis=-1)


def count_depth(n_layers, *, exclude_end_layers: bool = False) -> np.ndarray:
    """Depth ``l`` to use in the law: all layers, or all but the first and the last.

    Liu et al. (2026) find the first and last layers behave unlike the similar
    middle ones; ``exclude_end_layers=True`` counts only those middle layers
    (``n_layers - 2``), which needs every model to have at least three layers.
    """
    layers = np.asarray(n_layers, dtype=float)
    return layers - 2.0 if exclude_end_layers else layers


def depth_regime(alpha_l: float) -> str:
    """Name the regime that the depth exponent indicates (Liu et al. 2026).

    ``"ensemble-like"`` below 2, the midpoint of 1 (layers average like an
    ensemble) and 3 (smooth, ODE-like refinement); ``"ODE-like"`` above 2;
    ``"shallow"`` below 0.5, where depth barely matters.
    """
    if alpha_l < 0.5:
        return "shallow"
    return "ensemble-like" if alpha_l < 2.0 else "ODE-like"


def regime_resolved(interval: tuple[float, float]) -> bool:
    """Whether an interval of ``alpha_l`` lies within one regime of :func:`depth_regime`."""
    lo, hi = interval
    return depth_regime(lo) == depth_regime(hi)


DEPTH_WIDTH_DATA = register_law(Law(
    name="depth_width_data",
    inputs=("width", "depth", "tokens"),
    params=(Param("c_m", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("alpha_m", 0.0, 10.0, (0.5, 1.5)),
            Param("c_l", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("alpha_l", 0.0, 10.0, (0.5, 1.5, 3.0)),
            Param("c_D", 0.0, np.inf, _LOG_SCALE_GRID, log=True),
            Param("alpha_D", 0.0, 10.0, (0.3,)),
            Param("L0", 0.0, np.inf, _LOG_FLOOR_GRID, log=True)),
    formula="c_m m^-alpha_m + c_l l^-alpha_l + c_D D^-alpha_D + L0",
    function=_function, log_function=_log_function, log_jacobian=_log_jacobian,
    description=("Loss of width m, depth l (layers) and D tokens "
                 "(Liu, Kangaslahti, Liu & Gore 2026, inverse depth scaling).")))
