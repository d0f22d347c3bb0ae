"""The fit report: fixed sections as rich renderables and as a JSON body.

Sections, always in this order: law and formula; fit statistics; parameters
with standard error and interval; derived quantities; the plan for a target
compute (when asked); notes and warnings (the notes, then one line per
diagnostic). The CLI prints them; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from scalekit.formatting import collapse_notes
from scalekit.formatting import format_interval as _interval
from scalekit.formatting import format_number as _num


def _section(title: str) -> Text:
    return Text(title, style="bold underline")


def _pairs_table(rows: Mapping[str, Any]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="cyan")
    table.add_column(justify="right")
    for key, value in rows.items():
        table.add_row(key, _interval(value) if isinstance(value, (list, tuple)) else _num(value))
    return table


def fit_renderables(result, *, notes: Sequence[str] = (), plan: Mapping[str, Any] | None = None,
                    title: str | None = None) -> Group:
    """The fit report of ``result`` (a :class:`~scalekit.fit.FitResult`) as one rich group.

    Under "Notes and warnings": the notes, then one line per diagnostic, the
    result's and then the plan's (``plan["diagnostics"]``).
    """
    level = f"{result.ci_level:.0%}"
    parts: list[Any] = []
    if title:
        parts.append(Text(title, style="bold"))
    parts += [_section("Law"), Text(f"{result.law.name}:  {result.law.formula}"), Text("")]

    scalars = {k: v for k, v in result.stats.items() if not isinstance(v, Mapping)}
    parts += [_section("Fit statistics"), _pairs_table(scalars), Text("")]

    params = Table(box=None, pad_edge=False)
    params.add_column("parameter", style="cyan")
    params.add_column("value", justify="right")
    params.add_column("stderr", justify="right")
    params.add_column(f"{level} CI", justify="right")
    for name, value in result.values.items():
        params.add_row(name, _num(value), _num(result.stderr.get(name)),
                       _interval(result.ci.get(name) if result.ci else None))
    parts += [_section("Parameters"), params, Text("")]

    if result.derived:
        derived = Table(box=None, pad_edge=False)
        derived.add_column("quantity", style="cyan")
        derived.add_column("value", justify="right")
        derived.add_column(f"{level} CI", justify="right")
        for name, value in result.derived.items():
            derived.add_row(name, _num(value), _interval(result.derived_ci.get(name)))
        parts += [_section("Derived quantities"), derived, Text("")]

    if plan is not None:
        parts += [_section(f"Plan at compute {_num(plan['compute'])} FLOPs"),
                  _pairs_table({k: v for k, v in plan.items() if k not in ("compute", "diagnostics")}),
                  Text("")]

    diagnostics = list(result.diagnostics) + list((plan or {}).get("diagnostics", []))
    if notes or diagnostics:
        parts.append(_section("Notes and warnings"))
        parts += [Text(line) for line in collapse_notes(f"note: {n}" for n in notes)]
        styles = {"info": "", "warning": "yellow", "error": "bold red"}
        severity = {d.line(): d.severity for d in diagnostics}
        parts += [Text(line, style=styles.get(severity.get(line.rsplit(" (×", 1)[0]), ""))
                  for line in collapse_notes(d.line() for d in diagnostics)]
    return Group(*parts)
