"""Entry point of the ``scalekit`` command.

Each command group lives in its own module with a ``register(app)`` function;
modules import only typer at top level so that ``scalekit --help`` is instant.
Exit codes: 0 success, 2 bad input (one line, no traceback), 1 internal error,
130 interrupted (Ctrl-C; one line saying what was interrupted and what was kept).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import os
import signal
import sys
import warnings

import typer
from typer.exceptions import TyperException

from scalekit import __version__
from scalekit.errors import InputError

#: Exit code of an interrupted command (128 + SIGINT, as shells report it).
INTERRUPTED = 130

COMMAND_MODULES = (
    "scalekit_cli.fit",
    "scalekit_cli.store",
    "scalekit_cli.isoflop",
    "scalekit_cli.plan",
    "scalekit_cli.train",
    "scalekit_cli.law",
    "scalekit_cli.forecast",
    "scalekit_cli.allocate",
    "scalekit_cli.design",
    "scalekit_cli.report",
    "scalekit_cli.flops",
    "scalekit_cli.compare",
)

class _Root(typer.core.TyperGroup):
    """The root group: every command's ``--help`` is shown without a ``<bool>`` hint (it
    takes no value), as the other flags are, and no option or argument with a Python type
    hint (``<list[str]>``)."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None and option.metavar is None:
            _plain_help(self, ctx)
        return option


def _plain_help(command, ctx) -> None:
    """Give ``--help`` of ``command`` and of every command under it an empty metavar, and a
    parameter that takes several values the hint ``NAME...`` (its metavar's, else its name's),
    not the Python type ``<list[str]>``."""
    option = typer.core.TyperGroup.get_help_option(command, ctx) \
        if isinstance(command, typer.core.TyperGroup) else command.get_help_option(ctx)
    if option is not None:
        option.metavar = ""
    for param in getattr(command, "params", ()):
        if getattr(param, "multiple", False) or param.nargs != 1:
            hint = f"{param.metavar or param.name.upper()}..."
            param.display_type_rich = lambda ctx, hint=hint: hint
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub, ctx)


app = typer.Typer(
    name="scalekit",
    cls=_Root,
    help="Fit scaling laws to learning curves, with honest uncertainty, and plan compute.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"scalekit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(ctx: typer.Context,
          version: bool = typer.Option(False, "--version", metavar="", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Fit scaling laws to learning curves, with honest uncertainty, and plan compute."""
    from .common import ProgressBar
    from .options import Invocation, running

    run = ctx.ensure_object(Invocation)  # main() made it; a direct call to the app gets one
    ctx.with_resource(running(run))
    # every command's long work shows one progress bar (scalekit.progress), closed with it
    ctx.with_resource(ProgressBar(run))


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def usage_line(exc: TyperException) -> str:
    """A usage error in one line: the reason, and where the command's help is."""
    message = " ".join(exc.format_message().split())
    context = getattr(exc, "ctx", None)
    where = f" (see {context.command_path} --help)" if context is not None else ""
    return f"error: {message}{where}"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (0 ok, 1 internal error, 2 bad input, 130 Ctrl-C).

    An option given by its old name (:data:`scalekit_cli.options.RENAMED`) runs under its
    new one, and a note says so after a success. Python warnings raised meanwhile (numpy's
    RuntimeWarnings, say) are held back: after a success they follow the output as
    ``warning: …`` lines (none under ``--quiet``); after an error the error's one line is
    all that is printed.
    """
    from .options import renamed_options

    args, renamed = renamed_options(sys.argv[1:] if argv is None else list(argv))
    with warnings.catch_warnings(record=True) as caught:
        try:
            code = _run(args)
        except KeyboardInterrupt:  # Ctrl-C before the command's own handling begins
            from .common import interrupted_line

            typer.echo(interrupted_line(args), err=True)
            code = INTERRUPTED
    if code == 0 and not {"-q", "--quiet"} & set(args):
        for line in renamed:
            typer.echo(line, err=True)
        for text in dict.fromkeys(f"warning: {w.category.__name__}: {w.message}"
                                  for w in caught):
            typer.echo(text, err=True)
    return code


@functools.lru_cache(maxsize=16)
def command_flags(args: tuple[str, ...]) -> dict[str, str]:
    """The long flag of each option of the command ``args`` run, by the parameter the
    option fills (built once per argument list: the click tree takes ~20 ms)."""
    from .common import flags_of

    command = typer.main.get_command(app)
    for word in args:
        if not hasattr(command, "commands"):   # a command, not a group
            break
        command = command.commands.get(word, command)
    return flags_of(command)


def ctrl_c_within(exc: BaseException) -> bool:
    """Whether ``exc`` wraps a Ctrl-C: Python re-raises a ``KeyboardInterrupt`` that lands in
    some places (a descriptor's ``__set_name__`` while a module is imported, say) as another
    exception whose cause or context is the interrupt."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _no_space(exc: BaseException) -> str | None:
    """The one line for a write that a full device refused (an ``OSError`` that no writer
    turned into an :class:`InputError`); None for any other error."""
    if not isinstance(exc, OSError):
        return None
    from scalekit.serialise import no_space

    full = no_space(exc, exc.filename or os.getcwd() + os.sep + "output")
    return None if full is None else str(full)


def _run(args: list[str]) -> int:
    from .allocate import legacy_args
    from .common import in_flags, interrupted_line
    from .options import Invocation

    run = Invocation(flags=command_flags(tuple(args)))  # this run's shared state: ctx.obj
    try:
        args, note = legacy_args(args)
        run.flags = command_flags(tuple(args))
        if note and not {"-q", "--quiet"} & set(args):
            typer.echo(note, err=True)
        code = app(args=args, prog_name="scalekit", standalone_mode=False, obj=run)
    except typer.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:  # Ctrl-C outside typer's own handling (parsing the arguments)
        code = INTERRUPTED
    except typer.Abort:
        typer.echo("Aborted.", err=True)
        return 1
    except TyperException as exc:  # usage errors: unknown option, bad value, missing argument
        typer.echo(usage_line(exc), err=True)
        return 2
    except InputError as exc:
        typer.echo(f"error: {in_flags(str(exc), run.flags)}", err=True)
        return 2
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        if ctrl_c_within(exc):
            typer.echo(interrupted_line(args, run), err=True)
            return INTERRUPTED
        full = _no_space(exc)
        if full is not None:
            typer.echo(f"error: {full}", err=True)
            return 2
        if os.environ.get("SCALEKIT_DEBUG"):
            raise
        typer.echo(f"internal error: {type(exc).__name__}: {exc} "
                   "(set SCALEKIT_DEBUG=1 for the traceback)", err=True)
        return 1
    if code == INTERRUPTED:  # typer turns Ctrl-C in a command into this code
        typer.echo(interrupted_line(args, run), err=True)
        return INTERRUPTED
    return code if isinstance(code, int) else 0


def program() -> None:
    """The ``scalekit`` program: run :func:`main` and exit with its code.

    After a Ctrl-C the code stays 130. CPython kills itself with SIGINT at the very end of its
    exit when the interrupt first surfaced inside Python code that an extension ran (its flag
    for an unhandled ``KeyboardInterrupt`` is set there and never cleared, though the CLI handled
    the interrupt); so the program ignores further Ctrl-C and its last exit handler ends the
    process with 130 once every other handler has run.
    """
    interrupted: list[int] = []
    atexit.register(lambda: interrupted and _exit_now(interrupted[0]))  # registered first: runs last
    code = main()
    if code == INTERRUPTED:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        interrupted.append(code)
    sys.exit(code)


def _exit_now(code: int) -> None:
    """End the process with ``code`` at once (what is buffered for the terminal written first)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing more to write
            stream.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    program()
