"""``scalekit compare``: is the variant better at scale? The compute multiplier, with intervals."""

from __future__ import annotations

from pathlib import Path

import typer

from scalekit.compute import FLOPS_PER_PARAM_TOKEN

from .common import (checked_number, choice_option, ci_level_option, format_option,
                     library_choices, open_curves, parse_mapping, print_tables)
from .options import (bootstrap_option, html_option, json_option, map_option, plot_option,
                      quiet_option, seed_option)


def _computes(values: list[str]) -> list[float] | None:
    """--target-compute: repeatable, each one or several comma-separated positive FLOPs."""
    from scalekit.checks import check_number, fail

    out = []
    for text in values:
        for part in text.split(","):
            try:
                value = float(part)
            except ValueError:
                raise fail("--target-compute", text, "positive FLOP counts, e.g. 1e21,1e22") \
                    from None
            out.append(check_number("--target-compute", value, low=0, low_open=True))
    return out or None


def compare(
    baseline: Path = typer.Argument(..., help="The baseline's points (CSV, JSONL, Parquet, …), "
                                    "or both arms' with --by."),
    variant: Path | None = typer.Argument(None, help="The variant's points (omit with --by)."),
    by: str | None = typer.Option(None, "--by", help="A column naming each point's arm (one "
                                  "file holds both)."),
    arms: str | None = typer.Option(None, "--arms", metavar="BASELINE,VARIANT",
                                    help="With --by: the baseline's and the variant's values of "
                                    "it (needed unless it holds exactly two)."),
    target_compute: list[str] = typer.Option([], "--target-compute", metavar="C",
                                             help="Compare at this compute (FLOPs; repeatable "
                                             "or comma-separated); default: the largest "
                                             "budget both arms ran."),
    law: str = choice_option("auto", "--law", library_choices("scalekit.isoflop",
                                                                "FRONTIER_LAWS"),
                             "Frontier through the budgets' least losses: power (a·C^-b), "
                             "saturating (E + A·C^-alpha) or auto (power unless its fit fails "
                             "and saturating's does not); or chinchilla: L(N, D) through every "
                             "run (runs on no IsoFLOP grid)."),
    convention: str = choice_option("6ND", "--convention",
                                    library_choices("scalekit.isoflop", "CONVENTIONS"),
                                    "FLOPs of both arms: 6ND (C = k·N·D) or counted (the "
                                    "compute column as logged)."),
    variant_convention: str | None = choice_option(None, "--variant-convention",
                                                   library_choices("scalekit.isoflop",
                                                                   "CONVENTIONS"),
                                                   "The variant's FLOPs when they differ from "
                                                   "the baseline's (refused without --to-6nd)."),
    to_6nd: bool = typer.Option(False, "--to-6nd", metavar="",
                                help="Put arms counted differently on one footing: recompute "
                                "both as k·N·D."),
    flops_per_param_token: float = typer.Option(
        FLOPS_PER_PARAM_TOKEN, "--flops-per-param-token", help="k in C = k·N·D.",
        callback=checked_number("--flops-per-param-token", low=0, low_open=True)),
    figures: int | None = typer.Option(None, "--figures", help="Round budgets to this many "
                                       "significant figures (default: found as clusters).",
                                       callback=checked_number("--figures", low=1,
                                                               integer=True)),
    bootstrap: int = bootstrap_option(200),
    ci_level: float = ci_level_option(),
    seed: int = seed_option(),
    mapping: list[str] = map_option("compute=budget"),
    json_out: Path | None = json_option(),
    plot: Path | None = plot_option(),
    html: Path | None = html_option(),
    quiet: bool = quiet_option(),
    fmt: str = format_option(),
) -> None:
    """Is the variant better at scale? The compute multiplier k (the compute the baseline needs
    for the variant's loss, over C) at each target compute, with paired-bootstrap intervals."""
    from scalekit import serialise
    from scalekit.errors import InputError
    from scalekit.isoflop import compare as run_compare

    if (variant is None) == (by is None):
        raise InputError("give the VARIANT file or --by COLUMN (one of them)")
    if arms is not None and by is None:
        raise InputError("--arms names values of the --by column; give --by")
    if bootstrap < 2:
        from scalekit.checks import fail

        raise fail("--bootstrap", bootstrap, "at least 2 (the intervals come from it)")
    targets = _computes(target_compute)
    mapped = parse_mapping(mapping)
    base, base_sha = open_curves(baseline, None, mapped, keep=[by or ""])
    frames, hashes = [base], [base_sha]
    if variant is not None:
        var, var_sha = open_curves(variant, None, mapped)
        frames.append(var)
        hashes.append(var_sha)
    conventions = None if variant_convention is None else (convention, variant_convention)
    convert = "6ND" if to_6nd else None
    result = run_compare(
        frames[0], frames[1] if len(frames) > 1 else None, by=by,
        arms=None if arms is None else [a.strip() for a in arms.split(",")],
        target_compute=targets, law=law, convention=convention, conventions=conventions,
        convert=convert, flops_per_param_token=flops_per_param_token, bootstrap=bootstrap,
        ci_level=ci_level, seed=seed, figures=figures,
        source=str(baseline) if variant is None else None)
    for arm, digest in zip(result.arms, hashes * (2 if len(hashes) == 1 else 1), strict=True):
        arm["file_sha256"] = digest
    settings = {"by": by, "arms": arms, "target_compute": targets, "law": law,
                "convention": convention, "variant_convention": variant_convention,
                "convert": convert, "flops_per_param_token": flops_per_param_token,
                "figures": figures, "bootstrap": bootstrap, "ci_level": ci_level}
    if not quiet:
        _show(result, fmt)
    if json_out is not None:
        serialise.write_report(json_out, "compare", result, input_sha256="+".join(hashes),
                               seed=seed, settings=settings)
    if html is not None:
        from .report import compare_page, write_page

        write_page(html, compare_page(result, result.to_dict(), settings))
    if plot is not None:
        from scalekit.report import plot_comparison

        plot_comparison(result, plot)


def _show(result, fmt: str) -> None:
    from scalekit.formatting import format_number, format_with_interval
    from scalekit.isoflop import decide_line, exponent_line

    from .common import notes_in_flags

    pct = f"{100 * result.ci_level:g}%"
    rows = [[format_number(t["compute"], 3),
             format_with_interval(t["loss_baseline"], t["loss_baseline_interval"]),
             format_with_interval(t["loss_variant"], t["loss_variant_interval"]),
             format_with_interval(t["multiplier"], t["multiplier_interval"]),
             format_with_interval(t["loss_difference"], t["loss_difference_interval"]),
             t["verdict"]] for t in result.targets]
    arms = [[a["name"], format_with_interval(a["exponent"], a["exponent_interval"]),
             str(a["runs_used"]), str(sum(d["runs"] for d in a["dropped"])),
             str(len(a["budgets"])), a["convention"]] for a in result.arms]
    lines = [f"exponent difference (variant - baseline): {exponent_line(result.exponents, pct)}"]
    lines += [f"would decide: {decide_line(d)}" for d in result.decide]
    print_tables([{"title": f"Compute multiplier k of {result.variant} over {result.baseline} "
                            f"[{pct}, paired bootstrap over runs]",
                   "columns": ["compute", "L* baseline", "L* variant", "k",
                               "loss difference", "verdict"], "rows": rows},
                  {"title": f"Frontiers ({result.law} law)",
                   "columns": ["arm", "exponent", "runs used", "dropped", "budgets", "FLOPs"],
                   "rows": arms}], fmt, title=result._summary_title(),
                 lines=notes_in_flags(lines, [f"note: {n}" for n in result.notes],
                                      [d.line() for d in result.diagnostics]))


def register(app: typer.Typer) -> None:
    """Add the ``compare`` command to ``app``."""
    app.command("compare")(compare)
