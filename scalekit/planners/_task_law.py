"""Task accuracy from (N, D) through two laws: the model ladder of Bhagia et al. (2024).

"Establishing task scaling laws via compute-efficient model ladders" (OLMo 2), read
in allenai/OLMo-ladder (``src/scaling/task_utils.py``, ``utils.py``, ``step2.py``):

- **Step 1** fits the Chinchilla law ``x = E + A / N^alpha + B / D^beta`` from a run's
  size and tokens to its task loss ``x`` (task bits-per-byte by default; C4 loss or
  the task's cross-entropy by choice), one point a run: its last checkpoint's tokens and
  the mean of its last :data:`SMOOTH` evaluations (the paper's smoothing), through the
  shared engine (Huber on log residuals).
- **Step 2** fits accuracy against ``x`` as the paper's ``step2.py`` commands do for each
  intermediate (:data:`STEP2`): for bits-per-byte and C4 loss the sigmoid
  ``acc = a / (1 + exp(-k (x - x0))) + b`` (law ``sigmoid``) on every checkpoint but the
  first 10% of each run, both coordinates smoothed by a moving average of 5 evaluations,
  plus the ideal point (zero loss, accuracy 1); for the task cross-entropy the
  log-sigmoid ``acc = 1 - a log(1 + exp(k (x - x0)))`` (law ``log_sigmoid``) on the last
  half of each run's checkpoints, unsmoothed, without the ideal point.
- **The chain** predicts ``acc(x(N, D))``. Its interval is a bootstrap over runs
  through both fits: each resample draws the runs with replacement, refits both steps
  and adds to its prediction a residual of each step drawn from that resample's fit
  (the scatter of a single run about step 1, of a single evaluation about step 2), so
  the interval is for the accuracy a new run measures, not only for the curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scalekit.checks import check_choice, check_number
from scalekit.diagnostics import Diagnostic
from scalekit.errors import InputError
from scalekit.fit import fit_law
from scalekit.fit import bootstrap_fits, resample_counts
from scalekit.formatting import format_interval, format_number, format_with_interval
from scalekit.planners._asymptote import asymptote_checks
from scalekit.results import ResultProtocol

#: Evaluations averaged for step 1 (the last ones of a run).
SMOOTH = 5
#: Intermediate metrics step 1 can target.
X_METRICS = ("bpb", "c4", "ce")
C4_COLUMN = "eval/c4_en-validation/CrossEntropyLoss"


@dataclass(frozen=True)
class Step2:
    """How step 2 is fitted: the law, the share of each run's first checkpoints left out,
    the moving-average window and whether the ideal point (0, 1) is added."""

    law: str
    skip: float
    smooth: int
    ideal: bool


#: Step 2 for each intermediate metric, as the paper's commands (the header of
#: OLMo-ladder's ``src/scripts/step2.py``) run it.
STEP2 = {"bpb": Step2("sigmoid", 0.1, 5, True), "c4": Step2("sigmoid", 0.1, 5, True),
         "ce": Step2("log_sigmoid", 0.5, 1, False)}
#: MMLU's subjects and their weights (shares of its questions) in the paper's average.
MMLU_WEIGHTS = {"mmlu_stem_test": 0.215, "mmlu_humanities_test": 0.335,
                "mmlu_social_sciences_test": 0.219, "mmlu_other_test": 0.231}


#: A ladder run: anything with ``name``, ``params``, ``tokens`` (per checkpoint), ``table``
#: (a DataFrame of evaluations) and ``source``, as
#: :func:`scalekit.curves.readers._ladder.read_ladder` returns.
Run = object


@dataclass(frozen=True)
class TaskSpec:
    """Which evaluation columns make a task: its parts (averaged with weights)."""

    name: str
    parts: tuple[str, ...]
    weights: tuple[float, ...]

    def columns(self, x: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The columns of the intermediate metric ``x`` and of the accuracy."""
        accuracy = tuple(f"eval/downstream/{p}_rc_5shot_len_norm" for p in self.parts)
        if x == "c4":
            return (C4_COLUMN,), accuracy
        if x == "ce":
            return tuple(f"eval/downstream_soft_log/{p}_rc_5shot_soft_log"
                         for p in self.parts), accuracy
        return tuple(f"eval/downstream_bpb/{p}_rc_5shot_bpb" for p in self.parts), accuracy


def _single(part: str) -> TaskSpec:
    return TaskSpec(f"{part}_5shot", (part,), (1.0,))


#: The paper's eight tasks (OLMo-ladder ``v2_main``): ranked-classification accuracy
#: normalised by length, MMLU as the question-weighted mean of its four test subjects.
TASKS: dict[str, TaskSpec] = {
    "mmlu_avg_test_5shot": TaskSpec("mmlu_avg_test_5shot", tuple(MMLU_WEIGHTS),
                                    tuple(MMLU_WEIGHTS.values())),
    **{f"{p}_5shot": _single(p) for p in (
        "hellaswag_val", "arc_challenge_test", "arc_easy_test", "piqa_val", "csqa_val",
        "socialiqa_val", "openbookqa_test")},
}


@dataclass(frozen=True)
class TaskPrediction:
    """The chained prediction of one task at the target (N, D)."""

    task: str
    intermediate: float
    intermediate_interval: tuple[float, float]
    accuracy: float
    accuracy_interval: tuple[float, float]
    step1: dict
    step2: dict
    actual: float | None = None
    actual_intermediate: float | None = None
    data: dict | None = None

    @property
    def error(self) -> float | None:
        """Predicted minus actual accuracy, when the actual is known."""
        return None if self.actual is None else self.accuracy - self.actual


@dataclass(repr=False)
class TaskLawResult(ResultProtocol):
    """Chained predictions of task accuracies for one target run.

    Attributes
    ----------
    params, tokens : float
        The target N and D.
    x : str
        The intermediate metric (``bpb``, ``c4`` or ``ce``).
    predictions : list of TaskPrediction
    ci_level : float
    settings : dict
        ``smooth`` (step 1), ``step2`` (law, skip, smooth, ideal), ``bootstrap``, ``seed``
        and the runs fitted.
    diagnostics : list of Diagnostic
    """

    params: float
    tokens: float
    x: str
    predictions: list[TaskPrediction]
    ci_level: float
    settings: dict
    diagnostics: list[Diagnostic]

    def to_dict(self) -> dict:
        return {"params": self.params, "tokens": self.tokens, "x": self.x,
                "ci_level": self.ci_level, "settings": self.settings,
                "predictions": [{**p.__dict__, "error": p.error,
                                 "intermediate_interval": list(p.intermediate_interval),
                                 "accuracy_interval": list(p.accuracy_interval)}
                                for p in self.predictions],
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    def to_frame(self):
        """One row per task: the predicted accuracy and intermediate with their intervals
        (and the actual accuracy and the error, when known)."""
        import pandas as pd

        return pd.DataFrame([{"task": p.task, "accuracy": p.accuracy,
                              "accuracy_low": p.accuracy_interval[0],
                              "accuracy_high": p.accuracy_interval[1], self.x: p.intermediate,
                              f"{self.x}_low": p.intermediate_interval[0],
                              f"{self.x}_high": p.intermediate_interval[1],
                              "actual": p.actual, "error": p.error}
                             for p in self.predictions])

    @classmethod
    def from_dict(cls, data: dict) -> TaskLawResult:
        predictions = [TaskPrediction(**{k: (tuple(v) if k.endswith("interval") else v)
                                         for k, v in p.items() if k != "error"})
                       for p in data["predictions"]]
        return cls(params=data["params"], tokens=data["tokens"], x=data["x"],
                   predictions=predictions, ci_level=data["ci_level"], settings=data["settings"],
                   diagnostics=[Diagnostic.from_dict(d) for d in data["diagnostics"]])

    def _summary_title(self) -> str:
        return (f"Task accuracy at N = {format_number(self.params)}, "
                f"D = {format_number(self.tokens)} (via {self.x})")

    def _summary_sections(self):
        level = f"{self.ci_level:.0%}"
        rows = []
        for p in self.predictions:
            line = (f"{format_number(p.accuracy)} {format_interval(p.accuracy_interval)}; "
                    f"{self.x} {format_number(p.intermediate)} "
                    f"{format_interval(p.intermediate_interval)}")
            if p.actual is not None:
                line += f"; actual {format_number(p.actual)}, error {format_number(p.error)}"
            rows.append((p.task, line))
        fits = [(p.task, "step 1 " + ", ".join(
                    f"{k} {format_with_interval(p.step1['values'][k], p.step1['ci'].get(k))}"
                    for k in ("E", "alpha", "beta"))
                 + f"; step 2 ({p.step2['law']}) "
                         + ", ".join(f"{k} {format_number(v)}"
                                     for k, v in p.step2["values"].items()))
                for p in self.predictions]
        return [(f"Accuracy ({level} interval)", rows), ("Fits", fits),
                ("Diagnostics", [d.message for d in self.diagnostics])]

    def _repr_fields(self) -> dict:
        return {"params": self.params, "tokens": self.tokens, "tasks": len(self.predictions)}


@dataclass(frozen=True)
class _TaskData:
    """One task's fitting data: step 1 points per run, step 2 checkpoints per run."""

    params: np.ndarray                 # (R,)
    tokens: np.ndarray                 # (R,)
    final: np.ndarray                  # (R,) smoothed last intermediate value
    curves: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # x, acc smoothed; raw


def _moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of each value and up to ``window - 1`` before it (fewer at the start)."""
    total = np.cumsum(values)
    shifted = np.concatenate([np.zeros(window), total[:-window]]) if len(values) > window \
        else np.zeros(len(values))
    counts = np.minimum(np.arange(1, len(values) + 1), window)
    return (total - shifted[:len(values)]) / counts


def _weighted(run: Run, columns: Sequence[str], weights: Sequence[float], task: str):
    missing = [c for c in columns if c not in run.table]
    if missing:
        raise InputError(f"task {task!r} needs column {missing[0]!r}, which the file lacks",
                         source=run.source, line=1, column=missing[0])
    values = run.table[list(columns)].to_numpy(dtype=float)
    return values @ (np.asarray(weights) / np.sum(weights))


def task_data(runs: Sequence[Run], spec: TaskSpec, x: str, *, smooth: int = SMOOTH,
              step2: Step2 | None = None) -> _TaskData:
    """Step 1 and step 2 data of task ``spec`` from the ladder's runs (step 2's skip and
    window from ``step2``, by default ``STEP2[x]``)."""
    step2 = STEP2[x] if step2 is None else step2
    x_columns, acc_columns = spec.columns(x)
    x_weights = (1.0,) if x == "c4" else spec.weights
    sign = -1.0 if x == "ce" else 1.0             # soft_log is the log-probability: negated
    finals, curves = [], []
    for run in runs:
        xs = sign * _weighted(run, x_columns, x_weights, spec.name)
        accs = _weighted(run, acc_columns, spec.weights, spec.name)
        keep = np.isfinite(xs) & np.isfinite(accs)
        xs, accs = xs[keep], accs[keep]
        if not len(xs):
            raise InputError(f"run {run.name!r} has no finite evaluation of task "
                             f"{spec.name!r}", source=run.source)
        finals.append(xs[-smooth:].mean())
        start = int(np.ceil(step2.skip * len(xs)))
        curves.append((_moving_average(xs[start:], step2.smooth),
                       _moving_average(accs[start:], step2.smooth), xs[start:], accs[start:]))
    return _TaskData(params=np.array([r.params for r in runs]),
                     tokens=np.array([r.tokens[np.isfinite(r.tokens)][-1] for r in runs]),
                     final=np.array(finals), curves=curves)


def _fit_step1(data: _TaskData, rows: np.ndarray, starts=None):
    return fit_law("chinchilla", {"params": data.params[rows], "tokens": data.tokens[rows]},
                   data.final[rows], starts=starts)


def _step2_points(data: _TaskData, rows, step2: Step2):
    """Step 2's x and accuracy, with the ideal point last when ``step2`` adds it."""
    ideal = [[0.0]] if step2.ideal else []
    x = np.concatenate([data.curves[r][0] for r in rows] + ideal)
    y = np.concatenate([data.curves[r][1] for r in rows] + [[1.0]] * len(ideal))
    return x, y


def _fit_step2(data: _TaskData, rows: np.ndarray, step2: Step2, starts=None):
    x, y = _step2_points(data, rows, step2)
    return fit_law(step2.law, {"x": x}, y, loss="squared", starts=starts)


def _data_dict(data: _TaskData) -> dict:
    """The points of both steps, for plots: runs' (N, D, x) and smoothed (x, accuracy)."""
    return {"params": data.params.tolist(), "tokens": data.tokens.tolist(),
            "final": data.final.tolist(), "x": [c[0].tolist() for c in data.curves],
            "accuracy": [c[1].tolist() for c in data.curves]}


def _step_dict(fit, draws=None, level: float = 0.95) -> dict:
    """A step's law, values and intervals: percentiles of ``draws`` (the chain bootstrap's
    refits, natural units, (B, P)) where given, else the fit's own intervals."""
    step = {"law": fit.law.name, "formula": fit.law.formula, "values": dict(fit.values),
            "ci": {k: list(v) for k, v in fit.ci.items()}, "ci_method": fit.stats["ci_method"],
            "n_points": fit.stats["n_points"], "residual_scale": fit.stats["residual_scale"],
            "diagnostics": [d.to_dict() for d in fit.diagnostics]}
    if draws is not None and len(draws) >= 2:
        tail = (1 - level) / 2 * 100
        ends = np.percentile(draws, [tail, 100 - tail], axis=0)
        step["ci"] = {name: [float(ends[0, j]), float(ends[1, j])]
                      for j, name in enumerate(fit.law.param_names)}
        step["ci_method"] = f"bootstrap over runs, through both steps ({len(draws)} resamples)"
    return step


def _bootstrap_chain(data: _TaskData, step1, step2, target, bootstrap: int, rng, ideal: bool):
    """Draws of a new run's intermediate metric and accuracy at ``target``, and the
    resamples' parameters of both steps (natural units).

    Each resample draws the runs with replacement (the engine's run bootstrap: one set
    of run counts weights both steps' points), refits both steps from the full fits'
    optima, and adds a residual of each step drawn from that resample's own fit: a
    run's log residual about step 1 (inflated by ``sqrt(n / (n - p))``) and a single
    evaluation's residual about step 2.
    """
    if not bootstrap:
        return np.zeros(0), np.zeros(0), None, None
    n_runs = len(data.params)
    drawn = resample_counts(rng, n_runs, bootstrap)                       # (B, R)
    X1 = {"params": data.params, "tokens": data.tokens}
    z1, ok1 = _refit(step1, X1, np.log(data.final), drawn)
    run_of = np.concatenate([np.full(len(c[0]), r) for r, c in enumerate(data.curves)])
    x2, y2 = _step2_points(data, range(n_runs), Step2("", 0.0, 1, ideal))
    counts2 = drawn[:, run_of]
    if ideal:
        counts2 = np.column_stack([counts2, np.ones(bootstrap)])       # the ideal point stays
    z2, ok2 = _refit(step2, {"x": x2}, np.log(y2), counts2)
    law1, law2 = step1.law, step2.law
    x_hat = np.exp(law1.log_predict_fitting(target, z1))[:, 0]            # (B,)
    log_res1 = np.log(data.final)[None] - law1.log_predict_fitting(X1, z1)  # (B, R)
    p1 = len(law1.params)
    inflate = np.sqrt(n_runs / max(n_runs - p1, 1))
    pick1 = np.array([rng.choice(n_runs, p=w / w.sum()) for w in drawn])
    x_new = x_hat * np.exp(inflate * log_res1[np.arange(bootstrap), pick1])
    raw_x = np.concatenate([c[2] for c in data.curves])
    raw_y = np.concatenate([c[3] for c in data.curves])
    raw_run = np.concatenate([np.full(len(c[2]), r) for r, c in enumerate(data.curves)])
    res2 = raw_y[None] - law2.function({"x": raw_x}, law2.to_natural(z2))  # (B, m)
    weights = drawn[:, raw_run].astype(float)
    pick2 = np.array([rng.choice(len(raw_x), p=w / w.sum()) for w in weights])
    # every resample's sigmoid at every resample's x_new (B, B): each takes its own
    acc = np.diagonal(law2.function({"x": x_new}, law2.to_natural(z2)))
    acc = acc + res2[np.arange(bootstrap), pick2]
    ok = ok1 & ok2 & np.isfinite(x_new) & np.isfinite(acc)
    return x_new[ok], acc[ok], law1.to_natural(z1[ok]), law2.to_natural(z2[ok])


def _refit(fit, X, log_y, counts):
    """Fitting-space optima (B, P) of the resamples weighted by ``counts`` (B, n)."""
    law = fit.law
    best = law.to_fitting(np.array([fit.values[n] for n in law.param_names]))
    starts = np.broadcast_to(best, (len(counts), 1, len(best)))
    z, objective = bootstrap_fits(law, {k: np.asarray(v, float) for k, v in X.items()}, log_y,
                                  counts.astype(float), np.ascontiguousarray(starts),
                                  loss=fit.stats["loss"], delta=fit.stats["delta"], n_jobs=1)
    return z, np.isfinite(objective)


def predict_task(runs: Sequence[Run], task: str, params: float, tokens: float, *,
                 x: str = "bpb", bootstrap: int = 200, ci_level: float = 0.95, seed: int = 0,
                 smooth: int = SMOOTH, step2: Step2 | None = None) -> TaskPrediction:
    """The chained prediction of ``task``'s accuracy at (``params``, ``tokens``); step 2
    as ``step2`` says (``STEP2[x]`` by default)."""
    spec = TASKS[task] if isinstance(task, str) else task
    how = STEP2[x] if step2 is None else step2
    data = task_data(runs, spec, x, smooth=smooth, step2=how)
    all_rows = np.arange(len(runs))
    step1, step2 = _fit_step1(data, all_rows), _fit_step2(data, all_rows, how)
    target = {"params": np.array([params]), "tokens": np.array([tokens])}
    intermediate = float(step1.predict(target)[0])
    accuracy = float(step2.predict({"x": np.array([intermediate])})[0])
    rng = np.random.default_rng(seed)
    draws_x, draws_acc, draws1, draws2 = _bootstrap_chain(data, step1, step2, target, bootstrap,
                                                          rng, how.ideal)
    tail = (1 - ci_level) / 2 * 100
    if len(draws_x) >= 2:
        x_interval = tuple(float(v) for v in np.percentile(draws_x, [tail, 100 - tail]))
        acc_interval = tuple(float(v) for v in np.percentile(draws_acc, [tail, 100 - tail]))
    else:
        x_interval = acc_interval = (float("nan"), float("nan"))
    return TaskPrediction(task=spec.name, intermediate=intermediate,
                          intermediate_interval=x_interval, accuracy=accuracy,
                          accuracy_interval=acc_interval,
                          step1=_step_dict(step1, draws1, ci_level),
                          step2=_step_dict(step2, draws2, ci_level), data=_data_dict(data))


def predict_tasks(runs: Sequence[Run], params: float, tokens: float, *,
                  tasks: Sequence[str] | None = None, x: str = "bpb", bootstrap: int = 200,
                  ci_level: float = 0.95, seed: int = 0,
                  actual: Run | None = None) -> TaskLawResult:
    """Chained accuracy predictions of ``tasks`` (the paper's eight by default).

    Parameters
    ----------
    runs : sequence of Run
        The ladder fitted (:func:`scalekit.curves.readers._ladder.read_ladder`).
    params, tokens : float
        The target N and D.
    tasks : sequence of str, optional
        Names from :data:`TASKS`.
    x : {"bpb", "c4", "ce"}
        The intermediate metric of step 1.
    bootstrap : int
        Resamples of the runs through both steps (0: no intervals).
    ci_level : float
    seed : int
    actual : Run, optional
        The target run's evaluations: its last checkpoint is compared with each prediction.
    """
    check_choice("x", x, X_METRICS)
    check_number("params", params, low=0, low_open=True)
    check_number("tokens", tokens, low=0, low_open=True)
    check_number("bootstrap", bootstrap, low=0, integer=True)
    check_number("ci_level", ci_level, low=0, high=1, low_open=True, high_open=True)
    names = list(TASKS) if not tasks else list(tasks)
    for name in names:
        check_choice("task", name, sorted(TASKS))
    if len(runs) <= 5:
        raise InputError(f"the ladder has {len(runs)} runs, but step 1 (5 parameters) needs "
                         "more than 5")
    diagnostics = []
    predictions = []
    for name in names:
        p = predict_task(runs, name, params, tokens, x=x, bootstrap=bootstrap,
                         ci_level=ci_level, seed=seed)
        if actual is not None:
            data = task_data([actual], TASKS[name], x, smooth=1, step2=Step2("", 0.0, 1, False))
            p = TaskPrediction(**{**p.__dict__, "actual": float(data.curves[0][3][-1]),
                                  "actual_intermediate": float(data.curves[0][2][-1])})
        predictions.append(p)
        diagnostics += asymptote_checks(
            p.step1["values"]["E"], p.data["final"], residual_scale=p.step1["residual_scale"],
            name="E", where=f"{p.task} step 1", target=p.actual_intermediate)
    largest = max(r.params for r in runs)
    if params > largest:
        diagnostics.append(Diagnostic(
            "extrapolation", "info", f"the target N = {format_number(params)} is "
            f"{format_number(params / largest)} x the largest run fitted"))
    return TaskLawResult(params=float(params), tokens=float(tokens), x=x,
                         predictions=predictions, ci_level=ci_level,
                         settings={"smooth": SMOOTH, "step2": STEP2[x].__dict__,
                                   "bootstrap": bootstrap,
                                   "seed": seed, "runs": [r.name for r in runs],
                                   "resample": "runs, through both steps, plus a residual "
                                               "of each step"},
                         diagnostics=diagnostics)



def evaluate_holdout(runs: Sequence[Run], *, tasks: Sequence[str] | None = None,
                     x: str = "bpb", bootstrap: int = 200, ci_level: float = 0.95,
                     seed: int = 0) -> list[TaskLawResult]:
    """The paper's rollout: hold out the largest size, fit the rest, predict each held-out run.

    Returns one :class:`TaskLawResult` per held-out run, at its size and final tokens,
    with its last evaluation as the actual accuracy.
    """
    largest = max(r.params for r in runs)
    fitted = [r for r in runs if r.params < largest]
    return [predict_tasks(fitted, run.params, float(run.tokens[np.isfinite(run.tokens)][-1]),
                          tasks=tasks, x=x, bootstrap=bootstrap, ci_level=ci_level, seed=seed,
                          actual=run)
            for run in runs if run.params == largest]
