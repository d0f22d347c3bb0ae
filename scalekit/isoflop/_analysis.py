"""Run the IsoFLOP analyses the CLI asks for: a result holding the JSON body and the fitted
estimators (the CLI renders its tables)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.formatting import collapse_notes, format_number, format_with_interval
from scalekit.isoflop._approach1 import Envelope
from scalekit.isoflop._approach2 import IsoFLOPProfiles
from scalekit.isoflop._approach3 import ParametricOptimum
from scalekit.isoflop._compare import comparison_table, spread_explained
from scalekit.isoflop._points import convention_text, final_points
from scalekit.results import ResultProtocol

NAMES = {"1": "1 envelope", "2": "2 IsoFLOP profiles", "3": "3 parametric law"}
#: The estimator of each approach.
APPROACHES = {"1": Envelope, "2": IsoFLOPProfiles, "3": ParametricOptimum}


@dataclass(repr=False)
class IsoFLOPReport(ResultProtocol):
    """What ``run_isoflop`` produced: the JSON body (numbers, notes, diagnostics, verdict) and
    the fitted estimators. The CLI renders it; nothing here builds a terminal line.

    ``to_dict`` is the body with the title; each fitted estimator writes its own
    ``to_dict`` into the body, and ``from_dict`` rebuilds them from it.
    """

    title: str
    body: dict
    fitted: dict = field(default_factory=dict)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every approach's diagnostics (their messages name the approach)."""
        return [Diagnostic.from_dict(d) for d in self.body.get("diagnostics", [])]

    def to_dict(self) -> dict:
        return {**self.body, "title": self.title}

    @classmethod
    def from_dict(cls, data: dict) -> IsoFLOPReport:
        body = {k: v for k, v in data.items() if k != "title"}
        fitted = {key: APPROACHES[key].from_dict(body["approaches"][name])
                  for key, name in NAMES.items() if name in body.get("approaches", {})}
        return cls(data["title"], body, fitted)

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
        rows = [(r["approach"], f"a {format_with_interval(r['a'], (r['a_lo'], r['a_hi']))}, "
                                f"b {format_with_interval(r['b'], (r['b_lo'], r['b_hi']))}, "
                                f"k_N {format_number(r['k_N'])}, k_D {format_number(r['k_D'])}")
                for r in self.body.get("comparison", [])]
        notes = [f"note: {n}" for n in self.body.get("notes", [])]
        notes += [d.line() for d in self.diagnostics]
        return [("FLOPs", [self.body.get("convention", "")]),
                ("Compute-optimal allocation", rows),
                ("Notes and warnings", collapse_notes(notes) + [self.body.get("verdict", "")])]

    def _repr_fields(self) -> dict:
        return {"what": self.title.split(":")[0],
                "approaches": len(self.fitted) or len(self.body.get("approaches", {}))}


def verdict(diagnostics: dict[str, list[Diagnostic]], *, others: int = 0) -> str:
    """One line: per approach (``diagnostics`` by approach name), how many warnings or errors
    say not to believe it as it stands; then the ``others`` that no approach carries (an
    approach skipped, the data's), so that "no warnings" never sits above a warning."""
    parts = []
    for name, found in diagnostics.items():
        serious = Counter(d.code for d in found if d.severity != "info")
        total = sum(serious.values())
        codes = ", ".join(code + (f" ×{n}" if n > 1 else "") for code, n in serious.items())
        parts.append(f"{name}: no warnings" if not total else
                     f"{name}: {total} warning{'s' if total > 1 else ''} ({codes}); read "
                     f"{'them' if total > 1 else 'it'} before trusting its numbers")
    if others:
        parts.append(f"{others} further warning{'s' if others > 1 else ''} below (an approach "
                     "skipped, the data)")
    return "verdict: " + "; ".join(parts)


def _estimators(settings: dict, seed: int) -> dict:
    common = {"ci_level": settings["ci_level"], "convention": settings["convention"],
              "flops_per_param_token": settings["flops_per_param_token"], "seed": seed}
    return {"1": lambda: Envelope(n_boot=settings["bootstrap"], **common),
            "2": lambda: IsoFLOPProfiles(profile=settings["profile"], figures=settings["figures"],
                                         budgets=settings["budgets"],
                                         tolerance=settings["budget_tolerance"],
                                         window=settings.get("window"),
                                         n_boot=settings["bootstrap"], **common),
            "3": lambda: ParametricOptimum(n_boot=settings["bootstrap"],
                                           drop_top=settings.get("drop_top", 0), **common)}


def run_isoflop(frame, wanted, settings: dict, *, seed: int, source: str | None) -> IsoFLOPReport:
    """Fit the ``wanted`` approaches ("1", "2", "3"); with several, skip those the data do not
    support (the reason is reported) as long as one succeeds."""
    from scalekit.curves import Curves

    curves = Curves.of(frame)
    frame = curves.frame
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
        if len({why for why in skipped.values()}) == 1:   # one reason for all: say it once
            raise errors[0]
        name, why = min(skipped.items(), key=lambda item: len(item[1]))   # the plainest
        text = f"no approach can be fitted to these data; {name}: {why}"
        if len(text) > 160:
            text = ("no approach can be fitted to these data; give `approach` (1, 2 or 3) "
                    "to read one approach's reason")
        raise InputError(text, source=source)
    named = {NAMES[k]: m for k, m in fitted.items()}
    target = settings.get("target_compute")
    table = comparison_table(named, target)
    explained = spread_explained(named)
    warnings = [f"approach {NAMES[k]}: {w}" for k, m in fitted.items() for w in m.warnings_]
    warnings += [f"approach {name} skipped: {why}" for name, why in skipped.items()]
    found = {NAMES[k]: m.diagnostics_ + (m.extrapolation(target) if target else [])
             for k, m in fitted.items()}
    diagnostics = list(curves.diagnostics)  # the reader's (the metric choice), then each fit's
    diagnostics += [replace(d, message=f"approach {name}: {d.message}")
                    for name, ds in found.items() for d in ds]
    said = {d.message for ds in found.values() for d in ds}
    others = (len(skipped) + sum(d.severity != "info" for d in curves.diagnostics)
              + sum(w not in said for m in fitted.values() for w in m.warnings_))
    verdict_line = verdict(found, others=others)
    convention = convention_text(settings["convention"], settings["flops_per_param_token"])
    notes = curves.unsaid_notes()
    for model in fitted.values():
        notes += [n for n in model.notes_ if n not in notes]
    body = {"convention": convention, "notes": notes,
            "approaches": {NAMES[k]: m.to_dict() for k, m in fitted.items()},
            "comparison": table.to_dict(orient="records"),
            "spread_explained": explained, "skipped": skipped, "warnings": warnings,
            "diagnostics": [d.to_dict() for d in diagnostics], "verdict": verdict_line}
    return IsoFLOPReport("IsoFLOP analysis: compute-optimal N*(C) = k_N·C^a, D*(C) = k_D·C^b",
                         body, fitted)
