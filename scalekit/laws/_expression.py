"""Custom laws from an expression string, parsed safely and differentiated exactly.

``law_from_expression("E + A*N**-alpha")`` reads the expression with Python's
:mod:`ast` and accepts only numbers, names, ``+ - * / **``, unary signs and calls
of the functions of ``FUNCTIONS`` with exactly their number of arguments;
anything else (attributes, subscripts, keywords, lambdas, comprehensions, other
calls) is refused, as are expressions longer than ``MAX_LENGTH`` characters or
nested deeper than ``MAX_DEPTH``. Symbols ``N``, ``D``, ``C`` and ``x`` read the
tidy columns ``params``, ``tokens``, ``compute`` and ``x``; further columns are
named with ``inputs``; every other name is a parameter. Parameters are positive
and fitted as logarithms unless ``params`` says otherwise; they start from
``POSITIVE_GRID``, or ``EXPONENT_GRID`` where they appear in an exponent.

Nothing is handed to ``eval``: the parsed tree is turned into a tree of
:class:`_Node` that numpy evaluates, calling each function with its arguments
only. The same tree is differentiated with respect to the parameters by the
chain rule, node by node (forward mode, keeping only the parameters a node
depends on), which gives the fit engine exact derivatives instead of finite
differences.

The fit engine reads the logarithm of the law and its derivatives. Where the
expression is positive by its form (``_Programs.log``: sums, products, quotients,
square roots and powers of positive terms, ``exp`` of anything, with positive
constants, inputs whose values are all positive and log-fitted parameters at the
leaves), the logarithm is evaluated in the log space, as the built-in laws are:
``log(u + w)`` as the log-sum-exp of ``log u`` and ``log w``, ``log(u**w)`` as
``w log u``, a log-fitted parameter's logarithm as its fitting-space value. So an
intermediate term that would overflow or underflow (``(x/d)**(1/f)`` for a sharp
break) does not turn the derivatives into ``nan``, which would stop a start where
it stands. For the same reason a power of a positive term inside an expression
that is not positive by its form is evaluated as ``exp(w log u)``, ``log u`` in
the log space.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from scalekit.errors import InputError
from scalekit.laws._base import Law, Param
from scalekit.laws._logsumexp import logsumexp_terms

#: Expression symbol -> tidy-frame column.
SYMBOLS = {"N": "params", "D": "tokens", "C": "compute", "x": "x"}
#: Functions an expression may call -> their number of arguments.
FUNCTIONS = {"exp": 1, "log": 1, "log10": 1, "log2": 1, "sqrt": 1, "abs": 1, "tanh": 1,
             "log1p": 1, "expm1": 1, "minimum": 2, "maximum": 2}
#: Longest expression accepted, in characters.
MAX_LENGTH = 2000
#: Deepest nesting accepted (levels of the parsed tree: ``a + b*x`` has 3).
MAX_DEPTH = 100
#: Largest default start grid (product of the parameters' grid sizes) accepted.
MAX_STARTS = 400_000
#: Start grid of a positive parameter, in the log space.
POSITIVE_GRID = (-3.0, -1.0, 1.0, 3.0, 6.0)
#: Start grid of a positive parameter in an exponent (``N**-alpha``), in the log space:
#: exponents 0.05 to 2, as in the start grids of the built-in power laws.
EXPONENT_GRID = tuple(float(np.log(v)) for v in (0.05, 0.2, 0.5, 1.0, 2.0))
#: Start grid of a parameter of either sign.
SIGNED_GRID = (-2.0, -0.5, 0.5, 2.0)

_LN10, _LN2 = math.log(10.0), math.log(2.0)
#: name -> (value function, derivative of the value in its argument given (u, value)).
_UNARY: dict[str, tuple[Callable, Callable]] = {
    "exp": (np.exp, lambda u, v: v),
    "log": (np.log, lambda u, v: 1.0 / u),
    "log10": (np.log10, lambda u, v: 1.0 / (u * _LN10)),
    "log2": (np.log2, lambda u, v: 1.0 / (u * _LN2)),
    "sqrt": (np.sqrt, lambda u, v: 0.5 / v),
    "abs": (np.abs, lambda u, v: np.sign(u)),
    "tanh": (np.tanh, lambda u, v: 1.0 - v * v),
    "log1p": (np.log1p, lambda u, v: 1.0 / (1.0 + u)),
    "expm1": (np.expm1, lambda u, v: v + 1.0),
    "neg": (np.negative, lambda u, v: -1.0),
    "pos": (np.positive, lambda u, v: 1.0),
}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
           "pow": np.power, "minimum": np.minimum, "maximum": np.maximum}
_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
              ast.USub: "neg", ast.UAdd: "pos"}
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load,
          ast.Call) + tuple(_OPERATORS)


@dataclass(frozen=True)
class _Node:
    """One node of a compiled expression.

    ``op`` is ``"const"`` (``leaf`` a float), ``"input"`` (``leaf`` the symbol),
    ``"param"`` (``leaf`` the parameter's index), an operator or a function name
    (``args`` its operands). ``deps`` are the indices of the parameters below it.
    """

    op: str
    args: tuple[_Node, ...] = ()
    leaf: object = None
    deps: frozenset = frozenset()


def law_from_expression(expression: str, *, inputs: Sequence[str] | Mapping[str, str] = (),
                        params: Mapping[str, Mapping] | None = None, name: str = "custom"
                        ) -> Law:
    """Build a :class:`Law` from ``expression``, with exact derivatives.

    Parameters
    ----------
    expression : str
        E.g. ``"E + A*N**-alpha + B*D**-beta"``.
    inputs : sequence of str or mapping of symbol to column
        Symbols besides ``N``, ``D``, ``C`` and ``x`` that are data columns.
    params : mapping, optional
        Per parameter, any of ``lower``, ``upper``, ``grid``, ``log`` (as for
        :class:`Param`) to override the default (positive, log-fitted, grid
        ``POSITIVE_GRID`` or, in an exponent, ``EXPONENT_GRID``).
    name : str
        Name shown in reports.

    Raises
    ------
    InputError
        If the expression does not parse, uses anything outside the whitelist, calls
        a function with the wrong number of arguments, is too long or too deeply
        nested, or its default start grid would exceed ``MAX_STARTS``.
    """
    tree = _parse(expression)
    symbols = dict(SYMBOLS)
    symbols.update(inputs if isinstance(inputs, Mapping) else {k: k for k in inputs})
    names = _names(tree)
    used_inputs = {s: c for s, c in symbols.items() if s in names}
    param_names = [s for s in names if s not in symbols]
    if not used_inputs:
        raise InputError(f"expression {_quoted(expression)} uses no input (N, D, C, x or one named "
                         "in inputs)")
    if not param_names:
        raise InputError(f"expression {_quoted(expression)} has no free parameter")
    overrides = dict(params or {})
    unknown = sorted(set(overrides) - set(param_names))
    if unknown:
        raise InputError(f"params names {', '.join(unknown)}, which are not parameters of "
                         f"{_quoted(expression)} (its parameters: {', '.join(param_names)})")
    exponents = {node.id for power in ast.walk(tree)
                 if isinstance(power, ast.BinOp) and isinstance(power.op, ast.Pow)
                 for node in ast.walk(power.right) if isinstance(node, ast.Name)}
    parameters = tuple(_param(p, overrides.get(p, {}), exponent=p in exponents)
                       for p in param_names)
    n_starts = math.prod(len(p.grid) for p in parameters)
    if n_starts > MAX_STARTS:
        raise InputError(f"expression {_quoted(expression)} has {len(parameters)} parameters, so its "
                         f"start grid has {n_starts:,} starts, but at most {MAX_STARTS:,} are "
                         "allowed: give some parameters a shorter grid (params)")
    root = _compile(tree.body, {p: k for k, p in enumerate(param_names)})
    evaluate = _value_program(root)
    columns = tuple(dict.fromkeys(used_inputs.values()))
    log_mask = tuple(p.log for p in parameters)

    @functools.cache
    def log_program(positive_inputs: frozenset, differentiate: bool) -> Callable:
        programs = _Programs(log_mask, positive_inputs, differentiate)
        return programs.log(root) or _log_of(programs.gradient(root))

    def _inputs(X):
        return {s: np.asarray(X[c], dtype=float) for s, c in used_inputs.items()}

    def _shape(X, theta):
        return np.broadcast_shapes(theta.shape[:-1] + (1,), np.shape(X[columns[0]]))

    def function(X, theta):
        theta = np.asarray(theta, dtype=float)
        with np.errstate(all="ignore"):
            value = evaluate(_inputs(X), _Theta(_columns(theta), ()))
        return np.broadcast_to(value, _shape(X, theta))

    def log_evaluate(X, z, differentiate):
        """log f (shape (..., n)) and {k: d log f / d z_k} at fitting-space ``z``."""
        inputs = _inputs(X)
        positive = frozenset(s for s, v in inputs.items() if (v > 0).all())
        logs = _columns(z)
        theta = _Theta([np.exp(c) if log else c for c, log in zip(logs, log_mask, strict=True)], logs)
        value, grads = log_program(positive, differentiate)(inputs, theta)
        shape = _shape(X, z)
        if np.shape(value) != shape:
            value = np.broadcast_to(value, shape).copy()
        return value, grads, shape

    def log_function(X, z):
        with np.errstate(all="ignore"):
            return log_evaluate(X, np.asarray(z, dtype=float), False)[0]

    def log_value_and_jacobian(X, z):
        with np.errstate(all="ignore"):
            value, grads, shape = log_evaluate(X, np.asarray(z, dtype=float), True)
        rows = np.empty((len(param_names),) + shape)  # built as (P, ..., n), returned as a view
        for k in range(len(param_names)):
            rows[k] = grads.get(k, 0.0)
        return value, np.moveaxis(rows, 0, -1)

    return Law(name=name, inputs=columns, params=parameters, formula=expression,
               function=function, log_function=log_function,
               log_value_and_jacobian=log_value_and_jacobian,
               description=f"Custom law {expression}",
               extra={"expression": expression,
                      "symbols": {s: c for s, c in used_inputs.items() if SYMBOLS.get(s) != c}})


def check_expression(expression: str) -> None:
    """Raise :class:`InputError` unless ``expression`` alone is a complete expression of
    the language (whitelist, arity, length, depth), e.g. before it is embedded in a
    larger one."""
    _parse(expression)


def _parse(expression: str) -> ast.Expression:
    if not isinstance(expression, str):
        raise InputError(f"the expression must be a string, but got {type(expression).__name__}")
    if len(expression) > MAX_LENGTH:
        raise InputError(f"the expression has {len(expression):,} characters, but at most "
                         f"{MAX_LENGTH:,} are allowed")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise InputError(f"expression {_quoted(expression)} does not parse: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise InputError(f"expression {_quoted(expression)} is nested too deeply to parse") from None
    depth = _depth(tree.body)
    if depth > MAX_DEPTH:
        raise InputError(f"expression {_quoted(expression)} is nested {depth} levels deep, but at "
                         f"most {MAX_DEPTH} are allowed")
    allowed = ", ".join(f"{f}({', '.join('ab'[:k])})" for f, k in FUNCTIONS.items())
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise InputError(f"expression {_quoted(expression)} may not contain "
                             f"{type(node).__name__} (allowed: numbers, names, + - * / **, "
                             f"calls of {allowed})")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool)
                                               or not isinstance(node.value, (int, float))):
            raise InputError(f"expression {_quoted(expression)} may contain only numeric constants")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise InputError(f"expression {_quoted(expression)} calls something other than "
                                 f"{allowed}")
            arity = FUNCTIONS[node.func.id]
            if node.keywords or len(node.args) != arity:
                given = len(node.args) + len(node.keywords)
                raise InputError(
                    f"expression {_quoted(expression)}: {node.func.id} takes {arity} "
                    f"argument{'s' if arity > 1 else ''}, but is given {given}"
                    + (" (keyword arguments are not accepted)" if node.keywords else ""))
    return tree


def _quoted(expression: str, limit: int = 60) -> str:
    """``expression`` quoted for a message, its middle cut when it is long."""
    if len(expression) <= limit:
        return repr(expression)
    return repr(expression[:limit // 2] + " … " + expression[-limit // 2:])


def _depth(root: ast.AST) -> int:
    """Levels of the tree below ``root`` (iterative: safe on any depth)."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop)))
    return deepest


def _compile(node: ast.AST, params: Mapping[str, int]) -> _Node:
    """The :class:`_Node` tree of a parsed (and checked) expression."""
    if isinstance(node, ast.Constant):
        try:
            value = float(node.value)
        except OverflowError:              # an integer literal beyond the float range
            value = math.inf
        # A numpy float, so that arithmetic on constants alone (9**9**9) overflows to
        # inf instead of building a huge Python integer or raising OverflowError.
        return _Node("const", leaf=np.float64(value))
    if isinstance(node, ast.Name):
        if node.id in params:
            return _Node("param", leaf=params[node.id], deps=frozenset({params[node.id]}))
        return _Node("input", leaf=node.id)
    if isinstance(node, ast.UnaryOp):
        args = (_compile(node.operand, params),)
        op = _OPERATORS[type(node.op)]
    elif isinstance(node, ast.BinOp):
        args = (_compile(node.left, params), _compile(node.right, params))
        op = _OPERATORS[type(node.op)]
    else:                                  # ast.Call, checked by _parse
        args = tuple(_compile(arg, params) for arg in node.args)
        op = node.func.id
    return _Node(op, args, deps=frozenset().union(*(a.deps for a in args)))


class _Theta(NamedTuple):
    """The parameters as the programs read them: ``values[k]`` in natural units and, for a
    log-fitted parameter, ``logs[k]``, its fitting-space value (each of shape (..., 1))."""

    values: Sequence
    logs: Sequence


def _columns(theta: np.ndarray) -> list[np.ndarray]:
    return [theta[..., k:k + 1] for k in range(theta.shape[-1])]


def _value_program(node: _Node) -> Callable:
    """``run(inputs, theta) -> value`` of the tree below ``node`` (numpy broadcasting of
    inputs (n,) and parameters (..., 1)); built once, so evaluating walks no tree."""
    if node.op == "const":
        constant = node.leaf
        return lambda inputs, theta: constant
    if node.op == "input":
        symbol = node.leaf
        return lambda inputs, theta: inputs[symbol]
    if node.op == "param":
        k = node.leaf
        return lambda inputs, theta: theta.values[k]
    if len(node.args) == 1:
        function, (child,) = _UNARY[node.op][0], (_value_program(a) for a in node.args)
        return lambda inputs, theta: function(child(inputs, theta))
    function = _BINARY[node.op]
    left, right = (_value_program(a) for a in node.args)
    return lambda inputs, theta: function(left(inputs, theta), right(inputs, theta))


@dataclass(frozen=True)
class _Programs:
    """Builds the programs that differentiate a tree with respect to the fitting-space
    parameters ``z`` (``z_k = log theta_k`` where ``log_mask[k]``), for data whose inputs
    ``positive_inputs`` are positive; with ``differentiate`` False they return no
    derivatives (values only)."""

    log_mask: tuple[bool, ...]
    positive_inputs: frozenset
    differentiate: bool = True

    def gradient(self, node: _Node) -> Callable:
        """``run(inputs, theta) -> (value, {k: d value / d z_k})`` below ``node``, for the
        parameters it depends on (the chain rule, node by node)."""
        if not node.deps:
            value = _value_program(node)
            return lambda inputs, theta: (value(inputs, theta), {})
        if node.op == "param":
            k = node.leaf
            if not self.differentiate:
                return lambda inputs, theta: (theta.values[k], {})
            if self.log_mask[k]:                      # d theta_k / d z_k = theta_k
                return lambda inputs, theta: (theta.values[k], {k: theta.values[k]})
            return lambda inputs, theta: (theta.values[k], {k: 1.0})
        if len(node.args) == 1:
            return _unary(node.op, self.gradient(node.args[0]))
        if node.op == "pow" and node.args[0].deps:
            base = self.log(node.args[0])
            if base is not None:                      # u**w = exp(w log u), log u in log space
                return _unary("exp", _multiply(self.gradient(node.args[1]), base))
        left, right = (self.gradient(a) for a in node.args)
        return _BINARY_RULES[node.op](left, right)

    def log(self, node: _Node) -> Callable | None:
        """``run(inputs, theta) -> (log value, {k: d log value / d z_k})`` below ``node``,
        evaluated in the log space, if ``node`` is positive by its form: a positive
        constant, an input of ``positive_inputs``, a log-fitted parameter, ``exp`` of
        anything, or a sum, product, quotient, square root or power (of any exponent) of
        such; None otherwise."""
        op, args = node.op, node.args
        if op == "param":
            k = node.leaf
            if not self.log_mask[k]:
                return None
            seed = {k: 1.0} if self.differentiate else {}
            return lambda inputs, theta: (theta.logs[k], seed)
        if op in ("const", "input"):
            if not (node.leaf > 0 if op == "const" else node.leaf in self.positive_inputs):
                return None
            run = None
        elif op == "exp":                             # log exp(u) = u
            run = self.gradient(args[0])
        elif op == "pow":                             # log u**w = w log u
            base = self.log(args[0])
            if base is None:
                return None
            run = _multiply(self.gradient(args[1]), base)
        elif op in ("add", "mul", "div", "sqrt"):
            children = [self.log(a) for a in (_terms(node) if op == "add" else args)]
            if any(child is None for child in children):
                return None
            if op == "add":                           # log-sum-exp of the terms' logs
                run = _log_sum(children)
            elif op == "sqrt":                        # log sqrt(u) = log(u) / 2
                run = _multiply(lambda inputs, theta: (0.5, {}), children[0])
            else:                                     # log(u w), log(u / w): sums of logs
                run = (_add if op == "mul" else _subtract)(*children)
        else:
            return None
        if node.deps:
            return run
        value = _value_program(node)                  # no parameter below: log of the value
        return lambda inputs, theta: (np.log(value(inputs, theta)), {})


def _unary(name, child):
    function, slope = _UNARY[name]

    def run(inputs, theta):
        u, du = child(inputs, theta)
        value = function(u)
        return value, _scaled(slope(u, value), du) if du else {}
    return run


def _log_of(program):
    """The log program of a value program that is not positive by its form."""
    def run(inputs, theta):
        value, grads = program(inputs, theta)
        return np.log(value), _scaled(1.0 / value, grads) if grads else {}
    return run


def _terms(node: _Node) -> list[_Node]:
    """The terms of the sum at ``node`` (``a + (b + c)`` has three)."""
    if node.op != "add":
        return [node]
    return _terms(node.args[0]) + _terms(node.args[1])


def _log_sum(terms):
    """``log(sum_k u_k)`` from the terms' log programs (log-sum-exp); its derivative weighs
    each term's by its share ``u_k / sum_k u_k``."""
    def run(inputs, theta):
        parts = [term(inputs, theta) for term in terms]
        total, shares = logsumexp_terms(*(log for log, _ in parts))
        grads: dict = {}
        for (_, d), share in zip(parts, shares, strict=True):
            for k, g in d.items():
                g = _times(share, g)
                grads[k] = grads[k] + g if k in grads else g
        return total, grads
    return run


def _add(left, right):
    def run(inputs, theta):
        (u, du), (w, dw) = left(inputs, theta), right(inputs, theta)
        return u + w, _sum(du, 1.0, dw, 1.0)
    return run


def _subtract(left, right):
    def run(inputs, theta):
        (u, du), (w, dw) = left(inputs, theta), right(inputs, theta)
        return u - w, _sum(du, 1.0, dw, -1.0)
    return run


def _multiply(left, right):
    def run(inputs, theta):
        (u, du), (w, dw) = left(inputs, theta), right(inputs, theta)
        return u * w, _sum(du, w, dw, u)
    return run


def _divide(left, right):
    def run(inputs, theta):
        (u, du), (w, dw) = left(inputs, theta), right(inputs, theta)
        value = u / w
        return value, _sum(du, 1.0 / w if du else 0.0, dw, -value / w if dw else 0.0)
    return run


def _power(left, right):
    def run(inputs, theta):
        (u, du), (w, dw) = left(inputs, theta), right(inputs, theta)
        if not du and np.all(u > 0):              # a positive base: u**w = exp(w log u)
            log_u = np.log(u)
            value = np.exp(w * log_u)
            return value, _scaled(value * log_u, dw) if dw else {}
        value = np.power(u, w)
        slope_u = w * np.power(u, w - 1.0) if du else 0.0
        slope_w = value * np.log(u) if dw else 0.0
        return value, _sum(du, slope_u, dw, slope_w)
    return run


def _select(pick_left, function):
    def rule(left, right):
        def run(inputs, theta):
            (u, du), (w, dw) = left(inputs, theta), right(inputs, theta)
            first = pick_left(u, w)
            return function(u, w), {k: np.where(first, du.get(k, 0.0), dw.get(k, 0.0))
                                    for k in du.keys() | dw.keys()}
        return run
    return rule


_BINARY_RULES = {"add": _add, "sub": _subtract, "mul": _multiply, "div": _divide,
                 "pow": _power, "minimum": _select(np.less_equal, np.minimum),
                 "maximum": _select(np.greater_equal, np.maximum)}


def _times(a, g):
    """``a * g`` without the work where either factor is the plain number 1 or -1 (the
    derivatives of sums and of the parameters themselves)."""
    if isinstance(a, float):
        if a == 1.0:
            return g
        if a == -1.0:
            return -g
    if isinstance(g, float) and g == 1.0:
        return a
    return a * g


def _scaled(slope, grads: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    return {k: _times(slope, g) for k, g in grads.items()}


def _sum(da: Mapping[int, np.ndarray], a, db: Mapping[int, np.ndarray], b
         ) -> dict[int, np.ndarray]:
    """``a * da + b * db``, key by key (a missing key is a zero derivative)."""
    out = {k: _times(a, g) for k, g in da.items()}
    for k, g in db.items():
        out[k] = out[k] + _times(b, g) if k in out else _times(b, g)
    return out


def _names(tree: ast.Expression) -> list[str]:
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = sorted((node.col_offset, node.id) for node in ast.walk(tree)
                   if isinstance(node, ast.Name) and id(node) not in called)
    ordered = list(dict.fromkeys(symbol for _, symbol in found))    # in reading order
    clash = [s for s in ordered if s in FUNCTIONS]
    if clash:
        raise InputError(f"{', '.join(clash)} name functions and cannot be symbols")
    return ordered


def _param(name: str, override: Mapping, *, exponent: bool) -> Param:
    allowed = {"lower", "upper", "grid", "log"}
    extra = sorted(set(override) - allowed)
    if extra:
        raise InputError(f"params[{name!r}] has unknown keys {', '.join(extra)} "
                         f"(allowed: {', '.join(sorted(allowed))})")
    log = bool(override.get("log", "lower" not in override or override["lower"] >= 0))
    lower = float(override.get("lower", 0.0 if log else -np.inf))
    upper = float(override.get("upper", np.inf))
    default = (EXPONENT_GRID if exponent else POSITIVE_GRID) if log else SIGNED_GRID
    grid = tuple(float(v) for v in override.get("grid", default))
    if log and lower < 0:
        raise InputError(f"params[{name!r}] is fitted as a logarithm but its lower bound "
                         f"is {lower}")
    return Param(name, lower, upper, grid, log=log)
