"""One self-contained HTML page of a result: the answer first, figures inline as SVG, tables,
diagnostics and the settings.

The page knows a result only through what the caller hands it: lines of the
answer, tidy tables (``to_frame()``), figures (matplotlib figures, inlined as
SVG) and the diagnostics as ``to_dict()`` writes them. Nothing is fetched from
elsewhere: no script, no style sheet, no font, so the file can be sent by
mail and opened anywhere.
"""

from __future__ import annotations

import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

from scalekit.formatting import format_number

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
.answer{font-size:1.25em;background:#f3f6fa;border-left:4px solid #2a6ebb;padding:.6em 1em}
.answer p{margin:.2em 0} table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left} figure{margin:1em 0} figure svg{max-width:100%;height:auto}
.error{color:#b00020}.warning{color:#8a5a00}.info{color:#555} code{font-size:.9em}
"""

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def figure_svg(figure) -> str:
    """``figure`` (matplotlib) as inline SVG markup; the figure is closed."""
    from scalekit.report._figures import pyplot

    out = io.StringIO()
    figure.savefig(out, format="svg")
    pyplot().close(figure)
    text = out.getvalue()
    return text[text.index("<svg"):]


def table_html(frame) -> str:
    """A DataFrame as an HTML table, every number through :func:`format_number`."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def html_page(title: str, *, answer: Sequence[str] = (),
              figures: Sequence[tuple[str, Any]] = (), tables: Sequence[tuple[str, Any]] = (),
              diagnostics: Sequence[Mapping[str, Any]] = (), notes: Sequence[str] = (),
              settings: Mapping[str, Any] | None = None) -> str:
    """The page: title, the answer (one paragraph per line), figures (caption, matplotlib
    figure or SVG markup), tables (caption, DataFrame), diagnostics (worst first), notes
    and settings."""
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    if answer:
        parts.append("<section class='answer'>"
                     + "".join(f"<p>{html.escape(line)}</p>" for line in answer) + "</section>")
    for caption, figure in figures:
        svg = figure if isinstance(figure, str) else figure_svg(figure)
        parts.append(f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>")
    for caption, frame in tables:
        parts.append(f"<h2>{html.escape(caption)}</h2>{table_html(frame)}")
    if diagnostics or notes:
        parts.append("<h2>Diagnostics and notes</h2><ul>")
        for d in sorted(diagnostics, key=lambda d: _SEVERITY_ORDER.get(d.get("severity"), 3)):
            severity = html.escape(str(d.get("severity", "info")))
            parts.append(f"<li class='{severity}'><b>{severity}</b> "
                         f"<code>{html.escape(str(d.get('code', '')))}</code>: "
                         f"{html.escape(str(d.get('message', '')))}</li>")
        parts += [f"<li class='info'>note: {html.escape(n)}</li>" for n in notes]
        parts.append("</ul>")
    if settings:
        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(_cell(v))}</td></tr>"
                       for k, v in settings.items())
        parts.append(f"<details><summary>Settings</summary><table>{rows}</table></details>")
    parts.append("</body></html>")
    return "".join(parts)


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return format_number(value)
