"""Name → :class:`~scalekit.laws._base.Law` registry.

Modules that define laws call :func:`register_law` at import; the registry
imports the built-in family modules on first look-up.
"""

from __future__ import annotations

import importlib

from scalekit.checks import check_choice
from scalekit.laws._base import Law

_LAWS: dict[str, Law] = {}
_BUILTIN_MODULES: tuple[str, ...] = (
    "scalekit.laws._power",
    "scalekit.laws._chinchilla",
    "scalekit.laws._kaplan",
    "scalekit.laws._bnsl",
    "scalekit.laws._depth",
    "scalekit.laws._class_count",
    "scalekit.laws._inference_k",
    "scalekit.laws._m4",
    "scalekit.laws._data_constrained",
    "scalekit.laws._sigmoid",
)
_loaded = False


def register_law(law: Law) -> Law:
    """Add ``law`` to the registry under ``law.name`` and return it."""
    if law.name in _LAWS and _LAWS[law.name] is not law:
        raise ValueError(f"a law named {law.name!r} is already registered")
    _LAWS[law.name] = law
    return law


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        for module in _BUILTIN_MODULES:
            importlib.import_module(module)
        _loaded = True


def available_laws() -> list[str]:
    """Names of every registered law, sorted."""
    _load_builtins()
    return sorted(_LAWS)


def get_law(name: str) -> Law:
    """Return the registered law called ``name``."""
    _load_builtins()
    check_choice("law", name, sorted(_LAWS))
    return _LAWS[name]
