"""Put scalekit's implementation modules behind the package faces; re-runnable on any tree.

Two steps, each idempotent (a second run changes nothing):

``faces``
    Every ``from scalekit.<pkg>.<module> import name`` in ``cli/`` and in a package other
    than ``<pkg>`` becomes ``from scalekit.<pkg> import name`` when the face re-exports that
    very object (read from the face's own import statements and its ``_LAZY`` table); the
    CLI's ``library_choices("scalekit.<pkg>.<module>", "NAME")`` strings likewise. What a
    face lacks is listed, and the step exits 1: add the name to the face and run again.
``rename``
    ``git mv`` every implementation module ``scalekit/<pkg>/x.py`` to ``_x.py`` (the faces,
    the modules named in :data:`PUBLIC` and the packages in :data:`PUBLIC_PACKAGES` stay),
    then rewrites every reference in the tracked text files: dotted names
    (``scalekit.fit.engine``, in code, mock/monkeypatch strings, docs and notebooks), paths
    (``scalekit/fit/engine.py``, ``fit/engine.py``), relative imports (``from .engine``,
    ``from . import engine``) and ``from scalekit.fit import engine``. In Markdown,
    ``scalekit.fit.engine.fit_law`` becomes ``scalekit.fit.fit_law`` where the face gives it.

Run from the repository root: ``python tools/privatise.py faces rename`` (``--dry-run``
lists what each step would change and changes nothing).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Modules that stay public besides the faces: the plot modules and Optuna/Ray adapters that the
#: README's "Public surface" names (ray_commit: the integrations face documents it).
PUBLIC = {
    "scalekit.report.fit_plots", "scalekit.report.isoflop_plots", "scalekit.report.forecast_plots",
    "scalekit.report.allocate_plots", "scalekit.report.law_plots", "scalekit.report.task_plots",
    "scalekit.report.schedule_plots", "scalekit.report.design_plot",
    "scalekit.integrations.optuna", "scalekit.integrations.ray_tune",
    "scalekit.integrations.ray_commit",
}
#: Packages whose modules are plugins loaded by name (``get_task("char_lm")``).
PUBLIC_PACKAGES = {"scalekit.train.tasks"}
TEXT_SUFFIXES = {".py", ".md", ".ipynb", ".toml", ".txt", ".rst", ".cfg"}
WIDTH = 110   # ruff's line length (pyproject.toml)


def dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def packages() -> list[Path]:
    """Every package folder under scalekit/ (the top-level package excluded)."""
    return sorted(p.parent for p in (ROOT / "scalekit").rglob("*/__init__.py"))


def renamed_modules() -> dict[str, Path]:
    """Public dotted name -> the module's file, for every module that is or becomes private."""
    out = {}
    for package in packages():
        if dotted(package) in PUBLIC_PACKAGES:
            continue
        for path in sorted(package.glob("*.py")):
            stem = path.stem
            if stem == "__init__":
                continue
            public = stem.lstrip("_")
            if stem.startswith("_") and (package / f"{public}.py").exists():
                continue
            name = f"{dotted(package)}.{public}"
            if name not in PUBLIC:
                out[name] = path
    return out


def _public_module(module: str) -> str:
    """``scalekit.fit._engine`` -> ``scalekit.fit.engine``."""
    *head, last = module.split(".")
    return ".".join([*head, last.lstrip("_")])


def face_exports(package: str) -> tuple[dict[tuple[str, str], str], set[str]]:
    """What the face of ``package`` re-exports: ``(module, name) -> face name``, and all the
    names the face binds (imports, ``_LAZY`` keys, definitions)."""
    path = ROOT / Path(*package.split(".")) / "__init__.py"
    if not path.exists():
        return {}, set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exports, bound = {}, set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                exports[(_public_module(node.module), alias.name)] = alias.asname or alias.name
                bound.add(alias.asname or alias.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            bound.update(names)
            if "_LAZY" in names and isinstance(node.value, ast.Dict):
                for key, value in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                        exports[(_public_module(value.value), key.value)] = key.value
                        bound.add(key.value)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return exports, bound


def tracked(suffixes: set[str]) -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    me = Path(__file__).resolve()
    return [ROOT / n for n in names if n and Path(n).suffix in suffixes
            and (ROOT / n).is_file() and (ROOT / n).resolve() != me]


# ---------------------------------------------------------------------------- faces
def _unit(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return "cli" if parts[0] == "cli" else (parts[1] if len(parts) > 2 else "")


def _import_text(indent: str, module: str, names: list[str]) -> str:
    line = f"from {module} import {', '.join(names)}"
    if len(indent) + len(line) <= WIDTH:
        return line
    head = f"from {module} import ("
    lines, current = [], head
    for i, name in enumerate(names):
        piece = name + (", " if i < len(names) - 1 else ")")
        if len(indent) + len(current) + len(piece.rstrip()) > WIDTH and current.strip() != head.strip():
            lines.append(current.rstrip())
            current = indent + " " * len(head) + piece
        else:
            current += piece
    lines.append(current)
    return "\n".join(lines)


def faces_step(dry_run: bool = False) -> int:
    """Rewrite cross-package and CLI imports of implementation modules to the faces (with
    ``dry_run``, list the files it would rewrite)."""
    cache: dict[str, tuple[dict, set]] = {}
    missing: list[str] = []
    sources = sorted((ROOT / "scalekit").rglob("*.py")) + sorted((ROOT / "cli").rglob("*.py"))
    for path in sources:
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        unit = _unit(path)
        edits = []
        for node in ast.walk(ast.parse(text)):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            parts = node.module.split(".")
            if parts[0] != "scalekit" or len(parts) < 3 or parts[1] == unit \
                    or not (ROOT / "scalekit" / parts[1] / "__init__.py").exists():
                continue
            face = f"scalekit.{parts[1]}"
            exports, _ = cache.setdefault(face, face_exports(face))
            names, ok = [], True
            for alias in node.names:
                exported = exports.get((_public_module(node.module), alias.name))
                if exported is None:
                    missing.append(f"{face}: {alias.name} (from {node.module}, "
                                   f"{path.relative_to(ROOT)}:{node.lineno})")
                    ok = False
                    continue
                local = alias.asname or alias.name
                names.append(exported if exported == local else f"{exported} as {local}")
            if ok:
                edits.append((node, face, names))
        for node, face, names in sorted(edits, key=lambda e: e[0].lineno, reverse=True):
            first = lines[node.lineno - 1]
            indent = first[:node.col_offset]
            last = lines[node.end_lineno - 1]
            new = indent + _import_text(indent, face, names) + last[node.end_col_offset:]
            lines[node.lineno - 1:node.end_lineno] = [new]
        new_text = "".join(lines)
        if unit == "cli":
            new_text = _face_strings(new_text, cache, missing, path)
        if new_text != text:
            if dry_run:
                print(f"would rewrite {path.relative_to(ROOT)}")
            else:
                path.write_text(new_text, encoding="utf-8")
    for line in sorted(set(missing)):
        print(f"missing on the face {line}")
    return 1 if missing else 0


def _face_strings(text: str, cache: dict, missing: list[str], path: Path) -> str:
    """``("scalekit.pkg.module", "NAME")`` pairs (the CLI's lazy choices) -> the face."""
    def swap(match: re.Match) -> str:
        module, name = match.group(1), match.group(3)
        parts = module.split(".")
        if len(parts) < 3:
            return match.group(0)
        face = ".".join(parts[:2])
        exports, _ = cache.setdefault(face, face_exports(face))
        exported = exports.get((_public_module(module), name))
        if exported is None:
            missing.append(f"{face}: {name} (from {module}, {path.relative_to(ROOT)}, a string)")
            return match.group(0)
        return f'"{face}"{match.group(2)}"{exported}"'

    return re.sub(r'"(scalekit(?:\.\w+)+)"(\s*,\s*)"(\w+)"', swap, text)


# ---------------------------------------------------------------------------- rename
def rename_step(dry_run: bool) -> None:
    modules = renamed_modules()
    moves = [(p, p.with_name(f"_{p.name}")) for p in modules.values() if not p.name.startswith("_")]
    for old, new in moves:
        print(f"{old.relative_to(ROOT)} -> {new.name}")
    if dry_run:
        return
    for old, new in moves:
        subprocess.run(["git", "mv", str(old.relative_to(ROOT)), str(new.relative_to(ROOT))],
                       cwd=ROOT, check=True)
    rewrite = Rewriter(modules)
    for path in tracked(TEXT_SUFFIXES):
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, path)
        if new != text:
            path.write_text(new, encoding="utf-8")


class Rewriter:
    """Rewrites references to the modules in ``modules`` (public dotted name -> file)."""

    def __init__(self, modules: dict[str, Path]):
        self.modules = set(modules)
        self.by_package: dict[str, set[str]] = {}
        for name in modules:
            package, _, stem = name.rpartition(".")
            self.by_package.setdefault(package, set()).add(stem)
        # a module whose name the face also binds (allocate.replay the module and the function)
        self.ambiguous = {name for name in modules
                          if name.rpartition(".")[2] in face_exports(name.rpartition(".")[0])[1]}
        self.paths = {tuple(name.split(".")) for name in modules}
        names = "|".join(re.escape(n) for n in sorted(modules, key=len, reverse=True))
        self.dotted = re.compile(rf"(?<![\w.])({names})(?![\w/])")
        self.path = re.compile(r"(?<![\w.\-/])((?:[\w\-]+/)+)(\w+)\.py\b")

    def __call__(self, text: str, path: Path) -> str:
        if path.suffix == ".py":
            text = self._imports(text, path)
        if path.suffix == ".md":  # prose names what a face gives by the face
            text = self.dotted.sub(self._through_face, text)
        text = self.path.sub(self._path, self.dotted.sub(self._dotted, text))
        return rewrap_private_imports(text) if path.suffix == ".py" else text

    def _through_face(self, match: re.Match) -> str:
        """``scalekit.fit.engine.fit_law`` -> ``scalekit.fit.fit_law`` when the face (or an
        enclosing one) gives that very object; otherwise unchanged."""
        name = match.group(1)
        attribute = re.match(r"\.(\w+)", match.string[match.end():])
        if attribute is None:
            return name
        parts = name.split(".")
        for i in range(len(parts) - 1, 1, -1):
            face = ".".join(parts[:i])
            exported = face_exports(face)[0].get((name, attribute.group(1)))
            if exported == attribute.group(1):
                return face
        return name

    def _private(self, name: str) -> str:
        package, _, stem = name.rpartition(".")
        return f"{package}._{stem}"

    def _dotted(self, match: re.Match) -> str:
        name = match.group(1)
        if name in self.ambiguous:
            before = match.string[max(0, match.start() - 7):match.start()]
            after = match.string[match.end():match.end() + 1]
            quoted = before.endswith(("'", '"')) and after in ("'", '"')
            if not (after == "." or quoted or before.endswith(("from ", "import "))):
                return name  # the face's attribute of the same name
            if after == "." and not re.match(r"\.\w", match.string[match.end():match.end() + 2]):
                return name
        return self._private(name)

    def _path(self, match: re.Match) -> str:
        parts = tuple(match.group(1).rstrip("/").split("/")) + (match.group(2),)
        for full in self.paths:
            if len(parts) >= 2 and full[-len(parts):] == parts and \
                    (parts[0] == "scalekit" or len(parts) < len(full)):
                return f"{match.group(1)}_{match.group(2)}.py"
        return match.group(0)

    def _imports(self, text: str, path: Path) -> str:
        """Relative imports and ``from scalekit.pkg import module`` (names that are modules)."""
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return text
        rel = path.relative_to(ROOT)
        package = ".".join(rel.parts[:-1]) if rel.parts[0] == "scalekit" else None
        lines = text.splitlines(keepends=True)
        edits = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                if package is None:
                    continue
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                absolute = ".".join(base + ([node.module] if node.module else []))
            else:
                absolute = node.module or ""
            edits.append((node, absolute))
        for node, absolute in sorted(edits, key=lambda e: e[0].lineno, reverse=True):
            start, end = node.lineno - 1, node.end_lineno
            segment = "".join(lines[start:end])
            new = segment
            if node.level and node.module:
                # from .engine import x / from ..fit.engine import x
                target = self._resolve(absolute)
                if target != absolute:
                    rel_new = target.split(".")[-len(node.module.split(".")):]
                    new = re.sub(rf"(from\s+\.+){re.escape(node.module)}(?=\s)",
                                 lambda m, rel=rel_new: m.group(1) + ".".join(rel), new, count=1)
            stems = self.by_package.get(absolute, set())
            bound = face_exports(absolute)[1]
            for alias in node.names:
                if alias.name in stems and alias.name not in bound:
                    local = alias.asname or alias.name
                    pattern = rf"(?<![\w.]){re.escape(alias.name)}(\s+as\s+\w+)?(?=\s*[,)\n]|\s*$)"
                    new = re.sub(pattern, f"_{alias.name} as {local}", new, count=1)
            if new != segment:
                lines[start:end] = [new]
        return "".join(lines)

    def _resolve(self, module: str) -> str:
        """``module`` with each renamed component made private."""
        parts = module.split(".")
        for i in range(len(parts), 1, -1):
            head = ".".join(parts[:i])
            if head in self.modules:
                return ".".join([self._private(head), *parts[i:]])
        return module


def rewrap_private_imports(text: str) -> str:
    """Re-wrap each multi-line or over-long import of a private module (a renamed module is one
    character longer, which misaligns the continuation lines)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    nodes = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and any(part.startswith("_") and not part.startswith("__")
                     for part in (node.module or "").split("."))]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        span = lines[node.lineno - 1:node.end_lineno]
        if "#" in "".join(span) or (len(span) == 1 and len(span[0].rstrip("\n")) <= WIDTH):
            continue
        indent = span[0][:node.col_offset]
        module = "." * node.level + (node.module or "")
        names = [a.name if a.asname is None else f"{a.name} as {a.asname}" for a in node.names]
        tail = span[-1][node.end_col_offset:]
        lines[node.lineno - 1:node.end_lineno] = [indent + _import_text(indent, module, names) + tail]
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="+", choices=("faces", "rename"))
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    code = 0
    for step in args.steps:
        if step == "faces":
            code = faces_step(args.dry_run) or code
        else:
            rename_step(args.dry_run)
    return code


if __name__ == "__main__":
    sys.exit(main())
