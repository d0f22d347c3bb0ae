"""The options every command shares, declared once.

A command takes them as its parameters' defaults::

    from .options import bootstrap_option, html_option, json_option, seed_option, verbose_option

    def mycommand(..., bootstrap: int = bootstrap_option(1000), seed: int = seed_option(),
                  json_out: Optional[Path] = json_option(), html: Optional[Path] = html_option(),
                  verbose: bool = verbose_option()): ...

Each is checked as it is parsed, before any work: a number out of range, an
output path with another suffix, in a missing or read-only folder exit 2 with
one line (missing folders are never created). ``--json`` writes
``scalekit.serialise.envelope(kind, result.to_dict())``, ``--html`` the page of
:mod:`scalekit.report._html` from the same dict.

Only typer and the standard library are imported at module level.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

#: Suffixes of the outputs: JSON reports, HTML pages, figures (matplotlib's formats), exports.
JSON_SUFFIXES = (".json",)
HTML_SUFFIXES = (".html", ".htm")
PLOT_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg")
EXPORT_SUFFIXES = (".csv", ".parquet", ".jsonl")

#: Most bootstrap resamples an option accepts (each is a multi-start fit; the draws are kept).
MAX_BOOTSTRAP = 1_000_000


def check_writable(path: Path, flag: str, suffixes: Collection[str] | None = None) -> None:
    """Check that a file can be written at ``path`` (given as ``flag``) before any work.

    Its suffix must be one of ``suffixes`` (when given); it must not be a folder;
    its folder must exist (none is created) and it, or the file, be writable.
    """
    from scalekit.errors import InputError

    path = Path(path)
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise InputError(f"The value of `{flag}` is {str(path)!r}, but must be a file ending in "
                         + " or ".join(suffixes) + ".")
    if path.is_dir():
        raise InputError(f"The value of `{flag}` is {str(path)!r}, but must be a file, "
                         "not a folder.")
    if path.exists() and not path.is_file():
        raise InputError(f"The value of `{flag}` is {str(path)!r}, but must be a regular file "
                         "(it is a pipe, a device or a socket); give a file path.")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"The value of `{flag}` is {str(path)!r}, but its folder "
                         f"{str(folder)!r} does not exist (create it first).")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        which = f"the file {str(path)!r}" if path.exists() and os.access(folder, os.W_OK) \
            else f"the folder {str(folder)!r}"
        raise InputError(f"The value of `{flag}` is {str(path)!r}, but {which} is read-only.")
    try:  # a file can really be made there (not so in /proc, whatever the permissions say)
        import tempfile

        with tempfile.NamedTemporaryFile(dir=folder, prefix=".scalekit-probe-"):
            pass
    except OSError as exc:
        raise InputError(f"The value of `{flag}` is {str(path)!r}, but no file can be written "
                         f"in {str(folder)!r} ({exc.strerror or exc}).") from None


def output_option(flag: str, suffixes: Collection[str], help: str) -> Any:
    """An optional output-file option, checked by :func:`check_writable` as it is parsed."""
    def check(value: Path | None) -> Path | None:
        if value is not None:
            check_writable(value, flag, suffixes)
        return value

    return typer.Option(None, flag, callback=check, help=help)


def _number(flag: str, **rule: Any):
    def check(value: Any) -> Any:
        from scalekit.checks import check_number

        return None if value is None else check_number(flag, value, **rule)

    return check


def bootstrap_option(default: int) -> Any:
    """The ``--bootstrap N`` option (0 to :data:`MAX_BOOTSTRAP`)."""
    return typer.Option(default, "--bootstrap", help="Bootstrap resamples (0 to skip).",
                        callback=_number("--bootstrap", low=0, high=MAX_BOOTSTRAP, integer=True))


def seed_option() -> Any:
    """The ``--seed`` option (numpy seeds are >= 0)."""
    return typer.Option(0, "--seed", help="Seed of every random choice.",
                        callback=_number("--seed", low=0, integer=True))


def map_option(example: str | None = None) -> Any:
    """The repeatable ``--map role=column`` option (see :func:`scalekit_cli.common.parse_mapping`)."""
    return typer.Option([], "--map", metavar="ROLE=COLUMN", help="Column role, as role=column (repeatable)"
                        + (f", e.g. {example}." if example else "."))


def json_option() -> Any:
    """The ``--json PATH`` option (the JSON report)."""
    return output_option("--json", JSON_SUFFIXES, "Write the JSON report here.")


def html_option() -> Any:
    """The ``--html PATH`` option (one self-contained page: answer, figures, tables)."""
    return output_option("--html", HTML_SUFFIXES, "Write a self-contained HTML report here "
                         "(the answer, figures, tables and diagnostics).")


def plot_option() -> Any:
    """The ``--plot PATH`` option (a figure)."""
    return output_option("--plot", PLOT_SUFFIXES, "Write a PNG/SVG/PDF figure here.")


@dataclass
class Invocation:
    """What the parts of one command run share: click's context object (``ctx.obj``), made by
    :func:`scalekit_cli.app.main` (or by the root callback when the app is called directly)
    and, for code that has no ``ctx`` (messages, Ctrl-C registrations), the value of a
    context variable for the length of the run (:func:`running`), as
    :mod:`scalekit.progress` scopes its callback; never a module-level variable.

    Attributes
    ----------
    flags : dict of str to str
        The long flag of each option of the running command, by the parameter it fills.
    quiet : bool
        Whether the command was given ``--quiet`` (read by the progress bar).
    kept : callable or None
        Says what the command keeps if Ctrl-C stops it now (see ``common.on_interrupt``).
    """

    flags: dict[str, str] = field(default_factory=dict)
    quiet: bool = False
    kept: Callable[[], str] | None = None


_RUN: ContextVar[Invocation | None] = ContextVar("scalekit_cli_run", default=None)


def invocation() -> Invocation:
    """The running command's :class:`Invocation` (an empty one outside a command)."""
    run = _RUN.get()
    return Invocation() if run is None else run


@contextmanager
def running(run: Invocation) -> Iterator[Invocation]:
    """Make ``run`` the running command's :class:`Invocation` within the block."""
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


def _note_quiet(ctx: typer.Context, value: bool) -> bool:
    ctx.ensure_object(Invocation).quiet = bool(value)
    return value


def quiet_option() -> Any:
    """The ``--quiet`` / ``-q`` flag (it also silences the progress bar)."""
    return typer.Option(False, "--quiet", "-q", metavar="", help="Print nothing but errors.",
                        callback=_note_quiet, show_default=False)


def verbose_option() -> Any:
    """The ``--verbose`` / ``-v`` flag: every statistic, note and warning (the JSON has them all)."""
    return typer.Option(False, "--verbose", "-v", metavar="", show_default=False,
                        help="Print every statistic (the optimiser's too), note and warning.")


#: Options renamed, old name -> new name: the old one still works and says so in a note.
RENAMED = {"--loss": "--objective"}


def renamed_options(args: list[str]) -> tuple[list[str], list[str]]:
    """``args`` with every renamed option (:data:`RENAMED`) written under its new name, and
    a note for each old name used ("loss" names the metric; the fit minimises an objective)."""
    out, notes = [], []
    for arg in args:
        name, eq, value = arg.partition("=")
        if name in RENAMED:
            notes.append(f"note: {name} is now {RENAMED[name]} (the objective the fit "
                         "minimises; 'loss' names the metric)")
            arg = RENAMED[name] + eq + value
        out.append(arg)
    return out, list(dict.fromkeys(notes))


#: The line saying what a report left out: ``{n}`` more ``{what}``.
MORE = "{n} more {what}: --verbose"
