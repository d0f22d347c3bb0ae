"""``scalekit design``: which runs to train next, within a budget, for the target region."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import (
    checked_inputs,
    bounds_option,
    checked_number,
    choice_option,
    library_choices,
    on_interrupt,
    plot_option,
    quiet_option,
    seed_option,
    store_option,
)
from .design_submit import options as loop_options
from .options import html_option, json_option

FORMAT = "design"
_LOOP = loop_options()


def design(
    law: str = typer.Option(..., "--law", help="Law name (chinchilla, kaplan, …) or an "
                            "expression such as 'E + A*N**-a + B*D**-b'."),
    pool: Path | None = typer.Option(None, "--pool", callback=checked_inputs, is_eager=True,
                                     help="CSV/Parquet of candidate runs "
                                          "(the law's inputs; a cost column; for --replay, losses)."),
    grid: str | None = typer.Option(None, "--grid", help="Candidate runs on a log grid "
                                       "instead of --pool, e.g. N=1e7:1e9:8,D=1e9:1e11:8."),
    target: Path | None = typer.Option(None, "--target", callback=checked_inputs, is_eager=True,
                                       help="CSV/Parquet of the runs "
                                            "whose predictions matter (the law's inputs)."),
    target_compute: float | None = typer.Option(
        None, "--target-compute", help="Target the IsoFLOP curve 6·N·D = C (FLOPs) instead.",
        callback=checked_number("--target-compute", low=0, low_open=True)),
    budget: str = typer.Option(..., "--budget", help="What the runs may cost: a number (the "
                               "cost unit, FLOPs by default) or a share of the pool, e.g. 5%."),
    cost: str | None = typer.Option(None, "--cost", help="Cost column or expression of "
                                       "columns (default 6*params*tokens)."),
    y: str = typer.Option("loss", "--y", help="Loss column of --observed / --pool (replay)."),
    observed: Path | None = typer.Option(None, "--observed", callback=checked_inputs, is_eager=True,
                                         help="CSV/Parquet of runs "
                                              "already trained (the law's inputs and --y)."),
    store: Path | None = store_option(default=None),
    batch: int = typer.Option(1, "--batch", help="Runs to propose.",
                              callback=checked_number("--batch", low=1, integer=True)),
    method: str = choice_option("ensemble", "--method",
                                library_choices("scalekit.design", "METHODS"),
                                "random, cheapest, cost_random, d_optimal, v_optimal or "
                                "ensemble."),
    loss: str = choice_option(None, "--objective", library_choices("scalekit.fit", "LOSSES"),
                              "Objective of the criterion and the final fit: huber, squared or "
                              "soft_l1 (default: huber, its δ set from the residual noise)."),
    delta: float | None = typer.Option(
        None, "--delta", help="Threshold δ of huber and soft_l1 on log residuals (default: "
        "1.345 robust standard deviations of the residuals).",
        callback=checked_number("--delta", low=0, low_open=True)),
    scale: str = choice_option(None, "--scale", library_choices("scalekit.design", "SCALES"),
                               "Fit the log values (the default) or the raw values (least "
                               "squares)."),
    bounds: str | None = bounds_option(),
    replay: bool = typer.Option(False, "--replay", metavar="", help="Replay on the pool's known losses "
                                "(revealed only when chosen) until the budget is spent."),
    seed: int = seed_option(),
    json_out: Path | None = json_option(),
    html: Path | None = html_option(),
    plot: Path | None = plot_option(),
    quiet: bool = quiet_option(),
    submit: str | None = _LOOP["submit"], task: str | None = _LOOP["task"],
    train_config: Path | None = _LOOP["train_config"], rounds: int | None = _LOOP["rounds"],
    workers: int = _LOOP["workers"], ray_address: str | None = _LOOP["ray_address"],
    slurm_partition: str | None = _LOOP["slurm_partition"], slurm_time: str = _LOOP["slurm_time"],
    slurm_gpus: int | None = _LOOP["slurm_gpus"], jobs_folder: Path | None = _LOOP["slurm_folder"],
) -> None:
    """Propose the runs that most reduce the uncertainty of the target predictions per unit
    of cost (or replay the design on a pool with known losses)."""
    from scalekit import serialise
    from scalekit.errors import InputError

    if (pool is None) == (grid is None):
        raise InputError("give either --pool FILE or --grid SPEC (one of them)")
    if (target is None) == (target_compute is None):
        raise InputError("give either --target FILE or --target-compute C (one of them)")
    if observed is not None and store is not None:
        raise InputError("give either --observed FILE or --store DB, not both")
    if replay and (pool is None or observed is not None or store is not None):
        raise InputError("--replay needs --pool FILE with known losses and no --observed / "
                         "--store")
    from . import design_submit as loop
    from .common import is_server_url

    loop.check(submit=submit, store=store, replay=replay,
               **{"--task": task, "--train-config": train_config, "--rounds": rounds,
                  "--ray-address": ray_address, "--slurm-partition": slurm_partition,
                  "--slurm-gpus": slurm_gpus, "--jobs-folder": jobs_folder})
    for path, flag in ((pool, "--pool"), (target, "--target"), (observed, "--observed"),
                       (None if submit else store, "--store"), (train_config, "--train-config")):
        if path is not None and not is_server_url(path) and not Path(path).is_file():
            raise InputError(f"The value of `{flag}` is {str(path)!r}, but must be an "
                             "existing file.")
    from scalekit.design import Pool, grid_pool, propose, target_on_compute
    from scalekit.design import replay as run_replay
    from scalekit.fit import resolve_law

    frame = _table(pool, "--pool") if pool is not None else grid_pool(grid)
    the_law = resolve_law(law, columns=[c for c in frame.columns if c != y], bounds=bounds)
    estimator = _estimator(loss, delta, scale)
    if replay and y not in frame:
        raise InputError(f"The value of `--y` is {y!r}, but must be a column of --pool "
                         "(a replay reveals its losses).")
    candidates = Pool.from_frame(frame, cost=cost, y=y if replay else None)
    goal = _table(target, "--target") if target is not None else target_on_compute(target_compute)
    amount = _budget(budget, candidates.cost.sum())
    settings = {"law": law, "method": method, "budget": amount, "batch": batch,
                "replay": replay, "cost": cost or "6*params*tokens",
                "pool": str(pool) if pool else None, "grid": grid,
                "target": str(target) if target else None, "target_compute": target_compute,
                "bounds": bounds, **estimator}
    if replay:
        result = run_replay(the_law, candidates, goal, budget=amount, method=method, seed=seed,
                            **estimator)
        if y in goal:            # the target's losses are known: score the replay on them
            result = result.scored(goal[y].to_numpy(dtype=float))
    elif submit is not None:
        result = loop.run_loop(
            lambda money: propose(the_law, candidates, goal, budget=money, method=method,
                                  observed=_observed(None, store, y), batch=batch, seed=seed,
                                  **estimator),
            pool=candidates, inputs=the_law.inputs, y=y, budget=amount, store=store,
            task=task, train_config=train_config, rounds=rounds, quiet=quiet,
            executor={"kind": submit, "workers": workers, "ray_address": ray_address,
                      "partition": slurm_partition, "time": slurm_time, "gpus": slurm_gpus,
                      "folder": jobs_folder})
        if result is None:
            return
    else:
        seen = _observed(observed, store, y)
        result = propose(the_law, candidates, goal, budget=amount, method=method,
                         observed=seen, batch=batch, seed=seed, **estimator)
    if not quiet:
        typer.echo(result.summary())
    if json_out is not None:
        serialise.write_report(json_out, FORMAT, result, input_sha256=None, seed=seed,
                               settings=settings)
        on_interrupt(lambda: f"the JSON report {json_out} was written whole"
                     + ("" if html is None and plot is None else "; no page or figure was"))
    if plot is not None or html is not None:
        from scalekit.report import plot_design

        figure = plot_design(result.to_dict(), candidates.frame, goal, path=plot).figure
        if html is not None:
            from .report import result_page, write_page

            write_page(html, result_page(result, result.to_dict(), settings,
                                         figures=[("Candidates, chosen runs and targets",
                                                   figure)], table=result.to_frame()))


def _estimator(loss: str | None, delta: float | None, scale: str | None) -> dict:
    """``loss``, ``delta``, ``scale`` for the library (its defaults where none is given)."""
    from scalekit.errors import InputError

    if loss is None and scale is None:
        if delta is not None:
            raise InputError("--delta goes with --objective huber or soft_l1")
        return {}
    loss = loss or ("squared" if scale == "raw" else "huber")
    scale = scale or "log"
    if scale == "raw" and loss != "squared":
        raise InputError(f"The value of `--objective` is {loss!r}, but must be squared with "
                         "--scale raw (least squares on the values).")
    return {"loss": loss, "delta": delta, "scale": scale}


def _table(path: Path, flag: str):
    import pandas as pd

    from scalekit.errors import InputError

    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except (ValueError, OSError) as error:
        raise InputError(f"The value of `{flag}` is {str(path)!r}, but must be a readable "
                         f"CSV or Parquet table ({' '.join(str(error).split())}).") from None


def _budget(text: str, pool_cost: float) -> float:
    from scalekit.errors import InputError

    try:
        value = (float(text[:-1]) / 100 * pool_cost if text.strip().endswith("%")
                 else float(text))
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise InputError(f"The value of `--budget` is {text!r}, but must be a positive number "
                         "or a share of the pool such as 5%.")
    return value


def _observed(observed: Path | None, store: Path | None, y: str):
    from scalekit.errors import InputError

    if observed is None and store is None:
        return None
    if observed is not None:
        frame = _table(observed, "--observed")
    else:
        from scalekit.curves import CurveStore
        from scalekit.fit import last_points

        with CurveStore(store, create=False) as opened:
            frame = opened.curves(metric=y).frame
        if frame.empty:
            return None
        frame = last_points(frame)
    if y not in frame:
        raise InputError(f"The value of `--y` is {y!r}, but must be a column of the observed "
                         "runs.")
    return frame, frame[y].to_numpy()


def register(app: typer.Typer) -> None:
    """Add the ``design`` command to ``app``."""
    app.command("design")(design)
