"""Replay allocation policies on complete curves.

Each policy is simulated on the same candidates at the same budget: the
complete curves play the trainers (advancing a run reveals its points up to the
new resource), so the outcome of a policy can be compared with what the
exhaustive sweep and a uniform split of the budget would have found.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from scalekit.allocate import _metrics as metrics
from scalekit.allocate._baselines import BASELINES, baseline_loop
from scalekit.allocate._continuation import prefix_groups
from scalekit.allocate._engine import Allocation, HalvingLoop, drive
from scalekit.allocate._forecasters import make_forecaster
from scalekit.allocate._policies import POLICIES, Policy, last_loss, rank
from scalekit.allocate._schedules import SuccessiveHalving, bracket_to, check_eta, floor_log
from scalekit.allocate._sweep import Sweep
from scalekit.checks import check_choice, check_number, fail
from scalekit.formatting import format_number
from scalekit.progress import track
from scalekit.results import ResultProtocol, frame_from_records


def reveal(sweep: Sweep) -> Callable:
    """Executor of advance orders that reads the points from the complete curves."""
    def execute(batch):
        return {a.run: sweep.curves[a.run].until(a.stop, a.start) for a in batch}
    return execute


def planned_cost(sweep: Sweep, runs: Sequence[str], bracket: SuccessiveHalving) -> list[float]:
    """Worst-case FLOPs of each rung: the ``n_i`` costliest advances among ``runs``."""
    costs, previous = [], 0.0
    for rung in bracket.rungs:
        steps = sorted((sweep.cost(r, previous, rung.resource) for r in runs), reverse=True)
        costs.append(float(sum(steps[: rung.runs])))
        previous = rung.resource
    return costs


def fit_bracket(sweep: Sweep, runs: Sequence[str], budget: float, *, eta: int = 3,
                min_resource: float | None = None,
                max_resource: float | None = None) -> SuccessiveHalving:
    """The SH bracket for ``runs`` under ``budget``.

    With ``min_resource`` the bracket runs from it to ``max_resource`` (default:
    the longest run). Without it the bracket halves down to one run
    (``floor(log_eta n) + 1`` rungs) and its top rung is the largest resource
    up to ``max_resource`` whose worst-case planned cost fits the budget.
    """
    eta = check_eta(eta)
    top = float(max_resource or max(sweep.max_resource[r] for r in runs))
    if min_resource is not None:
        return SuccessiveHalving(len(runs), min_resource, top, eta)
    levels = floor_log(len(runs), eta) + 1
    if sum(planned_cost(sweep, runs, bracket_to(len(runs), top, eta, levels))) <= budget:
        return bracket_to(len(runs), top, eta, levels)
    low, high = np.log(top) - 80.0, np.log(top)
    for _ in range(80):
        mid = 0.5 * (low + high)
        cost = sum(planned_cost(sweep, runs, bracket_to(len(runs), float(np.exp(mid)), eta,
                                                           levels)))
        low, high = (mid, high) if cost <= budget else (low, mid)
    return bracket_to(len(runs), float(np.exp(low)), eta, levels)


def uniform_allocation(sweep: Sweep, runs: Sequence[str], budget: float) -> Allocation:
    """Every run gets the same FLOPs (runs that end sooner hand theirs back), all observed."""
    totals = np.array([sweep.cost(r, 0.0, sweep.max_resource[r]) for r in runs])
    share = _water_level(totals, budget)
    observed, reached = {}, {}
    for run, total in zip(runs, totals, strict=True):
        reached[run] = sweep.resource_after(run, 0.0, min(share, total))
        observed[run] = sweep.curves[run].until(reached[run])
    spent = float(np.minimum(totals, share).sum())
    return Allocation(observed, reached, min(spent, budget), budget)


def _water_level(totals: np.ndarray, budget: float) -> float:
    """The share ``c`` with ``sum(min(totals, c)) = budget`` (or the largest total)."""
    ordered = np.sort(totals)
    spent_below = 0.0
    for i, total in enumerate(ordered):
        remaining = len(ordered) - i
        if spent_below + remaining * total >= budget:
            return (budget - spent_below) / remaining
        spent_below += total
    return float(ordered[-1])


@dataclass
class ClairvoyantPolicy:
    """The bound no policy can beat at ranking: promote the runs whose loss at the target
    resource is lowest, read from the complete curves of ``sweep`` (replays only)."""

    sweep: Sweep
    name: str = "clairvoyant"

    def select(self, observed, keep, context):
        ahead = {r: self.sweep.curves[r].until(context.target) for r in observed}
        scores = {r: last_loss(c) for r, c in ahead.items()}
        return rank(scores, keep, context.rng, observed)


#: Allocations only a replay can make: no promotion, promotion that knows the future, and
#: the baselines of :mod:`scalekit.allocate._baselines`.
REPLAY_POLICIES = POLICIES + ("clairvoyant",) + BASELINES


def allocate(sweep: Sweep, policy: str | Policy, budget: float, *, runs: Sequence[str] | None = None,
             eta: int = 3, min_resource: float | None = None, seed: int = 0,
             policy_factory: Callable[[str], Policy] | None = None,
             prefixes: dict[str, list[str]] | None = None
             ) -> tuple[Allocation, SuccessiveHalving | None]:
    """Simulate one allocation of ``budget`` FLOPs over ``runs`` of a complete ``sweep``;
    ``commit`` continues the runs that ``prefixes`` relates
    (:func:`~scalekit.allocate._continuation.prefix_groups`, read off the curves where None;
    ``{}``: none)."""
    check_number("budget", budget, low=0, low_open=True)
    runs = list(runs if runs is not None else sweep.runs)
    name = policy if isinstance(policy, str) else policy.name
    if isinstance(policy, str):
        check_choice("policy", policy, REPLAY_POLICIES)
    if name == "uniform":
        return uniform_allocation(sweep, runs, budget), None
    if name == "exhaustive":
        return uniform_allocation(sweep, runs, sweep.subset(runs).total_compute()), None
    if name in BASELINES:
        return drive(baseline_loop(name, sweep, budget, runs, eta=eta, seed=seed),
                     reveal(sweep)), None
    if name == "clairvoyant":
        policy = ClairvoyantPolicy(sweep)
    if isinstance(policy, str):
        from scalekit.allocate._policies import get_policy
        policy = (policy_factory or (lambda n: get_policy(n, seed=seed)))(policy)
    from scalekit.allocate._commit import CommitPolicy

    if prefixes is None and isinstance(policy, CommitPolicy):  # only commit continues runs
        prefixes = prefix_groups(sweep, runs)
    loop, bracket = allocation_loop(sweep, policy, budget, runs=runs, eta=eta,
                                    min_resource=min_resource, seed=seed, prefixes=prefixes)
    return drive(loop.steps(), reveal(sweep)), bracket


def allocation_loop(sweep: Sweep, policy, budget: float, *, runs: Sequence[str] | None = None,
                    eta: int = 3, min_resource: float | None = None, seed: int = 0,
                    prefixes: dict[str, list[str]] | None = None):
    """The loop that spends ``budget`` with ``policy`` and its SH bracket: a
    :class:`~scalekit.allocate._commit.CommitLoop` (no bracket, None) for a
    :class:`~scalekit.allocate._commit.CommitPolicy`, else a
    :class:`~scalekit.allocate._engine.HalvingLoop` on the bracket fitted to the budget;
    ``commit`` continues the runs ``prefixes`` relates (none where None)."""
    from scalekit.allocate._commit import CommitLoop, CommitPolicy

    runs = list(runs if runs is not None else sweep.runs)
    if isinstance(policy, CommitPolicy):
        return CommitLoop(sweep, policy, budget, runs=runs, seed=seed, prefixes=prefixes), None
    bracket = fit_bracket(sweep, runs, budget, eta=eta, min_resource=min_resource)
    return HalvingLoop(sweep, bracket, policy, budget, seed=seed, runs=runs), bracket


@dataclass(repr=False)
class ReplayResult(ResultProtocol):
    """One row per (policy, budget, seed) in ``rows``; ``averages`` averages over seeds.
    ``rows`` say why an allocation left more than a tenth of its budget unspent
    (``unspent_reason``, empty where it did not), and :meth:`summary` counts them.

    ``examples`` maps ``(budget, policy)`` to the allocation and bracket of the
    first seed, and ``example_sweep`` is that seed's sweep (for plots); these
    two are not part of :meth:`to_dict`.
    """

    rows: pd.DataFrame
    averages: pd.DataFrame
    exhaustive_compute: float
    examples: dict = field(default_factory=dict)
    example_sweep: Sweep | None = None

    def to_dict(self) -> dict:
        return {"exhaustive_flops": self.exhaustive_compute,
                "averages": self.averages.to_dict(orient="records"),
                "rows": self.rows.to_dict(orient="records")}

    @classmethod
    def from_dict(cls, data: dict) -> ReplayResult:
        return cls(frame_from_records(data["rows"]), frame_from_records(data["averages"]),
                   float(data["exhaustive_flops"]))

    def to_frame(self) -> pd.DataFrame:
        """The replay rows: one per policy, budget and seed."""
        return self.rows.copy()

    def _summary_title(self) -> str:
        seeds = self.rows["seed"].nunique() if "seed" in self.rows else 0
        return (f"Replay over {seeds} seeds; exhaustive sweep "
                f"{format_number(self.exhaustive_compute)} FLOPs")

    def winners(self) -> list[str]:
        """One line per budget: the policy (the exhaustive reference aside, which spends the
        whole sweep) that reached the lowest best loss on average, with its compute used."""
        lines = []
        for budget, rows in self.averages.groupby("budget", sort=False):
            rows = rows[rows["policy"] != "exhaustive"]
            if rows.empty or rows["best_loss"].isna().all():
                continue
            best = rows.loc[rows["best_loss"].idxmin()]
            lines.append(f"budget {format_number(budget)}: policy {best['policy']!r} reaches "
                         f"the lowest loss, {format_number(best['best_loss'])}, with "
                         f"{best['compute_fraction']:.1%} of the exhaustive sweep's compute")
        return lines

    def _summary_sections(self):
        sections = []
        for budget, rows in self.averages.groupby("budget", sort=False):
            sections.append((f"Budget {format_number(budget)}", [
                (row.policy, f"best loss {format_number(row.best_loss)}, compute used "
                             f"{row.compute_fraction:.1%}" + self._unspent(budget, row.policy))
                for row in rows.itertuples()]))
        return sections

    def _unspent(self, budget, policy) -> str:
        """``; budget left unspent on k of n seeds: <reasons>`` where some seed left more
        than a tenth of the budget (with the reasons the allocations gave)."""
        if "unspent_reason" not in self.rows:
            return ""
        rows = self.rows[(self.rows.budget == budget) & (self.rows.policy == policy)]
        said = rows["unspent_reason"][rows["unspent_reason"].astype(bool)]
        if not len(said):
            return ""
        reasons = "; ".join(f"{reason} ({count})" for reason, count in
                            said.value_counts().items())
        return f"; more than 10% of the budget left on {len(said)} of {len(rows)} seeds: {reasons}"

    def _repr_fields(self) -> dict:
        return {"policies": self.rows["policy"].nunique() if len(self.rows) else 0,
                "budgets": self.rows["budget"].nunique() if len(self.rows) else 0,
                "rows": len(self.rows)}


def replay(sweeps: Callable[[int], Sweep] | Sweep, *, policies: Sequence[str | Policy],
           budgets: Sequence[float], seeds: Sequence[int] | int = 20, eta: int = 3,
           min_resource: float | None = None, n_candidates: int | None = None,
           frontier: bool = True, policy_factory: Callable[[str, int], Policy] | None = None,
           completion: str | None = "joint", frontier_min_compute: float = 0.0,
           continuation: bool = True) -> ReplayResult:
    """Replay every policy at every budget and seed.

    Parameters
    ----------
    sweeps : Sweep or callable
        The complete curves, or ``seed -> Sweep`` (a fresh synthetic sweep per seed).
    policies : sequence of str or Policy
        Names from :data:`REPLAY_POLICIES` (``uniform``, ``exhaustive`` and
        ``clairvoyant`` included) or policy objects.
    budgets : sequence of float
        FLOPs, or, when a value is <= 1, a fraction of the exhaustive sweep.
    seeds : int or sequence of int
        Seeds; each draws ``n_candidates`` runs from the sweep (all when None)
        and breaks ties.
    eta, min_resource
        As for :func:`fit_bracket` (``min_resource`` None: fitted to each budget).
    n_candidates : int, optional
        Runs drawn per seed; all when None.
    frontier : bool
        Fit the frontier law to each allocation's points (slower).
    policy_factory : callable, optional
        ``(name, seed) -> Policy`` builds the named policies (default:
        :func:`~scalekit.allocate._policies.get_policy` with the joint surrogate).
    completion : str or None
        Surrogate (:func:`~scalekit.allocate._forecasters.make_forecaster`) that
        completes the runs promoted last to their full length for the
        forecast-completed frontier-law error, and every candidate (runs never
        trained forecast from their size) on its logging schedule for the
        all-completed one; None skips both measures.
    frontier_min_compute : float
        Every frontier law (the reference and each allocation's) is fitted to the
        frontier points at this many FLOPs or more only; rows carry the reference's
        own miss at the largest compute (``reference_miss_at_max``).
    continuation : bool
        ``commit`` continues a run from the checkpoint of one it extends where the curves
        show it is that run's prefix (:func:`~scalekit.allocate._continuation.prefix_groups`;
        e.g. a constant learning rate); rows carry the FLOPs that saved as a share of the
        budget (``continued_share``).
    """
    seeds = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seeds:
        raise fail("seeds", seeds, "at least one seed")
    rows, examples, example_sweep, exhaustive_total = [], {}, None, []
    for seed in track(seeds, "replay seeds"):
        sub, pool = _candidates(sweeps(seed) if callable(sweeps) else sweeps, seed, n_candidates)
        example_sweep = example_sweep or sub
        exhaustive_total.append(sub.total_compute())
        setting = _Setting(
            seed=seed, eta=eta, min_resource=min_resource, frontier=frontier,
            completion=completion, frontier_min_compute=frontier_min_compute,
            continuation=continuation,
            factory=(lambda n, s=seed: policy_factory(n, s)) if policy_factory else None)
        seed_rows, seed_examples = _replay_seed(sub, pool, policies, budgets, setting)
        rows += seed_rows
        if seed == seeds[0]:
            examples.update(seed_examples)
    frame = _with_improvements(pd.DataFrame(rows))
    return ReplayResult(frame, _averages(frame), float(np.mean(exhaustive_total)), examples,
                        example_sweep)


@dataclass(frozen=True)
class _Setting:
    """What every allocation of one seed's replay shares."""

    seed: int
    eta: int
    min_resource: float | None
    frontier: bool
    completion: str | None
    frontier_min_compute: float
    factory: Callable[[str], Policy] | None
    continuation: bool = True


def _candidates(sweep: Sweep, seed: int, n_candidates: int | None) -> tuple[Sweep, list[str]]:
    """The seed's candidate runs (``n_candidates`` drawn, all when None) and their sweep."""
    pool = sweep.runs
    if n_candidates is not None:
        rng = np.random.default_rng(seed)
        check_number("n_candidates", n_candidates, low=1, high=len(pool), integer=True)
        pool = [pool[i] for i in np.sort(rng.choice(len(pool), n_candidates, replace=False))]
    return sweep.subset(pool), pool


def _replay_seed(sub: Sweep, pool: list[str], policies, budgets, setting: _Setting):
    """One row per (budget, policy) on one seed's candidates, and the allocations made."""
    total = sub.total_compute()
    largest = max(c.compute[-1] for c in sub.curves.values())
    fit_frontier = partial(metrics.fit_frontier, seed=setting.seed,
                           min_compute=setting.frontier_min_compute)
    reference = fit_frontier(sub.curves) if setting.frontier else None
    reference_miss = (metrics.frontier_miss(reference, sub.curves, largest) if setting.frontier
                      else np.nan)
    exhaustive_best = min(sub.final_loss(r) for r in pool)
    prefixes = prefix_groups(sub, pool) if setting.continuation else {}
    rows, examples = [], {}
    for budget in budgets:
        flops = budget * total if budget <= 1 else float(budget)
        hindsight = metrics.hindsight_loss(sub.curves, flops)
        for policy in policies:
            name = policy if isinstance(policy, str) else policy.name
            allocation, bracket = allocate(sub, policy, flops, runs=pool, eta=setting.eta,
                                           min_resource=setting.min_resource, seed=setting.seed,
                                           policy_factory=setting.factory, prefixes=prefixes)
            examples[(budget, name)] = (allocation, bracket)
            best = metrics.best_final_loss(allocation.observed)
            errors, completed, every = _frontier_errors(allocation, sub, pool, reference,
                                                        largest, fit_frontier, setting)
            checks = pd.DataFrame(metrics.forecast_checks(allocation.forecasts, sub),
                                  columns=["covered_80%", "covered_95%"])
            rows.append(dict(
                policy=name, budget=budget, budget_flops=flops, seed=setting.seed,
                best_loss=best, exhaustive_best_loss=exhaustive_best, hindsight_loss=hindsight,
                # the exhaustive reference spends the whole sweep, not the budget: no regret
                regret=(best - hindsight) / hindsight if name != "exhaustive" else np.nan,
                compute_regret=(metrics.compute_regret(sub.curves, best, flops)
                                if name != "exhaustive" else np.nan),
                spent=allocation.spent, compute_fraction=allocation.spent / total,
                spent_share=allocation.spent / flops, unspent_reason=allocation.unspent_reason or "",
                continued_share=allocation.continued / flops,
                frontier_error_at_max=errors[0], frontier_error_at_10x=errors[1],
                reference_miss_at_max=reference_miss,
                completed_frontier_error_at_max=completed[0],
                completed_frontier_error_at_10x=completed[1],
                all_completed_frontier_error_at_max=every[0],
                all_completed_frontier_error_at_10x=every[1],
                forecasts=len(checks), forecast_covered_80=checks["covered_80%"].mean(),
                forecast_covered_95=checks["covered_95%"].mean(),
                rungs=len(bracket.rungs) if bracket else 0,
                top_resource=bracket.rungs[-1].resource if bracket else np.nan))
    return rows, examples


def _frontier_errors(allocation: Allocation, sub: Sweep, pool: list[str], reference, largest: float,
                     fit_frontier: Callable, setting: _Setting) -> tuple[np.ndarray, ...]:
    """The frontier law's errors at the largest and 10x the largest compute: fitted to what
    the allocation observed, to its last rung's runs forecast to their end, and to every
    candidate forecast (the last two only with a ``completion`` surrogate)."""
    at = [largest, 10 * largest]
    fit = fit_frontier(allocation.observed) if setting.frontier else None
    errors = metrics.frontier_law_error(fit, reference, at)
    completed, every = np.full(2, np.nan), np.full(2, np.nan)
    if setting.frontier and setting.completion is not None:
        curves = metrics.forecast_completed(
            allocation.observed, sub,
            metrics.completed_runs(allocation.promotions, allocation.observed),
            make_forecaster(setting.completion, seed=setting.seed))
        completed = metrics.frontier_law_error(fit_frontier(curves), reference, at)
        curves = metrics.forecast_completed(
            allocation.observed, sub, pool,
            make_forecaster(setting.completion, seed=setting.seed, unseen=True), logged=True)
        every = metrics.frontier_law_error(fit_frontier(curves), reference, at)
    return errors, completed, every


def _with_improvements(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each row's best loss relative to the uniform split's and plain SH's
    on the same budget and seed (where those policies were replayed)."""
    for baseline, column in (("uniform", "improvement_vs_uniform"), ("loss", "improvement_vs_sh")):
        best = frame[frame.policy == baseline].set_index(["budget", "seed"])["best_loss"]
        if len(best):
            ref = best.reindex(pd.MultiIndex.from_frame(frame[["budget", "seed"]])).to_numpy()
            frame[column] = (ref - frame["best_loss"].to_numpy()) / ref
    return frame


_MEDIANS = ("frontier_error_at_max", "frontier_error_at_10x", "reference_miss_at_max",
            "completed_frontier_error_at_max", "completed_frontier_error_at_10x",
            "all_completed_frontier_error_at_max", "all_completed_frontier_error_at_10x")


def _averages(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (budget, policy): means of the losses and compute, medians of the frontier errors."""
    means = ("budget_flops", "best_loss", "improvement_vs_uniform", "improvement_vs_sh",
             "hindsight_loss", "regret", "compute_regret", "compute_fraction", "spent_share",
             "continued_share",
             "forecast_covered_80",
             "forecast_covered_95")
    return (frame.groupby(["budget", "policy"], sort=False)
            .agg(**{column: (column, "mean") for column in means if column in frame},
                 **{column: (column, "median") for column in _MEDIANS},
                 seeds=("seed", "nunique"))
            .reset_index())
