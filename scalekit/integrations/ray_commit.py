"""The ``commit`` allocator as a Ray Tune scheduler: probe, fit the law, finish the best.

>>> from ray import tune
>>> from scalekit.integrations.ray_commit import CommitScheduler
>>> scheduler = CommitScheduler(budget=0.1, time_attr="step")  # 10% of training every trial
>>> tuner = tune.Tuner(train, param_space={"params": tune.grid_search([...]),  # doctest: +SKIP
...     "max_t": tune.grid_search([...])}, tune_config=tune.TuneConfig(
...     metric="loss", mode="min", scheduler=scheduler))

The decisions are :class:`~scalekit.allocate._commit.CommitLoop`'s, the same that
``scalekit allocate replay|plan|run`` make: the scheduler answers each batch of
the loop's orders (train trial ``t`` from step ``a`` to ``b``) by running those
trials, pausing each where its order ends, and hands the points they reported
back to the loop. Trials no order names are stopped without running.
"""

from __future__ import annotations

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from scalekit.allocate import CommitLoop, CommitPolicy
from scalekit.allocate import Curve, Sweep
from scalekit.checks import check_choice, check_number
from scalekit.integrations.ray_tune import require_metric_and_mode, take_search_properties


class CommitScheduler(FIFOScheduler):
    """Ray Tune scheduler running the ``commit`` allocator over a finite set of trials.

    Each trial's configuration says its size (``params_key``: parameters N) and its
    schedule length (``max_t_key``: the ``time_attr`` at which it is complete); a step
    of it costs ``6 N`` FLOPs per token, times ``config[tokens_key]`` tokens per step
    when ``tokens_key`` is given (else the same for every trial, which cancels in a
    budget given as a share). Once the search algorithm has generated every trial,
    the scheduler runs :class:`~scalekit.allocate._commit.CommitLoop` on them: cheap
    probes across sizes and schedule lengths, the law ``L(N, D)`` fitted to their
    end-of-schedule losses, a short guard of each variant of the best configuration,
    and the run the budget can finish (or train furthest) that the law predicts
    lowest, trained to its end (what is left then finishes the trials ending at or beyond
    the largest compute reached that the law forecasts to end nearest its loss-compute
    frontier, and is not spent where there are none). Every trial is held paused when added; it runs
    while an order of the loop names it, is paused where its order ends (the trainable
    must save and restore checkpoints, as for any pausing scheduler) and stopped once the
    loop is done. An order ends at
    the first result at or past its step, so the spend exceeds the budget by at most
    one reporting interval per order.

    Parameters
    ----------
    budget : float
        FLOPs, or, when <= 1, a share of the FLOPs of training every trial to its end.
    time_attr : str
        The increasing result attribute that counts steps.
    metric : str, optional
        The loss to minimise; may instead come from ``tune.TuneConfig``.
    mode : {"min"}, optional
        Only ``"min"``: the law is fitted to a loss.
    params_key, max_t_key : str
        Keys of the trial's configuration holding N and the schedule length.
    tokens_key : str, optional
        Key of the configuration holding the tokens per step.
    policy : CommitPolicy, optional
        The allocator's settings (default: ``CommitPolicy()``).

    Attributes
    ----------
    decisions : list of dict
        What was probed, guarded and committed to, and why (``CommitLoop.decisions``;
        runs are named by trial id).
    law : EndLaw or None
        The law fitted to the probes.
    spent : float
        FLOPs the trials used so far, counted on the steps they reported.
    reached : dict
        Trial id -> the last step it reported (0: never ran).
    configs : dict
        Trial id -> its configuration.
    """

    def __init__(self, *, budget: float, time_attr: str = "training_iteration",
                 metric: str | None = None, mode: str | None = None,
                 params_key: str = "params", max_t_key: str = "max_t",
                 tokens_key: str | None = None, policy: CommitPolicy | None = None):
        super().__init__()
        check_number("budget", budget, low=0, low_open=True)
        if mode is not None:
            check_choice("mode", mode, ("min",))
        self._budget, self._time_attr, self._metric, self._mode = budget, time_attr, metric, mode
        self._keys = (params_key, max_t_key, tokens_key)
        self._policy = policy or CommitPolicy()
        self._trials: dict[str, Trial] = {}
        self._points: dict[str, list[tuple[float, float]]] = {}
        self._reached: dict[str, float] = {}
        self._loop: CommitLoop | None = None
        self._steps = None
        self._orders: dict[str, float] = {}  # trial id -> step its current order ends at
        self._marks: dict[str, int] = {}  # trial id -> its points before the current batch
        self._done = False
        self.decisions: list[dict] = []
        self.law = None

    def set_search_properties(self, metric: str | None, mode: str | None, **spec) -> bool:
        return take_search_properties(self, metric, mode, ("min",))

    def on_trial_add(self, tune_controller, trial) -> None:
        require_metric_and_mode(self)
        if self._loop is not None:
            raise ValueError(f"{type(self).__name__} plans over every trial at once, but trial "
                             f"{trial.trial_id} was added after the plan began: use a finite "
                             "search space (e.g. `tune.grid_search`).")
        params_key, max_t_key, tokens_key = self._keys
        for key in (params_key, max_t_key) + ((tokens_key,) if tokens_key else ()):
            value = trial.config.get(key)
            check_number(f"config[{key!r}]", value, low=0, low_open=True)
        # held back until an order names it (Ray Tune starts every PENDING trial it can)
        trial.set_status(Trial.PAUSED)
        self._trials[trial.trial_id] = trial
        self._points[trial.trial_id] = []
        self._reached[trial.trial_id] = 0.0

    # -- the loop ------------------------------------------------------------------------
    def _start(self) -> None:
        params_key, max_t_key, tokens_key = self._keys
        configs = {t: trial.config for t, trial in self._trials.items()}
        empty = Curve(np.empty(0), np.empty(0), np.empty(0))
        sweep = Sweep(self._time_attr, {t: empty for t in configs},
                      {t: float(c[max_t_key]) for t, c in configs.items()},
                      {t: 6.0 * float(c[params_key]) * float(c[tokens_key] if tokens_key else 1)
                       for t, c in configs.items()},
                      {t: float(c[params_key]) for t, c in configs.items()})
        budget = self._budget * sweep.total_compute() if self._budget <= 1 else self._budget
        self._sweep = sweep
        self._loop = CommitLoop(sweep, self._policy, budget, runs=list(configs))
        self.decisions = self._loop.decisions
        self._steps = self._loop.steps()
        self._take(self._next(None))

    def _next(self, results):
        try:
            return next(self._steps) if results is None else self._steps.send(results)
        except StopIteration:
            return None

    def _take(self, batch) -> None:
        """Make ``batch`` (the loop's orders) current; None: the loop is done."""
        self.law = self._loop.law
        if batch is None:
            self._done, self._orders = True, {}
            return
        self._orders = {a.run: a.stop for a in batch}
        self._marks = {run: len(self._points[run]) for run in self._orders}
        self._settle()

    def _settle(self) -> None:
        """Hand the batch's points back once every order is met (one after the other, while
        an order is already met: a trial may have run past a later order's step)."""
        while not self._done and all(self._met(run) for run in self._orders):
            results = {}
            for run in self._orders:
                new = self._points[run][self._marks[run]:]
                steps = np.array([s for s, _ in new], float)
                results[run] = Curve(steps, steps * self._sweep.flops_per_unit[run],
                                     np.array([v for _, v in new], float))
            self._take(self._next(results))

    def _met(self, run: str) -> bool:
        trial = self._trials[run]
        return (self._reached[run] >= self._orders[run] * (1 - 1e-9)
                or trial.status in (Trial.TERMINATED, Trial.ERROR))

    @property
    def spent(self) -> float:
        if self._loop is None:
            return 0.0
        return float(sum(self._sweep.flops_per_unit[t] * min(r, self._sweep.max_resource[t])
                         for t, r in self._reached.items()))

    @property
    def reached(self) -> dict[str, float]:
        return dict(self._reached)

    @property
    def configs(self) -> dict[str, dict]:
        return {run: trial.config for run, trial in self._trials.items()}

    # -- Ray Tune's calls --------------------------------------------------------------------
    def choose_trial_to_run(self, tune_controller) -> Trial | None:
        if self._loop is None:
            if not tune_controller.search_alg.is_finished() or not self._trials:
                return None
            self._start()
        if self._done:
            self._stop_waiting(tune_controller)
            return None
        for run in self._orders:
            trial = self._trials[run]
            if not self._met(run) and trial.status in (Trial.PENDING, Trial.PAUSED):
                return trial
        return None

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        run = trial.trial_id
        if self._time_attr in result and self._metric in result:
            step, value = float(result[self._time_attr]), float(result[self._metric])
            if step > self._reached.get(run, 0.0):  # a trainable that restarted repeats steps
                self._points[run].append((step, value))
                self._reached[run] = step
        if self._loop is None:  # cannot happen: no trial runs before the plan
            return TrialScheduler.CONTINUE
        if run in self._orders and not self._met(run):
            return TrialScheduler.CONTINUE
        self._settle()
        if not self._done and run in self._orders and not self._met(run):
            return TrialScheduler.CONTINUE  # the next batch trains it further
        if self._done:
            self._stop_waiting(tune_controller)
            return TrialScheduler.STOP
        if self._reached[run] >= self._sweep.max_resource[run] * (1 - 1e-9):
            return TrialScheduler.STOP
        return TrialScheduler.PAUSE

    def on_trial_complete(self, tune_controller, trial, result: dict) -> None:
        if self._loop is not None and not self._done and trial.trial_id in self._orders:
            self._settle()

    def on_trial_error(self, tune_controller, trial) -> None:
        self.on_trial_complete(tune_controller, trial, {})

    def on_trial_remove(self, tune_controller, trial) -> None:
        self.on_trial_complete(tune_controller, trial, {})

    def _stop_waiting(self, tune_controller) -> None:
        for run, trial in self._trials.items():
            if trial.status in (Trial.PENDING, Trial.PAUSED):
                if self._reached[run] > 0:
                    tune_controller.stop_trial(trial)
                else:  # never started: no actor to stop; a folder for its (empty) result
                    trial.init_local_path()
                    tune_controller._set_trial_status(trial, Trial.TERMINATED)

    def debug_string(self) -> str:
        said = [f"{d['action']} {len(d['runs'])}" for d in self.decisions]
        return f"Using CommitScheduler: {', '.join(said) or 'waiting for every trial'}"
