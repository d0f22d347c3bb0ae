"""`scalekit store import|ls|show|export|rm`: exit codes, output, and what lands in the store."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
from curves.curve_frames import assert_same_frame, store_files_digest

from scalekit.curves import CurveStore
from scalekit_cli.app import main


def _curves_file(path, runs=("small", "large")):
    rows = []
    for i, run in enumerate(runs):
        for step in (10, 20, 40):
            rows.append({"model": run, "iter": step, "val_loss": 3.0 / (i + 1) + 10.0 / step,
                         "flops": 1e15 * (i + 1) * step, "n_params": 1e6 * (i + 1)})
    pd.DataFrame(rows).to_csv(path, index=False)
    return rows


def test_import_ls_show_export_rm(tmp_path, capsys):
    source, db = tmp_path / "sweep.csv", tmp_path / "s.db"
    rows = _curves_file(source)
    assert main(["store", "import", str(source), "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"imported {len(rows)} rows of 2 runs" in out
    assert "tokens derived" in out

    assert main(["store", "ls", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "2 runs" in out and "small" in out and "large" in out

    assert main(["store", "show", "large", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    for row in rows:
        if row["model"] == "large":
            assert f"{row['val_loss']:.6g}" in out and str(row["iter"]) in out

    exported = tmp_path / "out.csv"
    assert main(["store", "export", str(exported), "--store", str(db)]) == 0
    with exported.open() as handle:
        back = list(csv.DictReader(handle))
    assert len(back) == len(rows)
    assert sorted(float(r["loss"]) for r in back) == sorted(r["val_loss"] for r in rows)

    assert main(["store", "rm", "small", "--store", str(db)]) == 0
    with CurveStore(db) as store:
        assert list(store.runs()["run"]) == ["large"]


def test_export_reimport_through_the_cli_is_exact(tmp_path):
    source, first = tmp_path / "sweep.csv", tmp_path / "a.db"
    _curves_file(source, runs=("r1", "r2", "r3"))
    assert main(["store", "import", str(source), "--store", str(first), "-q"]) == 0
    for suffix in ("csv", "parquet"):
        out = tmp_path / f"export.{suffix}"
        copy = tmp_path / f"copy-{suffix}.db"
        assert main(["store", "export", str(out), "--store", str(first)]) == 0
        assert main(["store", "import", str(out), "--store", str(copy), "-q"]) == 0
        with CurveStore(first) as a, CurveStore(copy) as b:
            assert_same_frame(b.curves().frame, a.curves().frame)


def test_mapping_and_format_options(tmp_path, capsys):
    source, db = tmp_path / "odd.csv", tmp_path / "s.db"
    pd.DataFrame({"who": ["a", "a", "b"], "t": [1, 2, 1], "err": [2.0, 1.5, 1.8]}).to_csv(
        source, index=False)
    assert main(["store", "import", str(source), "--store", str(db), "--map", "run=who",
                 "--map", "step=t", "--map", "loss=err", "-q"]) == 0
    with CurveStore(db) as store:
        curves = store.curves().frame
    assert curves["loss"].tolist() == [2.0, 1.5, 1.8] and curves["step"].tolist() == [1, 2, 1]

    wide = tmp_path / "wandb.csv"
    pd.DataFrame({"Step": [1, 2], "c - loss": [3.0, 2.0], "c - loss__MIN": [2.9, 1.9],
                  "c - loss__MAX": [3.1, 2.1]}).to_csv(wide, index=False)
    assert main(["store", "import", str(wide), "--store", str(db), "--format", "wandb",
                 "-q"]) == 0
    with CurveStore(db) as store:
        assert store.curves(runs="c").frame["loss"].tolist() == [3.0, 2.0]

    before = store_files_digest(db)
    assert main(["store", "import", str(source), "--store", str(db), "--map", "run"]) == 2
    assert "role=column" in capsys.readouterr().err
    assert main(["store", "import", str(source), "--store", str(db), "--format", "xml"]) == 2
    assert store_files_digest(db) == before


def test_read_commands_on_a_missing_store_exit_2_and_create_nothing(tmp_path, capsys):
    db = tmp_path / "none.db"
    for command in (["ls"], ["show", "x"], ["export", str(tmp_path / "o.csv")], ["rm", "x"]):
        assert main(["store", *command, "--store", str(db)]) == 2
        assert "no curve store" in capsys.readouterr().err
    assert not db.exists()


def test_import_into_a_store_path_that_cannot_be_opened_exits_2(tmp_path, capsys):
    source = tmp_path / "sweep.csv"
    _curves_file(source)
    for db in (tmp_path / "no such folder" / "s.db", tmp_path):
        capsys.readouterr()
        assert main(["store", "import", str(source), "--store", str(db), "-q"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: The value of `--store` is '{db}', but ")
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "no such folder").exists()  # no folder is created


def test_ls_prints_run_names_with_brackets_verbatim(tmp_path, capsys):
    source, db = tmp_path / "sweep.csv", tmp_path / "s.db"
    _curves_file(source, runs=("sweep[lr=0.001]", "model[small]", "run[/a]"))
    assert main(["store", "import", str(source), "--store", str(db), "-q"]) == 0
    capsys.readouterr()
    assert main(["store", "ls", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    for name in ("sweep[lr=0.001]", "model[small]", "run[/a]"):
        assert name in out


def test_unknown_run_exits_2(tmp_path, capsys):
    source, db = tmp_path / "sweep.csv", tmp_path / "s.db"
    _curves_file(source)
    assert main(["store", "import", str(source), "--store", str(db), "-q"]) == 0
    before = store_files_digest(db)
    assert main(["store", "show", "ghost", "--store", str(db)]) == 2
    assert main(["store", "rm", "small", "ghost", "--store", str(db)]) == 2
    assert "ghost" in capsys.readouterr().err
    assert store_files_digest(db) == before


def test_show_limits_points_keeping_first_and_last(tmp_path, capsys):
    db = tmp_path / "s.db"
    with CurveStore(db) as store:
        store.import_frame(pd.DataFrame({"run": "long", "step": np.arange(1, 501),
                                         "loss": 1.0 + 1.0 / np.arange(1, 501)}), source="x")
    assert main(["store", "show", "long", "--store", str(db), "--limit", "5"]) == 0
    out = capsys.readouterr().out
    steps = [int(line.split()[1]) for line in out.splitlines()
             if line.startswith("│") and line.split()[1].isdigit()]
    assert steps[0] == 1 and steps[-1] == 500 and len(steps) == 5


def test_import_of_published_checkpoints_with_composite_run(tmp_path, capsys, published_data):
    path, db = published_data / "misfitting_all_checkpoints.csv", tmp_path / "s.db"
    key = ["model", "sweep", "peak_lr", "total_steps", "total_epochs"]
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    firsts = {}
    for row in rows:
        firsts.setdefault((*(row[k] for k in key), int(row["current_steps"])), float(row["loss"]))
    assert main(["store", "import", str(path), "--store", str(db), "--map", "run=" + ",".join(key),
                 "--map", "step=current_steps", "--duplicates", "first"]) == 0
    assert f"dropped {len(rows) - len(firsts)} rows" in capsys.readouterr().out
    with CurveStore(db) as store:
        curves = store.curves().frame
    assert curves["run"].nunique() == len({k[:-1] for k in firsts})
    stored = {(*run.split("/"), step): loss
              for run, step, loss in zip(curves["run"], curves["step"], curves["loss"], strict=True)}
    assert stored == firsts


def test_a_point_the_store_already_holds_is_named_by_its_file_line(tmp_path, capsys):
    db = tmp_path / "s.db"
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text("run,step,loss\na,1,3.0\na,2,2.5\nb,1,3.1\n")
    # b's step 2 is new; a's step 2 (file line 4, after sorting it is not the first row) is not
    second.write_text("run,step,loss\nb,2,2.6\nb,3,2.4\na,2,2.5\n")
    assert main(["store", "import", str(first), "--store", str(db)]) == 0
    before = store_files_digest(db)
    capsys.readouterr()
    assert main(["store", "import", str(second), "--store", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {second}:4, column 'step': duplicate point: run 'a' already has "
                   "'loss' at step 2 in the store"]
    assert store_files_digest(db) == before


def test_import_counts_rows_and_says_the_metric_choice_once(tmp_path, capsys):
    """Three runs of four steps with a training and a validation loss: 12 rows, stored as 24
    points (one per row and metric); the choice of val_loss over train_loss is one line."""
    source, db = tmp_path / "two_losses.csv", tmp_path / "s.db"
    pd.DataFrame([{"run": f"r{i}", "step": s, "train_loss": 3.0 / s, "val_loss": 3.5 / s}
                  for i in range(3) for s in (1, 2, 4, 8)]).to_csv(source, index=False)
    assert main(["store", "import", str(source), "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "imported 12 rows of 3 runs" in out and "(24 points: one per row and metric)" in out
    said = [line for line in out.splitlines() if "'train_loss'" in line]
    assert len(said) == 1 and "'val_loss'" in said[0]


def test_ls_counts_each_runs_rows_and_points_as_the_import_does(tmp_path, capsys):
    """Run a logs four steps, run b two; each step has loss and val_loss: 4 and 2 rows,
    8 and 4 points; `ls --format json` says both per run."""
    source, db = tmp_path / "c.csv", tmp_path / "s.db"
    pd.DataFrame([{"run": run, "step": s, "loss": 3.0 / s, "val_loss": 3.5 / s}
                  for run, steps in (("a", (1, 2, 4, 8)), ("b", (1, 2))) for s in steps]
                 ).to_csv(source, index=False)
    assert main(["store", "import", str(source), "--store", str(db), "-q"]) == 0
    capsys.readouterr()
    assert main(["store", "ls", "--store", str(db), "--format", "tsv"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines() if line]
    header = lines[0]
    table = {row[header.index("run")]: row for row in lines[1:]}
    assert [table["a"][header.index(c)] for c in ("rows", "points")] == ["4", "8"]
    assert [table["b"][header.index(c)] for c in ("rows", "points")] == ["2", "4"]
