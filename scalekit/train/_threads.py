"""The thread pools a training run uses, set deliberately.

A step of the bundled tasks' models on the CPU is too short to split across
threads: left at their defaults, torch's OpenMP pool and numpy's BLAS pool (numpy
draws a teacher's weights once) each start a thread per core, and their
threads wait on each other and on every other process for the same cores (on 2
shared cores, 20 steps/s against 300-360 with one thread of each). A sweep runs
in parallel across runs instead: worker processes (``--workers``) or the batched
trainer. So every run trains with ``SCALEKIT_TRAIN_THREADS`` threads in each
pool, 1 unless that environment variable says otherwise; the pools are restored
afterwards.
"""

from __future__ import annotations

import functools
import os

from scalekit.checks import fail

#: Environment variable giving the threads of each pool of a training run.
THREADS_VARIABLE = "SCALEKIT_TRAIN_THREADS"


def train_threads() -> int:
    """Threads of each pool of a training run: ``SCALEKIT_TRAIN_THREADS``, 1 by default."""
    value = os.environ.get(THREADS_VARIABLE, "1")
    if not value.strip().isdigit() or int(value) < 1:
        raise fail(THREADS_VARIABLE, value, "a whole number of at least 1")
    return int(value)


def with_train_threads(function):
    """Run ``function`` with torch's and the native (BLAS, OpenMP) pools at
    :func:`train_threads` threads, restoring them afterwards."""

    @functools.wraps(function)
    def limited(*args, **kwargs):
        import torch
        from threadpoolctl import threadpool_limits

        threads, before = train_threads(), torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            with threadpool_limits(threads):
                return function(*args, **kwargs)
        finally:
            torch.set_num_threads(before)

    return limited
