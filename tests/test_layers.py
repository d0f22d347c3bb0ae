"""The package layers of docs/DESIGN.md, checked on every import statement of scalekit/ and cli/.

The allowed edges are read from the table "Packages and their rooms" in
docs/DESIGN.md, so the document and the code cannot drift apart. Every
``import`` / ``from ... import`` is read with :mod:`ast`, lazy ones inside
functions included.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "DESIGN.md"

def _design_table() -> tuple[set[str], dict[str, set[str] | None]]:
    """Foundation module names and, per package, the packages it may import (None: any)."""
    rows = [line for line in DESIGN.read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith("| place")]
    foundation: set[str] = set()
    allowed: dict[str, set[str] | None] = {}
    for row in rows:
        place, _, may = (cell.strip() for cell in row.strip("|").split("|"))
        if place.startswith("foundation"):
            foundation = {Path(name).stem for name in re.findall(r"`([^`]+\.py)`", place)}
            continue
        package = re.fullmatch(r"`(?:scalekit/)?(\w+)/`", place).group(1)
        if may.startswith("any") or may.startswith("the public API"):
            allowed[package] = None
        elif may == "—":
            allowed[package] = set()
        else:
            allowed[package] = {name.strip() for name in may.split(",")}
    return foundation, allowed


FOUNDATION, ALLOWED = _design_table()


def _unit(path: Path) -> str:
    """The layer a source file belongs to: a package name, or ``foundation``."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] == "cli":
        return "cli"
    return "foundation" if len(parts) == 2 else parts[1]


def _target(module: str) -> str | None:
    """The layer an imported module belongs to (None: not ours)."""
    parts = module.split(".")
    if parts[0] == "cli":
        return "cli"
    if parts[0] != "scalekit":
        return None
    if len(parts) > 1 and parts[1] in ALLOWED:
        return parts[1]
    return "foundation"  # a foundation module, or a name of the top-level package


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, with its line, relative imports resolved."""
    package = list(path.relative_to(ROOT).parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            out.append((module, node.lineno))
            if node.module is None or node.module == "scalekit":
                # ``from scalekit import fit`` imports the subpackage
                prefix = module
                out += [(f"{prefix}.{alias.name}", node.lineno) for alias in node.names]
            else:
                # ``from scalekit.fit import _engine`` imports a private module
                out += [(f"{module}.{alias.name}", node.lineno) for alias in node.names
                        if _is_private(alias.name)]
    return out


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


SOURCES = sorted((ROOT / "scalekit").rglob("*.py")) + sorted((ROOT / "cli").rglob("*.py"))


def _edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in SOURCES:
        source = _unit(path)
        for module, line in _imports(path):
            target = _target(module)
            if target is not None and target != source:
                edges[(source, target)].append(f"{path.relative_to(ROOT)}:{line} ({module})")
    return edges


def test_the_design_table_names_every_package():
    packages = {p.name for p in (ROOT / "scalekit").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in (ROOT / "scalekit").glob("*.py")}
    assert packages - set(ALLOWED) == set(), "packages without a row in docs/DESIGN.md"
    assert modules == FOUNDATION, "top-level modules not in the foundation row (or missing): " \
        + ", ".join(sorted(modules ^ FOUNDATION))


def test_every_import_follows_the_table():
    wrong = []
    for (source, target), where in sorted(_edges().items()):
        if target == "foundation":
            continue
        allowed = ALLOWED.get(source, set()) if source != "foundation" else set()
        if allowed is not None and target not in allowed:
            wrong.append(f"{source} -> {target}: {', '.join(where)}")
    assert not wrong, "imports the layer table of docs/DESIGN.md does not allow:\n" + \
        "\n".join(wrong)


def test_foundation_modules_import_only_foundation_modules():
    wrong = [f"-> {target}: {', '.join(where)}" for (source, target), where in _edges().items()
             if source == "foundation" and target != "foundation"]
    assert not wrong, "\n".join(wrong)


def test_no_cycles_between_packages():
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in _edges():
        graph[source].add(target)
    cycles, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "package cycles:\n" + "\n".join(cycles)


@functools.cache
def _public_below_a_face() -> tuple[frozenset[str], frozenset[str]]:
    """The modules below a package that stay public (plot modules, adapters) and the packages
    whose modules do (task plugins): the one list, in tools/privatise.py."""
    tool_path = Path(__file__).resolve().parents[1] / "tools" / "privatise.py"
    spec = importlib.util.spec_from_file_location("privatise", tool_path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return frozenset(tool.PUBLIC), frozenset(tool.PUBLIC_PACKAGES)


def _not_a_face(module: str) -> bool:
    """Whether ``module`` is deeper than a face: ``scalekit``, ``scalekit.<package>``, the
    foundation modules ``scalekit.<module>`` of docs/DESIGN.md and the public modules of
    :func:`_public_below_a_face` are faces."""
    parts = module.split(".")
    if parts[0] != "scalekit" or len(parts) <= 2:
        return False
    modules, packages = _public_below_a_face()
    return module not in modules and not any(module == p or module.startswith(p + ".")
                                             for p in packages)


def test_the_cli_imports_only_the_faces():
    wrong = [f"{path.relative_to(ROOT)}:{line} ({module})" for path in SOURCES
             if _unit(path) == "cli" for module, line in _imports(path) if _not_a_face(module)]
    assert not wrong, "the CLI imports below a package face (python tools/privatise.py faces " \
        "rewrites such imports):\n" + "\n".join(wrong)


def test_no_package_imports_another_packages_private_module():
    wrong = [f"{path.relative_to(ROOT)}:{line} ({module})" for path in SOURCES
             for module, line in _imports(path)
             if module.startswith("scalekit.")   # other libraries' private modules are theirs
             and any(_is_private(part) for part in module.split(".")[1:])
             and _target(module) != _unit(path)]
    assert not wrong, "private modules imported from another package:\n" + "\n".join(wrong)


@pytest.mark.parametrize("library, rooms", [("torch", {"train"}), ("rich", {"report", "cli"}),
                                            ("typer", {"cli"})])
def test_heavy_and_terminal_libraries_stay_in_their_rooms(library, rooms):
    wrong = [f"{path.relative_to(ROOT)}:{line}" for path in SOURCES
             for module, line in _imports(path)
             if module.split(".")[0] == library and _unit(path) not in rooms]
    assert not wrong, f"{library} imported outside {sorted(rooms)}: " + ", ".join(wrong)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    package = tmp_path / "scalekit" / "laws"
    package.mkdir(parents=True)
    (package / "x.py").write_text("def f():\n    from ..fit import engine\n    import torch\n")
    found = _imports(package / "x.py")
    assert ("scalekit.fit", 2) in found and ("torch", 3) in found
    assert _target("scalekit.fit._engine") == "fit" and _unit(package / "x.py") == "laws"


def test_the_checker_sees_private_modules_and_imports_below_a_face(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "cli").mkdir()
    source = tmp_path / "cli" / "x.py"
    source.write_text("from scalekit.fit import _engine, fit_law\nfrom scalekit.fit._frame import f\n"
                      "from scalekit import serialise\n")
    found = _imports(source)
    assert ("scalekit.fit._engine", 1) in found and ("scalekit.fit.fit_law", 1) not in found
    assert [m for m, _ in found if _not_a_face(m)] == ["scalekit.fit._engine", "scalekit.fit._frame"]
    assert _target("scalekit.fit._engine") == "fit" != _unit(source)


FACES = ["scalekit"] + sorted(".".join(p.parent.relative_to(ROOT).parts)
                              for p in (ROOT / "scalekit").rglob("*/__init__.py"))


@pytest.mark.parametrize("face", FACES)
def test_every_face_declares_its_names_and_each_resolves(face):
    module = importlib.import_module(face)
    names = module.__all__
    assert len(set(names)) == len(names), "a name listed twice"
    missing = [name for name in names if not hasattr(module, name)]  # lazy ones load here
    assert not missing, f"{face}.__all__ names what it cannot give: {missing}"
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018 (a lazy face refuses what its table lacks)
