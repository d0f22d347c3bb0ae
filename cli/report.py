"""``scalekit report``: the HTML page of a saved JSON report (``--json`` of an analysis)."""

from __future__ import annotations

from pathlib import Path

import typer

from .options import HTML_SUFFIXES, output_option


def report(
    result: Path = typer.Argument(..., help="A JSON report written by --json."),
    out: Path = output_option("-o", HTML_SUFFIXES, "Write the HTML page here."),
) -> None:
    """Write the self-contained HTML page of a saved result (answer, figures, tables)."""
    from scalekit.errors import InputError

    if out is None:
        raise InputError("give the page to write with -o OUT.html")
    report_json = _read(result)
    kind = str(report_json.get("format", "")).removeprefix("scalekit.").split("/")[0]
    if kind != "fit" or "groups" in report_json:
        raise InputError(f"pages are made from fit reports of one law so far, but this is a "
                         f"{kind or 'unknown'} report; write its page with --html as it runs",
                         source=str(result))
    from scalekit.fit import FitResult

    from .fit import fit_page

    try:
        fitted = FitResult.from_dict(report_json)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"the fit report is incomplete ({exc})", source=str(result)) from None
    out.write_text(fit_page(fitted, report_json, report_json.get("settings", {})),
                   encoding="utf-8")


def _read(path: Path) -> dict:
    import json

    from scalekit.errors import InputError

    if not path.is_file():
        raise InputError("no such file", source=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a JSON file: {exc}", source=str(path)) from None
    if not isinstance(data, dict) or not str(data.get("format", "")).startswith("scalekit."):
        raise InputError("not a scalekit report (no scalekit.<kind>/<version> format)",
                         source=str(path))
    return data


def register(app: typer.Typer) -> None:
    """Add the ``report`` command to ``app``."""
    app.command("report")(report)
