"""Strict, versioned JSON reports.

Every report carries ``format`` (a name and version such as
``"scalekit.fit/1"``), the package ``version``, the ``input_sha256`` of what was
read, the ``seed`` and the ``settings``. Non-finite floats are written as
``null`` so the output is strict JSON that any parser reads.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scalekit._version import __version__


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, paths and non-finite floats to plain JSON values."""
    import numpy as np  # here, so that reading a report (`read_json`) loads no numpy

    if hasattr(obj, "from_dict") and callable(getattr(obj, "to_dict", None)):  # a result
        return to_jsonable(obj.to_dict())
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, str):
        return obj
    if callable(getattr(obj, "to_dict", None)):     # results and diagnostics
        return to_jsonable(obj.to_dict())
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


def dumps(obj: Any) -> str:
    """Serialise ``obj`` as strict JSON (no NaN or infinity), indented."""
    return json.dumps(to_jsonable(obj), indent=2, allow_nan=False)


def sha256_of(*paths: str | Path) -> str:
    """SHA-256 of the bytes of one or more files, in order."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def read_json(path: str | Path, *, what: str = "JSON file") -> Any:
    """The strict JSON held by the file at ``path`` (``what`` names it in errors).

    Anything but a regular file (a pipe would block), bytes that are not UTF-8, text that is
    not JSON, ``NaN`` or ``Infinity`` (not JSON, though Python writes them) and nesting too deep
    to read each raise one :class:`~scalekit.errors.InputError` naming the file (and line).
    """
    from scalekit.errors import InputError

    path = Path(path)
    if not path.exists():
        raise InputError("no such file", source=str(path))
    if not path.is_file():
        raise InputError(f"is not a regular file (a folder, a pipe, a device or a socket), so it "
                         f"cannot be a {what}", source=str(path))

    def refuse(constant: str):
        raise ValueError(f"{constant} is not a JSON number")

    try:
        return json.loads(path.read_bytes().decode("utf-8"), parse_constant=refuse)
    except UnicodeDecodeError as exc:
        raise InputError(f"is not a {what}: byte {exc.start} is not UTF-8 text",
                         source=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"is not a {what} ({exc.msg}, column {exc.colno})", source=str(path),
                         line=exc.lineno) from None
    except ValueError as exc:
        raise InputError(f"is not a {what}: {exc} (write null for a missing value)",
                         source=str(path)) from None
    except RecursionError:
        raise InputError(f"is not a {what} scalekit reads: its lists or objects are nested too "
                         "deep", source=str(path)) from None


#: The highest report format version this scalekit reads (``scalekit.<kind>/<version>``).
FORMAT_VERSION = 1


def report_kind(data: Any, *, source: str | Path) -> str:
    """The kind of the report ``data`` (``"fit"`` of ``scalekit.fit/1``); a JSON that is no
    scalekit report, or one of a newer format version than :data:`FORMAT_VERSION`, raises
    :class:`~scalekit.errors.InputError`."""
    from scalekit.errors import InputError

    text = str(data.get("format", "")) if isinstance(data, dict) else ""
    kind, slash, version = text.removeprefix("scalekit.").rpartition("/")
    if not text.startswith("scalekit.") or not slash or not version.isdigit():
        raise InputError("not a scalekit report (no scalekit.<kind>/<version> format)",
                         source=str(source))
    if int(version) > FORMAT_VERSION:
        raise InputError(f"the report has format version {version}, written by a newer "
                         f"scalekit (this one reads up to {FORMAT_VERSION}): upgrade scalekit",
                         source=str(source))
    return kind


def envelope(kind: str, body: Any, *, input_sha256: str | None,
             seed: int | None, settings: Mapping[str, Any], format_version: int = 1) -> dict:
    """Wrap an analysis result in the common report header.

    ``body`` is a result (its ``to_dict()`` is wrapped) or a mapping. The header
    is ``format``, ``version``, ``input_sha256``, ``seed``, ``settings`` and
    ``diagnostics`` (the body's own list, as plain dicts; empty when it has none).
    """
    body = dict(body.to_dict() if hasattr(body, "to_dict") else body)
    diagnostics = [d.to_dict() if hasattr(d, "to_dict") else d
                   for d in body.pop("diagnostics", None) or []]
    return {
        "format": f"scalekit.{kind}/{format_version}",
        "version": __version__,
        "input_sha256": input_sha256,
        "seed": seed,
        "settings": dict(settings),
        "diagnostics": diagnostics,
        **body,
    }


def write_report(path: str | Path, kind: str, body: Any, *, input_sha256: str | None,
                 seed: int | None, settings: Mapping[str, Any]) -> None:
    """Write the :func:`envelope` of ``body`` (a result or a mapping) as strict JSON to ``path``."""
    write(path, envelope(kind, body, input_sha256=input_sha256, seed=seed, settings=settings))


def write(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as strict JSON to ``path`` (whole or not at all: :func:`atomic_output`)."""
    text = dumps(obj) + "\n"
    with atomic_output(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """A temporary file beside ``path`` to write; flushed to the disk (``fsync``) and renamed
    to ``path`` when the block ends.

    If the block fails, nothing is left behind (``path`` keeps what it held). A full
    device (``ENOSPC``, ``EDQUOT``) or a file over the size limit (``EFBIG``) becomes an
    :class:`~scalekit.errors.InputError` naming the device holding ``path`` (see
    :func:`no_space`). The file gets the permissions a new file would (or those of the file
    it replaces).
    """
    path = Path(path)
    try:
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix or ".tmp",
                                        dir=path.parent)
    except OSError as exc:
        raise (no_space(exc, path) or exc) from None
    os.close(handle)
    temporary = Path(name)
    try:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
        os.chmod(temporary, mode)
        yield temporary
        _flush_to_disk(temporary)
        os.replace(temporary, path)
    except BaseException as exc:
        temporary.unlink(missing_ok=True)
        full = no_space(exc, path)
        if full is not None:
            raise full from None
        raise


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, whole or not at all (:func:`atomic_output`)."""
    with atomic_output(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def _flush_to_disk(path: Path) -> None:
    """``fsync`` the file at ``path``: a full disk that the page cache hid is met here,
    before the rename, not after it."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


#: The errors of a device that cannot take more bytes: full, over quota, over the size limit.
NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def no_space(exc: BaseException, path: str | Path):
    """The :class:`~scalekit.errors.InputError` for a full device behind ``exc`` (also one
    wrapped by a library), naming the device holding ``path``; None for any other error."""
    from scalekit.errors import InputError

    code = getattr(exc, "errno", None)
    full = code in NO_SPACE_ERRNOS or "No space left on device" in str(exc)
    if not full:
        return None
    if code == errno.EFBIG:
        return InputError(f"{path} would pass the largest file size allowed there "
                          f"({device_of(path)}); write it elsewhere (nothing was written)")
    return InputError(f"no space left on the device holding {path} ({device_of(path)}); free "
                      "some space or write elsewhere (nothing was written)")


def device_of(path: str | Path) -> str:
    """The mount point of the file system holding ``path`` (its folder), as ``df`` names it."""
    folder = Path(os.path.abspath(path)).parent
    while not os.path.ismount(folder) and folder != folder.parent:
        folder = folder.parent
    try:
        stat = os.statvfs(folder)
        free = stat.f_bavail * stat.f_frsize
    except OSError:
        return f"file system at {folder}"
    return f"file system at {folder}, {free:,} bytes free"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
