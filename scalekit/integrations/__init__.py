"""Adapters that put scalekit's forecasts inside the sweep tools people already run.

- :class:`scalekit.integrations.optuna.ForecastPruner` — an Optuna pruner;
- :class:`scalekit.integrations.ray_tune.ForecastScheduler` — a Ray Tune scheduler;
- :class:`scalekit.integrations.ray_commit.CommitScheduler` — the ``commit`` allocator
  (probe, law, commit) as a Ray Tune scheduler that pauses and resumes trials.

The first two rank a trial at each rung by the forecast of its value at the end of
training (:mod:`scalekit.integrations._rungs`), not by its current value, so a
large model that starts slow is not pruned for it. Import the submodule you
need; this package imports neither Optuna nor Ray.
"""

__all__: list[str] = []  # the adapters are the public modules optuna, ray_tune and ray_commit
