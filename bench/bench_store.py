"""Benchmark of the curve store: bulk import rate and single-run read time.

Imports RUNS x POINTS points (default 1,000 x 10,000) through
``CurveStore.import_frame`` in batches of whole runs, then reads one run's curve
with ``CurveStore.curves``. References measured in the same run:

- import: a straightforward row-by-row insert (one ``execute`` per point, in one
  transaction) into the same schema, on a sample of the points;
- read: a plain ``pandas.read_sql`` of the same run's points with a query that
  cannot use the index (a full-table scan).

Targets (issue 2): >= 1 M points/s import and < 20 ms for one run's curve.
Wall-clock figures are the targets; CPU-time figures are printed beside them
because on a shared machine the wall clock also counts other processes.

Usage: ``python bench/bench_store.py [--runs 1000] [--points 10000]``
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.curves import CurveStore


def run_frame(first: int, count: int, points: int, rng: np.random.Generator) -> pd.DataFrame:
    """``count`` runs of ``points`` steps: loss, compute (6 N D) and tokens per point."""
    runs = np.arange(first, first + count)
    params = np.repeat(1e6 * (1 + runs % 97), points)
    step = np.tile(np.arange(1, points + 1, dtype=np.int64), count)
    tokens = step * 2048.0
    loss = 1.7 + 400 * params ** -0.34 + 400 * tokens ** -0.28 + rng.normal(0, 1e-3, step.size)
    names = np.array([f"run-{r:05d}" for r in runs], dtype=object)
    return pd.DataFrame({"run": np.repeat(names, points), "step": step, "loss": loss,
                         "compute": 6 * params * tokens, "tokens": tokens, "params": params})


def reference_insert(path: Path, frame: pd.DataFrame) -> tuple[float, float]:
    """Wall and CPU seconds of a row-by-row insert of ``frame`` (one execute per point)."""
    with CurveStore(path):
        pass
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA synchronous = NORMAL")
    start, cpu = time.perf_counter(), time.process_time()
    con.execute("BEGIN IMMEDIATE")
    ids = {}
    for row in frame.itertuples(index=False):
        if row.run not in ids:
            ids[row.run] = con.execute("INSERT INTO runs (name, source, params) VALUES (?, ?, ?)",
                                       (row.run, "reference", row.params)).lastrowid
        con.execute("INSERT INTO points (run_id, step, metric, value, compute, tokens) "
                    "VALUES (?, ?, 'loss', ?, ?, ?)",
                    (ids[row.run], row.step, row.loss, row.compute, row.tokens))
    con.execute("COMMIT")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    con.close()
    return seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--batch-runs", type=int, default=100, help="runs per import_frame call")
    parser.add_argument("--reads", type=int, default=20, help="single-run reads to time")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        total, import_seconds, import_cpu = 0, 0.0, 0.0
        with CurveStore(path) as store:
            for first in range(0, args.runs, args.batch_runs):
                frame = run_frame(first, min(args.batch_runs, args.runs - first), args.points, rng)
                start, cpu = time.perf_counter(), time.process_time()
                total += store.import_frame(frame, source="bench").points
                import_seconds += time.perf_counter() - start
                import_cpu += time.process_time() - cpu
        rate = total / import_seconds

        sample = run_frame(0, max(1, min(args.runs, 200_000 // args.points)), args.points, rng)
        reference_seconds, reference_cpu = reference_insert(Path(folder) / "reference.db", sample)
        reference_rate = len(sample) / reference_seconds

        names = [f"run-{r:05d}" for r in rng.choice(args.runs, size=args.reads)]
        con = sqlite3.connect(path)
        with CurveStore(path) as store:
            store.curves(runs=names[0])  # warm the page cache for both methods alike
            times, reference_times, cpu_times = [], [], []
            for name in names:
                start, cpu = time.perf_counter(), time.process_time()
                curve = store.curves(runs=name).frame
                times.append(time.perf_counter() - start)
                cpu_times.append(time.process_time() - cpu)
                run_id = con.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()[0]
                start = time.perf_counter()
                plain = pd.read_sql("SELECT step, compute, tokens, value, wall_time FROM points "
                                    "WHERE run_id + 0 = ? AND metric = 'loss' ORDER BY step",
                                    con, params=(run_id,))
                reference_times.append(time.perf_counter() - start)
                assert len(curve) == len(plain) == args.points
                assert np.array_equal(curve["loss"].to_numpy(), plain["value"].to_numpy())
        con.close()
        read_ms = 1e3 * float(np.median(times))
        read_cpu_ms = 1e3 * float(np.median(cpu_times))
        reference_ms = 1e3 * float(np.median(reference_times))
        size_mb = path.stat().st_size / 2 ** 20

    print(f"store benchmark: {args.runs} runs x {args.points} points = {total:,} points "
          f"(file {size_mb:.0f} MiB)")
    print(f"import: {import_seconds:.2f} s, {rate / 1e6:.2f} M points/s "
          f"(target >= 1 M/s: {'met' if rate >= 1e6 else 'NOT met'}); CPU time "
          f"{import_cpu:.2f} s = {total / import_cpu / 1e6:.2f} M points per CPU-second")
    print(f"  reference row-by-row insert on {len(sample):,} points: "
          f"{reference_rate / 1e6:.3f} M points/s; ratio {rate / reference_rate:.1f}x "
          f"(CPU-time ratio {(total / import_cpu) / (len(sample) / reference_cpu):.1f}x)")
    print(f"read one run's curve: median {read_ms:.2f} ms over {args.reads} runs "
          f"(target < 20 ms: {'met' if read_ms < 20 else 'NOT met'}); CPU {read_cpu_ms:.2f} ms")
    print(f"  reference pandas.read_sql full-table scan: median {reference_ms:.1f} ms; "
          f"ratio {reference_ms / read_ms:.1f}x")


if __name__ == "__main__":
    main()
