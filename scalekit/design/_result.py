"""The result of a design: the runs chosen or proposed, why, and what they predict."""

from __future__ import annotations

from dataclasses import dataclass

from scalekit.diagnostics import Diagnostic
from scalekit.formatting import format_number
from scalekit.results import ResultProtocol


@dataclass(repr=False)
class DesignResult(ResultProtocol):
    """Runs chosen by a design method within a budget.

    Attributes
    ----------
    method : str
    law : dict
        ``name``, ``formula``, ``inputs``.
    budget : float
        What the runs may cost (in the pool's cost unit).
    replay : bool
        True when the pool's losses were revealed as runs were chosen (a replay).
    chosen : list of dict
        In the order chosen: ``row`` (pool row, 0-based), ``inputs``, ``cost``, ``step``,
        ``reason`` and, for a model-based pick, ``variance_reduction`` (the share of the
        target's predictive variance it is expected to remove, given the earlier picks of
        its batch: summed over the target rows, of the predicted values for ``ensemble``,
        of their logs for ``v_optimal`` and ``d_optimal``) and ``score``; ``settings``:
        the pool row's other columns (what a trainer needs to run it); in a replay also
        ``loss``.
    spent : float
        Share of the pool's total cost that the chosen runs cost.
    plan_cost : float
        What the chosen runs cost together.
    predictions : list of dict
        Per target row: ``inputs``, ``prediction``, ``interval``: a 95% prediction
        interval for a new run there (the law's uncertainty, the runs' noise and the law's
        discrepancy toward the target), None where the runs give none (a ``few_points``
        diagnostic says how many more do); empty when too few runs are observed to fit.
    fit : dict or None
        The final fit's parameter values.
    diagnostics : list of Diagnostic
    estimator : dict
        ``loss``, ``delta``, ``scale`` of the criterion and the final fit.
    score : dict or None
        Where the target rows' losses are known (:meth:`scored`): ``r2`` of the
        predictions (clipped to [-1, 1], as ScaleBench scores), ``coverage`` (the share of
        the rows with an interval that it holds) and ``rows``.
    """

    method: str
    law: dict
    budget: float
    replay: bool
    chosen: list
    spent: float
    plan_cost: float
    predictions: list
    fit: dict | None
    diagnostics: list
    estimator: dict | None = None
    score: dict | None = None

    def scored(self, losses) -> DesignResult:
        """This result with ``score`` set from the target rows' known ``losses``."""
        import numpy as np

        y = np.asarray(losses, dtype=float)
        predicted = np.array([p["prediction"] for p in self.predictions], dtype=float)
        if len(predicted) != len(y):
            return self
        total = float(((y - y.mean()) ** 2).sum())
        r2 = 1.0 - float(((y - predicted) ** 2).sum()) / total if total > 0 else float("nan")
        bands = [(p["interval"], v) for p, v in zip(self.predictions, y, strict=True)
                 if p["interval"] is not None]
        held = [lo <= v <= hi for (lo, hi), v in bands]
        self.score = {"r2": float(np.clip(r2, -1.0, 1.0)), "rows": len(y),
                      "coverage": float(np.mean(held)) if held else None}
        return self

    def to_dict(self) -> dict:
        return {"method": self.method, "law": dict(self.law), "budget": self.budget,
                "replay": self.replay, "chosen": list(self.chosen), "spent": self.spent,
                "plan_cost": self.plan_cost, "predictions": list(self.predictions),
                "fit": self.fit, "diagnostics": [d.to_dict() for d in self.diagnostics],
                "estimator": self.estimator, "score": self.score}

    def to_frame(self):
        """The runs in the order chosen: their inputs, cost, expected share of the target's
        variance removed (model-based picks) and, in a replay, loss."""
        import pandas as pd

        return pd.DataFrame([{"order": k + 1, "row": c["row"], **c["inputs"], "cost": c["cost"],
                              "variance_reduction": c.get("variance_reduction"),
                              **({"loss": c["loss"]} if "loss" in c else {}),
                              "reason": c["reason"]} for k, c in enumerate(self.chosen)])

    @classmethod
    def from_dict(cls, data: dict) -> DesignResult:
        return cls(method=data["method"], law=dict(data["law"]), budget=data["budget"],
                   replay=data["replay"], chosen=list(data["chosen"]), spent=data["spent"],
                   plan_cost=data["plan_cost"], predictions=list(data["predictions"]),
                   fit=data["fit"],
                   diagnostics=[Diagnostic.from_dict(d) for d in data["diagnostics"]],
                   estimator=data.get("estimator"), score=data.get("score"))

    def _summary_title(self) -> str:
        kind = "Replay" if self.replay else "Plan"
        article = "an" if self.method[:1].lower() in "aeiou" else "a"
        return f"{kind} of {article} {self.method} design of {self.law['name']}"

    def _summary_sections(self):
        answer = [("runs", len(self.chosen)), ("cost", self.plan_cost),
                  ("budget", self.budget), ("share of the pool's cost", self.spent)]
        runs = [(f"{k + 1}. row {c['row']}",
                 ", ".join(f"{n}={format_number(v)}" for n, v in c["inputs"].items())
                 + f"; cost {format_number(c['cost'])}; {c['reason']}")
                for k, c in enumerate(self.chosen)]
        predictions = [(", ".join(f"{n}={format_number(v)}" for n, v in p["inputs"].items()),
                        format_number(p["prediction"]) + (
                            "" if p["interval"] is None else
                            f" [{format_number(p['interval'][0])}, "
                            f"{format_number(p['interval'][1])}]"))
                       for p in self.predictions]
        if self.score is not None:
            answer.append(("target R² (known losses)", self.score["r2"]))
            if self.score["coverage"] is not None:
                answer.append(("target rows inside their interval", self.score["coverage"]))
        notes = [(d.code, d.message) for d in self.diagnostics] or [("none", "")]
        return [("Answer", answer), ("Runs, in order", runs or [("none", "")]),
                ("Target predictions (95%)", predictions or [("none", "too few runs to fit")]),
                ("Diagnostics", notes)]

    def _repr_fields(self) -> dict:
        return {"method": self.method, "runs": len(self.chosen), "plan_cost": self.plan_cost,
                "spent": self.spent}
