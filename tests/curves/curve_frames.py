"""Hypothesis strategies for random tidy curve frames, and store-file hashing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import strategies as st

NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
               min_size=1, max_size=12)
POSITIVE = st.floats(min_value=1e-100, max_value=1e100, allow_nan=False, allow_infinity=False)
FLOAT32 = st.floats(min_value=2.0 ** -100, max_value=2.0 ** 100, width=32)


@st.composite
def tidy_frames(draw, *, optional: bool = True, values=POSITIVE, max_runs: int = 4,
                max_steps: int = 6) -> pd.DataFrame:
    """A valid tidy frame: runs with increasing steps, non-decreasing compute, run-level params.

    With ``optional`` the columns compute, tokens, params, depth and seed are each
    present or not; otherwise only run, step and loss.
    """
    names = draw(st.lists(NAME, min_size=1, max_size=max_runs, unique=True))
    # sizes within 2^+-100, so that tokens derived as C / (6 N) stay below the readers' 1e100
    sizes = values.map(lambda v: min(max(v, 2.0 ** -100), 2.0 ** 100))
    present = {c: (draw(st.booleans()) if optional else False)
               for c in ("compute", "tokens", "params", "depth", "seed")}
    rows = []
    for name in names:
        steps = sorted(draw(st.sets(st.integers(0, 10 ** 9), min_size=1, max_size=max_steps)))
        losses = draw(st.lists(values, min_size=len(steps), max_size=len(steps)))
        compute = sorted(draw(st.lists(sizes, min_size=len(steps), max_size=len(steps))))
        tokens = draw(st.lists(sizes, min_size=len(steps), max_size=len(steps)))
        params = draw(sizes)
        depth = draw(st.integers(1, 1000))
        seed = draw(st.integers(0, 2 ** 31))
        for i, step in enumerate(steps):
            row = {"run": name, "step": step, "loss": losses[i]}
            row.update({"compute": compute[i], "tokens": tokens[i], "params": params,
                        "depth": depth, "seed": seed})
            rows.append({k: v for k, v in row.items() if k in ("run", "step", "loss")
                         or present[k]})
    frame = pd.DataFrame(rows)
    frame["step"] = frame["step"].astype(np.int64)
    return frame


def expected_read(frame: pd.DataFrame) -> pd.DataFrame:
    """What reading ``frame`` back must give: tokens derived where the reader derives them."""
    expected = frame.copy()
    if "tokens" not in expected and {"compute", "params"} <= set(expected):
        expected["tokens"] = expected["compute"] / (6.0 * expected["params"])
    return expected


def assert_same_frame(actual: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Equal values bit for bit (floats compared exactly), columns in any order."""
    assert sorted(actual.columns) == sorted(expected.columns)
    actual = actual[list(expected.columns)].reset_index(drop=True)
    expected = expected.reset_index(drop=True)
    for column in expected.columns:
        a, e = actual[column].to_numpy(), expected[column].to_numpy()
        if e.dtype.kind == "f":
            assert a.dtype.kind == "f", column
            assert np.array_equal(a.view(np.int64), e.astype(np.float64).view(np.int64)), column
        else:
            assert [str(v) for v in a] == [str(v) for v in e], column


def store_files_digest(path: Path) -> dict[str, str]:
    """SHA-256 of the store file and of any WAL/shared-memory files beside it."""
    digests = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        file = Path(str(path) + suffix)
        if file.exists():
            digests[file.name] = hashlib.sha256(file.read_bytes()).hexdigest()
    return digests
