"""The HTML page of a result, opened in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from multipower_runs import schedule_runs

from scalekit.allocate._synthetic import early_leader_frame
from scalekit_cli.app import main

REPO = Path(__file__).resolve().parents[2]
CHINCHILLA = REPO / "data" / "published" / "chinchilla_epoch_svg.csv"
LADDER = REPO / "data" / "published" / "olmo_ladder"


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def _browse(page: Path, *flags: str) -> subprocess.CompletedProcess:
    return _browse_all([page], *flags)[0]


def _browse_all(pages, *flags: str) -> list[subprocess.CompletedProcess]:
    """Open each page in its own headless chromium, all at once (each takes ~2 s to start)."""
    command = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--enable-logging=stderr", "--v=0", *flags]
    running = [(page, subprocess.Popen([*command, f"--user-data-dir={page}.profile",
                                        page.as_uri()], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, cwd=page.parent))
               for page in pages]
    done = []
    for _page, process in running:
        out, err = process.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def _curves(folder: Path) -> str:
    steps = np.arange(1, 31) * 50.0
    rows = [{"run": f"r{i}", "step": int(s), "loss": e + a * (s / 50) ** -0.5}
            for i, (e, a) in enumerate(((2.0, 5.0), (2.2, 4.0))) for s in steps]
    path = folder / "curves.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _sweep(folder: Path) -> str:
    path = folder / "sweep.csv"
    early_leader_frame(seed=0, sizes=4, variants=2, points=30).to_csv(path, index=False)
    return str(path)


def _measured(folder: Path, name: str, column: str, grid, values) -> str:
    """Errors of the named law on ``grid`` (a law command's input, known truth)."""
    from scalekit.laws import get_law

    path = folder / f"{name}.csv"
    pd.DataFrame({column: grid, "error": get_law(name).predict({column: grid}, values)}).to_csv(
        path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Each command's page as it runs (``--html``) and from its saved JSON (``report``):
    name -> (path, figures on the page)."""
    folder = tmp_path_factory.mktemp("pages")
    chinchilla = str(CHINCHILLA)
    commands = {
        "fit": (["fit", chinchilla, "--drop-top", "5", "--target-compute", "1e22",
                 "--bootstrap", "50"], 2, 1),
        "plan": (["plan", chinchilla, "--drop-top", "5", "--compute", "1e22",
                  "--bootstrap", "0"], 1, None),
        "isoflop": (["isoflop", chinchilla, "--approach", "2", "--bootstrap", "20"], 1, 1),
        "forecast": (["forecast", _curves(folder), "--to", "6000", "--method", "pow3"], 1, 1),
        "allocate replay": (["allocate", "replay", "--budget", "20%", "--curves", _sweep(folder),
                             "--policy", "loss", "--seeds", "1"], 1, 1),
        "forecast --evaluate": (["forecast", _curves(folder), "--evaluate", "--method", "pow3"],
                                1, 1),
        "law depth": (["law", "depth", str(REPO / "data" / "published" / "chinchilla_depth_width.csv"),
                       "--keep-lowest", "203", "--plan", "params=1e9,tokens=2e10"], 1, 0),
        "law classes": (["law", "classes", _measured(folder, "class_count", "classes",
                                                     2.0 ** np.arange(1, 9), {"c": 0.01, "gamma": 0.8}),
                         "--plan", "classes=64"], 1, 1),
        "law inference-k": (["law", "inference-k", _measured(
            folder, "inference_k", "k", 2.0 ** np.arange(9),
            {"E": 0.05, "A": 0.6, "a": 1.2, "B": 0.3, "b": 0.4}), "--plan", "cost=0.0001"], 1, 1),
        "allocate plan": (["allocate", "plan", "--budget", "1e20", "--curves", _sweep(folder)],
                          0, None),
        "allocate run": (["allocate", "run", "synthetic", "--budget", "3e18", "--store",
                          str(folder / "run.db")], 0, None),
        "law task": (["law", "task", *map(str, sorted(LADDER.glob("*xC.csv"))), "--runs",
                      str(LADDER / "final.json"), "--predict", "N=6.89e9,D=3.95e12", "--task",
                      "piqa_val_5shot", "--bootstrap", "20"], 1, None),
        "forecast --method multipower": (["forecast", *schedule_runs(folder), "--method",
                                          "multipower", "--fit-on", "cos,const", "--evaluate"],
                                         1, None),
        "design": (["design", "--law", "chinchilla", "--grid", "N=1e7:1e9:4,D=1e8:1e10:4",
                    "--target-compute", "1e21", "--budget", "1e18", "--batch", "3",
                    "--method", "v_optimal"], 1, None),
    }
    out = {}
    for name, (args, figures, saved_figures) in commands.items():
        page, saved = folder / f"{name.replace(' ', '_')}.html", folder / f"{name}.json"
        assert main([*args, "--quiet", "--html", str(page), "--json", str(saved)]) == 0, name
        out[name] = (page, figures)
        if saved_figures is not None:
            again = folder / f"{name.replace(' ', '_')}_saved.html"
            assert main(["report", str(saved), "-o", str(again)]) == 0, name
            out[f"{name} (report)"] = (again, saved_figures)
    search = folder / "schedule_search.html"         # from the multi-power fit saved above
    assert main(["plan", "--schedule-search", "--from", str(folder / "forecast --method "
                 "multipower.json"), "--total-steps", "3000", "--quiet", "--html",
                 str(search)]) == 0
    out["plan --schedule-search"] = (search, 1)
    return out


def test_every_page_opens_with_the_answer_and_holds_its_figures_and_tables(pages):
    assert len(pages) == 23
    for name, (page, figures) in pages.items():
        text = page.read_text()
        assert text.count("<svg") == figures == text.count("<figure>"), name
        answer = text.index("class='answer'")
        assert answer < text.index("<figure>" if figures else "<table>") <= text.index("<table>"), name
        assert not re.search(r"<(script|link|img)\b", text), name  # self-contained


def test_the_allocation_and_task_pages_open_with_their_answer(pages):
    def answer(name):
        text = pages[name][0].read_text()
        return text[text.index("class='answer'"):text.index("</section>")]

    assert "phase 0: probe" in answer("allocate plan")  # what to run next comes first
    assert "budget (FLOPs): 3.000e+18" in answer("allocate run")
    assert "piqa_val_5shot" in pages["law task"][0].read_text()


def test_the_fit_page_says_the_law_then_the_plan(pages):
    text = pages["fit"][0].read_text()
    assert text.index("L(N, D) = 1.8") < text.index("Plan at 1.000e+22 FLOPs") < \
        text.index("<figure>")
    assert "L(N, D) = 1.8" in pages["fit (report)"][0].read_text()


def test_the_law_and_evaluation_pages_say_the_law_its_plan_and_the_best_method(pages):
    for name in ("law depth", "law classes", "law classes (report)", "law inference-k"):
        text = pages[name][0].read_text()
        answer = text[text.index("class='answer'"):text.index("</section>")]
        assert "= " in answer and answer.count("<p>") >= 3, name     # the law, then its plan
    classes = pages["law classes"][0].read_text()
    assert "degrees" in classes[:classes.index("</section>")]
    evaluation = pages["forecast --evaluate"][0].read_text()
    assert "pow3: the lowest |log error| of the final value" in evaluation


def test_every_page_loads_in_chromium_with_no_console_error_and_every_figure(pages):
    runs = _browse_all([page for page, _ in pages.values()], "--dump-dom")
    for (name, (_page, figures)), run in zip(pages.items(), runs, strict=True):
        assert run.returncode == 0, run.stderr[-500:]
        assert _console(run.stderr) == [], name
        assert run.stdout.count("<svg") == figures and "class=\"answer\"" in run.stdout, name


def test_the_console_check_sees_a_script_error(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>notDefined()</script></body></html>")
    assert any("Uncaught ReferenceError" in line for line in _console(_browse(page, "--dump-dom").stderr))


def test_a_screenshot_of_the_page_is_not_blank(pages):
    from matplotlib.image import imread

    page = pages["fit"][0]
    shot = page.with_suffix(".png")
    run = _browse(page, f"--screenshot={shot}", "--window-size=1200,1600")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-500:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1200)
    ink = np.any(pixels < 0.9, axis=-1).mean()       # share of pixels that are not near-white
    assert ink > 0.03 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
