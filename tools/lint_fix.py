"""Apply the lint fixes of the ruff rule set in pyproject.toml; re-runnable on any tree.

1. ``ruff check --fix``: the safe fixes (UP045 ``X | None``, UP037 unquoted annotations,
   SIM117, SIM300, F401). Ruff's unsafe fixes are not taken: for B905 it would write
   ``strict=False``, the opposite of the rule's point.
2. B905: every bare ``zip(...)`` gets ``strict=True`` (the zipped sequences must be as long
   as each other; a mismatch is a bug that ``zip`` would hide), except the pairs of
   neighbours ``zip(a, a[k:])``, which are one shorter by design and get ``strict=False``.
   Where ``strict=True`` would make the line too long it goes on the next line, aligned.
3. ``ruff check`` again: what is left needs a person (each site was reviewed by hand the
   first time: see the commit "lint: hand fixes").

Run from the repository root: ``python tools/lint_fix.py``; exit status is ruff's.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 110


def ruff(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["ruff", "check", *args], cwd=ROOT, capture_output=True, text=True,
                          check=check)


def _neighbours(call: ast.Call) -> bool:
    """``zip(a, a[k:])`` (or the reverse): a sequence with itself shifted."""
    if len(call.args) != 2:
        return False
    for x, y in (call.args, call.args[::-1]):
        if isinstance(y, ast.Subscript) and isinstance(y.slice, ast.Slice) \
                and y.slice.lower is not None and y.slice.upper is None \
                and ast.dump(y.value) == ast.dump(x):
            return True
    return False


def strict_zips() -> int:
    """Add ``strict=`` to every zip ruff reports under B905; the number of calls changed."""
    found = json.loads(ruff("--select", "B905", "--output-format", "json", "--exit-zero").stdout)
    sites: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for item in found:
        sites[item["filename"]].add((item["location"]["row"], item["location"]["column"] - 1))
    changed = 0
    for filename, where in sites.items():
        path = Path(filename)
        if path.suffix != ".py":
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        calls = [node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
                 and (node.lineno, node.col_offset) in where and not node.keywords]
        # the last call first, so earlier positions stay valid (nested zips: inner one last)
        for node in sorted(calls, key=lambda n: (n.end_lineno, n.end_col_offset), reverse=True):
            strict = "strict=False" if _neighbours(node) else "strict=True"
            row, col = node.end_lineno - 1, node.end_col_offset - 1  # the closing parenthesis
            line = lines[row]
            assert line[col] == ")", (filename, node.lineno)
            head = line[:col].rstrip()
            sep = "" if head.endswith(",") else ","
            joined = f"{head}{sep} {strict}{line[col:]}"
            if len(joined.rstrip("\n")) > WIDTH:
                first = lines[node.lineno - 1]
                indent = " " * (len(first[:node.col_offset].expandtabs()) + len("zip("))
                joined = f"{head}{sep}\n{indent}{strict}{line[col:]}"
            lines[row] = joined
            changed += 1
        path.write_text("".join(lines), encoding="utf-8")
    return changed


def main() -> int:
    ruff("--fix")
    print(f"B905: strict= added to {strict_zips()} zip calls")
    result = ruff("--statistics")
    print(result.stdout.rstrip() or "ruff: all checks passed")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
