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
