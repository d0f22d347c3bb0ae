"""The ScaleBench tasks of Li et al. (2026) as scalekit laws, pools and targets.

Each task's law is the first law (``sl_1``) of the paper's repository for that task
(PlanarG/active-sl, ``benchmark/dataset/<task>/laws.py``), written here as a
:func:`scalekit.laws.law_from_expression` with its inputs renamed; the cost of a run
is the paper's (``registry.py``). One rule builds every start grid (two or three
values inside each parameter's range), so no task is tuned.

Their protocol (``benchmark/runner.py``), kept here: a task whose rows carry several
``group`` values (``sparsity``: three D1/D2 settings; ``domain_mixture``: four model
sizes) is one independent design per group, each with the budget share of its own
pool and its own fit, scored by one R² over all groups' target rows together; these
two tasks are scored at 20%, 35% and 50% of the pool (``budget_checkpoints``), the
others at 1%, 5% and 10%. ``domain_mixture`` has five outputs (one law per domain,
the same six-parameter form each): every run reveals all five losses; the design
chooses its runs for the mean of the five (the same form, averaged), each output's
law is then fitted to the chosen runs, and R² is over all five outputs flattened.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from scalekit.design import Pool
from scalekit.laws import law_from_expression

ROOT = Path(__file__).resolve().parents[1] / "data" / "published" / "scalebench"

#: Their Table 2 (mean over the task's laws and 10 repeats): target R² of their method,
#: V-optimal and random at the task's low, middle and high budget (1/5/10%; 20/35/50%
#: for ``domain_mixture`` and ``sparsity``).
PAPER = {
    "farseer": ((0.60, 0.67, -0.77), (0.88, 0.87, 0.78), (0.93, 0.92, 0.79)),
    "data_constrained": ((0.73, 0.58, -0.74), (0.85, 0.83, -0.36), (0.86, 0.85, 0.12)),
    "vocab": ((0.96, 0.96, 0.54), (0.98, 0.97, 0.53), (0.98, 0.98, 0.59)),
    "lr_bsz": ((-0.66, -0.70, -0.65), (0.00, -0.06, -0.45), (0.22, 0.18, -0.33)),
    "sparsity": ((0.31, 0.12, -0.25), (0.44, 0.39, 0.37), (0.53, 0.51, 0.38)),
    "domain_mixture": ((0.64, 0.57, -0.36), (0.89, 0.91, 0.41), (0.95, 0.95, 0.70)),
}
#: Budget shares (of each group's pool cost) a task is scored at.
BUDGETS = {"sparsity": (0.20, 0.35, 0.50), "domain_mixture": (0.20, 0.35, 0.50)}
DEFAULT_BUDGETS = (0.01, 0.05, 0.10)


def positive(lo: float, hi: float) -> dict:
    """A positive parameter fitted in log, grid at the quartiles of its log range."""
    a, b = np.log(lo), np.log(hi)
    return {"lower": lo, "upper": hi, "log": True, "grid": (a + (b - a) / 4, a + 3 * (b - a) / 4)}


def signed(lo: float, hi: float, n: int = 2) -> dict:
    """A parameter of either sign, grid evenly inside its range."""
    return {"lower": lo, "upper": hi, "log": False,
            "grid": tuple(np.linspace(lo, hi, n + 2)[1:-1].tolist())}


@dataclass
class Group:
    """One independent design: its pool (losses as the design law fits them) and target."""

    pool: Pool
    target: pd.DataFrame


@dataclass
class Task:
    """``law`` chooses the runs; ``outputs`` (law, loss column) are fitted to them and
    scored; the laws fit ``sign * loss`` (> 0)."""

    name: str
    law: object
    groups: list
    outputs: list
    sign: float
    budgets: tuple

    @property
    def y_test(self) -> np.ndarray:
        """All groups' target losses, output by output within a group, flattened."""
        return np.concatenate([g.target[[y for _, y in self.outputs]].to_numpy(float).ravel()
                               for g in self.groups])


def _read(task: str, split: str) -> pd.DataFrame:
    return pd.read_parquet(ROOT / task / f"{split}.parquet")


def _task(name, law, columns, y, cost, sign=1.0, outputs=None) -> Task:
    train, test = (_read(name, s).rename(columns=columns) for s in ("train", "test"))
    train["_y"] = sign * (train[y] if isinstance(y, str) else train[y].mean(axis=1))
    groups = [Group(Pool.from_frame(train[train.group == g], cost=cost, y="_y"),
                    test[test.group == g].reset_index(drop=True))
              for g in sorted(set(test.group))]
    return Task(name, law, groups, outputs or [(law, y)], sign,
                BUDGETS.get(name, DEFAULT_BUDGETS))


def farseer() -> Task:
    law = law_from_expression(
        "exp(s*N**q + S) + exp(B*N**b + Q) * D**(-exp(A*N**a + E))", name="farseer",
        params={"E": signed(1, 6), "s": signed(-1, 0.3), "q": positive(0.01, 0.5),
                "S": signed(-1, 1), "B": positive(10, 1000), "b": signed(-0.6, -0.01),
                "Q": signed(-5, 1), "A": signed(-5, 1), "a": positive(0.001, 0.25)})
    return _task("farseer", law, {"N": "params", "D": "tokens"}, "loss", None)


def data_constrained() -> Task:
    law = law_from_expression(
        "A*N**-alpha + B*D**-beta + E*U**gamma*N**delta", inputs={"U": "unique_tokens"},
        name="data_constrained",
        params={"A": positive(1e-2, 1e6), "alpha": positive(0.01, 2), "B": positive(1e-2, 1e6),
                "beta": positive(0.01, 2), "E": positive(1e-4, 1e4),
                "gamma": signed(-1, 1), "delta": signed(-1, 1)})
    return _task("data_constrained", law, {}, "loss", None)


def vocab() -> Task:
    # loss = c0 + A V^b P^e D^g is negative: fit -loss = c - K V^b P^-e D^-g
    law = law_from_expression(
        "c - K*V**b*P**-e*T**-g", inputs={"V": "vocab_size", "P": "non_vocab_parameters",
                                         "T": "num_characters"}, name="vocab",
        params={"c": positive(0.1, 100), "K": positive(1e-2, 1e4), "b": signed(-2, 2),
                "e": positive(0.01, 2), "g": positive(0.01, 2)})
    return _task("vocab", law, {}, "unigram_normalized_loss", "non_vocab_parameters*num_characters",
                 sign=-1.0)


def lr_bsz() -> Task:
    u, v, s, n = "log(lr)", "log(bs)", "log(T)", "log(M)"
    terms = [u, v, s, n, f"{u}**2", f"{v}**2", f"{s}**2", f"{n}**2", f"{u}*{v}", f"{u}*{s}",
             f"{u}*{n}", f"{v}*{s}", f"{v}*{n}", f"{s}*{n}"]
    expression = "exp(c0 + " + " + ".join(f"c{k + 1}*{t}" for k, t in enumerate(terms)) + ")"
    params = {f"c{k}": {"log": False, "grid": (0.0,)} for k in range(1, 15)}
    params["c0"] = {"log": False, "grid": (1.0,)}
    law = law_from_expression(expression, inputs={"lr": "lr", "bs": "bsz", "T": "data_size",
                                                  "M": "non_embedding_param_size"},
                              params=params, name="lr_bsz")
    return _task("lr_bsz", law, {}, "lm_loss", "6*non_embedding_param_size*data_size")


def sparsity() -> Task:
    law = law_from_expression(
        "K*P**-a*M**-b*exp(c*log(P)*log(M)) + L", inputs={"P": "P", "M": "N_active"},
        name="sparsity",
        params={"K": positive(1e-3, 1e2), "a": positive(0.01, 3), "b": positive(0.01, 3),
                "c": signed(-1, 1), "L": positive(1e-2, 1e2)})
    return _task("sparsity", law, {}, "loss", "6*N_dense*D1 + 6*N_active*D2")


def _mixture_law(name: str, logs, linear):
    """``a + sum b_i log(p_i + 1e-12) + sum c_j p_j`` over the named domains (their
    sl_1 per domain; the 1e-12 is theirs, a domain may be absent from a mixture)."""
    expression = " + ".join(["a"] + [f"b{i}*log(p{i} + 1e-12)" for i in logs]
                            + [f"c{j}*p{j}" for j in linear])
    params = {"a": signed(-3, 6)}
    params.update({f"b{i}": signed(-5, 5) for i in logs})
    params.update({f"c{j}": {"lower": -10, "upper": 10, "log": False, "grid": (0.0,)}
                   for j in linear})
    return law_from_expression(expression, name=name, params=params,
                               inputs={f"p{k}": f"proportion_domain_{k}" for k in range(1, 6)})


def domain_mixture() -> Task:
    domains = range(1, 6)
    outputs = [(_mixture_law(f"domain_{i}", [i], [j for j in domains if j != i]),
                f"loss_domain_{i}") for i in domains]
    # the mean of the five: every log term, and p_1..p_4 (sum p = 1 absorbs p_5 into a)
    design = _mixture_law("domain_mean", list(domains), list(domains)[:-1])
    return _task("domain_mixture", design, {}, [y for _, y in outputs], "1", outputs=outputs)


TASKS = {"farseer": farseer, "data_constrained": data_constrained, "vocab": vocab,
         "lr_bsz": lr_bsz, "sparsity": sparsity, "domain_mixture": domain_mixture}


def r2(y: np.ndarray, prediction: np.ndarray) -> float:
    """R² on the target rows clipped to [-1, 1] (ScaleBench's metric; -1 when there is
    no finite prediction)."""
    if len(prediction) != len(y) or not np.isfinite(prediction).all():
        return -1.0
    total = float(((y - y.mean()) ** 2).sum())
    residual = float(((y - prediction) ** 2).sum())
    if total < 1e-30:
        return 1.0 if residual < 1e-30 else -1.0
    return float(np.clip(1.0 - residual / total, -1.0, 1.0))
