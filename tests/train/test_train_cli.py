"""`scalekit train` end to end: store, export readable by read_curves, bad input."""

from __future__ import annotations

import pytest

from scalekit_cli.app import main

from scalekit.curves import CurveStore, read_curves


def test_train_writes_the_store_and_an_export_that_reads_back(tmp_path, capsys):
    store, out = tmp_path / "t.db", tmp_path / "curves.csv"
    code = main(["train", "teacher_student", "--widths", "4,8", "--steps", "40", "--evals", "3",
                 "--eval-size", "128", "--device", "cpu", "--store", str(store), "--export", str(out)])
    assert code == 0
    assert "2 runs" in capsys.readouterr().out
    frame = read_curves(out).frame
    assert set(frame["width"]) == {4, 8} and frame.groupby("run")["step"].max().eq(40).all()
    for column in ("params", "tokens", "compute", "loss"):
        assert frame[column].gt(0).all()
    with CurveStore(store) as opened:
        assert len(opened.runs()) == 2


def test_unknown_task_and_bad_grid_exit_2_with_one_line(tmp_path, capsys):
    assert main(["train", "nope", "--store", str(tmp_path / "a.db")]) == 2
    assert "`task` is 'nope'" in capsys.readouterr().err
    assert main(["train", "teacher_student", "--widths", "4,x", "--store", str(tmp_path / "a.db")]) == 2
    assert "`--widths` is 'x'" in capsys.readouterr().err


def test_char_lm_settings_it_cannot_train_exit_2_naming_the_setting(tmp_path, capsys):
    """A width the default head count does not divide (100 = 3 heads of 33.3) and a context
    longer than the validation text are bad input (exit 2), not internal errors (exit 1)."""
    tiny = ["--depths", "1", "--steps", "2", "--evals", "1", "--eval-size", "4",
            "--batch-size", "2", "--store", str(tmp_path / "a.db"), "-q"]
    assert main(["train", "char_lm", "--widths", "100", "--option", "max_chars=2000",
                 "--option", "context=8", *tiny]) == 2
    assert "`width` is 100" in capsys.readouterr().err
    assert main(["train", "char_lm", "--widths", "16", "--option", "max_chars=1000",
                 "--option", "context=200", *tiny]) == 2
    assert "`context` is 200" in capsys.readouterr().err


@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_a_device_this_machine_lacks_exits_2_naming_it(tmp_path, capsys, monkeypatch, device):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert main(["train", "teacher_student", "--widths", "8", "--steps", "2", "--evals", "1",
                 "--eval-size", "4", "--device", device, "--store", str(tmp_path / "a.db"),
                 "-q"]) == 2
    assert f"`--device` is '{device}'" in capsys.readouterr().err


@pytest.mark.parametrize("task, typo", [("teacher_student", "nosie=0.1"), ("next_pixel", "dim=8"),
                                        ("hierarchical", "degre=3"), ("char_lm", "contxt=8"),
                                        ("residual_teacher", "teacher_width=8")])
def test_an_option_the_task_does_not_have_exits_2_instead_of_being_ignored(tmp_path, capsys,
                                                                           task, typo):
    """A misspelt --option used to be dropped silently (while still naming the run)."""
    assert main(["train", task, "--widths", "32", "--depths", "1", "--steps", "2", "--evals", "1",
                 "--eval-size", "4", "--batch-size", "2", "--option", typo,
                 "--store", str(tmp_path / "a.db"), "-q"]) == 2
    assert repr(typo.split("=")[0]) in capsys.readouterr().err


def test_summary_shows_the_data_column_when_the_grid_mixes_a_size_and_inf(tmp_path, capsys):
    """--data 64,inf varies the training-set size; the summary must show it (the unlimited
    run's missing value used to be dropped from the count of distinct values)."""
    assert main(["train", "teacher_student", "--widths", "8", "--data", "64,inf", "--steps", "3",
                 "--evals", "2", "--eval-size", "8", "--store", str(tmp_path / "a.db")]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if "params" in line)
    assert "data" in header


def test_ray_executor_without_ray_installed_exits_2_with_the_extra_to_install(tmp_path, capsys,
                                                                               monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)   # import ray now raises ImportError
    assert main(["train", "teacher_student", "--widths", "8", "--steps", "2", "--evals", "1",
                 "--executor", "ray", "--store", str(tmp_path / "a.db"), "-q"]) == 2
    assert "scalekit-laws[ray]" in capsys.readouterr().err


def test_device_and_compile_of_a_config_file_are_kept_unless_given_on_the_command_line(
        tmp_path, monkeypatch):
    """--help promises "options given here win" over --config; the --device and --compile
    defaults used to overwrite the file's device and compile even when not given."""
    import json

    import scalekit.train._sweep as sweep_module

    seen = []

    def record(configs, **kwargs):
        seen.append(list(configs))
        raise RuntimeError("stop before training")

    monkeypatch.setattr(sweep_module, "run_sweep", record)
    config = tmp_path / "sweep.json"
    config.write_text(json.dumps({"widths": [8], "steps": [2], "device": "cpu", "compile": True}))
    for extra in ([], ["--device", "auto"]):
        assert main(["train", "teacher_student", "--config", str(config),
                     "--store", str(tmp_path / "a.db"), "-q", *extra]) == 1
    (from_file,), (given,) = seen
    assert (from_file.device, from_file.compile) == ("cpu", True)
    assert (given.device, given.compile) == ("auto", True)


def test_the_json_of_train_is_a_sweep_result_that_matches_the_store(tmp_path):
    """`train --json` writes a SweepResult: it reads back with from_dict, writes the same dict
    again, and each run's last loss and step are the store's own last point of that run."""
    import json

    from scalekit.curves import CurveStore
    from scalekit.serialise import dumps
    from scalekit.train import SweepResult

    store, out = tmp_path / "a.db", tmp_path / "train.json"
    assert main(["train", "teacher_student", "--widths", "8,16", "--steps", "6", "--evals", "3",
                 "--eval-size", "8", "--batch-size", "4", "--store", str(store),
                 "--json", str(out), "-q"]) == 0
    report = json.loads(out.read_text())
    assert report["format"].startswith("scalekit.train/")
    result = SweepResult.from_dict(report)
    written = json.loads(dumps(result.to_dict()))
    assert all(report[k] == v for k, v in written.items() if k != "diagnostics")
    with CurveStore(store) as opened:
        frame = opened.curves().frame
    last = frame.sort_values("step").groupby("run").tail(1).set_index("run")
    assert {r["run"] for r in result.runs} == set(last.index) and len(result.runs) == 2
    assert result.varied == ["width"] and result.n_points == len(frame)
    for run in result.runs:
        assert run["loss"] == pytest.approx(last.loc[run["run"], "loss"], rel=1e-12)
        assert run["step"] == last.loc[run["run"], "step"]
    table = result.to_frame()
    assert list(table.columns[:3]) == ["run", "width", "step"] and len(table) == 2
