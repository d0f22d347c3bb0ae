"""Extract Pythia's LAMBADA (OpenAI) perplexity curves into a tidy sweep file.

Run once against a local clone of EleutherAI/pythia (Apache-2.0); the output
``data/published/sweeps/pythia_lambada.csv`` is what the benches read.
Usage: ``python tools/extract_pythia_lambada.py PYTHIA_CLONE OUT.csv``.

Each run is one model of the suite (8 sizes, standard and deduplicated Pile);
each point one checkpoint of ``evals/pythia-v1/<model>/zero-shot/``. Tokens are
steps × 1024 sequences × 2048 tokens (the suite's 2M-token batch); parameters
are the non-embedding count of the README's architecture table,
12·L·d² + 13·L·d + 2·d (attention and MLP weights and biases, layer norms, the
final layer norm), which gives the Pythia paper's Table 1 figures.
"""
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd

#: n_layers, d_model per size, from the README's table.
ARCH = {"70m": (6, 512), "160m": (12, 768), "410m": (24, 1024), "1b": (16, 2048),
        "1.4b": (24, 2048), "2.8b": (32, 2560), "6.9b": (32, 4096), "12b": (36, 5120)}
TOKENS_PER_STEP = 1024 * 2048


def main(clone: str, out: str) -> None:
    rows = []
    for path in sorted(Path(clone, "evals", "pythia-v1").glob("pythia-*/zero-shot/*_step*.json")):
        model = path.parent.parent.name
        size = model.removeprefix("pythia-").removesuffix("-deduped").removesuffix("-bf16")
        layers, width = ARCH[size]
        step = int(re.search(r"_step(\d+)\.json$", path.name).group(1))
        lam = json.loads(path.read_text())["results"]["lambada_openai"]
        rows.append(dict(run=model, size=size, deduped=model.endswith("-deduped"), step=step,
                         tokens=step * TOKENS_PER_STEP,
                         params=12 * layers * width ** 2 + 13 * layers * width + 2 * width,
                         lambada_ppl=lam["ppl"], lambada_acc=lam["acc"],
                         loss=math.log(lam["ppl"])))
    frame = pd.DataFrame(rows).sort_values(["run", "step"])
    frame.to_csv(out, index=False, float_format="%.10g")


if __name__ == "__main__":
    main(*sys.argv[1:])
