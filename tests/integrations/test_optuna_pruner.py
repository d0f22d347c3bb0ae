"""ForecastPruner in a real Optuna study with the early-leader trap (see conftest)."""

from __future__ import annotations

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")
from optuna.pruners._successive_halving import (_estimate_min_resource,  # noqa: E402
                                                _is_trial_promotable_to_next_rung)
from optuna.study import StudyDirection  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from scalekit.allocate import (Curve, ForecastPolicy, LossPolicy, Sweep, allocate,  # noqa: E402
                               make_forecaster)
from scalekit.errors import InputError  # noqa: E402
from scalekit.integrations.optuna import ForecastPruner  # noqa: E402
from scalekit.integrations._rungs import ForecastRanking  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)


def run_study(sweep, pruner):
    """Optimise the crossing sweep under ``pruner``; returns the study and the steps trained."""
    study = optuna.create_study(pruner=pruner, sampler=optuna.samplers.RandomSampler(seed=0))
    for size, variant in sweep.trials:
        study.enqueue_trial({"size": size, "variant": variant})
    used = [0]

    def objective(trial):
        size = trial.suggest_int("size", 0, sweep.sizes - 1)
        variant = trial.suggest_int("variant", 0, sweep.variants - 1)
        for step, loss in enumerate(sweep.curve(size, variant), start=1):
            used[0] += 1
            trial.report(float(loss), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return float(loss)

    study.optimize(objective, n_trials=len(sweep.trials))
    return study, used[0]


def state_of(study, size, variant):
    return next(t.state for t in study.trials if t.params == {"size": size, "variant": variant})


@pytest.fixture(scope="module")
def studies(crossing):
    return {name: run_study(crossing, pruner) for name, pruner in (
        ("none", optuna.pruners.NopPruner()),
        ("optuna_sh", optuna.pruners.SuccessiveHalvingPruner(min_resource=9, reduction_factor=3)),
        ("forecast", ForecastPruner(min_resource=9, max_resource=243, reduction_factor=3)))}


@pytest.mark.slow
def test_optuna_successive_halving_prunes_the_eventual_best(studies, crossing):
    study, used = studies["optuna_sh"]
    assert state_of(study, *crossing.best) == TrialState.PRUNED
    assert study.best_value > crossing.curve(*crossing.best)[-1] + 0.02


@pytest.mark.slow
def test_forecast_pruner_keeps_the_best_and_saves_steps(studies, crossing):
    study, used = studies["forecast"]
    _, exhaustive = studies["none"]
    assert exhaustive == len(crossing.trials) * crossing.steps
    assert state_of(study, *crossing.best) == TrialState.COMPLETE
    assert (study.best_trial.params["size"], study.best_trial.params["variant"]) == crossing.best
    assert used <= 0.7 * exhaustive
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert len(pruned) >= len(crossing.trials) // 2


@pytest.mark.slow
def test_scalekit_successive_halving_on_the_same_study(studies, crossing):
    """The synchronous bracket of scalekit.allocate on the same curves, given the steps
    ForecastPruner used: ranked by the current loss it keeps an early leader to the end;
    ranked by forecasts it keeps the eventual best."""
    budget = float(studies["forecast"][1])
    t = np.arange(1, crossing.steps + 1, dtype=float)
    names = {kv: f"size{kv[0]}_v{kv[1]}" for kv in crossing.trials}
    sweep = Sweep("step", {names[kv]: Curve(t, t, crossing.curve(*kv)) for kv in crossing.trials},
                  {n: float(crossing.steps) for n in names.values()},
                  {n: 1.0 for n in names.values()})
    finished = {}
    for policy in (LossPolicy(), ForecastPolicy(make_forecaster("ensemble"), 0.2)):
        allocation, _ = allocate(sweep, policy, budget, eta=3, min_resource=9)
        assert allocation.spent <= budget
        done = [r for r, reached in allocation.reached.items() if reached >= crossing.steps]
        finished[policy.name] = min(done, key=lambda r: allocation.observed[r].loss[-1])
    assert finished["loss"] != names[crossing.best]  # a smaller early leader
    assert int(finished["loss"][4]) < crossing.best[0]
    assert finished["forecast"] == names[crossing.best]


def test_promotion_rule_is_optunas(crossing):
    ranking = ForecastRanking(min_resource=1, max_resource=10, reduction_factor=3)
    rng = np.random.default_rng(1)
    for n in range(1, 12):
        competing = list(rng.normal(size=n))
        for score in competing:
            assert ranking.keeps(score, competing) == _is_trial_promotable_to_next_rung(
                score, list(competing), 3, StudyDirection.MINIMIZE)


def test_rungs_lie_below_max_resource_at_the_decimals_written():
    assert ForecastRanking(min_resource=9, max_resource=243).rungs == (9, 27, 81)
    assert ForecastRanking(min_resource=9, max_resource=244).rungs == (9, 27, 81, 243)
    assert ForecastRanking(min_resource=0.1, max_resource=3).rungs == (0.1, 0.3, 0.9, 2.7)


def test_maximised_accuracy_is_forecast_as_its_error():
    t = np.arange(1, 28, dtype=float)
    accuracy = 0.9 - 0.5 * t ** -0.5
    ranking = ForecastRanking(min_resource=9, max_resource=243, quantile=0.5, maximize=True,
                              reach=1.0)  # judged on 27 points
    assert ranking.score("a", {"a": (t, accuracy)}) == pytest.approx(0.1 + 0.5 / 243 ** 0.5,
                                                                    abs=0.01)
    with pytest.raises(InputError, match="score below 1"):
        ranking.score("a", {"a": (t, accuracy + 0.5)})


@pytest.mark.parametrize("settings, message", [
    (dict(min_resource=0), "The value of `min_resource` is 0, but must be > 0."),
    (dict(min_resource=300, max_resource=243), "must be < max_resource"),
    (dict(reduction_factor=1), "The value of `reduction_factor` is 1, but must be >= 2."),
    (dict(quantile=1.0), "The value of `quantile` is 1.0, but must be < 1."),
    (dict(surrogate="lstm"), "The value of `surrogate` is 'lstm', but must be one of"),
    (dict(min_resource="automatic"),
     "The value of `min_resource` is 'automatic', but must be one of 'auto'."),
    (dict(min_resource="auto", max_resource=1), "The value of `max_resource` is 1, but must be > 1."),
])
def test_bad_settings_name_the_setting(settings, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(".", r"\.")):
        ForecastPruner(**{"max_resource": 243, **settings})


@pytest.mark.slow
def test_scores_live_in_the_storage_shared_by_workers(crossing, tmp_path):
    """Two pruners (two workers) on one SQLite study: the second ranks against the first's
    forecasts, read back from the storage. With ``reach=1`` the rung at step 9 is judged at
    step 16, the first whose points span as far as the forecast reaches (16 * 16 >= 243)."""
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    settings = dict(min_resource=9, max_resource=243, reduction_factor=2, reach=1.0)
    optuna.create_study(study_name="s", storage=storage)
    for number, size in enumerate([5, 0]):
        study = optuna.load_study(study_name="s", storage=storage,
                                  pruner=ForecastPruner(**settings))
        trial = study.ask()
        curve = crossing.curve(size, 0, 16)
        for step, loss in enumerate(curve, start=1):
            trial.report(float(loss), step)
        pruned = trial.should_prune()
        assert pruned == (number == 1)   # size 0 leads at step 16 but is forecast to end worse
        frozen = study.trials[number]
        assert "scalekit_forecast_rung_0" in frozen.system_attrs
    first, second = (t.system_attrs["scalekit_forecast_rung_0"] for t in study.trials)
    assert first < second and crossing.curve(0, 0, 16)[-1] < crossing.curve(5, 0, 16)[-1]


@pytest.mark.slow
def test_auto_min_resource_is_optunas_estimate_after_the_first_completed_trial(crossing):
    """As Optuna's SuccessiveHalvingPruner: nothing is ranked until a trial completes, then
    the first rung is a hundredth of its steps (243 // 100 = 2), rungs 2, 6, 18, 54, 162."""
    study, used = run_study(crossing, ForecastPruner(min_resource="auto", max_resource=243,
                                                     reach=1.0))
    first, *rest = study.trials
    assert first.state == TrialState.COMPLETE and first.last_step == crossing.steps
    assert not any(key.startswith("scalekit_forecast") for key in first.system_attrs)
    rungs = [_estimate_min_resource([first]) * 3 ** k for k in range(5)]
    assert rungs == [2, 6, 18, 54, 162]
    pruned = [t for t in rest if t.state == TrialState.PRUNED]
    # with reach=1 a rung is judged once the points span as far as the forecast reaches
    # (16 * 16 >= 243)
    assert len(pruned) >= len(rest) // 2 and all(t.last_step in {max(r, 16) for r in rungs}
                                                  for t in pruned)
    for trial in rest:  # every rung a trial reached is scored, and none other
        reached = sum(trial.last_step >= rung for rung in rungs)
        assert sorted(k for k in trial.system_attrs if k.startswith("scalekit")) == [
            f"scalekit_forecast_rung_{k}" for k in range(reached)]
    assert used < len(crossing.trials) * crossing.steps


def test_auto_min_resource_past_the_forecast_horizon_is_refused():
    study = optuna.create_study(pruner=ForecastPruner(min_resource="auto", max_resource=5))
    done = study.ask()
    for step in range(1, 1001):
        done.report(1.0 + 1.0 / step, step)
    study.tell(done, 1.001)
    trial = study.ask()
    trial.report(2.0, 1)
    with pytest.raises(InputError, match=r"min_resource='auto' gives 10 .*max_resource is 5"):
        trial.should_prune()
