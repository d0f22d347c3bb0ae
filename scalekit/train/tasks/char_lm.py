"""Character-level language modelling on the standard library's docstrings.

The corpus is built on the machine, without any download: the module, class and
function docstrings of the top-level ``.py`` files of the running Python's
standard library, in file-name order, joined by blank lines and cut at
``max_chars``. Characters outside printable ASCII and newline become ``?``. The
corpus differs between Python versions, so its SHA-256 and the Python version
are recorded with every run. The last 10% is the validation text; ``data``
limits the training text to ``data`` windows of ``context`` characters.

Options: ``context`` (64), ``max_chars`` (400,000).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import platform
import sysconfig
from pathlib import Path

import numpy as np
import torch

from scalekit.checks import check_number, fail
from scalekit.train._config import TrainConfig
from scalekit.train._models import GPT
from scalekit.train.tasks.base import BatchStream, TaskData, draw_indices, task_options

ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))
UNKNOWN = ALPHABET.index("?")
DEFAULTS = {"context": 64, "max_chars": 400_000}


def _docstrings(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return []
    nodes = [tree, *(n for n in ast.walk(tree)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    return [doc for doc in (ast.get_docstring(n) for n in nodes) if doc]


@functools.lru_cache(maxsize=4)
def build_corpus(max_chars: int = DEFAULTS["max_chars"]) -> str:
    """The docstring corpus of this Python's standard library (deterministic per version)."""
    parts: list[str] = []
    size = 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        for doc in _docstrings(path):
            parts.append(doc)
            size += len(doc) + 2
        if size >= max_chars:
            break
    text = "\n\n".join(parts)[:max_chars]
    return "".join(ch if ch in ALPHABET else "?" for ch in text)


def encode(text: str) -> np.ndarray:
    """Map characters to token ids (unknown characters to ``?``)."""
    table = np.full(128, UNKNOWN, dtype=np.int64)
    table[[ord(c) for c in ALPHABET]] = np.arange(len(ALPHABET))
    codes = np.frombuffer(text.encode("ascii", errors="replace"), dtype=np.uint8)
    return table[np.minimum(codes, 127)]


def _windows(tokens: torch.Tensor, starts: torch.Tensor, context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Input and next-character windows of ``context`` tokens at ``starts`` (on the device of
    ``tokens``), gathered there."""
    chunk = tokens[starts[:, None] + torch.arange(context + 1, device=tokens.device)]
    return chunk[:, :-1], chunk[:, 1:]


class WindowSampler:
    """Draws ``context``-character windows of the training text (kept on its device)."""

    def __init__(self, tokens: torch.Tensor, context: int) -> None:
        self.tokens, self.context = tokens, context

    def __call__(self, stream: BatchStream, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        return _windows(self.tokens, draw_indices(stream, len(self.tokens) - self.context, size),
                        self.context)

    def to(self, device: torch.device) -> WindowSampler:
        return WindowSampler(self.tokens.to(device), self.context)


def make_data(config: TrainConfig) -> TaskData:
    """Split the corpus and draw the validation windows for ``config.data_seed``."""
    opts = task_options(config, DEFAULTS)
    context = check_number("context", opts["context"], low=2, integer=True)
    text = build_corpus(check_number("max_chars", opts["max_chars"], low=1000, integer=True))
    tokens = torch.from_numpy(encode(text))
    cut = int(len(tokens) * 0.9)
    train, val = tokens[:cut], tokens[cut:]
    if config.data is not None:
        train = train[:config.data * context + 1]
    if len(train) <= context + 1 or len(val) <= context + 1:
        raise fail("context", context, f"shorter than the validation text ({len(val)} characters, "
                   "10% of `max_chars`) and the training text; raise `max_chars`")
    rng = np.random.default_rng(config.data_seed)
    val_batch = _windows(val, torch.from_numpy(rng.integers(0, len(val) - context, config.eval_size)),
                         context)

    return TaskData(sample=WindowSampler(train, context), val=val_batch, loss="cross_entropy",
                    n_in=len(ALPHABET), n_out=len(ALPHABET), tokens_per_sample=context,
                    attrs={"context": context, "corpus_chars": len(text),
                           "corpus_sha256": hashlib.sha256(text.encode("ascii")).hexdigest(),
                           "python_version": platform.python_version()})


def make_model(config: TrainConfig, data: TaskData) -> GPT:
    """A character GPT of the configured width and depth."""
    return GPT(data.n_in, data.attrs["context"], width=config.width, depth=config.depth)
