"""Candidate runs of a sweep: their curves, their lengths and what they cost.

A :class:`Sweep` holds, per run, the points seen so far (all of them for a
complete sweep that is replayed) on one *resource* axis (``step``, ``tokens`` or
``compute``), the FLOPs that axis costs, the run's final resource and its
parameter count. Compute is counted linearly in the resource from zero:
``compute(r) = flops_per_unit * r``, which is exact for steps and tokens at a
fixed batch and model size (6·N·D or counted FLOPs alike).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalekit.checks import check_choice
from scalekit.compute import training_flops
from scalekit.errors import InputError

RESOURCES = ("compute", "step", "tokens")


@dataclass(frozen=True)
class Curve:
    """Points of one run on the resource axis (sorted, unique)."""

    resource: np.ndarray
    compute: np.ndarray
    loss: np.ndarray

    def until(self, stop: float, start: float = -np.inf) -> Curve:
        """The points with ``start < resource <= stop``."""
        keep = (self.resource > start) & (self.resource <= stop * (1 + 1e-12))
        return Curve(self.resource[keep], self.compute[keep], self.loss[keep])

    def __len__(self) -> int:
        return len(self.resource)


@dataclass
class Sweep:
    """The candidate runs of a sweep.

    Attributes
    ----------
    resource_name : str
        ``"compute"``, ``"step"`` or ``"tokens"``.
    curves : dict
        Run name -> :class:`Curve`.
    max_resource : dict
        Run name -> resource at which the run is complete.
    flops_per_unit : dict
        Run name -> FLOPs per unit of resource (1 for ``compute``).
    params : dict
        Run name -> parameter count N (NaN when unknown).
    """

    resource_name: str
    curves: dict[str, Curve]
    max_resource: dict[str, float]
    flops_per_unit: dict[str, float]
    params: dict[str, float] = field(default_factory=dict)

    @property
    def runs(self) -> list[str]:
        return list(self.curves)

    def cost(self, run: str, start: float, stop: float) -> float:
        """FLOPs to advance ``run`` from ``start`` to ``stop`` (both capped at its end)."""
        cap = self.max_resource[run]
        return self.flops_per_unit[run] * max(0.0, min(stop, cap) - min(start, cap))

    def resource_after(self, run: str, start: float, flops: float) -> float:
        """Resource reached by spending ``flops`` on ``run`` from ``start``."""
        return min(self.max_resource[run], start + flops / self.flops_per_unit[run])

    def total_compute(self) -> float:
        """FLOPs of the exhaustive sweep: every run trained to its end."""
        return float(sum(self.cost(run, 0.0, self.max_resource[run]) for run in self.runs))

    def subset(self, runs: list[str]) -> Sweep:
        return Sweep(self.resource_name, {r: self.curves[r] for r in runs},
                     {r: self.max_resource[r] for r in runs},
                     {r: self.flops_per_unit[r] for r in runs},
                     {r: self.params.get(r, np.nan) for r in runs})

    def final_loss(self, run: str) -> float:
        return float(self.curves[run].loss[-1])

    def to_frame(self) -> pd.DataFrame:
        """Tidy frame (``run``, resource column, ``compute``, ``loss``, ``params``)."""
        parts = [pd.DataFrame({"run": run, self.resource_name: c.resource, "compute": c.compute,
                               "loss": c.loss, "params": self.params.get(run, np.nan)})
                 for run, c in self.curves.items()]
        columns = ["run", self.resource_name, "compute", "loss", "params"]
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
        return frame.loc[:, ~frame.columns.duplicated()]


def sweep_from_frame(frame: pd.DataFrame, *, resource: str = "compute", metric: str = "loss",
                     source: str | None = None, max_resource: dict | None = None) -> Sweep:
    """Build a :class:`Sweep` from a tidy curve frame, validating it.

    Each run needs a positive, increasing ``resource`` column, a positive
    ``compute`` (or ``params`` and ``tokens`` for 6·N·D) and a finite positive
    ``metric``. A run's last point marks its end unless ``max_resource`` says
    otherwise.
    """
    check_choice("resource", resource, RESOURCES)
    frame = frame.copy()
    if "run" not in frame.columns:
        raise InputError("the curves have no `run` column", source=source, column="run")
    if "compute" not in frame.columns:
        if {"params", "tokens"} <= set(frame.columns):
            frame["compute"] = training_flops(frame["params"], frame["tokens"])
        else:
            raise InputError("the curves need a `compute` column (or `params` and `tokens` "
                             "for 6·N·D)", source=source, column="compute")
    for column in {resource, "compute", metric}:
        if column not in frame.columns:
            raise InputError(f"the curves have no `{column}` column", source=source,
                             column=column)
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
        bad = ~np.isfinite(values) | (values <= 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(f"the value {frame[column].iloc[row]!r} in run "
                             f"{frame['run'].iloc[row]!r} must be a finite number > 0",
                             source=source, line=row + 2, column=column)
        frame[column] = values
    frame["run"] = frame["run"].astype(str)
    curves, ends, fpu, params = {}, {}, {}, {}
    for run, group in frame.groupby("run", sort=False):
        group = group.sort_values(resource, kind="stable")
        r = group[resource].to_numpy(float)
        if np.any(np.diff(r) <= 0):
            raise InputError(f"run {run!r} has two points at the same {resource}",
                             source=source, column=resource)
        c = group["compute"].to_numpy(float)
        curves[run] = Curve(r, c, group[metric].to_numpy(float))
        ends[run] = float((max_resource or {}).get(run, r[-1]))
        fpu[run] = 1.0 if resource == "compute" else float(np.median(c / r))
        params[run] = float(group["params"].iloc[0]) if "params" in group else np.nan
    if len(curves) < 2:
        raise InputError(f"the curves hold {len(curves)} run, but allocating compute needs at "
                         "least two runs to choose between", source=source, column="run")
    return Sweep(resource, curves, ends, fpu, params)
