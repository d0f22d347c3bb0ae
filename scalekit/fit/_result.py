"""`FitResult`: fitted values, uncertainty, statistics and predictions of one fit."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalekit.checks import check_choice, check_number
from scalekit.diagnostics import Diagnostic
from scalekit.fit._inputs import law_inputs
from scalekit.fit._objective import log_jacobian
from scalekit.fit._uncertainty import expanded_tail, quantile
from scalekit.formatting import collapse_notes, format_interval, format_number
from scalekit.laws import Law
from scalekit.results import ResultProtocol

FORMAT = "scalekit.fitresult/2"


@dataclass(repr=False)
class FitResult(ResultProtocol):
    """Outcome of :func:`~scalekit.fit.fit_law`.

    Attributes
    ----------
    law : Law
        The law fitted (with ``fit_law``'s ``fixed`` parameters left out of its
        ``params``).
    values, stderr : dict of str to float
        Fitted parameters and their standard errors (natural units); fixed
        parameters appear with standard error 0.
    ci : dict of str to (float, float)
        Intervals at ``ci_level``: bootstrap percentiles when the fit was
        bootstrapped, else Student-t intervals (``n - p`` degrees of freedom) built
        in the fitting space (cut to the parameter's bounds).
    ci_level : float
    stats : dict
        ``n_points``, ``n_params``, ``objective``, ``loss``, ``delta``, ``n_starts``,
        ``n_starts_grid``, ``n_at_best``, ``at_best_rtol``, ``n_optima``, ``p_unseen``,
        ``stop_reason`` (see :func:`~scalekit.fit._multistart.multistart`), ``converged``,
        ``message``, ``aic``, ``bic``, ``residual_scale``, ``dof``, ``bootstrap``,
        ``input_range`` (min, max of each input), ``ci_method``; with a bootstrap
        ``resample`` (``runs`` or ``points``) and ``n_runs``, and ``workers_note`` when
        fewer bootstrap workers ran than ``n_jobs`` asked for; ``fixed`` (names) when
        parameters were fixed.
    derived : dict
        The law's derived quantities (for Chinchilla ``a``, ``b``, ``G``).
    derived_ci : dict of str to (float, float)
        Their intervals at ``ci_level``, from the same bootstrap draws as ``ci``
        (delta method without a bootstrap).
    diagnostics : list of Diagnostic
        What the data cannot support (``docs/diagnostics.md``).
    bootstrap_values : ndarray (B, P) or None
        Parameters (natural units) of every bootstrap resample.
    covariance : ndarray (P, P) or None
        Asymptotic covariance in the fitting space (see :mod:`scalekit.fit._uncertainty`).
    points : FitInput or None
        The law, points and notes the fit used, when it was fitted from curves by
        :func:`~scalekit.fit.fit_frame` (not written by ``to_dict``).
    """

    law: Law
    values: dict[str, float]
    stderr: dict[str, float]
    ci: dict[str, tuple[float, float]]
    ci_level: float
    stats: dict[str, Any]
    derived: dict[str, float] = field(default_factory=dict)
    derived_ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    bootstrap_values: np.ndarray | None = None
    covariance: np.ndarray | None = None
    points: Any = field(default=None, compare=False)

    @property
    def warnings(self) -> list[str]:
        """Messages of the ``warning`` and ``error`` diagnostics."""
        return [d.message for d in self.diagnostics if d.severity != "info"]

    @property
    def theta(self) -> np.ndarray:
        """Fitted values as an array in the law's parameter order."""
        return np.array([self.values[name] for name in self.law.param_names], dtype=float)

    def predict(self, X) -> np.ndarray:
        """The fitted law at ``X`` (mapping of input name or symbol to array, or a DataFrame)."""
        return self.law.predict(law_inputs(self.law, X), self.theta)

    def interval(self, X, *, kind: str = "confidence", level: float | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Interval for the mean law (``"confidence"``) or for a new point (``"prediction"``).

        The confidence band is the (expanded) percentile band of the bootstrap laws
        when the fit was bootstrapped, else a normal band in the log space from the
        covariance (delta method). The prediction interval adds the residual noise
        in the log space: each half-width ``h`` of the band becomes
        ``sqrt(h^2 + (t s)^2)``, with ``s = stats["residual_scale"]`` (root mean
        square of the log residuals, ``n - p`` degrees of freedom) and ``t`` the
        Student-t quantile of ``level`` with ``n - p`` degrees of freedom (the
        delta-method band uses the same quantile).

        Returns
        -------
        lo, hi : ndarray
        """
        check_choice("kind", kind, ("confidence", "prediction"))
        level = self.ci_level if level is None else level
        check_number("level", level, low=0, high=1, low_open=True, high_open=True)
        dof = self.stats.get("dof", self.stats["n_points"] - self.stats["n_params"])
        X = law_inputs(self.law, X)
        center = np.log(self.predict(X))
        if self.bootstrap_values is not None and len(self.bootstrap_values):
            draws = np.log(self.law.predict(X, self.bootstrap_values))     # (B, n)
            tail = expanded_tail(level, dof, len(self.law.params))
            lo, hi = np.nanpercentile(draws, [tail, 100.0 - tail], axis=0)
            below, above = np.maximum(center - lo, 0.0), np.maximum(hi - center, 0.0)
        else:
            z = self.law.to_fitting(self.theta)
            J = log_jacobian(self.law, X, z)
            cov = self.covariance if self.covariance is not None else np.full((len(z),) * 2, np.nan)
            half = quantile(level, dof) * np.sqrt(np.einsum("np,pq,nq->n", J, cov, J))
            below = above = half
        if kind == "prediction":
            noise = quantile(level, dof) * self.stats["residual_scale"]
            below, above = np.hypot(below, noise), np.hypot(above, noise)
        return np.exp(center - below), np.exp(center + above)

    def equation(self, digits: int = 4) -> str:
        """The fitted law written out with its numbers, the report's first line:
        ``L(N, D) = 1.817 + 477.8 / N^0.3473 + 2143 / D^0.3672``."""
        return law_equation(self.law.formula, self.values, digits,
                            arguments=self.law.extra.get("arguments"))

    def to_frame(self):
        """The parameters as a tidy DataFrame: ``parameter``, ``value``, ``stderr``,
        ``ci_low``, ``ci_high`` (one row per parameter; derived quantities follow with
        ``kind`` "derived")."""
        import pandas as pd

        rows = [{"parameter": name, "kind": "fitted", "value": value,
                 "stderr": self.stderr.get(name, np.nan),
                 "ci_low": self.ci.get(name, (np.nan, np.nan))[0],
                 "ci_high": self.ci.get(name, (np.nan, np.nan))[1]}
                for name, value in self.values.items()]
        rows += [{"parameter": name, "kind": "derived", "value": value, "stderr": np.nan,
                  "ci_low": self.derived_ci.get(name, (np.nan, np.nan))[0],
                  "ci_high": self.derived_ci.get(name, (np.nan, np.nan))[1]}
                 for name, value in self.derived.items() if isinstance(value, (int, float))]
        return pd.DataFrame(rows, columns=["parameter", "kind", "value", "stderr", "ci_low",
                                           "ci_high"])

    def to_dict(self) -> dict:
        """Plain-JSON dict (see :func:`scalekit.serialise.dumps`); inverse of ``from_dict``."""
        from scalekit.serialise import to_jsonable

        law = {"name": self.law.name, "formula": self.law.formula,
               "inputs": list(self.law.inputs), "params": list(self.law.param_names)}
        if "expression" in self.law.extra:
            law["expression"] = self.law.extra["expression"]
            law["symbols"] = dict(self.law.extra.get("symbols", {}))
            law["param_specs"] = {p.name: {"lower": p.lower, "upper": p.upper,
                                           "grid": list(p.grid), "log": p.log}
                                  for p in self.law.params}
        for key in ("fixed", "bounds"):
            if self.law.extra.get(key):
                law[key] = {k: (list(v) if isinstance(v, tuple) else v)
                            for k, v in self.law.extra[key].items()}
        return to_jsonable({
            "format": FORMAT,
            "law": law,
            "params": {name: {"value": self.values[name], "stderr": self.stderr[name],
                              "ci": list(self.ci[name])} for name in self.values},
            "ci_level": self.ci_level,
            "stats": self.stats,
            "derived": self.derived,
            "derived_ci": {k: list(v) for k, v in self.derived_ci.items()},
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "warnings": list(self.warnings),
            "covariance": self.covariance,
            "bootstrap_values": self.bootstrap_values,
        })

    @classmethod
    def from_dict(cls, data: dict) -> FitResult:
        """Rebuild a result written by :meth:`to_dict` (the law is looked up again)."""
        law = law_from_json(data["law"])
        params = data["params"]

        def number(value):
            return np.nan if value is None else float(value)

        names = list(params)
        boot = data.get("bootstrap_values")
        cov = data.get("covariance")
        return cls(
            law=law,
            values={k: number(params[k]["value"]) for k in names},
            stderr={k: number(params[k]["stderr"]) for k in names},
            ci={k: tuple(number(v) for v in params[k]["ci"]) for k in names},
            ci_level=float(data["ci_level"]),
            stats=dict(data["stats"]),
            derived={k: (number(v) if v is None or isinstance(v, (int, float)) else v)
                     for k, v in data.get("derived", {}).items()},
            derived_ci={k: tuple(number(e) for e in v)
                        for k, v in data.get("derived_ci", {}).items()},
            diagnostics=[Diagnostic.from_dict(d) for d in data.get("diagnostics", [])],
            bootstrap_values=None if boot is None else np.array(boot, dtype=float),
            covariance=None if cov is None else np.array(
                [[number(v) for v in row] for row in cov], dtype=float),
        )

    def _summary_title(self) -> str:
        return f"Fit of {self.law.name}: {self.law.formula}"

    def _summary_sections(self):
        level = f"{self.ci_level:.0%}"
        params = [(name, f"{format_number(value)} ± {format_number(self.stderr.get(name))}  "
                         f"{level} CI {format_interval(self.ci.get(name))}")
                  for name, value in self.values.items()]
        return [("Fit statistics", list(self.stats.items())), ("Parameters", params),
                ("Derived quantities",
                 [(name, f"{format_number(value)}  {level} CI "
                         f"{format_interval(self.derived_ci.get(name))}")
                  for name, value in self.derived.items()]),
                ("Notes and warnings", collapse_notes([d.line() for d in self.diagnostics]))]

    def _repr_fields(self) -> dict:
        return {"law": self.law.name, "objective": self.stats.get("objective"),
                "n_points": self.stats.get("n_points")}

    def to_lmfit(self):
        """The fitted parameters as :class:`lmfit.Parameters` (values, bounds, stderr).

        Lets a fit continue in lmfit (another minimiser, ``conf_interval``,
        a composite model); the law itself is :meth:`Law.predict`.
        """
        import lmfit

        out = lmfit.Parameters()
        bounds = {p.name: (p.lower, p.upper) for p in self.law.params}
        for name, value in self.values.items():
            lower, upper = bounds.get(name, (-np.inf, np.inf))
            out.add(name, value=value, min=lower, max=upper, vary=name in bounds)
            out[name].stderr = self.stderr.get(name)
        return out


#: Names of functions a formula may call (never a parameter or an input).
_FUNCTIONS = frozenset({"exp", "log", "log10", "log2", "sqrt", "abs", "tanh", "log1p", "expm1",
                        "minimum", "maximum"})


def law_equation(formula: str, values: dict[str, float], digits: int = 4, *,
                 arguments=None) -> str:
    """``formula`` with every parameter replaced by its value (:func:`format_number`, negative
    ones in brackets) and as arguments ``arguments`` (a law's ``extra["arguments"]``, where its
    formula names auxiliary quantities too) or else the inputs it names:
    ``L(N, D) = 1.817 + …``."""
    names = re.findall(r"[A-Za-z_]\w*", formula)
    inputs = list(arguments) if arguments else list(dict.fromkeys(
        n for n in names if n not in values and n not in _FUNCTIONS))

    def number(match: re.Match) -> str:
        name = match.group(0)
        if name not in values:
            return name
        text = format_number(values[name], digits)
        return f"({text})" if text.startswith("-") else text

    return f"L({', '.join(inputs)}) = " + re.sub(r"[A-Za-z_]\w*", number, formula)


def law_from_json(spec: dict) -> Law:
    """The law a result's ``law`` entry names: an expression, ``bnsl<k>`` or a registered name.

    Parameters fixed or bounded in the fit (``fixed``, ``bounds``) are applied again.
    """
    from scalekit.fit._constrain import constrained_law

    return constrained_law(_base_law(spec), fixed=spec.get("fixed"),
                           bounds={k: tuple(v) for k, v in spec.get("bounds", {}).items()})


def _base_law(spec: dict) -> Law:
    from scalekit.laws import get_law

    if "expression" in spec:
        from scalekit.laws import law_from_expression

        specs = {name: {k: (-np.inf if v is None and k == "lower" else
                            np.inf if v is None and k == "upper" else v)
                        for k, v in spec_.items()}
                 for name, spec_ in spec.get("param_specs", {}).items()}
        return law_from_expression(spec["expression"], inputs=spec.get("symbols", {}),
                                   params=specs, name=spec["name"])
    match = re.fullmatch(r"bnsl(\d+)", spec["name"])
    if match:
        from scalekit.laws import bnsl

        return bnsl(int(match.group(1)))
    return get_law(spec["name"])
