"""Learning-rate schedules as data: a rate for every step from 0 to a run's end.

A :class:`Schedule` comes from a spec (:func:`parse_schedule`), from a run's
logged ``lr`` series (:func:`schedule_from_series`) or from a file of rates per
step (:func:`read_schedule_file`). Every family warms up linearly from 0 over
``warmup`` steps to ``peak`` (the schedules of Luo et al. 2025, "A multi-power
law for loss curve prediction across learning rate schedules", ICLR 2025):

- ``constant:warmup=W,peak=P,total=T``
- ``cosine:warmup=W,peak=P,final=F,total=T`` — half a cosine from ``peak`` to
  ``final`` between ``warmup`` and ``total``;
- ``wsd:warmup=W,peak=P,final=F,decay=D,total=T[,shape=exp|linear]`` — stable at
  ``peak`` until step ``decay``, then down to ``final`` at ``total``,
  geometrically (``exp``, the default) or linearly;
- ``two_stage:warmup=W,peak=P,second=R,switch=K,total=T`` — ``peak`` until step
  ``switch``, then ``second``.

``total`` is the number of steps: the schedule gives a rate to steps
``0 … total - 1`` and a loss logged at step ``total`` (after the last update) is
still inside the run; a forecast past it is a forecast of a run that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scalekit.errors import InputError

#: Each family's keys (required, then optional with their defaults).
FAMILIES = {
    "constant": (("warmup", "peak", "total"), {}),
    "cosine": (("warmup", "peak", "final", "total"), {}),
    "wsd": (("warmup", "peak", "final", "decay", "total"), {"shape": "exp"}),
    "two_stage": (("warmup", "peak", "second", "switch", "total"), {}),
}
_STEP_KEYS = ("warmup", "total", "decay", "switch")
#: The most steps a schedule spec may run: the multi-power law holds ~120 floats for every
#: step where the rate changes (about 1 GB per 10^6 steps of a cosine), so a longer spec
#: is refused as it is parsed rather than met as a MemoryError.
MAX_STEPS = 1_000_000


@dataclass(frozen=True, eq=False)
class Schedule:
    """The learning rate of every step of a run.

    Attributes
    ----------
    rates : 1-d array
        The rate at steps ``0 … total_steps - 1``.
    name : str
        A label (the run or the spec).
    spec : str, optional
        The spec it was built from, if any.
    """

    rates: np.ndarray
    name: str = ""
    spec: str | None = None
    _area: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        rates = np.asarray(self.rates, dtype=float)
        if rates.ndim != 1 or rates.size == 0 or not np.isfinite(rates).all() \
                or (rates < 0).any():
            raise InputError("The value of `rates` is not a list of finite rates >= 0, but "
                             "must be one (a learning rate per step)")
        object.__setattr__(self, "rates", rates)
        object.__setattr__(self, "_area", np.cumsum(rates))

    @property
    def total_steps(self) -> int:
        """The number of steps: the run ends at step ``total_steps``."""
        return int(self.rates.size)

    def rates_through(self, step: int) -> np.ndarray:
        """The rates of steps ``0 … step``; a step at the end repeats the last rate."""
        step = int(step)
        self.check_within(step)
        if step < self.total_steps:
            return self.rates[:step + 1]
        return np.append(self.rates, self.rates[-1])

    def area(self, steps) -> np.ndarray:
        """S1: the sum of the rates of steps ``0 … step`` (inclusive), at each step."""
        steps = np.asarray(steps, dtype=np.int64)
        self.check_within(steps.max(initial=0))
        inside = np.minimum(steps, self.total_steps - 1)
        return self._area[inside] + np.where(steps >= self.total_steps, self.rates[-1], 0.0)

    def check_within(self, step: float) -> None:
        """Refuse a step past the run's end."""
        if step > self.total_steps:
            raise InputError(f"The value of `step` is {step:g}, but must be at most "
                             f"{self.total_steps} (the end of schedule {self.name!r}); give a "
                             "longer schedule to ask what a longer run would do")

    def to_dict(self) -> dict:
        if self.spec is not None:
            return {"name": self.name, "spec": self.spec, "total_steps": self.total_steps}
        return {"name": self.name, "rates": self.rates.tolist(), "total_steps": self.total_steps}

    @classmethod
    def from_dict(cls, data: dict) -> Schedule:
        if data.get("spec"):
            return parse_schedule(data["spec"], name=data.get("name", ""))
        return cls(np.asarray(data["rates"], dtype=float), name=data.get("name", ""))


def parse_schedule(spec: str, *, name: str | None = None, param: str = "schedule") -> Schedule:
    """Build a schedule from ``family:key=value,...`` (see the module docstring); errors
    name the parameter ``param``."""
    family, _, body = str(spec).partition(":")
    family = family.strip()
    if family not in FAMILIES:
        raise InputError(f"The value of `{param}` is {spec!r}, but must start with one of "
                         + ", ".join(FAMILIES) + " (e.g. 'cosine:warmup=2160,peak=3e-4,"
                         "final=3e-5,total=24000') or name a file of rates")
    required, optional = FAMILIES[family]
    values: dict[str, object] = dict(optional)
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or (key not in required and key not in optional):
            raise InputError(f"The value of `{param}` is {spec!r}, but {family} takes "
                             + ", ".join(f"{k}=…" for k in (*required, *optional)))
        values[key] = text.strip() if key == "shape" else _number(spec, key, text, param)
    missing = [key for key in required if key not in values]
    if missing:
        raise InputError(f"The value of `{param}` is {spec!r}, but {family} needs "
                         + ", ".join(f"{k}=…" for k in missing))
    rates = _build(family, values, spec, param)
    return Schedule(rates, name=spec if name is None else name, spec=spec)


def _number(spec: str, key: str, text: str, param: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or value < 0 or (key in _STEP_KEYS and value != int(value)):
        raise InputError(f"The value of `{param}` is {spec!r}, but {key} must be a "
                         + ("whole number of steps" if key in _STEP_KEYS else "rate >= 0"))
    if key in _STEP_KEYS and value > MAX_STEPS:
        raise InputError(f"The value of `{param}` is {spec!r}, but {key} must be at most "
                         f"{MAX_STEPS:,} steps (the law holds ~1 KB per step)")
    return value


def _build(family: str, v: dict, spec: str, param: str) -> np.ndarray:
    warmup, total, peak = int(v["warmup"]), int(v["total"]), float(v["peak"])
    inner = {"wsd": "decay", "two_stage": "switch"}.get(family)
    bound = int(v[inner]) if inner else warmup
    if not warmup <= bound <= total or total <= warmup:
        raise InputError(f"The value of `{param}` is {spec!r}, but its steps must satisfy "
                         f"warmup{' <= ' + inner if inner else ''} <= total and warmup < total")
    lower = {"cosine": "final", "wsd": "final", "two_stage": "second"}.get(family)
    if lower and float(v[lower]) > peak:
        raise InputError(f"The value of `{param}` is {spec!r}, but {lower} must be at most "
                         "peak: the schedules here decay after the warm-up")
    rates = np.full(total, peak)
    rates[:warmup] = np.linspace(0.0, peak, warmup)
    step = np.arange(total, dtype=float)
    if family == "cosine":
        final = float(v["final"])
        phase = (step[warmup:] - warmup) / (total - warmup)
        rates[warmup:] = final + 0.5 * (peak - final) * (1.0 + np.cos(np.pi * phase))
    elif family == "wsd":
        final, shape = float(v["final"]), v["shape"]
        if shape not in ("exp", "linear"):
            raise InputError(f"The value of `{param}` is {spec!r}, but shape must be exp or "
                             "linear")
        f = (step[bound:] - bound) / (total - bound)
        if shape == "exp" and (peak <= 0 or final <= 0):
            raise InputError(f"The value of `{param}` is {spec!r}, but an exp decay needs "
                             "peak > 0 and final > 0")
        rates[bound:] = (peak ** (1 - f) * final ** f if shape == "exp"
                         else peak * (1 - f) + final * f)
    elif family == "two_stage":
        rates[bound:] = float(v["second"])
    return rates


def schedule_from_series(steps, rates, *, total_steps: int | None = None,
                         name: str = "") -> Schedule:
    """A per-step schedule from rates logged at some steps (a run's ``lr`` series).

    Between logged steps the rate is interpolated linearly, except that a change
    between two constant stretches is a jump at the later logged step (a
    two-stage schedule); before the first logged step it rises linearly from 0 at
    step 0 (a warm-up); after the last it stays. ``total_steps`` defaults to the last logged step + 1.
    """
    steps = np.asarray(steps, dtype=float)
    rates = np.asarray(rates, dtype=float)
    keep = np.isfinite(steps) & np.isfinite(rates)
    steps, rates = steps[keep], rates[keep]
    if steps.size == 0:
        raise InputError(f"run {name!r} has no learning rate logged; give its schedule as a "
                         "spec")
    if not (rates > 0).any():
        raise InputError(f"run {name!r} logs a learning rate of 0 (or less) at every step, so "
                         "it never trained; check its lr column or give its schedule as a spec")
    order = np.argsort(steps, kind="stable")
    steps, rates = steps[order], rates[order]
    total = int(steps[-1]) + 1 if total_steps is None else int(total_steps)
    if total < steps[-1]:
        raise InputError(f"The value of `total_steps` is {total}, but run {name!r} logs a "
                         f"learning rate at step {steps[-1]:g}")
    if steps[0] > 0:
        steps, rates = np.r_[0.0, steps], np.r_[0.0, rates]
    grid = np.arange(total, dtype=float)
    per_step = np.interp(grid, steps, rates)
    flat = np.r_[False, rates[1:] == rates[:-1], False]    # flat[i]: rate i equals rate i-1
    for i in np.flatnonzero(rates[1:] != rates[:-1]):      # a jump between flat stretches
        if flat[i] and flat[i + 2]:
            inside = (grid > steps[i]) & (grid < steps[i + 1])
            per_step[inside] = rates[i]
    return Schedule(per_step, name=name)


def read_schedule_file(path: str | Path, *, name: str | None = None) -> Schedule:
    """Rates per step from a text/CSV file: one rate a line, or ``step,lr`` columns."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the schedule file ({exc})", source=str(path)) from None
    rows, steps = [], []
    for number, line in enumerate(lines, start=1):
        cells = [c.strip() for c in line.replace("\t", ",").split(",") if c.strip()]
        if not cells:
            continue
        try:
            values = [float(c) for c in cells]
        except ValueError:
            if not rows:  # a header
                continue
            raise InputError("not a number", source=str(path), line=number) from None
        if len(values) not in (1, 2):
            raise InputError("a line holds one rate or step,rate", source=str(path), line=number)
        steps.append(values[0] if len(values) == 2 else len(rows))
        rows.append(values[-1])
    if not rows:
        raise InputError("the schedule file holds no rates", source=str(path))
    label = path.stem if name is None else name
    if np.array_equal(steps, np.arange(len(rows))):
        return Schedule(np.asarray(rows), name=label)
    return schedule_from_series(steps, rows, name=label)
