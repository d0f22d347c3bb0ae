"""Validation of settings, with messages of one shape.

Every message reads "The value of `name` is <value>, but must be <rule>." so a
user can fix the setting without reading code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from scalekit.errors import InputError


def fail(name: str, value: Any, rule: str) -> InputError:
    """Return the :class:`InputError` for ``name`` holding ``value`` against ``rule``."""
    return InputError(f"The value of `{name}` is {value!r}, but must be {rule}.")


def check_number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, integer: bool = False) -> Any:
    """Check that ``value`` is a finite number within the given bounds and return it."""
    kind = "an integer" if integer else "a finite number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            integer and not float(value).is_integer()) or not math.isfinite(value):
        raise fail(name, value, kind)
    if low is not None and (value <= low if low_open else value < low):
        raise fail(name, value, f"{'>' if low_open else '>='} {low}")
    if high is not None and (value >= high if high_open else value > high):
        raise fail(name, value, f"{'<' if high_open else '<='} {high}")
    return int(value) if integer else value


def check_choice(name: str, value: Any, choices: Collection[Any]) -> Any:
    """Check that ``value`` is one of ``choices`` and return it."""
    if value not in choices:
        raise fail(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_local_input(path: str | Path) -> Path:
    """``path`` as a Path, refused (:class:`InputError`) unless it is an existing regular
    file or folder: a pipe, a device or a socket would block or never end, and a URL
    (``https:/…`` once made a path) names no local file. Only ``stat`` is called."""
    source = str(path)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:/", source):
        raise InputError("is a URL; scalekit reads local files and folders: download it first",
                         source=source)
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder", source=source)
    if not (path.is_file() or path.is_dir()):
        raise InputError("is not a regular file or folder (a pipe, a device or a socket); "
                         "save its contents to a file first", source=source)
    return path
