"""Readers of the tracking tools, each on a store the tool itself writes in the test.

MLflow (its client, file and SQLite backends), W&B (``wandb.init(mode="offline")``
in a subprocess, no network), TensorBoard (torch's ``SummaryWriter`` with
``add_hparams``) and Optuna (a study in a SQLite file). Every test compares what
is read with what was logged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from scalekit.curves import CurveStore, read_curves
from scalekit.errors import InputError
from scalekit_cli.app import main

STEPS = [0, 10, 20, 30, 40]
SIZES = {"small": 1.5e6, "large": 6.0e6}


def _val(size, step):
    return 2.0 + 30.0 / (size ** 0.2) + 1.0 / (1.0 + step)


def _train(size, step):
    return _val(size, step) - 0.05


def _assert_the_logged_sweep(frame, *, seed, lr):
    """Both runs, the validation loss as the loss, the training loss, tokens and attributes."""
    assert sorted(frame["run"].unique()) == ["large", "small"]
    for name, size in SIZES.items():
        rows = frame[frame["run"] == name]
        assert rows["step"].tolist() == STEPS
        assert np.allclose(rows["loss"], [_val(size, s) for s in STEPS], rtol=0, atol=1e-12)
        assert np.allclose(rows["train/loss"], [_train(size, s) for s in STEPS])
        assert rows["tokens"].tolist() == [4096.0 * (s + 1) for s in STEPS]
        assert set(rows["params"]) == {size} and set(rows["depth"]) == {4}
        assert set(rows["seed"]) == {seed} and set(rows["lr"]) == {lr}


# -- MLflow -----------------------------------------------------------------------------------
def _log_mlflow(uri):
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    for experiment in ("sweep", "other"):
        eid = client.create_experiment(experiment)
        for name, size in SIZES.items():
            run = client.create_run(eid, run_name=name).info.run_id
            client.log_batch(run, params=_mlflow_params(size, experiment), metrics=[
                Metric(key, f(size, s), 1_000_000 + s, s) for s in STEPS
                for key, f in (("train/loss", _train), ("val/loss", _val))] + [
                Metric("tokens", 4096.0 * (s + 1), 1_000_000 + s, s) for s in STEPS])
            client.set_terminated(run)


def _mlflow_params(size, experiment):
    from mlflow.entities import Param

    return [Param("n_params", repr(size)), Param("num_layers", "4"), Param("seed", "7"),
            Param("lr", "0.0003"), Param("optimizer", "adamw"), Param("group", experiment)]


@pytest.fixture(scope="module")
def mlruns(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow") / "mlruns"
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # MLflow 3 asks to opt in to writing one
    try:
        _log_mlflow(folder.as_uri())
    finally:
        os.environ.pop("MLFLOW_ALLOW_FILE_STORE")
    return folder


def test_mlflow_runs_metric_history_and_params(mlruns):
    frame_read = read_curves(mlruns, experiment="sweep")
    frame = frame_read.frame
    assert frame_read.format == "mlflow"
    _assert_the_logged_sweep(frame, seed=7, lr=3e-4)
    for name in SIZES:
        rows = frame[frame["run"] == name]
        assert set(rows["optimizer"]) == {"adamw"}
        assert np.allclose(rows["wall_time"], [1000.0 + s / 1000 for s in STEPS])
    assert frame_read.metric_choice.taken == "val/loss"
    assert [d.code for d in frame_read.diagnostics] == ["metric_choice"]


def test_mlflow_experiment_filter_and_metric_option(mlruns):
    both = read_curves(mlruns).frame
    assert len(both) == 2 * len(read_curves(mlruns, experiment="other").frame)
    assert both["run"].nunique() == 4  # one name in two experiments: told apart by run id
    train = read_curves(mlruns, experiment="other", metric="train/loss").frame
    small = train[train["run"] == "small"]
    assert np.allclose(small["train/loss"], [_train(SIZES["small"], s) for s in STEPS])
    with pytest.raises(Exception, match="no experiment 'nope'"):
        read_curves(mlruns, experiment="nope")


@pytest.mark.slow  # MLflow's SQLite schema migrations take about 15 s
def test_store_import_of_an_mlflow_sqlite_uri(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _log_mlflow(uri)
    db = tmp_path / "s.db"
    assert main(["store", "import", uri, "--experiment", "sweep", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "imported 10 rows of 2 runs" in out and "(20 points:" in out  # x (loss, train/loss)
    assert "'val/loss'" in out and "metric_choice" not in out  # the sentence, not the code
    with CurveStore(db) as store:
        runs = store.runs().set_index("run")
        curves = store.curves().frame
    assert runs.loc["large", "params"] == 6.0e6 and runs.loc["large", "depth"] == 4
    assert np.allclose(curves[curves["run"] == "large"]["loss"],
                       [_val(6.0e6, s) for s in STEPS])


# -- W&B --------------------------------------------------------------------------------------
_WANDB_SCRIPT = textwrap.dedent("""
    import sys
    import wandb
    sizes = {sizes!r}
    for name, size in sizes.items():
        run = wandb.init(project="sweep", name=name, mode="offline",
                         config={{"model": {{"n_params": size, "n_layer": 4}}, "seed": 3,
                                  "lr": 1e-3}},
                         settings=wandb.Settings(console="off", x_disable_stats=True))
        run.define_metric("tokens")
        run.define_metric("val/loss", step_metric="tokens")
        run.define_metric("trainer/global_step")
        run.define_metric("eval/ppl", step_metric="trainer/global_step")
        for step in {steps!r}:
            val = 2.0 + 30.0 / size ** 0.2 + 1.0 / (1.0 + step)
            run.log({{"train/loss": val - 0.05, "val/loss": val, "tokens": 4096 * (step + 1),
                      "trainer/global_step": 8 * step, "eval/ppl": 2.0 ** val}}, step=step)
        run.finish()
""")


@pytest.fixture(scope="module")
def wandb_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wandb")
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(folder),
           "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true", "WANDB_CONSOLE": "off"}
    subprocess.run([sys.executable, "-c", _WANDB_SCRIPT.format(sizes=SIZES, steps=STEPS)],
                   env=env, check=True, capture_output=True, timeout=300)
    return folder / "wandb"


def test_wandb_offline_runs_history_config_and_custom_x_axis(wandb_dir):
    assert len(list(wandb_dir.glob("offline-run-*"))) == 2
    frame_read = read_curves(wandb_dir)
    frame = frame_read.frame
    assert frame_read.format == "wandb"
    _assert_the_logged_sweep(frame, seed=3, lr=1e-3)
    assert frame_read.metric_choice.taken == "val/loss"
    assert any("logged against 'tokens'" in note for note in frame_read.notes)
    one = read_curves(next(wandb_dir.glob("offline-run-*")), metric="train/loss").frame
    assert one["run"].nunique() == 1 and "train/loss" in one
    ppl = read_curves(wandb_dir, metric="eval/ppl").frame  # counted on its own step axis
    small = ppl[ppl["run"] == "small"]
    assert small["step"].tolist() == [8 * s for s in STEPS]
    assert np.allclose(small["eval/ppl"], [2.0 ** _val(SIZES["small"], s) for s in STEPS])


def test_store_import_format_wandb_on_folders(wandb_dir, tmp_path, capsys):
    db = tmp_path / "s.db"
    assert main(["store", "import", str(wandb_dir), "--format", "wandb",
                 "--store", str(db)]) == 0
    out = capsys.readouterr().out  # eval/ppl, on its own step axis, joins no loss row
    assert "imported 10 rows of 2 runs" in out and "(20 points:" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["store", "import", str(empty), "--format", "wandb", "--store", str(db)]) == 2
    assert "holds no W&B run" in capsys.readouterr().err


# -- TensorBoard ------------------------------------------------------------------------------
def test_tensorboard_hparams_are_run_attributes_and_val_loss_is_taken(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    for name, size in SIZES.items():
        with SummaryWriter(str(tmp_path / name)) as writer:
            for step in STEPS:
                writer.add_scalar("train/loss", _train(size, step), step)
                writer.add_scalar("val/loss", _val(size, step), step)
            writer.add_hparams({"n_params": size, "num_layers": 4, "optimizer": "adamw"},
                               {"hparam/val_loss": _val(size, STEPS[-1])})
    from torch.utils.tensorboard.summary import hparams

    with SummaryWriter(str(tmp_path / "native")) as writer:  # hparams in the run's own file
        for summary in hparams({"N": 3.0e6, "seed": 11}, {}):
            writer.file_writer.add_summary(summary)
        for step in STEPS:
            writer.add_scalar("val/loss", _val(3.0e6, step), step)
    frame_read = read_curves(tmp_path)
    frame = frame_read.frame
    native = frame[frame["run"] == "native"]
    assert set(native["params"]) == {3.0e6} and set(native["seed"]) == {11}
    assert np.allclose(native["loss"], [_val(3.0e6, s) for s in STEPS], rtol=1e-6)
    frame = frame[frame["run"] != "native"]
    assert sorted(frame["run"].unique()) == ["large", "small"]  # add_hparams folders merged
    for name, size in SIZES.items():
        rows = frame[frame["run"] == name]
        assert rows["step"].tolist() == STEPS
        assert np.allclose(rows["loss"], [_val(size, s) for s in STEPS], rtol=1e-6)  # float32
        assert set(rows["params"]) == {size} and set(rows["depth"]) == {4}
        assert set(rows["optimizer"]) == {"adamw"}
    assert frame_read.metric_choice.taken == "val/loss"
    assert frame_read.diagnostics[0].code == "metric_choice"


# -- Optuna -----------------------------------------------------------------------------------
def test_optuna_study_trials_are_curves_with_their_params(tmp_path, capsys):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(study_name="widths", storage=storage,
                                sampler=optuna.samplers.RandomSampler(seed=0))
    optuna.create_study(study_name="other", storage=storage)
    logged = {}

    def objective(trial):
        width = trial.suggest_int("d_model", 64, 512, log=True)
        trial.suggest_float("lr", 1e-4, 1e-2, log=True)
        curve = [2.0 + 100.0 / width + 1.0 / (1 + s) for s in STEPS]
        for step, value in zip(STEPS, curve, strict=True):
            trial.report(value, step)
        logged[trial.number] = (width, curve)
        return curve[-1]

    study.optimize(objective, n_trials=4)
    frame_read = read_curves(storage, study="widths")
    frame = frame_read.frame
    assert frame_read.format == "optuna" and frame["run"].nunique() == 4
    for number, (width, curve) in logged.items():
        rows = frame[frame["run"] == f"widths/trial-{number}"]
        assert rows["step"].tolist() == STEPS and rows["loss"].tolist() == curve
        assert set(rows["width"]) == {width} and set(rows["state"]) == {"complete"}
    db = tmp_path / "s.db"
    assert main(["store", "import", storage, "--study", "widths", "--store", str(db)]) == 0
    assert "imported 20 rows of 4 runs" in capsys.readouterr().out  # 4 trials x 5 steps
    assert main(["store", "import", storage, "--store", str(db)]) == 2  # two studies: which?
    assert "--study" in capsys.readouterr().err


def test_tensorboard_sweep_of_final_values_logged_only_with_add_hparams(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    for name, size in SIZES.items():
        with SummaryWriter(str(tmp_path / name)) as writer:
            writer.add_hparams({"n_params": size}, {"hparam/val_loss": _val(size, 40),
                                                     "hparam/train_loss": _train(size, 40)})
    frame_read = read_curves(tmp_path)
    frame = frame_read.frame
    assert sorted(frame["run"]) == ["large", "small"]
    for name, size in SIZES.items():
        row = frame[frame["run"] == name].iloc[0]
        assert row["params"] == size
        assert row["loss"] == pytest.approx(_val(size, 40), rel=1e-6)
    assert frame_read.metric_choice.taken == "hparam/val_loss"



def _mlruns(folder):
    (folder / "mlruns" / "0").mkdir(parents=True)
    (folder / "mlruns" / "0" / "meta.yaml").write_text("name: x\n")
    return folder / "mlruns"


def _wandb_log(folder):
    (folder / "run-x.wandb").write_bytes(b":W&B\xe1\xbe\x00")
    return folder


def _optuna_tables(folder):
    import sqlite3

    with sqlite3.connect(folder / "optuna.db") as con:
        for table in ("studies", "trials", "trial_intermediate_values"):
            con.execute(f"CREATE TABLE {table} (id INTEGER)")
    return folder / "optuna.db"


def _event_file(folder):
    (folder / "events.out.tfevents.1").write_bytes(b"")
    return folder


@pytest.mark.parametrize("package, make", [("mlflow", _mlruns), ("wandb", _wandb_log),
                                           ("optuna", _optuna_tables),
                                           ("tensorboard", _event_file)])
def test_a_missing_extra_is_named_in_the_error(tmp_path, monkeypatch, package, make):
    source = make(tmp_path)
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)  # `import package` raises ImportError
    with pytest.raises(InputError, match=rf"pip install 'scalekit-laws\[{package}\]'"):
        read_curves(source)
