"""Custom laws from an expression string, parsed safely.

``law_from_expression("E + A*N**-alpha")`` reads the expression with Python's
:mod:`ast` and accepts only numbers, names, ``+ - * / **``, unary signs and calls
of a few numpy functions (see ``FUNCTIONS``); anything else (attributes,
subscripts, lambdas, comprehensions, other calls) is refused. Symbols ``N``,
``D``, ``C`` and ``x`` read the tidy columns ``params``, ``tokens``, ``compute`` and
``x``; further columns are named with ``inputs``; every other name is a
parameter. Parameters are positive and fitted as logarithms unless ``params``
says otherwise. The fit engine differentiates such laws numerically.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping, Sequence

import numpy as np

from scalekit.errors import InputError
from scalekit.laws.base import Law, Param

#: Expression symbol -> tidy-frame column.
SYMBOLS = {"N": "params", "D": "tokens", "C": "compute", "x": "x"}
#: Functions an expression may call.
FUNCTIONS = {"exp": np.exp, "log": np.log, "log10": np.log10, "log2": np.log2,
             "sqrt": np.sqrt, "abs": np.abs, "tanh": np.tanh, "log1p": np.log1p,
             "expm1": np.expm1, "minimum": np.minimum, "maximum": np.maximum}
#: Start grid of a positive parameter, in the log space.
POSITIVE_GRID = (-3.0, -1.0, 1.0, 3.0, 6.0)
#: Start grid of a parameter of either sign.
SIGNED_GRID = (-2.0, -0.5, 0.5, 2.0)

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd)
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load,
          ast.Call) + _OPERATORS


def law_from_expression(expression: str, *, inputs: Sequence[str] | Mapping[str, str] = (),
                        params: Mapping[str, Mapping] | None = None, name: str = "custom"
                        ) -> Law:
    """Build a :class:`Law` from ``expression``.

    Parameters
    ----------
    expression : str
        E.g. ``"E + A*N**-alpha + B*D**-beta"``.
    inputs : sequence of str or mapping of symbol to column
        Symbols besides ``N``, ``D``, ``C`` and ``x`` that are data columns.
    params : mapping, optional
        Per parameter, any of ``lower``, ``upper``, ``grid``, ``log`` (as for
        :class:`Param`) to override the default (positive, log-fitted, grid
        ``POSITIVE_GRID``).
    name : str
        Name shown in reports.

    Raises
    ------
    InputError
        If the expression does not parse or uses anything outside the whitelist.
    """
    tree = _parse(expression)
    symbols = dict(SYMBOLS)
    symbols.update(inputs if isinstance(inputs, Mapping) else {k: k for k in inputs})
    names = _names(tree)
    used_inputs = {s: c for s, c in symbols.items() if s in names}
    param_names = [s for s in names if s not in symbols]
    if not used_inputs:
        raise InputError(f"expression {expression!r} uses no input (N, D, C, x or one named "
                         "in inputs)")
    if not param_names:
        raise InputError(f"expression {expression!r} has no free parameter")
    overrides = dict(params or {})
    unknown = sorted(set(overrides) - set(param_names))
    if unknown:
        raise InputError(f"params names {', '.join(unknown)}, which are not parameters of "
                         f"{expression!r} (its parameters: {', '.join(param_names)})")
    parameters = tuple(_param(p, overrides.get(p, {})) for p in param_names)
    code = compile(_float_constants(tree), "<law expression>", "eval")
    columns = tuple(dict.fromkeys(used_inputs.values()))

    def function(X, theta):
        theta = np.asarray(theta, dtype=float)
        namespace = {s: np.asarray(X[c], dtype=float) for s, c in used_inputs.items()}
        namespace.update({p: theta[..., k:k + 1] for k, p in enumerate(param_names)})
        with np.errstate(all="ignore"):
            value = eval(code, {"__builtins__": {}, _FLOAT: np.float64, **FUNCTIONS},  # noqa: S307
                         namespace)
        shape = np.broadcast_shapes(theta.shape[:-1] + (1,), np.shape(X[columns[0]]))
        return np.broadcast_to(value, shape)

    return Law(name=name, inputs=columns, params=parameters, formula=expression,
               function=function, description=f"Custom law {expression}",
               extra={"expression": expression,
                      "symbols": {s: c for s, c in used_inputs.items() if SYMBOLS.get(s) != c}})


def _parse(expression: str) -> ast.Expression:
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise InputError(f"expression {expression!r} does not parse: {exc.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise InputError(f"expression {expression!r} may not contain "
                             f"{type(node).__name__} (allowed: numbers, names, + - * / **, "
                             f"calls of {', '.join(FUNCTIONS)})")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise InputError(f"expression {expression!r} may contain only numeric constants")
        if isinstance(node, ast.Call):
            if (not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS
                    or node.keywords):
                raise InputError(f"expression {expression!r} calls something other than "
                                 f"{', '.join(FUNCTIONS)}")
    return tree


#: Name (not a valid identifier, so no symbol can shadow it) of the numpy float type
#: that every numeric constant is wrapped in.
_FLOAT = "<float64>"


class _FloatConstants(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        try:
            value = float(node.value)
        except OverflowError:              # an integer literal beyond the float range
            value = float("inf")
        call = ast.Call(func=ast.Name(id=_FLOAT, ctx=ast.Load()),
                        args=[ast.Constant(value)], keywords=[])
        return ast.copy_location(call, node)


def _float_constants(tree: ast.Expression) -> ast.Expression:
    """``tree`` with every number a numpy float, so that arithmetic on constants alone
    (``9**9**9``) overflows to ``inf`` instead of building a huge Python integer."""
    return ast.fix_missing_locations(_FloatConstants().visit(copy.deepcopy(tree)))


def _names(tree: ast.Expression) -> list[str]:
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = sorted((node.col_offset, node.id) for node in ast.walk(tree)
                   if isinstance(node, ast.Name) and id(node) not in called)
    ordered = list(dict.fromkeys(symbol for _, symbol in found))    # in reading order
    clash = [s for s in ordered if s in FUNCTIONS]
    if clash:
        raise InputError(f"{', '.join(clash)} name functions and cannot be symbols")
    return ordered


def _param(name: str, override: Mapping) -> Param:
    allowed = {"lower", "upper", "grid", "log"}
    extra = sorted(set(override) - allowed)
    if extra:
        raise InputError(f"params[{name!r}] has unknown keys {', '.join(extra)} "
                         f"(allowed: {', '.join(sorted(allowed))})")
    log = bool(override.get("log", "lower" not in override or override["lower"] >= 0))
    lower = float(override.get("lower", 0.0 if log else -np.inf))
    upper = float(override.get("upper", np.inf))
    grid = tuple(float(v) for v in override.get("grid", POSITIVE_GRID if log else SIGNED_GRID))
    if log and lower < 0:
        raise InputError(f"params[{name!r}] is fitted as a logarithm but its lower bound "
                         f"is {lower}")
    return Param(name, lower, upper, grid, log=log)
