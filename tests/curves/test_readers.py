"""Readers: every format round-trips random tidy frames; aliases, mappings and real data."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
from curves.curve_frames import FLOAT32, assert_same_frame, expected_read, tidy_frames
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalekit.curves import read_curves, write_curves
from scalekit.errors import InputError

PROPERTY = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("name", ["curves.csv", "curves.jsonl", "curves.parquet"])
@PROPERTY
@given(frame=tidy_frames())
def test_long_file_round_trips_every_float_bit(tmp_path, name, frame):
    path = tmp_path / name
    write_curves(frame, path)
    assert_same_frame(read_curves(path).frame, expected_read(frame))


@PROPERTY
@given(frame=tidy_frames(optional=False, max_runs=5))
def test_wandb_wide_csv_round_trips(tmp_path, frame):
    path = tmp_path / "wandb_export.csv"
    write_curves(frame, path, format="wandb")
    header = next(csv.reader(path.open()))
    assert header[0] == "Step" and any(h.endswith("__MIN") for h in header)
    assert_same_frame(read_curves(path).frame, frame)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frame=tidy_frames(optional=False, values=FLOAT32, max_runs=3, max_steps=4))
def test_tensorboard_dir_round_trips(tmp_path_factory, frame):
    folder = tmp_path_factory.mktemp("tb")
    write_curves(frame, folder, format="tensorboard")
    back = read_curves(folder).frame
    assert "wall_time" in back
    by_key = ["run", "step"]  # a folder of runs has no order: compare sorted by name
    assert_same_frame(back.drop(columns="wall_time").sort_values(by_key),
                      frame.sort_values(by_key))


@PROPERTY
@given(rows=st.lists(st.tuples(st.floats(1e3, 1e12), st.floats(1e15, 1e25), st.floats(0.1, 10)),
                     min_size=1, max_size=20))
def test_per_run_csv_makes_each_row_a_run_and_derives_tokens(tmp_path, rows):
    path = tmp_path / "finals.csv"
    pd.DataFrame(rows, columns=["Model Size", "Training FLOP", "loss"]).assign(x=1.5, color="red") \
        .to_csv(path, index=False)
    frame_read = read_curves(path)
    frame = frame_read.frame
    assert list(frame["run"]) == [f"finals:{i + 2}" for i in range(len(rows))]
    assert (frame["step"] == 0).all()
    params = np.array([r[0] for r in rows])
    compute = np.array([r[1] for r in rows])
    assert np.array_equal(frame["params"].to_numpy(), params)
    assert np.array_equal(frame["tokens"].to_numpy(), compute / (6.0 * params))
    assert "x" not in frame and "color" not in frame
    assert any("derived" in note for note in frame_read.notes)


def test_chinchilla_svg_gives_245_runs_with_n_d_c(published_data):
    path = published_data / "chinchilla_epoch_svg.csv"
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    frame = read_curves(path).frame
    assert frame["run"].nunique() == len(frame) == len(rows) == 245
    assert {"params", "compute", "tokens", "loss"} <= set(frame.columns)
    assert not {"x", "y", "color", "hex_color"} & set(frame.columns)
    assert [float(r["loss"]) for r in rows] == frame["loss"].tolist()
    ratio = frame["compute"] / (6 * frame["params"] * frame["tokens"])
    assert np.allclose(ratio, 1.0, rtol=1e-12)


def test_misfitting_checkpoints_read_with_a_mapping(published_data):
    path = published_data / "misfitting_all_checkpoints.csv"
    key = ["model", "sweep", "peak_lr", "total_steps", "total_epochs"]
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    runs, seen = set(), set()
    for row in rows:
        runs.add(tuple(row[k] for k in key))
        seen.add(tuple(row[k] for k in key) + (row["current_steps"],))
    with pytest.raises(InputError) as info:  # the published file repeats some checkpoints
        read_curves(path, mapping={"run": ",".join(key), "step": "current_steps"})
    assert info.value.column == "step" and info.value.line is not None
    frame = read_curves(path, mapping={"run": ",".join(key), "step": "current_steps"},
                        duplicates="first").frame
    assert frame["run"].nunique() == len(runs)
    assert len(frame) == len(seen)
    assert frame["params"].nunique() == len({row["N"] for row in rows})
    by_run = frame.groupby("run", sort=False)
    assert (by_run["tokens"].diff().dropna() > 0).all()


def test_aliases_are_detected_and_mapping_overrides_them(tmp_path):
    path = tmp_path / "runs.csv"
    pd.DataFrame({"name": ["a", "a", "b"], "iter": [1, 2, 1], "n_params": [10.0, 10.0, 20.0],
                  "num_tokens": [5.0, 9.0, 4.0], "val_loss": [3.0, 2.5, 2.8],
                  "other_loss": [1.0, 1.5, 2.0]}).to_csv(path, index=False)
    auto = read_curves(path).frame
    assert list(auto["run"]) == ["a", "a", "b"] and list(auto["step"]) == [1, 2, 1]
    assert list(auto["loss"]) == [3.0, 2.5, 2.8] and list(auto["params"]) == [10.0, 10.0, 20.0]
    mapped = read_curves(path, mapping={"loss": "other_loss"}).frame
    assert list(mapped["loss"]) == [1.0, 1.5, 2.0]
    named = read_curves(path, metric="val_loss").frame
    assert list(named["val_loss"]) == [3.0, 2.5, 2.8] and "loss" not in named


def test_mapping_to_a_missing_column_or_unknown_role_is_rejected(tmp_path):
    path = tmp_path / "runs.csv"
    pd.DataFrame({"run": ["a"], "step": [1], "loss": [2.0]}).to_csv(path, index=False)
    with pytest.raises(InputError) as info:
        read_curves(path, mapping={"params": "size"})
    assert info.value.column == "size" and info.value.line == 1
    with pytest.raises(InputError, match="unknown role"):
        read_curves(path, mapping={"flavour": "run"})


def test_jsonl_errors_name_the_line(tmp_path):
    path = tmp_path / "log.jsonl"
    lines = [{"run": "a", "step": 1, "loss": 2.0}, {"run": "a", "step": 2, "loss": "high"}]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    with pytest.raises(InputError) as info:
        read_curves(path)
    assert (info.value.line, info.value.column) == (2, "loss")
    path.write_text('{"run": "a", "step": 1, "loss": 2.0}\n{"run": "a", \n')
    with pytest.raises(InputError) as info:
        read_curves(path)
    assert info.value.line == 2


def test_parquet_errors_name_the_row(tmp_path):
    path = tmp_path / "curves.parquet"
    pd.DataFrame({"run": ["a", "a", "a"], "step": [1, 2, 3],
                  "loss": [2.0, 1.0, float("nan")]}).to_parquet(path)
    with pytest.raises(InputError, match=r"\(row 3\)") as info:
        read_curves(path)
    assert info.value.column == "loss" and info.value.line is None


def test_tensorboard_repeated_step_is_a_duplicate(tmp_path):
    frame = pd.DataFrame({"run": "r", "step": [1, 2], "loss": [2.0, 1.5]})
    write_curves(frame, tmp_path / "first", format="tensorboard")
    write_curves(frame.iloc[1:], tmp_path / "second", format="tensorboard")
    for event_file in (tmp_path / "second" / "r").iterdir():  # a restart that logged step 2 again
        event_file.rename(tmp_path / "first" / "r" / (event_file.name + ".restart"))
    with pytest.raises(InputError, match="duplicate"):
        read_curves(tmp_path / "first")
    back = read_curves(tmp_path / "first", duplicates="last").frame
    assert back["step"].tolist() == [1, 2]


def test_wandb_export_with_slashed_metric_names_and_gaps(tmp_path):
    path = tmp_path / "wandb_export.csv"
    path.write_text(
        "Step,fast-run - train/loss,fast-run - train/loss__MIN,fast-run - train/loss__MAX,"
        "fast-run - val/acc,slow-run - train/loss,slow-run - train/loss__MIN,"
        "slow-run - train/loss__MAX,slow-run - val/acc\n"
        "100,3.5,3.4,3.6,0.1,4.0,3.9,4.1,0.05\n"
        "200,3.1,3.0,3.2,0.2,,,,\n"
        "300,2.9,2.8,3.0,0.3,3.3,3.2,3.4,0.1\n")
    frame = read_curves(path).frame
    assert frame["run"].tolist() == ["fast-run"] * 3 + ["slow-run"] * 2
    assert frame["step"].tolist() == [100, 200, 300, 100, 300]
    assert frame["loss"].tolist() == [3.5, 3.1, 2.9, 4.0, 3.3]
    accuracy = read_curves(path, mapping={"loss": "val/acc"}).frame
    assert accuracy["loss"].tolist() == [0.1, 0.2, 0.3, 0.05, 0.1]


def test_config_column_named_like_a_run_attribute_gives_one_checked_column(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("run,step,loss,config.seed,config.lr\na,1,3.0,7,0.1\na,2,2.0,7,0.1\n"
                    "b,1,2.5,8,0.2\n")
    frame_read = read_curves(path)
    frame = frame_read.frame
    assert list(frame.columns) == ["run", "step", "loss", "seed", "lr"]
    assert list(frame["seed"]) == [7, 7, 8] and frame_read.config_columns == ("lr",)
    path.write_text("run,step,loss,config.params\na,1,3.0,-5\n")
    with pytest.raises(InputError, match="not positive"):
        read_curves(path)


def test_jsonl_strings_with_unicode_line_separators_are_one_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    records = [{"run": "a\u2028b", "step": 1, "loss": 3.0},
               {"run": "c", "step": 1, "loss": 2.0, "config.note": "x\x85y"}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in records),
                    encoding="utf-8")
    frame = read_curves(path).frame
    assert list(frame["run"]) == ["a\u2028b", "c"] and frame["note"].iloc[1] == "x\x85y"
    path.write_text(path.read_text(encoding="utf-8") + "{oops\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_curves(path)
    assert info.value.line == 3


def test_jsonl_list_valued_configuration_is_kept_per_run(tmp_path):
    path = tmp_path / "log.jsonl"
    lines = [{"run": "a", "step": s, "loss": 3.0 - s, "config.betas": [0.9, 0.95]}
             for s in (1, 2)] + [{"run": "b", "step": 1, "loss": 2.0, "config.betas": [0.9, 0.99]}]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    frame = read_curves(path).frame
    assert frame["betas"].tolist() == [[0.9, 0.95], [0.9, 0.95], [0.9, 0.99]]
    lines[1]["config.betas"] = [0.9, 0.98]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    with pytest.raises(InputError, match="changes within run") as info:
        read_curves(path)
    assert (info.value.line, info.value.column) == (2, "betas")


def test_parquet_list_valued_configuration_is_kept_as_lists(tmp_path):
    path = tmp_path / "curves.parquet"
    pd.DataFrame({"run": ["a", "a", "b"], "step": [1, 2, 1], "loss": [3.0, 2.0, 2.5],
                  "config.betas": [[0.9, 0.95], [0.9, 0.95], [0.9]]}).to_parquet(path)
    frame = read_curves(path).frame
    assert frame["betas"].tolist() == [[0.9, 0.95], [0.9, 0.95], [0.9]]


def test_parquet_run_and_step_in_the_index_are_read(tmp_path):
    path = tmp_path / "curves.parquet"
    frame = pd.DataFrame({"run": ["a", "a", "b"], "step": [1, 2, 1], "loss": [3.0, 2.0, 2.5]})
    frame.set_index(["run", "step"]).to_parquet(path)
    back = read_curves(path).frame
    assert back[["run", "step", "loss"]].to_dict("list") == frame.to_dict("list")
    frame.iloc[[2, 0]].to_parquet(path)  # an unnamed index is no column
    assert list(read_curves(path).frame.columns) == ["run", "step", "loss"]
