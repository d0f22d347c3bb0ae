"""The fit report as rich renderables, the answer first.

Sections, always in this order: the fitted law written out with its numbers;
the plan for a target compute (when asked: N*, D*, tokens per parameter and
the loss, each with its interval); parameters with standard error and
interval; derived quantities; fit statistics (the optimiser's internals only
when ``verbose``); notes and warnings (notes and infos on one line, at most
three warnings, worst first, unless ``verbose``). The CLI prints them; nothing
here prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from scalekit.diagnostics import digest
from scalekit.formatting import collapse_notes, format_with_interval
from scalekit.formatting import format_interval as _interval
from scalekit.formatting import format_number as _num

#: Fit statistics a reader needs; the rest (the multi-start's internals) show with ``verbose``.
BRIEF_STATS = ("n_points", "objective", "loss", "delta", "residual_scale", "aic", "bic",
               "converged", "bootstrap", "resample", "ci_method", "nd_range")
#: The plan's rows, each with the key of its interval, in the order they are shown.
PLAN_ROWS = (("N* (parameters)", "params", "params_ci"), ("D* (tokens)", "tokens", "tokens_ci"),
             ("tokens per parameter", "tokens_per_param", "tokens_per_param_ci"),
             ("loss (mean law)", "loss", "loss_ci"), ("loss (a new run)", "loss", "loss_pi"))


def _section(title: str) -> Text:
    return Text(title, style="bold underline")


def _pairs_table(rows: Mapping[str, Any]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="cyan")
    table.add_column(justify="right")
    for key, value in rows.items():
        table.add_row(key, _interval(value) if isinstance(value, (list, tuple)) else _num(value))
    return table


def plan_rows(plan: Mapping[str, Any]) -> dict[str, str]:
    """The plan's answer, a line per quantity: ``value [lo, hi]``."""
    return {label: format_with_interval(plan[key], plan.get(ci))
            for label, key, ci in PLAN_ROWS if key in plan}


def fit_renderables(result, *, notes: Sequence[str] = (), plan: Mapping[str, Any] | None = None,
                    title: str | None = None, verbose: bool = False,
                    more: str = "{n} more {what}") -> Group:
    """The fit report of ``result`` (a :class:`~scalekit.fit.FitResult`) as one rich group.

    ``more`` says how many notes or warnings are not shown (``{n}`` of ``{what}``);
    ``verbose`` shows every statistic, note and warning.
    """
    level = f"{result.ci_level:.0%}"
    parts: list[Any] = []
    if title:
        parts.append(Text(title, style="bold"))
    parts += [Text(result.equation(), style="bold"),
              Text(f"{result.law.name} law fitted to {_num(result.stats.get('n_points'))} "
                   f"points; intervals at {level}"), Text("")]

    if plan is not None:
        parts += [_section(f"Plan at compute {_num(plan['compute'])} FLOPs "
                           f"({plan.get('convention', 'C = 6·N·D')})"),
                  _pairs_table(plan_rows(plan)), Text("")]

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

    scalars = {k: v for k, v in result.stats.items()
               if not isinstance(v, Mapping) and (verbose or k in BRIEF_STATS)}
    parts += [_section("Fit statistics"), _pairs_table(scalars), Text("")]

    diagnostics = list(result.diagnostics) + list((plan or {}).get("diagnostics", []))
    parts += diagnostic_texts(notes, diagnostics, verbose=verbose, more=more)
    return Group(*parts)


def diagnostic_lines(notes: Sequence[str], diagnostics: Sequence[Any], *, verbose: bool,
                     more: str) -> list[tuple[str, str]]:
    """The lines under "Notes and warnings", each with its severity: every line when
    ``verbose``; else the notes and infos as one line and at most three warnings, worst
    first, then ``more`` (``{n}`` more ``{what}``)."""
    infos, shown, hidden = digest(notes, diagnostics, limit=None if verbose else 3)
    out = []
    if verbose:
        out += [(line, "info") for line in collapse_notes(f"note: {n}" for n in infos)]
    elif infos:
        rest = "" if len(infos) == 1 else f" ({more.format(n=len(infos) - 1, what='notes')})"
        out.append((f"note: {infos[0]}{rest}", "info"))
    out += [(d.line(), d.severity) for d in shown]
    if hidden:
        out.append((more.format(n=hidden, what="warnings"), "warning"))
    return out


def diagnostic_texts(notes: Sequence[str], diagnostics: Sequence[Any], *, verbose: bool,
                     more: str) -> list[Text]:
    """:func:`diagnostic_lines` under the heading "Notes and warnings", coloured by severity."""
    if not notes and not diagnostics:
        return []
    styles = {"info": "", "warning": "yellow", "error": "bold red"}
    return [_section("Notes and warnings")] + [
        Text(line, style=styles[severity])
        for line, severity in diagnostic_lines(notes, diagnostics, verbose=verbose, more=more)]
