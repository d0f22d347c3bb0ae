"""Choose a learning-rate schedule under a fitted multi-power law.

Luo et al. (2025) use their law to choose schedules without training every option.
:func:`search_schedule` scores every schedule of a family by the law's predicted
loss at the last step (``total_steps``) and compares the best with the cosine
baseline (decay to a tenth of the peak, the paper's convention), with a
delta-method interval on the gain from the fit's covariance. The ``free`` family
starts from the best WSD and optimises a non-increasing rate per step
(:mod:`scalekit.surrogates._free_schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scalekit.checks import check_choice, check_number
from scalekit.errors import InputError
from scalekit.formatting import format_interval, format_number
from scalekit.laws import MULTIPOWER_PARAMS as PARAMS, ScheduleTerms, multipower_value_and_jacobian
from scalekit.results import ResultProtocol, frame_from_records
from scalekit.schedules import MAX_STEPS, Schedule, parse_schedule
from scalekit.surrogates._free_schedule import optimise_free_schedule

FAMILIES = ("wsd", "cosine", "free")
#: Decay starts tried for WSD, as fractions of the steps after the warm-up.
DECAY_STARTS = tuple(np.round(np.arange(0.5, 0.975, 0.025), 3))
#: Final rates tried, as fractions of the peak.
FINALS = (0.0, 0.01, 0.03, 0.1, 0.3)
#: The baseline's final rate, as a fraction of the peak.
BASELINE_FINAL = 0.1
_Z95 = 1.959963984540054


def _at_end(theta, schedule, total: int):
    """The law and its Jacobian at step ``total`` of a spec or a Schedule."""
    if not isinstance(schedule, Schedule):
        schedule = parse_schedule(schedule)
    rates = schedule.rates_through(total)
    return multipower_value_and_jacobian(ScheduleTerms(rates, np.array([total])), theta)


@dataclass(repr=False)
class ScheduleSearch(ResultProtocol):
    """The schedule of a family with the least predicted final loss, and its gain over cosine.

    Attributes
    ----------
    family : str
    total_steps : int
    best, baseline : str
        Specs of the chosen schedule and of the cosine baseline (``free``: a description;
        its rates are in ``rates``).
    best_loss, baseline_loss : float
        Predicted losses at ``total_steps``.
    gain, gain_interval : float, (float, float)
        ``baseline_loss - best_loss`` and its 95% delta-method interval (NaN without a
        covariance).
    candidates : DataFrame
        ``spec`` and ``loss`` of every schedule scored.
    rates : list of float, optional
        ``free``: the chosen rate of every step ``0 … total_steps - 1``.
    """

    family: str
    total_steps: int
    best: str
    baseline: str
    best_loss: float
    baseline_loss: float
    gain: float
    gain_interval: tuple
    candidates: pd.DataFrame
    diagnostics: list = field(default_factory=list)
    rates: list | None = None

    def best_schedule(self) -> Schedule:
        """The chosen schedule."""
        if self.rates is not None:
            return Schedule(np.asarray(self.rates), name=self.best)
        return parse_schedule(self.best)

    def to_dict(self) -> dict:
        return {"family": self.family, "total_steps": self.total_steps, "best": self.best,
                "baseline": self.baseline, "best_loss": self.best_loss,
                "baseline_loss": self.baseline_loss, "gain": self.gain,
                "gain_interval": list(self.gain_interval),
                "candidates": self.candidates.to_dict(orient="records"),
                "diagnostics": [d.to_dict() for d in self.diagnostics], "rates": self.rates}

    def to_frame(self) -> pd.DataFrame:
        """The candidate schedules searched, with their predicted final losses."""
        return self.candidates.copy()

    @classmethod
    def from_dict(cls, data: dict) -> ScheduleSearch:
        from scalekit.diagnostics import Diagnostic

        return cls(data["family"], int(data["total_steps"]), data["best"], data["baseline"],
                   float(data["best_loss"]), float(data["baseline_loss"]), float(data["gain"]),
                   tuple(float("nan") if v is None else float(v) for v in data["gain_interval"]),
                   frame_from_records(data["candidates"]),
                   [Diagnostic.from_dict(d) for d in data["diagnostics"]], data.get("rates"))

    def _summary_title(self) -> str:
        return f"Schedule search ({self.family}, {self.total_steps} steps)"

    def _summary_sections(self):
        return [("Answer", [("best", self.best),
                            ("predicted final loss", format_number(self.best_loss)),
                            ("gain over cosine", f"{format_number(self.gain)}, 95% "
                                                 f"{format_interval(self.gain_interval)}")]),
                ("Baseline", [("cosine", self.baseline),
                              ("predicted final loss", format_number(self.baseline_loss))]),
                ("Notes and warnings", [d.message for d in self.diagnostics])]

    def _repr_fields(self) -> dict:
        return {"family": self.family, "gain": self.gain}


def search_schedule(params, *, total_steps: int, warmup: int, peak: float,
                    family: str = "wsd", covariance=None) -> ScheduleSearch:
    """Score the schedules of ``family`` under the law with ``params`` (name -> value).

    WSD: every decay start of :data:`DECAY_STARTS`, final rate of :data:`FINALS` and
    shape (exp, linear; exp needs a final rate > 0); cosine: every final rate; free: the
    WSD search, then a non-increasing rate per step from its best (kept if nothing lower
    is found).
    ``covariance`` (7 x 7, the fit's, in its fitting space) gives the gain's interval.
    """
    check_choice("family", family, FAMILIES)
    total = int(check_number("total_steps", total_steps, low=1, high=MAX_STEPS, integer=True))
    warmup = int(check_number("warmup", warmup, low=0, integer=True))
    check_number("peak", peak, low=0.0, low_open=True)
    if warmup >= total:
        raise InputError(f"The value of `total_steps` is {total}, but must exceed the warm-up "
                         f"of {warmup} steps")
    theta = np.array([float(params[name]) for name in PARAMS])
    head = f"warmup={warmup},peak={peak:g}"
    specs = []
    if family == "cosine":
        specs = [f"cosine:{head},final={f * peak:g},total={total}" for f in FINALS]
    else:                                                # wsd, and the start of free
        for start in DECAY_STARTS:
            decay = warmup + int(round(start * (total - warmup)))
            for f in FINALS:
                for shape in ("exp", "linear"):
                    if shape == "exp" and f == 0:
                        continue
                    specs.append(f"wsd:{head},final={f * peak:g},decay={decay},total={total},"
                                 f"shape={shape}")
    losses = [float(_at_end(theta, spec, total)[0][0]) for spec in specs]
    best = specs[int(np.argmin(losses))]
    chosen, rates = best, None
    if family == "free":
        found, _ = optimise_free_schedule(theta, parse_schedule(best).rates, warmup=warmup,
                                          peak=peak)
        free = Schedule(found, name=f"free (non-increasing, from {best})")
        if _at_end(theta, free, total)[0][0] < min(losses):
            chosen, best, rates = free, free.name, found.tolist()
            specs, losses = [*specs, best], [*losses, float(_at_end(theta, free, total)[0][0])]
    baseline = f"cosine:{head},final={BASELINE_FINAL * peak:g},total={total}"
    b_value, b_jac = _at_end(theta, baseline, total)
    value, jac = _at_end(theta, chosen, total)
    gain = float(b_value[0] - value[0])
    interval = (float("nan"), float("nan"))
    if covariance is not None:
        g = b_jac[0] - jac[0]
        sd = float(np.sqrt(max(g @ np.asarray(covariance, float) @ g, 0.0)))
        interval = (gain - _Z95 * sd, gain + _Z95 * sd)
    return ScheduleSearch(family, total, best, baseline, float(value[0]), float(b_value[0]),
                          gain, interval, pd.DataFrame({"spec": specs, "loss": losses}),
                          rates=rates)


def schedule_curves(params, schedules, *, total_steps: int, points: int = 120) -> pd.DataFrame:
    """Predicted curves (``schedule``, ``step``, ``lr``, ``loss``) of specs or Schedules, for
    a plot."""
    theta = np.array([float(params[name]) for name in PARAMS])
    steps = np.unique(np.linspace(1, total_steps, points).astype(np.int64))
    parts = []
    for schedule in schedules:
        if not isinstance(schedule, Schedule):
            schedule = parse_schedule(schedule)
        rates = schedule.rates_through(total_steps)
        loss = multipower_value_and_jacobian(ScheduleTerms(rates, steps), theta, jacobian=False)
        parts.append(pd.DataFrame({"schedule": schedule.name, "step": steps,
                                   "lr": rates[steps], "loss": loss}))
    return pd.concat(parts, ignore_index=True)
