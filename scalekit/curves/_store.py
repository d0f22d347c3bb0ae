"""`CurveStore`: learning curves in a SQLite file or a PostgreSQL database, safe for several
writers.

Two tables: ``runs`` (one row per run: name, source, run-level attributes and a
free JSON configuration) and ``points`` (one row per run, step and metric, with
the compute, tokens and wall time of that point). The store is opened through
the one connection layer (:mod:`scalekit.curves._database`: a SQLite file, the
default, or a ``postgresql://`` URL; schema version and migrations, locks);
every write is one transaction that holds the store's write lock (SQLite's
``BEGIN IMMEDIATE``, a transaction-level advisory lock on PostgreSQL), so an
import lands whole or not at all.
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.checks import check_choice
from scalekit.compute import tokens_for_compute
from scalekit.curves._curve_set import Curves
from scalekit.curves._database import display, open_database
from scalekit.curves._sqlite import write_failed
from scalekit.curves._schema import (CONFIG_PREFIX, INTEGER_RUN_COLUMNS, LOG_COLUMNS, POINT_COLUMNS,
                                     RUN_COLUMNS, RUN_ONLY_COLUMNS, is_metric_name)
from scalekit.curves._validate import MAX_WHOLE, TOO_LARGE, Locator, check_frame, to_float, to_step
from scalekit.errors import InputError

@dataclass(frozen=True)
class ImportSummary:
    """What one import wrote: the runs it touched, the points it added (one per run, step and
    metric, as the store keeps them) and the rows they came from (one per run and step; None
    where not counted, as in a copy)."""

    runs: int
    points: int
    rows: int | None = None


#: SQLite's words for a file it cannot read or write as a database.
_DAMAGE = ("malformed", "not a database", "disk i/o error", "database or disk is full")


def _not_written(path, exc) -> InputError:
    """The error of a write the store's device refused (full, or a disk I/O error)."""
    return InputError(write_failed(path, exc) + "; free some space (the store is as it was)",
                      source=str(path))


def _file_named(method):
    """A store method whose SQLite damage or full-disk error becomes an :class:`InputError`
    naming the store file; a writing one first checks the file once (:meth:`_check_intact`)."""
    writes = method.__name__ in ("add_run", "remove", "import_frame", "append_points")

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            if writes:
                self._check_intact()
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            text = str(exc).lower()
            if not any(word in text for word in _DAMAGE):
                raise
            exc = str(exc).rsplit("': ", 1)[-1]      # pandas puts the query first
            if "full" in text or (writes and "disk i/o error" in text):
                raise _not_written(self.path, exc) from None
            raise InputError(f"the store file is damaged ({exc}); restore it from a copy, or "
                             "import the curves into a new store", source=str(self.path)) from None
    return wrapper


class CurveStore:
    """Runs and their learning curves in a SQLite file or a PostgreSQL database.

    Parameters
    ----------
    path : str or Path
        The store file, or a ``postgresql://user@host/database`` URL (needs the
        ``psycopg`` package); created with its tables unless ``create`` is false.
    timeout : float
        Seconds a write waits for another process's transaction before failing.
    create : bool
        Whether a missing file may be created (otherwise :class:`InputError`).
    """

    def __init__(self, path: str | Path = "scalekit.db", *, timeout: float = 120.0,
                 create: bool = True) -> None:
        self._db = open_database(path, timeout=timeout, create=create)
        self.path, self.timeout = self._db.path, self._db.timeout
        self._con = self._db.con

    # -- connection ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self):
        """Group several writes into one transaction: all of them land, or none.

        Writes outside this block are each their own transaction. Nested blocks
        are savepoints: an error caught inside one undoes only that block.
        """
        try:
            with self._db.transaction():
                yield self
        except sqlite3.OperationalError as exc:  # the commit met a full disk
            text = str(exc).lower()
            if "full" not in text and "disk i/o error" not in text:
                raise
            raise _not_written(self.path, exc) from None

    def _snapshot(self):
        """A read transaction, so that several queries see one state of the file."""
        return self._db.snapshot()

    def locked(self, names, what):
        """Hold the store's locks ``names`` while the block runs (see :meth:`Database.locked`)."""
        return self._db.locked(names, what)

    @property
    def schema_version(self) -> int:
        """The file's schema version (``PRAGMA user_version``)."""
        return self._db.version

    def _check_intact(self) -> None:
        """Before this store's first write: refuse a damaged store (a SQLite file's
        ``PRAGMA quick_check``), so that nothing is written into it."""
        if getattr(self, "_intact", False):
            return
        self._db.check_intact()
        self._intact = True

    def close(self) -> None:
        """Close the connection (a SQLite file's write-ahead log is folded into it)."""
        self._db.close()

    def __enter__(self) -> CurveStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CurveStore({display(self.path)!r})"

    # -- runs ---------------------------------------------------------------------------------
    @_file_named
    def add_run(self, name: str, *, source: str = "api",
                attrs: Mapping[str, object] | None = None) -> int:
        """Create run ``name`` (or find it) and return its id.

        ``attrs`` holds run-level attributes: ``params``, ``tokens``, ``depth``,
        ``width``, ``classes``, ``k``, ``seed`` get their own columns, anything
        else goes to the JSON configuration. Adding an existing run with the same
        attributes (or none) returns its id; different attributes are an error.
        """
        columns, config = _split_attrs(attrs or {}, source=str(self.path))
        with self.transaction():
            return self._ensure_run(str(name), source, columns, config,
                                    compare=attrs is not None)[0]

    def _ensure_run(self, name: str, source: str, columns: dict, config: dict, *,
                    compare: bool) -> tuple[int, bool]:
        """The id of run ``name`` and whether it was created now; an existing run's
        attributes must agree with the given ones (``compare``), missing ones are filled in."""
        row = self._con.execute(f"SELECT id, {', '.join(RUN_COLUMNS)}, config FROM runs "
                                "WHERE name = ?", (name,)).fetchone()
        if row is None:
            cursor = self._con.execute(
                f"INSERT INTO runs (name, source, {', '.join(RUN_COLUMNS)}, config) "
                f"VALUES (?, ?, {', '.join('?' * len(RUN_COLUMNS))}, ?) RETURNING id",
                (name, source, *(columns.get(c) for c in RUN_COLUMNS),
                 json.dumps(config, sort_keys=True)))
            return int(cursor.fetchone()[0]), True
        if compare:
            stored = dict(zip(RUN_COLUMNS, row[1:-1], strict=True))
            stored_config = json.loads(row[-1])
            for key, value in (*columns.items(), *config.items()):
                have = stored.get(key) if key in RUN_COLUMNS else stored_config.get(key)
                if value is not None and have is not None and not _same(value, have):
                    raise InputError(f"run {name!r} exists with {key} = {have!r}, not {value!r}",
                                     source=str(self.path), column=key)
            new_columns = {k: v for k, v in columns.items() if stored.get(k) is None}
            new_config = {k: v for k, v in config.items() if k not in stored_config}
            if new_columns or new_config:  # attributes the run did not have yet are filled in
                self._con.execute(
                    f"UPDATE runs SET {''.join(f'{k} = ?, ' for k in new_columns)}config = ? "
                    "WHERE id = ?", (*new_columns.values(),
                                     json.dumps({**stored_config, **new_config}, sort_keys=True),
                                     row[0]))
        return int(row[0]), False

    @_file_named
    def runs(self) -> pd.DataFrame:
        """One row per run: ``run`` (name), ``id``, ``source``, run-level attributes
        (float, NaN when unset), ``config`` (dict), ``rows`` (steps logged: the rows of
        the run in a file), ``points`` (values stored: one per row and metric) and
        ``metrics`` (list of names)."""
        columns = ["run", "id", "source", *RUN_COLUMNS, "config"]
        with self._snapshot():
            rows = self._con.execute(f"SELECT name, id, source, {', '.join(RUN_COLUMNS)}, config "
                                     "FROM runs ORDER BY id").fetchall()
            counts = self._con.execute("SELECT run_id, metric, COUNT(*) FROM points "
                                       "GROUP BY run_id, metric").fetchall()
            steps = dict(self._con.execute("SELECT run_id, COUNT(DISTINCT step) FROM points "
                                           "GROUP BY run_id").fetchall())
        frame = pd.DataFrame(rows, columns=columns).astype({"id": np.int64, "run": object,
                                                            "source": object, "config": object})
        frame[list(RUN_COLUMNS)] = frame[list(RUN_COLUMNS)].astype(np.float64)
        frame["config"] = [json.loads(text) for text in frame["config"]]
        total: dict[int, int] = {}
        metrics: dict[int, list[str]] = {}
        for run_id, metric, count in counts:
            total[run_id] = total.get(run_id, 0) + count
            metrics.setdefault(run_id, []).append(metric)
        frame["rows"] = [int(steps.get(i, 0)) for i in frame["id"]]
        frame["points"] = [total.get(i, 0) for i in frame["id"]]
        frame["metrics"] = [metrics.get(i, []) for i in frame["id"]]
        return frame

    @_file_named
    def remove(self, runs: str | Iterable[str]) -> int:
        """Delete runs (by name) with their points; all or none. Returns how many."""
        names = [runs] if isinstance(runs, str) else [str(r) for r in runs]
        with self.transaction():
            ids = self._ids(names)
            for run_id in ids.values():
                self._con.execute("DELETE FROM points WHERE run_id = ?", (run_id,))
                self._con.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return len(ids)

    def _ids(self, names: Sequence[str]) -> dict[str, int]:
        found = {}
        for name in dict.fromkeys(names):
            row = self._con.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise InputError(f"no run named {name!r} in the store", source=str(self.path))
            found[name] = int(row[0])
        return found

    # -- points -------------------------------------------------------------------------------
    @_file_named
    def import_frame(self, frame: Curves | pd.DataFrame, *, source: str,
                     metrics: Sequence[str] | None = None) -> ImportSummary:
        """Store curves (or a tidy curve frame) in one transaction: every row, or nothing.

        Metric columns are ``metrics``, else the curves' ``metrics``, else
        the columns named like a metric (loss, accuracy, …) plus any other
        column that varies within a run; the remaining columns are run
        configuration. A NaN metric cell means "not logged at this step".
        Runs that exist already must have the same attributes; their new points
        must not repeat a stored (step, metric).
        """
        curves = Curves.of(frame)
        frame = curves.frame
        where = Locator(str(source), None, source_lines=curves.source_lines)
        if metrics is None and curves.metrics:
            metrics = [m for m in curves.metrics if m in frame]
        metrics, config = _classify(frame, metrics)
        points = _numeric_points(frame, metrics, where)
        codes, order = check_frame(points, where, metrics=metrics, config=config)
        if len(points) == 0:
            return ImportSummary(runs=0, points=0, rows=0)
        names = points["run"]
        firsts = order[np.flatnonzero(np.r_[True, codes[order][1:] != codes[order][:-1]])]
        with self.transaction():
            ids = np.empty(len(firsts), dtype=np.int64)
            existing = []
            for code, row in enumerate(firsts):
                columns = {c: _scalar(points[c].iloc[row]) for c in RUN_ONLY_COLUMNS
                           if c in points}
                settings = {c: _scalar(points[c].iloc[row]) for c in config}
                ids[code], created = self._ensure_run(
                    str(names.iloc[row]), str(source), columns,
                    {k: v for k, v in settings.items() if v is not None}, compare=True)
                if not created:
                    existing.append(code)
            in_order = bool(np.all(order == np.arange(len(order))))
            sorted_points = points if in_order else points.iloc[order].reset_index(drop=True)
            run_ids = ids[codes[order]]
            if existing:
                self._check_against_stored(sorted_points, run_ids, np.isin(codes[order], existing),
                                           metrics, where, order)
            written = self._insert(sorted_points, run_ids, metrics)
        return ImportSummary(runs=len(firsts), points=written, rows=len(points))

    @_file_named
    def append_points(self, run: str | int, points: pd.DataFrame | Mapping[str, object]) -> int:
        """Append points to an existing run (name or id) in one transaction; return how many.

        ``points`` has ``step`` and metric columns, optionally ``compute``,
        ``tokens`` and ``wall_time``; scalars make a single point. Points are
        validated like an import, and against the run's stored points.
        """
        if isinstance(points, Mapping) and not isinstance(points, pd.DataFrame):
            points = pd.DataFrame({k: np.atleast_1d(v) for k, v in points.items()})
        frame = points.drop(columns=[c for c in ("run",) if c in points])
        if "step" not in frame:
            raise InputError("missing required column 'step' in the appended points",
                             source=str(self.path))
        attributes = [c for c in frame.columns if c in RUN_ONLY_COLUMNS]
        if attributes:
            raise InputError(f"{attributes[0]!r} is an attribute of the run, not of its points; "
                             "give it to add_run(attrs=...)", source=str(self.path))
        metrics = [c for c in frame.columns if c not in ("step", *POINT_COLUMNS)]
        if not metrics:
            raise InputError("the appended points have no metric column", source=str(self.path))
        where = Locator(str(self.path), None)
        with self.transaction():
            if isinstance(run, (int, np.integer)):
                row = self._con.execute("SELECT id, name FROM runs WHERE id = ?",
                                        (int(run),)).fetchone()
            else:
                row = self._con.execute("SELECT id, name FROM runs WHERE name = ?",
                                        (str(run),)).fetchone()
            if row is None:
                raise InputError(f"no run {run!r} in the store; add it with add_run first",
                                 source=str(self.path))
            numeric = _numeric_points(frame.assign(run=row[1]), metrics, where)
            _, order = check_frame(numeric, where, metrics=metrics)
            numeric = numeric.iloc[order].reset_index(drop=True)
            run_ids = np.full(len(numeric), row[0], dtype=np.int64)
            self._check_against_stored(numeric, run_ids, np.ones(len(numeric), bool), metrics,
                                       where, order)
            return self._insert(numeric, run_ids, metrics)

    def _check_against_stored(self, points: pd.DataFrame, run_ids: np.ndarray,
                              mask: np.ndarray, metrics: Sequence[str], where: Locator,
                              order: np.ndarray) -> None:
        """New points of stored runs: no repeated (step, metric), compute still non-decreasing.

        Only the stored points inside the new step range and their two
        neighbours are read, so appending to a long run stays cheap.
        """
        con = self._con
        steps = points["step"].to_numpy()
        compute = points["compute"].to_numpy() if "compute" in points else None
        for run_id in np.unique(run_ids[mask]):
            rows = np.flatnonzero(run_ids == run_id)
            lo, hi = int(steps[rows].min()), int(steps[rows].max())
            for metric in metrics:
                logged = rows[~np.isnan(points[metric].to_numpy()[rows])]
                if len(logged) == 0:
                    continue
                inside = con.execute("SELECT step, compute FROM points WHERE run_id = ? AND "
                                     "metric = ? AND step BETWEEN ? AND ?",
                                     (int(run_id), metric, lo, hi)).fetchall()
                clash = np.isin(steps[logged], [s for s, _ in inside])
                if clash.any():
                    row = int(logged[np.flatnonzero(clash)[0]])
                    run = points["run"].iloc[row]
                    raise where.error_at_point(f"duplicate point: run {run!r} already has "
                                               f"{metric!r} at step {steps[row]} in the store",
                                               int(order[row]), run, int(steps[row]), "step")
                if compute is None:
                    continue
                before = con.execute("SELECT step, compute FROM points WHERE run_id = ? AND "
                                     "metric = ? AND step < ? ORDER BY step DESC LIMIT 1",
                                     (int(run_id), metric, lo)).fetchall()
                after = con.execute("SELECT step, compute FROM points WHERE run_id = ? AND "
                                    "metric = ? AND step > ? ORDER BY step LIMIT 1",
                                    (int(run_id), metric, hi)).fetchall()
                stored = [(s, c) for s, c in (*before, *inside, *after) if c is not None]
                merged = sorted([*stored, *((int(steps[r]), float(compute[r])) for r in logged
                                            if not math.isnan(compute[r]))])
                for (s0, c0), (s1, c1) in zip(merged, merged[1:], strict=False):
                    if c1 < c0:
                        raise InputError(f"compute decreases within run "
                                         f"{points['run'].iloc[rows[0]]!r}: {c1!r} at step {s1} "
                                         f"after {c0!r} at step {s0} (stored and new points)",
                                         source=where.source, column="compute")

    def _insert(self, points: pd.DataFrame, run_ids: np.ndarray, metrics: Sequence[str]) -> int:
        """Bulk-insert points sorted by (run, step), ``_ROWS_PER_INSERT`` rows per statement.

        Multi-row statements bound from one float64 matrix halve the per-row cost
        of the Python binding; whole numbers (run ids, steps below 2**53) land
        as SQLite integers through the columns' INTEGER affinity. The matrix is
        turned into Python lists ``_ROWS_PER_CHUNK`` rows at a time, which keeps
        them in the CPU cache (one list of a million rows is slower by a third).
        """
        extras = [c for c in POINT_COLUMNS if c in points]
        width = 3 + len(extras)
        written = 0
        for metric in metrics:
            values = points[metric].to_numpy(dtype=np.float64)
            keep = ~np.isnan(values)
            columns = [run_ids, points["step"].to_numpy(), values,
                       *(points[c].to_numpy(dtype=np.float64) for c in extras)]
            every = bool(keep.all())
            matrix = np.empty((len(values) if every else int(keep.sum()), width))
            for i, column in enumerate(columns):
                matrix[:, i] = column if every else column[keep]
            whole = len(matrix) - len(matrix) % _ROWS_PER_INSERT
            blocks = [(_ROWS_PER_INSERT, matrix[i:min(i + _ROWS_PER_CHUNK, whole)])
                      for i in range(0, whole, _ROWS_PER_CHUNK)]
            blocks.append((len(matrix) - whole, matrix[whole:]))  # the rest in one statement
            try:
                if self._db.copies:  # PostgreSQL: one COPY of the whole matrix
                    self._db.copy_points(metric, extras, matrix)
                    blocks = []
                for rows, block in blocks:
                    if len(block):
                        self._con.executemany(_insert_sql(metric, extras, rows),
                                              block.reshape(-1, rows * width).tolist())
            except self._db.integrity_error as exc:  # no race: the transaction holds the lock
                raise InputError(f"the points clash with stored ones ({exc})",
                                 source=str(self.path)) from None
            written += len(matrix)
        return written

    # -- reading ------------------------------------------------------------------------------
    @_file_named
    def curves(self, *, runs: str | Iterable[str] | None = None,
               metric: str = "loss") -> Curves:
        """The :class:`~scalekit.curves.Curves` of ``metric`` for ``runs`` (names; all by
        default), with the store as their source.

        Frame columns: ``run``, ``step``, ``compute``, ``tokens`` (the point's, else the
        run's, else compute / (6 params) as in :func:`read_curves`), the metric,
        ``wall_time``, run-level attributes and configuration keys; optional
        columns that are empty for every row are left out.
        Rows are ordered by run (in the order added) and step.
        """
        with self._snapshot():
            return replace(self._curves(runs, metric), source=str(self.path), format="store")

    def _curves(self, runs: str | Iterable[str] | None, metric: str) -> Curves:
        if runs is None:
            run_rows = self._con.execute(f"SELECT id, name, {', '.join(RUN_COLUMNS)}, config "
                                         "FROM runs ORDER BY id").fetchall()
        else:
            names = [runs] if isinstance(runs, str) else list(runs)
            wanted = self._ids(names)
            run_rows = []
            for run_id in sorted(wanted.values()):
                run_rows.append(self._con.execute(
                    f"SELECT id, name, {', '.join(RUN_COLUMNS)}, config FROM runs WHERE id = ?",
                    (run_id,)).fetchone())
        chunks = [self._con.execute("SELECT step, compute, tokens, value, wall_time FROM points "
                                    "WHERE run_id = ? AND metric = ? ORDER BY step",
                                    (run_row[0], metric)).fetchall() for run_row in run_rows]
        which = np.repeat(np.arange(len(run_rows)), [len(chunk) for chunk in chunks])
        rows = chunks[0] if len(chunks) == 1 else [r for chunk in chunks for r in chunk]
        return _assemble(rows, which, run_rows, metric)

    @_file_named
    def export(self, path: str | Path, *, format: str | None = None) -> int:
        """Write every run's points, all metrics side by side, to CSV/Parquet/JSONL.

        Run configuration goes to ``config.<key>`` columns, and metrics whose
        names do not read as metrics (``samples``) to ``metric.<name>`` columns,
        so that re-importing the file restores them. Returns the number of rows
        written.
        """
        from scalekit.curves._writers import TABLE_FORMATS, write_curves

        if format is not None:  # the one-metric formats would drop the other metrics
            check_choice("format", format, TABLE_FORMATS)
        with self._snapshot():
            frame, metrics = self._export_frame()
        ordered = [c for c in ("run", "step", "compute", "tokens") if c in frame] + metrics
        frame = frame[ordered + [c for c in frame.columns if c not in ordered]]
        frame = frame.reset_index(drop=True)
        write_curves(Curves(frame, metrics=tuple(metrics)), path, format=format)
        return len(frame)

    def _export_frame(self) -> tuple[pd.DataFrame, list[str]]:
        """Every metric's curves merged on (run, step), config columns prefixed."""
        # sorted here, by code point (SQLite's order; a server's collation may differ)
        metrics = sorted(r[0] for r in self._con.execute("SELECT DISTINCT metric FROM points"))
        frame = None
        for metric in metrics:
            curves = self.curves(metric=metric)
            config = curves.config_columns
            part = curves.frame.rename(columns={c: CONFIG_PREFIX + c for c in config})
            if frame is None:
                frame = part
                continue
            keys = ["run", "step"]
            shared = [c for c in part.columns if c in frame.columns and c not in keys]
            frame = frame.merge(part, on=keys, how="outer", suffixes=("", "__new"), sort=False)
            for column in shared:
                frame[column] = frame[column].combine_first(frame.pop(column + "__new"))
        if frame is None:
            raise InputError("the store holds no points to export", source=str(self.path))
        run_order = {name: i for i, (name,) in enumerate(
            self._con.execute("SELECT name FROM runs ORDER BY id"))}
        frame = frame.sort_values(["run", "step"], key=lambda s: s.map(run_order)
                                  if s.name == "run" else s, kind="stable")
        return frame, metrics


#: Points per ``INSERT`` statement: 2,000 rows bind at most 12,000 parameters, well
#: under SQLite's smallest default limit (32,766); measured about 15% faster than 400.
_ROWS_PER_INSERT = 2000
_ROWS_PER_CHUNK = 4 * _ROWS_PER_INSERT


def _insert_sql(metric: str, extras: Sequence[str], rows: int) -> str:
    """``INSERT`` of ``rows`` points of ``metric`` (an SQL string literal, quotes doubled)."""
    literal = "'" + metric.replace("'", "''") + "'"
    group = "(?, ?, " + literal + ", ?" + ", ?" * len(extras) + ")"
    return (f"INSERT INTO points (run_id, step, metric, value{''.join(', ' + c for c in extras)})"
            f" VALUES {', '.join([group] * rows)}")


def _assemble(rows: list[tuple], which: np.ndarray, run_rows: list[tuple],
              metric: str) -> Curves:
    """Build the curves from point rows (step, compute, tokens, value, wall_time), the
    position in ``run_rows`` of each point's run, and run rows (id, name, attributes, config)."""
    data = np.array(rows, dtype=np.float64).reshape(-1, 5)
    per_run = np.array([[np.nan if v is None else v for v in row[2:2 + len(RUN_COLUMNS)]]
                        for row in run_rows], dtype=np.float64).reshape(-1, len(RUN_COLUMNS))
    attrs = dict(zip(RUN_COLUMNS, per_run[which].T, strict=True))
    step, compute, point_tokens, value, wall_time = data.T
    tokens = np.where(np.isnan(point_tokens), attrs["tokens"], point_tokens)
    derived = np.isnan(tokens) & ~np.isnan(compute * attrs["params"])
    tokens[derived] = tokens_for_compute(compute[derived], attrs["params"][derived])
    names = np.array([row[1] for row in run_rows], dtype=object)
    columns: dict[str, object] = {"run": names[which], "step": step.astype(np.int64)}
    optional = {"compute": compute, "tokens": tokens, metric: value, "wall_time": wall_time,
                **{c: attrs[c] for c in RUN_ONLY_COLUMNS}}
    for name, values in optional.items():
        missing = np.isnan(values)
        if name == metric or not missing.all():
            whole = name in INTEGER_RUN_COLUMNS and not missing.any()
            columns[name] = values.astype(np.int64) if whole else values
    configs = [json.loads(row[-1]) for row in run_rows]
    keys = [k for k in dict.fromkeys(k for config in configs for k in config)
            if k not in columns]
    for key in keys:
        values = pd.Series([config.get(key) for config in configs], dtype=object)
        columns[key] = values.iloc[which].reset_index(drop=True).infer_objects()
    notes = ("tokens derived as compute / (6 * params) where not stored",) if derived.any() else ()
    return Curves(pd.DataFrame(columns), metric=metric, metrics=(metric,),
                  config_columns=tuple(keys), notes=notes)


def _classify(frame: pd.DataFrame, metrics: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """Split the non-reserved columns of ``frame`` into metrics and run configuration."""
    for column in ("run", "step"):
        if column not in frame:
            raise InputError(f"missing required column {column!r} in the curve frame",
                             column=column)
    reserved = {"run", "step", *POINT_COLUMNS, *RUN_ONLY_COLUMNS}
    rest = [c for c in frame.columns if c not in reserved]
    if metrics is None:
        grouped = frame.groupby("run", sort=False)
        metrics = [c for c in rest if is_metric_name(c)
                   or (grouped[c].nunique(dropna=False) > 1).any()]
    missing = [m for m in metrics if m not in frame]
    if missing:
        raise InputError(f"missing metric column {missing[0]!r} in the curve frame",
                         column=missing[0])
    if not metrics:
        raise InputError("the curve frame has no metric column (such as 'loss')")
    config = [c for c in rest if c not in metrics]
    return list(metrics), config


def _numeric_points(frame: pd.DataFrame, metrics: Sequence[str], where: Locator) -> pd.DataFrame:
    """A copy of ``frame`` with checked numeric columns (steps int64, others float64)."""
    out = {"run": frame["run"].astype(str).reset_index(drop=True),
           "step": to_step(frame["step"].to_numpy(), "step", where)}
    for column in (*POINT_COLUMNS, *RUN_ONLY_COLUMNS):
        if column in frame:
            out[column] = to_float(frame[column].to_numpy(), column, where, missing="nan")
    for metric in metrics:
        out[metric] = to_float(frame[metric].to_numpy(), metric, where, missing="nan")
    data = pd.DataFrame(out)
    logged = np.zeros(len(data), dtype=bool)
    for metric in metrics:
        logged |= ~np.isnan(data[metric].to_numpy())
    if len(data) and not logged.all():
        row = int(np.flatnonzero(~logged)[0])
        raise where.error("the row has no metric value", row, metrics[0])
    for column in frame.columns:
        if column not in data:
            data[column] = frame[column].to_numpy()
    return data


def _split_attrs(attrs: Mapping[str, object], *, source: str) -> tuple[dict, dict]:
    columns, config = {}, {}
    for key, value in attrs.items():
        value = _scalar(value)
        if key in RUN_COLUMNS:
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
                    value):
                raise InputError(f"run attribute {key} = {value!r} is not a finite number",
                                 source=source, column=key)
            if key in LOG_COLUMNS and value <= 0:
                raise InputError(f"run attribute {key} = {value!r} is not positive",
                                 source=source, column=key)
            if key in INTEGER_RUN_COLUMNS and abs(value) > MAX_WHOLE:
                raise InputError(f"run attribute {key} = {value!r} {TOO_LARGE}",
                                 source=source, column=key)
            if key in INTEGER_RUN_COLUMNS and float(value) != int(value):
                raise InputError(f"run attribute {key} = {value!r} is not a whole number",
                                 source=source, column=key)
            columns[key] = int(value) if key in INTEGER_RUN_COLUMNS else float(value)
        else:
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError):
                raise InputError(f"run attribute {key} = {value!r} cannot be stored as JSON",
                                 source=source, column=str(key)) from None
            config[str(key)] = value
    return columns, config


def _scalar(value: object) -> object:
    """A plain Python value for storing: numpy scalars unwrapped, NaN as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b
