"""The result of a compute plan from a fitted law, read like the mapping of its values.

:func:`scalekit.fit.plan_for_compute` (what a budget buys), and
:func:`scalekit.isoflop.plan_for_loss` (the least compute reaching a loss) and
:func:`scalekit.isoflop.compare_allocation` (what a chosen N, D spends beyond the
optimum) return a :class:`ComputePlan`: the result protocol (``to_dict`` /
``from_dict``, ``summary``, a one-line ``repr``) over the plan's values, which it also
hands out by key (``plan["params"]``, ``plan["diagnostics"]``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scalekit.diagnostics import Diagnostic
from scalekit.results import ResultProtocol

#: The kinds of plan, by the question each answers.
PLAN_KINDS = {"compute": "what a compute budget buys",
              "loss": "the least compute reaching a loss",
              "comparison": "the compute a chosen N, D spends beyond the optimum"}


@dataclass(repr=False)
class ComputePlan(ResultProtocol, Mapping):
    """A plan's ``kind`` (a key of :data:`PLAN_KINDS`), its values and diagnostics.

    Attributes
    ----------
    kind : str
    values : dict
        The plan's numbers and strings (``compute``, ``params``, ``loss``, their
        intervals ``*_ci`` / ``loss_pi``, ``convention``, ...; see the function that
        made it). For an array of budgets every number is an array.
    diagnostics : list of Diagnostic
        ``extrapolation`` and the like, for the plan's own numbers.
    """

    kind: str
    values: dict
    diagnostics: list = field(default_factory=list)

    def __getitem__(self, key: str) -> Any:
        return self.diagnostics if key == "diagnostics" else self.values[key]

    def __iter__(self) -> Iterator[str]:
        yield from self.values
        yield "diagnostics"

    def __len__(self) -> int:
        return len(self.values) + 1

    def to_dict(self) -> dict[str, Any]:
        values = {k: v.tolist() if isinstance(v, np.ndarray) else v
                  for k, v in self.values.items()}
        return {"kind": self.kind, **values,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ComputePlan":
        values = {k: v for k, v in data.items() if k not in ("kind", "diagnostics")}
        return cls(data["kind"], values,
                   [Diagnostic.from_dict(d) for d in data.get("diagnostics", [])])

    def to_frame(self):
        """One row per planned budget (one row for a plan of one): every number, each
        interval as ``<name>_low`` and ``<name>_high``."""
        import pandas as pd

        columns = {}
        for key, value in self.values.items():
            if isinstance(value, str):
                continue
            if key.endswith(("_ci", "_pi")):
                ends = np.asarray(value, dtype=float)
                columns[f"{key}_low"], columns[f"{key}_high"] = ends[0], ends[1]
            else:
                columns[key] = value
        return pd.DataFrame({k: np.atleast_1d(np.asarray(v, dtype=float))
                             for k, v in columns.items()})

    def _summary_title(self) -> str:
        return f"Compute plan: {PLAN_KINDS[self.kind]}"

    def _summary_sections(self):
        intervals = {k: v for k, v in self.values.items() if k.endswith(("_ci", "_pi"))}
        return [("Plan", [(k, v) for k, v in self.values.items() if k not in intervals]),
                ("Intervals", list(intervals.items())),
                ("Diagnostics", [f"{d.severity}: {d.message}" for d in self.diagnostics])]

    def _repr_fields(self) -> dict[str, Any]:
        keys = [k for k in ("target_loss", "compute", "params", "tokens", "loss", "extra")
                if k in self.values and np.ndim(self.values[k]) == 0]
        fields = {"kind": self.kind, **{k: self.values[k] for k in keys}}
        if np.ndim(self.values.get("compute", 0)):
            fields["budgets"] = int(np.size(self.values["compute"]))
        return fields
