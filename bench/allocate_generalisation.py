"""Does ``commit`` hold on sweeps it was never tuned on? Leave-one-family-out.

Families: the (Mis)Fitting runs (Li et al. 2025, every run its own candidate), the
nanoGPT grid (Schram et al. 2026), and the four of ``bench/sweep_families.py``: the OLMo
ladder (Bhagia et al. 2024, 4 sizes x 4 token counts), the multi-power runs (Luo et al.
2025, 2 sizes x 9 schedules, constant learning rate among them), Pythia (Biderman et al.
2023, sizes only, plateau-then-drop LAMBADA curves) and OPT (6 sizes); and two synthetic
kinds: a constant-rate ladder whose curves
plateau and then drop (:func:`~scalekit.allocate._synthetic.ladder_sweep`) and the
early-leader sweep. Each seed draws 80% of a family's candidates; budgets are shares of
the drawn candidates' exhaustive sweep.

The law checks of ``commit`` (:class:`~scalekit.allocate.CommitPolicy`:
``max_probe_error``, ``check_bounds``, ``separation``) and its ``probe_share`` are
chosen on a grid, for each family held out, by the lowest
mean over the *other* families and budgets of (mean regret + 0.2 x worst seed's regret);
the held-out family's figures are then reported for that setting, beside ``commit``
with no checks and the baselines (``largest``, ``sh-finish``, plain SH ``loss``): mean
and worst regret, spent share of the budget, compute-regret (the share of the budget the
hindsight-best run would not have needed to reach the same loss), the share of seeds
that left more than 10% of the budget unspent without a reason (must be 0).

Usage: ``python bench/allocate_generalisation.py [--seeds 10] [--budgets 0.02 0.05 0.1 0.2]
[--json OUT]``; families can be split over processes (``--families olmo nanogpt --json
part.json``) and the parts read together with ``--merge part1.json part2.json ...``.
Exit status 1 where a held-out family misses a target (mean regret <= 5%, worst seed
<= 25%, no worse on average than the best baseline, >= 90% of the budget spent or a
reason given), so the bench can fail.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from replay_allocate import misfitting_sweep, nanogpt_sweep  # noqa: E402
from sweep_families import family_sweep  # noqa: E402

from scalekit.allocate._commit import CommitPolicy  # noqa: E402
from scalekit.allocate._replay import replay  # noqa: E402
from scalekit.allocate._synthetic import early_leader_sweep, ladder_sweep  # noqa: E402

#: name -> (seed -> sweep, fixed across seeds)
FAMILIES = {
    "misfitting": (lambda seed: misfitting_sweep(every_run=True), True),
    "nanogpt": (lambda seed: nanogpt_sweep(), True),
    "olmo": (lambda seed: family_sweep("olmo_ladder"), True),
    "multipower": (lambda seed: family_sweep("multipower"), True),
    "pythia": (lambda seed: family_sweep("pythia"), True),
    "opt": (lambda seed: family_sweep("opt"), True),
    "ladder": (lambda seed: ladder_sweep(seed=seed, points=40, plateau=0.3), False),
    "early-leader": (lambda seed: early_leader_sweep(seed=seed), False),
}
BASELINES = ["largest", "sh-finish", "loss"]
#: The grid of law checks (and probe shares) the held-out choice is made on.
GRID = [dict(max_probe_error=cv, check_bounds=bounds, separation=sep, probe_share=share)
        for share, cv, bounds, sep in itertools.product(
            (0.1, 0.05, 0.03), (None, 0.05), (False, True), ("none", "interval"))]


def label(setting: dict) -> str:
    said = [f"{k}={v}" for k, v in setting.items()
            if v not in (None, False, "none") and (k, v) != ("probe_share", 0.1)]
    return "commit[" + (",".join(said) or "no checks") + "]"


def family_rows(name: str, seeds: list[int], budgets: list[float]) -> pd.DataFrame:
    make, fixed = FAMILIES[name]
    size = len(make(0).runs)
    policies = BASELINES + [dataclass_policy(s) for s in GRID]
    sweeps = make(0) if fixed else make
    rows = replay(sweeps, policies=policies, budgets=budgets, seeds=seeds,
                  n_candidates=int(round(0.8 * size)), frontier=False, completion=None).rows
    rows.insert(0, "family", name)
    return rows


def dataclass_policy(setting: dict) -> CommitPolicy:
    return CommitPolicy(**setting, name=label(setting))


def choose(rows: pd.DataFrame, held_out: str) -> str:
    """The commit setting of least mean (mean regret + 0.2 worst regret) off ``held_out``."""
    train = rows[(rows.family != held_out) & rows.policy.str.startswith("commit")]
    per = train.groupby(["policy", "family", "budget"]).regret.agg(["mean", "max"])
    score = (per["mean"] + 0.2 * per["max"]).groupby("policy").mean()
    return str(score.idxmin())


def table(rows: pd.DataFrame) -> pd.DataFrame:
    return (rows.groupby(["budget", "policy"], sort=False)
            .agg(mean_regret=("regret", "mean"), worst_regret=("regret", "max"),
                 spent=("spent_share", "mean"), compute_regret=("compute_regret", "mean"),
                 silent_unspent=("silent", "mean"))
            .reset_index())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.02, 0.05, 0.1, 0.2])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--merge", type=Path, nargs="+",
                        help="read rows written by --json (families split over processes)")
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    start = time.process_time()
    if args.merge:
        rows = pd.concat([pd.read_json(path, orient="records") for path in args.merge],
                         ignore_index=True)
        rows["unspent_reason"] = rows["unspent_reason"].fillna("")
        args.families = list(dict.fromkeys(rows.family))
    else:
        rows = pd.concat([family_rows(name, seeds, args.budgets) for name in args.families],
                         ignore_index=True)
    rows["silent"] = (rows.spent_share < 0.9) & (rows.unspent_reason == "")
    if args.json:
        rows.to_json(args.json, orient="records")
        if len(args.families) < len(FAMILIES):
            return
    default = label(GRID[0])
    ok = True
    for held in args.families:
        chosen = choose(rows, held)
        mine = rows[rows.family == held]
        shown = mine[mine.policy.isin([chosen, default, *BASELINES])].copy()
        shown.loc[shown.policy == chosen, "policy"] = "commit (held-out choice)"
        if chosen == default:
            shown = pd.concat([shown, mine[mine.policy == default]])
        result = table(shown)
        print(f"\n== {held} held out; checks chosen on the others: {chosen} ==")
        with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
            print(result.to_string(index=False))
        for budget, group in result.groupby("budget"):
            ours = group[group.policy == "commit (held-out choice)"].iloc[0]
            best_base = group[group.policy.isin(BASELINES)].mean_regret.min()
            fine = (ours.mean_regret <= 0.05 and ours.worst_regret <= 0.25
                    and ours.mean_regret <= best_base + 1e-12 and ours.silent_unspent == 0)
            ok &= bool(fine)
            print(f"{'PASS' if fine else 'FAIL'}  {held} {budget:.0%}: mean {ours.mean_regret:.2%}, "
                  f"worst {ours.worst_regret:.2%}, best baseline {best_base:.2%}, spent "
                  f"{ours.spent:.0%}, silent unspent {ours.silent_unspent:.0%}")
    print(f"\n{time.process_time() - start:.0f} s CPU")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
