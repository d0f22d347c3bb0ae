"""``HparamsFit``: the optimal learning rate and batch size of a sweep, as laws in N and D."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scalekit.diagnostics import Diagnostic
from scalekit.formatting import format_interval, format_number
from scalekit.results import ResultProtocol


@dataclass(repr=False)
class HparamsFit(ResultProtocol):
    """What :func:`~scalekit.planners.fit_hparams` found.

    Attributes
    ----------
    cells : list of dict
        One row per (N, D) cell: ``params``, ``tokens``, ``runs``, ``used``, the optimum
        (``lr``, ``batch``, ``loss``), ``bracketed_lr``, ``bracketed_batch``, ``loo_rmse``
        (leave-one-run-out error of the surface) and the relative loss penalties of a 2×
        larger learning rate or batch (``penalty_lr_2x``, ``penalty_batch_2x``), and the best
        measured run (``grid_lr``, ``grid_batch``, ``grid_loss``) and the laws' values there
        (``lr_law``, ``batch_law``).
    laws : dict
        ``lr``, ``batch``, ``penalty_lr_2x``: each ``form``, ``terms`` (``k`` and exponents),
        ``coef`` (of ``ln y`` on the form's columns), ``cells`` (how many it was fitted to),
        ``held_out`` (each form's held-out root mean squared log error) and ``bootstrap``
        (rows of coefficients and a held-out residual, for the intervals); ``loss``: the
        Chinchilla law of the cells' optimal loss.
    surface : dict
        The surface ``form`` of every cell, the ``window`` and each form's pooled
        leave-one-run-out error (``scores``).
    recommendation : dict or None
        At ``params``, ``tokens``: ``lr``, ``lr_interval``, ``batch``, ``batch_interval``,
        ``loss``, ``penalty_lr_2x``, ``level`` and ``lr_variants`` (the lr interval's ends
        around ``lr``: the learning rates a guard would try).
    published : dict
        The published laws at the same ``params`` and ``tokens`` (empty without a target).
    grid_scores : dict
        Where the recommendation and each published law land on a measured grid of the
        target cell (:func:`~scalekit.planners.score_on_grid`), by name; empty unless scored.
    settings : dict
        The settings of the fit (columns, bootstrap, seed, …).
    diagnostics : list of Diagnostic
    """

    cells: list[dict]
    laws: dict[str, Any]
    surface: dict[str, Any]
    recommendation: dict[str, Any] | None = None
    published: dict[str, Any] = field(default_factory=dict)
    grid_scores: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"cells": self.cells, "laws": self.laws, "surface": self.surface,
                "recommendation": self.recommendation, "published": self.published,
                "grid_scores": self.grid_scores, "settings": self.settings,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HparamsFit:
        recommendation = data.get("recommendation")
        if recommendation is not None:
            recommendation = {key: tuple(value) if isinstance(value, list) else value
                              for key, value in recommendation.items()}
        return cls(cells=data["cells"], laws=data["laws"], surface=data["surface"],
                   recommendation=recommendation, published=data.get("published", {}),
                   grid_scores=data.get("grid_scores", {}), settings=data.get("settings", {}),
                   diagnostics=[Diagnostic.from_dict(d) for d in data.get("diagnostics", [])])

    def to_frame(self):
        """One row per (N, D) cell (see ``cells``)."""
        import pandas as pd

        return pd.DataFrame(self.cells)

    def _summary_title(self) -> str:
        return "Optimal learning rate and batch size"

    def _summary_sections(self):
        sections = []
        if self.recommendation is not None:
            r = self.recommendation
            level = f"{100 * r['level']:g}%"
            sections.append(("Recommendation", [
                ("N, D", f"{format_number(r['params'])}, {format_number(r['tokens'])}"),
                ("learning rate", format_number(r["lr"])),
                (f"lr {level} interval", format_interval(r["lr_interval"])),
                ("learning rates to guard", ", ".join(format_number(v) for v in r["lr_variants"] or ())
                 or "–"),
                ("batch", format_number(r["batch"])),
                (f"batch {level} interval", format_interval(r["batch_interval"])),
                ("loss at the optimum", format_number(r["loss"])),
                ("loss cost of a 2× learning rate", format_number(r["penalty_lr_2x"]))]))
        rows = []
        for name in ("lr", "batch", "penalty_lr_2x"):
            law = self.laws.get(name)
            if law is not None:
                terms = ", ".join(f"{k} = {format_number(v)}" for k, v in law["terms"].items())
                rows.append((f"{name} ~ {law['form']}", f"{terms} ({law['cells']} cells)"))
        sections.append(("Laws", rows))
        for title, found, line in (("Published laws", self.published, _published_line),
                                   ("On the measured grid", self.grid_scores, _score_line)):
            if found:
                sections.append((title, [(name, line(v)) for name, v in found.items()]))
        bracketed = sum(c["bracketed_lr"] and c["bracketed_batch"] for c in self.cells)
        sections.append(("Cells", [("cells", len(self.cells)), ("bracketed on both axes", bracketed),
                                   ("surface", self.surface["form"])]))
        sections.append(("Diagnostics", [d.message for d in self.diagnostics]))
        return sections

    def _repr_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"cells": len(self.cells), "surface": self.surface["form"]}
        if self.recommendation is not None:
            fields.update(lr=self.recommendation["lr"], batch=self.recommendation["batch"])
        return fields


def _published_line(p: dict) -> str:
    batch = (format_number(p["batch_value"]) if p["batch_value"] is not None
             else f"{format_number(p['batch_tokens'])} tokens")
    return f"lr {format_number(p['lr_value'])}, batch {batch}"


def _score_line(s: dict) -> str:
    return (f"lands on lr {format_number(s['lr'])}, batch {format_number(s['batch'])}: "
            f"loss {format_number(s['loss'], 5)}, {format_number(100 * s['gap'])}% above the "
            f"grid's best {format_number(s['best_loss'], 5)}")
