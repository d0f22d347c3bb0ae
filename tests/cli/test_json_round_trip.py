"""Every analysis command's ``--json`` is its result's ``to_dict()`` in the report envelope: it
reads back with the result class's ``from_dict``, and the result's ``to_frame()`` is its table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalekit.allocate._next_actions import Plan
from scalekit.allocate._runner import AllocationRunResult
from scalekit.design._result import DesignResult
from scalekit.allocate._replay import ReplayResult
from scalekit.allocate._synthetic import early_leader_frame
from scalekit.fit import FitResult
from scalekit.fit._plan_report import PlanReport
from scalekit.isoflop._analysis import IsoFLOPReport
from scalekit.laws import get_law
from scalekit.planners._cot import TreePlan
from scalekit.planners._data_constrained import DataConstrainedPlan
from scalekit.planners._inference_k import SampleSimulation, SamplesPlan
from scalekit.planners._task_law import TaskLawResult
from scalekit.serialise import dumps
from scalekit.surrogates._forecast import Forecast
from scalekit.surrogates._schedule_forecast import ScheduleForecast
from scalekit.surrogates._schedule_search import ScheduleSearch
from scalekit.surrogates._scores import ForecastScores
from scalekit.train import SweepResult
from multipower_runs import SCHEDULES, schedule_runs
from scalekit_cli.app import main

PUBLISHED = Path(__file__).resolve().parents[2] / "data" / "published"
CHINCHILLA = str(PUBLISHED / "chinchilla_epoch_svg.csv")
LADDER = PUBLISHED / "olmo_ladder"


def _curves(tmp_path) -> str:
    steps = np.arange(1, 31) * 50.0
    rows = [{"run": f"r{i}", "step": int(s), "loss": e + a * (s / 50) ** -0.5}
            for i, (e, a) in enumerate(((2.0, 5.0), (2.2, 4.0))) for s in steps]
    path = tmp_path / "curves.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _sweep(tmp_path) -> str:
    path = tmp_path / "sweep.csv"
    early_leader_frame(seed=0, sizes=4, variants=2, points=30).to_csv(path, index=False)
    return str(path)


def _measured(tmp_path, law, column, grid, values) -> str:
    """A CSV of the law's values on ``grid`` (an error column to fit)."""
    path = tmp_path / f"{law}.csv"
    error = get_law(law).predict({column: grid}, values)
    pd.DataFrame({column: grid, "error": error}).to_csv(path, index=False)
    return str(path)


def _classes(tmp_path) -> str:
    return _measured(tmp_path, "class_count", "classes", np.array([2, 4, 8, 16, 32, 64, 128, 256]),
                     {"c": 0.01, "gamma": 0.8})


def _samples(tmp_path) -> str:
    return _measured(tmp_path, "inference_k", "k", 2.0 ** np.arange(9),
                     {"E": 0.05, "A": 0.6, "a": 1.2, "B": 0.3, "b": 0.4})


def _multipower_fit(tmp_path) -> str:
    out = tmp_path / "multipower.json"
    assert main(["forecast", *schedule_runs(tmp_path), "--method", "multipower", "--fit-on",
                 "cos,const,two", "--json", str(out), "--quiet",
                 "--predict-schedule", SCHEDULES["cos"]]) == 0
    return str(out)


def _constrained(tmp_path) -> str:
    rng = np.random.default_rng(0)
    n, u = 10 ** rng.uniform(7, 9.5, 60), 10 ** rng.uniform(8, 10, 60)
    d = u * 10 ** rng.uniform(-0.3, 2.2, 60)
    truth = {"E": 1.87, "A": 521.0, "B": 1488.0, "alpha": 0.353, "beta": 0.353,
             "rstar_d": 15.39, "rstar_n": 5.31}
    loss = get_law("data_constrained").predict({"params": n, "tokens": d, "unique_tokens": u},
                                               truth)
    path = tmp_path / "constrained.csv"
    pd.DataFrame({"params": n, "tokens": d, "U": u, "loss": loss}).to_csv(path, index=False)
    return str(path)


# (command line, result class, where its dict sits in the report, to_frame's first columns)
CASES = {
    "fit": (lambda t: ["fit", CHINCHILLA, "--drop-top", "5", "--bootstrap", "20"],
            FitResult, None, ["parameter", "kind", "value"]),
    "plan": (lambda t: ["plan", CHINCHILLA, "--drop-top", "5", "--bootstrap", "0",
                        "--compute", "1e21,1e22"], PlanReport, None,
             ["question", "compute", "params", "tokens"]),
    "isoflop": (lambda t: ["isoflop", CHINCHILLA, "--approach", "2", "--bootstrap", "20"],
                IsoFLOPReport, None, ["approach", "quantity", "value"]),
    "forecast": (lambda t: ["forecast", _curves(t), "--to", "6000", "--method", "pow3"],
                 Forecast, None, ["run", "x"]),
    "forecast --evaluate": (lambda t: ["forecast", _curves(t), "--evaluate", "--method", "pow3"],
                            ForecastScores, None, ["method"]),
    "allocate replay": (lambda t: ["allocate", "replay", "--budget", "20%", "--curves",
                                   _sweep(t), "--policy", "loss", "--seeds", "1"],
                        ReplayResult, None, ["policy", "budget"]),
    "law depth": (lambda t: ["law", "depth", str(PUBLISHED / "chinchilla_depth_width.csv"),
                             "--keep-lowest", "203", "--bootstrap", "0"],
                  FitResult, None, ["parameter", "kind", "value"]),
    "law classes": (lambda t: ["law", "classes", _classes(t), "--bootstrap", "0"],
                    FitResult, None, ["parameter", "kind", "value"]),
    "law classes --plan": (lambda t: ["law", "classes", _classes(t), "--bootstrap", "0",
                                      "--plan", "classes=64"], TreePlan, "plan", []),
    "law inference-k": (lambda t: ["law", "inference-k", _samples(t), "--bootstrap", "0"],
                        FitResult, None, ["parameter", "kind", "value"]),
    "law inference-k --plan": (lambda t: ["law", "inference-k", _samples(t), "--bootstrap", "0",
                                          "--plan", "cost=0.0001"], SamplesPlan, "plan", []),
    "law inference-k --simulate": (lambda t: ["law", "inference-k", "--simulate", "--k-max", "8",
                                              "--n-test", "4", "--repeats", "20"],
                                   SampleSimulation, None, []),
    "allocate plan": (lambda t: ["allocate", "plan", "--budget", "1e30", "--curves", _sweep(t),
                                 "--policy", "loss"], Plan, None, []),
    "allocate run": (lambda t: ["allocate", "run", "synthetic", "--budget", "3e18", "--store",
                                str(t / "run.db")], AllocationRunResult, None, []),
    "forecast --method multipower": (lambda t: ["forecast", *schedule_runs(t), "--method",
                                                "multipower", "--fit-on", "cos,const",
                                                "--evaluate"], ScheduleForecast, None,
                                     ["schedule", "step"]),
    "plan --schedule-search": (lambda t: ["plan", "--schedule-search", "--from",
                                          _multipower_fit(t), "--total-steps", "3000"],
                               ScheduleSearch, None, ["spec"]),
    "plan --law data_constrained": (lambda t: ["plan", _constrained(t), "--law",
                                               "data_constrained", "--compute", "1e21",
                                               "--unique-tokens", "1e9", "--bootstrap", "0"],
                                    DataConstrainedPlan, "data_constrained", []),
    "law task": (lambda t: ["law", "task", *map(str, sorted(LADDER.glob("*xC.csv"))), "--runs",
                            str(LADDER / "final.json"), "--predict", "N=6.89e9,D=3.95e12",
                            "--task", "piqa_val_5shot", "--bootstrap", "0"],
                 TaskLawResult, None, ["task", "accuracy", "accuracy_low"]),
    "design": (lambda t: ["design", "--law", "chinchilla", "--grid", "N=1e7:1e9:4,D=1e8:1e10:4",
                          "--target-compute", "1e21", "--budget", "1e18", "--batch", "3",
                          "--method", "v_optimal"], DesignResult, None,
               ["order", "row", "params", "tokens", "cost"]),
    "train": (lambda t: ["train", "teacher_student", "--widths", "8,16", "--steps", "4",
                         "--evals", "2", "--eval-size", "8", "--batch-size", "4", "--store",
                         str(t / "train.db")], SweepResult, None, ["run", "width"]),
}


@pytest.mark.parametrize("command", list(CASES))
def test_the_json_of_every_command_reads_back_with_from_dict(command, tmp_path):
    args, cls, where, columns = CASES[command]
    out = tmp_path / "out.json"
    argv = args(tmp_path)
    if command == "plan":       # plan takes one budget per --compute
        argv = argv[:-1] + ["1e22"]
    assert main([*argv, "--json", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    data = report if where is None else report[where]
    result = cls.from_dict(data)
    written = json.loads(dumps(result.to_dict()))
    for key, value in written.items():          # what from_dict read, to_dict writes again
        if key not in ("diagnostics", "format"):    # the envelope's header holds these
            assert data[key] == value, key
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) >= 1
    assert list(frame.columns[:len(columns)]) == columns
