"""Read learning curves from files into a validated tidy curve frame.

Formats: ``csv`` (long: one row per point, or one row per run when there is no
step column), ``wandb`` (wide CSV as exported by Weights & Biases: a ``Step``
column and ``<run> - <metric>`` columns; ``__MIN``/``__MAX`` columns ignored),
``jsonl``, ``parquet`` and ``tensorboard`` (a folder of event files; needs the
optional ``tensorboard`` package).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.checks import check_choice
from scalekit.compute import tokens_for_compute
from scalekit.curves.schema import (ALIASES, CONFIG_PREFIX, INTEGER_RUN_COLUMNS, KEY_COLUMNS,
                                    METRIC_PREFIX, POINT_COLUMNS, RUN_COLUMNS, is_metric_name,
                                    normalise, resolve_roles)
from scalekit.curves.validate import Locator, check_frame, to_float, to_step
from scalekit.errors import InputError

FORMATS = ("csv", "wandb", "jsonl", "parquet", "tensorboard")
DUPLICATES = ("error", "first", "last")
_SUFFIXES = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
             ".parquet": "parquet", ".pq": "parquet"}
_WIDE_COLUMN = re.compile(r"^(?P<run>.+) - (?P<metric>.+)$")


def read_curves(path: str | Path, *, format: str | None = None,
                mapping: Mapping[str, str] | None = None, metric: str = "loss",
                duplicates: str = "error", keep: Sequence[str] = ()) -> pd.DataFrame:
    """Read learning curves from ``path`` into a tidy, validated curve frame.

    Parameters
    ----------
    path : str or Path
        A file, or a folder of TensorBoard event files.
    format : {"csv", "wandb", "jsonl", "parquet", "tensorboard"}, optional
        Detected from the suffix (and, for CSV, from ``<run> - <metric>`` headers).
    mapping : mapping role -> column, optional
        Explicit column roles (``run``, ``step``, ``params``, ``tokens``,
        ``compute``, ``loss``, ``wall_time``, ``depth``, ``width``, ``classes``,
        ``k``, ``seed``), overriding alias detection. ``run`` may list several
        columns (``"model,peak_lr"``) whose values, joined by ``/``, name a run.
    metric : str
        Name of the metric column of the result (``loss`` by default).
    duplicates : {"error", "first", "last"}
        What a repeated (run, step) does: rejected (default) or resolved by
        keeping the first or last occurrence (the count dropped is noted).
    keep : sequence of str
        Further columns to keep as they are (numbers where every cell is one,
        else text), e.g. an x column or a grouping column for ``scalekit fit``.

    Returns
    -------
    DataFrame
        Columns ``run``, ``step``, the metric, and what the file has of
        ``compute``, ``tokens``, ``wall_time``, ``params``, ``depth``,
        ``width``, ``classes``, ``k``, ``seed``, further metric columns and
        ``config.*`` columns (run configuration, without the prefix).
        ``attrs["notes"]`` lists what was derived or ignored,
        ``attrs["metrics"]`` the metric columns, ``attrs["config_columns"]``
        the configuration columns.
    """
    path = Path(path)
    source = str(path)
    if not path.exists():
        raise InputError("no such file or folder", source=source)
    check_choice("duplicates", duplicates, DUPLICATES)
    fmt = _detect_format(path, format)
    if fmt == "tensorboard":
        table, lines, stem_notes = _read_tensorboard(path, mapping, metric), None, []
        mapping = None
    elif fmt == "parquet":
        table, lines, stem_notes = _read_parquet(path), None, []
    elif fmt == "jsonl":
        table, lines = _read_jsonl(path)
        stem_notes = []
    else:
        table, lines = _read_csv(path)
        stem_notes = []
        if fmt == "wandb" or (format is None and _looks_wide(table.columns, mapping, metric)):
            table, lines = _wide_to_long(table, lines, mapping, metric, source)
            mapping = None
            stem_notes = ["read as a W&B wide export (Step plus '<run> - <metric>' columns)"]
    frame = tidy_from_table(table, Locator(source, lines), mapping=mapping, metric=metric,
                            duplicates=duplicates, default_run=path.stem or path.name,
                            keep=keep)
    frame.attrs["notes"] = stem_notes + frame.attrs["notes"]
    frame.attrs["source"] = source
    frame.attrs["format"] = fmt
    return frame


def tidy_from_table(table: pd.DataFrame, where: Locator, *, mapping: Mapping[str, str] | None,
                    metric: str, duplicates: str = "error", default_run: str = "run",
                    keep: Sequence[str] = ()) -> pd.DataFrame:
    """Turn a raw table (cells as read) into a validated tidy curve frame."""
    if table.shape[1] == 0:
        raise where.error("the file is empty")
    if len(table) == 0:
        raise InputError("the file has a header but no data rows", source=where.source, line=2)
    roles = resolve_roles(table.columns, mapping, metric=metric, source=where.source)
    if "loss" not in roles:
        looked = (metric,) + (ALIASES["loss"][1:] if metric == "loss" else ())
        raise InputError(f"missing required column: no {metric!r} column (looked for "
                         + ", ".join(looked) + f"); name one with --map {metric}=COLUMN",
                         source=where.source, line=1)
    notes: list[str] = []
    out: dict[str, object] = {"run": _run_names(table, roles, where, default_run, notes)}
    out["step"] = _steps(table, roles, where, out["run"], duplicates)
    for role in ("compute", "tokens", "wall_time"):
        if role in roles:
            out[role] = to_float(table[roles[role]].to_numpy(), roles[role], where,
                                 missing="nan")
    out[metric] = to_float(table[roles["loss"]].to_numpy(), roles["loss"], where)
    metrics = [metric]
    used = {c for value in roles.values() for c in _columns_of(value)}
    for column in table.columns:
        text = str(column)
        name = text[len(METRIC_PREFIX):] if text.startswith(METRIC_PREFIX) else text
        if column not in used and not text.startswith(CONFIG_PREFIX) and name not in out \
                and (name != text or is_metric_name(column)):
            out[name] = to_float(table[column].to_numpy(), column, where, missing="nan")
            metrics.append(name)
            used.add(column)
    for role in ("params", *INTEGER_RUN_COLUMNS):
        if role in roles:
            out[role] = to_float(table[roles[role]].to_numpy(), roles[role], where,
                                 missing="nan")
    config_columns = []
    for column in table.columns:
        name = str(column)[len(CONFIG_PREFIX):]
        if str(column).startswith(CONFIG_PREFIX) and name not in out:
            if name in (*POINT_COLUMNS, *RUN_COLUMNS):  # config.seed: the seed, checked as such
                out[name] = to_float(table[column].to_numpy(), column, where, missing="nan")
            else:
                out[name] = _config_values(table[column])
                config_columns.append(name)
            used.add(column)
    keep = list(dict.fromkeys(keep))
    for column in keep:
        if column in out:  # already a column of the frame, such as a role's
            continue
        if column not in table.columns:
            raise InputError(f"no column {column!r} to keep", source=where.source, line=1)
        out[column] = _config_values(table[column])  # also when it plays a role
        used.add(column)
    ignored = [str(c) for c in table.columns if c not in used]
    if ignored:
        notes.append("ignored columns: " + ", ".join(ignored))
    frame = pd.DataFrame(out)
    if "tokens" not in frame and "compute" in frame and "params" in frame:
        frame["tokens"] = tokens_for_compute(frame["compute"], frame["params"])
        notes.append("tokens derived as compute / (6 * params)")
    if duplicates != "error":
        rows = frame.drop_duplicates(list(KEY_COLUMNS), keep=duplicates).index.to_numpy()
        if len(rows) < len(frame):
            notes.append(f"dropped {len(frame) - len(rows)} rows repeating a (run, step), "
                         f"keeping the {duplicates}")
            frame = frame.iloc[rows].reset_index(drop=True)
            where = where.subset(rows)
    _, order = check_frame(frame, where, metrics=metrics, config=config_columns)
    for column in INTEGER_RUN_COLUMNS:
        if column in frame and not frame[column].isna().any():
            frame[column] = frame[column].astype(np.int64)
    frame = frame.iloc[order].reset_index(drop=True)
    ordered = _ordered(frame.columns, metrics, config_columns)
    frame = frame[ordered + [c for c in keep if c not in ordered]]
    frame.attrs.update(notes=notes, metrics=metrics, config_columns=config_columns)
    return frame


def _columns_of(role_value: str | tuple[str, ...]) -> tuple[str, ...]:
    return role_value if isinstance(role_value, tuple) else (role_value,)


def _run_names(table: pd.DataFrame, roles: dict, where: Locator, default_run: str,
               notes: list[str]) -> np.ndarray:
    """Run name of every row: the run column(s) joined by ``/``, the file's name, or one run
    per row (named ``<file>:<line>``) when there is neither a run nor a step column."""
    if "run" in roles:
        names = None
        for column in _columns_of(roles["run"]):
            text = table[column].astype(str).str.strip()
            empty = table[column].isna() | (text == "")
            if empty.any():
                raise where.error("the run name is missing", int(np.flatnonzero(empty)[0]),
                                  column)
            names = text if names is None else names + "/" + text
        return names.to_numpy(dtype=object)
    if "step" in roles:
        notes.append(f"no run column: all rows are one run named {default_run!r}")
        return np.full(len(table), default_run, dtype=object)
    notes.append(f"no run or step column: each row is its own run, named "
                 f"'{default_run}:<{'line' if where.lines is not None else 'row'}>'")
    return np.array([f"{default_run}:{where.number(i)}" for i in range(len(table))],
                    dtype=object)


def _steps(table: pd.DataFrame, roles: dict, where: Locator, runs: np.ndarray,
           duplicates: str) -> np.ndarray:
    """The step column, or step 0 for files with one row per run."""
    if "step" in roles:
        return to_step(table[roles["step"]].to_numpy(), roles["step"], where)
    repeated = pd.Series(runs).duplicated().to_numpy()
    if repeated.any() and duplicates == "error":
        row = int(np.flatnonzero(repeated)[0])
        raise where.error(f"run {runs[row]!r} has several rows but the file has no step "
                          "column; name one with --map step=COLUMN, or name the columns that "
                          "together identify a run with --map run=COL1,COL2", row,
                          ",".join(_columns_of(roles["run"])))
    return np.zeros(len(table), dtype=np.int64)


def _ordered(columns, metrics: list[str], config: list[str]) -> list[str]:
    head = [c for c in ("run", "step", "compute", "tokens") if c in columns]
    tail = [c for c in ("wall_time", "params", "depth", "width", "classes", "k", "seed")
            if c in columns]
    return head + metrics + tail + config


def _config_values(column: pd.Series) -> np.ndarray:
    """Configuration cells: numbers where every present cell is one, else text."""
    values = [v.tolist() if isinstance(v, np.ndarray) else v  # Parquet lists
              for v in column.to_numpy(dtype=object)]
    present = [v for v in values if not _is_blank(v)]
    try:
        if all(np.isfinite([float(v) for v in present])):
            return np.array([np.nan if _is_blank(v) else float(v) for v in values])
    except (TypeError, ValueError):
        pass
    out = np.empty(len(values), dtype=object)  # 1-d also when cells are lists (np.array nests)
    out[:] = [None if _is_blank(v) else v for v in values]
    return out


def _is_blank(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or (
        isinstance(value, str) and value.strip() == "")


def _detect_format(path: Path, format: str | None) -> str:
    if format is not None:
        return check_choice("format", format, FORMATS)
    if path.is_dir():
        return "tensorboard"
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"cannot tell the format from the suffix {path.suffix!r}; choose one "
                         "of " + ", ".join(FORMATS) + " with --format", source=str(path))
    return fmt


def _read_csv(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """Read every cell as text; return the table and the file line where each row starts."""
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    source = str(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, delimiter=delimiter, strict=True)
            header, rows, lines = None, [], []
            while True:
                start = reader.line_num + 1
                try:
                    row = next(reader)
                except StopIteration:
                    break
                if not row or all(not cell.strip() for cell in row):
                    continue
                if header is None:
                    header = [cell.strip() for cell in row]
                    _check_header(header, source)
                    continue
                if len(row) != len(header):
                    raise InputError(f"the row has {len(row)} cells but the header has "
                                     f"{len(header)}; the file is not valid CSV",
                                     source=source, line=start)
                rows.append(row)
                lines.append(start)
    except csv.Error as exc:
        raise InputError(f"the file is not valid CSV ({exc})", source=source,
                         line=reader.line_num) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"the file is not UTF-8 text ({exc.reason})", source=source) from None
    if header is None:
        raise InputError("the file is empty", source=source)
    columns = list(zip(*rows)) if rows else [()] * len(header)
    table = pd.DataFrame({name: np.array(cells, dtype=object)
                          for name, cells in zip(header, columns)}, columns=header)
    return table, np.asarray(lines, dtype=np.int64)


def _check_header(header: list[str], source: str) -> None:
    seen = set()
    for name in header:
        if not name:
            raise InputError("the header has an empty column name", source=source, line=1)
        if name in seen:
            raise InputError("the column name appears twice in the header", source=source,
                             line=1, column=name)
        seen.add(name)


def _read_jsonl(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    records, lines = [], []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"the file is not UTF-8 text ({exc.reason})", source=str(path)) from None
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 is text
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", source=str(path),
                             line=number) from None
        if not isinstance(record, dict):
            raise InputError("each line must be a JSON object", source=str(path), line=number)
        records.append(record)
        lines.append(number)
    if not records:
        raise InputError("the file is empty", source=str(path))
    table = pd.DataFrame.from_records(records)
    return table.astype(object).where(table.notna(), None), np.asarray(lines)


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        table = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
        raise InputError(f"cannot read the file as Parquet ({exc})", source=str(path)) from None
    named = [n for n in table.index.names if n is not None and n not in table.columns]
    if named:  # pandas keeps a frame's index (often run, step) as index columns
        table = table.reset_index(level=named)
    if table.shape[1] == 0:
        raise InputError("the file is empty", source=str(path))
    return table.reset_index(drop=True)


def _looks_wide(columns, mapping: Mapping[str, str] | None, metric: str) -> bool:
    """A W&B export: no metric column (by name or mapping) but ``<run> - <metric>`` columns."""
    mapped = dict(mapping or {}).get("loss", dict(mapping or {}).get(metric))
    if mapped in set(columns) or "loss" in resolve_roles(columns, None, metric=metric):
        return False
    return any(_WIDE_COLUMN.match(str(c)) for c in columns)


def _metric_role(name: str, wanted: str | None, metric: str) -> str | None:
    """The role a W&B/TensorBoard metric name plays: ``loss``, a point role, or None."""
    if wanted is not None:
        return "loss" if name == wanted else None
    tail = normalise(name.rsplit("/", 1)[-1])
    full = normalise(name)
    candidates = {"loss": (metric,) + (ALIASES["loss"] if metric == "loss" else ())}
    candidates.update({role: ALIASES[role] for role in ("compute", "tokens")})
    for role, aliases in candidates.items():
        norms = [normalise(a) for a in aliases]
        if full in norms or tail in norms:
            return role
    return None


def _pick(columns: dict[str, str], role_of: dict[str, str | None]) -> dict[str, str]:
    """Per role, the first name (in alias order, then file order) that plays it."""
    chosen: dict[str, str] = {}
    for name, column in columns.items():
        role = role_of[name]
        if role is not None and role not in chosen:
            chosen[role] = column
    return chosen


def _wide_to_long(table: pd.DataFrame, lines: np.ndarray, mapping: Mapping[str, str] | None,
                  metric: str, source: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Turn ``Step`` + ``<run> - <metric>`` columns into long rows (run, step, metric, …)."""
    mapping = dict(mapping or {})
    wanted = mapping.pop("loss", mapping.pop(metric, None))
    step_roles = resolve_roles(table.columns, {k: v for k, v in mapping.items() if k == "step"},
                               metric=metric, source=source)
    if "step" not in step_roles:
        raise InputError("missing required column: a W&B export needs a 'Step' column",
                         source=source, line=1)
    per_run: dict[str, dict[str, str]] = {}
    for column in table.columns:
        match = _WIDE_COLUMN.match(str(column))
        if match is None or str(column).endswith(("__MIN", "__MAX")):
            continue
        per_run.setdefault(match["run"], {})[match["metric"]] = column
    pieces, piece_lines = [], []
    step = table[step_roles["step"]].to_numpy(dtype=object)
    for run, columns in per_run.items():
        role_of = {name: _metric_role(name, wanted, metric) for name in columns}
        ordered = dict(sorted(columns.items(), key=lambda kv: _alias_rank(kv[0], metric)))
        chosen = _pick(ordered, role_of)
        if "loss" not in chosen:
            continue
        values = table[chosen["loss"]].to_numpy(dtype=object)
        present = np.array([not _is_blank(v) for v in values])
        piece = {"run": np.full(present.sum(), run, dtype=object), "step": step[present],
                 metric: values[present]}
        for role in ("compute", "tokens"):
            if role in chosen:
                piece[role] = table[chosen[role]].to_numpy(dtype=object)[present]
        pieces.append(pd.DataFrame(piece))
        piece_lines.append(lines[present])
    if not pieces:
        raise InputError(f"missing required column: no '<run> - {metric}' column in the W&B "
                         "export", source=source, line=1)
    return pd.concat(pieces, ignore_index=True), np.concatenate(piece_lines)


def _alias_rank(name: str, metric: str) -> int:
    tail = normalise(name.rsplit("/", 1)[-1])
    aliases = [normalise(a) for a in (metric, *ALIASES["loss"])]
    return aliases.index(tail) if tail in aliases else len(aliases)


def _read_tensorboard(path: Path, mapping: Mapping[str, str] | None,
                      metric: str) -> pd.DataFrame:
    """Scalars of every event-file folder under ``path``, one run per folder."""
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("reading TensorBoard folders needs the optional package 'tensorboard' "
                         "(pip install 'scalekit-laws[tensorboard]')", source=str(path)) from None
    folders = sorted({f.parent for f in path.rglob("events.out.tfevents.*")})
    if not folders:
        raise InputError("the folder holds no TensorBoard event files", source=str(path))
    wanted = dict(mapping or {}).get("loss", dict(mapping or {}).get(metric))
    pieces = []
    for folder in folders:
        run = path.name if folder == path else folder.relative_to(path).as_posix()
        acc = event_accumulator.EventAccumulator(  # keep repeated steps: they are errors
            str(folder), size_guidance={event_accumulator.SCALARS: 0,
                                        event_accumulator.TENSORS: 0},
            purge_orphaned_data=False)
        acc.Reload()
        series = _tensorboard_series(acc)
        role_of = {tag: _metric_role(tag, wanted, metric) for tag in series}
        ordered = dict(sorted(((t, t) for t in series), key=lambda kv: _alias_rank(kv[0], metric)))
        chosen = _pick(ordered, role_of)
        if "loss" not in chosen:
            continue
        steps, values, walls = series[chosen["loss"]]
        piece = pd.DataFrame({"run": run, "step": steps, metric: values, "wall_time": walls})
        for role in ("compute", "tokens"):
            if role in chosen:
                other = dict(zip(series[chosen[role]][0], series[chosen[role]][1]))
                piece[role] = [other.get(s, np.nan) for s in steps]
        pieces.append(piece)
    if not pieces:
        raise InputError(f"no scalar tag named {metric!r} (or an alias) in the event files",
                         source=str(path))
    return pd.concat(pieces, ignore_index=True)


def _tensorboard_series(acc) -> dict[str, tuple[list[int], list[float], list[float]]]:
    series = {}
    for tag in acc.Tags().get("scalars", []):
        events = acc.Scalars(tag)
        series[tag] = ([e.step for e in events], [float(e.value) for e in events],
                       [float(e.wall_time) for e in events])
    for tag in acc.Tags().get("tensors", []):
        from tensorboard.util import tensor_util
        events = acc.Tensors(tag)
        values = [tensor_util.make_ndarray(e.tensor_proto) for e in events]
        if tag in series or not all(v.size == 1 for v in values):
            continue
        series[tag] = ([e.step for e in events], [float(v.reshape(())) for v in values],
                       [float(e.wall_time) for e in events])
    return series
