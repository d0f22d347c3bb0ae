"""Learning-rate schedules as data: specs against the rates the published runs logged, series
reconstruction, files, refusals; the readers' lr series."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalekit.curves.readers import read_curves
from scalekit.curves.readers._lr_series import find_lr_column
from scalekit.errors import InputError
from scalekit.schedules import (Schedule, parse_schedule, read_schedule_file,
                                schedule_from_series)

DATA = Path(__file__).resolve().parents[1] / "data" / "published" / "multipower" / "25"
W = "warmup=2160,peak=3e-4"


@pytest.mark.parametrize("run, spec", [
    ("cosine_24000", f"cosine:{W},final=3e-5,total=24000"),
    ("constant_24000", f"constant:{W},total=24000"),
    ("wsd_20000_24000", f"wsd:{W},final=3e-5,decay=20000,total=24000"),
    ("wsdld_20000_24000", f"wsd:{W},final=3e-5,decay=20000,total=24000,shape=linear"),
    ("wsdcon_9", f"two_stage:{W},second=9e-5,switch=8000,total=16000")])
def test_specs_give_the_rates_the_published_runs_logged(run, spec):
    curve = pd.read_csv(DATA / f"{run}.csv")
    schedule = parse_schedule(spec)
    assert schedule.total_steps == int(spec.rsplit("total=", 1)[1].split(",")[0])
    np.testing.assert_allclose(schedule.rates[curve["step"]], curve["lr"], rtol=1e-9)
    assert schedule.rates[0] == 0.0 and schedule.rates[2159] == pytest.approx(3e-4)


def test_series_rebuilds_a_two_stage_schedule_exactly_and_a_cosine_closely():
    curve = pd.read_csv(DATA / "wsdcon_9.csv")
    spec = parse_schedule(f"two_stage:{W},second=9e-5,switch=8000,total=16000")
    rebuilt = schedule_from_series(curve["step"], curve["lr"], total_steps=16000)
    np.testing.assert_array_equal(rebuilt.rates[2176:], spec.rates[2176:])
    curve = pd.read_csv(DATA / "cosine_24000.csv")
    spec = parse_schedule(f"cosine:{W},final=3e-5,total=24000")
    rebuilt = schedule_from_series(curve["step"], curve["lr"], total_steps=24000)
    np.testing.assert_allclose(rebuilt.rates[2160:23920], spec.rates[2160:23920], rtol=5e-4)
    # a warm-up from 0 before the first logged step
    assert rebuilt.rates[0] == 0.0 and rebuilt.rates[1080] == pytest.approx(1.5e-4)


def test_area_is_the_inclusive_prefix_sum_and_the_end_is_enforced():
    schedule = Schedule(np.array([0.0, 1.0, 2.0, 3.0]), name="s")
    np.testing.assert_array_equal(schedule.area([0, 2, 3, 4]), [0.0, 3.0, 6.0, 9.0])
    with pytest.raises(InputError, match="at most 4"):
        schedule.area([5])
    again = Schedule.from_dict(schedule.to_dict())
    np.testing.assert_array_equal(again.rates, schedule.rates)
    spec = parse_schedule("constant:warmup=2,peak=1,total=5")
    assert Schedule.from_dict(spec.to_dict()).spec == spec.spec


@pytest.mark.parametrize("spec, words", [
    ("linear:warmup=1,peak=1,total=5", "must start with one of"),
    ("cosine:warmup=1,peak=1,total=5", "needs final"),
    ("cosine:warmup=1,peak=1,final=0,total=5,foo=2", "takes warmup"),
    ("wsd:warmup=10,peak=1,final=0.1,decay=5,total=20", "warmup <= decay <= total"),
    ("constant:warmup=1.5,peak=1,total=5", "whole number"),
    ("wsd:warmup=1,peak=1,final=0,decay=3,total=5", "exp decay needs")])
def test_bad_specs_are_refused_by_name(spec, words):
    with pytest.raises(InputError, match=words):
        parse_schedule(spec)


def test_rate_files_one_per_line_or_step_and_rate(tmp_path):
    plain = tmp_path / "rates.txt"
    plain.write_text("lr\n0\n0.5\n1\n1\n")
    np.testing.assert_array_equal(read_schedule_file(plain).rates, [0, 0.5, 1, 1])
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("step,lr\n0,0\n4,1\n")
    np.testing.assert_allclose(read_schedule_file(pairs).rates, [0, 0.25, 0.5, 0.75, 1])


@pytest.mark.parametrize("name", ["lr", "learning_rate", "train/learning_rate", "lr-AdamW",
                                  "lr-AdamW/pg1", "optimizer/lr"])
def test_learning_rate_names(name):
    assert find_lr_column(["step", "loss", name]) == name


def test_readers_keep_the_lr_series_and_name_a_runless_file_by_its_stem(tmp_path):
    frame = read_curves(DATA / "wsdcon_9.csv").frame
    assert set(frame["run"]) == {"wsdcon_9"}
    assert frame["lr"].iloc[0] == 3e-4 and frame["lr"].iloc[-1] == 9e-5
    path = tmp_path / "tb.csv"
    path.write_text("step,loss,lr-AdamW,config.lr\n1,2.0,0.1,0.3\n2,1.5,0.05,0.3\n")
    frame = read_curves(path).frame
    assert list(frame["lr"]) == [0.1, 0.05]   # the series, not the configured peak
    assert list(frame.columns).count("lr") == 1


@pytest.mark.parametrize("name", ["lr-AdamW", "train/learning_rate", "lr"])
def test_tracking_records_keep_their_lr_series(name):
    from scalekit.curves.readers._run_records import RunRecord, frame_from_records

    record = RunRecord("run-a", series={"train/loss": ([10, 20, 30], [3.0, 2.5, 2.2], None),
                                        name: ([10, 20, 30], [1e-3, 5e-4, 1e-4], None)},
                       attributes={"lr": 1e-3})
    frame = frame_from_records([record], source="tb", metric="loss").frame
    assert list(frame["lr"]) == [1e-3, 5e-4, 1e-4]
    assert list(frame.columns).count("lr") == 1 and (name == "lr" or name not in frame.columns)
