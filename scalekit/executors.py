"""Where jobs run: the ``concurrent.futures.Executor`` seam shared by sweeps and allocation.

``local`` is a process pool on this machine (or the calling process when one
worker is asked for); ``ray`` hands jobs to a Ray cluster (the optional extra
``scalekit-laws[ray]``), started locally unless an address is given. Anything
else that implements ``Executor`` (e.g. a Dask client's executor) works too.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

from scalekit.checks import check_choice, check_number
from scalekit.errors import InputError

EXECUTORS = ("local", "ray")


class InlineExecutor(Executor):
    """Runs each job at submission in the calling process (no start-up cost)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


class RayExecutor(Executor):
    """Submits jobs as Ray tasks; their ``ObjectRef`` futures are ``concurrent.futures`` futures.

    Parameters
    ----------
    address : str, optional
        Address of a running Ray cluster; ``None`` starts (or joins) a local one.
    max_workers : int, optional
        CPUs of the local instance when one is started.
    cpus_per_job : float
        CPUs Ray reserves for every job.
    """

    def __init__(self, *, address: str | None = None, max_workers: int | None = None,
                 cpus_per_job: float = 1.0) -> None:
        try:
            import ray
        except ImportError:
            raise InputError("the ray executor needs the optional package 'ray' "
                             "(pip install 'scalekit-laws[ray]')") from None

        self._ray = ray
        self._owns = not ray.is_initialized()
        if self._owns:
            ray.init(address=address, num_cpus=max_workers if address is None else None,
                     include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
        self._cpus = cpus_per_job

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        remote = self._ray.remote(num_cpus=self._cpus)(fn)
        return remote.remote(*args, **kwargs).future()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()


def make_executor(kind: str = "local", *, max_workers: int | None = None,
                  address: str | None = None,
                  initializer: Callable[[int], None] | None = None) -> Executor:
    """An executor of ``kind`` ("local" or "ray") with up to ``max_workers`` parallel jobs.

    ``local`` with one worker runs jobs in the calling process; with more, in a
    pool of fresh (spawned) processes, each of which first calls
    ``initializer(max_workers)`` when one is given (e.g. to share CPU threads).
    """
    check_choice("executor", kind, EXECUTORS)
    if max_workers is not None:
        check_number("max_workers", max_workers, low=1, integer=True)
    if kind == "ray":
        return RayExecutor(address=address, max_workers=max_workers)
    workers = max_workers or 1
    if workers == 1:
        return InlineExecutor()
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=initializer,
                               initargs=(workers,) if initializer is not None else ())
