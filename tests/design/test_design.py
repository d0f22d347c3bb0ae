"""`scalekit.design`: on a pool drawn from a known law the design's runs predict the target
better than random runs of the same budget; a replay sees a loss only once its run is
chosen; the result's JSON round trip; the command's refusals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scalekit_cli.app import main

from scalekit import serialise
from scalekit.design import DesignResult, Pool, grid_pool, propose, replay
from scalekit.design._pool import cost_values
from scalekit.laws import get_law

TRUTH = {"E": 1.8, "A": 400.0, "alpha": 0.34, "B": 2000.0, "beta": 0.37}
TARGET = pd.DataFrame({"params": [5e9, 1e10, 2e10], "tokens": [1e11, 2e11, 4e11]})


def chinchilla(n, d):
    return TRUTH["E"] + TRUTH["A"] * n ** -TRUTH["alpha"] + TRUTH["B"] * d ** -TRUTH["beta"]


def known_pool(noise=0.005, size=7, seed=0) -> Pool:
    frame = grid_pool(f"N=1e7:1e9:{size},D=1e8:1e10:{size}")
    rng = np.random.default_rng(seed)
    frame["loss"] = chinchilla(frame.params, frame.tokens) * np.exp(rng.normal(0, noise, len(frame)))
    return Pool.from_frame(frame, y="loss")


def target_error(result: DesignResult) -> float:
    """Mean absolute log error of the design's predictions at the target against the truth."""
    prediction = np.array([p["prediction"] for p in result.predictions])
    return float(np.abs(np.log(prediction / chinchilla(TARGET.params, TARGET.tokens))).mean())


@pytest.mark.slow
def test_designed_runs_predict_the_target_better_than_random_runs_of_the_same_budget():
    law, pool = get_law("chinchilla"), known_pool(size=10)
    budget = 0.05 * pool.cost.sum()
    random = [target_error(replay(law, pool, TARGET, budget=budget, method="random", seed=s))
              for s in range(4)]
    designed = replay(law, pool, TARGET, budget=budget, method="v_optimal", seed=0)
    assert designed.plan_cost <= budget
    # the target lies 10-100x beyond the pool's compute; random runs of the same budget
    # err by 0.34-1.4% there, the designed ones by 0.09% (0.03% with Huber at delta 1e-3,
    # the default before the leave-one-task-out choice of a threshold set from the noise)
    assert target_error(designed) < 0.3 * min(random), random


@pytest.mark.slow
def test_a_replay_reveals_only_the_losses_of_the_runs_it_chose():
    law, pool = get_law("chinchilla"), known_pool(size=7)
    first = replay(law, pool, TARGET, budget=0.04 * pool.cost.sum(), method="v_optimal", seed=1)
    chosen = [c["row"] for c in first.chosen]
    hidden = np.setdiff1d(np.arange(len(pool)), chosen)
    assert len(hidden) >= 10
    scrambled = pool.loss.copy()
    scrambled[hidden] = 50.0 + np.arange(len(hidden))       # nothing a law of this pool gives
    again = replay(law, Pool(pool.frame, pool.cost, scrambled), TARGET,
                   budget=0.04 * pool.cost.sum(), method="v_optimal", seed=1)
    assert [c["row"] for c in again.chosen] == chosen
    assert [c["loss"] for c in again.chosen] == [float(pool.loss[r]) for r in chosen]
    assert again.predictions == first.predictions
    assert first.spent == pytest.approx(pool.cost[chosen].sum() / pool.cost.sum())


def test_a_proposal_from_nothing_is_a_starting_design_and_then_each_run_says_why():
    law, pool = get_law("chinchilla"), known_pool(size=5)
    start = propose(law, pool, TARGET, budget=pool.cost.sum(), batch=4, method="v_optimal")
    assert len(start.chosen) == 4 and not start.predictions
    assert [d.code for d in start.diagnostics] == ["few_points"]
    assert all("starting design" in c["reason"] for c in start.chosen)
    seen = pool.frame.iloc[:12]
    budget = 3 * float(np.median(pool.cost))
    nxt = propose(law, pool, TARGET, budget=budget, batch=3, method="v_optimal",
                  observed=(seen, pool.loss[:12]))
    assert 1 <= len(nxt.chosen) <= 3 and nxt.plan_cost <= budget
    shares = [c["variance_reduction"] for c in nxt.chosen]
    assert all(0 < s <= 1 for s in shares)
    assert len(nxt.predictions) == len(TARGET)
    for p in nxt.predictions:
        assert p["interval"][0] < p["prediction"] < p["interval"][1]


@pytest.mark.slow
def test_with_no_more_runs_than_parameters_the_answer_is_a_marked_prior_fit():
    # five runs (the corners and the centre of a 5 x 5 grid) for the five parameters of
    # Chinchilla: the engine refuses a least-squares fit; the design answers with the most
    # probable law under the weak prior, says so, predicts the target from its five runs
    # and states no interval (no degrees of freedom are left for the noise)
    law, pool = get_law("chinchilla"), known_pool(size=5)
    rows = [0, 4, 12, 20, 24]
    result = propose(law, pool, TARGET, budget=pool.cost.sum(), batch=1, method="v_optimal",
                     observed=(pool.frame.iloc[rows], pool.loss[rows]))
    assert result.diagnostics[0].code == "prior_fit"
    assert target_error(result) < 0.05
    assert all(p["interval"] is None for p in result.predictions)
    assert any(d.code == "few_points" and "observe 1 more distinct run " in d.message
               for d in result.diagnostics)


def test_the_result_survives_its_json_round_trip():
    law, pool = get_law("chinchilla"), known_pool(size=4)
    result = replay(law, pool, TARGET, budget=0.1 * pool.cost.sum(), method="cost_random")
    text = serialise.dumps(result.to_dict())
    back = DesignResult.from_dict(json.loads(text))
    assert back.to_dict() == json.loads(text)
    assert "Answer" in result.summary().splitlines()[1] and repr(result).startswith("DesignResult(")


def test_costs_from_a_column_an_expression_or_six_n_d():
    frame = pd.DataFrame({"params": [1e8, 2e8], "tokens": [1e9, 3e9], "flops": [7.0, 9.0]})
    assert cost_values(frame, None) == pytest.approx([6e17, 3.6e18])
    assert cost_values(frame, "6*N*D") == pytest.approx([6e17, 3.6e18])
    assert cost_values(frame, "flops").tolist() == [7.0, 9.0]


@pytest.mark.parametrize("args, needle", [
    (["--budget", "5%"], "--target"),
    (["--target-compute", "1e21", "--budget", "0"], "--budget"),
    (["--target-compute", "1e21", "--budget", "5%", "--grid", "N=1:2"], "--pool"),
    (["--target-compute", "1e21", "--budget", "5%", "--replay", "--y", "nope"], "--y"),
    (["--target-compute", "1e21", "--budget", "5%", "--json", "out.txt"], "--json"),
])
def test_the_command_refuses_bad_input_with_exit_2_and_writes_nothing(tmp_path, capsys, args,
                                                                      needle):
    pool = tmp_path / "pool.csv"
    known_pool(size=3).frame.to_csv(pool, index=False)
    out = tmp_path / "plan.json"
    args = [a.replace("out.txt", str(tmp_path / "out.txt")) for a in args]
    code = main(["design", "--law", "chinchilla", "--pool", str(pool), *args,
                 *([] if "--json" in args else ["--json", str(out)])])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0] and len(err[0]) <= 200
    assert not out.exists()


def test_a_replay_from_the_command_writes_chosen_spent_and_predictions(tmp_path, capsys):
    pool, target = tmp_path / "pool.csv", tmp_path / "target.csv"
    known_pool(size=5).frame.to_csv(pool, index=False)
    TARGET.to_csv(target, index=False)
    out = tmp_path / "replay.json"
    code = main(["design", "--law", "chinchilla", "--pool", str(pool), "--target", str(target),
                 "--budget", "5%", "--replay", "--method", "cheapest", "--json", str(out),
                 "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["format"] == "scalekit.design/1"
    costs = [c["cost"] for c in report["chosen"]]
    assert costs == sorted(costs)                  # cheapest first
    assert 0 < report["spent"] <= 0.05
    assert [set(p) for p in report["predictions"]] == [{"inputs", "prediction", "interval"}] * 3


def test_design_from_a_store_proposes_new_runs_within_the_budget(tmp_path, capsys):
    runs = grid_pool("N=1e7:1e9:6,D=1e8:1e10:6").iloc[[0, 1, 2, 6, 7, 8, 12, 13]]
    runs = runs.assign(run=[f"r{k}" for k in range(len(runs))], step=1000)
    runs["loss"] = chinchilla(runs.params, runs.tokens)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    store = tmp_path / "runs.db"
    assert main(["store", "import", str(tmp_path / "runs.csv"), "--store", str(store)]) == 0
    out = tmp_path / "plan.json"
    code = main(["design", "--law", "chinchilla", "--grid", "N=1e7:1e9:6,D=1e8:1e10:6",
                 "--target-compute", "1e21", "--budget", "1e18", "--store", str(store),
                 "--batch", "3", "--method", "v_optimal", "--json", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    proposed = {(c["inputs"]["params"], c["inputs"]["tokens"]) for c in report["chosen"]}
    observed = set(zip(runs.params, runs.tokens, strict=True))
    assert len(report["chosen"]) == 3 and not proposed & observed
    assert report["plan_cost"] == pytest.approx(sum(c["cost"] for c in report["chosen"]))
    assert report["plan_cost"] <= 1e18 and len(report["predictions"]) == 9


@pytest.mark.slow
def test_one_round_design_train_design_from_an_empty_store(tmp_path, capsys):
    """The plan's settings are what `scalekit train` needs to run exactly the proposed run:
    trained, it lands in the store with the proposal's N and D and is not proposed again."""
    from scalekit.curves import CurveStore
    from scalekit.fit._frame import last_points
    from scalekit.train._models import MLP, count_parameters

    rows = [{"params": count_parameters(MLP(32, 1, width=w, depth=1))["params"],
             "tokens": 64 * s, "width": w, "depth": 1, "steps": s}
            for w in (4, 8) for s in (10, 20)]
    pd.DataFrame(rows).to_csv(tmp_path / "pool.csv", index=False)
    pd.DataFrame([{"params": 5000, "tokens": 64 * 200}]).to_csv(tmp_path / "target.csv",
                                                                 index=False)
    store = tmp_path / "loop.db"
    CurveStore(store).close()
    design = ["design", "--law", "chinchilla", "--pool", str(tmp_path / "pool.csv"), "--target",
              str(tmp_path / "target.csv"), "--budget", "100%", "--store", str(store),
              "--batch", "2", "--quiet", "--json"]
    assert main([*design, str(tmp_path / "plan0.json")]) == 0, capsys.readouterr().err
    first = json.loads((tmp_path / "plan0.json").read_text())["chosen"]
    assert len(first) == 2 and all("starting design" in c["reason"] for c in first)
    run = first[0]["settings"]
    assert main(["train", "teacher_student", "--widths", str(run["width"]), "--depths",
                 str(run["depth"]), "--steps", str(run["steps"]), "--evals", "2",
                 "--store", str(store), "--quiet"]) == 0
    with CurveStore(store) as opened:
        trained = last_points(opened.curves(metric="loss").frame)
    assert len(trained) == 1
    assert trained.params.iloc[0] == first[0]["inputs"]["params"]
    assert trained.tokens.iloc[0] == first[0]["inputs"]["tokens"]
    assert main([*design, str(tmp_path / "plan1.json")]) == 0
    again = json.loads((tmp_path / "plan1.json").read_text())["chosen"]
    assert first[0]["row"] not in [c["row"] for c in again] and len(again) == 2
