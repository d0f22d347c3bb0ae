"""The progress seam: long library loops report progress to whoever asked for it.

Library code wraps a long loop in :func:`track`; it costs nothing when no one
listens. A caller listens with :func:`reporting` and a callback
``callback(task, done, total)`` (``total`` may be ``None``); the CLI's
callback draws a rich progress bar on a terminal, a notebook may pass its own.
Reporting is per context (:mod:`contextvars`), so concurrent callers do not
see each other's progress; work in other processes is tracked where its
results come back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

Callback = Callable[[str, int, "int | None"], None]
T = TypeVar("T")

_CALLBACK: ContextVar[Callback | None] = ContextVar("scalekit_progress", default=None)


@contextmanager
def reporting(callback: Callback | None) -> Iterator[None]:
    """Send the progress of the work done inside the block to ``callback`` (None: nowhere)."""
    token = _CALLBACK.set(callback)
    try:
        yield
    finally:
        _CALLBACK.reset(token)


def track(items: Iterable[T], task: str, *, total: int | None = None) -> Iterator[T]:
    """Yield ``items``, reporting ``(task, done, total)`` before the first and after each one."""
    callback = _CALLBACK.get()
    if callback is None:
        yield from items
        return
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    callback(task, 0, total)
    for done, item in enumerate(items, 1):
        yield item
        callback(task, done, total)
