"""Grids of runs, run through an executor, logged to the curve store, resumable.

A sweep is a list of :class:`TrainConfig`. Each job trains one run with a
checkpoint file named after the run, so running the same sweep again after a
kill skips finished runs, resumes interrupted ones from their last evaluation
and adds to the store only the steps it does not have yet.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, as_completed
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

import pandas as pd

from scalekit.errors import InputError
from scalekit.executors import InlineExecutor
from scalekit.progress import track
from scalekit.train._config import TrainConfig

GRID_FIELDS = {"widths": "width", "depths": "depth", "data": "data", "steps": "steps", "lrs": "lr",
               "seeds": "seed", "dropouts": "dropout", "dropout_schedules": "dropout_schedule"}


@dataclass(frozen=True)
class SweepSpec:
    """A grid: every combination of the listed values on top of ``base``.

    Parameters
    ----------
    base : TrainConfig
        Settings shared by every run (task, batch size, evaluations, …).
    widths, depths, data, steps, lrs, seeds, dropouts, dropout_schedules : sequence or None
        Values of the varied settings; ``None`` keeps ``base``'s value.
    """

    base: TrainConfig
    widths: Sequence[int] | None = None
    depths: Sequence[int] | None = None
    data: Sequence[int | None] | None = None
    steps: Sequence[int] | None = None
    lrs: Sequence[float] | None = None
    seeds: Sequence[int] | None = None
    dropouts: Sequence[float] | None = None
    dropout_schedules: Sequence[str] | None = None

    def configs(self) -> list[TrainConfig]:
        """The runs of the grid, in a fixed order."""
        axes = [(GRID_FIELDS[name], list(values)) for name, values in
                ((f.name, getattr(self, f.name)) for f in fields(self) if f.name != "base")
                if values is not None]
        return [self.base.replace(**dict(zip([a for a, _ in axes], combo, strict=True)))
                for combo in itertools.product(*(v for _, v in axes))]

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any], *, source: str | None = None) -> SweepSpec:
        """Build from a mapping (a parsed config file): grid keys plus any ``TrainConfig`` field."""
        base_names = {f.name for f in fields(TrainConfig)}
        unknown = set(settings) - set(GRID_FIELDS) - base_names
        if unknown:
            raise InputError(f"unknown sweep settings {sorted(unknown)}; known: "
                             f"{sorted(set(GRID_FIELDS) | base_names)}", source=source)
        grid = {k: tuple(v) if isinstance(v, (list, tuple)) else (v,)
                for k, v in settings.items() if k in GRID_FIELDS}
        base = TrainConfig(**{k: v for k, v in settings.items() if k in base_names and k not in GRID_FIELDS})
        return cls(base=base, **grid)


class StoreLog:
    """Writes a run's points to a :class:`~scalekit.curves.CurveStore`, each step once.

    The first call for a run registers it (with its attributes) and reads the
    last step the store holds; later points at or before that step are skipped,
    so a resumed run never duplicates a point. The store is opened at the first
    call and kept open until :meth:`close` (or the end of a ``with`` block): every
    write is its own transaction, but the store is checked and its write-ahead log
    folded once per job, not once per point of every run.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._last: dict[str, int] = {}
        self._store = None

    def __call__(self, name: str, attrs: dict[str, Any], points: list[dict[str, float]]) -> None:
        if self._store is None:
            from scalekit.curves import CurveStore

            self._store = CurveStore(self.path)
        store = self._store
        if name not in self._last:
            store.add_run(name, source="scalekit train", attrs=attrs)
            held = store.curves(runs=[name]).frame
            self._last[name] = int(held["step"].max()) if len(held) else -1
        new = [p for p in points if p["step"] > self._last[name]]
        if new:
            store.append_points(name, pd.DataFrame(new))
            self._last[name] = int(new[-1]["step"])

    def close(self) -> None:
        """Close the store (opened again by a later call)."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextmanager
def _runs_locked(store: str | Path | None, names: list[str]):
    """Hold the store's lock of every run while they train, so that a second sweep of the
    same runs at once is refused naming the first (a dead sweep's locks are taken over)."""
    if store is None:
        yield
        return
    from scalekit.curves import CurveStore

    with CurveStore(store) as opened, opened.locked([f"train:{n}" for n in names],
                                                    lambda lock: f"run {lock[6:]!r}"):
        yield


def checkpoint_path(directory: str | Path, config: TrainConfig) -> Path:
    """The checkpoint file of ``config`` in ``directory``."""
    return Path(directory) / f"{config.name}.pt"


def run_job(config: TrainConfig, store: str | None, checkpoint_dir: str | None) -> dict[str, Any]:
    """Train one run (in whichever process the executor chose); returns its result as plain data."""
    from scalekit.train._loop import train

    checkpoint = None
    if checkpoint_dir is not None:
        Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
        checkpoint = checkpoint_path(checkpoint_dir, config)
    with StoreLog(store) if store is not None else nullcontext() as log:
        result = train(config, log=log, checkpoint=checkpoint)
    return {"name": result.name, "attrs": result.attrs, "points": result.points}


def run_batched_job(configs: list[TrainConfig], store: str | None) -> list[dict[str, Any]]:
    """Train runs of one shape together (:func:`scalekit.train._batched.train_batched`).

    There are no checkpoints: a killed group trains again from the start, and the
    store log skips the steps it already holds (the same points without dropout,
    points of the same distribution with it).
    """
    from scalekit.train._batched import train_batched

    with StoreLog(store) if store is not None else nullcontext() as log:
        results = train_batched(configs, log=log)
    return [{"name": r.name, "attrs": r.attrs, "points": r.points} for r in results]


def shape_groups(configs: Sequence[TrainConfig]) -> list[list[TrainConfig]]:
    """Configs grouped by everything but the settings a batched run varies per model."""
    from scalekit.train._batched import shape_key

    groups: dict[str, list[TrainConfig]] = {}
    for config in configs:
        key = json.dumps(shape_key(config).to_dict(), sort_keys=True, default=str)
        groups.setdefault(key, []).append(config)
    return list(groups.values())


def run_sweep(configs: Iterable[TrainConfig], *, store: str | Path | None = None,
              checkpoint_dir: str | Path | None = None, executor: Executor | None = None,
              batched: bool = False) -> pd.DataFrame:
    """Train every run and return all their points as one tidy curve frame.

    Parameters
    ----------
    configs : iterable of TrainConfig
        The runs; their names must differ.
    store : path, optional
        Curve store every evaluation is written to.
    checkpoint_dir : path, optional
        Folder of per-run checkpoints; running the sweep again resumes from it.
    executor : Executor, optional
        Where jobs run (default: in this process), e.g.
        :func:`scalekit.executors.make_executor`, whose pool workers share the CPU threads.
    batched : bool
        Train runs that differ only in seed, learning rate, weight decay and dropout
        together, one job per group (MLP tasks; no checkpoints, see :func:`run_batched_job`).

    Finished jobs are reported to :mod:`scalekit.progress` as the task ``training``.
    """
    from scalekit.train._loop import TrainedRun

    configs = list(configs)
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise InputError("the sweep lists the same run twice: " +
                         ", ".join(sorted({n for n in names if names.count(n) > 1})))
    executor = executor or InlineExecutor()
    args = (str(store) if store is not None else None,
            str(checkpoint_dir) if checkpoint_dir is not None else None)
    with _runs_locked(store, names):
        if batched:
            futures = {executor.submit(run_batched_job, group, args[0]): group
                       for group in shape_groups(configs)}
        else:
            futures = {executor.submit(run_job, config, *args): [config] for config in configs}
        results = {}
        for future in track(as_completed(futures), "training", total=len(futures)):
            done = future.result()
            for result in done if batched else [done]:
                results[result["name"]] = TrainedRun(**result)
    if not results:
        return pd.DataFrame()
    return pd.concat([results[name].frame() for name in names], ignore_index=True)
