"""The third red team's cases (issue 43): full disks, hangs, exit 1 where the user is at
fault, silent nonsense, secrets and spreadsheets, and what a first-time user meets.

A full disk is made two ways without root: ``os.fsync`` raising ``ENOSPC`` (the OS boundary
where a full disk meets a write the page cache took), and a child process under a small
``RLIMIT_FSIZE`` with ``SIGXFSZ`` ignored, whose writes past the limit fail with ``EFBIG``
as a full disk's fail with ``ENOSPC``.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scalekit_cli.app import main

GOOD_ROWS = "run,params,tokens,loss\n" + "".join(
    f"r{i},{n:.6g},{20 * n:.6g},{1.7 + 400 / n ** 0.34 + 2000 / (20 * n) ** 0.37:.6f}\n"
    for i, n in enumerate(np.geomspace(1e7, 1e9, 6)))
OLD_PAGE = "<p>the page written yesterday</p>\n"


def _good(tmp_path: Path) -> Path:
    path = tmp_path / "good.csv"
    path.write_text(GOOD_ROWS)
    return path


def _one_error_line(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err[-800:])
    return lines[0]


def _limited(tmp_path: Path, limit: int, *args) -> subprocess.CompletedProcess:
    """Run the CLI in a child whose files may not grow past ``limit`` bytes."""
    script = ("import resource, signal, sys\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
              "from scalekit_cli.app import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


def _full_disk(monkeypatch) -> None:
    def full(handle):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)


# -- 1. a full disk destroys nothing ---------------------------------------------------------

@pytest.mark.parametrize("flag, name", [("--html", "old.html"), ("--json", "old.json")])
def test_a_full_disk_leaves_the_old_output_untouched(tmp_path, monkeypatch, capsys, flag, name):
    good, old = _good(tmp_path), tmp_path / name
    old.write_text(OLD_PAGE)
    _full_disk(monkeypatch)
    code = main(["fit", str(good), "--bootstrap", "0", "-q", flag, str(old)])
    line = _one_error_line(code, capsys.readouterr().err)
    assert "no space left on the device" in line and str(old) in line
    assert old.read_text() == OLD_PAGE
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["good.csv", name])


def test_a_report_page_on_a_full_disk_leaves_the_old_page(tmp_path, monkeypatch, capsys):
    good, fit_json, old = _good(tmp_path), tmp_path / "fit.json", tmp_path / "old.html"
    assert main(["fit", str(good), "--bootstrap", "0", "-q", "--json", str(fit_json)]) == 0
    old.write_text(OLD_PAGE)
    _full_disk(monkeypatch)
    line = _one_error_line(main(["report", str(fit_json), "-o", str(old)]),
                           capsys.readouterr().err)
    assert "no space left" in line
    assert old.read_text() == OLD_PAGE
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_page_past_the_file_size_limit_leaves_the_old_page(tmp_path):
    good, old = _good(tmp_path), tmp_path / "old.html"
    old.write_text(OLD_PAGE)
    done = _limited(tmp_path, 4096, "fit", good, "--bootstrap", "0", "-q", "--html", old)
    line = _one_error_line(done.returncode, done.stderr)
    assert "largest file size" in line and "file system at" in line
    assert old.read_text() == OLD_PAGE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.csv", "old.html"]


def test_a_store_import_on_a_full_disk_says_so_and_leaves_no_new_file(tmp_path):
    good = _good(tmp_path)
    done = _limited(tmp_path, 3000, "store", "import", good, "--store", "new.db")
    line = _one_error_line(done.returncode, done.stderr)
    assert "could not be written" in line and "full" in line and "not a scalekit" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.csv"]


def test_an_import_into_a_store_on_a_full_disk_leaves_it_as_it_was(tmp_path):
    good, big = _good(tmp_path), tmp_path / "big.csv"
    big.write_text("run,step,compute,loss\n" + "".join(
        f"big{j},{s},{s * 1e15},{3 + 1 / s}\n" for j in range(20) for s in range(1, 300)))
    assert main(["store", "import", str(good), "--store", str(tmp_path / "s.db"), "-q"]) == 0
    size = (tmp_path / "s.db").stat().st_size
    done = _limited(tmp_path, size, "store", "import", big, "--store", "s.db")
    line = _one_error_line(done.returncode, done.stderr)
    assert "full" in line and "the store is as it was" in line
    from scalekit.curves import CurveStore

    with CurveStore(tmp_path / "s.db", create=False) as store:
        assert len(store.runs()) == 6


# -- 2. hangs: a pipe as a ladder file, sizes stated up front ----------------------------------

def _cli(tmp_path: Path, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scalekit_cli.app", *map(str, args)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


def _ladder_files(tmp_path: Path) -> tuple[Path, Path]:
    run = tmp_path / "small.csv"
    run.write_text("_step,batch_size_in_tokens,acc\n10,1000,0.3\n20,1000,0.4\n")
    table = tmp_path / "runs.csv"
    table.write_text("file,params\nsmall.csv,1e6\npipe.csv,1e7\n")
    return run, table


@pytest.mark.parametrize("command", [["store", "import", "small.csv", "pipe.csv", "--runs",
                                      "runs.csv", "--store", "s.db"],
                                     ["law", "task", "small.csv", "pipe.csv", "--runs", "runs.csv",
                                      "--predict", "N=1e9,D=2e10"],
                                     ["law", "task", "small.csv", "--runs", "pipe.csv",
                                      "--predict", "N=1e9,D=2e10"]])
def test_a_named_pipe_in_a_ladder_is_refused_not_read(tmp_path, command):
    _ladder_files(tmp_path)
    os.mkfifo(tmp_path / "pipe.csv")
    done = _cli(tmp_path, *command)             # the old code blocks on the pipe: timeout
    line = _one_error_line(done.returncode, done.stderr)
    assert "pipe.csv" in line and "pipe" in line.split("pipe.csv", 1)[1]
    assert not (tmp_path / "s.db").exists()


MULTIPOWER_FIT = ('{"format": "scalekit.forecast/1", "params": {"L0": 2.0, "A": 0.6, '
                  '"alpha": 0.5, "B": 300.0, "C": 2.0, "beta": 0.6, "gamma": 0.6}, '
                  '"stats": {"warmup_steps": 100, "peak_rate": 0.001}}')


def test_a_schedule_search_past_the_size_limit_is_refused_at_once(tmp_path):
    (tmp_path / "mp.json").write_text(MULTIPOWER_FIT)
    done = _cli(tmp_path, "plan", "--schedule-search", "--from", "mp.json", "--family", "free",
                "--total-steps", "5000000")      # the old code: a MemoryError after minutes
    line = _one_error_line(done.returncode, done.stderr)
    assert "--total-steps" in line and "1000000" in line


def test_a_schedule_spec_past_the_size_limit_is_refused(tmp_path):
    from scalekit.errors import InputError
    from scalekit.schedules import MAX_STEPS, parse_schedule

    with pytest.raises(InputError, match="at most 1,000,000 steps"):
        parse_schedule("cosine:warmup=100,peak=1e-3,final=1e-4,total=1e12")
    assert parse_schedule(f"constant:warmup=10,peak=1e-3,total={MAX_STEPS}").total_steps \
        == MAX_STEPS


def test_a_grid_of_ten_to_the_twenty_runs_is_refused(tmp_path, capsys):
    target = tmp_path / "target.csv"
    target.write_text("params,tokens\n1e10,2e11\n")
    grid = "N=1e7:1e9:10000000000,D=1e9:1e11:10000000000"
    line = _one_error_line(main(["design", "--law", "chinchilla", "--budget", "5%", "--grid",
                                 grid, "--target", str(target)]), capsys.readouterr().err)
    assert "at most 1,000,000 runs" in line and "1e+20" in line


# -- 3. design --store postgresql://… ---------------------------------------------------------

def test_design_takes_a_postgresql_url_as_its_store(tmp_path, capsys):
    target = tmp_path / "target.csv"
    target.write_text("params,tokens\n1e10,2e11\n")
    code = main(["design", "--law", "chinchilla", "--budget", "5%", "--grid",
                 "N=1e7:1e9:4,D=1e9:1e11:4", "--target", str(target), "--store",
                 "postgresql://user@127.0.0.1:1/nowhere"])
    line = _one_error_line(code, capsys.readouterr().err)
    assert "is_file" not in line and "127.0.0.1" in line


# -- 4. exit 2, not 1, where the user is at fault ---------------------------------------------

#: Bad run tables of a ladder: name -> (suffix, bytes, words of the one line).
BAD_RUN_TABLES = {
    "empty": (".csv", b"", "empty"),
    "binary": (".csv", bytes(range(256)) * 4, "not a CSV table"),
    "latin-1": (".csv", "file,params\nsmall.csv,1e6\n\xe9,3\n".encode("latin-1"), "UTF-8"),
    "text params": (".csv", b"file,params\nsmall.csv,abc\n", "positive number"),
    "nan params": (".csv", b"file,params\nsmall.csv,nan\n", "positive number"),
    "list of strings": (".json", b'["a", "b"]', "list of runs"),
    "olmo without n": (".json", b'{"1B": {"paths": ["small.csv"], "flops": 3}}', "`n`"),
    "nested deep": (".json", b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
}
#: Bad evaluation files of a ladder run.
BAD_RUN_FILES = {
    "empty": (b"", "empty"),
    "binary": (bytes(range(256)) * 4, "not a CSV table"),
    "latin-1": ("_step,batch_size_in_tokens,acc\n10,1000,\xe9\n".encode("latin-1"), "UTF-8"),
    "text tokens": (b"tokens,acc\nabc,0.3\n", "not a number"),
    "header only": (b"tokens,acc\n", "no rows"),
}


@pytest.mark.parametrize("name", BAD_RUN_TABLES)
def test_a_bad_run_table_is_one_line(tmp_path, capsys, name):
    run, _ = _ladder_files(tmp_path)
    suffix, data, words = BAD_RUN_TABLES[name]
    table = tmp_path / f"table{suffix}"
    table.write_bytes(data)
    db = tmp_path / "s.db"
    line = _one_error_line(main(["store", "import", str(run), "--runs", str(table), "--store",
                                 str(db)]), capsys.readouterr().err)
    assert words in line and "table" in line
    assert not db.exists()


@pytest.mark.parametrize("name", BAD_RUN_FILES)
def test_a_bad_ladder_file_is_one_line(tmp_path, capsys, name):
    run, table = _ladder_files(tmp_path)
    data, words = BAD_RUN_FILES[name]
    run.write_bytes(data)
    line = _one_error_line(main(["law", "task", str(run), "--runs", str(table), "--predict",
                                 "N=1e9,D=2e10"]), capsys.readouterr().err)
    assert words in line and "small.csv" in line


DESIGN_TABLES = {
    "text loss": ("observed", "params,tokens,loss\n1e7,2e8,abc\n3e7,6e8,3.1\n", "'abc'"),
    "negative loss": ("observed", "params,tokens,loss\n1e7,2e8,-3\n3e7,6e8,3.1\n", "-3"),
    "infinite loss": ("observed", "params,tokens,loss\n1e7,2e8,inf\n3e7,6e8,3.1\n", "inf"),
    "text params": ("observed", "params,tokens,loss\nabc,2e8,3\n3e7,6e8,3.1\n", "'abc'"),
    "nan target": ("target", "params,tokens\n1e10,2e11\nnan,3e11\n", "nan"),
    "header-only target": ("target", "params,tokens\n", "no rows"),
    "text pool params": ("pool", "params,tokens\n1e7,2e8\nx,6e8\n", "'x'"),
    "text pool cost": ("pool", "params,tokens,c\n1e7,2e8,abc\n3e7,6e8,3.1\n", "'abc'"),
    "nan pool loss": ("pool", "params,tokens,loss\n1e7,2e8,nan\n3e7,6e8,3.1\n", "nan"),
}


@pytest.mark.parametrize("name", DESIGN_TABLES)
def test_design_refuses_what_is_no_number_naming_the_row(tmp_path, capsys, name):
    which, text, words = DESIGN_TABLES[name]
    files = {"target": "params,tokens\n1e10,2e11\n"}
    files[which] = text
    for role, body in files.items():
        (tmp_path / f"{role}.csv").write_text(body)
    args = ["design", "--law", "chinchilla", "--budget", "5%", "-q",
            "--target", str(tmp_path / "target.csv")]
    if which == "pool":
        args += ["--pool", str(tmp_path / "pool.csv")]
        args += ["--cost", "c"] if "cost" in name else ["--replay"] if "loss" in name else []
    else:
        args += ["--grid", "N=1e7:1e9:4,D=1e9:1e11:4"]
    if which == "observed":
        args += ["--observed", str(tmp_path / "observed.csv")]
    line = _one_error_line(main(args), capsys.readouterr().err)
    assert f"--{which}" in line or "--cost" in line, line
    assert words in line and ("row" in line or "no rows" in line), line


@pytest.mark.parametrize("grid, words", [
    ("N=1e7:1e9:4,N=1e7:1e9:4,D=1e9:1e11:4", "once"),
    ("N=1e7:1e9:4,params=1e7:1e9:4,D=1e9:1e11:4", "once"),
    ("N=1e7:1e9:4,,D=1e9:1e11:4", "single commas"),
    ("N=1e8:1e8:4,D=1e9:1e11:4", "LOW < HIGH"),
])
def test_a_grid_that_repeats_or_skips_is_refused(tmp_path, capsys, grid, words):
    target = tmp_path / "target.csv"
    target.write_text("params,tokens\n1e10,2e11\n")
    line = _one_error_line(main(["design", "--law", "chinchilla", "--budget", "5%", "--grid",
                                 grid, "--target", str(target), "-q"]), capsys.readouterr().err)
    assert "--grid" in line and words in line


FIT_EDITS = {
    "nan param": (lambda r: r["params"]["E"].update(value=float("nan")), "NaN"),
    "negative param": (lambda r: r["params"]["A"].update(value=-5.0), "parameter A is -5"),
    "text param": (lambda r: r["params"]["A"].update(value="abc"), "'abc'"),
    "version 99": (lambda r: r.update(format="scalekit.fit/99"), "format version 99"),
}


@pytest.fixture(scope="module")
def fit_report(tmp_path_factory):
    import json

    folder = tmp_path_factory.mktemp("fit")
    good = _good(folder)
    assert main(["fit", str(good), "--bootstrap", "0", "-q", "--json",
                 str(folder / "fit.json")]) == 0
    return json.loads((folder / "fit.json").read_text())


@pytest.mark.parametrize("name", FIT_EDITS)
def test_plan_from_a_damaged_fit_is_one_line(tmp_path, capsys, fit_report, name):
    import copy
    import json

    edit, words = FIT_EDITS[name]
    report = copy.deepcopy(fit_report)
    edit(report)
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(report))
    line = _one_error_line(main(["plan", "--from", str(path), "--target-compute", "1e21", "-q"]),
                           capsys.readouterr().err)
    assert words in line and "fit.json" in line


@pytest.mark.parametrize("command", [["plan", "--from", "{}", "--target-compute", "1e21"],
                                     ["report", "{}", "-o", "page.html"]])
def test_json_nested_too_deep_is_one_line(tmp_path, capsys, command):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    args = [a.format(path) if a == "{}" else str(tmp_path / a) if a.endswith(".html") else a
            for a in command]
    line = _one_error_line(main(args), capsys.readouterr().err)
    assert "nested too deep" in line
    assert not (tmp_path / "page.html").exists()


def test_a_report_of_a_newer_format_is_refused(tmp_path, capsys, fit_report):
    import json

    path = tmp_path / "fit.json"
    path.write_text(json.dumps({**fit_report, "format": "scalekit.fit/99"}))
    line = _one_error_line(main(["report", str(path), "-o", str(tmp_path / "page.html")]),
                           capsys.readouterr().err)
    assert "format version 99" in line and "upgrade" in line


def test_plan_compare_past_the_largest_float_is_one_line(tmp_path, capsys, fit_report):
    import json

    path = tmp_path / "fit.json"
    path.write_text(json.dumps(fit_report))
    line = _one_error_line(main(["plan", "--from", str(path), "--compare", "1e300,1e300", "-q"]),
                           capsys.readouterr().err)
    assert "finite compute" in line


def test_a_schedule_that_rises_after_the_warm_up_is_refused():
    from scalekit.errors import InputError
    from scalekit.schedules import parse_schedule

    for spec in ("cosine:warmup=10,peak=1e-3,final=1e-2,total=100",
                 "wsd:warmup=10,peak=1e-3,final=1e-2,decay=50,total=100",
                 "two_stage:warmup=10,peak=1e-3,second=1e-2,switch=50,total=100"):
        with pytest.raises(InputError, match="at most peak"):
            parse_schedule(spec)


def test_runs_whose_lr_is_zero_throughout_are_refused_before_the_fit(tmp_path, capsys):
    files = []
    for name in ("cos", "const"):
        path = tmp_path / f"{name}.csv"
        path.write_text("step,lr,loss\n" + "".join(f"{s},0.0,{3 + 100 / s}\n"
                                                   for s in range(100, 3000, 50)))
        files.append(str(path))
    code = main(["forecast", *files, "--method", "multipower", "--fit-on", "cos,const",
                 "--evaluate"])
    out, err = capsys.readouterr()
    line = _one_error_line(code, err)
    assert "learning rate of 0" in line and "DLASCL" not in out + err


def _data_constrained_runs(path: Path) -> Path:
    from scalekit.laws import get_law

    truth = {"E": 1.87, "A": 521.0, "B": 1488.0, "alpha": 0.353, "beta": 0.353,
             "rstar_d": 15.39, "rstar_n": 5.31}
    rng = np.random.default_rng(0)
    n, u = 10 ** rng.uniform(7, 9.5, 60), 10 ** rng.uniform(8, 10, 60)
    d = u * 10 ** rng.uniform(-0.3, 2.2, 60)
    loss = get_law("data_constrained").predict({"params": n, "tokens": d, "unique_tokens": u},
                                               truth)
    path.write_text("params,tokens,U,loss\n" + "".join(
        f"{a:.6g},{b:.6g},{c:.6g},{e:.6f}\n" for a, b, c, e in zip(n, d, u, loss, strict=True)))
    return path


@pytest.mark.parametrize("command", [
    ["plan", "{}", "--law", "data_constrained", "--compute", "1e21", "--unique-tokens", "1e9"],
    ["fit", "{}", "--law", "data_constrained"]])
def test_a_data_constrained_page_draws_the_law_one_input_at_a_time(tmp_path, capsys, command):
    runs = _data_constrained_runs(tmp_path / "runs.csv")
    page = tmp_path / "page.html"
    args = [str(runs) if a == "{}" else a for a in command]
    assert main([*args, "--bootstrap", "0", "-q", "--html", str(page)]) == 0, \
        capsys.readouterr().err
    text = page.read_text()
    assert "one input at a time" in text and text.count("<svg") >= 1


# -- 6. secrets and spreadsheets ---------------------------------------------------------------

def test_forecast_tsv_escapes_names_a_spreadsheet_would_run(tmp_path, capsys):
    names = ["=1+2", "+x", "-y", "@z"]
    path = tmp_path / "runs.csv"
    path.write_text("run,step,loss\n" + "".join(
        f'"{name}",{s},{2 + (5 + i) / s ** 0.5}\n' for i, name in enumerate(names)
        for s in range(10, 210, 10)))
    assert main(["forecast", str(path), "--to", "400", "--format", "tsv"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.strip().splitlines()]
    assert sorted(row[0] for row in rows[1:]) == sorted("'" + name for name in names)
    assert all(not cell.startswith(("=", "+", "@")) for row in rows for cell in row)


def test_tsv_cells_escape_formulas_but_keep_numbers():
    from scalekit.report import render_tables

    text = render_tables([{"columns": ["run", "=sum"], "rows": [["-cmd|x", -0.5],
                                                               ["@a\tb", 3.0]]}], "tsv")
    assert text.splitlines() == ["run\t'=sum", "'-cmd|x\t-0.5", "'@a b\t3.0"]


# -- 7. what a first-time user meets -----------------------------------------------------------

def test_isoflop_reads_its_published_file_with_a_comment_line(published_data, capsys):
    path = published_data / "next_pixel_isoflop.csv"
    assert path.read_text().startswith("#")
    assert main(["isoflop", str(path), "--bootstrap", "0"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    verdict = " ".join(line for line in out.splitlines() if line.startswith("verdict"))
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warnings and f"{len(warnings)} further warning" in " ".join(out.split())
    assert "verdict:" in verdict



@pytest.mark.parametrize("fit_on, words", [("cos", "at least two"), ("cos,,const", "empty"),
                                           ("cos,cos", "each run once")])
def test_multipower_fit_on_names_two_runs_once_each(tmp_path, capsys, fit_on, words):
    from multipower_runs import schedule_runs

    runs = schedule_runs(tmp_path, {"cos": "cosine:warmup=100,peak=1e-3,final=1e-4,total=3000",
                                    "const": "constant:warmup=100,peak=1e-3,total=3000"},
                         (2.0, 0.6, 0.5, 300.0, 2.0, 0.6, 0.6))
    line = _one_error_line(main(["forecast", *runs, "--method", "multipower", "--fit-on", fit_on,
                                 "--evaluate"]), capsys.readouterr().err)
    assert "--fit-on" in line and words in line


def test_isoflop_drop_top_gives_the_exponent_fit_drop_top_gives(published_data, tmp_path):
    """Approach 3 is the Chinchilla law fitted to the points: with the five highest losses
    dropped it must give fit --drop-top 5's a = beta / (alpha + beta) (0.514, not 0.565)."""
    import json

    path = published_data / "chinchilla_epoch_svg.csv"
    iso, fit = tmp_path / "iso.json", tmp_path / "fit.json"
    assert main(["isoflop", str(path), "--approach", "3", "--bootstrap", "0", "--drop-top", "5",
                 "-q", "--json", str(iso)]) == 0
    assert main(["fit", str(path), "--drop-top", "5", "--bootstrap", "0", "-q", "--json",
                 str(fit)]) == 0
    values = {k: p["value"] for k, p in json.loads(fit.read_text())["params"].items()}
    a = json.loads(iso.read_text())["approaches"]["3 parametric law"]["a"]["value"]
    assert a == pytest.approx(values["beta"] / (values["alpha"] + values["beta"]), abs=2e-3)
    assert a == pytest.approx(0.514, abs=0.005)


def test_isoflop_metric_given_twice_is_refused(published_data, capsys):
    line = _one_error_line(main(["isoflop", str(published_data / "chinchilla_epoch_svg.csv"),
                                 "--metric", "loss", "--metric", "loss"]),
                           capsys.readouterr().err)
    assert "--metric" in line and "different metric" in line


def test_a_negative_unique_token_count_is_refused(tmp_path, capsys):
    runs = _data_constrained_runs(tmp_path / "runs.csv")
    lines = runs.read_text().splitlines()
    cells = lines[1].split(",")
    cells[2] = "-" + cells[2]
    runs.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    line = _one_error_line(main(["plan", str(runs), "--law", "data_constrained", "--compute",
                                 "1e21", "--unique-tokens", "1e9", "--bootstrap", "0"]),
                           capsys.readouterr().err)
    assert "unique_tokens" in line and "not positive" in line and ":2" in line


def test_design_interrupted_after_its_json_says_the_json_was_written(tmp_path, capsys,
                                                                     monkeypatch):
    import scalekit.report

    def interrupted(*args, **kwargs):                 # Ctrl-C while the figure is drawn
        raise KeyboardInterrupt

    monkeypatch.setattr(scalekit.report, "plot_design", interrupted)
    target, out = tmp_path / "target.csv", tmp_path / "design.json"
    target.write_text("params,tokens\n1e10,2e11\n")
    code = main(["design", "--law", "chinchilla", "--budget", "5%", "--grid",
                 "N=1e7:1e9:4,D=1e9:1e11:4", "--target", str(target), "-q", "--json", str(out),
                 "--html", str(tmp_path / "design.html")])
    err = capsys.readouterr().err
    assert code == 130 and "nothing was written" not in err
    assert f"{out} was written whole" in err and out.stat().st_size > 0


def test_ray_address_without_the_ray_executor_is_refused(tmp_path, capsys):
    line = _one_error_line(main(["train", "teacher_student", "--store", str(tmp_path / "s.db"),
                                 "--ray-address", "10.0.0.1:6379"]), capsys.readouterr().err)
    assert "--ray-address goes with --executor ray" in line
    assert not (tmp_path / "s.db").exists()


def test_words_a_reader_meets():
    from scalekit.design import DesignResult
    from scalekit.diagnostics import Diagnostic
    from scalekit.fit._plan_report import PlanReport

    assert "an ensemble design" in DesignResult._summary_title(
        type("R", (), {"replay": False, "method": "ensemble", "law": {"name": "chinchilla"}})())
    one = [Diagnostic("extrapolation", "warning", "far")]
    assert PlanReport.verdict(type("P", (), {"diagnostics": one})()).startswith(
        "verdict: 1 warning (")


def test_a_forecast_whose_bands_coincide_says_they_are_no_intervals(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("run,step,loss\n" + "".join(f"only,{s},{2 + 5 / s ** 0.5}\n"
                                                for s in range(10, 210, 10)))
    assert main(["forecast", str(path), "--to", "400"]) == 0
    err = capsys.readouterr().err
    assert "warning: run 'only': the 80% and 95% bands at the target coincide" in err
    assert "note: warning" not in err


def test_allocate_replay_names_its_winner_and_gives_the_reference_no_regret(tmp_path, capsys):
    import json

    sample = Path(__file__).resolve().parents[2] / "data" / "sample_curves.csv"
    out, page = tmp_path / "replay.json", tmp_path / "replay.html"
    assert main(["allocate", "replay", "--curves", str(sample), "--budget", "10%", "--seeds",
                 "2", "--json", str(out), "--html", str(page)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    averages = json.loads(out.read_text())["averages"]
    policies = [row for row in averages if row["policy"] != "exhaustive"]
    best = min(policies, key=lambda row: row["best_loss"])
    assert f"winner: budget 0.1: policy '{best['policy']}' reaches the lowest loss" in printed
    (reference,) = [row for row in averages if row["policy"] == "exhaustive"]
    assert reference["regret"] is None                   # not -0.04: it spent the whole sweep
    headline = page.read_text().split("<h1>", 1)[1].split("</h1>", 1)[0]
    assert "exhaustive" not in headline and best["policy"] in headline


def test_a_design_figure_of_a_huge_pool_stays_small(tmp_path):
    import pandas as pd

    from scalekit.report import plot_design

    rng = np.random.default_rng(1)
    pool = pd.DataFrame({"params": 10 ** rng.uniform(7, 9, 200_000),
                         "tokens": 10 ** rng.uniform(9, 11, 200_000)})
    target = pd.DataFrame({"params": [1e10], "tokens": [2e11]})
    result = {"law": {"inputs": ["params", "tokens"]}, "chosen": [{"row": 5}, {"row": 7}],
              "method": "ensemble", "spent": 0.01}
    path = tmp_path / "design.svg"
    ax = plot_design(result, pool, target, path=path)
    assert path.stat().st_size < 1_000_000            # the old figure: every dot, ~60 MB
    labels = ax.get_legend_handles_labels()[1]
    assert "candidates (2,000 of 200,000 drawn at random)" in labels


def test_machine_formats_carry_numbers_not_formatted_intervals(published_data, capsys):
    import json

    assert main(["isoflop", str(published_data / "chinchilla_epoch_svg.csv"), "--approach", "2",
                 "--bootstrap", "20", "--format", "json"]) == 0
    (first, *_) = json.loads(capsys.readouterr().out)
    assert first["columns"][:4] == ["approach", "a", "a low [95%]", "a high [95%]"]
    for row in first["rows"]:
        assert all(isinstance(cell, float) for cell in row[1:])
        assert row[2] < row[1] < row[3]
    assert main(["isoflop", str(published_data / "chinchilla_epoch_svg.csv"), "--approach", "2",
                 "--bootstrap", "20"]) == 0
    assert "[" in capsys.readouterr().out          # the table still shows value [low, high]


def test_schedule_search_prints_each_spec_whole(tmp_path, capsys):
    import json

    (tmp_path / "mp.json").write_text(MULTIPOWER_FIT)
    out = tmp_path / "search.json"
    assert main(["plan", "--schedule-search", "--from", str(tmp_path / "mp.json"),
                 "--total-steps", "3000", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    report = json.loads(out.read_text())
    assert f"best: {report['best']}" in lines and f"cosine: {report['baseline']}" in lines


def test_report_draws_the_law_task_and_schedule_search_json(published_data, tmp_path):
    import json

    folder = published_data / "olmo_ladder"
    task, search = tmp_path / "task.json", tmp_path / "search.json"
    assert main(["law", "task", *map(str, sorted(folder.glob("*xC.csv"))), "--runs",
                 str(folder / "final.json"), "--predict", "N=6.89e9,D=3.95e12", "--task",
                 "piqa_val_5shot", "--bootstrap", "0", "-q", "--json", str(task)]) == 0
    (tmp_path / "mp.json").write_text(MULTIPOWER_FIT)
    assert main(["plan", "--schedule-search", "--from", str(tmp_path / "mp.json"),
                 "--total-steps", "3000", "-q", "--json", str(search)]) == 0
    for report, words in ((task, "piqa_val_5shot"), (search, json.loads(
            search.read_text())["best"])):
        page = tmp_path / f"{report.stem}.html"
        assert main(["report", str(report), "-o", str(page)]) == 0
        assert words in page.read_text()
