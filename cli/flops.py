"""``scalekit flops``: training FLOPs per token of a transformer under each convention."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import checked_number, format_option, print_tables
from .options import json_option, quiet_option


def _count(flag: str, low: int = 1):
    return checked_number(flag, low=low, integer=True)


def flops(
    d_model: int = typer.Option(..., "--d-model", help="Width of the residual stream.",
                                callback=_count("--d-model")),
    n_layers: int = typer.Option(..., "--n-layers", help="Transformer blocks.",
                                 callback=_count("--n-layers")),
    n_ctx: int = typer.Option(..., "--n-ctx", help="Context length (tokens).",
                              callback=_count("--n-ctx")),
    vocab: int = typer.Option(..., "--vocab", help="Vocabulary size.", callback=_count("--vocab")),
    n_heads: int | None = typer.Option(None, "--n-heads", help="Attention heads (default "
                                       "d_model/64).", callback=_count("--n-heads")),
    head_size: int | None = typer.Option(None, "--head-size", help="Key/query size per head "
                                         "(default d_model/heads).", callback=_count("--head-size")),
    ffn_mult: float = typer.Option(4.0, "--ffn-mult", help="Feed-forward width over d_model.",
                                   callback=checked_number("--ffn-mult", low=0, low_open=True)),
    ffn_size: float | None = typer.Option(None, "--ffn-size", help="Feed-forward width "
                                          "(overrides --ffn-mult).",
                                          callback=checked_number("--ffn-size", low=0,
                                                                  low_open=True)),
    gated: bool = typer.Option(False, "--gated", metavar="", help="Gated (GLU) feed-forward: 3 matrices."),
    experts: int = typer.Option(1, "--experts", help="Feed-forward experts in all.",
                                callback=_count("--experts")),
    active: int | None = typer.Option(None, "--active", help="Experts run per token (default: "
                                      "all).", callback=_count("--active")),
    tied: bool = typer.Option(False, "--tied", metavar="", help="Input and output embeddings shared."),
    tokens: float | None = typer.Option(None, "--tokens", help="Also give the training FLOPs "
                                        "of this many tokens.",
                                        callback=checked_number("--tokens", low=0, low_open=True)),
    json_out: Path | None = json_option(),
    quiet: bool = quiet_option(),
    fmt: str = format_option(),
) -> None:
    """Training FLOPs per token (forward + backward) under 6N, 6N_total, Kaplan and Chinchilla."""
    from scalekit import serialise
    from scalekit.flops import FLOP_CONVENTIONS, flops_per_token
    from scalekit.formatting import format_number

    shape = {"d_model": d_model, "n_layers": n_layers, "n_ctx": n_ctx, "vocab": vocab,
             "n_heads": n_heads, "head_size": head_size, "ffn_mult": ffn_mult,
             "ffn_size": ffn_size, "gated": gated, "experts": experts, "active": active,
             "tied": tied}
    counts = [flops_per_token(c, **shape) for c in FLOP_CONVENTIONS]
    exact = counts[-1].flops_per_token
    if not quiet:
        columns = ["convention", "FLOPs/token", "vs chinchilla", "params used", "params"]
        columns += [] if tokens is None else ["training FLOPs"]
        rows = [[c.convention, format_number(c.flops_per_token),
                 format_number(c.flops_per_token / exact, 3), c.params_kind,
                 format_number(c.params)]
                + ([] if tokens is None else [format_number(c.training_flops(tokens))])
                for c in counts]
        print_tables([{"title": "Training FLOPs per token (forward + backward)",
                       "columns": columns, "rows": rows}], fmt,
                     title="FLOPs counted from the architecture",
                     lines=[f"{c.convention}: {c.description}" for c in counts])
    if json_out is not None:
        serialise.write_report(json_out, "flops", {"counts": [c.to_dict() for c in counts],
                                                   "tokens": tokens},
                               input_sha256=None, seed=None, settings=shape)


def register(app: typer.Typer) -> None:
    """Add the ``flops`` command to ``app``."""
    app.command("flops")(flops)
