"""The learning rate and batch size a run of N parameters on D tokens should use.

:func:`fit_hparams` reads a sweep (runs over learning rate, batch size, N and D), fits each
(N, D) cell's loss surface around its optimum (:mod:`scalekit.planners._hparams_cell`),
then power laws of the cells' optimal learning rate and batch size in N, D or C
(:mod:`scalekit.planners._hparams_laws`), a Chinchilla law of their optimal loss, and of the
loss cost of a 2× too-large learning rate. Its intervals are a bootstrap over runs (each
cell's runs resampled, every surface and law refitted) plus a residual drawn from the laws'
held-out residuals: the best measured setting of each cell of a left-out N against the law
fitted without that N. They are prediction intervals for the best setting a grid search
of a new cell finds, flat optimum and grid spacing included. :func:`score_on_grid` scores
a setting on a measured grid.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.curves import Curves
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.fit import EXTRAPOLATION_WARN, fit_law, last_points
from scalekit.planners._hparams_cell import SURFACES, design, fit_cell, loo_rmse, window_rows
from scalekit.planners._hparams_laws import (LAW_FORMS, choose_form, fit_log_law,
                                             held_out_residuals, law_terms, predict_log)
from scalekit.planners._hparams_published import published_at
from scalekit.planners._hparams_result import HparamsFit
from scalekit.planners._measured_laws import _check_range, _require_columns

#: The choices of ``surface`` and of ``lr_law`` / ``batch_law``.
HPARAMS_SURFACES = ("auto", *SURFACES)
HPARAMS_LAW_FORMS = ("auto", *LAW_FORMS, "step_law", "deepseek_llm")
#: The published laws' forms by name, for the learning rate and the batch.
_PUBLISHED_FORMS = {"step_law": {"lr": "N,D", "batch": "D"},
                    "deepseek_llm": {"lr": "C", "batch": "C"}}

#: Relative loss window around each cell's best run that its surface is fitted to; chosen on
#: the train pool of ScaleBench's lr_bsz task with the largest N left out (docs/hparams.md).
WINDOW = 0.02


def fit_hparams(frame: Curves | pd.DataFrame, *, lr: str = "lr", batch: str = "batch",
                by: tuple[str, str] = ("params", "tokens"), y: str = "loss",
                surface: str = "auto", window: float = WINDOW, lr_law: str = "auto",
                batch_law: str = "auto", target: tuple[float, float] | None = None,
                sequence_length: float | None = None, bootstrap: int = 200,
                ci_level: float = 0.95, seed: int = 0, source: str | None = None) -> HparamsFit:
    """Fit the optimal learning rate and batch size of a sweep as laws in N and D.

    Parameters
    ----------
    frame : Curves or DataFrame
        One row per run (or per logged point: a run's last one counts).
    lr, batch, y : str
        The columns of the learning rate, the batch size and the loss.
    by : (str, str)
        The columns of N (parameters) and D (tokens) that make a cell.
    surface : {"auto", "quadratic", "additive"}
        The cells' surface; ``"auto"`` takes the one of least pooled leave-one-run-out error.
    window : float
        Fit each cell's surface to its runs within this relative loss of its best.
    lr_law, batch_law : {"auto", "N,D", "C", "D", "N", "step_law", "deepseek_llm"}
        The laws' forms; ``"auto"`` takes the one of least error on a left-out N; a published
        law's name takes its form (Step Law: ``N,D`` for the learning rate, ``D`` for the
        batch; DeepSeek LLM: ``C`` for both), its coefficients fitted to these data.
    target : (float, float), optional
        ``(params, tokens)`` to recommend a learning rate and batch size for.
    sequence_length : float, optional
        Tokens per sequence when ``batch`` counts sequences, to state the published laws'
        batches (in tokens) in the data's unit.
    bootstrap : int
        Resamples of the runs for the intervals (0: no intervals).
    ci_level : float
        Level of the intervals.
    seed : int
        Seeds the resampling.
    source : str, optional
        The file the frame was read from, for error messages.
    """
    check_number("window", window, low=0.0)
    check_number("bootstrap", bootstrap, low=0, integer=True)
    check_number("ci_level", ci_level, low=0.0, high=1.0)
    if sequence_length is not None:
        check_number("sequence_length", sequence_length, low=1.0)
    check_choice("surface", surface, HPARAMS_SURFACES)
    check_choice("lr_law", lr_law, HPARAMS_LAW_FORMS)
    check_choice("batch_law", batch_law, HPARAMS_LAW_FORMS)
    cells = _cells(frame, lr, batch, by, y, source)
    scores = {name: _pooled_loo(cells, name, window) for name in SURFACES}
    form = min(scores, key=scores.get) if surface == "auto" else surface
    table, diagnostics = _fit_cells(cells, form, window)
    if len(table) < 3:
        raise InputError(f"only {len(table)} (N, D) cell(s) have 3 or more learning rates and "
                         "batch sizes near their optimum, but the laws need 3 or more")
    for row in table.itertuples():
        for axis, ok in (("learning rate", row.bracketed_lr), ("batch size", row.bracketed_batch)):
            if not ok:
                diagnostics.append(Diagnostic(
                    "no_optimum", "warning", f"the cell N = {row.params:g}, D = {row.tokens:g} "
                    f"has its optimal {axis} on an edge of its grid (not bracketed); it is left "
                    f"out of the {axis} law: extend the grid beyond that edge",
                    param="lr" if axis == "learning rate" else "batch", value=row.params))
    laws, residuals = {}, {}
    for name, choice, ok in (("lr", lr_law, "bracketed_lr"), ("batch", batch_law, "bracketed_batch"),
                             ("penalty_lr_2x", "N,D", "bracketed_lr")):
        part = table[table[ok] & (table[name] > 0)]
        choice = _PUBLISHED_FORMS.get(choice, {}).get(name, choice)
        laws[name], residuals[name] = _law(part, name, choice)
        if laws[name] is None:
            diagnostics.append(Diagnostic(
                "few_points", "warning", f"only {len(part)} cell(s) have their {name} "
                "bracketed: no law of it (it needs 3), so none is recommended", param=name))
        elif name != "penalty_lr_2x" and not len(residuals[name]):
            diagnostics.append(Diagnostic(
                "few_points", "warning", f"no cell of the {name} law could be predicted with "
                "its N left out (it needs cells at 3 or more N), so its form was not chosen on "
                f"held-out error ({laws[name]['form']} taken) and its intervals carry no "
                "held-out residual: they are too narrow", param=name))
    for name in ("lr", "batch"):
        law = laws[name]
        table[f"{name}_law"] = (np.nan if law is None else np.exp(
            predict_log(law["form"], law["coef"], table["params"], table["tokens"])))
    laws["loss"], found = _loss_law(table, seed)
    diagnostics.extend(found)
    if bootstrap and (laws["lr"] is not None or laws["batch"] is not None):
        for name, draws in _bootstrap(cells, laws, residuals, form, window, bootstrap,
                                      seed).items():
            laws[name]["bootstrap"] = draws.tolist()
    result = HparamsFit(cells=table.to_dict(orient="records"), laws=laws,
                        surface={"form": form, "window": window, "scores": scores},
                        settings={"lr": lr, "batch": batch, "by": list(by), "y": y,
                                  "bootstrap": bootstrap, "ci_level": ci_level, "seed": seed,
                                  "sequence_length": sequence_length},
                        diagnostics=diagnostics)
    if target is not None:
        result.recommendation, result.published, found = recommend_hparams(result, *target)
        diagnostics.extend(found)
    return result


def recommend_hparams(result: HparamsFit, params: float, tokens: float):
    """The learning rate and batch size of ``result``'s laws at ``params`` and ``tokens``.

    Returns ``(recommendation, published, diagnostics)``: the recommendation (``lr``,
    ``lr_interval``, ``batch``, ``batch_interval``, ``loss``, ``penalty_lr_2x``, ``level``;
    intervals ``None`` without a bootstrap; ``lr_variants``: the interval's ends around
    ``lr``, the learning rates a guard of short prefixes would try), the published laws at the
    same point and an ``extrapolation`` diagnostic where the point lies beyond the cells.
    """
    check_number("params", params, low=0.0, low_open=True)
    check_number("tokens", tokens, low=0.0, low_open=True)
    laws, level = result.laws, result.settings.get("ci_level", 0.95)
    recommendation = {"params": params, "tokens": tokens, "level": level,
                      "loss": _predict_loss(laws.get("loss"), result.cells, params, tokens)}
    tail = (1.0 - level) / 2.0
    for name in ("lr", "batch", "penalty_lr_2x"):
        law = laws.get(name)
        recommendation[name] = (None if law is None else
                                float(np.exp(predict_log(law["form"], law["coef"], params, tokens))))
        if name == "penalty_lr_2x":
            continue
        recommendation[f"{name}_interval"] = None
        if law is not None and law.get("bootstrap"):
            draws = np.asarray(law["bootstrap"], float)
            values = predict_log(law["form"], draws[:, :-1].T, params, tokens) + draws[:, -1]
            recommendation[f"{name}_interval"] = tuple(
                float(v) for v in np.exp(np.quantile(values, [tail, 1.0 - tail])))
    interval = recommendation["lr_interval"]
    recommendation["lr_variants"] = (None if interval is None or recommendation["lr"] is None
                                     else (interval[0], recommendation["lr"], interval[1]))
    published = published_at(params, tokens,
                              sequence_length=result.settings.get("sequence_length"))
    return recommendation, published, _extrapolation(result.cells, (params, tokens))


def score_on_grid(lr: float, batch: float, grid: pd.DataFrame, *, lr_column: str = "lr",
                  batch_column: str = "batch", y: str = "loss") -> dict:
    """Where the setting (``lr``, ``batch``) lands on a measured grid of one cell.

    The nearest measured setting in (ln lr, ln batch), its loss, the grid's best loss and
    setting, and the relative gap ``(loss - best) / best``.
    """
    distance = (np.log(grid[lr_column].to_numpy(float) / lr) ** 2
                + np.log(grid[batch_column].to_numpy(float) / batch) ** 2)
    near = grid.iloc[int(np.argmin(distance))]
    best = grid.loc[grid[y].idxmin()]
    return {"lr": float(near[lr_column]), "batch": float(near[batch_column]),
            "loss": float(near[y]), "best_loss": float(best[y]),
            "best_lr": float(best[lr_column]), "best_batch": float(best[batch_column]),
            "gap": float(near[y] / best[y] - 1.0)}


def _cells(frame, lr, batch, by, y, source) -> list[tuple[float, float, pd.DataFrame]]:
    curves = Curves.of(frame)
    rows = curves.frame
    if {"run", "step"} <= set(rows.columns):
        rows = last_points(rows)
    columns = [lr, batch, *by, y]
    _require_columns(rows, columns, source)
    for column in columns:
        values = pd.to_numeric(rows[column], errors="coerce")
        _check_range(rows, column, ~(values > 0) | ~np.isfinite(values), "a positive number",
                     source, curves.source_lines)
    data = pd.DataFrame({"lr": rows[lr], "batch": rows[batch], "params": rows[by[0]],
                         "tokens": rows[by[1]], "loss": rows[y]}).astype(float)
    return [(n, d, part.reset_index(drop=True))
            for (n, d), part in data.groupby(["params", "tokens"], sort=True)]


def _pooled_loo(cells, surface, window) -> float:
    """Root mean squared leave-one-run-out error of ``surface`` over every cell's window."""
    squares, count = 0.0, 0
    for _, _, part in cells:
        x, z, loss = np.log(part["lr"].to_numpy()), np.log(part["batch"].to_numpy()), part["loss"].to_numpy()
        rows = window_rows(loss, x, z, window, "quadratic")  # the same runs for every form
        if len(rows) <= SURFACES["quadratic"] + 1:
            continue
        error = loo_rmse(design(x[rows] - x[rows[0]], z[rows] - z[rows[0]], surface), loss[rows])
        squares += error ** 2 * len(rows)
        count += len(rows)
    return float(np.sqrt(squares / count)) if count else float("inf")


def _fit_cells(cells, form, window) -> tuple[pd.DataFrame, list[Diagnostic]]:
    """Each cell's fit (a row) and a ``few_points`` diagnostic for each cell left out."""
    rows, skipped = [], []
    for n, d, part in cells:
        fit = fit_cell(part["lr"], part["batch"], part["loss"], surface=form, window=window)
        if fit is None:
            skipped.append(Diagnostic(
                "few_points", "warning", f"the cell N = {n:g}, D = {d:g} has fewer than 3 "
                f"learning rates or batch sizes ({len(part)} runs), so no surface is fitted "
                "there and it is left out of the laws", value=n))
        else:
            best = part.loc[part["loss"].idxmin()]
            rows.append({"params": n, "tokens": d, "runs": len(part), **fit.__dict__,
                         "grid_lr": float(best["lr"]), "grid_batch": float(best["batch"]),
                         "grid_loss": float(best["loss"])})
    return pd.DataFrame(rows), skipped


def _law(part, name, choice):
    """The law of column ``name`` over the cells ``part``, and the held-out log residuals of
    the cells' best measured value (``grid_<name>``, where there is one)."""
    if len(part) < 3:
        return None, np.array([])
    params, tokens, values = part["params"], part["tokens"], part[name]
    form, held_out = choose_form(params, tokens, values)
    if choice != "auto":
        form = choice
    coef = fit_log_law(form, params, tokens, values)
    observed = part.get(f"grid_{name}", values)
    residuals = held_out_residuals(form, params, tokens, values, observed)
    return ({"form": form, "coef": [float(c) for c in coef], "terms": law_terms(form, coef),
             "cells": int(len(part)), "held_out": held_out},
            residuals[np.isfinite(residuals)])


def _loss_law(table, seed):
    """The Chinchilla law of the cells' optimal loss (6 or more cells) and the fit's
    diagnostics, each about the loss law."""
    if len(table) < 6:
        return None, [Diagnostic("few_points", "warning", f"only {len(table)} cells: no law of "
                                 "the optimal loss (it needs 6), so no loss is predicted")]
    result = fit_law("chinchilla", {"N": table["params"].to_numpy(), "D": table["tokens"].to_numpy()},
                     table["loss"].to_numpy(), seed=seed)
    found = [Diagnostic(d.code, d.severity, f"law of the optimal loss: {d.message}", param=d.param,
                        value=d.value) for d in result.diagnostics]
    return ({"form": "chinchilla", "terms": {k: float(v) for k, v in result.values.items()},
             "cells": int(len(table))}, found)


def _predict_loss(law, cells, params, tokens) -> float | None:
    """The loss law at ``params``, ``tokens``, times the ratio of the nearest cell's optimal
    loss (in log N and log D) to the law there: the law carries the change from that cell.
    Chosen with each N's largest D left out (bench/bench_hparams.py): 0.80% root mean
    squared error against 1.02% for the law alone."""
    if law is None:
        return None
    t = law["terms"]

    def value(n, d):
        return t["E"] + t["A"] / n ** t["alpha"] + t["B"] / d ** t["beta"]

    near = min(cells, key=lambda c: np.log(c["params"] / params) ** 2
               + np.log(c["tokens"] / tokens) ** 2)
    return float(value(params, tokens) * near["loss"] / value(near["params"], near["tokens"]))


def _bootstrap(cells, laws, residuals, form, window, bootstrap, seed) -> dict[str, np.ndarray]:
    """Each law's coefficients over resamples of each cell's runs, and beside them (last
    column) one of the law's held-out log residuals drawn at random: a row ``(β, r)`` predicts
    ``ln y = Φ β + r``."""
    rng = np.random.default_rng(seed)
    draws = {name: np.full((bootstrap, len(laws[name]["coef"]) + 1), np.nan)
             for name in ("lr", "batch") if laws[name] is not None}
    arrays = [(n, d, part[["lr", "batch", "loss"]].to_numpy()) for n, d, part in cells]
    for b in range(bootstrap):
        fits = []
        for n, d, values in arrays:
            pick = values[rng.integers(0, len(values), len(values))]
            fit = fit_cell(pick[:, 0], pick[:, 1], pick[:, 2], surface=form, window=window)
            if fit is not None:
                fits.append((n, d, fit))
        for name in draws:
            kept = [(n, d, getattr(f, name)) for n, d, f in fits if getattr(f, f"bracketed_{name}")]
            if len(kept) < 3:
                continue
            n, d, v = (np.array(a) for a in zip(*kept, strict=True))
            draws[name][b, :-1] = fit_log_law(laws[name]["form"], n, d, v)
            draws[name][b, -1] = rng.choice(residuals[name]) if len(residuals[name]) else 0.0
    return {name: values[np.all(np.isfinite(values), axis=1)] for name, values in draws.items()}


def _extrapolation(cells, target) -> list[Diagnostic]:
    """A diagnostic where the target lies beyond the cells' N or D by more than
    ``EXTRAPOLATION_WARN``× (a warning) or at all (information)."""
    found = []
    for name, value in zip(("params", "tokens"), target, strict=True):
        low, high = (float(f(c[name] for c in cells)) for f in (min, max))
        ratio = max(value / high, low / value)
        if ratio > 1.0:
            severity = "warning" if ratio > EXTRAPOLATION_WARN else "info"
            found.append(Diagnostic(
                "extrapolation", severity, f"the target's {name} = {value:g} lies "
                f"{ratio:.3g}× beyond the cells' range ({low:g} to {high:g}); the laws are "
                "carried beyond the data there", param=name, value=value))
    return found
