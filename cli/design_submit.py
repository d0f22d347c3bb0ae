"""``scalekit design --submit``: the unattended loop design -> train -> design again.

Each round designs from what the store holds (its runs are the observations; the pool
runs it holds count as spent), trains the proposals of a bundled task through the chosen
executor into the same store, and designs again until no affordable run is left within
the budget. The store is the state: a loop killed between rounds and run again goes on
from the store. The round log (``STORE.design.jsonl``) adds one thing the store cannot
hold: the proposals of a round whose training was cut off, which a rerun trains first
(their checkpoints resume), so a kill mid-round ends in the same store as no kill.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from .common import checked_number, choice_option, library_choices, slurm_options

_SLURM = slurm_options()


def _tasks() -> tuple[str, ...]:
    from scalekit.train import available_tasks

    return tuple(available_tasks())


def options() -> dict[str, Any]:
    """The options ``scalekit design`` takes for the unattended loop."""
    return dict(
        submit=choice_option(None, "--submit", library_choices("scalekit.executors", "EXECUTORS"),
                             "train the proposals through this executor (local, ray, slurm "
                             "or submitit-local), import them into --store and design again "
                             "until --budget (for all rounds) is spent."),
        task=choice_option(None, "--task", _tasks, "the bundled task --submit trains "
                           "(teacher_student, char_lm, …); the pool's columns width, depth, "
                           "steps, data, lr, seed, … are each run's settings."),
        train_config=typer.Option(None, "--train-config", help="JSON or TOML file of run "
                                  "settings shared by every run --submit trains (evals, "
                                  "batch_size, …)."),
        rounds=typer.Option(None, "--rounds", help="Stop --submit after this many rounds "
                            "(rerun to go on).",
                            callback=checked_number("--rounds", low=1, integer=True)),
        workers=typer.Option(1, "--workers", help="Parallel runs of --submit local.",
                             callback=checked_number("--workers", low=1, integer=True)),
        ray_address=typer.Option(None, "--ray-address", help="Ray cluster of --submit ray."),
        **{f"slurm_{key}": value for key, value in _SLURM.items()},
    )


def check(*, submit: str | None, store: Path | None, replay: bool, **given: Any) -> None:
    """Refuse loop options that cannot work together (before anything is read or trained):
    ``given`` maps the loop's flags to their values (``None``: not given)."""
    from scalekit.errors import InputError

    if submit is None:
        named = [flag for flag, value in given.items() if value is not None]
        if named:
            raise InputError(f"the option {named[0]} goes with --submit (the unattended "
                             "loop), which is not given")
        return
    if replay:
        raise InputError("give either --replay (known losses) or --submit (train the "
                         "proposals), not both")
    if store is None:
        raise InputError("--submit needs --store DB: the loop imports each round's runs "
                         "into it and designs the next round from it")
    if given.get("--task") is None:
        raise InputError("--submit needs --task NAME: the bundled task that trains the "
                         "proposals")
    submitit = [flag for flag in ("--slurm-partition", "--slurm-gpus", "--jobs-folder")
                if given.get(flag) is not None]
    if submitit and submit not in ("slurm", "submitit-local"):
        raise InputError(f"{submitit[0]} goes with --submit slurm or submitit-local (the "
                         f"executor is {submit!r}, which would ignore it)")
    if given.get("--ray-address") is not None and submit != "ray":
        raise InputError(f"--ray-address goes with --submit ray (the executor is {submit!r}, "
                         "which would ignore it)")


def log_path(store: Any) -> Path:
    """The round log beside the store (or in the working folder for a database server)."""
    from .train import _checkpoints_of

    return _checkpoints_of(store).with_suffix(".design.jsonl")


def run_loop(design_round: Callable[[float], Any], *, pool, inputs: tuple[str, ...], y: str,
             budget: float, store: Any, task: str, train_config: Path | None,
             rounds: int | None, executor: dict[str, Any], quiet: bool):
    """Design, train the proposals, and design again until the budget is spent (or
    ``rounds`` rounds ran); returns the last design (the runs it would propose next)."""
    from scalekit.curves import CurveStore
    from scalekit.train import SweepSpec

    base = _base_settings(task, train_config)
    SweepSpec.from_mapping(base, source=str(train_config))  # refused before anything is
    _configs([_row(pool, 0)], base)                         # written
    CurveStore(store).close()  # a new store starts the loop from nothing observed
    log = log_path(store)
    records = _read_log(log)
    number = sum("trained" in r for r in records)
    pending = records[-1]["runs"] if records and "runs" in records[-1] else None
    done = 0
    while True:
        if pending is None:
            spent = _spent(store, pool, inputs, y)
            result = design_round(budget - spent) if budget > spent else None
            chosen = result.chosen if result is not None else []
            if not chosen or (rounds is not None and done >= rounds):
                why = (f"stopped after --rounds {rounds} (run again to go on)" if chosen
                       else "no affordable run is left: the loop is done")
                _say(quiet, f"round {number}: {why}; spent {spent:.4g} of {budget:.4g}; "
                     f"rounds logged in {log}")
                return result
            pending = [_row(pool, c["row"]) for c in chosen]
            _configs(pending, base)  # refused before the round is logged
            _append(log, {"round": number, "proposed": [c["settings"] for c in chosen],
                          "runs": pending, "spent": spent,
                          "cost": float(sum(c["cost"] for c in chosen)), "budget": budget})
            _say(quiet, f"round {number}: training " + "; ".join(
                ", ".join(f"{k} {v}" for k, v in c["settings"].items()) for c in chosen)
                + f" (cost {sum(c['cost'] for c in chosen):.4g}; spent before {spent:.4g} "
                f"of {budget:.4g})")
        _train(pending, base, store, executor)
        _append(log, {"round": number, "trained": len(pending)})
        pending, number, done = None, number + 1, done + 1


def _say(quiet: bool, line: str) -> None:
    if not quiet:
        typer.echo(line)


def _base_settings(task: str, path: Path | None) -> dict[str, Any]:
    from .train import _read_config

    settings = _read_config(path) if path is not None else {}
    settings["task"] = task
    return settings


def _configs(proposals: list[dict], base: dict[str, Any]):
    """One training run per proposal: the base settings with the proposal's own."""
    from dataclasses import fields

    from scalekit.errors import InputError
    from scalekit.train import SweepSpec, TrainConfig

    known = {f.name for f in fields(TrainConfig)} - {"task"}
    configs = []
    for settings in proposals:
        own = {k: _plain(k, v) for k, v in settings.items() if k in known}
        if not own:
            raise InputError("the pool has no column of a run setting (width, depth, steps, "
                             "data, lr, seed, …), so --submit cannot train its runs")
        configs.extend(SweepSpec.from_mapping({**base, **own}).configs())
    return configs


def _row(pool, row: int) -> dict[str, Any]:
    """Pool row ``row`` as plain values: the run settings among its columns train it
    (a law may name some of them as inputs)."""
    return {str(k): v.item() if hasattr(v, "item") else v
            for k, v in pool.frame.iloc[row].items()}


def _plain(key: str, value: Any) -> Any:
    """A pool cell as a run setting: an empty ``data`` cell is an endless stream, and
    whole floats of integer settings are integers."""
    if isinstance(value, float) and math.isnan(value) and key == "data":
        return None
    if isinstance(value, float) and value.is_integer() and key not in ("lr", "dropout",
                                                                       "weight_decay"):
        return int(value)
    return value


def _train(proposals: list[dict], base: dict[str, Any], store: Any,
           executor: dict[str, Any]) -> None:
    from scalekit.executors import running, worker_count
    from scalekit.train import run_sweep

    from .common import job_executor
    from .train import _checkpoints_of, _jobs_of

    configs = _configs(proposals, base)
    checkpoints = _checkpoints_of(store)
    workers = executor["workers"]
    if executor["kind"] == "local":
        workers, _ = worker_count(workers, len(configs))
    pool = job_executor(executor["kind"], workers=workers, ray_address=executor["ray_address"],
                        default_folder=_jobs_of(checkpoints),
                        partition=executor["partition"], time=executor["time"],
                        gpus=executor["gpus"], folder=executor["folder"])
    with running(pool) as pool:
        run_sweep(configs, store=store, checkpoint_dir=checkpoints, executor=pool)


def _spent(store: Any, pool, inputs: tuple[str, ...], y: str) -> float:
    """What the pool runs the store holds cost (a run matches a pool row on every input)."""
    import numpy as np

    from scalekit.curves import CurveStore
    from scalekit.fit import last_points

    with CurveStore(store, create=False) as opened:
        frame = opened.curves(metric=y).frame
    if frame.empty:
        return 0.0
    frame = last_points(frame)
    mine = np.stack([pool.frame[c].to_numpy(float) for c in inputs], 1)
    seen = np.stack([frame[c].to_numpy(float) for c in inputs], 1)
    held = np.isclose(mine[:, None, :], seen[None, :, :], rtol=1e-9, atol=0).all(2).any(1)
    return float(np.asarray(pool.cost)[held].sum())


def _read_log(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _append(path: Path, record: dict) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
