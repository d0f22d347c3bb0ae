"""M4 fitted to many curves in one batch gives each curve's own fit."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scalekit.surrogates._evaluate import QUANTILES, paper_m4_method, split_tasks
from scalekit.surrogates._paper_m4 import PAPER_SETTINGS, PaperM4


def _tasks(published_data):
    frames = [pd.read_csv(published_data / f"revisiting_nsl_{name}.csv").drop_duplicates()
              for name in ("lang", "vision")]
    frame = pd.concat(frames, ignore_index=True)
    frame["run"] = frame["Domain"] + "|" + frame["Task"] + "|" + frame["Model"]
    runs = sorted(frame["run"].unique())
    keep = [runs[k] for k in np.linspace(0, len(runs) - 1, 8).astype(int)]
    return split_tasks(frame[frame["run"].isin(keep)], train="Training", x="Seen Examples",
                       y="Loss", group="Domain")


def test_batched_fits_forecast_as_one_curve_at_a_time(published_data):
    tasks = _tasks(published_data)
    assert len({t.group for t in tasks}) >= 3 and len({t.x.size for t in tasks}) >= 2
    batched = paper_m4_method()(tasks)
    for task, quantiles in zip(tasks, batched, strict=True):
        l0_start, upper = PAPER_SETTINGS.get(task.group.split("|")[0], (1.0, None))
        alone = PaperM4(upper=upper, l0_start=l0_start).fit(task.x, task.y)
        np.testing.assert_allclose(np.log(quantiles),
                                   np.log(alone.predict_quantiles(task.x_target, QUANTILES)),
                                   rtol=0, atol=1e-6)


def test_batches_cut_into_chunks_forecast_as_one_batch(published_data, monkeypatch):
    """Problems are fitted at most ``CHUNK`` a batch; cut into chunks of 3 (several per
    length group, the last one short), every task keeps its own forecast, bitwise."""
    import scalekit.surrogates._paper_m4 as paper_m4

    tasks = _tasks(published_data)
    whole = paper_m4_method()(tasks)
    monkeypatch.setattr(paper_m4, "CHUNK", 3)
    for chunked, one in zip(paper_m4_method()(tasks), whole, strict=True):
        np.testing.assert_array_equal(chunked, one)
