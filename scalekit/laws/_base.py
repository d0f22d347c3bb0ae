"""A law family as data: inputs, parameters with bounds and start grid, formula.

Laws know nothing of fitting. The fit engine (:mod:`scalekit.fit`) works in the
*fitting space*: a parameter declared with ``log=True`` is optimised as the
logarithm of its value (so it stays positive), every other one as itself.
Start grids are given in that space.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

Inputs = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Param:
    """One parameter of a law.

    Parameters
    ----------
    name : str
        Name as it appears in reports (``"E"``, ``"alpha"``).
    lower, upper : float
        Bounds in natural units.
    grid : tuple of float
        Start values for multi-start fitting, in the fitting space.
    log : bool
        Optimise ``log(value)``; the value must then be positive.
    """

    name: str
    lower: float = -np.inf
    upper: float = np.inf
    grid: tuple[float, ...] = (0.0,)
    log: bool = False


@dataclass(frozen=True)
class Law:
    """A parametric family ``y = f(X; theta)``.

    Parameters
    ----------
    name : str
        Registry name (``"chinchilla"``).
    inputs : tuple of str
        Tidy-frame columns the law reads, e.g. ``("params", "tokens")``.
    params : tuple of Param
        The parameters, in the order of the last axis of ``theta``.
    formula : str
        Human-readable formula for reports.
    function : callable
        ``function(X, theta) -> y``: ``X`` maps each input name to a 1-d array of
        length n, ``theta`` has shape ``(..., P)`` in natural units, the result
        has shape ``(..., n)``.
    log_function : callable, optional
        ``log_function(X, z) -> log y`` with ``z`` in the fitting space, written
        to stay finite where ``log(function(...))`` would not (log-sum-exp form).
    log_jacobian : callable, optional
        ``log_jacobian(X, z) -> J`` with shape ``(..., n, P)``: derivative of
        ``log_function(X, z)`` with respect to ``z``. The fit engine uses finite
        differences when the law has neither this nor ``log_value_and_jacobian``.
    log_value_and_jacobian : callable, optional
        ``log_value_and_jacobian(X, z) -> (log_y, J)``: ``log_function(X, z)``,
        shape ``(..., n)``, and its derivative with respect to ``z``, shape
        ``(..., n, P)``, computed together since they share terms (faster than
        ``log_function`` plus ``log_jacobian``; preferred by the fit engine).
    data_grid : callable, optional
        ``data_grid(X, y) -> {name: grid}``: start grids (fitting space) computed
        from the data, replacing the static grids of the named parameters (e.g.
        break positions inside the range of ``x``).
    derive : callable, optional
        ``derive(values) -> dict`` of derived quantities from fitted values.
    description : str
        One sentence for ``scalekit fit --help`` and reports; cite the source.
    extra : mapping
        Further facts kept with the law (a custom law's ``expression`` and
        ``symbols``, written into the fit's JSON report).
    """

    name: str
    inputs: tuple[str, ...]
    params: tuple[Param, ...]
    formula: str
    function: Callable[[Inputs, np.ndarray], np.ndarray]
    log_function: Callable[[Inputs, np.ndarray], np.ndarray] | None = None
    log_jacobian: Callable[[Inputs, np.ndarray], np.ndarray] | None = None
    log_value_and_jacobian: Callable[[Inputs, np.ndarray],
                                     tuple[np.ndarray, np.ndarray]] | None = None
    data_grid: Callable[[Inputs, np.ndarray], Mapping[str, tuple]] | None = None
    derive: Callable[[Mapping[str, float]], dict] | None = None
    description: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def log_mask(self) -> np.ndarray:
        return np.array([p.log for p in self.params])

    def fitting_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds in the fitting space, each of shape (P,)."""
        lower = np.array([p.lower for p in self.params], dtype=float)
        upper = np.array([p.upper for p in self.params], dtype=float)
        with np.errstate(divide="ignore"):
            return (np.where(self.log_mask, np.log(np.maximum(lower, 0.0)), lower),
                    np.where(self.log_mask, np.log(upper), upper))

    def to_natural(self, z: np.ndarray) -> np.ndarray:
        """Map fitting-space values ``z`` (..., P) to natural units."""
        z = np.asarray(z, dtype=float)
        with np.errstate(over="ignore"):        # exp is taken of every column, used of some
            return np.where(self.log_mask, np.exp(z), z)

    def to_fitting(self, theta: np.ndarray) -> np.ndarray:
        """Map natural values ``theta`` (..., P) to the fitting space."""
        theta = np.asarray(theta, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.log_mask, np.log(theta), theta)

    def start_grid(self, X: Inputs | None = None, y: np.ndarray | None = None) -> np.ndarray:
        """Cartesian product of the parameters' grids, shape (S, P), fitting space.

        With data ``X``, ``y`` and a ``data_grid``, the grids it returns replace the
        static ones.
        """
        grids = {p.name: p.grid for p in self.params}
        if self.data_grid is not None and X is not None and y is not None:
            grids.update(self.data_grid(_as_inputs(X, self.inputs), np.asarray(y, dtype=float)))
        return np.array(list(itertools.product(*(grids[p.name] for p in self.params))),
                        dtype=float)

    def predict(self, X: Inputs, theta: np.ndarray | Mapping[str, float]) -> np.ndarray:
        """Evaluate the law at ``X`` for natural parameters ``theta`` (array or mapping)."""
        if isinstance(theta, Mapping):
            theta = np.array([theta[name] for name in self.param_names], dtype=float)
        return self.function(_as_inputs(X, self.inputs), np.asarray(theta, dtype=float))

    def log_predict_fitting(self, X: Inputs, z: np.ndarray) -> np.ndarray:
        """Log of the prediction for fitting-space parameters ``z`` (..., P)."""
        X = _as_inputs(X, self.inputs)
        if self.log_function is not None:
            return self.log_function(X, z)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(self.function(X, self.to_natural(z)))


def _as_inputs(X: Inputs, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    missing = [name for name in names if name not in X]
    if missing:
        raise KeyError(f"law inputs missing: {', '.join(missing)}")
    return {name: np.asarray(X[name], dtype=float) for name in names}
