"""The CLI keeps no mutable state at module level: what one run shares (its flags, --quiet,
what Ctrl-C keeps) lives on click's context object, `scalekit_cli.options.Invocation`."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MUTATORS = {"append", "extend", "insert", "pop", "popitem", "clear", "update", "add",
            "remove", "discard", "setdefault"}


def _mutated_module_names(source: str) -> list[str]:
    """Module-level names that some code rebinds with `global` or mutates in place."""
    tree = ast.parse(source)
    names = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
             if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found += [n for n in node.names if n in names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name)
              and node.func.value.id in names):
            found.append(node.func.value.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [t.value.id for t in targets if isinstance(t, ast.Subscript)
                      and isinstance(t.value, ast.Name) and t.value.id in names]
    return sorted(set(found))


@pytest.mark.parametrize("path", sorted((ROOT / "cli").glob("*.py")), ids=lambda p: p.name)
def test_no_cli_module_mutates_module_level_state(path):
    assert _mutated_module_names(path.read_text(encoding="utf-8")) == []


def test_the_check_sees_the_old_shapes():
    old = ("_KEPT = []\n_FLAGS = {}\n_QUIET = {'now': False}\n_N = 0\n"
           "def f(k):\n    _KEPT[:] = [k]\n    _FLAGS.update(a=1)\n    _QUIET['now'] = True\n"
           "def g():\n    global _N\n    _N += 1\n")
    assert _mutated_module_names(old) == ["_FLAGS", "_KEPT", "_N", "_QUIET"]
