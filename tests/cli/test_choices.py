"""Every option with a fixed set of values rejects anything else: exit 2, one line, the
Optuna-style sentence. The options are found by walking the Typer app, so a new one is tried
as soon as it is declared with ``choice_option``."""

from __future__ import annotations

import pytest
import typer

from scalekit_cli.app import app, main

BOGUS = "no-such-choice"


def _choice_params():
    """(command words, param, declared choices) of every choice option of the app."""
    found = []

    def walk(command, words):
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*words, name])
        for param in getattr(command, "params", []):
            choices = getattr(param.callback, "choices", None)
            if choices is not None:
                found.append((words, param, choices() if callable(choices) else choices))

    walk(typer.main.get_command(app), [])
    return found


CHOICES = _choice_params()


def test_the_walk_finds_the_choice_options_of_every_command():
    flags = {(" ".join(words), (param.opts or [param.name])[0]) for words, param, _ in CHOICES}
    assert len(flags) >= 25
    for expected in [("isoflop", "--in"), ("isoflop", "--approach"), ("fit", "--objective"),
                     ("train", "--device"), ("train", "task"), ("allocate run", "task"),
                     ("allocate replay", "--policy"), ("store import", "--format"),
                     ("forecast", "--method"), ("plan", "--resample")]:
        assert expected in flags


@pytest.mark.parametrize("words, param, choices", CHOICES,
                         ids=[" ".join(w) + " " + (p.opts or [p.name])[0] for w, p, _ in CHOICES])
def test_a_value_outside_the_choices_exits_2_with_one_sentence(words, param, choices, capsys):
    assert BOGUS not in choices and len(choices) >= 2
    given = [BOGUS] if param.param_type_name == "argument" else [param.opts[0], BOGUS]
    code = main([*words, *given])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    flag = "task" if param.param_type_name == "argument" else param.opts[0]
    assert line.startswith(f"error: The value of `{flag}` is '{BOGUS}', but must be ")
    assert all(repr(str(c)) in line for c in choices)


def _library_lists() -> dict:
    """Every choice option's values as the library names them, by (command, flag)."""
    from scalekit.allocate._forecasters import SURROGATES
    from scalekit.allocate._policies import ALLOCATION_POLICIES
    from scalekit.allocate._sweep import RESOURCES
    from scalekit.curves.readers import DUPLICATES, FORMATS
    from scalekit.curves._writers import TABLE_FORMATS
    from scalekit.design._estimator import SCALES
    from scalekit.design._methods import METHODS as DESIGN_METHODS
    from scalekit.executors import EXECUTORS
    from scalekit.fit._engine import RESAMPLE
    from scalekit.fit._robust import LOSSES
    from scalekit.isoflop import FRONTIER_LAWS
    from scalekit.isoflop._analysis import NAMES
    from scalekit.isoflop._approach2 import PROFILES
    from scalekit.isoflop._points import CONVENTIONS
    from scalekit.planners._hparams import HPARAMS_LAW_FORMS, HPARAMS_SURFACES
    from scalekit.report._tables import FORMATS as PRINT_FORMATS
    from scalekit.surrogates._forecast import METHODS
    from scalekit.train._config import DEVICES, DROPOUT_SCHEDULES, LR_SCHEDULES, PRECISIONS
    from scalekit.train.tasks import available_tasks

    lists = {("allocate run", "task"): ("synthetic", *available_tasks()),
             ("allocate replay", "--policy"): (*ALLOCATION_POLICIES, "uniform"),
             ("allocate run", "--policy"): ALLOCATION_POLICIES,
             ("allocate plan", "--policy"): ALLOCATION_POLICIES,
             ("allocate run", "--executor"): EXECUTORS,
             ("forecast", "--method"): (*METHODS, "all", "multipower"),
             ("forecast", "--reference"): METHODS,
             ("isoflop", "--approach"): (*NAMES, "all"), ("isoflop", "--in"): PROFILES,
             ("isoflop", "--convention"): CONVENTIONS,
             ("compare", "--law"): FRONTIER_LAWS, ("compare", "--convention"): CONVENTIONS,
             ("compare", "--variant-convention"): CONVENTIONS,
             ("store import", "--format"): FORMATS, ("store export", "--format"): TABLE_FORMATS,
             ("train", "task"): tuple(available_tasks()),
             ("train", "--dropout-schedules"): DROPOUT_SCHEDULES,
             ("train", "--lr-schedule"): LR_SCHEDULES, ("train", "--device"): DEVICES,
             ("train", "--executor"): EXECUTORS, ("train", "--precision"): PRECISIONS,
             ("design", "--submit"): EXECUTORS, ("design", "--task"): tuple(available_tasks()),
             ("design", "--method"): DESIGN_METHODS, ("design", "--scale"): SCALES,
             ("law hparams", "--surface"): HPARAMS_SURFACES,
             ("law hparams", "--lr-law"): HPARAMS_LAW_FORMS,
             ("law hparams", "--batch-law"): HPARAMS_LAW_FORMS}
    by_flag = {"--resource": RESOURCES, "--surrogate": SURROGATES, "--duplicates": DUPLICATES,
               "--format": PRINT_FORMATS, "--objective": LOSSES, "--resample": RESAMPLE}
    for words, param, _ in CHOICES:
        key = (" ".join(words), (param.opts or [param.name])[0])
        if key not in lists and key[1] in by_flag:
            lists[key] = by_flag[key[1]]
    return lists


@pytest.mark.parametrize("words, param, choices", CHOICES,
                         ids=[" ".join(w) + " " + (p.opts or [p.name])[0] for w, p, _ in CHOICES])
def test_every_choice_list_is_the_library_s(words, param, choices):
    """The CLI reads each list from the library (a callable, looked up when the option is
    given) and it is the library's list: a copy that drifts, or a new option whose list the
    library does not name, fails here."""
    key = (" ".join(words), (param.opts or [param.name])[0])
    assert callable(param.callback.choices), f"{key}: a literal list; import the library's"
    assert tuple(choices) == tuple(_library_lists()[key])
