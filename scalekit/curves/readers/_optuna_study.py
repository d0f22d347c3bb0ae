"""Optuna studies: each trial's intermediate values are its curve.

A study in an Optuna storage (``sqlite:///optuna.db``, or any URL Optuna takes).
Each trial with intermediate values is a run named ``<study>/trial-<number>``: the
values reported with ``trial.report(value, step)`` are its curve, its params and
user attributes its attributes, and its state and final value configuration.
The curve's metric is the study's objective (its name where the study set one
with ``set_metric_names``, else ``value``). Needs the optional package ``optuna``.
"""

from __future__ import annotations

from scalekit.curves.readers._run_records import RunRecord
from scalekit.errors import InputError


def read_optuna_records(storage: str, *, study: str | None = None,
                        source: str | None = None) -> tuple[list[RunRecord], list[str], str]:
    """The trials of ``study`` in ``storage``, notes, and the objective's name."""
    source = source or storage
    try:
        import optuna
    except ImportError:  # pragma: no cover - depends on the environment
        raise InputError("reading Optuna studies needs the optional package 'optuna' "
                         "(pip install 'scalekit-laws[optuna]')", source=source) from None
    names = optuna.get_all_study_names(storage=storage)
    if study is None:
        if len(names) != 1:
            raise InputError(f"the storage holds {len(names)} studies; choose one with "
                             "`study` (studies: " + ", ".join(names) + ")", source=source)
        study = names[0]
    elif study not in names:
        raise InputError(f"no study {study!r}; studies: " + ", ".join(names), source=source)
    loaded = optuna.load_study(study_name=study, storage=storage)
    objective = (loaded.metric_names or ["value"])[0]
    direction = loaded.directions[0].name.lower()
    records, empty = [], 0
    for trial in loaded.get_trials(deepcopy=False):
        steps = sorted(trial.intermediate_values)
        if not steps:
            empty += 1
            continue
        attrs = {**trial.user_attrs, **trial.params, "state": trial.state.name.lower()}
        if trial.value is not None:
            attrs["final_value"] = trial.value
        records.append(RunRecord(f"{study}/trial-{trial.number}", {objective: (
            steps, [trial.intermediate_values[s] for s in steps], None)}, attrs))
    if not records:
        raise InputError(f"no trial of study {study!r} reported intermediate values",
                         source=source)
    notes = [f"study {study!r}: {len(records)} trials with intermediate values "
             f"(objective {objective!r}, direction {direction})"]
    if empty:
        notes.append(f"{empty} trials without intermediate values left out")
    return records, notes, objective
