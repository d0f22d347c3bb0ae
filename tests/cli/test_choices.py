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
    for expected in [("isoflop", "--in"), ("isoflop", "--approach"), ("fit", "--loss"),
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
