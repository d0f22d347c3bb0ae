"""Reading a large curves file: ``read_curves`` and ``scalekit fit`` against pandas' own read.

A sweep of ``--runs`` runs at ``--steps`` checkpoints (run, step, params, tokens, loss;
10^6 points by default) is written as CSV, then each reader runs in a process of its own,
measured by the kernel (CPU seconds, user + system, and peak resident memory of that
process): ``pandas.read_csv`` (the floor: a C reader with nothing checked),
``scalekit.curves.read_curves`` and ``scalekit fit FILE --bootstrap 0`` end to end.
Targets (issue 44): 10^6 points end to end <= 8 s CPU and <= 300 MB; 10^7 points
(``--runs 10000 --steps 1000``) <= 60 s and <= 2 GB.

    python bench/bench_read.py [--runs 1000] [--steps 1000] [--python PATH]

``--python`` runs the scalekit cases with another interpreter (another checkout's venv),
for a before/after in one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

TARGETS = {6: (8.0, 300.0), 7: (60.0, 2048.0)}   # log10(points) -> (CPU s, peak MB)


def write_sweep(path: Path, runs: int, steps: int) -> None:
    """A synthetic sweep: Chinchilla-like losses with 1% noise, one row per checkpoint."""
    rng = np.random.default_rng(0)
    params = np.exp(rng.uniform(np.log(1e7), np.log(1e10), runs)).round()
    step = np.tile(np.arange(1, steps + 1) * 100, runs)
    n = np.repeat(params, steps)
    tokens = step * 2.0 ** 19
    loss = (1.8 + 400 / n ** 0.34 + 2000 / tokens ** 0.37) * np.exp(rng.normal(0, 0.01, n.size))
    pd.DataFrame({"run": np.repeat([f"run{i:05d}" for i in range(runs)], steps), "step": step,
                  "params": n, "tokens": tokens, "loss": loss}).to_csv(path, index=False)


def measured(command: list[str], folder: str) -> tuple[float, float]:
    """CPU seconds and peak MB of running ``command`` in ``folder`` (its own process, read by
    wait4; not in this checkout, whose ``scalekit`` would shadow ``--python``'s)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               cwd=folder)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command} failed: {process.stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    points = args.runs * args.steps
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sweep.csv"
        write_sweep(path, args.runs, args.steps)
        scalekit = str(Path(args.python).with_name("scalekit"))
        cases = {
            "pandas.read_csv (floor)": [sys.executable, "-c",
                                        f"import pandas; pandas.read_csv({str(path)!r})"],
            "read_curves": [args.python, "-c", "from scalekit.curves import read_curves; "
                            f"read_curves({str(path)!r})"],
            "scalekit fit --bootstrap 0": [scalekit, "fit", str(path), "--bootstrap", "0",
                                           "--quiet", "--json", str(Path(folder) / "fit.json")],
        }
        results = {name: measured(command, folder) for name, command in cases.items()}
    print(f"{points:.3g} points ({path.name}: {args.runs} runs x {args.steps} steps), "
          f"{args.python}; 1-minute load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} "
          "cores; CPU seconds (user + system) and peak memory of each process")
    floor_cpu, floor_mb = results["pandas.read_csv (floor)"]
    target = TARGETS.get(round(np.log10(points)))
    for name, (cpu, mb) in results.items():
        verdict = ""
        if target is not None and name.startswith("scalekit fit"):
            ok = cpu <= target[0] and mb <= target[1]
            verdict = f"  (target <= {target[0]:g} s, <= {target[1]:g} MB: " \
                      f"{'PASS' if ok else 'FAIL'})"
        print(f"  {name:28s} {cpu:7.2f} s {cpu / floor_cpu:6.1f}x   {mb:7.0f} MB "
              f"{mb / floor_mb:5.2f}x{verdict}")


if __name__ == "__main__":
    main()
