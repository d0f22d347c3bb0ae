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
    """Write the page (UTF-8)."""
    Path(path).write_text(text, encoding="utf-8")


def isoflop_page(result, body: dict, settings: dict, figure=None) -> str:
    """The page of an :class:`~scalekit.isoflop.analysis.IsoFLOPReport`: N* = k_N·C^a and
    D* = k_D·C^b by approach, the figure, the exponents, diagnostics."""
    from scalekit.formatting import format_with_interval
    from scalekit.isoflop.analysis import NAMES
    from scalekit.report.html import html_page
    from scalekit.report.isoflop_plots import plot_isoflop

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


def forecast_page(result, body: dict, settings: dict, observed=None) -> str:
    """The page of a :class:`~scalekit.surrogates.forecast.Forecast`: each run's final median
    and 80% interval, the figure (the observed points when at hand), the final forecasts."""
    import pandas as pd

    from scalekit.formatting import format_number, format_with_interval
    from scalekit.report.forecast_plots import plot_forecasts
    from scalekit.report.html import html_page

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


def replay_page(result, body: dict, settings: dict) -> str:
    """The page of a :class:`~scalekit.allocate.replay.ReplayResult`: the policy reaching the
    lowest loss at each budget, the figure, the averages."""
    from scalekit.formatting import format_number
    from scalekit.report.allocate_plots import plot_replay_summary
    from scalekit.report.html import html_page

    averages = result.averages
    answer = []
    for budget, rows in averages.groupby("budget", sort=False):
        best = rows.loc[rows["best_loss"].idxmin()]
        answer.append(f"budget {format_number(budget)}: {best['policy']} reaches loss "
                      f"{format_number(best['best_loss'])} with "
                      f"{best['compute_fraction']:.1%} of the exhaustive sweep's compute")
    figure = plot_replay_summary(averages).figure
    return html_page(f"Allocation replay (exhaustive sweep {format_number(result.exhaustive_compute)}"
                     " FLOPs)", answer=answer,
                     figures=[("Best loss against compute used, by policy", figure)],
                     tables=[("Averages over seeds", averages)],
                     notes=body.get("warnings", []), settings=settings)


def report(
    result: Path = typer.Argument(..., help="A JSON report written by --json (fit, isoflop, "
                                  "forecast, allocate replay)."),
    out: Path = output_option("-o", HTML_SUFFIXES, "Write the HTML page here."),
) -> None:
    """Write the self-contained HTML page of a saved result (answer, figures, tables)."""
    from scalekit.errors import InputError

    if out is None:
        raise InputError("give the page to write with -o OUT.html")
    data = _read(result)
    kind = str(data.get("format", "")).removeprefix("scalekit.").split("/")[0]
    key = "allocate replay" if kind == "allocate" and data.get("mode") == "replay" else kind
    builders = _builders()
    if key not in builders or "groups" in data:
        raise InputError(f"pages are made from fit, isoflop, forecast and allocate replay "
                         f"reports (one law or table), but this is a {key or 'unknown'} "
                         "report; write its page with --html as it runs", source=str(result))
    cls, build = builders[key]
    try:
        rebuilt = cls.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"the {key} report is incomplete ({exc})", source=str(result)) from None
    write_page(out, build(rebuilt, data, data.get("settings", {})))


def _builders() -> dict:
    from scalekit.allocate.replay import ReplayResult
    from scalekit.fit import FitResult
    from scalekit.isoflop.analysis import IsoFLOPReport
    from scalekit.surrogates.forecast import Forecast

    from .fit import fit_page

    return {"fit": (FitResult, fit_page), "isoflop": (IsoFLOPReport, isoflop_page),
            "forecast": (Forecast, forecast_page), "allocate replay": (ReplayResult, replay_page)}


def _read(path: Path) -> dict:
    import json

    from scalekit.errors import InputError

    if not path.is_file():
        raise InputError("no such file", source=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a JSON file: {exc}", source=str(path)) from None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith("scalekit."):
        raise InputError("not a scalekit report (no scalekit.<kind>/<version> format)",
                         source=str(path))
    return data


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app``."""
    app.command("report")(report)
