"""The library's messages name its parameters; the CLI's name the flags that set them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalekit.errors import InputError
from scalekit.fit._plans import plan_for_compute
from scalekit.fit._engine import fit_law
from scalekit.fit._frame import prepare_fit
from scalekit_cli.app import main
from scalekit_cli.common import in_flags


def command_flags(args):
    from scalekit_cli.app import command_flags as flags

    return flags(tuple(args))

PACKAGE = Path(__file__).resolve().parents[2] / "scalekit"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def test_no_library_string_but_a_docstring_names_a_command_line_flag():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        found += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value[:60]!r}"
                  for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in docs and FLAG.search(node.value)]
    assert not found, "library text naming CLI flags:\n" + "\n".join(found)


def test_the_scan_sees_a_flag_in_a_message():
    tree = ast.parse('def f():\n    """Use --x."""\n    raise ValueError("name it with --x")\n')
    docs = _docstrings(tree)
    flagged = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str) and id(n) not in docs and FLAG.search(n.value)]
    assert flagged == ["name it with --x"]


def test_each_backquoted_parameter_an_option_sets_becomes_that_option():
    flags = command_flags(["fit"])
    assert flags["target_compute"] == "--target-compute" and flags["mapping"] == "--map"
    assert (in_flags("`x`, `target_compute`, `all_points`, `mapping`, `nope`, `shape[0]`", flags)
            == "`--x`, `--target-compute`, `--all-points`, `--map`, `nope`, `shape[0]`")
    assert command_flags(["allocate", "replay"])["budget"] == "--budget"
    assert command_flags(["law", "inference-k"])["k_max"] == "--k-max"
    assert "target_compute" not in command_flags(["forecast"])


@pytest.fixture
def steps_csv(tmp_path):
    lengths = range(3, 9)                        # runs of 3 to 8 evaluations
    step = np.concatenate([np.arange(1, n + 1) * 100 for n in lengths])
    run = np.concatenate([[f"r{n}"] * n for n in lengths])
    loss = 2.0 + 5.0 * step ** -0.5
    path = tmp_path / "curves.csv"
    pd.DataFrame({"run": run, "step": step, "loss": loss}).to_csv(path, index=False)
    return path


def test_a_message_reads_in_parameters_in_python_and_in_flags_on_the_command_line(
        steps_csv, capsys):
    frame = pd.read_csv(steps_csv)
    with pytest.raises(InputError) as library:
        prepare_fit(frame)                       # neither a law nor an x column named
    assert "`x`" in str(library.value) and "`law`" in str(library.value)
    assert "--" not in str(library.value)
    assert main(["fit", str(steps_csv), "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert "`--x`" in err and "`--law`" in err and "`x`" not in err


def test_the_plan_message_names_target_compute_or_its_flag(steps_csv, capsys):
    prepared = prepare_fit(pd.read_csv(steps_csv), x="step", all_points=True)
    result = fit_law(prepared.law, prepared.X, prepared.y)
    with pytest.raises(InputError, match="`target_compute` needs a law of params and tokens"):
        plan_for_compute(result, 1e20)
    assert main(["fit", str(steps_csv), "--x", "step", "--all-points", "--bootstrap", "0",
                 "--target-compute", "1e20"]) == 2
    assert "error: `--target-compute` needs a law of params and tokens" in capsys.readouterr().err


def test_a_note_of_the_library_is_printed_with_the_flag(steps_csv, capsys):
    prepared = prepare_fit(pd.read_csv(steps_csv), x="step")
    assert any("`all_points` uses all points" in note for note in prepared.notes)
    assert main(["fit", str(steps_csv), "--x", "step", "--bootstrap", "0", "--verbose"]) == 0
    captured = capsys.readouterr()
    assert "`--all-points` uses all points" in captured.out + captured.err
    assert "`all_points`" not in captured.out + captured.err
