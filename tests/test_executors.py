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


def test_fork_map_runs_a_closure_that_does_not_pickle_and_keeps_the_order():
    import pickle

    import pytest

    from scalekit.executors import fork_map

    offset = 10

    def shifted(item):                  # a local function: pickle refuses it
        return item * item + offset, os.getpid()

    with pytest.raises((AttributeError, pickle.PicklingError)):
        pickle.dumps(shifted)
    results = list(fork_map(shifted, list(range(12)), 2))
    assert [value for value, _ in results] == [i * i + 10 for i in range(12)]
    assert os.getpid() not in {pid for _, pid in results}      # computed in the workers


def test_fork_map_raises_a_workers_error_and_its_death():
    import pytest

    from scalekit.executors import fork_map

    def fails(item):
        if item == 3:
            raise ValueError("three")
        return item

    with pytest.raises(RuntimeError, match="ValueError: three"):
        list(fork_map(fails, list(range(6)), 2))

    def dies(item):
        os._exit(9)

    with pytest.raises(RuntimeError, match="died"):
        list(fork_map(dies, [1, 2], 2))
