"""Loss-optimal width and depth for a parameter budget under the depth law.

Liu, Kangaslahti, Liu and Gore (2026), "Inverse depth scaling from most layers
being similar": with ``L(m, l, D) = c_m m^-alpha_m + c_l l^-alpha_l + c_D D^-alpha_D + L0``
and a parameter count ``N(m, l)`` (``12 m^2 l`` for a transformer without
embeddings by default), the best shape for a budget ``N`` and ``D`` tokens
minimises ``L`` along the curve ``N(m, l) = N``. It is found numerically, so any
exponents and any increasing parameter formula work: a log-spaced scan of depth,
the width solved for each depth by bisection, then a bounded refinement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from scalekit.checks import check_number, fail
from scalekit.formatting import format_number
from scalekit.laws import DEPTH_WIDTH_DATA, count_depth, depth_regime, regime_resolved
from scalekit.results import FlatResult

ParamCount = Callable[[np.ndarray, np.ndarray], np.ndarray]

_WIDTH_RANGE = (1e-3, 1e12)


def transformer_params(width, depth):
    """Non-embedding parameters of a transformer, ``12 m^2 l`` (Kaplan et al. 2020)."""
    return 12.0 * np.asarray(width, dtype=float) ** 2 * np.asarray(depth, dtype=float)


@dataclass(frozen=True, repr=False)
class DepthPlan(FlatResult):
    """The loss-optimal shape for a parameter budget, and how a chosen shape compares.

    Attributes
    ----------
    params_budget, tokens : float
        The budget ``N`` and the token count ``D``.
    width, depth : float
        Loss-optimal width ``m*`` and depth ``l*`` (integers when asked for).
    aspect_ratio : float
        ``m* / l*``.
    loss : float
        Predicted loss at the optimum.
    regime : str
        What ``alpha_l`` indicates: ``ensemble-like`` (about 1), ``ODE-like`` (about 3)
        or ``shallow`` (see :func:`scalekit.laws._depth.depth_regime`).
    regime_resolved : bool or None
        Whether the interval of ``alpha_l`` lies within that one regime (None without
        an interval).
    alpha_l : float
        The depth exponent the plan used.
    shape_width, shape_depth, shape_params, shape_loss, loss_lost : float or None
        The user's shape, its parameter count, its predicted loss and the loss it
        gives away against the optimum (``shape_loss - loss``).
    """

    params_budget: float
    tokens: float
    width: float
    depth: float
    aspect_ratio: float
    loss: float
    regime: str
    regime_resolved: bool | None
    alpha_l: float
    shape_width: float | None = None
    shape_depth: float | None = None
    shape_params: float | None = None
    shape_loss: float | None = None
    loss_lost: float | None = None

    def _summary_title(self) -> str:
        return f"Loss-optimal shape for N = {format_number(self.params_budget)} parameters"

    def _summary_sections(self):
        shape = [] if self.shape_width is None else [
            ("width", self.shape_width), ("depth", self.shape_depth),
            ("parameters", self.shape_params), ("loss", self.shape_loss),
            ("loss lost against the optimum", self.loss_lost)]
        return [("Optimum", [("tokens", self.tokens), ("width", self.width),
                             ("depth", self.depth), ("aspect ratio", self.aspect_ratio),
                             ("loss", self.loss)]),
                ("Regime", [("alpha_l", self.alpha_l), ("regime", self.regime),
                            ("resolved by the interval", self.regime_resolved)]),
                ("Your shape", shape)]

    def _repr_fields(self) -> dict:
        return {"params_budget": self.params_budget, "width": self.width, "depth": self.depth,
                "loss": self.loss}


def width_for_depth(params_budget: float, depth, *, param_count: ParamCount = transformer_params
                    ) -> np.ndarray:
    """Width ``m`` with ``param_count(m, depth) = params_budget``, for each depth.

    Solved by bisection on ``log m``; ``param_count`` must increase with width.
    Depths for which no width in (1e-3, 1e12) meets the budget give NaN.
    """
    depth = np.atleast_1d(np.asarray(depth, dtype=float))
    low = np.full(depth.shape, np.log(_WIDTH_RANGE[0]))
    high = np.full(depth.shape, np.log(_WIDTH_RANGE[1]))
    feasible = ((param_count(np.exp(low), depth) <= params_budget)
                & (param_count(np.exp(high), depth) >= params_budget))
    for _ in range(200):
        middle = 0.5 * (low + high)
        over = param_count(np.exp(middle), depth) > params_budget
        high = np.where(over, middle, high)
        low = np.where(over, low, middle)
    return np.where(feasible, np.exp(0.5 * (low + high)), np.nan)


def plan_depth(values: Mapping[str, float], params_budget: float, tokens: float, *,
               param_count: ParamCount = transformer_params, shape: tuple[float, float] | None = None,
               integer_depth: bool = False, depth_range: tuple[float, float] = (1.0, 1e5),
               exclude_end_layers: bool = False,
               alpha_l_interval: tuple[float, float] | None = None) -> DepthPlan:
    """Loss-optimal width and depth for ``params_budget`` parameters and ``tokens`` tokens.

    Parameters
    ----------
    values : mapping
        Parameters of the ``depth_width_data`` law (e.g. ``FitResult.values``).
    params_budget, tokens : float
        Parameter budget ``N`` and tokens ``D``.
    param_count : callable
        ``param_count(width, depth) -> N``, vectorised and increasing in width;
        :func:`transformer_params` (``12 m^2 l``) by default.
    shape : (width, depth), optional
        A shape the user has in mind; the plan reports the loss it loses.
    integer_depth : bool
        Restrict the depth to whole layers.
    depth_range : (float, float)
        Depths (all layers) searched.
    exclude_end_layers : bool
        The law was fitted with depth counted without the first and last layers
        (:func:`scalekit.laws._depth.count_depth`); depths here count every layer.
    alpha_l_interval : (float, float), optional
        Interval of ``alpha_l`` (e.g. ``FitResult.ci["alpha_l"]``) for the regime.
    """
    check_number("params_budget", params_budget, low=0, low_open=True)
    check_number("tokens", tokens, low=0, low_open=True)
    low_depth, high_depth = depth_range
    check_number("depth_range[0]", low_depth, low=0, low_open=True)
    check_number("depth_range[1]", high_depth, low=low_depth, low_open=True)
    if exclude_end_layers:
        low_depth = max(low_depth, 3.0)
    theta = np.array([values[name] for name in DEPTH_WIDTH_DATA.param_names], dtype=float)

    def law_loss(width, depth):
        depth = np.atleast_1d(np.asarray(depth, dtype=float))
        return DEPTH_WIDTH_DATA.function(
            {"width": np.broadcast_to(np.asarray(width, dtype=float), depth.shape),
             "depth": count_depth(depth, exclude_end_layers=exclude_end_layers),
             "tokens": np.full(depth.shape, float(tokens))}, theta)

    def loss_at(depth):
        return law_loss(width_for_depth(params_budget, depth, param_count=param_count), depth)

    if integer_depth:
        grid = np.arange(np.ceil(low_depth), np.floor(high_depth) + 1.0)
    else:
        grid = np.geomspace(low_depth, high_depth, 4001)
    losses = loss_at(grid)
    if not np.any(np.isfinite(losses)):
        raise fail("params_budget", params_budget,
                   "reachable by param_count for some depth in depth_range")
    best = int(np.nanargmin(losses))
    depth = float(grid[best])
    if not integer_depth:
        lo, hi = np.log(grid[max(best - 1, 0)]), np.log(grid[min(best + 1, grid.size - 1)])
        if hi > lo:
            found = minimize_scalar(lambda v: float(loss_at(np.exp(v))[0]), bounds=(lo, hi),
                                    method="bounded", options={"xatol": 1e-10})
            if found.fun <= losses[best]:
                depth = float(np.exp(found.x))
    width = float(width_for_depth(params_budget, depth, param_count=param_count)[0])
    loss = float(loss_at(depth)[0])
    alpha_l = float(values["alpha_l"])
    plan = dict(params_budget=float(params_budget), tokens=float(tokens), width=width, depth=depth,
                aspect_ratio=width / depth, loss=loss, alpha_l=alpha_l,
                regime=depth_regime(alpha_l),
                regime_resolved=None if alpha_l_interval is None else regime_resolved(alpha_l_interval))
    if shape is not None:
        shape_width, shape_depth = (check_number(f"shape[{i}]", float(v), low=0, low_open=True)
                                    for i, v in enumerate(shape))
        shape_loss = float(law_loss(shape_width, shape_depth)[0])
        plan.update(shape_width=shape_width, shape_depth=shape_depth,
                    shape_params=float(np.asarray(param_count(np.array([shape_width]),
                                                              np.array([shape_depth])))[0]),
                    shape_loss=shape_loss, loss_lost=shape_loss - loss)
    return DepthPlan(**plan)


def param_count_from_expression(expression: str) -> ParamCount:
    """Parameter formula from a safe expression in ``m`` (width) and ``l`` (depth).

    E.g. ``"12*m**2*l + 2*50257*m"`` for a transformer with tied embeddings.
    Parsed by :func:`scalekit.laws._expression.law_from_expression` (numbers,
    ``m``, ``l``, arithmetic and a few numpy functions only); any other name, a
    parameter or another data symbol (``N``, ``x``, …), is an :class:`InputError`
    naming it.
    """
    from scalekit.laws import EXPRESSION_SYMBOLS as SYMBOLS, check_expression, law_from_expression

    check_expression(expression)          # complete on its own ('m) + (l' is not)
    law = law_from_expression(f"_unit * ({expression})", inputs={"m": "width", "l": "depth"})
    data = {column: symbol for symbol, column in SYMBOLS.items()}
    others = [data[name] for name in law.inputs if name in data] + [
        name for name in law.param_names if name != "_unit"]
    if others:
        raise fail("param_count", expression, "a formula in m (width) and l (depth) only (it "
                                               f"also names {', '.join(others)})")

    def count(width, depth):
        width, depth = np.broadcast_arrays(np.asarray(width, dtype=float), np.asarray(depth, dtype=float))
        X = {"width": np.atleast_1d(width).ravel(), "depth": np.atleast_1d(depth).ravel()}
        return np.asarray(law.function(X, np.array([1.0])), dtype=float).reshape(width.shape)

    return count
