"""W&B offline runs: ``wandb/offline-run-*`` folders and their ``.wandb`` transaction logs.

A ``.wandb`` file is a log of records (LevelDB log framing: 32 KiB blocks of
checksummed chunks) of wandb's own protobuf type ``wandb_internal_pb2.Record``,
decoded here with the wandb package's definitions. History rows are the series
(their ``_step`` the step, ``_runtime`` the wall time, ``tokens`` and other
series named like compute or tokens those columns); the run's config is its
attributes. A metric logged against a custom x-axis (``define_metric(...,
step_metric=...)``) whose axis is named like a step counts its steps on it.
Needs the optional package ``wandb``.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from scalekit.curves.readers._run_records import RunRecord
from scalekit.curves._schema import series_role
from scalekit.errors import InputError

_MAGIC = b":W&B\xe1\xbe"
_BLOCK = 32 * 1024
_HEADER = 7  # checksum (4), length (2), chunk type (1)
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def find_wandb_logs(path: Path) -> list[Path]:
    """The ``.wandb`` files under ``path`` (a run folder, a ``wandb`` folder, or one file)."""
    if path.is_file():
        return [path]
    return sorted(path.rglob("*.wandb"))


def read_wandb_records(path: Path) -> tuple[list[RunRecord], list[str]]:
    """One record per ``.wandb`` file under ``path``, and notes."""
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("reading W&B offline runs needs the optional package 'wandb' "
                         "(pip install 'scalekit-laws[wandb]')", source=str(path)) from None
    files = find_wandb_logs(path)
    if not files:
        raise InputError("the folder holds no W&B run (no offline-run-*/run-*.wandb file)",
                         source=str(path))
    records, notes, names = [], [], set()
    for file in files:
        record, axes = _read_run(file, wandb_internal_pb2)
        if record.name in names:  # two runs with one display name: add the run id
            record.name = f"{record.name}-{file.stem.removeprefix('run-')}"
        names.add(record.name)
        records.append(record)
        notes += [f"run {record.name!r}: {metric!r} logged against {axis!r}" for metric, axis
                  in axes.items()]
    return records, notes


def _read_run(file: Path, pb) -> tuple[RunRecord, dict[str, str]]:
    """The run of one ``.wandb`` file and the custom x-axes of its metrics."""
    name, config, rows, axes = file.stem.removeprefix("run-"), {}, [], {}
    for blob in _chunks(file):
        record = pb.Record()
        record.ParseFromString(blob)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            name = record.run.display_name or record.run.run_id or name
            config.update(_items(record.run.config.update))
        elif kind == "config":
            config.update(_items(record.config.update))
        elif kind == "history":
            rows.append(_items(record.history.item))
        elif kind == "metric" and record.metric.step_metric:
            axes[record.metric.name] = record.metric.step_metric
    config.pop("_wandb", None)
    on_steps = {m: a for m, a in axes.items() if series_role(a) == "step"}
    return RunRecord(name, _series(rows, on_steps), config, on_steps), axes


def _items(items) -> dict[str, object]:
    """Key/JSON-value items (config updates, history items) as a dict."""
    out = {}
    for item in items:
        key = "/".join(item.nested_key) if item.nested_key else item.key
        out[key] = json.loads(item.value_json)
    return out


def _series(rows: list[dict], axes: dict[str, str]) -> dict[str, tuple]:
    """Every numeric history key as (steps, values, wall times); the step is ``_step``, or
    the key's own axis in ``axes``."""
    series: dict[str, tuple[list, list, list]] = {}
    for row in rows:
        for key, value in row.items():
            if key in ("_step", "_timestamp") or isinstance(value, bool) or not isinstance(
                    value, (int, float)):
                continue
            step = row.get(axes.get(key, "_step"))
            if step is None:
                continue
            steps, values, walls = series.setdefault(key, ([], [], []))
            steps.append(int(step))
            values.append(float(value))
            walls.append(float(row.get("_timestamp", float("nan"))))
    return series


def _chunks(file: Path):
    """The records of a LevelDB-framed log, checksums checked."""
    data = file.read_bytes()
    if not data.startswith(_MAGIC):
        raise InputError("not a W&B transaction log (.wandb file)", source=str(file))
    position, pending = _HEADER, b""
    while position + _HEADER <= len(data):
        if _BLOCK - position % _BLOCK < _HEADER:  # a block's tail too short for a header
            position += _BLOCK - position % _BLOCK
            continue
        checksum, length, kind = struct.unpack("<IHB", data[position:position + _HEADER])
        chunk = data[position + _HEADER:position + _HEADER + length]
        position += _HEADER + length
        if kind == 0 and length == 0:  # zero padding at the end of a block
            continue
        if len(chunk) < length or zlib.crc32(bytes([kind]) + chunk) & 0xFFFFFFFF != checksum:
            break  # a run still being written, or cut off: keep what came before
        if kind == _FULL:
            yield chunk
        elif kind == _FIRST:
            pending = chunk
        elif kind == _MIDDLE:
            pending += chunk
        elif kind == _LAST:
            yield pending + chunk
            pending = b""
