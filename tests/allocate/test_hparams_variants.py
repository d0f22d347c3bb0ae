"""``allocate run TASK --hparams FIT.json``: each width's variants are the learning rates of an
hparams fit at its N and D, and the ``commit`` allocator's guard tries them.

The fit comes from a synthetic sweep with a known optimum law (a quadratic bowl in log lr and
log batch around η* = 0.3·N^-0.5·D^0.1 and B* = 0.5·D^0.5), on cells around the N and D of a
small teacher-student width sweep, so the law's optimum there is known.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")

from scalekit.allocate import CommitPolicy, run_allocation  # noqa: E402
from scalekit.planners import HparamsFit, recommend_hparams  # noqa: E402
from scalekit.train import task_trainer  # noqa: E402
from scalekit_cli.app import main  # noqa: E402


def true_lr(n, d):
    return 0.3 * n ** -0.5 * d ** 0.1


def sweep(seed=0, noise=3e-4):
    rng = np.random.default_rng(seed)
    rows = []
    for n in (100.0, 300.0, 1000.0, 3000.0):
        for d in (2000.0, 4000.0, 8000.0):
            for lr in 2.0 ** np.arange(-10.0, -0.5):
                for b in 2.0 ** np.arange(1.0, 10.5):
                    x, z = np.log(lr / true_lr(n, d)), np.log(b / (0.5 * d ** 0.5))
                    loss = (1.0 + 30.0 / n ** 0.4 + 20.0 / d ** 0.3 + 0.02 * x * x
                            + 0.01 * z * z + rng.normal(0.0, noise))
                    rows.append({"params": n, "tokens": d, "lr": lr, "batch": b, "loss": loss})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def fit_json(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hparams")
    sweep().to_csv(folder / "sweep.csv", index=False)
    path = folder / "fit.json"
    assert main(["law", "hparams", str(folder / "sweep.csv"), "--bootstrap", "30", "--json",
                 str(path), "--quiet"]) == 0
    return path


def test_guard_tries_the_fits_lr_variants_around_the_laws_optimum(fit_json, tmp_path):
    fit = HparamsFit.from_dict(json.loads(fit_json.read_text()))

    def lrs(params, tokens):
        return recommend_hparams(fit, params, tokens)[0]["lr_variants"]

    trainer = task_trainer("teacher_student", widths=(4, 8, 16, 32), steps=60,
                           store=tmp_path / "s.db", lrs=lrs)
    by_width = {}
    for config in trainer.configs:
        by_width.setdefault(config.width, []).append(config)
    assert sorted(by_width) == [4, 8, 16, 32]
    for configs in by_width.values():
        n, d = trainer.size(configs[0])
        assert d == 60 * 64  # steps · batch of one-token samples
        variants = recommend_hparams(fit, n, d)[0]["lr_variants"]
        assert tuple(c.lr for c in configs) == variants
        assert variants[0] < variants[1] < variants[2]
        assert variants[1] == pytest.approx(true_lr(n, d), rel=0.1)  # the law's optimum
        assert variants[0] < true_lr(n, d) < variants[2]
    exhaustive = sum(trainer.flops_per_step(c) * c.steps for c in trainer.configs)
    result = run_allocation(tmp_path / "s.db", "ts", trainer, CommitPolicy(),
                            budget=0.5 * exhaustive)
    guard = [d for d in result.decisions if d["action"] == "guard"]
    assert len(guard) == 1
    tried = {c.name: c for c in trainer.configs}
    configs = [tried[r] for r in guard[0]["runs"]]
    assert len({c.width for c in configs}) == 1  # the variants of one configuration
    n, d = trainer.size(configs[0])
    assert sorted(c.lr for c in configs) == list(recommend_hparams(fit, n, d)[0]["lr_variants"])


def test_cli_records_where_the_rates_came_from_and_bad_input_exits_2(fit_json, tmp_path,
                                                                     capsys):
    store, out = tmp_path / "s.db", tmp_path / "run.json"
    # a budget that trains hardly anything: the candidates and their rates are the point
    assert main(["allocate", "run", "teacher_student", "--budget", "1e6", "--store", str(store),
                 "--hparams", str(fit_json), "--json", str(out)]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # rich wraps the lines
    assert "lr_variants" in shown
    # 600 steps of 64 samples lie 4.8x beyond the fit's largest D (8000): each width says so
    assert shown.count("lies 4.8× beyond the cells' range") == 5
    report = json.loads(out.read_text())
    rates = report["learning_rates"]
    assert rates["source"] == str(fit_json) and "lr_variants" in rates["why"]
    fit = HparamsFit.from_dict(json.loads(fit_json.read_text()))
    runs = report["allocation"]["reached"]
    assert len(rates["by_size"]) == 5 and len(runs) == 15  # widths 8 … 128, three rates each
    for entry in rates["by_size"].values():
        variants = recommend_hparams(fit, entry["params"], entry["tokens"])[0]["lr_variants"]
        assert entry["lr_variants"] == pytest.approx(variants, rel=1e-12)
        assert sum(f"-lr{variants[1]:g}-" in run for run in runs) == 1

    sweep_csv, unbooted = fit_json.parent / "sweep.csv", tmp_path / "no-interval.json"
    assert main(["law", "hparams", str(sweep_csv), "--bootstrap", "0", "--json", str(unbooted),
                 "--quiet"]) == 0
    for hparams, task, said in [(tmp_path / "none.json", "teacher_student", "no such file"),
                                (sweep_csv, "teacher_student", "not a JSON file"),
                                (out, "teacher_student", "not a scalekit hparams report"),
                                (unbooted, "teacher_student", "no learning-rate law or interval"),
                                (fit_json, "synthetic", "no learning rate")]:
        fresh = tmp_path / f"fresh-{task}-{hparams.stem}.db"
        assert main(["allocate", "run", task, "--budget", "1e9", "--store", str(fresh),
                     "--hparams", str(hparams)]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and len(err.splitlines()) == 1
        assert not fresh.exists()  # nothing trained, nothing written
