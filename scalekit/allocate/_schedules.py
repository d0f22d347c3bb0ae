"""Synchronous Successive Halving and Hyperband schedules with integer-exact rungs.

Successive Halving (Jamieson & Talwalkar 2016) trains ``n`` runs to a small
resource, keeps the best ``1/eta`` of them, multiplies their resource by ``eta``
and repeats. Hyperband (Li et al. 2018) hedges over the aggressiveness of that
pruning with several brackets. The number of rungs is counted exactly, with
rational arithmetic on the decimals as written (``fractions.Fraction``) instead
of a floating-point ``log``, so that 1 -> 243 with ``eta = 3`` gives 6 rungs, never 5.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from scalekit.checks import check_number, fail


@dataclass(frozen=True)
class Rung:
    """One rung: ``runs`` runs are trained to ``resource``."""

    index: int
    runs: int
    resource: float


def check_eta(eta: int) -> int:
    """Validate the reduction factor ``eta`` (an integer > 1) and return it."""
    if isinstance(eta, (int, float)) and not isinstance(eta, bool) and eta <= 1:
        raise fail("eta", eta, "> 1")
    return check_number("eta", eta, low=1, low_open=True, integer=True)


def check_resources(min_resource: float, max_resource: float) -> tuple[float, float]:
    """Validate a resource range ``0 < min_resource <= max_resource``."""
    check_number("min_resource", min_resource, low=0, low_open=True)
    check_number("max_resource", max_resource, low=0, low_open=True)
    if min_resource > max_resource:
        raise fail("min_resource", min_resource, f"<= max_resource ({max_resource!r})")
    return float(min_resource), float(max_resource)


def rung_count(min_resource: float, max_resource: float, eta: int) -> int:
    """Number of rungs ``k + 1`` where ``k`` is the largest integer with ``min * eta**k <= max``.

    Exact: the floats are compared as rationals, no logarithm is taken.
    """
    eta = check_eta(eta)
    check_resources(min_resource, max_resource)
    low, high = _exact(min_resource), _exact(max_resource)
    count, level = 1, low * eta
    while level <= high:
        count += 1
        level *= eta
    return count


def rung_resources(min_resource: float, max_resource: float, eta: int) -> tuple[float, ...]:
    """The resources ``min_resource * eta**k`` up to ``max_resource``, one per rung of
    :func:`rung_count`, on the decimals as written (0.1 -> 0.3, never 0.30000000000000004)."""
    low = _exact(min_resource)
    return tuple(float(low * eta ** k) for k in range(rung_count(min_resource, max_resource, eta)))


def _exact(value: float) -> Fraction:
    """The number a user wrote as an exact rational: integers as they are, floats by
    their shortest decimal repr (``24.3`` is 243/10)."""
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    return Fraction(repr(float(value)))


def floor_log(n: int, eta: int) -> int:
    """Largest integer ``k`` with ``eta**k <= n`` (``n >= 1``), in integers."""
    k, power = 0, eta
    while power <= n:
        k += 1
        power *= eta
    return k


@dataclass(frozen=True)
class SuccessiveHalving:
    """A synchronous Successive Halving bracket.

    Parameters
    ----------
    n_runs : int
        Runs started at the first rung.
    min_resource, max_resource : float
        Resource of the first rung and of the top rung (steps, tokens or FLOPs).
    eta : int
        Reduction factor: each rung keeps ``runs // eta`` runs (at least one) and
        multiplies the resource by ``eta``. The top rung trains to ``max_resource``.
    """

    n_runs: int
    min_resource: float
    max_resource: float
    eta: int = 3

    def __post_init__(self) -> None:
        check_number("n_runs", self.n_runs, low=1, integer=True)
        check_eta(self.eta)
        check_resources(self.min_resource, self.max_resource)

    @property
    def rungs(self) -> tuple[Rung, ...]:
        below_top = rung_resources(self.min_resource, self.max_resource, self.eta)[:-1]
        return tuple(Rung(i, max(1, self.n_runs // self.eta ** i), resource)
                     for i, resource in enumerate((*below_top, self.max_resource)))


@dataclass(frozen=True)
class Hyperband:
    """Hyperband brackets over one resource range (Li et al. 2018, Algorithm 1).

    Bracket ``s`` (from ``s_max`` down) starts ``ceil((s_max + 1) eta**s / (s + 1))``
    runs at ``max_resource / eta**s``. ``brackets`` keeps the first (most
    aggressive) brackets only.
    """

    min_resource: float
    max_resource: float
    eta: int = 3
    brackets: int | None = None

    def __post_init__(self) -> None:
        check_eta(self.eta)
        check_resources(self.min_resource, self.max_resource)
        if self.brackets is not None:
            check_number("brackets", self.brackets, low=1, integer=True)

    @property
    def s_max(self) -> int:
        return rung_count(self.min_resource, self.max_resource, self.eta) - 1

    def bracket_list(self) -> list[SuccessiveHalving]:
        s_max = self.s_max
        out = []
        for s in range(s_max, -1, -1):
            n = -(-(s_max + 1) * self.eta ** s // (s + 1))
            # bracket s has s + 1 rungs even where max / eta**s rounds up in binary
            out.append(bracket_to(n, self.max_resource, self.eta, s + 1))
        return out[: self.brackets] if self.brackets else out


def format_rung_table(bracket: SuccessiveHalving, *, unit: str = "resource",
                      costs: list[float] | None = None) -> str:
    """Plain-text rung table of ``bracket`` (with planned FLOPs per rung if given)."""
    header = f"{'rung':>4}  {'runs':>5}  {unit:>12}" + ("  planned FLOPs" if costs else "")
    lines = [header]
    for rung in bracket.rungs:
        line = f"{rung.index:>4}  {rung.runs:>5}  {rung.resource:>12.4g}"
        if costs:
            line += f"  {costs[rung.index]:>13.4g}"
        lines.append(line)
    return "\n".join(lines)


def bracket_to(n_runs: int, top: float, eta: int, levels: int) -> SuccessiveHalving:
    """The bracket of ``levels`` rungs whose top rung is ``top`` (first rung ``top / eta**(levels-1)``)."""
    low = float(_exact(top) / eta ** (levels - 1))
    while rung_count(low, top, eta) < levels:  # the division rounded up: step below it
        low = float(np.nextafter(low, 0.0))
    return SuccessiveHalving(n_runs, low, top, eta)
