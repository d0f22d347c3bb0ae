"""A worked ``scalekit design`` loop from an empty store on the bundled ``teacher_student``
task: design -> ``scalekit train`` the proposals -> design again, then the final fit's
intervals at the target against those of a uniform grid of the same cost.

The pool is every (width, steps) pair of small one-hidden-layer students (data drawn
fresh each step, 64 samples a step, so tokens = 64·steps); the target is a student
twice the widest, trained four times longer than the longest. Every command is the
real program (subprocess), as a user would type it; the store is empty at the start.

    python bench/design_loop.py [--dir DIR] [--rounds 3] [--batch 4] [--budget 20%]

With ``--submit EXECUTOR`` the budget is for all rounds (each hand-run round designs with
what is left of it) and the same loop runs unattended, ``scalekit design --submit``, in a
second store: the bench prints both loops' proposals and exits 1 where they differ.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.curves import CurveStore
from scalekit.fit import fit_law
from scalekit.fit._frame import last_points
from scalekit.laws import get_law
from scalekit.train._models import MLP, count_parameters

WIDTHS, STEPS, BATCH_SIZE, DIM = (4, 8, 16, 32, 64), (100, 200, 400, 800, 1600), 64, 32
TARGET = {"width": 128, "steps": 6400}
PROGRAM = [str(Path(sys.executable).parent / "scalekit")]


def params(width: int) -> int:
    """The student's N as the trainer counts it (input dimension 32, one output)."""
    return count_parameters(MLP(DIM, 1, width=width, depth=1))["params"]


def row(width: int, steps: int) -> dict:
    return {"params": params(width), "tokens": BATCH_SIZE * steps, "width": width, "depth": 1,
            "steps": steps}


def scalekit(*args: str) -> None:
    subprocess.run([*PROGRAM, *args], check=True)


def train(store: Path, runs: list[dict]) -> None:
    """``scalekit train`` each run (one command per run: its options are its settings)."""
    for run in runs:
        scalekit("train", "teacher_student", "--widths", str(run["width"]), "--depths",
                 str(run["depth"]), "--steps", str(run["steps"]), "--data", "inf",
                 "--store", str(store), "--quiet")


def final_points(store: Path) -> pd.DataFrame:
    """Each run's last evaluation in ``store``."""
    with CurveStore(store) as opened:
        return last_points(opened.curves(metric="loss").frame)


def final_fit(store: Path):
    frame = final_points(store)
    return frame, fit_law(get_law("chinchilla"), {"params": frame.params.to_numpy(float),
                                                  "tokens": frame.tokens.to_numpy(float)},
                          frame.loss.to_numpy(float))


def uniform_grid(pool: pd.DataFrame, cost: float) -> list[dict]:
    """The runs of the largest square sub-grid (every other width and steps value, from
    the cheapest corner up) whose total cost is at most ``cost``."""
    best = []
    for stride in (1, 2):
        for top in range(len(WIDTHS), 1, -1):
            ws, ss = WIDTHS[:top][::stride], STEPS[:top][::stride]
            runs = pool[pool.width.isin(ws) & pool.steps.isin(ss)]
            spent = float((6 * runs.params * runs.tokens).sum())
            if spent <= cost and len(runs) > len(best):
                best = runs.to_dict("records")
    return best


def _budget(text: str, pool: pd.DataFrame) -> float:
    cost = float((6 * pool.params * pool.tokens).sum())
    return float(text[:-1]) / 100 * cost if text.endswith("%") else float(text)


def unattended(args, design: list[str], total: float, by_hand: list[list[dict]]) -> int:
    """The same loop through ``scalekit design --submit``; 0 when its rounds proposed what
    the hand-run rounds did, 1 otherwise."""
    store = args.dir / "submit.db"
    scalekit(*design, "--budget", repr(total), "--store", str(store), "--submit", args.submit,
             "--task", "teacher_student", "--rounds", str(args.rounds), "--quiet")
    log = store.with_name(store.name + ".design.jsonl")
    rounds = [r["proposed"] for r in map(json.loads, log.read_text().splitlines())
              if "proposed" in r]
    same = rounds == by_hand and (final_points(store).sort_values("run").loss.tolist()
                                  == final_points(args.dir / "loop.db").sort_values("run")
                                  .loss.tolist())
    print(f"unattended ({args.submit}): {len(rounds)} rounds, "
          f"{sum(map(len, rounds))} runs; the hand-run loop: {len(by_hand)} rounds, "
          f"{sum(map(len, by_hand))} runs; same proposals and final losses: {same}")
    return 0 if same else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("design_loop"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--budget", default="20%")
    parser.add_argument("--submit", default=None, help="local, ray, slurm or submitit-local")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    pool = pd.DataFrame([row(w, s) for w in WIDTHS for s in STEPS])
    pool.to_csv(args.dir / "pool.csv", index=False)
    target = pd.DataFrame([row(TARGET["width"], TARGET["steps"])])[["params", "tokens"]]
    target.to_csv(args.dir / "target.csv", index=False)
    store = args.dir / "loop.db"
    CurveStore(store).close()                     # an empty store: nothing observed yet
    spent, total = 0.0, _budget(args.budget, pool)
    design = ["design", "--law", "chinchilla", "--pool", str(args.dir / "pool.csv"),
              "--target", str(args.dir / "target.csv"), "--batch", str(args.batch)]
    by_hand = []
    for round_ in range(args.rounds + 1):
        plan = args.dir / f"plan{round_}.json"
        scalekit(*design, "--budget", repr(total - spent) if args.submit else args.budget,
                 "--store", str(store), "--json", str(plan), "--quiet")
        report = json.loads(plan.read_text())
        if args.submit and not report["chosen"]:
            break
        print(f"round {round_}: proposed "
              + "; ".join(f"width {c['settings']['width']} steps {c['settings']['steps']}"
                          f" ({c['reason'][:60]})" for c in report["chosen"]))
        if report["predictions"]:
            p = report["predictions"][0]
            print(f"  prediction at the target {p['prediction']} {p['interval']}")
        if round_ == args.rounds:
            break
        runs = [c["settings"] for c in report["chosen"]]
        by_hand.append(runs)
        spent += sum(c["cost"] for c in report["chosen"])
        train(store, runs)
    if args.submit:
        sys.exit(unattended(args, design, total, by_hand))
    designed, fit = final_fit(store)
    grid = uniform_grid(pool, spent)
    other = args.dir / "grid.db"
    train(other, grid)
    gridded, grid_fit = final_fit(other)
    truth_store = args.dir / "target.db"
    train(truth_store, [row(TARGET["width"], TARGET["steps"])])
    truth = float(final_points(truth_store).loss.iloc[0])
    Xt = {"params": target.params.to_numpy(float), "tokens": target.tokens.to_numpy(float)}
    print(f"target loss (trained): {truth:.4f}")
    for name, runs, f in (("designed", designed, fit), ("uniform grid", gridded, grid_fit)):
        lo, hi = f.interval(Xt, level=0.95)
        cost = float((6 * runs.params * runs.tokens).sum())
        print(f"{name:12s} {len(runs)} runs, cost {cost:.3g}: target {f.predict(Xt)[0]:.4f} "
              f"[{lo[0]:.4f}, {hi[0]:.4f}]")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
