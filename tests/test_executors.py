"""The executor seam: worker counts capped at the jobs and the CPUs, and said."""

from __future__ import annotations

import os

from scalekit.executors import usable_cpus, worker_count


def test_workers_are_capped_at_the_jobs_and_the_cpus_and_the_cap_is_said():
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert usable_cpus() == cpus
    assert worker_count(1, 5) == (1, None)
    count, note = worker_count(100_000, 2)  # --n-jobs 100000 for 2 resamples forked ~1,465
    assert count == min(2, cpus) and note.startswith(f"{count} worker")
    count, note = worker_count(100_000, 10**6)
    assert count == cpus and note.endswith(f"{cpus} CPU" + "s" * (cpus != 1))
    count, note = worker_count(3, 1)
    assert count == 1 and note == "1 worker instead of 3: 1 job"
    assert worker_count(5, 0)[0] == 1  # no job: the calling process, not zero workers
