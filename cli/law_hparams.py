"""``scalekit law hparams``: the learning rate and batch size a run of N parameters on D tokens
should use, from a sweep over learning rate, batch size, N and D.

See :mod:`scalekit.planners._hparams`; DeepSeek LLM's and Step Law's formulas stand beside
the recommendation.
"""

from __future__ import annotations

from pathlib import Path

import typer

from .common import (bootstrap_option, checked_number, choice_option, ci_level_option,
                     json_option, library_choices, open_curves, parse_mapping, parse_target,
                     print_renderable, quiet_option, seed_option, store_option)
from .options import html_option, map_option


_surfaces = library_choices("scalekit.planners", "HPARAMS_SURFACES")
_law_forms = library_choices("scalekit.planners", "HPARAMS_LAW_FORMS")


def _by(text: str) -> tuple[str, str]:
    from scalekit.errors import InputError

    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InputError(f"The value of `--by` is {text!r}, but must be two column names, "
                         "N's and D's, as N_COLUMN,D_COLUMN.")
    return parts[0], parts[1]


def hparams(
    file: Path | None = typer.Argument(None, help="The sweep: one row per run (CSV, JSONL, "
                                          "Parquet, …). Omit to read --store."),
    store: Path | None = store_option(default=None),
    mapping: list[str] = map_option(),
    lr: str = typer.Option("lr", "--lr", help="Learning-rate column."),
    batch: str = typer.Option("batch", "--batch", help="Batch-size column (sequences or "
                              "tokens; see --sequence-length)."),
    by: str = typer.Option("params,tokens", "--by", help="The columns of N and D that make a "
                           "cell, as N_COLUMN,D_COLUMN."),
    y: str = typer.Option("loss", "--y", help="Loss column."),
    surface: str = choice_option("auto", "--surface", _surfaces, "Each cell's loss surface in "
                                 "log lr and log batch: quadratic, additive (no cross term) or "
                                 "auto (least leave-one-run-out error)."),
    window: float = typer.Option(0.02, "--window", help="Fit each cell's surface to its runs "
                                 "within this relative loss of its best.",
                                 callback=checked_number("--window", low=0)),
    lr_law: str = choice_option("auto", "--lr-law", _law_forms, "The optimal lr's law: N,D "
                                "(Step Law's form), C (DeepSeek's), D, N, step_law or "
                                "deepseek_llm (their forms), or auto (least error on a "
                                "left-out N)."),
    batch_law: str = choice_option("auto", "--batch-law", _law_forms, "The optimal batch's law "
                                   "(forms as --lr-law)."),
    predict: str | None = typer.Option(None, "--predict", help="N=<params>,D=<tokens>: the "
                                          "recommended lr and batch there."),
    sequence_length: float | None = typer.Option(
        None, "--sequence-length", help="Tokens per sequence when --batch counts sequences: "
        "states the published laws' batches (in tokens) in the data's unit.",
        callback=checked_number("--sequence-length", low=1)),
    score: Path | None = typer.Option(None, "--score", help="A measured grid of the --predict "
                                         "cell (same columns): where the recommendation and "
                                         "the published laws land on it."),
    bootstrap: int = bootstrap_option(200),
    ci_level: float = ci_level_option(),
    seed: int = seed_option(),
    json_out: Path | None = json_option(),
    html: Path | None = html_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Fit each (N, D) cell's optimum, then laws of the optimal lr and batch in N and D."""
    from scalekit import serialise
    from scalekit.errors import InputError
    from scalekit.planners import fit_hparams

    columns = _by(by)
    target = None if predict is None else parse_target(predict)
    if score is not None and target is None:
        raise InputError("--score scores a recommendation: give --predict N=…,D=… too")
    curves, digest = open_curves(file, store, parse_mapping(mapping), metric=y,
                                 keep=[lr, batch, *columns])
    result = fit_hparams(curves, lr=lr, batch=batch, by=columns, y=y, surface=surface,
                         window=window, lr_law=lr_law, batch_law=batch_law, target=target,
                         sequence_length=sequence_length, bootstrap=bootstrap,
                         ci_level=ci_level, seed=seed, source=None if file is None else str(file))
    if score is not None:
        result.grid_scores = _scores(result, score, lr, batch, y)
    settings = {"lr": lr, "batch": batch, "by": list(columns), "y": y, "surface": surface,
                "window": window, "lr_law": lr_law, "batch_law": batch_law, "predict": predict,
                "sequence_length": sequence_length, "bootstrap": bootstrap,
                "ci_level": ci_level, "score": None if score is None else str(score)}
    if not quiet:
        print_renderable(result.summary())
    if json_out is not None:
        serialise.write_report(json_out, "law.hparams", result, input_sha256=digest, seed=seed,
                               settings=settings)
    if html is not None:
        from .report import write_page

        write_page(html, hparams_page(result, result.to_dict(), settings))


def hparams_page(result, body: dict, settings: dict) -> str:
    """The page of an ``HparamsFit``: the recommendation, each cell's optimum with the laws,
    the cells' table and the diagnostics."""
    from scalekit.report import plot_hparams

    from .report import result_page

    return result_page(result, body, settings, table=result.to_frame(), figures=[
        ("Each cell's optimal learning rate and batch, with the laws", plot_hparams(result))])


def _scores(result, path: Path, lr: str, batch: str, y: str) -> dict:
    """Where the recommendation and each published law land on the grid in ``path``."""
    from scalekit.curves import read_curves
    from scalekit.errors import InputError
    from scalekit.planners import score_on_grid

    grid = read_curves(path, metric=y, keep=[lr, batch]).frame
    missing = [c for c in (lr, batch, y) if c not in grid]
    if missing:
        raise InputError(f"needs the column(s) {', '.join(missing)}", source=str(path))
    rec = result.recommendation
    scores = {"recommendation": score_on_grid(rec["lr"], rec["batch"], grid, lr_column=lr,
                                              batch_column=batch, y=y)}
    for name, law in result.published.items():
        if law["batch_value"] is not None:
            scores[name] = score_on_grid(law["lr_value"], law["batch_value"], grid,
                                         lr_column=lr, batch_column=batch, y=y)
    return scores


def add_hparams_command(law_app: typer.Typer) -> None:
    """Add ``hparams`` to the ``law`` command group."""
    law_app.command("hparams")(hparams)


PLANS = ("by_compute", "by_loss", "data_constrained")


def attach_hparams(body: dict, path: Path, *, quiet: bool) -> None:
    """Add to a plan report's ``body`` (``scalekit plan``) the learning rate and batch size
    of the hparams fit in ``path`` (``law hparams --json``) at each plan's N* and D*, under
    ``hparams`` by plan; print them unless ``quiet``."""
    body["hparams"] = hparams_at(path, {key: (body[key].get("params"), body[key].get("tokens"))
                                        for key in PLANS if body.get(key)})
    if not quiet:
        print_hparams(body["hparams"])


def hparams_at(path: Path, points: dict) -> dict:
    """The recommendation of the hparams fit in ``path`` at each ``(N, D)`` of ``points`` (by
    name; a point with a missing N or D is skipped), with the published laws and the
    diagnostics beside it."""
    from scalekit.errors import InputError
    from scalekit.planners import HparamsFit, recommend_hparams

    result = HparamsFit.from_dict(_read_report(path))
    found = {}
    for key, (params, tokens) in points.items():
        if params is None or tokens is None:
            continue
        recommendation, published, diagnostics = recommend_hparams(result, float(params),
                                                                   float(tokens))
        recommendation["published"] = {
            name: {"lr": p["lr_value"], "batch": p["batch_value"], "batch_tokens": p["batch_tokens"]}
            for name, p in published.items()}
        recommendation["diagnostics"] = [d.to_dict() for d in diagnostics]
        found[key] = recommendation
    if not found:
        raise InputError("--hparams gives the learning rate and batch size at a plan's N* and "
                         "D*, but no plan here has them (ask for a target compute or loss)")
    return found


def hparams_lrs(path: Path):
    """``(lrs, found)``: ``lrs(params, tokens)``, the ``lr_variants`` of the hparams fit in
    ``path`` at N and D (a trainer's learning-rate variants, ``scalekit allocate run``), and
    ``found``, which keeps each recommendation asked for (by ``"N=…,D=…"``) for the report."""
    from scalekit.errors import InputError
    from scalekit.planners import HparamsFit, recommend_hparams

    result, found = HparamsFit.from_dict(_read_report(path)), {}

    def lrs(params: float, tokens: float) -> tuple[float, ...]:
        recommendation, _, diagnostics = recommend_hparams(result, params, tokens)
        if recommendation["lr_variants"] is None:
            raise InputError("the fit has no learning-rate law or interval to take variants "
                             "from; refit it with a bootstrap (law hparams --bootstrap 200)",
                             source=str(path))
        found[f"N={params:.6g},D={tokens:.6g}"] = {
            "params": params, "tokens": tokens, "lr_variants": recommendation["lr_variants"],
            "lr_interval": recommendation["lr_interval"], "level": recommendation["level"],
            "diagnostics": [d.to_dict() for d in diagnostics]}
        return recommendation["lr_variants"]

    return lrs, found


def print_hparams(found: dict) -> None:
    """One line per plan: its learning rate and batch with their intervals."""
    from scalekit.formatting import format_interval, format_number

    for key, r in found.items():
        print_renderable(
            f"{key}: learning rate {format_number(r['lr'])} "
            f"{format_interval(r['lr_interval']) if r['lr_interval'] else ''}, batch "
            f"{format_number(r['batch'])} "
            f"{format_interval(r['batch_interval']) if r['batch_interval'] else ''} "
            f"({100 * r['level']:g}%) at N* = {format_number(r['params'])}, "
            f"D* = {format_number(r['tokens'])}")
        for d in r["diagnostics"]:
            print_renderable(f"  {d['severity']}: {d['message']}")


def _read_report(path: Path) -> dict:
    from scalekit.errors import InputError
    from scalekit.serialise import read_json

    report = read_json(path)
    if not isinstance(report, dict) or not str(report.get("format", "")).startswith(
            "scalekit.law.hparams/") or "laws" not in report:
        raise InputError("not a scalekit hparams report (its format is not "
                         "scalekit.law.hparams/…); write one with scalekit law hparams --json",
                         source=str(path))
    return report
