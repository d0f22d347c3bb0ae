"""Help text shows no type hint on a flag that takes no value (``--quiet <bool>`` read as if
``--quiet`` wanted a value)."""

from __future__ import annotations

import typer

from scalekit_cli.app import app, main


def _commands(command=None, words=()):
    command = command or typer.main.get_command(app)
    if not hasattr(command, "commands"):
        yield words
        return
    for name, sub in command.commands.items():
        yield from _commands(sub, (*words, name))


def test_no_flag_shows_a_bool_hint_in_any_help(capsys):
    commands = list(_commands())
    assert len(commands) >= 15
    for words in commands:
        assert main([*words, "--help"]) == 0
        lines = [line for line in capsys.readouterr().out.splitlines()
                 if "<bool>" in line and "--help" not in line]   # typer's own --help aside
        assert lines == [], words
