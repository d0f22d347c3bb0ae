"""Help text shows no type hint on a flag that takes no value (``--quiet <bool>`` read as if
``--quiet`` wanted a value), nor a Python type on one that takes several (``<list[str]>``)."""

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
    commands = [(), *_commands()]                 # the root's help, then every command's
    assert len(commands) >= 16
    for words in commands:
        assert main([*words, "--help"]) == 0
        out = capsys.readouterr().out
        assert "--help" in out and "--help -h <bool>" not in " ".join(out.split()), words
        assert [line for line in out.splitlines() if "<bool>" in line] == [], words
        assert [line for line in out.splitlines() if "<list[" in line] == [], words
