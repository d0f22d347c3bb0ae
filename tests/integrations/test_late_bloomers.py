"""ForecastPruner on late-bloomer studies of shapes other than the one it was first
tested on (issue 37 item 6): tests/late_bloomers.py, nine sizes 0-8, the bigger the
slower to start, size 8 lowest at the end.

Two studies on which the pruner as it was (its reach of 1: a trial judged once the
forecast reaches no further beyond its points than they span, on a log scale) ends
with size 7 and prunes size 8, as Optuna's SuccessiveHalvingPruner does: with the
constants chosen on other shapes by bench/late_bloomer_pruner.py it keeps size 8 to
the end, as the best trial, at <= 70% of the steps of no pruning. Real Optuna.
"""

from __future__ import annotations

import pytest

optuna = pytest.importorskip("optuna")
from optuna.trial import TrialState  # noqa: E402

from late_bloomers import SHAPES, order_of, study  # noqa: E402

from scalekit.integrations.optuna import ForecastPruner  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
BY_NAME = {shape.name: shape for shape in SHAPES}


@pytest.mark.parametrize("name, seed", [("power-slow", 1), ("plateau-300", 0)])
def test_the_pruner_keeps_the_late_bloomer_of_another_shape(name, seed):
    shape = BY_NAME[name]
    settings = dict(min_resource=3, max_resource=shape.steps, reduction_factor=3)
    order = order_of(seed)
    sh_states, _, sh_best = study(optuna, optuna.pruners.SuccessiveHalvingPruner(
        min_resource=3, reduction_factor=3), shape, order, seed)
    old_states, _, old_best = study(optuna, ForecastPruner(**settings, reach=1.0), shape,
                                    order, seed)
    states, used, best = study(optuna, ForecastPruner(**settings), shape, order, seed)
    assert sh_states[8] == TrialState.PRUNED and sh_best != 8
    assert old_states[8] == TrialState.PRUNED and old_best != 8
    assert states[8] == TrialState.COMPLETE and best == 8
    assert used <= 0.7 * 9 * shape.steps
