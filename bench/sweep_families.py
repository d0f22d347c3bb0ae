"""Public sweep families with complete learning curves, as tidy frames for the allocator.

Each loader returns one row per logged point: ``run``, ``step``, ``tokens``,
``compute`` (FLOPs, 6·N·D with the family's own N), ``loss`` and ``params``,
plus what varies between the family's runs (``lr``, ``schedule``,
``total_steps``, ``multiplier``, ``deduped``). ``family_sweep(name)`` validates
one into an allocation :class:`~scalekit.allocate._sweep.Sweep`. Provenance and
licences: ``data/published/PROVENANCE.md``.

Families (``FAMILIES``), by kind of sweep:

- ``olmo_ladder`` — 4 sizes (190M–1B) × 4 token counts (1, 2, 5, 10 × Chinchilla),
  cosine to each run's own end: a grid in (N, D) where a short run is *not* the
  prefix of a long one (Bhagia et al. 2024). C4 loss.
- ``multipower`` — 2 sizes (25M, 100M) × 9 learning-rate schedules (constant,
  cosine, WSD, two-stage): the constant runs of 24k and 72k steps share a prefix
  (Luo et al. 2025).
- ``pythia`` — 8 sizes × {Pile, deduplicated Pile}, one token count (300B),
  cosine: a size-only sweep, LAMBADA loss (log perplexity), whose early curves
  sit on a plateau near ln(vocabulary) and then drop (Biderman et al. 2023).
- ``opt`` — 6 OPT sizes (125M–175B), validation perplexity along training
  (Xia et al. 2023, via Choshen et al. 2024's collection): uneven checkpoints
  and batch sizes.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data" / "published"


def olmo_ladder(path: Path = DATA / "olmo_ladder") -> pd.DataFrame:
    """The 16 ladder runs: C4 cross-entropy against step; N from ``final.json``."""
    sizes = {Path(spec["paths"][0]).name.split("-")[0]: spec["n"]
             for spec in json.loads((path / "final.json").read_text()).values() if spec["mode"] == "train"}
    frames = []
    for file in sorted(path.glob("*-*xC.csv")):
        size, multiplier = re.fullmatch(r"(.+)-(\d+)xC\.csv", file.name).groups()
        raw = pd.read_csv(file)
        frames.append(pd.DataFrame({
            "run": file.stem, "step": raw["_step"], "tokens": raw["throughput/total_tokens"],
            "loss": raw["eval/c4_en-validation/CrossEntropyLoss"], "params": float(sizes[size]),
            "multiplier": int(multiplier), "total_steps": int(raw["_step"].max())}))
    return _finish(pd.concat(frames, ignore_index=True))


#: Multi-power runs: tokens per step (Luo et al. 2025: batch 0.5M tokens) and N per size.
MULTIPOWER_TOKENS_PER_STEP = 0.5e6
MULTIPOWER_PARAMS = {"25": 25e6, "100": 100e6}


def multipower(path: Path = DATA / "multipower") -> pd.DataFrame:
    """18 runs: each size's nine schedules, loss and learning rate against step."""
    frames = []
    for size, params in MULTIPOWER_PARAMS.items():
        for file in sorted((path / size).glob("*.csv")):
            raw = pd.read_csv(file)
            frames.append(pd.DataFrame({
                "run": f"{size}M/{file.stem}", "step": raw["step"],
                "tokens": raw["step"] * MULTIPOWER_TOKENS_PER_STEP, "loss": raw["loss"],
                "lr": raw["lr"], "params": params, "schedule": file.stem,
                "total_steps": int(raw["step"].max())}))
    return _finish(pd.concat(frames, ignore_index=True))


def pythia(path: Path = DATA / "sweeps" / "pythia_lambada.csv") -> pd.DataFrame:
    """16 Pythia models, LAMBADA log-perplexity against step (step 0 dropped: no tokens)."""
    raw = pd.read_csv(path)
    raw = raw[raw["step"] > 0]
    return _finish(raw[["run", "step", "tokens", "loss", "params", "deduped"]].assign(
        total_steps=int(raw["step"].max())))


#: OPT's non-embedding-free sizes as the collection names them (``model_size``).
OPT_PARAMS = {"125m": 125e6, "1.3b": 1.3e9, "6.7b": 6.7e9, "13b": 13e9, "30b": 30e9, "175b": 175e9}


def opt(path: Path = DATA / "sweeps" / "opt_trajectories.csv") -> pd.DataFrame:
    """6 OPT models, log validation perplexity against step; tokens from the file (log10)."""
    raw = pd.read_csv(path)
    frame = pd.DataFrame({"run": "OPT-" + raw["model_size"], "step": raw["steps"],
                          "tokens": 10.0 ** raw["num_token"], "loss": np.log(raw["ppl"]),
                          "params": raw["model_size"].map(OPT_PARAMS)})
    frame["total_steps"] = frame.groupby("run")["step"].transform("max")
    return _finish(frame)


def _finish(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.dropna(subset=["loss"]).sort_values(["run", "step"], kind="stable")
    frame = frame.drop_duplicates(["run", "step"], keep="last")
    frame["compute"] = 6.0 * frame["params"] * frame["tokens"]
    return frame.reset_index(drop=True)


FAMILIES = {"olmo_ladder": olmo_ladder, "multipower": multipower, "pythia": pythia, "opt": opt}


def family_sweep(name: str, *, resource: str = "compute"):
    """One family as an allocation sweep (each run's last point is its end)."""
    from scalekit.allocate._sweep import sweep_from_frame

    return sweep_from_frame(FAMILIES[name](), resource=resource, source=name)


if __name__ == "__main__":
    for name, load in FAMILIES.items():
        frame = load()
        ends = frame.groupby("run").tail(1)
        best = ends.loc[ends["loss"].idxmin()]
        print(f"{name:12s} runs {frame['run'].nunique():3d}  points {len(frame):5d}  "
              f"compute {frame['compute'].min():.2e}–{frame['compute'].max():.2e}  "
              f"best end {best['run']} ({best['loss']:.3f})")
        family_sweep(name)
