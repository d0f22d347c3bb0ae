"""ForecastPruner on one Optuna study shared by two worker processes through PostgreSQL
(issue 42 item 3).

Everything the pruner decides by lives in the study's storage: the curves are the
trials' intermediate values and each trial's forecast at a rung is a trial system
attribute, read back by the other worker when it ranks its own trials. The late-bloomer
trap of tests/late_bloomers.py (nine sizes, the largest slowest to start and lowest at
the end) run by two processes at once on the session's PostgreSQL server
(tests/pg_server.py): the pruner keeps the largest model, as it does in one process,
prunes trials in both workers, and trains <= 70% of the steps of no pruning.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("sqlalchemy")
from optuna.trial import TrialState  # noqa: E402

from late_bloomers import SHAPES, order_of  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
SHAPE = next(s for s in SHAPES if s.name == "power-short")


@pytest.mark.slow  # two processes writing ~1,000 intermediate values each to PostgreSQL
def test_two_workers_on_postgresql_keep_the_late_bloomer(postgres_server):
    storage = postgres_server.new_database().replace("postgresql://", "postgresql+psycopg://", 1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="late", storage=storage)
    order = order_of(4)
    for size in order:
        study.enqueue_trial({"size": size})
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from late_bloomers import worker; "
            "worker(sys.argv[2], 'late', sys.argv[3], 0, int(sys.argv[4]))")
    workers = [subprocess.Popen([sys.executable, "-c", code, str(TESTS), storage, SHAPE.name,
                                 str(n)], stderr=subprocess.PIPE, text=True)
               for n in (5, 4)]
    for process in workers:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    trials = optuna.load_study(study_name="late", storage=storage).trials
    assert sorted(t.params["size"] for t in trials) == list(range(9))
    states = {t.params["size"]: t.state for t in trials}
    assert states[8] == TrialState.COMPLETE
    best = min((t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: t.value)
    assert best.params["size"] == 8
    pruned_by = {t.user_attrs["worker"] for t in trials if t.state == TrialState.PRUNED}
    assert len({t.user_attrs["worker"] for t in trials}) == 2 and len(pruned_by) == 2
    assert sum(t.user_attrs["steps"] for t in trials) <= 0.7 * 9 * SHAPE.steps
    assert any(key.startswith("scalekit_forecast_rung_") for t in trials for key in t.system_attrs)
