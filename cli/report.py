"""``scalekit report``: the HTML page of a saved JSON report, and the pages ``--html`` writes.

One page builder per kind of result reads only the result (rebuilt with
``from_dict`` from the saved JSON, or as the command made it) and what the JSON
holds, so ``--html`` as a command runs and ``scalekit report RESULT.json`` give the
same page (the command's page adds the figures that need the data).
"""

from __future__ import annotations

from pathlib import Path

import typer

from .options import HTML_SUFFIXES, output_option


def write_page(path: Path, text: str) -> None:
    """Write the page (UTF-8), whole or not at all: a page that cannot be written leaves
    what ``path`` held (:func:`scalekit.serialise.write_text`)."""
    from scalekit.serialise import write_text

    write_text(path, text)


def isoflop_page(result, body: dict, settings: dict, figure=None) -> str:
    """The page of an :class:`~scalekit.isoflop._analysis.IsoFLOPReport`: N* = k_N·C^a and
    D* = k_D·C^b by approach, the figure, the exponents, diagnostics."""
    from scalekit.formatting import format_with_interval
    from scalekit.isoflop import NAMES
    from scalekit.report import html_page
    from scalekit.report import plot_isoflop

    frame = result.to_frame()
    answer = []
    for approach, rows in frame.groupby("approach", sort=False):
        cells = {r.quantity: format_with_interval(r.value, (r.ci_low, r.ci_high))
                 for r in rows.itertuples()}
        answer.append(f"approach {approach}: N* ∝ C^{cells['a']}, D* ∝ C^{cells['b']}")
    if figure is None and result.fitted:
        figure = plot_isoflop({NAMES[k]: m for k, m in result.fitted.items()})
    figures = [] if figure is None else [("Compute-optimal N* and D* by approach", figure)]
    return html_page(result.title, answer=answer, figures=figures,
                     tables=[("Exponents and coefficients by approach", frame)],
                     diagnostics=body.get("diagnostics", []), notes=body.get("notes", []),
                     settings=settings)


def metrics_page(result, body: dict, settings: dict) -> str:
    """The page of a :class:`~scalekit.isoflop._per_metric.MetricComparison`: one sentence per
    pair of metrics, N*(C) and D*(C) per metric, the pairs and the allocations."""
    from scalekit.isoflop import pair_line
    from scalekit.report import html_page
    from scalekit.report import plot_metric_allocations

    pct = f"{100 * result.ci_level:g}%"
    figures = [("N*(C) and D*(C) per metric", plot_metric_allocations(result))] \
        if result.bands else []
    return html_page(result._summary_title(), answer=[pair_line(p, pct) for p in result.pairs],
                     figures=figures,
                     tables=[("Paired comparison (approach 2, runs resampled jointly)",
                              result.to_frame()),
                             ("Allocation per metric", result.allocations_frame())],
                     diagnostics=body.get("diagnostics", []), notes=body.get("notes", []),
                     settings=settings)


def compare_page(result, body: dict, settings: dict) -> str:
    """The page of a :class:`~scalekit.isoflop.Comparison`: one sentence per target compute,
    both frontiers with their bands and k against compute, the targets and the arms."""
    import pandas as pd

    from scalekit.isoflop import decide_line, exponent_line, target_line
    from scalekit.report import html_page, plot_comparison

    pct = f"{100 * result.ci_level:g}%"
    answer = [target_line(t, result.variant, result.baseline, pct) for t in result.targets]
    answer.append("exponent difference (variant - baseline): "
                  + exponent_line(result.exponents, pct))
    answer += [f"would decide: {decide_line(d)}" for d in result.decide]
    arms = pd.DataFrame([{k: v for k, v in a.items() if k not in ("dropped", "parameters")}
                         | {"dropped": sum(d["runs"] for d in a["dropped"])}
                         for a in result.arms])
    figures = [("Frontiers L*(C) and the compute multiplier k(C)", plot_comparison(result))] \
        if result.curves else []
    return html_page(result._summary_title(), answer=answer, figures=figures,
                     tables=[("Targets", result.to_frame()), ("Arms", arms)],
                     diagnostics=body.get("diagnostics", []), notes=body.get("notes", []),
                     settings=settings)


def forecast_page(result, body: dict, settings: dict, observed=None) -> str:
    """The page of a :class:`~scalekit.surrogates._forecast.Forecast`: each run's final median
    and 80% interval, the figure (the observed points when at hand), the final forecasts."""
    import pandas as pd

    from scalekit.formatting import format_number, format_with_interval
    from scalekit.report import plot_forecasts
    from scalekit.report import html_page

    final = result.final
    answer = [f"{run}: {format_with_interval(median, (low, high))} (median, 80% interval)"
              for run, low, median, high in final[["run", "q0.1", "q0.5", "q0.9"]]
              .itertuples(index=False, name=None)]
    if observed is None:      # a saved forecast: start each band at its first forecast point
        first = result.table.sort_values("x").groupby("run").head(1)
        observed = pd.DataFrame({"run": first["run"], result.x: first["x"],
                                 result.y: first["q0.5"]})
    figure = plot_forecasts(observed, result.table, x=result.x, y=result.y).figure
    return html_page(f"Forecast of {result.y} at {result.x} = {format_number(result.to)} "
                     f"({result.method})", answer=answer,
                     figures=[("Forecasts: median and 50/80/95% bands", figure)],
                     tables=[("Final forecasts", final)], notes=body.get("notes", []),
                     diagnostics=[d.to_dict() for d in result.diagnostics], settings=settings)


def law_page(result, body: dict, settings: dict, figure=None) -> str:
    """The page of a ``law depth|classes|inference-k`` fit: the law written out and its plan,
    the figure (``figure``: with the data, when at hand; else a law of one input drawn
    alone), parameters and derived quantities, diagnostics."""
    from scalekit.report import plot_law
    from scalekit.report import html_page

    from .law import _text

    plan = body.get("plan") or {}
    answer = [result.equation()] + [f"{key}: {_text(value)}" for key, value in plan.items()
                                    if value is not None and not isinstance(value, dict)]
    if figure is None and len(result.law.inputs) == 1:
        figure = plot_law(result).figure
    figures = [] if figure is None else [("The fitted law and its data", figure)]
    return html_page(f"scalekit law: {result.law.name}", answer=answer, figures=figures,
                     tables=[("Parameters and derived quantities", result.to_frame())],
                     diagnostics=body.get("diagnostics", []), notes=body.get("notes", []),
                     settings=settings)


def scores_page(result, body: dict, settings: dict) -> str:
    """The page of a :class:`~scalekit.surrogates._scores.ForecastScores` (``forecast
    --evaluate``): the method with the lowest final error over all cuts and its 80% coverage,
    the figure by cut, the scores."""
    from scalekit.formatting import format_number
    from scalekit.report import plot_scores
    from scalekit.report import html_page

    table = result.to_frame()
    overall = table[table["subset"] == "all"]
    best = overall.loc[overall["final_log_err"].idxmin()] if len(overall) else None
    answer = [] if best is None else [
        f"{best['method']}: the lowest |log error| of the final value over {int(best['curves'])}"
        f" cut curves, {format_number(best['final_log_err'])}; its 80% band held "
        f"{best['cover80']:.0%} of the held-out points"]
    figure = plot_scores(table).figure
    return html_page("Forecast evaluation", answer=answer,
                     figures=[("Final-value error by method and cut", figure)],
                     tables=[("Scores", table)], diagnostics=body.get("diagnostics", []),
                     notes=body.get("notes", []), settings=settings)


def replay_page(result, body: dict, settings: dict) -> str:
    """The page of a :class:`~scalekit.allocate._replay.ReplayResult`: the policy reaching the
    lowest loss at each budget, the figure, the averages."""
    from scalekit.formatting import format_number
    from scalekit.report import plot_replay_summary
    from scalekit.report import html_page

    averages = result.averages
    figure = plot_replay_summary(averages).figure
    winners = result.winners()
    title = ("Allocation replay: " + winners[0].split(": ", 1)[1].split(",")[0]
             if len(winners) == 1 else f"Allocation replay over {len(winners)} budgets")
    return html_page(title, answer=[*winners, "reference: the exhaustive sweep, "
                                    f"{format_number(result.exhaustive_compute)} FLOPs"],
                     figures=[("Best loss against compute used, by policy", figure)],
                     tables=[("Averages over seeds", averages)], settings=settings)


def task_page(result, body: dict, settings: dict) -> str:
    """The page of a ``law task`` prediction (:class:`~scalekit.planners.TaskLawResult`):
    its answer, the figure of both steps, the predictions."""
    from scalekit.report import plot_task_law

    return result_page(result, body, settings, table=result.to_frame(), figures=[
        ("Task loss and accuracy against the ladder, with the prediction",
         plot_task_law(result))])


def search_page(result, body: dict, settings: dict) -> str:
    """The page of a schedule search (:class:`~scalekit.surrogates.ScheduleSearch`): the best
    schedule, its gain over cosine, every candidate (the curves need the fit: ``--html``)."""
    return result_page(result, body, settings, table=result.to_frame())


def result_page(result, body: dict, settings: dict, figures=(), table=None) -> str:
    """The page of a result with no figure of its own to lead with (an allocation plan or
    run, a task-law prediction): its summary's first section as the answer, the other
    sections and ``table`` (its main table, if any) as tables, ``figures``, its diagnostics
    and the body's notes."""
    import pandas as pd

    from scalekit.formatting import format_number
    from scalekit.report import html_page

    def text(value) -> str:
        return value if isinstance(value, str) else format_number(value)

    sections = [(heading, rows) for heading, rows in result._summary_sections() if rows]
    answer = [f"{row[0]}: {text(row[1])}" if isinstance(row, tuple) else str(row)
              for row in (sections[0][1] if sections else [])]
    tables = [] if table is None else [("Main table", table)]
    for heading, rows in sections[1:]:
        tables.append((heading, pd.DataFrame(
            [(row[0], text(row[1])) if isinstance(row, tuple) else (str(row), "")
             for row in rows], columns=["", "value"])))
    diagnostics = body.get("diagnostics") or [d.to_dict()
                                              for d in getattr(result, "diagnostics", [])]
    return html_page(result._summary_title(), answer=answer, figures=list(figures),
                     tables=tables, diagnostics=diagnostics, notes=body.get("notes", []),
                     settings=settings)


def report(
    result: Path = typer.Argument(..., help="A JSON report written by --json (fit, isoflop, "
                                  "forecast, allocate replay, law)."),
    out: Path = output_option("-o", HTML_SUFFIXES, "Write the HTML page here."),
) -> None:
    """Write the self-contained HTML page of a saved result (answer, figures, tables)."""
    from scalekit.errors import InputError

    if out is None:
        raise InputError("give the page to write with -o OUT.html")
    from scalekit.serialise import read_json, report_kind

    data = read_json(result, what="JSON report")
    kind = report_kind(data, source=result)
    key = "allocate replay" if kind == "allocate" and data.get("mode") == "replay" else kind
    if key == "forecast" and "evaluation" in data:
        key = "forecast --evaluate"
    if key == "plan" and (data.get("settings") or {}).get("schedule_search"):
        key = "plan --schedule-search"
    builders = _builders()
    if key not in builders or "groups" in data:
        raise InputError("pages are made from fit, isoflop (several --metric too), compare, forecast "
                         "(--evaluate too), allocate replay, law task, plan --schedule-search "
                         "and law depth|classes|inference-k|hparams reports (one law or table), "
                         f"but this is a {key or 'unknown'} report; write its page with --html "
                         "as it runs", source=str(result))
    cls, build = builders[key]
    try:
        rebuilt = cls.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"the {key} report is incomplete ({exc})", source=str(result)) from None
    write_page(out, build(rebuilt, data, data.get("settings", {})))


def _builders() -> dict:
    from scalekit.allocate import ReplayResult
    from scalekit.fit import FitResult
    from scalekit.isoflop import IsoFLOPReport
    from scalekit.isoflop import Comparison, MetricComparison
    from scalekit.planners import HparamsFit, TaskLawResult
    from scalekit.surrogates import Forecast
    from scalekit.surrogates import ForecastScores
    from scalekit.surrogates import ScheduleSearch

    from .fit import fit_page
    from .law_hparams import hparams_page

    return {"fit": (FitResult, fit_page), "isoflop": (IsoFLOPReport, isoflop_page),
            "forecast": (Forecast, forecast_page), "allocate replay": (ReplayResult, replay_page),
            "forecast --evaluate": (ForecastScores, scores_page),
            "isoflop_metrics": (MetricComparison, metrics_page),
            "compare": (Comparison, compare_page),
            "law.hparams": (HparamsFit, hparams_page),
            "task_law": (TaskLawResult, task_page),
            "plan --schedule-search": (ScheduleSearch, search_page),
            **{f"law.{name}": (FitResult, law_page) for name in ("depth", "classes", "inference_k")}}


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app``."""
    app.command("report")(report)
