"""The HTML page of a result, opened in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from scalekit_cli.app import main

REPO = Path(__file__).resolve().parents[2]
CHINCHILLA = REPO / "data" / "published" / "chinchilla_epoch_svg.csv"


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def _browse(page: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--enable-logging=stderr", "--v=0", *flags, page.as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=page.parent)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    fit_page, saved, report_page = folder / "fit.html", folder / "fit.json", folder / "r.html"
    assert main(["fit", str(CHINCHILLA), "--drop-top", "5", "--target-compute", "1e22",
                 "--bootstrap", "50", "--quiet", "--html", str(fit_page),
                 "--json", str(saved)]) == 0
    assert main(["report", str(saved), "-o", str(report_page)]) == 0
    return fit_page, report_page


def test_the_page_opens_with_the_answer_and_holds_its_figures_and_tables(pages):
    fit_page, report_page = pages
    for page, figures in ((fit_page, 2), (report_page, 1)):
        text = page.read_text()
        assert text.count("<svg") == figures and text.count("<figure>") == figures
        answer = text.index("L(N, D) = 1.8")
        assert answer < text.index("Plan at 1.000e+22 FLOPs") < text.index("<figure>")
        assert text.index("<figure>") < text.index("<table>") < text.index("Diagnostics")
        assert not re.search(r"<(script|link|img)\b", text)    # self-contained: nothing fetched


def test_the_page_loads_in_chromium_with_no_console_error_and_every_figure(pages):
    for page in pages:
        run = _browse(page, "--dump-dom")
        assert run.returncode == 0, run.stderr[-500:]
        assert _console(run.stderr) == []
        expected = page.read_text().count("<svg")
        assert run.stdout.count("<svg") == expected and "L(N, D) = " in run.stdout


def test_the_console_check_sees_a_script_error(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>notDefined()</script></body></html>")
    assert any("Uncaught ReferenceError" in line for line in _console(_browse(page, "--dump-dom").stderr))


def test_a_screenshot_of_the_page_is_not_blank(pages):
    from matplotlib.image import imread

    shot = pages[0].with_suffix(".png")
    run = _browse(pages[0], f"--screenshot={shot}", "--window-size=1200,1600")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-500:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1200)
    ink = np.any(pixels < 0.9, axis=-1).mean()       # share of pixels that are not near-white
    assert ink > 0.03 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
