"""CurveStore: imports, runs, appends, export round trips and concurrent writers."""

from __future__ import annotations

import multiprocessing
import sqlite3

import numpy as np
import pandas as pd
import pytest
from curves.curve_frames import assert_same_frame, expected_read, tidy_frames
from hypothesis import HealthCheck, given, settings

from scalekit.curves import CurveStore, ImportSummary, read_curves
from scalekit.errors import InputError

PROPERTY = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(frame=tidy_frames())
def test_import_then_curves_gives_the_frame_back(new_store, frame):
    with CurveStore(new_store()) as store:
        summary = store.import_frame(frame, source="hypothesis")
        assert summary == ImportSummary(runs=frame["run"].nunique(), points=len(frame),
                                        rows=len(frame))
        assert_same_frame(store.curves().frame, expected_read(frame))


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frame=tidy_frames())
def test_export_and_reimport_round_trips_exactly(tmp_path_factory, new_store, frame):
    folder = tmp_path_factory.mktemp("export")
    with CurveStore(new_store()) as store:
        store.import_frame(frame.assign(val_loss=frame["loss"] * 0.5), source="hypothesis")
        store.add_run(frame["run"].iloc[0], attrs={"lr": 3e-4, "optimizer": "adam"})
        original = {m: store.curves(metric=m).frame for m in ("loss", "val_loss")}
        store.export(folder / "out.csv")
        store.export(folder / "out.parquet")
    for name in ("out.csv", "out.parquet"):
        with CurveStore(new_store()) as copy:
            copy.import_frame(read_curves(folder / name), source=name)
            for metric, curves in original.items():
                assert_same_frame(copy.curves(metric=metric).frame, curves)
            if "lr" in curves:
                assert copy.curves().frame["lr"].iloc[0] == 3e-4


def test_export_refuses_a_format_that_would_drop_metrics(tmp_path, new_store):
    # a W&B CSV or TensorBoard log carries one metric: the export writes them all
    with CurveStore(new_store()) as store:
        store.add_run("r")
        store.append_points("r", pd.DataFrame({"step": [1, 2], "loss": [3.0, 2.5]}))
        with pytest.raises(InputError, match="`format` is 'wandb', but must be one of 'csv'"):
            store.export(tmp_path / "out.csv", format="wandb")
    assert not (tmp_path / "out.csv").exists()


def test_export_keeps_metrics_whose_names_do_not_read_as_metrics(tmp_path, new_store):
    # scalekit train stores `samples` and `compute_6nd` as metrics: an export must carry
    # them back in, although a column called `samples` in a file is not read as a metric
    points = pd.DataFrame({"step": [1, 2, 3], "loss": [3.0, 2.5, 2.25],
                           "samples": [64.0, 128.0, 192.0], "compute_6nd": [1e9, 2e9, 3e9]})
    with CurveStore(new_store()) as store:
        store.add_run("r")
        store.append_points("r", points)
        for name in ("out.csv", "out.jsonl", "out.parquet"):
            store.export(tmp_path / name)
    for name in ("out.csv", "out.jsonl", "out.parquet"):
        with CurveStore(new_store()) as copy:
            copy.import_frame(read_curves(tmp_path / name), source=name)
            for metric in ("loss", "samples", "compute_6nd"):
                got = copy.curves(metric=metric).frame
                assert got["step"].tolist() == [1, 2, 3]
                assert got[metric].tolist() == points[metric].tolist()
    alone = read_curves(tmp_path / "out.csv", metric="samples").frame  # the marked column is found
    assert alone["samples"].tolist() == [64.0, 128.0, 192.0]


@pytest.mark.parametrize("create", [True, False])
def test_another_sqlite_file_is_refused_untouched(tmp_path, create):
    path = tmp_path / "theirs.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(InputError, match="not a scalekit curve store"):
        CurveStore(path, create=create)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["users"]
    con.close()


def test_tables_pragmas_and_index(tmp_path):
    path = tmp_path / "s.db"
    with CurveStore(path) as store:
        store.add_run("r", attrs={"params": 1e6})
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA page_size").fetchone()[0] == 16384
    columns = {t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
               for t in ("runs", "points")}
    assert columns["runs"] == ["id", "name", "source", "params", "tokens", "depth", "width",
                               "classes", "k", "seed", "config"]
    assert columns["points"] == ["run_id", "step", "metric", "value", "compute", "tokens",
                                 "wall_time"]
    plan = " ".join(str(r) for r in con.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM points WHERE run_id = 1 AND metric = 'loss' "
        "ORDER BY step"))
    assert "PRIMARY KEY" in plan and "TEMP B-TREE" not in plan
    con.execute("INSERT INTO points VALUES (1, 5, 'loss', 1.0, NULL, NULL, NULL)")
    with pytest.raises(sqlite3.IntegrityError):
        con.execute("INSERT INTO points VALUES (1, 5, 'loss', 2.0, NULL, NULL, NULL)")
    con.close()


def test_add_run_is_idempotent_and_rejects_other_attributes(new_store):
    with CurveStore(new_store()) as store:
        first = store.add_run("r", attrs={"params": 1e6, "depth": 4, "lr": 0.1})
        assert store.add_run("r", attrs={"params": 1e6, "depth": 4, "lr": 0.1}) == first
        assert store.add_run("r") == first
        with pytest.raises(InputError, match="params"):
            store.add_run("r", attrs={"params": 2e6})
        with pytest.raises(InputError, match="not positive"):
            store.add_run("s", attrs={"params": 0})
        for seed in (2 ** 60 + 1, 2 ** 64):  # float64 cannot hold them; SQLite not 2**64
            with pytest.raises(InputError, match=r"2\*\*53"):
                store.add_run("s", attrs={"seed": seed})
        other = store.add_run("s", attrs={"seed": 3})
        assert other != first
        runs = store.runs()
        assert list(runs["run"]) == ["r", "s"]
        assert runs.loc[0, "config"] == {"lr": 0.1} and runs.loc[0, "depth"] == 4


def test_bulk_import_across_statement_and_chunk_boundaries_is_exact(new_store):
    # 3 runs, 16,807 points: two 8,000-row chunks of 2,000-row statements and a
    # remainder statement of 807 rows; every value must come back bit for bit.
    rng = np.random.default_rng(1)
    sizes = [9_001, 401, 7_405]
    frame = pd.concat([pd.DataFrame({"run": f"r{i}", "step": np.arange(1, n + 1) * 7,
                                     "loss": rng.lognormal(0, 1, n),
                                     "compute": np.cumsum(rng.uniform(1e9, 1e12, n)),
                                     "params": 1e6 * (i + 1)})
                       for i, n in enumerate(sizes)], ignore_index=True)
    with CurveStore(new_store()) as store:
        assert store.import_frame(frame, source="x").points == sum(sizes)
        back = store.curves().frame
    assert back["run"].tolist() == frame["run"].tolist()
    for column in ("step", "loss", "compute"):
        assert np.array_equal(back[column].to_numpy(), frame[column].to_numpy())


def test_append_points_refuses_run_attributes_instead_of_storing_them_as_metrics(new_store):
    with CurveStore(new_store()) as store:
        store.add_run("r", attrs={"params": 1e6})
        for column in ("params", "depth", "seed"):
            with pytest.raises(InputError, match=f"'{column}' is an attribute of the run"):
                store.append_points("r", {"step": 1, "loss": 2.0, column: 10})
        assert store.runs()["points"].iloc[0] == 0
        assert store.append_points("r", {"step": 1, "loss": 2.0}) == 1
        assert set(store.runs()["metrics"].iloc[0]) == {"loss"}


def test_append_points_in_batches_equals_one_import(new_store):
    rng = np.random.default_rng(0)
    steps = np.arange(1, 301)
    loss = 2 + 5 * steps ** -0.3 + rng.normal(0, 1e-3, steps.size)
    frame = pd.DataFrame({"run": "r", "step": steps, "loss": loss, "compute": steps * 1e12,
                          "params": 1e6})
    with CurveStore(new_store()) as one, CurveStore(new_store()) as many:
        one.import_frame(frame, source="x")
        many.add_run("r", attrs={"params": 1e6})
        order = rng.permutation(30)  # batches arrive in any order
        total = 0
        for batch in order:
            rows = slice(batch * 10, batch * 10 + 10)
            total += many.append_points("r", {"step": steps[rows], "loss": loss[rows],
                                              "compute": steps[rows] * 1e12})
        assert total == 300
        assert_same_frame(many.curves(runs="r").frame, one.curves(runs=["r"]).frame)


def test_importing_an_empty_frame_writes_nothing(new_store):
    with CurveStore(new_store()) as store:
        empty = pd.DataFrame({"run": pd.Series([], dtype=object), "step": [], "loss": []})
        assert store.import_frame(empty, source="x") == ImportSummary(runs=0, points=0, rows=0)
        assert store.runs().empty


def test_remove_is_all_or_nothing(new_store):
    with CurveStore(new_store()) as store:
        store.import_frame(pd.DataFrame({"run": ["a", "b", "c"], "step": 1, "loss": 2.0}),
                           source="x")
        with pytest.raises(InputError, match="ghost"):
            store.remove(["a", "ghost"])
        assert store.remove(["a", "c"]) == 2
        assert list(store.curves().frame["run"]) == ["b"]
        assert list(store.runs()["run"]) == ["b"]


def test_secondary_metric_with_gaps_is_kept_per_step(new_store):
    frame = pd.DataFrame({"run": "r", "step": [1, 2, 3, 4], "loss": [4.0, 3.0, 2.5, 2.2],
                          "val_loss": [np.nan, 3.2, np.nan, 2.4]})
    with CurveStore(new_store()) as store:
        summary = store.import_frame(frame, source="x")
        assert summary.points == 6
        val = store.curves(metric="val_loss").frame
        assert list(val["step"]) == [2, 4] and list(val["val_loss"]) == [3.2, 2.4]


def _writer(path, worker: int, batches: int, size: int) -> None:
    with CurveStore(path) as store:  # every worker creates the (missing) store at once
        store.add_run(f"own-{worker}", attrs={"params": 1e6 + worker})
        store.add_run("shared", attrs={"params": 5e5})
        for batch in range(batches):
            steps = np.arange(size) + size * batch
            store.append_points(f"own-{worker}", {"step": steps, "loss": 1.0 + steps,
                                                  "compute": 1e9 * (steps + 1)})
            shared = (steps * 4 + worker)[:2]  # interleaved steps of one run
            store.append_points("shared", {"step": shared, "loss": 1.0 + shared,
                                           "compute": 1e9 * (shared + 1)})


def test_four_writer_processes_lose_no_point(new_store):
    path = new_store()
    workers, batches, size = 4, 20, 25
    ctx = multiprocessing.get_context("fork")
    processes = [ctx.Process(target=_writer, args=(str(path), w, batches, size))
                 for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    assert [p.exitcode for p in processes] == [0] * workers
    with CurveStore(path) as store:
        runs = store.runs().set_index("run")
        for worker in range(workers):
            curve = store.curves(runs=f"own-{worker}").frame
            assert np.array_equal(curve["step"], np.arange(batches * size))
            assert np.array_equal(curve["loss"], 1.0 + np.arange(batches * size))
        shared = store.curves(runs="shared").frame
        expected = sorted(int(s) * 4 + w for w in range(workers) for b in range(batches)
                          for s in (np.arange(size) + size * b)[:2])
        assert shared["step"].tolist() == expected
        assert runs["points"].sum() == workers * batches * size + len(expected)


def test_transaction_groups_writes_and_nested_blocks_are_savepoints(new_store):
    with CurveStore(new_store()) as store:
        with pytest.raises(InputError), store.transaction():
            store.add_run("kept-only-if-all-succeed")
            store.append_points("kept-only-if-all-succeed", {"step": 1, "loss": 2.0})
            store.append_points("kept-only-if-all-succeed", {"step": 1, "loss": 2.0})
        assert store.runs().empty
        with store.transaction():
            store.add_run("outer")
            with pytest.raises(InputError), store.transaction():
                store.add_run("inner")
                store.append_points("inner", {"step": 1, "loss": -1.0})
            store.append_points("outer", {"step": 1, "loss": 2.0})
        assert list(store.runs()["run"]) == ["outer"]
        assert store.curves().frame["loss"].tolist() == [2.0]


def test_metric_names_with_quotes_are_stored_verbatim(new_store):
    name = "it's a loss'); DROP TABLE points; --"
    frame = pd.DataFrame({"run": "r", "step": np.arange(250), name: np.linspace(3, 2, 250)})
    with CurveStore(new_store()) as store:
        assert store.import_frame(frame, source="x", metrics=[name]).points == 250
        back = store.curves(metric=name).frame
        assert np.array_equal(back[name].to_numpy(), frame[name].to_numpy())
        assert store.runs()["metrics"].iloc[0] == [name]
