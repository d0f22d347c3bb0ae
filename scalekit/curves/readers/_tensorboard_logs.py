"""TensorBoard logs: a folder of event files, one run per folder that holds them.

Scalars (and one-value tensors) are the series; hyper-parameters logged with
the hparams plugin (its session start info, as written by
``SummaryWriter.add_hparams`` or ``tensorboard.plugins.hparams``) are the run's
attributes. ``add_hparams`` writes them into a sub-folder of the run's folder,
with the metric values it was given; such a sub-folder holding nothing but
hparams and those values gives its hyper-parameters to the run above it (and
those values too, when the run logged nothing else: a sweep of final values).
Needs the optional package ``tensorboard``.
"""

from __future__ import annotations

from pathlib import Path

from scalekit.curves.readers._run_records import RunRecord
from scalekit.errors import InputError

_INSTALL = "pip install 'scalekit-laws[tensorboard]'"


def read_tensorboard_records(path: Path) -> tuple[list[RunRecord], list[str]]:
    """The runs under ``path`` and notes on what was merged."""
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("reading TensorBoard folders needs the optional package 'tensorboard' "
                         f"({_INSTALL})", source=str(path)) from None
    folders = sorted({f.parent for f in path.rglob("events.out.tfevents.*")})
    if not folders:
        raise InputError("the folder holds no TensorBoard event files", source=str(path))
    records: dict[Path, RunRecord] = {}
    hparams_only: dict[Path, RunRecord] = {}
    for folder in folders:
        acc = event_accumulator.EventAccumulator(  # keep repeated steps: they are errors
            str(folder), size_guidance={event_accumulator.SCALARS: 0,
                                        event_accumulator.TENSORS: 0},
            purge_orphaned_data=False)
        acc.Reload()
        name = path.name if folder == path else folder.relative_to(path).as_posix()
        record = RunRecord(name, _series(acc), _hparams(acc))
        if record.attributes and folder.parent in records and all(
                tag.startswith("hparam") for tag in record.series):
            hparams_only[folder] = record
        else:
            records[folder] = record
    notes = []
    for folder, child in hparams_only.items():
        parent = records[folder.parent]
        parent.attributes = {**child.attributes, **parent.attributes}
        if not parent.series:  # a run that logged only add_hparams: its values are the curve
            parent.series = child.series
        notes.append(f"hparams of {folder.relative_to(path).as_posix()!r} (add_hparams) read as "
                     f"attributes of run {parent.name!r}")
    return list(records.values()), notes


def _series(acc) -> dict[str, tuple[list[int], list[float], list[float]]]:
    """Scalar tags, and tensor tags holding one number per step."""
    from tensorboard.util import tensor_util

    series = {}
    for tag in acc.Tags().get("scalars", []):
        events = acc.Scalars(tag)
        series[tag] = ([e.step for e in events], [float(e.value) for e in events],
                       [float(e.wall_time) for e in events])
    for tag in acc.Tags().get("tensors", []):
        if tag in series or tag.startswith("_hparams_/"):
            continue
        events = acc.Tensors(tag)
        values = [tensor_util.make_ndarray(e.tensor_proto) for e in events]
        if not all(v.size == 1 and v.dtype.kind in "fiu" for v in values):
            continue
        series[tag] = ([e.step for e in events], [float(v.reshape(())) for v in values],
                       [float(e.wall_time) for e in events])
    return series


def _hparams(acc) -> dict[str, object]:
    """The hyper-parameters of the hparams plugin's session start info (empty if none)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    try:
        content = acc.PluginTagToContent("hparams")
    except KeyError:  # no hparams logged in this folder
        return {}
    out: dict[str, object] = {}
    for blob in content.values():
        data = plugin_data_pb2.HParamsPluginData.FromString(blob)
        if data.WhichOneof("data") != "session_start_info":
            continue
        for key, value in data.session_start_info.hparams.items():
            kind = value.WhichOneof("kind")
            out[key] = {"number_value": value.number_value, "string_value": value.string_value,
                        "bool_value": value.bool_value}.get(kind)
    return out
