"""The result of a training sweep: each run's last evaluation and the settings that vary."""

from __future__ import annotations

from dataclasses import dataclass, field

from scalekit.diagnostics import Diagnostic
from scalekit.results import ResultProtocol, frame_from_records

#: Run settings that name what distinguishes the runs of a sweep, in this order.
SETTINGS = ("width", "depth", "data", "steps", "lr", "seed", "dropout", "dropout_schedule")
#: What every run's row carries after its settings.
MEASURES = ("params", "tokens", "compute", "compute_6nd", "loss")


@dataclass(repr=False)
class SweepResult(ResultProtocol):
    """What ``scalekit train`` trained and where its curves went.

    Attributes
    ----------
    task : str
    store : str
        The store the curves were written to.
    varied : list of str
        The settings (of :data:`SETTINGS`) that differ across the runs.
    runs : list of dict
        One per run, by size: ``run``, the varied settings, ``step`` (the last
        evaluation's), ``params``, ``tokens``, ``compute`` (counted FLOPs),
        ``compute_6nd`` and ``loss`` at the last evaluation.
    n_points : int
        Evaluations logged, over all runs.
    diagnostics : list of Diagnostic
    """

    task: str
    store: str
    varied: list
    runs: list
    n_points: int
    diagnostics: list = field(default_factory=list)

    @classmethod
    def from_frame(cls, frame, *, task: str, store: str) -> SweepResult:
        """The result of the tidy curve frame a sweep returned."""
        last = (frame.sort_values("step").groupby("run", sort=False).tail(1)
                .sort_values(["params", "step", "run"]))
        varied = [c for c in SETTINGS
                  if c in last and last[c].astype(str).nunique(dropna=False) > 1]
        columns = ["run", *varied, "step", *[c for c in MEASURES if c in last]]
        runs = [{c: _plain(row[c]) for c in columns} for _, row in last.iterrows()]
        return cls(task=task, store=str(store), varied=varied, runs=runs,
                   n_points=int(len(frame)))

    def to_dict(self) -> dict:
        return {"task": self.task, "store": self.store, "varied": list(self.varied),
                "runs": [dict(r) for r in self.runs], "n_points": self.n_points,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    @classmethod
    def from_dict(cls, data: dict) -> SweepResult:
        return cls(task=data["task"], store=data["store"], varied=list(data["varied"]),
                   runs=[dict(r) for r in data["runs"]], n_points=int(data["n_points"]),
                   diagnostics=[Diagnostic.from_dict(d) for d in data.get("diagnostics", [])])

    def to_frame(self):
        """One row per run: its name, varied settings, last step and measures."""
        return frame_from_records(self.runs)

    def _summary_title(self) -> str:
        return f"Sweep of {self.task}"

    def _summary_sections(self):
        best = min(self.runs, key=lambda r: r["loss"], default=None)
        answer = [("runs", len(self.runs)), ("points", self.n_points), ("store", self.store)]
        if best is not None:
            answer.append(("lowest loss", f"{best['loss']:.4g} ({best['run']})"))
        return [("Answer", answer), ("Varied", [(name, "") for name in self.varied]
                                     or [("none", "")])]

    def _repr_fields(self) -> dict:
        return {"task": self.task, "runs": len(self.runs), "n_points": self.n_points}


def _plain(value):
    """A numpy scalar as a Python number; a float holding a whole number below 1e6 (a
    width, a step) as an int."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return int(value)
    return value
