"""Runs of the tracking tools into a frame: logged parameters as run attributes."""

from __future__ import annotations

from scalekit.curves.readers._run_records import RunRecord, frame_from_records


def test_logged_sizes_with_a_multiplier_are_read_as_counts():
    runs = [RunRecord(name, {"val/loss": ([1, 2], [3.0, 2.5], None)},
                      {"model_size": size, "num_tokens": "300B", "lr": "3e-4", "tag": "125M"})
            for name, size in (("a", "125M"), ("b", "1.3B"), ("c", "350k"))]
    frame = frame_from_records(runs, source="test").frame
    assert frame.groupby("run")["params"].first().tolist() == [125e6, 1.3e9, 350e3]
    assert set(frame["num_tokens"]) == {"300B"}  # a budget, not the tokens of each point
    assert set(frame["tag"]) == {"125M"} and set(frame["lr"]) == {3e-4}
