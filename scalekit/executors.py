"""Where jobs run: the ``concurrent.futures.Executor`` seam shared by sweeps, allocation and
the bootstrap.

- :class:`InlineExecutor` runs each job at submission in the calling process;
- :func:`process_pool` starts fresh (``spawn``) worker processes, which is safe
  after the parent has run torch or OpenMP code (a ``fork`` then can deadlock
  in the OpenMP barrier). Its workers ignore Ctrl-C (the parent handles it and
  ends them) and exit on their own within a fraction of a second once their
  parent has died, so a killed run leaves no orphan training and writing;
- :func:`fork_map` maps a function over items in forked workers that inherit the
  function (a closure over what does not pickle, such as a law built from an
  expression) instead of receiving it pickled; same Ctrl-C and parent-death rules;
- :class:`RayExecutor` hands jobs to a Ray cluster (the optional extra
  ``scalekit-laws[ray]``), started locally unless an address is given;
- :class:`SubmititExecutor` submits each job to Slurm through submitit (the optional
  extra ``scalekit-laws[slurm]``), or to submitit's local executor, which runs the same
  pickling, submission and result path on this machine;
- :func:`make_executor` picks one of these by name (:data:`EXECUTORS`), and
  :func:`worker_count` caps a requested number of workers at the work items and
  the CPUs this process may use.

Anything else that implements ``Executor`` (e.g. a Dask client's executor) works too.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from scalekit.checks import check_choice, check_number
from scalekit.errors import InputError

EXECUTORS = ("local", "ray", "slurm", "submitit-local")
#: Seconds between two checks of a worker that its parent is alive.
PARENT_CHECK_S = 0.2
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class InlineExecutor(Executor):
    """Runs each job at submission in the calling process (no start-up cost).

    A job's error is handed to the caller through its future; Ctrl-C
    (``KeyboardInterrupt``) and ``SystemExit`` propagate from ``submit`` at once.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


def usable_cpus() -> int:
    """The number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def worker_count(requested: int, items: int) -> tuple[int, str | None]:
    """``min(requested, items, CPUs)`` (at least 1) and a note saying why when it is fewer.

    Parameters
    ----------
    requested : int
        Workers asked for.
    items : int
        Jobs there are to run (more workers than jobs would idle).
    """
    cpus = usable_cpus()
    count = max(1, min(requested, items, cpus))
    if count >= requested:
        return count, None
    reason = (f"{items} job{'s' * (items != 1)}" if items <= cpus
              else f"{cpus} CPU{'s' * (cpus != 1)}")
    return count, f"{count} worker{'s' * (count != 1)} instead of {requested}: {reason}"


class WorkerPool(ProcessPoolExecutor):
    """A process pool of fresh interpreters that :meth:`terminate` ends at once."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        # Workers start at submission; with Ctrl-C blocked meanwhile they inherit the block
        # (through exec), so a Ctrl-C while one starts reaches only this process, late.
        block = getattr(signal, "pthread_sigmask", None)
        if block is None:  # not POSIX
            return super().submit(fn, *args, **kwargs)
        previous = block(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return super().submit(fn, *args, **kwargs)
        finally:
            block(signal.SIG_SETMASK, previous)

    def terminate(self) -> None:
        """Cancel the pending jobs and kill the workers (on an interrupt or an error)."""
        processes = list((getattr(self, "_processes", None) or {}).values())
        self.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join(timeout=5)


def process_pool(workers: int, *, start: str = "spawn") -> WorkerPool:
    """A pool of ``workers`` processes, each with its share of the CPU threads.

    A worker sets the thread variables of OpenMP, MKL and OpenBLAS (which torch
    and numpy read when they are imported) and torch's threads where torch is
    imported already. ``start`` is the start method: ``spawn`` (safe whatever the parent ran) or ``fork``
    (no start-up cost; only for work that never runs OpenMP code, such as numpy fits).
    """
    threads = max(1, usable_cpus() // workers)
    return WorkerPool(workers, mp_context=multiprocessing.get_context(start),
                      initializer=_start_worker,
                      initargs=(os.getpid(), threads))


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


class SubmititExecutor(Executor):
    """Submits each job as a submitit job: to Slurm (``sbatch``) or, with
    ``cluster="local"``, to submitit's local executor (a process of its own per job).

    The job's function and arguments are pickled into ``folder`` (which the cluster's
    nodes must see), and its result or error comes back through a
    ``concurrent.futures`` future once the job ends. A job that fails, is cancelled or
    is killed raises on its future; jobs that checkpoint (training) resume when the
    same work is submitted again.

    Parameters
    ----------
    folder : path
        Where submitit writes each job's pickles, script and logs.
    cluster : {"slurm", "local"}
        Slurm, or submitit's local executor (for a test of the same path on one machine).
    partition : str, optional
        Slurm partition.
    time_min : int
        Time limit of each job, in minutes.
    gpus : int, optional
        GPUs per job (Slurm's ``--gpus-per-node``).
    cpus_per_job : int
        CPUs per job (Slurm's ``--cpus-per-task``).
    """

    def __init__(self, *, folder: str | os.PathLike, cluster: str = "slurm",
                 partition: str | None = None, time_min: int = 60, gpus: int | None = None,
                 cpus_per_job: int = 1) -> None:
        try:
            import submitit
        except ImportError:
            raise InputError(f"the {'slurm' if cluster == 'slurm' else 'submitit-local'} "
                             "executor needs the optional package 'submitit' "
                             "(pip install 'scalekit-laws[slurm]')") from None
        check_choice("cluster", cluster, ("slurm", "local"))
        check_number("time_min", time_min, low=1, integer=True)
        check_number("cpus_per_job", cpus_per_job, low=1, integer=True)
        if gpus is not None:
            check_number("gpus", gpus, low=0, integer=True)
        if cluster == "slurm":
            try:
                self._executor = submitit.SlurmExecutor(folder=folder)
            except RuntimeError as exc:  # no srun on PATH
                raise InputError(f"the slurm executor runs where Slurm does: {exc}") from None
            settings = dict(time=time_min, cpus_per_task=cpus_per_job, partition=partition,
                            gpus_per_node=gpus)
        else:
            self._executor = submitit.LocalExecutor(folder=folder)
            settings = dict(timeout_min=time_min, gpus_per_node=gpus)
        self._executor.update_parameters(**{k: v for k, v in settings.items() if v is not None})
        self._jobs: list = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        job = self._executor.submit(fn, *args, **kwargs)
        self._jobs.append(job)
        future: Future = Future()
        future.job = job  # the submitit job (its id, logs, state)

        def wait() -> None:
            try:
                future.set_result(job.result())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)

        threading.Thread(target=wait, daemon=True, name=f"scalekit-job-{job.job_id}").start()
        return future

    def terminate(self) -> None:
        """Cancel every job not done yet (on an interrupt or an error)."""
        for job in self._jobs:
            if not job.done():
                job.cancel(check=False)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            self.terminate()


def make_executor(kind: str = "local", *, max_workers: int | None = None,
                  address: str | None = None, folder: str | os.PathLike | None = None,
                  slurm: dict | None = None) -> Executor:
    """An executor of ``kind`` (one of :data:`EXECUTORS`) with up to ``max_workers``
    parallel jobs.

    ``local`` with one worker runs jobs in the calling process; with more, in a
    :func:`process_pool` (whose workers share the CPU threads). ``slurm`` and
    ``submitit-local`` are :class:`SubmititExecutor` s writing into ``folder``, with
    the Slurm settings ``slurm`` (its keyword arguments ``partition``, ``time_min``,
    ``gpus``, ``cpus_per_job``).
    """
    check_choice("executor", kind, EXECUTORS)
    if max_workers is not None:
        check_number("max_workers", max_workers, low=1, integer=True)
    if kind == "ray":
        return RayExecutor(address=address, max_workers=max_workers)
    if kind in ("slurm", "submitit-local"):
        if folder is None:
            raise InputError(f"the {kind} executor needs a folder for its jobs")
        return SubmititExecutor(folder=folder, cluster="slurm" if kind == "slurm" else "local",
                                **(slurm or {}))
    workers = max_workers or 1
    if workers == 1:
        return InlineExecutor()
    return process_pool(workers)


@contextmanager
def running(executor: Executor) -> Iterator[Executor]:
    """Use ``executor`` and shut it down after; on an error or Ctrl-C, end its jobs at once."""
    try:
        yield executor
    except BaseException:
        stop = getattr(executor, "terminate", None)
        if stop is not None:
            stop()
        else:
            executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown()


def fork_map(function: Callable[[Any], Any], items: list, workers: int) -> Iterator[Any]:
    """``function(item)`` for every item, in order, from ``workers`` forked processes.

    The processes inherit ``function`` through ``fork`` (it is never pickled: it may close
    over anything); items and results travel pickled. Only for work that runs no OpenMP
    code (a ``fork`` after it can deadlock). The workers ignore Ctrl-C and exit once this
    process has died; a Ctrl-C or an error here, or a worker's failure, ends them at once.
    """
    context = multiprocessing.get_context("fork")
    tasks, results = context.SimpleQueue(), context.Queue()
    threads = max(1, usable_cpus() // workers)
    processes = [context.Process(target=_serve, daemon=True,
                                 args=(function, tasks, results, os.getpid(), threads))
                 for _ in range(workers)]
    block = getattr(signal, "pthread_sigmask", None)
    previous = block(signal.SIG_BLOCK, {signal.SIGINT}) if block else None
    try:  # started with Ctrl-C blocked, so that one reaches only this process
        for process in processes:
            process.start()
    finally:
        if block:
            block(signal.SIG_SETMASK, previous)
    try:
        for index, item in enumerate(items):
            tasks.put((index, item))
        for _ in processes:
            tasks.put(None)
        done: dict[int, Any] = {}
        for index in range(len(items)):
            while index not in done:
                done.update(_next_result(results, processes))
            yield done.pop(index)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join(timeout=5)


def _next_result(results, processes) -> dict:
    """One ``{index: result}`` from a worker; a worker's error, or its death, is raised."""
    import queue

    while True:
        try:
            index, ok, value = results.get(timeout=PARENT_CHECK_S)
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in processes):
                raise RuntimeError("a worker process died (killed or out of memory)") from None
            continue
        if not ok:
            raise RuntimeError(f"a worker failed: {value}")
        return {index: value}


def _serve(function, tasks, results, parent: int, threads: int) -> None:
    """A :func:`fork_map` worker: apply ``function`` to tasks until told to stop."""
    _start_worker(parent, threads)
    while (task := tasks.get()) is not None:
        index, item = task
        try:
            results.put((index, True, function(item)))
        except Exception as exc:  # noqa: BLE001 - handed to the parent
            results.put((index, False, f"{type(exc).__name__}: {exc}"))
            return


def _start_worker(parent: int, threads: int) -> None:
    """Initializer of a pool worker: ignore Ctrl-C, share the threads, die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in _THREAD_VARIABLES:
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")  # set it directly where a library imported it already
    if torch is not None:
        torch.set_num_threads(threads)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True,
                     name="scalekit-parent-check").start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)
