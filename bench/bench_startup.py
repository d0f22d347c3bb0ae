"""Start-up: importing the fitter, and the first line of a fit through the CLI.

Whole processes, each timed from start, medians of ``--repeats``: ``from
scalekit.fit import fit_law`` (target <= 0.5 s) and the first line of ``scalekit
fit data/sample_curves.csv --bootstrap 0`` on standard output (target <= 1 s),
with ``python -c "import numpy"`` beside them as the floor of this machine now
(a busy machine inflates all three alike; the ratios to it travel better).

Then refusals: each command given a missing input file, as whole processes in CPU time
(user + system of the child), against ``scalekit --help`` in the same run; every command
checks its files before it imports the analysis packages (target <= 1.5x ``--help``).

    python bench/bench_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def first_line_seconds(command: list[str]) -> float:
    """Seconds from starting ``command`` to its first line on standard output."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO)
    process.stdout.readline()
    seconds = time.perf_counter() - start
    process.communicate()
    return seconds


def cpu_seconds(command: list[str]) -> float:
    """CPU seconds (user + system) of running ``command`` to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, capture_output=True, cwd=REPO, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


#: Commands given a missing input, each refused before the analysis packages load.
REFUSALS = (["report", "missing.json", "-o", "page.html"], ["fit", "missing.csv"],
            ["isoflop", "missing.csv"], ["forecast", "missing.csv"],
            ["law", "depth", "missing.csv"],
            ["design", "--law", "chinchilla", "--pool", "missing.csv", "--target-compute", "1e22",
             "--budget", "1e20"],
            ["allocate", "replay", "synthetic", "--curves", "missing.csv", "--budget", "1e18"])


def refusals(repeats: int) -> None:
    """Print each refusal's median CPU seconds against ``scalekit --help``'s."""
    program = str(Path(sys.executable).with_name("scalekit"))
    cases = {"--help": [program, "--help"]}
    cases.update({" ".join(args): [program, *args] for args in REFUSALS})
    seconds = {name: [] for name in cases}
    for _ in range(repeats):
        for name, command in cases.items():
            seconds[name].append(cpu_seconds(command))
    print(f"refusing a missing input, CPU seconds of the whole process, medians of {repeats}; "
          f"1-minute load average {os.getloadavg()[0]:.2f}")
    reference = float(np.median(seconds["--help"]))
    for name in cases:
        median = float(np.median(seconds[name]))
        verdict = "" if name == "--help" else \
            f" (target <= 1.5x: {'PASS' if median <= 1.5 * reference else 'FAIL'})"
        print(f"  scalekit {name:62s} {median:6.2f} s  {median / reference:5.1f}x --help{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cases = {
        "python -c 'import numpy' (floor)": ([sys.executable, "-c", "import numpy; print()"],
                                             None),
        "from scalekit.fit import fit_law": (
            [sys.executable, "-c", "from scalekit.fit import fit_law; print()"], 0.5),
        "scalekit fit data/sample_curves.csv --bootstrap 0, first line": (
            [str(Path(sys.executable).with_name("scalekit")), "fit", "data/sample_curves.csv",
             "--bootstrap", "0"], 1.0)}
    seconds = {name: [] for name in cases}
    for _ in range(args.repeats):
        for name, (command, _) in cases.items():
            seconds[name].append(first_line_seconds(command))
    print(f"start-up, whole processes, medians of {args.repeats}; 1-minute load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    floor = np.median(next(iter(seconds.values())))
    for name, (_, target) in cases.items():
        median = float(np.median(seconds[name]))
        verdict = ("" if target is None else
                   f" (target <= {target:g} s: {'PASS' if median <= target else 'FAIL'})")
        print(f"  {name:62s} {median:6.2f} s  {median / floor:5.1f}x the floor{verdict}")
    refusals(args.repeats)


if __name__ == "__main__":
    main()
