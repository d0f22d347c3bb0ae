"""The store beyond one file: a PostgreSQL back end by URL and SCALEKIT_STORE, copies between
back ends that export the same bytes, many writers, a writer killed with kill -9, a client
whose connection is cut mid-import. Each runs against a real server (tests/pg_server.py)."""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
import time
import uuid

import numpy as np
import pandas as pd
import pytest
from scalekit_cli.app import main

from scalekit.allocate._engine import Advance
from scalekit.allocate._state import AllocationState
from scalekit.curves import CurveStore
from scalekit.curves._sqlite import SCHEMA_VERSION
from scalekit.errors import InputError


def _curves(runs: int, steps: int, seed: int = 0, prefix: str = "r") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    step = np.arange(1, steps + 1)
    return pd.concat([pd.DataFrame({
        "run": f"{prefix}{i}", "step": step * 3, "loss": rng.lognormal(0, 1, steps),
        "val_loss": np.where(step % 4 == 0, rng.lognormal(0, 1, steps), np.nan),
        "compute": np.cumsum(rng.uniform(1e9, 1e12, steps)), "params": 1e6 * (i + 1),
        "lr": 10.0 ** -(i + 1), "optimizer": ["adam", "sgd"][i % 2]}) for i in range(runs)],
        ignore_index=True)


def test_the_cli_takes_a_url_and_the_environment_variable(postgres_server, tmp_path, capsys,
                                                          monkeypatch):
    url = postgres_server.new_database()
    _curves(2, 30).to_csv(tmp_path / "c.csv", index=False)
    assert main(["store", "import", str(tmp_path / "c.csv"), "--store", url]) == 0
    monkeypatch.setenv("SCALEKIT_STORE", url)
    capsys.readouterr()
    assert main(["store", "ls"]) == 0
    listed = capsys.readouterr().out
    assert "2 runs in" in listed and "r0" in listed and "r1" in listed
    with CurveStore(url) as store:
        assert store.runs()["points"].tolist() == [37, 37]  # 30 losses, 7 val_losses


@pytest.mark.parametrize("url, shown", [
    ("postgresql://nobody:hunter2@127.0.0.1:1/none", "postgresql://nobody:***@127.0.0.1:1/none"),
    ("postgresql://nobody@127.0.0.1:1/none?sslmode=disable&password=hunter2",
     "postgresql://nobody@127.0.0.1:1/none?sslmode=disable&password=***"),
])
def test_an_unreachable_server_is_one_line_naming_it_without_its_password(capsys, url, shown):
    assert main(["store", "ls", "--store", url]) == 2
    err = capsys.readouterr().err.strip()
    try:                                  # without psycopg the line says what to install
        import psycopg  # noqa: F401
        reason = "cannot connect to the PostgreSQL server"
    except ImportError:
        reason = "needs the psycopg package"
    assert err.count("\n") == 0 and reason in err
    assert shown in err and "hunter2" not in err


def test_a_malformed_ipv6_host_is_one_line(capsys):
    pytest.importorskip("psycopg")
    assert main(["store", "ls", "--store", "postgresql://nobody:hunter2@[::1/none"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "malformed" in err and "hunter2" not in err


def test_another_database_is_refused_untouched(postgres_server):
    import psycopg

    other = postgres_server.new_database()

    with psycopg.connect(other, autocommit=True) as con:
        con.execute("CREATE TABLE users (name TEXT)")
    for create in (True, False):
        with pytest.raises(InputError, match="not a scalekit curve store|no curve store here"):
            CurveStore(other, create=create)
    with psycopg.connect(other) as con:
        assert [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                          "WHERE table_schema = current_schema()")] == ["users"]


def test_a_store_of_a_newer_schema_is_refused(postgres_server):
    url = postgres_server.new_database()
    with CurveStore(url) as store:
        assert store.schema_version == SCHEMA_VERSION
        store._db.con.execute("UPDATE scalekit_schema SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(InputError, match=f"newer scalekit \\(schema version {SCHEMA_VERSION + 1}"):
        CurveStore(url)


def test_copies_between_back_ends_export_the_same_bytes(postgres_server, tmp_path, capsys):
    source = tmp_path / "a.db"
    frame = _curves(4, 200)
    with CurveStore(source) as store:
        store.import_frame(frame, source="x")
        store.remove(["r1"])  # a gap in the run ids
        store.import_frame(_curves(1, 50, seed=1, prefix="late"), source="y")
    with AllocationState(source) as state:
        state.start_task("toy", {"eta": 3})
        state.reserve("toy", Advance(run="r0", rung=0, start=0.0, stop=1.0, cost=5e17))
    url = postgres_server.new_database()
    back = tmp_path / "b.db"
    for src, dst in ((source, url), (url, back)):
        assert main(["store", "copy", str(src), str(dst)]) == 0
        assert "copied 812 points of 4 runs" in capsys.readouterr().out
    for suffix in (".csv", ".jsonl"):
        files = []
        for where in (source, url, back):
            out = tmp_path / f"{len(files)}{suffix}"
            with CurveStore(where) as store:
                store.export(out)
            files.append(out.read_bytes())
        assert files[0] == files[1] == files[2]
    for where in (url, back):
        with AllocationState(where) as state:
            assert state.spent("toy") == 5e17 and list(state.ledger("toy")) == [(0, "r0")]
    assert main(["store", "copy", str(source), url]) == 2  # not into a store with runs
    assert "already holds runs" in capsys.readouterr().err


def _import_own_runs(location, worker: int, runs: int, steps: int) -> None:
    with CurveStore(location) as store:
        store.import_frame(_curves(runs, steps, seed=worker, prefix=f"w{worker}-"), source="w")


@pytest.mark.slow
def test_eight_writer_processes_of_50000_points_lose_nothing(new_store):
    location, workers, runs, steps = new_store(), 8, 5, 10_000  # 8 x 50,000 losses
    ctx = multiprocessing.get_context("fork")
    started = time.perf_counter()
    processes = [ctx.Process(target=_import_own_runs, args=(location, w, runs, steps))
                 for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(300)
    seconds = time.perf_counter() - started
    assert [p.exitcode for p in processes] == [0] * workers
    with CurveStore(location) as store:
        counts = store.runs().set_index("run")["points"]
        assert len(counts) == workers * runs
        assert counts.sum() == workers * runs * (steps + steps // 4)
        for worker in (0, workers - 1):
            expected = _curves(runs, steps, seed=worker, prefix=f"w{worker}-")
            got = store.curves(runs=[f"w{worker}-{i}" for i in range(runs)]).frame
            assert np.array_equal(got["loss"].to_numpy(), expected["loss"].to_numpy())
    print(f"8 writers x 50,000 points: {seconds:.1f} s")


KILLED = """
import sys
import numpy as np, pandas as pd
from scalekit.curves import CurveStore
steps = 400_000
frame = pd.DataFrame({"run": "big", "step": np.arange(steps), "loss": np.linspace(5, 1, steps),
                      "compute": np.arange(steps) * 1e9 + 1e9})
with CurveStore(sys.argv[1]) as store, store.transaction():
    store.add_run("first")
    print("importing", flush=True)
    store.import_frame(frame, source="killed")
    sys.stdin.read()  # the transaction stays open until the kill, however fast the import was
"""


def test_a_writer_killed_mid_import_leaves_nothing(new_store):
    location = new_store()
    with CurveStore(location) as store:
        store.import_frame(pd.DataFrame({"run": "kept", "step": [1, 2], "loss": [2.0, 1.0]}),
                           source="before")
    writer = subprocess.Popen([sys.executable, "-c", KILLED, str(location)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "importing"
    time.sleep(0.4)  # inside the import, or after it with the transaction still open
    assert writer.poll() is None, "the writer ended before the kill"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    with CurveStore(location, timeout=5) as store:
        assert store.runs()["run"].tolist() == ["kept"]  # neither 'first' nor any point
        store.append_points("kept", {"step": 3, "loss": 0.5})  # the write lock is free
        assert store.runs()["points"].tolist() == [3]


@pytest.mark.slow
def test_a_client_cut_off_mid_import_gets_one_line_and_nothing_is_kept(postgres_server,
                                                                       tmp_path):
    url = postgres_server.new_database()
    steps = 400_000
    pd.DataFrame({"run": "big", "step": np.arange(steps), "loss": np.linspace(5, 1, steps)}
                 ).to_parquet(tmp_path / "big.parquet")
    client = subprocess.Popen(
        [sys.executable, "-c", ("import sys; from scalekit_cli.app import main; "
                                "sys.exit(main())"),
         "store", "import", str(tmp_path / "big.parquet"), "--store", url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, cut = time.monotonic() + 60, []
    while not cut and time.monotonic() < deadline and client.poll() is None:
        cut = postgres_server.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    "WHERE query LIKE 'COPY points%'")
        time.sleep(0.01)
    out, err = client.communicate(timeout=60)
    assert cut, "the import was never seen inserting"
    assert client.returncode == 2
    assert err.count("\n") == 1 and "lost the connection to the PostgreSQL server" in err
    assert "imported" not in out
    with CurveStore(url) as store:
        assert store.runs().empty


@pytest.mark.slow
def test_train_logs_into_a_postgresql_store_with_checkpoints_named_after_the_database(
        postgres_server, tmp_path, monkeypatch):
    url = postgres_server.new_database()
    monkeypatch.chdir(tmp_path)
    assert main(["train", "teacher_student", "--widths", "4,8", "--steps", "5", "--evals", "2",
                 "--eval-size", "16", "--device", "cpu", "--quiet", "--store", url]) == 0
    with CurveStore(url) as store:
        runs = store.runs()
    assert len(runs) == 2 and runs["points"].gt(0).all()
    assert len(list((tmp_path / "scalekit.checkpoints").glob("*.pt"))) == 2


def test_a_role_that_may_not_create_tables_is_one_line(postgres_server, capsys, tmp_path):
    name = "t" + uuid.uuid4().hex[:12]
    postgres_server.admin(f"CREATE SCHEMA {name}", database="scalekit")
    postgres_server.admin(f"CREATE ROLE r{name} LOGIN")
    postgres_server.admin(f"GRANT USAGE ON SCHEMA {name} TO r{name}", database="scalekit")
    url = (postgres_server.url.replace("postgres@", f"r{name}@")
           + f"/scalekit?options=-csearch_path%3D{name}")
    source = tmp_path / "curves.csv"
    source.write_text("run,step,compute,loss\nr0,1,1e15,3.0\nr0,2,2e15,2.9\n")
    assert main(["store", "import", str(source), "--store", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "may not create" in err and "CREATE" in err
