"""The planners' laws fitted to measurements, after the checks of their domains.

Each function takes a tidy curve frame (one row per logged point; of a run logged at
several steps only its last point counts, as the laws describe finished runs),
refuses the first value outside the law's domain by its run, file line and column,
and fits the law by :func:`scalekit.fit._frame.fit_frame`:

- :func:`fit_depth_law`: the depth law of Liu, Kangaslahti, Liu & Gore (2026),
  ``L(m, l, D)``, from columns ``width``, ``depth``, ``tokens``;
- :func:`fit_class_count_law`: ``eps(K) = min(c K^gamma, 1 - 1/K)`` of Nadgir,
  Balasubramanian & Chaudhari, from ``classes`` and an error in (0, 1);
- :func:`fit_inference_k_law`: error against the number of samples ``k`` (Halder &
  Pehlevan), from ``k`` >= 1 and a positive error.

An optimum, a shape or a critical value is stated only when it (and its interval,
where one is defined) lies inside the range of the data: the inference-k optimum
``k_opt``, the class count where the error reaches chance, the loss-optimal depth of
:func:`plan_depth_in_data` and the critical degree of :func:`plan_tree_in_data`.
Otherwise the result says none was found inside the data, with a ``no_optimum``
diagnostic.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from scalekit.checks import check_number
from scalekit.curves import Curves
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.fit import fit_frame, last_points
from scalekit.laws import get_law
from scalekit.laws import count_depth
from scalekit.planners._asymptote import asymptote_checks
from scalekit.planners._shape_test import depth_test, inference_k_test, slope_test


def fit_depth_law(frame: Curves | pd.DataFrame, *, y: str = "loss",
                  keep_lowest: int | None = None, exclude_end_layers: bool = False,
                  source: str | None = None, **fit_options):
    """Fit the depth law ``depth_width_data`` to each run's last point.

    Parameters
    ----------
    keep_lowest : int, optional
        Fit only the ``keep_lowest`` lowest values of ``y`` (Liu et al. keep 203).
    exclude_end_layers : bool
        Count depth without the first and last layers (every run needs 3 or more).
    source : str, optional
        The file the frame was read from, for error messages.
    fit_options
        For :func:`~scalekit.fit.fit_law` (``loss``, ``bootstrap``, ``seed``, ...).

    Returns
    -------
    FitResult
        With ``points``, the points it fitted.
    """
    curves = Curves.of(frame)
    rows = last_points(curves.frame)
    if exclude_end_layers:
        _require_columns(rows, ["depth"], source)
        _check_range(rows, "depth", rows["depth"] < 3, "at least 3 with `exclude_end_layers`",
                     source, curves.source_lines)
        rows = rows.assign(depth=count_depth(rows["depth"], exclude_end_layers=True))
    drop_top = 0
    if keep_lowest is not None:
        check_number("keep_lowest", keep_lowest, low=1, high=len(rows), integer=True)
        drop_top = len(rows) - keep_lowest
    result = _fit(curves.with_frame(rows), "depth_width_data", y, source, drop_top=drop_top,
                  **fit_options)
    _check_floor(result, "L0")
    return result


def fit_class_count_law(frame: Curves | pd.DataFrame, *, y: str = "error",
                        source: str | None = None, **fit_options):
    """Fit the class-count law ``class_count`` to each run's last point (classes >= 2,
    error strictly between 0 and 1); returns a result as :func:`fit_depth_law`."""
    curves = Curves.of(frame)
    rows = last_points(curves.frame)
    _require_columns(rows, ["classes", y], source)
    _check_range(rows, "classes", rows["classes"] < 2, "at least 2", source, curves.source_lines)
    _check_range(rows, y, (rows[y] <= 0) | (rows[y] >= 1), "strictly between 0 and 1", source,
                 curves.source_lines)
    result = _fit(curves.with_frame(rows), "class_count", y, source, **fit_options)
    classes = result.points.X["classes"]
    test = _class_count_test(result)
    result.derived["shape_p_value"] = test.p_value
    if result.derived.get("saturation_classes") is not None and not test.rejected:
        result.derived["saturation_classes"] = None
        result.derived_ci.pop("saturation_classes", None)
        result.diagnostics.append(_not_rising(test, "the class count where the error reaches "
                                              "chance (`saturation_classes`)"))
    elif result.derived.get("saturation_classes") is not None and not _inside(
            result, "saturation_classes", classes):
        result.derived["saturation_classes"] = None
        result.derived_ci.pop("saturation_classes", None)
        result.diagnostics.append(_no_optimum(
            "the class count where the error reaches chance", "classes", classes,
            "`saturation_classes`", "add runs with more classes"))
    return result


def plan_depth_in_data(result, params_budget: float, tokens: float, **plan_options):
    """:func:`scalekit.planners._depth.plan_depth` searching only the depths of the data.

    ``result`` is :func:`fit_depth_law`'s. A best depth on an edge of the
    data's depths is no optimum found inside the data: it comes with a ``no_optimum``
    diagnostic (the plan is then the best shape the data cover). Returns
    ``(plan, diagnostics)``.
    """
    from scalekit.planners._depth import plan_depth

    # every layer counted:
    depths = np.asarray(_points(result, "fit_depth_law").frame["depth"], dtype=float)
    depths = depths + (2.0 if plan_options.get("exclude_end_layers") else 0.0)
    low, high = float(depths.min()), float(depths.max())
    plan = plan_depth(result.values, params_budget, tokens, depth_range=(low, high),
                      **plan_options)
    diagnostics = []
    X = result.points.X
    test = depth_test(X["width"], X["depth"], X["tokens"], result.points.y)
    if not test.rejected:
        plan = dataclasses.replace(plan, regime="none found: no depth term in the data",
                                   regime_resolved=False)
        diagnostics.append(Diagnostic(
            "no_optimum", "warning", "the law without a depth term of its own (`c_l` = 0) fits "
            f"the data as well (likelihood ratio {test.statistic:.3g}, p = {test.p_value:.3g} by "
            f"parametric bootstrap, against the level {test.level:g}), so neither the regime of "
            "`alpha_l` nor a loss-optimal depth is the data's: add runs that vary the depth at "
            "fixed width", param="c_l", value=test.p_value))
    if high == low or np.isclose(plan.depth, low, rtol=1e-6) or np.isclose(plan.depth, high,
                                                                           rtol=1e-6):
        diagnostics.append(Diagnostic(
            "no_optimum", "warning", f"the loss-optimal depth for `params_budget` = "
            f"{params_budget:g} lies on an edge of the data's depths ({low:g} to {high:g}), "
            "so no optimum was found inside the data; the plan is the best depth they cover: "
            "add runs beyond that edge", param="depth", value=plan.depth))
    return plan, diagnostics


def plan_tree_in_data(result, classes: int):
    """:func:`scalekit.planners._cot.plan_tree` for a fitted ``class_count`` law, with a
    ``no_optimum`` diagnostic when its critical degree lies outside the data's class
    counts (the law is carried beyond them there). Returns ``(plan, diagnostics)``."""
    from scalekit.planners._cot import plan_tree

    plan = plan_tree(classes, result.values)
    data = _points(result, "fit_class_count_law").X["classes"]
    test = _class_count_test(result)
    if not test.rejected:
        return plan, [_not_rising(test, f"the critical degree {plan.critical_degree}")]
    if data.min() <= plan.critical_degree <= data.max():
        return plan, []
    return plan, [Diagnostic(
        "no_optimum", "warning", f"the critical degree {plan.critical_degree} lies outside the "
        f"data's class counts ({data.min():g} to {data.max():g}), so it is the law carried "
        "beyond them, not a measured optimum: add runs with that many classes",
        param="critical_degree", value=plan.critical_degree)]


def _class_count_test(result):
    """Whether the error rises with the class count (``gamma > 0``) on the points the fitted
    law puts below chance: the one-sided t-test of the log-log slope there."""
    classes, error = result.points.X["classes"], result.points.y
    below = result.predict({"classes": classes}) < (1.0 - 1.0 / classes) * (1 - 1e-9)
    return slope_test(classes[below], error[below])


def _not_rising(test, what) -> Diagnostic:
    return Diagnostic("no_optimum", "warning", f"{what} is not stated as the data's: below "
                      f"chance the error does not rise with the class count at the level "
                      f"{test.level:g} (one-sided t-test of the log-log slope, t = "
                      f"{test.statistic:.3g}, p = {test.p_value:.3g}), so with gamma = 0 the "
                      "one-step answer is as good; add runs over more class counts",
                      param="gamma", value=test.p_value)


def _inside(result, name, data) -> bool:
    """Whether the derived ``name`` and its interval (where defined) lie in ``data``'s range."""
    low, high = float(np.min(data)), float(np.max(data))
    value = result.derived.get(name)
    ends = [end for end in result.derived_ci.get(name, ()) if end is not None and np.isfinite(end)]
    return value is not None and all(low <= v <= high for v in [value, *ends])


def _no_optimum(what, column, data, name, remedy) -> Diagnostic:
    return Diagnostic("no_optimum", "warning", f"{what} ({name}) or its interval lies outside "
                      f"the data ({column} from {np.min(data):g} to {np.max(data):g}), so none "
                      f"is stated: {remedy}", param=name.strip("`"))


def fit_inference_k_law(frame: Curves | pd.DataFrame, *, y: str = "error",
                        source: str | None = None, **fit_options):
    """Fit the law ``inference_k`` to each run's last point (k >= 1, error > 0); returns
    a result as :func:`fit_depth_law`."""
    curves = Curves.of(frame)
    rows = last_points(curves.frame)
    _require_columns(rows, ["k", y], source)
    _check_range(rows, "k", rows["k"] < 1, "at least 1", source, curves.source_lines)
    _check_range(rows, y, rows[y] <= 0, "positive", source, curves.source_lines)
    result = _fit(curves.with_frame(rows), "inference_k", y, source, **fit_options)
    _check_floor(result, "E")
    k = result.points.X["k"]
    test = inference_k_test(k, result.points.y, seed=fit_options.get("seed", 0))
    result.derived["shape_p_value"] = test.p_value
    if result.derived.get("k_opt") is None:
        found = None
    elif not test.rejected:
        found = Diagnostic(
            "no_optimum", "warning", f"the fitted curve's least error (`k_opt`) is not stated: "
            f"the law held non-increasing over the data's k fits them as well as the turning "
            f"one (likelihood ratio {test.statistic:.3g}, p = {test.p_value:.3g} by parametric "
            f"bootstrap, against the level {test.level:g}); add runs at larger k, or more at "
            "each k, to see whether the error turns up", param="k_opt", value=test.p_value)
    elif not _inside(result, "k_opt", k):
        found = _no_optimum("the fitted curve's least error", "k", k, "`k_opt`",
                            "add runs at larger k to see whether the error turns up")
    else:
        return result
    result.derived.update(k_opt=None, error_at_opt=None,
                          shape=f"monotone within the data (k ≤ {k.max():g}); no optimum found")
    result.derived_ci.pop("k_opt", None)
    result.derived_ci.pop("error_at_opt", None)
    result.diagnostics.extend([found] if found else [])
    return result


def _check_floor(result, name: str) -> None:
    """Add the asymptote ``name``'s diagnostics (:func:`asymptote_checks`) against the losses
    fitted, but no second ``on_bound`` where the fit has one for it."""
    flagged = {(d.code, d.param) for d in result.diagnostics}
    result.diagnostics.extend(
        d for d in asymptote_checks(result.values[name], result.points.y, name=name,
                                    residual_scale=result.stats["residual_scale"])
        if (d.code, d.param) not in flagged)


def _points(result, fitter: str):
    """The points ``result`` was fitted to; a result without them (from ``fit_law`` or read
    back from JSON) is refused."""
    if result.points is None:
        raise InputError(f"this plan searches the data a law was fitted to, but the result "
                         f"carries no points: fit it with `{fitter}`")
    return result.points


def _fit(curves, law, y, source, *, drop_top=0, **fit_options):
    check_number("bootstrap", fit_options.get("bootstrap", 0), low=0, integer=True)
    _require_columns(curves.frame, list(get_law(law).inputs) + [y], source)
    return fit_frame(curves, law=law, y=y, drop_top=drop_top, **fit_options)


def _require_columns(rows, columns, source) -> None:
    missing = [column for column in columns if column not in rows]
    if missing:
        raise InputError(f"needs the column(s) {', '.join(missing)} (found: "
                         f"{', '.join(map(str, rows.columns))}); map them with `mapping` "
                         "role=column", source=source)


def _check_range(rows, column, bad, rule, source, lines) -> None:
    """Refuse the first row where ``bad`` holds, naming its run (or row), value and, where
    ``lines`` (the reader's :class:`~scalekit.curves._validate.SourceLines`) know it, file line."""
    if not bad.any():
        return
    where = int(np.flatnonzero(np.asarray(bad))[0])
    row = rows.iloc[where]
    which = f"run {row['run']!r}" if "run" in rows else f"row {where + 1}"
    line = (lines.line(row["run"], row["step"])
            if lines is not None and {"run", "step"} <= set(rows.columns) else None)
    raise InputError(f"{which} has {column} = {row[column]:g}, but every value must be {rule}",
                     source=source, column=column, line=line)
