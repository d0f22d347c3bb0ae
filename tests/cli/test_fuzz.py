"""A fuzz table over the CLI: generated bad files and bad option values, for every command
that reads them. Each must exit 2 with one line on standard error (``error: …``) and print
nothing else: no report before the error, no traceback, no warning."""

from __future__ import annotations

import itertools
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from scalekit_cli.app import main

GOOD_ROWS = "run,params,tokens,loss\n" + "".join(
    f"r{i},{n:.6g},{20 * n:.6g},{1.7 + 400 / n ** 0.34 + 2000 / (20 * n) ** 0.37:.6f}\n"
    for i, n in enumerate(np.geomspace(1e7, 1e9, 6)))

#: Bad files: name -> (suffix, bytes).
BAD_FILES = {
    "empty": (".csv", b""),
    "header only": (".csv", b"run,params,tokens,loss\n"),
    "binary": (".csv", bytes(range(256)) * 4),
    "not utf-8": (".csv", "run,params,tokens,loss\nr\xe9,1e7,2e8,3.0\n".encode("latin-1")),
    "text loss": (".csv", b"run,params,tokens,loss\nr0,1e7,2e8,low\nr1,1e8,2e9,2.5\n"),
    "negative params": (".csv", b"run,params,tokens,loss\nr0,-1e7,2e8,3.0\nr1,1e8,2e9,2.5\n"),
    "nan loss": (".csv", b"run,params,tokens,loss\nr0,1e7,2e8,nan\nr1,1e8,2e9,2.5\n"),
    "inf tokens": (".csv", b"run,params,tokens,loss\nr0,1e7,inf,3.0\nr1,1e8,2e9,2.5\n"),
    "ragged": (".csv", b"run,params,tokens,loss\nr0,1e7,2e8\nr1,1e8,2e9,2.5,9,9\n"),
    "no loss column": (".csv", b"run,params,tokens\nr0,1e7,2e8\nr1,1e8,2e9\n"),
    "step 2**60": (".csv", b"run,step,compute,loss\nr0,1152921504606846976,1e18,3.0\n"),
    "truncated jsonl": (".jsonl", b'{"run": "r0", "step": 1, "loss": 3.0}\n{"run": "r0", "st'),
    "jsonl of lists": (".jsonl", b"[1, 2, 3]\n[4, 5, 6]\n"),
    "bad parquet": (".parquet", b"PAR1 this is not parquet PAR1"),
    "unknown suffix": (".xlsx", GOOD_ROWS.encode()),
}
#: Commands that read a curves FILE (given first), with options that keep them cheap.
READERS = {
    "fit": ["fit", "{file}", "--bootstrap", "0"],
    "plan": ["plan", "{file}", "--bootstrap", "0", "--target-compute", "1e21"],
    "isoflop": ["isoflop", "{file}", "--bootstrap", "0"],
    "forecast": ["forecast", "{file}"],
    "allocate replay": ["allocate", "replay", "--curves", "{file}", "--budget", "5%",
                        "--seeds", "1"],
    "store import": ["store", "import", "{file}", "--store", "{store}"],
}
#: Bad option values on a good file: (command, extra arguments).
BAD_OPTIONS = [
    ("fit", ["--bootstrap", "-1"]), ("fit", ["--bootstrap", "100000000000000000000"]),
    ("fit", ["--ci-level", "1.5"]), ("fit", ["--ci-level", "nan"]), ("fit", ["--seed", "-3"]),
    ("fit", ["--drop-top", "-1"]), ("fit", ["--delta", "-1"]), ("fit", ["--n-jobs", "0"]),
    ("fit", ["--json", "/no/such/folder/out.json"]), ("fit", ["--json", "out.txt"]),
    ("fit", ["--plot", "out.gif"]), ("fit", ["--target-compute", "-1e21"]),
    ("fit", ["--map", "params"]), ("fit", ["--law", "E + "]),
    ("plan", ["--target-compute", "0"]), ("plan", ["--target-compute", "inf"]),
    ("isoflop", ["--figures", "0"]), ("isoflop", ["--budgets", "-1e20,0"]),
    ("isoflop", ["--target-compute", "0"]), ("isoflop", ["--window", "-2"]),
    ("isoflop", ["--approach", "4"]), ("isoflop", ["--budget-tolerance", "-1"]),
    ("allocate replay", ["--eta", "1"]), ("allocate replay", ["--seeds", "0"]),
    ("allocate replay", ["--min-resource", "-5"]), ("allocate replay", ["--budget", "150%"]),
    ("allocate plan", ["--max-resource", "-5"]), ("allocate plan", ["--budget", "5%"]),
]
PLAN = ["allocate", "plan", "--curves", "{file}", "--budget", "1e20"]


def _write(tmp_path: Path, name: str, suffix: str, data: bytes) -> Path:
    path = tmp_path / (name.replace(" ", "_").replace("*", "") + suffix)
    path.write_bytes(data)
    return path


def _expect_one_error_line(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == 2, (args, code, err[-500:])
    assert out == "", (args, out[:300])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (args, err[:500])
    return lines[0]


CASES = list(itertools.product(BAD_FILES, READERS))


@pytest.mark.parametrize("bad, command", CASES, ids=[f"{c}: {b}" for b, c in CASES])
def test_a_bad_file_exits_2_with_one_line(tmp_path, capsys, bad, command):
    path = _write(tmp_path, bad, *BAD_FILES[bad])
    args = [a.format(file=path, store=tmp_path / "s.db") for a in READERS[command]]
    _expect_one_error_line(args, capsys)


def test_a_missing_file_a_folder_and_a_sqlite_file_of_another_tool(tmp_path, capsys):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    for path in (tmp_path / "missing.csv", tmp_path, other):
        for command in ("fit", "isoflop", "store import"):
            args = [a.format(file=path, store=tmp_path / "s.db") for a in READERS[command]]
            _expect_one_error_line(args, capsys)
    _expect_one_error_line(["store", "ls", "--store", other], capsys)


@pytest.mark.parametrize("command, extra", BAD_OPTIONS,
                         ids=[f"{c} {' '.join(e)}" for c, e in BAD_OPTIONS])
def test_a_bad_option_value_exits_2_with_one_line(tmp_path, capsys, command, extra):
    good = _write(tmp_path, "good", ".csv", GOOD_ROWS.encode())
    args = [a.format(file=good, store=tmp_path / "s.db") for a in READERS.get(command, PLAN)]
    extra_flags = {e for e in extra if e.startswith("--")}
    kept, skip = [], False
    for a in args:  # an option given again replaces the table's default
        if skip:
            skip = False
            continue
        if a in extra_flags:
            skip = True
            continue
        kept.append(a)
    _expect_one_error_line([*kept, *extra], capsys)


# -- issue 22: real-world and hostile input ---------------------------------------------------
#: Commands that read a FILE, beyond READERS (each must refuse a pipe before reading it).
FILE_READERS = {**READERS, "forecast": ["forecast", "{file}", "--to", "1000"],
                "law classes": ["law", "classes", "{file}"],
                "law inference-k": ["law", "inference-k", "{file}"],
                "allocate plan": PLAN}


def _unblock_after(path: Path, seconds: float = 5.0):
    """A reader that opened the pipe anyway would hang: after ``seconds`` feed it good rows,
    so that it ends (with exit 0, which the test then refuses) instead of hanging."""
    import threading
    import time

    def feed():
        time.sleep(seconds)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:                 # nobody reading: nothing to unblock
            return
        with os.fdopen(fd, "w") as pipe:
            pipe.write(GOOD_ROWS)

    threading.Thread(target=feed, daemon=True).start()


@pytest.mark.parametrize("command", list(FILE_READERS))
def test_a_pipe_as_input_is_refused_unread(tmp_path, capsys, command):
    pipe = tmp_path / "f.csv"
    os.mkfifo(pipe)
    _unblock_after(pipe)
    args = [a.format(file=pipe, store=tmp_path / "s.db") for a in FILE_READERS[command]]
    assert "(a pipe, a device or a socket)" in _expect_one_error_line(args, capsys)


def test_a_device_a_url_and_a_pipe_as_output_or_store_are_named_in_one_line(tmp_path, capsys):
    pipe = tmp_path / "f.csv"
    os.mkfifo(pipe)
    _unblock_after(pipe)
    for args, words in (
            (["fit", "/dev/zero"], "/dev/zero: is not a regular file"),
            (["fit", "https://example.com/x.csv"], "is a URL"),
            (["store", "import", "https://127.0.0.1:9/x", "--store", tmp_path / "s.db"],
             "cannot read the tracking server"),
            (["store", "export", pipe, "--store", tmp_path / "s.db"], "must be a regular file"),
            (["store", "ls", "--store", pipe], "f.csv: is not a regular file")):
        assert words in _expect_one_error_line(args, capsys), args
    assert not (tmp_path / "s.db").exists()


@pytest.fixture()
def full_folder(tmp_path):
    """A folder on a full file system: a 64 KiB tmpfs filled up (needs root; else skipped)."""
    import subprocess

    folder = tmp_path / "full"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                          capture_output=True)
    if done.returncode:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        fill = os.open(folder / "fill", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fill, b"\0" * 4096):
                pass
        except OSError:                  # ENOSPC: the device is full
            pass
        finally:
            os.close(fill)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("output", [["--json", "out.json"], ["--plot", "out.png"], ["export"]])
def test_a_full_disk_exits_2_and_leaves_nothing(tmp_path, capsys, full_folder, output):
    good = _write(tmp_path, "good", ".csv", GOOD_ROWS.encode())
    if output == ["export"]:
        store = tmp_path / "s.db"
        assert main(["store", "import", str(good), "--store", str(store), "-q"]) == 0
        args = ["store", "export", full_folder / "out.csv", "--store", store]
    else:
        args = ["fit", good, "--bootstrap", "0", "-q", output[0], full_folder / output[1]]
    line = _expect_one_error_line(args, capsys)
    assert f"no space left on the device holding {full_folder}" in line
    assert sorted(p.name for p in full_folder.iterdir()) == ["fill"]


FORMULAS = ["=HYPERLINK(\"http://x\")", "@SUM(A1)", "+1+2", "-2+3", "\tcmd", "'quoted",
            "plain"]


def test_formulas_are_escaped_on_export_and_the_round_trip_is_byte_identical(tmp_path, capsys):
    import csv
    import io

    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["run", "step", "params", "note", "loss"])
    for name in FORMULAS:
        writer.writerows([[name, 1, 1e7, name, 3.0], [name, 2, 1e7, name, 2.5]])
    source = _write(tmp_path, "formulas", ".csv", text.getvalue().encode())
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    assert main(["store", "import", str(source), "--store", str(tmp_path / "a.db"), "-q"]) == 0
    assert main(["store", "export", str(first), "--store", str(tmp_path / "a.db")]) == 0
    assert main(["store", "import", str(first), "--store", str(tmp_path / "b.db"), "-q"]) == 0
    assert main(["store", "export", str(second), "--store", str(tmp_path / "b.db")]) == 0
    assert first.read_bytes() == second.read_bytes()
    cells = [cell for row in csv.reader(first.open(newline="")) for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "@", "+", "\t") or c.startswith("-2")]
    assert "'=HYPERLINK(\"http://x\")" in cells and "''quoted" in cells
    from scalekit.curves import CurveStore

    runs = []
    for name in ("a.db", "b.db"):                   # the names read back as they were written
        with CurveStore(tmp_path / name, create=False) as opened:
            runs.append(set(opened.runs()["run"]))
    assert runs[0] == runs[1] and {"=HYPERLINK(\"http://x\")", "-2+3", "'quoted"} <= runs[1]
    capsys.readouterr()


def test_an_export_whose_suffix_names_another_format_is_refused_before_work(tmp_path, capsys):
    good = _write(tmp_path, "good", ".csv", GOOD_ROWS.encode())
    assert main(["store", "import", str(good), "--store", str(tmp_path / "s.db"), "-q"]) == 0
    line = _expect_one_error_line(["store", "export", tmp_path / "out.parquet", "--format", "csv",
                                   "--store", tmp_path / "s.db"], capsys)
    assert "names parquet" in line and not (tmp_path / "out.parquet").exists()


def _store_of(tmp_path, name="s.db", rows=GOOD_ROWS):
    source = _write(tmp_path, name + "-source", ".csv", rows.encode())
    store = tmp_path / name
    assert main(["store", "import", str(source), "--store", str(store), "-q"]) == 0
    return store


def test_a_damaged_store_is_named_and_never_written(tmp_path, capsys):
    rows = "run,step,params,tokens,loss\n" + "".join(
        f"r{i},{s},{1e7 * (i + 1)},{s * 1e8},{3 + 1 / s + i / 100}\n"
        for i in range(40) for s in range(1, 60))
    store = _store_of(tmp_path, rows=rows)
    data = bytearray(store.read_bytes())
    for page in range(2, len(data) // 4096):   # scribble over every b-tree page's cells
        data[page * 4096 + 8: page * 4096 + 72] = b"\xff" * 64
    store.write_bytes(bytes(data))
    before = store.read_bytes()
    good = _write(tmp_path, "good", ".csv", GOOD_ROWS.encode())
    for args in (["store", "import", good], ["store", "rm", "r1"], ["store", "ls"],
                 ["store", "show", "r1"], ["store", "export", tmp_path / "x.csv"],
                 ["fit", "--bootstrap", "0"]):
        line = _expect_one_error_line([*args, "--store", store], capsys)
        assert f"{store}: the store file is damaged" in line, args
    assert store.read_bytes() == before and not (tmp_path / "x.csv").exists()


@pytest.fixture()
def read_only_folder(tmp_path):
    """A folder on a read-only mount holding a store (needs root; else skipped)."""
    import subprocess

    folder = tmp_path / "ro"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)],
                      capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    try:
        _store_of(folder)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_store_on_a_read_only_mount_is_read(read_only_folder, tmp_path, capsys):
    store = read_only_folder / "s.db"
    assert main(["store", "ls", "--store", str(store)]) == 0
    assert "r5" in capsys.readouterr().out
    assert main(["fit", "--store", str(store), "--bootstrap", "0", "-q",
                 "--json", str(tmp_path / "fit.json")]) == 0
    assert main(["store", "export", str(tmp_path / "x.csv"), "--store", str(store)]) == 0
    capsys.readouterr()
    line = _expect_one_error_line(["store", "rm", "r1", "--store", store], capsys)
    assert "read-only" in line


def test_an_empty_store_file_stays_empty(tmp_path, capsys):
    empty = tmp_path / "e.db"
    empty.touch()
    for args in (["fit"], ["isoflop"], ["store", "ls"], ["store", "show", "r1"],
                 ["forecast", "--to", "10"]):
        assert "empty" in _expect_one_error_line([*args, "--store", empty], capsys), args
    assert empty.stat().st_size == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["e.db"]


def test_a_refused_train_leaves_no_store_and_no_checkpoints(tmp_path, capsys):
    store = tmp_path / "t.db"
    _expect_one_error_line(["train", "teacher_student", "--store", store, "--option",
                            "nosuch=1", "-q"], capsys)
    assert list(tmp_path.iterdir()) == []


#: Bad input that used to exit 1 (a traceback's "internal error") or 0 (a nonsense report):
#: (files to write, arguments, words of the one error line). Issue 22, items 10, 11 and 13.
CONSTANT = "run,params,tokens,loss\n" + "".join(f"r{i},{i}e7,{i}e9,3.0\n" for i in range(1, 9))
HUGE = GOOD_ROWS + "big,1e308,2e9,2.5\n"
ONE_ROW = "run,params,tokens,loss\nr0,1e7,2e8,3.0\n"
FOUR = "run,params,tokens,loss\na,1e7,1e9,3.2\nb,2e7,1e9,3.1\nc,4e7,2e9,3.0\nd,8e7,3e9,2.9\n"
DEEP = '{"run": "r0", "step": 1, "loss": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
MONOTONE = "run,k,error\n" + "".join(f"r{k},{k},{0.05 + 0.4 / k ** 2:.6g}\n"
                                     for k in (1, 2, 4, 8, 16, 32, 64, 128, 256))
USER_FAULTS = [
    ("constant loss: fit", CONSTANT, ["fit", "{f}", "--bootstrap", "0"], "the same metric value"),
    ("constant loss: plan", CONSTANT, ["plan", "{f}", "--bootstrap", "0", "--target-compute",
                                       "1e21"], "the same metric value"),
    ("constant loss: isoflop", CONSTANT, ["isoflop", "{f}", "--bootstrap", "0"], "vary"),
    ("jsonl nested 100,000 deep", DEEP, ["fit", "{f}"], "nested too deeply"),
    ("plot into /proc", GOOD_ROWS, ["fit", "{f}", "--bootstrap", "0", "--plot", "/proc/o.png"],
     "no file can be written"),
    ("flops per token 0", GOOD_ROWS, ["plan", "{f}", "--bootstrap", "0", "--target-compute",
                                      "1e21", "--flops-per-param-token", "0"], "must be > 0"),
    ("flops per token -6", GOOD_ROWS, ["plan", "{f}", "--bootstrap", "0", "--target-compute",
                                       "1e21", "--flops-per-param-token", "-6"], "must be > 0"),
    ("k_max 1e12", MONOTONE, ["law", "inference-k", "{f}", "--plan", "cost=1,k_max=1e12"],
     "k_max"),
    ("law bootstrap 2e6", MONOTONE, ["law", "classes", "{f}", "--bootstrap", "2000000"],
     "--bootstrap"),
    ("params 1e308: fit", HUGE, ["fit", "{f}", "--bootstrap", "0"], "overflows 6·N·D"),
    ("params 1e308: isoflop", HUGE, ["isoflop", "{f}", "--bootstrap", "0"], "overflows 6·N·D"),
    ("params 1e308: forecast", HUGE, ["forecast", "{f}", "--to", "100"], "overflows 6·N·D"),
    ("params 1e308: allocate", HUGE, ["allocate", "replay", "--curves", "{f}", "--budget", "5%"],
     "overflows 6·N·D"),
    ("budgets ,,,", GOOD_ROWS, ["isoflop", "{f}", "--budgets", ",,,"], "at least three"),
    ("budgets repeated", GOOD_ROWS, ["isoflop", "{f}", "--budgets", "1e18,1e18,1e19"],
     "distinct"),
    ("one row: allocate replay", ONE_ROW, ["allocate", "replay", "--curves", "{f}", "--budget",
                                           "5%"], "at least two runs"),
    ("one row: allocate plan", ONE_ROW, ["allocate", "plan", "--curves", "{f}", "--budget",
                                         "1e20"], "at least two runs"),
    ("four points for five parameters", FOUR, ["fit", "{f}", "--bootstrap", "0"],
     "`--all-points`"),
    ("one row: isoflop", ONE_ROW, ["isoflop", "{f}"], "no approach can be fitted"),
]


@pytest.mark.parametrize("name, text, args, words", USER_FAULTS,
                         ids=[case[0] for case in USER_FAULTS])
def test_user_faults_exit_2_with_one_short_line_naming_the_file(tmp_path, capsys, name, text,
                                                                args, words):
    path = _write(tmp_path, "in", ".jsonl" if text is DEEP else ".csv", text.encode())
    line = _expect_one_error_line([a.format(f=path) for a in args], capsys)
    assert words in line, line
    named = line.startswith(f"error: {path}") or "--" in line   # the file, or the option
    assert named and len(line) - len(str(path)) <= 200, line


def test_store_show_of_a_metric_the_run_lacks_is_refused(tmp_path, capsys):
    store = _store_of(tmp_path)
    line = _expect_one_error_line(["store", "show", "r1", "--metric", "nosuch", "--store", store],
                                  capsys)
    assert "`--metric` is 'nosuch'" in line and "'loss'" in line


# -- issue 22, items 1-4: real-world sweeps get no phantom answer -------------------------------
def test_monotone_inference_k_data_state_no_optimum(tmp_path, capsys):
    path = _write(tmp_path, "mono", ".csv", MONOTONE.encode())
    assert main(["law", "inference-k", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "monotone within the data (k ≤ 256); no optimum found" in out and "U-shaped" not in out


def test_a_sweep_at_one_token_count_names_all_points(tmp_path, capsys):
    rows = "run,step,params,tokens,loss\n" + "".join(
        f"r{i},{s},{n:.6g},{d:.6g},{1.7 + 400 / n ** 0.34 + 410 / d ** 0.28:.6f}\n"
        for i, n in enumerate(np.geomspace(1e7, 1e9, 6))
        for s, d in enumerate(np.geomspace(1e8, 1e10, 8), 1))
    path = _write(tmp_path, "fixed_d", ".csv", rows.encode())
    assert main(["fit", str(path), "--bootstrap", "0", "--json", str(tmp_path / "r.json")]) == 0
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    first = report["diagnostics"][0]
    assert first["code"] == "last_points_narrow" and "`--all-points`" in first["message"]
    capsys.readouterr()


def test_isoflop_on_digitised_chinchilla_points_with_no_flags(tmp_path, published_data):
    out = tmp_path / "iso.json"
    assert main(["isoflop", str(published_data / "chinchilla_epoch_svg.csv"), "--approach", "2",
                 "--bootstrap", "0", "-q", "--json", str(out)]) == 0
    import json

    (approach,) = json.loads(out.read_text())["approaches"].values()
    assert abs(approach["a"]["value"] - 0.50) <= 0.02       # Hoffmann et al.: 0.49-0.51
    assert "budgets found as clusters" in approach["budgeting"]
