"""Names of a package face that load heavy modules, resolved when first read (PEP 562)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_names(face: str, table: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``face``: ``name`` in ``table`` is imported from the
    module ``table[name]`` when first read; any other name is an AttributeError."""
    def __getattr__(name: str):
        if name in table:
            return getattr(importlib.import_module(table[name]), name)
        raise AttributeError(f"module {face!r} has no attribute {name!r}")

    return __getattr__
