"""``scalekit train``: run a sweep of a bundled task and log its curves to the store."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import (EXPORT_SUFFIXES, check_executor, checked_number, choice_argument,
                     choice_option, display, job_executor, library_choices, on_interrupt,
                     output_option, points_kept, print_tables, quiet_option, slurm_options,
                     store_option)
from .options import json_option

_SLURM = slurm_options()


def _grid(text: str | None, name: str, kind: type) -> list | None:
    """Parse a comma-separated grid such as ``32,64,128`` (``inf`` means no limit for --data)."""
    if text is None:
        return None
    from scalekit.checks import fail

    values = []
    for item in (part.strip() for part in text.split(",")):
        if name == "data" and item.lower() in ("inf", "none"):
            values.append(None)
            continue
        try:
            values.append(kind(float(item)) if kind is int and float(item).is_integer() else kind(item))
        except ValueError:
            raise fail(name, item, f"a comma-separated list of {kind.__name__} values") from None
    return values


def _config(name: str):
    """Choices of a run setting, from :mod:`scalekit.train._config`."""
    return library_choices("scalekit.train._config", name)


def _tasks() -> tuple[str, ...]:
    from scalekit.train import available_tasks

    return tuple(available_tasks())


def _options(items: list[str]) -> dict:
    """Parse repeated ``--option key=value`` (numbers become numbers)."""
    import json

    from scalekit.errors import InputError

    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--option takes key=value, got {item!r}")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def _read_config(path: Path) -> dict:
    """Read a JSON or TOML sweep file."""
    import json
    import tomllib

    from scalekit.errors import InputError

    if not path.exists():
        raise InputError("no such file", source=str(path))
    try:
        if path.suffix == ".toml":
            return tomllib.loads(path.read_text())
        return json.loads(path.read_text())
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot parse the sweep file: {exc}", source=str(path)) from None


def train(
    ctx: typer.Context,
    task: str = choice_argument("task", _tasks, "teacher_student, char_lm, next_pixel, "
                                "hierarchical or residual_teacher."),
    widths: str | None = typer.Option(None, "--widths", help="Widths, e.g. 16,32,64."),
    depths: str | None = typer.Option(None, "--depths", help="Depths (hidden layers or blocks)."),
    data: str | None = typer.Option(None, "--data", help="Training-set sizes in samples "
                                       "('inf': a fresh batch every step)."),
    steps: str | None = typer.Option(None, "--steps", help="Optimiser steps."),
    seeds: str | None = typer.Option(None, "--seeds", help="Initialisation seeds."),
    lrs: str | None = typer.Option(None, "--lrs", help="Peak learning rates."),
    dropouts: str | None = typer.Option(None, "--dropouts", help="Average dropout rates."),
    dropout_schedules: str | None = choice_option(None, "--dropout-schedules",
                                                     _config("DROPOUT_SCHEDULES"),
                                                     "constant and/or front_loaded.", many=True),
    config: Path | None = typer.Option(None, "--config", help="JSON or TOML sweep file "
                                          "(grid keys and any run setting); options given here win."),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Samples per step."),
    lr_schedule: str | None = choice_option(None, "--lr-schedule", _config("LR_SCHEDULES"),
                                               "constant or cosine."),
    evals: int | None = typer.Option(None, "--evals", help="Evaluations per run (log-spaced)."),
    eval_size: int | None = typer.Option(None, "--eval-size", help="Validation samples."),
    data_seed: int | None = typer.Option(None, "--data-seed", help="Seed of the task's data."),
    option: list[str] = typer.Option([], "--option", metavar="KEY=VALUE",
                                     help="Task setting key=value (repeatable)."),
    device: str = choice_option("auto", "--device", _config("DEVICES"),
                                "auto (CUDA, then MPS, then CPU), cpu, cuda, mps."),
    compile_model: bool = typer.Option(False, "--compile", metavar="", help="Wrap models in torch.compile."),
    precision: str = choice_option("auto", "--precision", _config("PRECISIONS"),
                                   "auto (bf16 autocast on a CUDA GPU that has it, else "
                                   "fp32), bf16 or fp32 (no autocast)."),
    executor: str = choice_option("local", "--executor",
                                  library_choices("scalekit.executors", "EXECUTORS"),
                                  "local (process pool), ray, slurm (each run a Slurm job "
                                  "through submitit) or submitit-local (the same jobs as "
                                  "processes on this machine)."),
    workers: int = typer.Option(1, "--workers", callback=checked_number("--workers", low=1,
                                                                        integer=True),
                                help="Parallel runs (1: in this process; at most the runs and "
                                "the CPUs)."),
    batched: bool = typer.Option(False, "--batched", metavar="",
                                 help="Train runs that differ only in seed, lr and dropout "
                                 "together with vmap (one model per shape on the device; no "
                                 "checkpoints)."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Ray cluster to join."),
    slurm_partition: str | None = _SLURM["partition"], slurm_time: str = _SLURM["time"],
    slurm_gpus: int | None = _SLURM["gpus"], jobs_folder: Path | None = _SLURM["folder"],
    store: Path = store_option(writes=True),
    checkpoints: Path | None = typer.Option(None, "--checkpoints", help="Checkpoint folder "
                                               "(default: STORE.checkpoints); rerun to resume."),
    export: Path | None = output_option("--export", EXPORT_SUFFIXES, "Also write the store's "
                                           "curves to this CSV/Parquet/JSONL file."),
    json_out: Path | None = json_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Train a sweep (every combination of the grids) and log each evaluation to the store."""
    from scalekit.train import SweepResult, SweepSpec, run_sweep

    check_executor(executor, ray_address)

    settings = _read_config(config) if config is not None else {}
    settings["task"] = task
    grids = {"widths": _grid(widths, "widths", int), "depths": _grid(depths, "depths", int),
             "data": _grid(data, "data", int), "steps": _grid(steps, "steps", int),
             "seeds": _grid(seeds, "seeds", int), "lrs": _grid(lrs, "lrs", float),
             "dropouts": _grid(dropouts, "dropouts", float),
             "dropout_schedules": _grid(dropout_schedules, "dropout_schedules", str)}
    singles = {"batch_size": batch_size, "lr_schedule": lr_schedule, "evals": evals,
               "eval_size": eval_size, "data_seed": data_seed}
    settings.update({k: v for k, v in {**grids, **singles}.items() if v is not None})
    for key, name, value in (("device", "device", device), ("compile", "compile_model",
                                                           compile_model),
                             ("precision", "precision", precision)):
        if key not in settings or ctx.get_parameter_source(name).name != "DEFAULT":
            settings[key] = value  # a setting of the --config file yields only to a given option
    if option:
        settings["options"] = {**settings.get("options", {}), **_options(option)}
    spec = SweepSpec.from_mapping(settings, source=str(config) if config else None)
    configs = spec.configs()
    from scalekit.executors import running, worker_count

    if executor == "local":  # a local pool: no more processes than runs or CPUs, and say so
        workers, note = worker_count(workers, len(configs))
        if note and not quiet:
            typer.echo(f"--workers: {note}", err=True)
    checkpoint_dir = checkpoints or _checkpoints_of(store)
    on_interrupt(lambda: f"the store {display(store)} keeps {points_kept(store, 'scalekit train')} "
                 "logged before it; run the same command again to resume from the checkpoints")
    made = {"store": isinstance(store, Path) and not store.exists(),
            "checkpoints": not checkpoint_dir.exists()}
    try:
        pool = job_executor(executor, workers=workers, ray_address=ray_address,
                            default_folder=_jobs_of(checkpoint_dir),
                            partition=slurm_partition, time=slurm_time, gpus=slurm_gpus,
                            folder=jobs_folder)
        with running(pool) as pool:
            frame = run_sweep(configs, store=store, checkpoint_dir=checkpoint_dir, executor=pool,
                              batched=batched)
    except Exception:
        _remove_if_empty(store, checkpoint_dir, made)
        raise
    if export is not None:
        from scalekit.curves import CurveStore

        with CurveStore(store) as opened:
            opened.export(export)
    result = SweepResult.from_frame(frame, task=task, store=display(store))
    if json_out is not None:
        from scalekit import serialise

        serialise.write_report(json_out, "train", result, input_sha256=None, seed=None,
                               settings=settings)
    if not quiet:
        print_tables([_table(result)], "table")


def _remove_if_empty(store: Path, checkpoint_dir: Path, made: dict) -> None:
    """After a failed sweep: remove the store file and the checkpoint folder this command
    made, when they hold nothing (no point, no file); what holds work stays, to resume."""
    import shutil

    if made["checkpoints"] and checkpoint_dir.is_dir() and not any(
            p.is_file() for p in checkpoint_dir.rglob("*")):
        shutil.rmtree(checkpoint_dir, ignore_errors=True)
    if made["store"] and store.is_file() and points_kept(store).startswith("0 points"):
        for path in (store, store.with_name(store.name + "-wal"),
                     store.with_name(store.name + "-shm")):
            path.unlink(missing_ok=True)


def _checkpoints_of(store) -> Path:
    """The default checkpoint folder: STORE.checkpoints beside a store file, or
    DATABASE.checkpoints in the working folder for a PostgreSQL store."""
    if isinstance(store, Path):
        return store.with_name(store.name + ".checkpoints")
    from urllib.parse import urlsplit

    return Path(urlsplit(store).path.strip("/") + ".checkpoints")


def _jobs_of(checkpoints: Path) -> Path:
    """The default jobs folder of submitit beside a checkpoint folder (``X.checkpoints``
    -> ``X.jobs``)."""
    return checkpoints.with_name(checkpoints.name.removesuffix(".checkpoints") + ".jobs")


def _table(result) -> dict:
    """The last point of every run, with the settings that vary across the sweep."""
    from scalekit.report import table_data

    shown = [*result.varied, "params", "tokens", "compute", "compute_6nd", "loss"]
    return table_data(f"{len(result.runs)} runs → {result.store} (compute: counted FLOPs)",
                      shown, [[run.get(c) for c in shown] for run in result.runs])


def register(app: typer.Typer) -> None:
    """Add the `train` command to ``app``."""
    app.command("train")(train)
