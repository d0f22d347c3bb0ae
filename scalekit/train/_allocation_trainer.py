"""The allocator's trainer protocol over bundled torch tasks, by duck typing.

:class:`TorchTaskTrainer` implements what :func:`scalekit.allocate._runner.run_allocation`
asks of a trainer (``resource``, ``candidates()``, ``advance(run, start, stop)``)
without importing :mod:`scalekit.allocate`: a width sweep of a bundled task whose
runs advance between evaluations and resume from their checkpoints.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from scalekit.checks import check_choice


class _Reached(Exception):
    """Raised from the training log once the run has reached the requested step."""


@dataclass
class TorchTaskTrainer:
    """Trainer protocol over :func:`scalekit.train.train` runs (resource: steps).

    ``advance(run, start, stop)`` trains the run from its checkpoint and stops at
    its last evaluation at or before ``stop``, so no step beyond ``stop`` is
    paid for. The training loop saves a checkpoint after each evaluation is
    logged, so a run resumed later retrains the steps since its previous
    evaluation once (its points are the same: the loop is deterministic).

    Parameters
    ----------
    configs : list of TrainConfig
        The candidate runs (their ``name`` names them in the store).
    checkpoint_dir : path
        Where the runs' checkpoints live.
    """

    configs: list
    checkpoint_dir: str
    resource: str = "step"
    _measured: dict = field(default_factory=dict, repr=False)

    def _config(self, run: str):
        return {c.name: c for c in self.configs}[run]

    def _measure(self, config) -> tuple[float, float, float]:
        """Parameters outside the embeddings (``params``, as training stores it: N of
        6·N·D), counted FLOPs of one training step and tokens of the whole run (D) of
        ``config``, from one build of its data and model (cached)."""
        if config.name not in self._measured:
            from scalekit.train._loop import build_run
            from scalekit.train._models import count_parameters

            data, model, flops = build_run(config)
            self._measured[config.name] = (float(count_parameters(model)["params"]), flops,
                                           float(config.steps * config.batch_size
                                                 * data.tokens_per_sample))
        return self._measured[config.name]

    def size(self, config) -> tuple[float, float]:
        """N and D of ``config``: its parameters outside the embeddings and its tokens."""
        params, _, tokens = self._measure(config)
        return params, tokens

    def flops_per_step(self, config) -> float:
        """Counted FLOPs of one training step of ``config`` (cached)."""
        return self._measure(config)[1]

    def candidates(self) -> pd.DataFrame:
        rows = []
        for config in self.configs:
            params, flops, _ = self._measure(config)
            rows.append(dict(run=config.name, params=params, max_resource=float(config.steps),
                             flops_per_unit=flops))
        return pd.DataFrame(rows)

    def advance(self, run: str, start: float, stop: float) -> pd.DataFrame:
        from scalekit.train import train

        config = self._config(run)
        evals = [s for s in config.eval_steps() if s <= stop]
        if not evals or evals[-1] <= start:
            return pd.DataFrame(columns=["step", "compute", "tokens", "loss"])
        last = evals[-1]
        points = []

        def log(name, attrs, new):
            for point in new:
                if start < point["step"] <= last and point["step"] not in {p["step"] for p in points}:
                    points.append(dict(point))
                if point["step"] >= last:
                    raise _Reached

        Path(self.checkpoint_dir).mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(_Reached):
            train(config, log=log, checkpoint=Path(self.checkpoint_dir) / f"{run}.pt")
        frame = pd.DataFrame(points)
        return frame[[c for c in ("step", "compute", "tokens", "loss", "train_loss", "wall_time")
                      if c in frame]]


def task_trainer(task: str, *, seed: int = 0, store: str | Path | None = None,
                 lrs: Callable[[float, float], Sequence[float]] | None = None,
                 widths: Sequence[int] = (8, 16, 32, 64, 128), steps: int = 600
                 ) -> TorchTaskTrainer:
    """A width sweep of the bundled ``task`` (depth 2, ``steps`` steps), checkpointed next
    to ``store``.

    Each width's variants (the runs the ``commit`` allocator's guard tries) are two seeds at
    learning rate 3e-3, or, given ``lrs``, the learning rates ``lrs(params, tokens)`` at the
    width's N and D (:meth:`TorchTaskTrainer.size`), one seed: e.g. the ``lr_variants`` of
    :func:`~scalekit.planners.recommend_hparams`.
    """
    from scalekit.train.tasks import available_tasks

    check_choice("task", task, available_tasks())
    from scalekit.train import TrainConfig

    directory = Path(store or ".").with_suffix(".checkpoints") / task
    base = [TrainConfig(task=task, width=w, depth=2, steps=steps, lr=3e-3, seed=seed,
                        data_seed=seed, evals=min(30, steps), device="cpu") for w in widths]
    if lrs is None:
        configs = [c.replace(seed=s) for c in base for s in (seed, seed + 1)]
        return TorchTaskTrainer(configs, str(directory))
    trainer = TorchTaskTrainer([], str(directory))
    variants = [c.replace(lr=float(lr)) for c in base for lr in lrs(*trainer.size(c))]
    trainer.configs = list({c.name: c for c in variants}.values())  # rates equal to 6 digits once
    return trainer
