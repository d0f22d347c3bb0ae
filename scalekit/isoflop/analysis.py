"""Run the IsoFLOP analyses the CLI asks for: a JSON body and tables as data."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.formatting import MISSING, collapse_notes, format_number, format_with_interval
from scalekit.isoflop.approach1 import Envelope
from scalekit.isoflop.approach2 import IsoFLOPProfiles
from scalekit.isoflop.approach3 import ParametricOptimum
from scalekit.isoflop.compare import comparison_table, spread_explained
from scalekit.isoflop.points import convention_text, final_points
from scalekit.results import ResultProtocol

NAMES = {"1": "1 envelope", "2": "2 IsoFLOP profiles", "3": "3 parametric law"}
#: The estimator of each approach.
APPROACHES = {"1": Envelope, "2": IsoFLOPProfiles, "3": ParametricOptimum}


@dataclass(repr=False)
class IsoFLOPReport(ResultProtocol):
    """What ``run_isoflop`` produced: the JSON body, tables as data
    (see :mod:`scalekit.report.tables`), the fitted estimators and the note lines.

    ``to_dict`` is the body with the title, tables and notes; each fitted estimator
    writes its own ``to_dict`` into the body, and ``from_dict`` rebuilds them from it.
    """

    title: str
    body: dict
    tables: list = field(default_factory=list)
    fitted: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**self.body, "title": self.title, "tables": self.tables,
                "notes_lines": list(self.notes)}

    @classmethod
    def from_dict(cls, data: dict) -> "IsoFLOPReport":
        body = {k: v for k, v in data.items() if k not in ("title", "tables", "notes_lines")}
        fitted = {key: APPROACHES[key].from_dict(body["approaches"][name])
                  for key, name in NAMES.items() if name in body.get("approaches", {})}
        return cls(data["title"], body, list(data["tables"]), fitted, list(data["notes_lines"]))

    def to_frame(self):
        """The approaches compared: one row per approach and quantity (``a``, ``b``,
        ``k_N``, ``k_D``) with ``value``, ``ci_low``, ``ci_high``."""
        import pandas as pd

        frames = [model.exponents_frame().assign(approach=NAMES[key])
                  for key, model in self.fitted.items()]
        columns = ["approach", "quantity", "value", "ci_low", "ci_high"]
        return pd.concat(frames, ignore_index=True)[columns] if frames else \
            pd.DataFrame(columns=columns)

    def _summary_title(self) -> str:
        return self.title

    def _summary_sections(self):
        sections = [("FLOPs", [self.body.get("convention", "")])]
        for table in self.tables:
            columns = table["columns"]
            sections.append((table["title"], [
                (row[0], ", ".join(f"{c} {v if isinstance(v, str) else format_number(v)}"
                                   for c, v in zip(columns[1:], row[1:])))
                for row in table["rows"]]))
        return sections + [("Notes and warnings", collapse_notes(self.notes))]

    def _repr_fields(self) -> dict:
        return {"what": self.title.split(":")[0], "approaches": len(self.fitted) or
                len(self.body.get("approaches", {})), "tables": len(self.tables)}


def verdict(diagnostics: list[Diagnostic], approaches) -> str:
    """One line: per approach, how many warnings or errors say not to believe it as it stands."""
    parts = []
    for name in approaches:
        serious = Counter(d.code for d in diagnostics
                          if d.severity != "info" and d.message.startswith(f"approach {name}:"))
        total = sum(serious.values())
        codes = ", ".join(code + (f" ×{n}" if n > 1 else "") for code, n in serious.items())
        parts.append(f"{name}: no warnings" if not total else
                     f"{name}: {total} warning{'s' if total > 1 else ''} ({codes}); read "
                     f"{'them' if total > 1 else 'it'} before trusting its numbers")
    return "verdict: " + "; ".join(parts)


def _lines(notes, diagnostics, warnings, verdict_line) -> list[str]:
    """Terminal lines: the verdict, then "Notes and warnings" (notes, diagnostics, and the
    warnings no diagnostic carries)."""
    said = {d.message for d in diagnostics}
    out = [verdict_line, "Notes and warnings:"] + [f"note: {n}" for n in notes]
    out += [d.line() for d in diagnostics]
    return out + [f"warning: {w}" for w in warnings if w not in said]


def _estimators(settings: dict, seed: int) -> dict:
    common = {"ci_level": settings["ci_level"], "convention": settings["convention"],
              "flops_per_param_token": settings["flops_per_param_token"], "seed": seed}
    return {"1": lambda: Envelope(n_boot=settings["bootstrap"], **common),
            "2": lambda: IsoFLOPProfiles(profile=settings["profile"], figures=settings["figures"],
                                         budgets=settings["budgets"],
                                         tolerance=settings["budget_tolerance"],
                                         window=settings.get("window"),
                                         n_boot=settings["bootstrap"], **common),
            "3": lambda: ParametricOptimum(n_boot=settings["bootstrap"], **common)}


def run_isoflop(frame, wanted, settings: dict, *, seed: int, source: str | None) -> IsoFLOPReport:
    """Fit the ``wanted`` approaches ("1", "2", "3"); with several, skip those the data do not
    support (the reason is reported) as long as one succeeds."""
    makers = _estimators(settings, seed)
    for key in wanted:  # a bad setting is an error, not a reason to skip an approach
        makers[key]().check_settings()
    fitted, skipped, errors = {}, {}, []
    for key in wanted:
        data = frame if key == "1" else final_points(frame)
        try:
            fitted[key] = makers[key]().fit(data, source=source)
        except InputError as exc:
            if len(wanted) == 1:
                raise
            skipped[NAMES[key]] = exc.reason
            errors.append(exc)
    if not fitted:
        if len(errors) == 1:
            raise errors[0]
        raise InputError("no approach can be fitted to these data: " + "; ".join(
            f"{name}: {why}" for name, why in skipped.items()), source=source)
    named = {NAMES[k]: m for k, m in fitted.items()}
    target = settings.get("target_compute")
    table = comparison_table(named, target)
    explained = spread_explained(named)
    warnings = [f"approach {NAMES[k]}: {w}" for k, m in fitted.items() for w in m.warnings_]
    warnings += [f"approach {name} skipped: {why}" for name, why in skipped.items()]
    diagnostics = [replace(d, message=f"approach {NAMES[k]}: {d.message}")
                   for k, m in fitted.items()
                   for d in m.diagnostics_ + (m.extrapolation(target) if target else [])]
    verdict_line = verdict(diagnostics, named)
    convention = convention_text(settings["convention"], settings["flops_per_param_token"])
    notes = list(frame.attrs.get("notes", []))
    for model in fitted.values():
        notes += [n for n in model.notes_ if n not in notes]
    body = {"convention": convention, "notes": notes,
            "approaches": {NAMES[k]: m.to_dict() for k, m in fitted.items()},
            "comparison": table.to_dict(orient="records"),
            "spread_explained": explained, "skipped": skipped, "warnings": warnings,
            "diagnostics": [d.to_dict() for d in diagnostics], "verdict": verdict_line}
    return IsoFLOPReport("IsoFLOP analysis: compute-optimal N*(C) = k_N·C^a, D*(C) = k_D·C^b",
                         body, _tables(fitted, table, explained, target, settings["ci_level"]),
                         fitted, _lines(notes, diagnostics, warnings, verdict_line))


def _tables(fitted, table, explained, target, level) -> list[dict]:
    pct = f"{100 * level:g}%"
    columns = ["approach", f"a [{pct}]", f"b [{pct}]", "k_N", "k_D"]
    if target is not None:
        columns += [f"N*({_g(target)}) [{pct}]", f"D*({_g(target)}) [{pct}]"]
    rows = []
    for _, r in table.iterrows():
        row = [r["approach"], _with_ci(r["a"], (r["a_lo"], r["a_hi"]), 3),
               _with_ci(r["b"], (r["b_lo"], r["b_hi"]), 3), _g(r["k_N"]), _g(r["k_D"])]
        if target is not None:
            row += [_with_ci(r["params"], (r["params_lo"], r["params_hi"])),
                    _with_ci(r["tokens"], (r["tokens_lo"], r["tokens_hi"]))]
        rows.append(row)
    out = [{"title": "Compute-optimal allocation", "columns": columns, "rows": rows}]
    if "2" in fitted:
        m = fitted["2"]
        var = m.profile
        budget_rows = [[_g(r["budget"]), f"{r['n_points']}/{r['n_sampled']}",
                        _with_ci(r[f"{var}_opt"], (r.get(f"{var}_lo"), r.get(f"{var}_hi"))),
                        _g(r["loss_opt"], 4), _g(r["offset"], 2), _g(r["misfit_p"], 2),
                        r["flags"] or "-"]
                       for _, r in m.budgets_.iterrows()]
        out.append({"title": f"Approach 2 budgets ({m.budgeting_}); vertex in log {var}; "
                             f"points used: {m.windows_.method}",
                    "columns": ["budget", "points used", f"{var}* [{pct}]", "loss*", "offset",
                                "misfit p", "flags"],
                    "rows": budget_rows})
    if explained:
        out.append({"title": "Spread of a, b across approaches explained by each approach-2 "
                             "warning (refit without the flagged budgets)",
                    "columns": ["warning", "budgets", "a without", "a spread explained",
                                "b without", "b spread explained"],
                    "rows": [[flag, str(e["budgets"]), _g(e["a_without"], 3),
                              _pct(e["a_spread_explained"]), _g(e["b_without"], 3),
                              _pct(e["b_spread_explained"])] for flag, e in explained.items()]})
    return out


def _g(value, digits: int = 3) -> str:
    return format_number(value, digits)


def _pct(value) -> str:
    return MISSING if value is None else f"{100 * value:.0f}%"


def _with_ci(value, ci, digits: int = 3) -> str:
    return format_with_interval(value, ci, digits)
