"""Pieces every command shares: the FILE argument, --store and other common options,
--map parsing, reading input, printing, what Ctrl-C keeps.

Options are checked as they are parsed, before any work: a choice outside its
fixed set (:func:`choice_option`), an output path with an unknown suffix, in a
missing or read-only folder (:func:`output_option`, ``store_option(writes=True)``)
exit 2 with one line. Missing folders are never created: an output path names
an existing folder, for every command alike.

Only typer and the standard library are imported at module level.
"""

from __future__ import annotations

import hashlib
import os
import importlib
import re
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import typer

# the shared options live in .options; imported here too for the commands that import them here
from .options import (EXPORT_SUFFIXES, JSON_SUFFIXES, MAX_BOOTSTRAP, PLOT_SUFFIXES,  # noqa: F401
                      Invocation, bootstrap_option, check_writable, invocation, json_option,
                      map_option, output_option, plot_option, quiet_option, seed_option)

DEFAULT_STORE = Path("scalekit.db")

#: What an interrupted command keeps where it registered nothing (see :func:`on_interrupt`).
_KEPT_BY_DEFAULT = {
    "scalekit store import": "the store is as it was (an import lands whole or not at all)",
    "scalekit store rm": "the store is as it was (a removal lands whole or not at all)",
    "scalekit store copy": "the destination is as it was (a copy lands whole or not at all)",
    "scalekit store export": "the output file may be incomplete: export again",
}


def on_interrupt(kept: Callable[[], str]) -> None:
    """Register what this command keeps if Ctrl-C stops it now (``kept()`` says it).

    The last registration wins; a command that registers none keeps nothing. It is kept
    on the run's :class:`~scalekit_cli.options.Invocation`.
    """
    invocation().kept = kept


def interrupted_line(args: list[str], run: Invocation | None = None) -> str:
    """The one line an interrupted command prints: what was interrupted and what was kept
    (``run``: the interrupted run's invocation, None when it had not begun)."""
    words = [a for a in args if not a.startswith("-")][:2]
    command = " ".join(["scalekit", *words[:1]])
    if words[:1] in (["store"], ["law"], ["allocate"]) and len(words) > 1:
        command += f" {words[1]}"
    try:
        kept = (run.kept() if run is not None and run.kept is not None
                else _KEPT_BY_DEFAULT.get(command, "nothing was written"))
    except Exception as exc:  # noqa: BLE001 - the line must come out whatever happened
        kept = f"what was kept could not be read ({type(exc).__name__}: {exc})"
    return f"interrupted: {command} stopped by Ctrl-C; {kept}"


#: The environment variable naming the store where ``--store`` is not given.
STORE_VARIABLE = "SCALEKIT_STORE"


def store_location(text: Any) -> Any:
    """A ``--store`` value as the library takes it: a ``postgresql://`` URL stays text (a path
    would fold its ``//``), anything else is a SQLite file's path."""
    text = str(text)
    return text if is_server_url(text) else Path(text)


def check_executor(executor: str, ray_address: str | None) -> None:
    """``--ray-address`` names the cluster of ``--executor ray``: with another executor it
    would be ignored, so it is refused before any work."""
    if ray_address is not None and executor != "ray":
        from scalekit.errors import InputError

        raise InputError(f"--ray-address goes with --executor ray (the executor is "
                         f"{executor!r}, which would ignore it)")


def display(location: Any) -> str:
    """A store location as messages show it: a URL's passwords masked
    (:func:`scalekit.curves.display`)."""
    from scalekit.curves import display as shown

    return shown(location)


def is_server_url(value: Any) -> bool:
    """Whether a store location is a PostgreSQL URL (see :mod:`scalekit.curves._database`)."""
    from scalekit.curves import is_server_url as server

    return server(value)


def store_option(default: Path | None = DEFAULT_STORE, *, writes: bool = False) -> Any:
    """The ``--store`` option: a SQLite file or a ``postgresql://`` URL. ``writes``: the command
    writes it, so a file's folder must exist and be writable (checked before any work).

    Where the store is the command's only input (a default store, or one it writes),
    ``SCALEKIT_STORE`` stands in for an omitted ``--store``; where a curves FILE is the
    alternative, :func:`open_curves` reads it when neither is given.
    """
    def check(value: Any) -> Any:
        if value is not None and writes and not is_server_url(value):
            check_writable(value, "--store")
        return value

    return typer.Option(default, "--store", callback=check, parser=store_location,
                        envvar=STORE_VARIABLE if default is not None or writes else None,
                        show_envvar=False,
                        help="Curve store: a SQLite file or postgresql://user@host/db "
                        f"(default: ${STORE_VARIABLE}"
                        + (f", else ./{DEFAULT_STORE})." if default else ")."))


def _choice_check(name: str, choices: Collection[str] | Callable[[], Collection[str]],
                  many: bool) -> Callable:
    def check(value: str | None) -> str | None:
        if value is not None:
            allowed = tuple(check.choices() if callable(check.choices) else check.choices)
            for item in (value.split(",") if many else [value]):
                if item.strip() not in allowed:
                    from scalekit.checks import fail

                    raise fail(name, item.strip(), ("a comma-separated list of " if many else "")
                               + "one of " + ", ".join(repr(c) for c in allowed))
        return value

    check.choices = choices  # read by the tests, which try every declared choice
    return check


def library_choices(module: str, name: str, *extra: str) -> Callable[[], tuple[str, ...]]:
    """The choices of a library constant (``module.name``) and then ``extra``, read when
    an option is given, so the CLI never repeats the library's list and --help stays
    instant."""
    def choices() -> tuple[str, ...]:
        return (*getattr(importlib.import_module(module), name), *extra)

    return choices


def choice_option(default: str | None, flag: str,
                  choices: Collection[str] | Callable[[], Collection[str]], help: str, *,
                  many: bool = False) -> Any:
    """An option that takes one of ``choices`` (or, ``many``, a comma-separated list of them).

    ``choices`` may be a function returning them (so that a heavy module is imported only
    when the option is given). Anything else exits 2 with the sentence
    "The value of `--flag` is …, but must be one of …" as the option is parsed.
    """
    return typer.Option(default, flag, callback=_choice_check(flag, choices, many), help=help)


def choice_argument(name: str, choices: Collection[str] | Callable[[], Collection[str]],
                    help: str) -> Any:
    """A required argument that takes one of ``choices`` (see :func:`choice_option`)."""
    return typer.Argument(..., callback=_choice_check(name, choices, False), help=help)


def checked_inputs(value: Any) -> Any:
    """A callback refusing, as the command line is parsed, an input path (or a list of them)
    that names no local file or folder (:func:`scalekit.checks.check_local_input`), so a
    command says so before it imports the analysis packages; ``None`` passes."""
    return _check_inputs(value, uris=False)


def checked_sources(value: Any) -> Any:
    """:func:`checked_inputs` for readers that also take tracking URIs: a value with a scheme
    (``sqlite:///optuna.db``) is left to the reader."""
    return _check_inputs(value, uris=True)


def _check_inputs(value: Any, *, uris: bool) -> Any:
    from scalekit.checks import check_local_input

    for item in [] if value is None else value if isinstance(value, (list, tuple)) else [value]:
        if not (uris and re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", str(item))):
            check_local_input(item)
    return value


def file_argument(what: str = "Curves file") -> Any:
    """The optional FILE argument (``what`` names the file); omitted, --store is read."""
    return typer.Argument(None, callback=checked_inputs, is_eager=True,
                          help=f"{what} (CSV, JSONL, Parquet, W&B CSV; a folder of "
                               "TensorBoard logs, W&B offline runs or mlruns; an Optuna or MLflow "
                               "SQLite file). Omit to read --store.")


def checked_number(flag: str, **rule: Any) -> Callable:
    """A callback checking a number option as it is parsed (``rule``: the keywords of
    :func:`scalekit.checks.check_number`); ``None`` (an option not given) passes."""
    def check(value: Any) -> Any:
        from scalekit.checks import check_number

        return None if value is None else check_number(flag, value, **rule)

    return check


def ci_level_option() -> Any:
    """The ``--ci-level`` option (strictly between 0 and 1)."""
    return typer.Option(0.95, "--ci-level", help="Level of every interval.",
                        callback=checked_number("--ci-level", low=0, high=1, low_open=True,
                                                high_open=True))


_PARAMETER = re.compile(r"`([A-Za-z_]\w*)`")


def command_flags() -> dict[str, str]:
    """The long flag of each option of the running command, by the parameter the option
    fills: ``{"target_compute": "--target-compute"}`` (its
    :class:`~scalekit_cli.options.Invocation`'s); empty outside a command."""
    return dict(invocation().flags)


def flags_of(command) -> dict[str, str]:
    """The long flag of each option of a click ``command``, by the parameter it fills."""
    flags = {}
    for param in command.params:
        longs = [o for o in param.opts if o.startswith("--")]
        if param.param_type_name == "option" and longs:
            flags[param.name] = longs[0]
    return flags


def in_flags(text: str, flags: dict[str, str] | None = None) -> str:
    """``text`` with every backquoted parameter that an option of the running command sets
    written as that option: the library's messages name its parameters (`target_compute`),
    the CLI's its flags (`--target-compute`). A name no option sets stays as it is."""
    flags = command_flags() if flags is None else flags
    return _PARAMETER.sub(lambda m: f"`{flags[m[1]]}`" if m[1] in flags else m[0], text)


def notes_in_flags(*groups) -> list[str]:
    """The library's notes (lists of lines) for the running command, each :func:`in_flags`."""
    flags = command_flags()
    return [in_flags(line, flags) for group in groups for line in group]


def format_option() -> Any:
    """The ``--format table|tsv|json`` option of commands that print tables."""
    return choice_option("table", "--format",
                         library_choices("scalekit.report", "FORMATS"), "How to print the "
                         "tables: table (rich, for reading), tsv or json (for other programs).")


def print_tables(tables: list[dict], fmt: str, *, title: str | None = None,
                 header: tuple[str, ...] | list[str] = (),
                 lines: tuple[str, ...] | list[str] = ()) -> None:
    """Print tables as data (:mod:`scalekit.report._tables`) in ``--format`` ``fmt``.

    In ``table`` format the title, ``header`` lines, tables and ``lines`` (notes,
    repeats collapsed) go to standard output; in ``tsv`` and ``json`` only the
    tables do, and the other lines go to standard error.
    """
    from scalekit.formatting import collapse_notes
    from scalekit.report import render_tables

    out = render_tables(tables, fmt, title=title, header=header, lines=lines)
    if fmt == "table":
        print_renderable(out)
        return
    typer.echo(out)
    for line in [*header, *collapse_notes(lines)]:
        typer.echo(line, err=True)


def parse_pairs(items: list[str], *, flag: str, form: str) -> dict[str, str]:
    """Parse repeated ``flag KEY=VALUE`` options (``form`` spells them in the error)."""
    from scalekit.errors import InputError

    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"{flag} takes {form}, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def parse_mapping(items: list[str]) -> dict[str, str] | None:
    """Parse repeated ``--map role=column`` options."""
    return parse_pairs(items, flag="--map", form="role=column") or None


def input_sha256(path: Path) -> str:
    """SHA-256 of a file, or of every file under a directory in sorted order."""
    from scalekit.serialise import sha256_of

    if path.is_dir():
        return sha256_of(*sorted(p for p in path.rglob("*") if p.is_file()))
    return sha256_of(path)


def open_curves(file: Path | None, store: Path | None, mapping: dict[str, str] | None,
                *, metric: str = "loss", keep: list[str] | tuple[str, ...] = (),
                duplicates: str = "error"):
    """Read the :class:`~scalekit.curves.Curves` of ``file`` or ``store``; return them with
    their input hash.

    ``keep`` names further file columns to keep as they are (an x or group column);
    ``duplicates`` is :func:`scalekit.curves.read_curves`'s rule for a repeated step.
    """
    from scalekit.errors import InputError

    if file is None and store is None and os.environ.get(STORE_VARIABLE):
        store = store_location(os.environ[STORE_VARIABLE])
    if (file is None) == (store is None):
        raise InputError("give either a curves FILE or --store DB (one of them)")
    if file is not None:
        from scalekit.curves import read_curves
        from scalekit.curves import check_local_input

        check_local_input(file)
        curves = read_curves(file, mapping=mapping, metric=metric, keep=[c for c in keep if c],
                             duplicates=duplicates)
        return curves, input_sha256(file)
    from scalekit.curves import CurveStore

    if not is_server_url(store) and not store.exists():
        raise InputError("no such store", source=str(store))
    with CurveStore(store, create=False) as opened:
        curves = opened.curves(metric=metric)
    if curves.frame.empty:
        raise InputError(f"the store holds no points of metric {metric!r}", source=display(store))
    digest = hashlib.sha256(curves.frame.to_csv(index=False).encode()).hexdigest()
    return curves, digest


def points_kept(store: Path, source_prefix: str | None = None) -> str:
    """``N points of K runs`` held by ``store`` (runs whose source starts with the prefix)."""
    from scalekit.curves import CurveStore

    if not is_server_url(store) and not Path(store).is_file():
        return "no point"
    with CurveStore(store, create=False) as opened:
        runs = opened.runs()
    if source_prefix is not None:
        runs = runs[runs["source"].str.startswith(source_prefix)]
    return f"{int(runs['points'].sum())} points of {len(runs)} runs"


def print_renderable(renderable: Any) -> None:
    """Print a rich renderable to standard output (plain text when not a terminal)."""
    from rich.console import Console

    Console(file=sys.stdout, soft_wrap=False).print(renderable)


class ProgressBar:
    """The library's progress (:mod:`scalekit.progress`) as a rich bar on standard error.

    The bar starts with the first report, so a command that reports nothing
    draws nothing; one line per task (``bootstrap``, ``training``, …), removed
    when the command ends. Nothing is drawn when standard error is not a
    terminal or the command was given ``--quiet`` (:func:`quiet_option`).
    """

    def __init__(self, run: Invocation) -> None:
        self._run = run
        self._bar = None
        self._tasks: dict[str, Any] = {}
        self._scope = None

    def __enter__(self) -> ProgressBar:
        from scalekit.progress import reporting

        if sys.stderr.isatty():
            self._scope = reporting(self._report)
            self._scope.__enter__()
        return self

    def _report(self, task: str, done: int, total: int | None) -> None:
        if self._run.quiet:
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn)

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
        if task not in self._tasks:
            self._tasks[task] = self._bar.add_task(task, total=total)
        elif done == 0:  # the same task again (e.g. a bootstrap per group)
            self._bar.reset(self._tasks[task], total=total)
        self._bar.update(self._tasks[task], completed=done, total=total)

    def __exit__(self, *exc: Any) -> None:
        if self._scope is not None:
            self._scope.__exit__(*exc)
        if self._bar is not None:
            self._bar.stop()


def slurm_time(value: str | None) -> int | None:
    """``--slurm-time`` in whole minutes (seconds rounded up), read as Slurm reads a time
    limit: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M`` or ``D-H:M:S`` (exit 2 otherwise)."""
    if value is None:
        return None
    days, dash, rest = value.strip().partition("-")
    if not dash:
        days, rest = "", days
    parts = rest.split(":")
    seconds = 0
    if ((not dash or days.isdigit()) and 1 <= len(parts) <= 3
            and all(part.isdigit() for part in parts)):
        units = (3600, 60, 1)[:len(parts)] if dash else (60, 1) if len(parts) == 2 else (
            (60,) if len(parts) == 1 else (3600, 60, 1))
        seconds = int(days or 0) * 86400 + sum(int(p) * u for p, u in zip(parts, units, strict=True))
    if seconds < 1:
        from scalekit.checks import fail

        raise fail("--slurm-time", value, "a Slurm time limit (M, M:S, H:M:S, D-H, D-H:M or "
                   "D-H:M:S) of at least one second")
    return -(-seconds // 60)


def slurm_options() -> dict[str, Any]:
    """The ``--slurm-*`` options of the commands that take ``--executor slurm``."""
    return dict(
        partition=typer.Option(None, "--slurm-partition", help="Slurm partition of each job."),
        time=typer.Option("60", "--slurm-time", callback=slurm_time,
                          help="Time limit of each Slurm job: minutes, HH:MM:SS or D-HH:MM:SS."),
        gpus=typer.Option(None, "--slurm-gpus", callback=checked_number(
            "--slurm-gpus", low=0, integer=True), help="GPUs per Slurm job."),
        folder=typer.Option(None, "--jobs-folder", help="Folder of the submitit jobs' pickles, "
                            "scripts and logs, seen by every node (default: beside the store)."))


def job_executor(kind: str, *, workers: int, ray_address: str | None, default_folder: Path,
                 partition: str | None, time: int, gpus: int | None, folder: Path | None):
    """The executor of ``--executor`` with its options; ``--slurm-partition``,
    ``--slurm-gpus`` and ``--jobs-folder`` apply to ``slurm`` and ``submitit-local`` only."""
    from scalekit.errors import InputError
    from scalekit.executors import make_executor

    submitit = kind in ("slurm", "submitit-local")
    for flag, value in (("--slurm-partition", partition), ("--slurm-gpus", gpus),
                        ("--jobs-folder", folder)):
        if value is not None and not submitit:
            raise InputError(f"{flag} applies to --executor slurm or submitit-local, "
                             f"not {kind}")
    slurm = {"time_min": time, "gpus": gpus, "partition": partition} if submitit else None
    if kind == "submitit-local":
        slurm.pop("partition")
    return make_executor(kind, max_workers=workers, address=ray_address,
                         folder=folder or default_folder if submitit else None, slurm=slurm)


def bounds_option() -> Any:
    return typer.Option(None, "--bounds", callback=_bounds_check,
                        help="Search ranges of the law's parameters, NAME=LOW:HIGH separated by "
                        "commas, e.g. alpha=0:2,B=1e-2:1e6 (an empty end keeps the law's). "
                        "An expression's parameters are positive, fitted in log, on (0, inf) "
                        "by default.")


def _bounds_check(text: str | None) -> dict[str, tuple[float | None, float | None]] | None:
    """``alpha=0:2,B=1e-2:`` -> ``{"alpha": (0.0, 2.0), "B": (0.01, None)}``."""
    from scalekit.errors import InputError

    if text is None:
        return None
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = re.fullmatch(r"([A-Za-z_]\w*)=([^:]*):([^:]*)", item)
        try:
            ends = tuple(float(e) if e.strip() else None for e in match.groups()[1:])
        except (AttributeError, ValueError):
            ends = None
        if ends is None or (None not in ends and not ends[0] < ends[1]):
            raise InputError(f"The value of `--bounds` is {text!r}, but must be NAME=LOW:HIGH "
                             f"items (LOW < HIGH) separated by commas, e.g. alpha=0:2 "
                             f"({item!r} is not).")
        out[match.group(1)] = ends
    return out or None


def law_columns(law: str | None) -> list[str]:
    """The names of a law expression, each to be kept from the data where it is a column
    (``name?``: the reader keeps it if the table has it)."""
    if law is None or re.fullmatch(r"[A-Za-z_]\w*", law):
        return []
    return [f"{name}?" for name in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", law))]


def parse_target(text: str, flag: str = "--predict") -> tuple[float, float]:
    """``N=<params>,D=<tokens>`` as two positive numbers."""
    from scalekit.errors import InputError

    values = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        try:
            values[key.strip()] = float(value) if sep else None
        except ValueError:
            values[key.strip()] = None
    if set(values) != {"N", "D"} or any(v is None or not 0 < v < float("inf")
                                         for v in values.values()):
        raise InputError(f"The value of `{flag}` is {text!r}, but must be N=<params>,D=<tokens> "
                         "with positive numbers (e.g. N=6.89e9,D=3.95e12).")
    return values["N"], values["D"]
