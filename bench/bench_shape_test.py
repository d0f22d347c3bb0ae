"""The shape test of the planners (issue 38, item 4): false claims and power.

``law inference-k`` states a U-shape (and its ``k_opt``) only when the law held
non-increasing over the data's k is rejected at 5% (:mod:`scalekit.planners._shape_test`).
On ``--draws`` monotone draws (``E + 0.4/k^2``, noise 0.5–3%, different seeds) at most 5%
may claim a shape; on as many U-shaped draws whose rise inside the data is at least three
noise widths (:mod:`scalekit.planners._shape_synthetic`) at least 80% must be found, and
the rate is printed also for rises of 3–6 widths, the hardest. The issue's own draw
(``E = 0.05``, 1% noise, ``default_rng(0)``) is printed too. The same for the depth law's
own depth term (``--depth-draws`` grids of 40 runs, 1% noise, ``c_l = 0`` against
``c_l = 0.2``) and the class-count slope (``gamma = 0`` against ``0.3``, 5% log noise,
20 runs, ``--class-draws``). Exits 1 when a target fails.

    python bench/bench_shape_test.py [--draws 200] [--hard-draws 100] [--depth-draws 40]
        [--class-draws 100]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from scalekit.laws import get_law
from scalekit.planners._measured_laws import fit_class_count_law, fit_inference_k_law
from scalekit.planners._shape_synthetic import K, monotone_draw, u_shape_draw
from scalekit.planners._shape_test import depth_test

DEPTH_TRUTH = {"c_m": 5.0, "alpha_m": 0.6, "c_l": 2.0, "alpha_l": 1.0, "c_D": 100.0,
               "alpha_D": 0.3, "L0": 1.5}
GRID = np.array([(m, layers, d) for m in (256, 512, 1024, 2048) for layers in (4, 8, 16, 32, 64)
                 for d in (1e9, 1e10)], dtype=float)
CLASSES = np.array([2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] * 2, dtype=float)


def claims(k, error, seed) -> bool:
    frame = pd.DataFrame({"run": [f"r{i}" for i in range(k.size)], "step": 1, "k": k,
                          "error": error})
    return fit_inference_k_law(frame, seed=seed).derived["k_opt"] is not None


def depth_claims(c_l, rng, seed) -> bool:
    law = get_law("depth_width_data")
    X = {"width": GRID[:, 0], "depth": GRID[:, 1], "tokens": GRID[:, 2]}
    mean = law.predict(X, np.array([dict(DEPTH_TRUTH, c_l=c_l)[n] for n in law.param_names]))
    loss = mean * (1 + 0.01 * rng.standard_normal(mean.size))
    return depth_test(*X.values(), loss, seed=seed).rejected


def class_claims(gamma, rng, seed) -> bool:
    error = np.minimum(0.05 * CLASSES ** gamma, 1 - 1 / CLASSES) * np.exp(
        0.05 * rng.standard_normal(CLASSES.size))
    frame = pd.DataFrame({"run": [f"r{i}" for i in range(CLASSES.size)], "step": 1,
                          "classes": CLASSES, "error": np.minimum(error, 0.999)})
    return fit_class_count_law(frame, seed=seed).derived["shape_p_value"] <= 0.05


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--hard-draws", type=int, default=100)
    parser.add_argument("--depth-draws", type=int, default=40)
    parser.add_argument("--class-draws", type=int, default=100)
    args = parser.parse_args()
    start = time.process_time()
    rng = np.random.default_rng(38)
    issue = np.random.default_rng(0)
    issue_error = (0.05 + 0.4 / K ** 2) * (1 + 0.01 * issue.standard_normal(K.size))
    print(f"the issue's draw claims a shape: {claims(K, issue_error, 0)}", flush=True)
    false = np.mean([claims(*monotone_draw(rng), seed) for seed in range(args.draws)])
    print(f"monotone draws claiming a shape: {false:.3f} (target <= 0.05)", flush=True)
    found = np.mean([claims(*u_shape_draw(rng)[:2], seed) for seed in range(args.draws)])
    print(f"U-shapes found, rise >= 3 noise widths: {found:.3f} (target >= 0.80)", flush=True)
    hard = np.mean([claims(*u_shape_draw(rng, max_rise=6.0)[:2], seed)
                    for seed in range(args.hard_draws)])
    print(f"U-shapes found, rise 3-6 noise widths: {hard:.3f}", flush=True)
    depth_false = np.mean([depth_claims(0.0, rng, s) for s in range(args.depth_draws)])
    depth_found = np.mean([depth_claims(0.2, rng, s) for s in range(args.depth_draws)])
    print(f"depth law, c_l = 0, claiming a depth term (regime): {depth_false:.3f} (target <= 0.05)",
          flush=True)
    print(f"depth law, c_l = 0.2, found: {depth_found:.3f}")
    class_false = np.mean([class_claims(0.0, rng, s) for s in range(args.class_draws)])
    class_found = np.mean([class_claims(0.3, rng, s) for s in range(args.class_draws)])
    print(f"class count, gamma = 0, claiming a rise (critical degree): {class_false:.3f} "
          "(target <= 0.08: an exact 5% t-test gives 0.05 +- 0.015)")
    print(f"class count, gamma = 0.3, found: {class_found:.3f}")
    print(f"CPU {time.process_time() - start:.0f} s")
    targets = [false <= 0.05, found >= 0.80, depth_false <= 0.05, depth_found >= 0.80,
               class_false <= 0.08, class_found >= 0.80]
    return 0 if all(targets) else 1


if __name__ == "__main__":
    sys.exit(main())
