"""Syne Tune's multi-fidelity schedulers replayed on the same sweeps as scalekit's allocator.

The peers are run for real (``syne-tune``, the ``peers`` extra), not re-implemented: each
seed's candidates (the same 80% draw as ``replay``'s, :func:`_candidates`) become a
tabular blackbox, one configuration per run, and Syne Tune's simulator back end
(``UserBlackboxBackend`` with ``SimulatorCallback``) plays its scheduler against it with
simulated time = FLOPs spent. A run's fidelity levels are ``LEVELS`` equal shares of its
own length (the loss at each read off its curve, linear in log-compute between logged
points); a trial stopped at level k has cost its run the compute of level k. Syne Tune
0.16's random-search ASHA (one bracket, stopping rule), its asynchronous Hyperband
(every bracket) and BOHB (a TPE-style model per rung) are replayed with 1 and 4 workers.

Each scheduler runs once per seed until 20% of the sweep is spent; a budget's result is
read off the event log: the events in simulated-time order until their FLOPs reach the
budget, and the lowest last loss among the trials seen by then (as ``best_final_loss``
reads an allocation). Regret and the hindsight loss are ``scalekit.allocate``'s
(``docs/allocate.md``); ``compute_regret`` is the FLOPs the hindsight-best run needed
to reach the loss the policy reached, over the budget (1.0: the policy's loss cost the
whole budget in the best run; below 1: the budget could have bought it for less).

Usage: ``python bench/peers_allocate.py [--families ...] [--seeds 10] [--workers 1 4]``.
Requires ``pip install -e ".[peers]"``. Notes: Syne Tune 0.16 ships no DyHPO or
freeze-thaw searcher (older releases did), and ifBO's surrogate loads weights that its
wheel does not ship (it downloads them at first use, which this project does not do), so
neither is run.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scalekit.allocate import _metrics as metrics  # noqa: E402
from scalekit.allocate._replay import _candidates  # noqa: E402

#: Fidelity levels per run (3^3: ASHA's rungs at 1, 3, 9, 27 with reduction factor 3).
LEVELS = 27
BUDGETS = (0.02, 0.05, 0.1, 0.2)
#: Simulated seconds per unit share of the candidates' total compute.
TIME_SCALE = 1e6


def _sweeps():
    from replay_allocate import misfitting_sweep, nanogpt_sweep
    from sweep_families import FAMILIES, family_sweep

    sweeps = {name: (lambda name=name: family_sweep(name)) for name in FAMILIES}
    sweeps["misfitting"] = misfitting_sweep
    sweeps["nanogpt"] = nanogpt_sweep
    return sweeps


def levels(curve) -> tuple[np.ndarray, np.ndarray]:
    """The compute and loss of a run at ``LEVELS`` equal shares of its length."""
    compute = curve.compute[-1] * np.arange(1, LEVELS + 1) / LEVELS
    loss = np.interp(np.log(compute), np.log(curve.compute), curve.loss)
    return compute, loss


def blackbox(sub, pool):
    """Syne Tune's tabular blackbox of the candidates: objectives loss and elapsed compute."""
    from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
    from syne_tune.config_space import randint

    total = sub.total_compute()
    evaluations = np.empty((len(pool), 1, LEVELS, 2))
    for i, run in enumerate(pool):
        compute, loss = levels(sub.curves[run])
        evaluations[i, 0, :, 0] = loss
        evaluations[i, 0, :, 1] = compute / total * TIME_SCALE
    # Two columns: with one, Syne Tune's tuple look-up of a configuration fails in pandas.
    hyperparameters = pd.DataFrame({"run": pool, "sweep": "candidates"})
    return BlackboxTabular(hyperparameters=hyperparameters,
                           configuration_space=space(pool),
                           fidelity_space={"level": randint(1, LEVELS)},
                           objectives_evaluations=evaluations,
                           fidelity_values=np.arange(1, LEVELS + 1),
                           objectives_names=["loss", "elapsed"])


def space(pool) -> dict:
    """One categorical choice among the candidate runs (and the constant second column)."""
    from syne_tune.config_space import choice

    return {"run": choice(pool), "sweep": "candidates"}


def scheduler(name: str, pool, seed: int):
    from syne_tune.optimizer.baselines import ASHA, BOHB

    common = dict(config_space=space(pool), metric="loss", time_attr="level", max_t=LEVELS,
                  random_seed=seed, reduction_factor=3)
    if name == "st_asha":
        return ASHA(**common, brackets=1)
    if name == "st_hyperband":
        return ASHA(**common, brackets=4)
    if name == "st_bohb":
        return BOHB(**common)
    raise ValueError(name)


def simulate(sub, pool, name: str, seed: int, workers: int) -> pd.DataFrame:
    """Syne Tune's event log for one scheduler on one seed's candidates."""
    from syne_tune import StoppingCriterion, Tuner
    from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
    from syne_tune.blackbox_repository.simulated_tabular_backend import UserBlackboxBackend

    backend = UserBlackboxBackend(blackbox=blackbox(sub, pool), elapsed_time_attr="elapsed",
                                  seed=0)
    tuner = Tuner(trial_backend=backend, scheduler=scheduler(name, pool, seed),
                  stop_criterion=StoppingCriterion(
                      max_wallclock_time=max(BUDGETS) * TIME_SCALE * 1.02),
                  n_workers=workers, sleep_time=0, callbacks=[SimulatorCallback()],
                  results_update_interval=1e9, print_update_interval=1e9,
                  save_tuner=False, start_jobs_without_delay=False,
                  tuner_name=f"peers-{name}-{seed}-{workers}")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        tuner.run()
    return _events(tuner)


def _events(tuner) -> pd.DataFrame:
    frame = pd.read_csv(Path(tuner.tuner_path) / "results.csv.zip")
    return frame.rename(columns={"config_run": "run"})[
        ["trial_id", "run", "level", "loss", "elapsed", "st_tuner_time"]]


def read_budgets(events: pd.DataFrame, sub, total: float) -> list[dict]:
    """Per budget: the lowest last loss of the trials seen before their FLOPs reach it."""
    events = events.sort_values(["st_tuner_time", "trial_id", "level"], kind="stable")
    step = events.groupby("trial_id")["elapsed"].diff().fillna(events["elapsed"])
    spent = (step.cumsum() / TIME_SCALE * total).to_numpy()
    rows = []
    for budget in BUDGETS:
        flops = budget * total
        seen = events[spent <= flops * (1 + 1e-9)]
        best = float(seen.groupby("trial_id")["loss"].last().min()) if len(seen) else np.nan
        hindsight = min(metrics.hindsight_loss(sub.curves, flops), _level_hindsight(sub, flops))
        rows.append(dict(budget=budget, best_loss=best, hindsight_loss=hindsight,
                         regret=(best - hindsight) / hindsight,
                         spent_share=float(spent[spent <= flops * (1 + 1e-9)].max(initial=0)) / flops,
                         compute_regret=needed(sub, best) / flops))
    return rows


def _level_hindsight(sub, flops: float) -> float:
    """The lowest loss any run's fidelity levels reach within ``flops`` (levels interpolate)."""
    found = [loss[compute <= flops * (1 + 1e-12)] for compute, loss in map(levels, sub.curves.values())]
    return min((float(v.min()) for v in found if len(v)), default=float("inf"))


def needed(sub, loss: float) -> float:
    """The least FLOPs any run of ``sub`` needed to reach ``loss`` (inf if none did)."""
    reach = [c.compute[np.argmax(c.loss <= loss)] for c in sub.curves.values() if (c.loss <= loss).any()]
    return float(min(reach)) if reach else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sweeps = _sweeps()
    parser.add_argument("--families", default=",".join(sweeps))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--schedulers", default="st_asha,st_hyperband,st_bohb")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as CSV")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    os.environ.setdefault("SYNETUNE_FOLDER", tempfile.mkdtemp(prefix="peers-"))
    rows = []
    for family in args.families.split(","):
        sweep = sweeps[family]()
        n = max(2, round(0.8 * len(sweep.runs)))
        start = time.process_time()
        for seed in range(args.seeds):
            sub, pool = _candidates(sweep, seed, n)
            for name in args.schedulers.split(","):
                for workers in args.workers:
                    events = simulate(sub, pool, name, seed, workers)
                    for row in read_budgets(events, sub, sub.total_compute()):
                        rows.append(dict(family=family, policy=f"{name}/w{workers}", seed=seed, **row))
        print(f"{family}: {time.process_time() - start:.0f} s CPU", flush=True)
    frame = pd.DataFrame(rows)
    if args.out:
        frame.to_csv(args.out, index=False)
    table = frame.groupby(["family", "budget", "policy"]).agg(
        regret=("regret", "mean"), worst=("regret", "max"), spent=("spent_share", "mean"),
        compute_regret=("compute_regret", "median"))
    with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
        print(table.to_string())


if __name__ == "__main__":
    main()
