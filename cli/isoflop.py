"""``scalekit isoflop``: compute-optimal N*, D* three ways."""

from __future__ import annotations

from pathlib import Path

import typer

from scalekit.compute import FLOPS_PER_PARAM_TOKEN

from .options import html_option
from .common import (bootstrap_option, checked_number, choice_option, ci_level_option,
                     file_argument, format_option, json_option, library_choices, map_option,
                     open_curves,
                     parse_mapping, plot_option, print_tables, quiet_option, seed_option,
                     store_option)

def _convention_options():
    return (choice_option("6ND", "--convention",
                          library_choices("scalekit.isoflop", "CONVENTIONS"),
                          "FLOPs: 6ND (C = k·N·D) "
                          "or counted (the compute column as logged)."),
            typer.Option(FLOPS_PER_PARAM_TOKEN, "--flops-per-param-token",
                         help="k in C = k·N·D.", callback=checked_number(
                             "--flops-per-param-token", low=0, low_open=True)))


def _budget_list(text: str | None) -> str | None:
    """--budgets: positive finite FLOPs (checked as the option is parsed)."""
    from scalekit.checks import check_number

    values = _floats("budgets", text)
    if values is not None and len(values) < 3:
        from scalekit.checks import fail

        raise fail("--budgets", text, "at least three comma-separated FLOP counts (a power law "
                   "through the budgets' optima needs three)")
    for value in values or []:
        check_number("--budgets", value, low=0, low_open=True)
    if values is not None and len(set(values)) < len(values):
        from scalekit.checks import fail

        raise fail("--budgets", text, "distinct FLOP counts (one is given twice)")
    return text


def _window(text: str) -> str:
    """--window: auto, all or a number of sizes (at least 3: a parabola has 3 parameters)."""
    from scalekit.checks import fail

    if text not in ("auto", "all") and not (text.isdigit() and int(text) >= 3):
        raise fail("--window", text, "'auto', 'all' or a whole number >= 3")
    return text


def isoflop(
    file: Path | None = file_argument("Points or curves file"),
    store: Path | None = store_option(default=None),
    approach: str = choice_option("all", "--approach",
                                  library_choices("scalekit.isoflop", "NAMES", "all"),
                                  "1 (envelope), 2 (IsoFLOP profiles), 3 (parametric law) or "
                                  "all."),
    profile: str = choice_option("params", "--in",
                                 library_choices("scalekit.isoflop", "PROFILES"),
                                 "Approach 2: parabola in log params or log tokens."),
    figures: int | None = typer.Option(None, "--figures", help="Round budgets to this many "
                                          "significant figures (default: find them as clusters "
                                          "of compute, else 2).", callback=checked_number(
                                              "--figures", low=1, integer=True)),
    budgets: str | None = typer.Option(None, "--budgets", help="Nominal budgets, "
                                          "comma-separated (e.g. 6e18,1e19,3e19); points join "
                                          "the nearest.", callback=_budget_list),
    tolerance: float = typer.Option(0.1, "--budget-tolerance", help="Decades a point may lie from "
                                    "its nominal budget.", callback=checked_number(
                                        "--budget-tolerance", low=0, low_open=True)),
    window: str = typer.Option("auto", "--window", help="Approach 2: the points each parabola "
                               "describes: auto (grown around the lowest loss while the "
                               "parabola fits), all, or a number of sizes around the lowest "
                               "loss.", callback=_window),
    target_compute: float | None = typer.Option(None, "--target-compute",
                                                   help="Compare N*, D* at this compute (FLOPs).",
                                                   callback=checked_number(
                                                       "--target-compute", low=0,
                                                       low_open=True)),
    drop_top: int = typer.Option(0, "--drop-top", help="Approach 3: drop the K points of "
                                 "highest loss first (as fit --drop-top; Besiroglu et al. 2024 "
                                 "drop Chinchilla's 5).",
                                 callback=checked_number("--drop-top", low=0, integer=True)),
    bootstrap: int = bootstrap_option(200),
    ci_level: float = ci_level_option(),
    seed: int = seed_option(),
    convention: str = _convention_options()[0],
    flops_per_param_token: float = _convention_options()[1],
    mapping: list[str] = map_option("params=non_embedding_params"),
    hparams: Path | None = typer.Option(None, "--hparams", help="A learning-rate and batch "
                                           "fit (scalekit law hparams --json): the lr and "
                                           "batch at each approach's N*, D* (--target-compute)."),
    json_out: Path | None = json_option(),
    plot: Path | None = plot_option(),
    html: Path | None = html_option(),
    quiet: bool = quiet_option(),
    fmt: str = format_option(),
    metrics: list[str] = typer.Option([], "--metric", help="A metric column; give it twice or "
                                      "more to fit each and compare their allocations (paired "
                                      "bootstrap over runs)."),
    higher_is_better: list[str] = typer.Option([], "--higher-is-better", help="A --metric where "
                                               "higher is better (an accuracy): analysed as "
                                               "1 - value."),
    group: str | None = typer.Option(None, "--group", help="With several --metric: a run "
                                        "attribute (e.g. resolution) whose values are compared "
                                        "each on its own."),
) -> None:
    """Compute-optimal N*(C) = k_N·C^a and D*(C) = k_D·C^b by three approaches, with intervals."""
    from scalekit.isoflop import NAMES, run_isoflop

    repeated = [m for i, m in enumerate(metrics) if m in metrics[:i]]
    if repeated:
        from scalekit.checks import fail

        raise fail("--metric", repeated[0], "a different metric each time it is given (two or "
                   "more different metrics are compared)")
    if (higher_is_better or group) and len(set(metrics)) < 2:
        from scalekit.checks import fail

        raise fail("--higher-is-better" if higher_is_better else "--group",
                   higher_is_better[0] if higher_is_better else group,
                   "used with two or more --metric (a comparison of metrics)")
    if hparams is not None and (target_compute is None or len(set(metrics)) >= 2):
        from scalekit.errors import InputError

        raise InputError("--hparams gives the lr and batch at N*, D*: it goes with "
                         "--target-compute and one metric")
    if len(set(metrics)) >= 2:
        _compare(file, store, mapping, metrics, higher_is_better, group, approach, seed,
                 json_out, plot, html, quiet, fmt, profile=profile, figures=figures,
                 budgets=_floats("budgets", budgets), budget_tolerance=tolerance,
                 window=int(window) if window.isdigit() else window,
                 target_compute=target_compute, bootstrap=bootstrap, ci_level=ci_level,
                 convention=convention, flops_per_param_token=flops_per_param_token,
                 drop_top=drop_top)
        return
    curves, input_sha = open_curves(file, store, parse_mapping(mapping),
                                    **({"metric": metrics[0]} if metrics else {}))
    if metrics and metrics[0] in curves.frame and "loss" not in curves.frame:
        curves = curves.with_frame(curves.frame.rename(columns={metrics[0]: "loss"}))
    settings = {"approach": approach, "profile": profile, "figures": figures,
                "budgets": _floats("budgets", budgets), "budget_tolerance": tolerance,
                "window": int(window) if window.isdigit() else window,
                "target_compute": target_compute, "bootstrap": bootstrap, "ci_level": ci_level,
                "convention": convention, "flops_per_param_token": flops_per_param_token,
                "drop_top": drop_top}
    wanted = tuple(NAMES) if approach == "all" else (approach,)
    report = run_isoflop(curves, wanted, settings, seed=seed, source=str(file or store))
    if hparams is not None:
        from .law_hparams import hparams_at, print_hparams

        settings["hparams"] = str(hparams)
        report.body["hparams"] = hparams_at(hparams, {
            f"approach {row['approach']}": (row.get("params"), row.get("tokens"))
            for row in report.body.get("comparison", [])})
    _finish(report, "isoflop", input_sha, seed, settings, json_out, quiet, fmt)
    if hparams is not None and not quiet:
        print_hparams(report.body["hparams"])
    if html is not None:
        from .report import isoflop_page, write_page

        write_page(html, isoflop_page(report, report.to_dict(), settings))
    if plot is not None:
        from scalekit.report import plot_isoflop

        from scalekit.isoflop import NAMES

        plot_isoflop({NAMES[k]: m for k, m in report.fitted.items()}, plot,
                     target_compute=target_compute)


def _compare(file, store, mapping, metrics, higher_is_better, group, approach, seed,
             json_out, plot, html, quiet, fmt, **settings) -> None:
    """Several --metric: each one's allocation and their paired comparison."""
    from scalekit import serialise
    from scalekit.formatting import format_number, format_with_interval
    from scalekit.isoflop import NAMES
    from scalekit.isoflop import compare_metrics, pair_line

    metrics = list(dict.fromkeys(metrics))
    curves, input_sha = open_curves(file, store, parse_mapping(mapping), metric=metrics[0],
                                    keep=[*metrics[1:], group or ""])
    wanted = tuple(NAMES) if approach == "all" else (approach,)
    result = compare_metrics(curves.frame, metrics, settings=settings, approaches=wanted,
                             higher_is_better=higher_is_better, group=group, seed=seed,
                             source=str(file or store))
    if not quiet:
        pct = f"{100 * result.ci_level:g}%"
        target = settings["target_compute"]
        columns = ["metric", "group", "approach", f"a [{pct}]", f"b [{pct}]"]
        columns += [] if target is None else [f"N* [{pct}]", f"D* [{pct}]", "D*/N*"]
        rows = []
        for r in result.allocations:
            row = [r["metric"], "-" if r["group"] is None else str(r["group"]), r["approach"],
                   format_with_interval(r["a"], (r["a_lo"], r["a_hi"])),
                   format_with_interval(r["b"], (r["b_lo"], r["b_hi"]))]
            if target is not None:
                row += [format_with_interval(r["params"], (r["params_lo"], r["params_hi"])),
                        format_with_interval(r["tokens"], (r["tokens_lo"], r["tokens_hi"])),
                        format_number(r["tokens_per_param"])]
            rows.append(row)
        pair_rows = [[p["metric_1"], p["metric_2"], "-" if p["group"] is None else str(p["group"]),
                      *(format_with_interval(p[q], (p[f"{q}_lo"], p[f"{q}_hi"]))
                        for q in ("diff_a", "diff_b", "ratio_b")),
                      "yes" if p["distinguishable"] else "no"] for p in result.pairs]
        print_tables([{"title": "Compute-optimal allocation per metric", "columns": columns,
                       "rows": rows},
                      {"title": "Paired comparison (approach 2, runs resampled jointly)",
                       "columns": ["metric 1", "metric 2", "group", f"a2 - a1 [{pct}]",
                                   f"b2 - b1 [{pct}]", f"b2 / b1 [{pct}]", "distinguishable"],
                       "rows": pair_rows}], fmt, title=result._summary_title(),
                     lines=[pair_line(p, pct) for p in result.pairs]
                     + [f"note: {n}" for n in result.notes]
                     + [d.line() for d in result.diagnostics])
    if json_out is not None:
        serialise.write_report(json_out, "isoflop_metrics", result, input_sha256=input_sha,
                               seed=seed, settings={**settings, "metrics": metrics,
                                                    "higher_is_better": list(higher_is_better),
                                                    "group": group, "approach": approach})
    if html is not None:
        from .report import metrics_page, write_page

        write_page(html, metrics_page(result, result.to_dict(), settings))
    if plot is not None:
        from scalekit.report import plot_metric_allocations

        plot_metric_allocations(result, plot)


def _finish(report, kind, input_sha, seed, settings, json_out, quiet, fmt) -> None:
    from scalekit import serialise

    if not quiet:
        print_tables(_tables(report, settings.get("target_compute"), settings["ci_level"]),
                     fmt, title=report.title, header=[f"FLOPs: {report.body['convention']}"],
                     lines=_lines(report.body))
    if json_out is not None:
        serialise.write_report(json_out, kind, report, input_sha256=input_sha,
                               seed=seed, settings=settings)


def _lines(body: dict) -> list[str]:
    """The verdict, then "Notes and warnings": notes, diagnostics, and the warnings no
    diagnostic carries."""
    said = {d["message"] for d in body["diagnostics"]}
    out = [body["verdict"], "Notes and warnings:"] + [f"note: {n}" for n in body["notes"]]
    out += [f"{d['severity']}: {d['message']}" for d in body["diagnostics"]]
    return out + [f"warning: {w}" for w in body["warnings"] if w not in said]


def _tables(report, target, level) -> list[dict]:
    """The report's tables as data (:mod:`scalekit.report._tables`): the allocation by
    approach, approach 2's budgets, the spread explained by its warnings."""
    from scalekit.formatting import MISSING, format_number
    from scalekit.report import Estimate

    def ci(value, pair, digits: int = 3):
        return Estimate(value, *pair, digits=digits)

    pct = f"{100 * level:g}%"
    columns = ["approach", f"a [{pct}]", f"b [{pct}]", "k_N", "k_D"]
    if target is not None:
        columns += [f"N*({format_number(target, 3)}) [{pct}]",
                    f"D*({format_number(target, 3)}) [{pct}]"]
    rows = []
    for r in report.body["comparison"]:
        row = [r["approach"], ci(r["a"], (r["a_lo"], r["a_hi"])),
               ci(r["b"], (r["b_lo"], r["b_hi"])), r["k_N"], r["k_D"]]
        if target is not None:
            row += [ci(r["params"], (r["params_lo"], r["params_hi"])),
                    ci(r["tokens"], (r["tokens_lo"], r["tokens_hi"]))]
        rows.append(row)
    out = [{"title": "Compute-optimal allocation", "columns": columns, "rows": rows}]
    if "2" in report.fitted:
        m = report.fitted["2"]
        var = m.profile
        budget_rows = [[r["budget"], f"{r['n_points']}/{r['n_sampled']}",
                        ci(r[f"{var}_opt"], (r.get(f"{var}_lo"), r.get(f"{var}_hi"))),
                        r["loss_opt"], r["offset"], r["misfit_p"],
                        r["flags"] or "-"]
                       for _, r in m.budgets_.iterrows()]
        out.append({"title": f"Approach 2 budgets ({m.budgeting_}); vertex in log {var}; "
                             f"points used: {m.windows_.method}",
                    "columns": ["budget", "points used", f"{var}* [{pct}]", "loss*", "offset",
                                "misfit p", "flags"],
                    "rows": budget_rows})
    explained = report.body.get("spread_explained")
    if explained:
        def share(value) -> str:
            return MISSING if value is None else f"{100 * value:.0f}%"

        out.append({"title": "Spread of a, b across approaches explained by each approach-2 "
                             "warning (refit without the flagged budgets)",
                    "columns": ["warning", "budgets", "a without", "a spread explained",
                                "b without", "b spread explained"],
                    "rows": [[flag, str(e["budgets"]), e["a_without"],
                              share(e["a_spread_explained"]), e["b_without"],
                              share(e["b_spread_explained"])] for flag, e in explained.items()]})
    return out


def _floats(name: str, text: str | None) -> list[float] | None:
    if text is None:
        return None
    from scalekit.errors import InputError

    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"--{name} takes comma-separated numbers, got {text!r}") from None


def register(app: typer.Typer) -> None:
    """Add the ``isoflop`` command to ``app``."""
    app.command("isoflop")(isoflop)
