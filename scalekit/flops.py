"""Training FLOPs per token counted from a transformer's shape, under named conventions.

Four conventions, each with the parameter count it uses (forward + backward per token;
the backward pass costs twice the forward, as both papers assume):

* ``"6N"`` — ``6·N`` with N the non-embedding parameters (Kaplan et al. 2020, Table 1:
  ``N = 2·d_model·n_layers·(2·d_attn + d_ff)``);
* ``"6N_total"`` — ``6·N`` with N every parameter, embeddings included (how Hoffmann et
  al. 2022 count N in ``C = 6ND``);
* ``"kaplan"`` — ``3·C_forward`` with ``C_forward = 2N + 2·n_layers·n_ctx·d_attn``
  (Kaplan et al. 2020, §2.1 and Table 1: N non-embedding, the attention over the context
  added, embeddings and de-embedding left out);
* ``"chinchilla"`` — the full count of Hoffmann et al. 2022, appendix F: embeddings
  ``2·V·d``, per layer the query/key/value projections ``6·d·d_attn``, the key-query
  logits ``2·n_ctx·d_attn``, the softmax ``3·n_heads·n_ctx``, the softmax-value
  reduction ``2·n_ctx·d_attn``, the output projection ``2·d_attn·d``, the dense block
  ``2·(matrices)·d·d_ff``, and the final logits ``2·d·V``; N is every parameter.

A gated feed-forward block (SwiGLU) has three matrices instead of two. With ``experts``
feed-forward experts of which ``active`` run per token, the FLOPs count the active ones
(plus a router of ``d·experts``) and the parameter count states both. Causal masking is
not discounted (neither paper does). Torch-free; plain floats.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from scalekit.checks import check_choice, check_number, fail
from scalekit.results import FlatResult

#: The named conventions, in the order reports list them.
FLOP_CONVENTIONS = ("6N", "6N_total", "kaplan", "chinchilla")

_DESCRIPTIONS = {
    "6N": "6·N, N the non-embedding parameters (Kaplan et al. 2020, Table 1)",
    "6N_total": "6·N, N every parameter, embeddings included (Hoffmann et al. 2022)",
    "kaplan": "3·(2N + 2·n_layers·n_ctx·d_attn), N non-embedding (Kaplan et al. 2020, §2.1)",
    "chinchilla": "3 × the forward count of Hoffmann et al. 2022, appendix F "
                  "(embeddings, attention, dense blocks, logits)",
}


@dataclass(frozen=True)
class Shape:
    """A decoder-only transformer's shape (see :func:`flops_per_token` for the fields)."""

    d_model: int
    n_layers: int
    n_ctx: int
    vocab: int
    n_heads: int
    head_size: int
    ffn_size: float
    gated: bool
    experts: int
    active: int
    tied: bool

    @property
    def d_attn(self) -> int:
        return self.n_heads * self.head_size

    def layer_params(self, ffn_count: int) -> float:
        """Attention (Q, K, V, O), ``ffn_count`` feed-forward blocks and the router."""
        matrices = 3 if self.gated else 2
        router = self.d_model * self.experts if self.experts > 1 else 0
        return 4 * self.d_model * self.d_attn + ffn_count * matrices * self.d_model * self.ffn_size \
            + router

    def params(self) -> dict:
        """Parameter counts: non-embedding (all experts and active ones), embeddings, total."""
        non_embedding = self.n_layers * self.layer_params(self.experts)
        active = self.n_layers * self.layer_params(self.active)
        embedding = self.vocab * self.d_model * (1 if self.tied else 2)
        return {"non_embedding": non_embedding, "non_embedding_active": active,
                "embedding": embedding, "total": non_embedding + embedding,
                "total_active": active + embedding}

    def chinchilla_forward(self) -> dict:
        """Forward FLOPs per token by component (Hoffmann et al. 2022, appendix F)."""
        d, a, s, L = self.d_model, self.d_attn, self.n_ctx, self.n_layers
        matrices = 3 if self.gated else 2
        router = 2 * d * self.experts if self.experts > 1 else 0
        return {"embeddings": 2 * self.vocab * d,
                "attention_qkv": L * 2 * 3 * d * a,
                "attention_logits": L * 2 * s * a,
                "attention_softmax": L * 3 * self.n_heads * s,
                "attention_reduction": L * 2 * s * a,
                "attention_projection": L * 2 * a * d,
                "dense": L * (2 * matrices * d * self.ffn_size * self.active + router),
                "logits": 2 * d * self.vocab}


@dataclass(repr=False)
class FlopCount(FlatResult):
    """Training FLOPs per token (forward + backward) of one shape under one convention.

    ``params`` is the count the convention uses (``params_kind`` names it), ``forward``
    the forward FLOPs per token, ``terms`` the forward FLOPs by component, ``counts`` every
    parameter count of the shape, ``shape`` the settings it was counted from.
    """

    convention: str
    description: str
    flops_per_token: float
    forward: float
    params: float
    params_kind: str
    terms: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    shape: dict = field(default_factory=dict)

    def training_flops(self, tokens: float) -> float:
        """FLOPs of training on ``tokens`` tokens."""
        return self.flops_per_token * tokens

    def _summary_title(self) -> str:
        return f"FLOPs per token ({self.convention})"

    def _summary_sections(self):
        from scalekit.formatting import format_number

        return [("Count", [("convention", self.description),
                           ("training FLOPs per token", format_number(self.flops_per_token)),
                           ("forward FLOPs per token", format_number(self.forward)),
                           (f"parameters ({self.params_kind})", format_number(self.params))]),
                ("Forward FLOPs per token by component",
                 [(k, format_number(v)) for k, v in self.terms.items()])]

    def _repr_fields(self) -> dict:
        return {"convention": self.convention, "flops_per_token": self.flops_per_token}


def flops_per_token(convention: str, *, d_model: int, n_layers: int, n_ctx: int, vocab: int,
                    n_heads: int | None = None, head_size: int | None = None,
                    ffn_mult: float = 4.0, ffn_size: float | None = None, gated: bool = False,
                    experts: int = 1, active: int | None = None,
                    tied: bool = False) -> FlopCount:
    """Training FLOPs per token (forward + backward) of a transformer under ``convention``.

    Parameters
    ----------
    convention : {"6N", "6N_total", "kaplan", "chinchilla"}
        See the module docstring.
    d_model, n_layers, n_ctx, vocab : int
        Width, depth, context length and vocabulary size.
    n_heads : int, optional
        Attention heads (``d_model // 64`` by default, at least 1).
    head_size : int, optional
        Key/query size per head; ``d_model // n_heads`` by default.
    ffn_mult : float
        Feed-forward width over ``d_model`` (4 for GPT; 8/3 is usual with ``gated``).
    ffn_size : float, optional
        Feed-forward width itself; overrides ``ffn_mult``.
    gated : bool
        A gated (GLU) feed-forward block: three matrices, not two.
    experts, active : int
        Feed-forward experts in all, and how many run per token (``experts`` by default).
    tied : bool
        Input and output embeddings share one matrix (a parameter count only: the logits
        still cost their FLOPs).

    Returns
    -------
    FlopCount
    """
    check_choice("convention", convention, FLOP_CONVENTIONS)
    for name, value in (("d_model", d_model), ("n_layers", n_layers), ("n_ctx", n_ctx),
                        ("vocab", vocab), ("experts", experts)):
        check_number(name, value, low=1, integer=True)
    n_heads = max(1, d_model // 64) if n_heads is None else check_number(
        "n_heads", n_heads, low=1, integer=True)
    head_size = (d_model // n_heads if head_size is None
                 else check_number("head_size", head_size, low=1, integer=True))
    if head_size < 1:
        raise fail("n_heads", n_heads, f"at most `d_model` ({d_model})")
    active = experts if active is None else check_number("active", active, low=1, integer=True)
    if active > experts:
        raise fail("active", active, f"at most `experts` ({experts})")
    ffn = ffn_mult * d_model if ffn_size is None else check_number(
        "ffn_size", ffn_size, low=0, low_open=True)
    if ffn_size is None:
        check_number("ffn_mult", ffn_mult, low=0, low_open=True)
    shape = Shape(int(d_model), int(n_layers), int(n_ctx), int(vocab), int(n_heads),
                  int(head_size), float(ffn), bool(gated), int(experts), int(active), bool(tied))
    counts = shape.params()
    if convention == "chinchilla":
        terms = shape.chinchilla_forward()
        params, kind = counts["total_active"], "all, with embeddings"
    else:
        n = counts["non_embedding_active"]
        terms = {"parameters": 2.0 * n}
        params, kind = n, "non-embedding"
        if convention == "6N_total":
            terms = {"parameters": 2.0 * counts["total_active"]}
            params, kind = counts["total_active"], "all, with embeddings"
        elif convention == "kaplan":
            terms["attention_context"] = 2.0 * shape.n_layers * shape.n_ctx * shape.d_attn
    if experts > 1:
        kind += f"; {active} of {experts} experts active"
    forward = float(sum(terms.values()))
    return FlopCount(convention, _DESCRIPTIONS[convention], 3.0 * forward, forward,
                     float(params), kind, {k: float(v) for k, v in terms.items()},
                     {k: float(v) for k, v in counts.items()}, asdict(shape))
