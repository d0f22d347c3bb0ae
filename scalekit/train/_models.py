"""The bundled models: an MLP, a residual MLP and a small GPT.

Each model exposes ``set_dropout(p)`` so the loop can follow a dropout schedule,
and ``embedding_parameters()`` (parameters that are looked up rather than
multiplied, excluded from N in the 6·N·D estimate as in Kaplan et al. 2020).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from scalekit.checks import fail


class _Scheduled(nn.Module):
    """Mixin: one dropout rate for the whole model, changed between steps.

    The rate lives twice: ``dropout_rate`` (a float, deciding whether to drop at
    all) and the buffer ``dropout_p`` used in the mask, which
    :mod:`scalekit.train._batched` stacks so that every vmapped model has its own.
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("dropout_p", torch.zeros(()), persistent=False)
        self.dropout_rate = 0.0

    def set_dropout(self, p: float) -> None:
        self.dropout_rate = float(p)
        self.dropout_p.fill_(p)

    def _drop(self, h: torch.Tensor) -> torch.Tensor:
        if not self.training or self.dropout_rate == 0.0:
            return h
        return h * (torch.rand_like(h) >= self.dropout_p) / (1.0 - self.dropout_p)

    def embedding_parameters(self) -> int:
        return 0


class MLP(_Scheduled):
    """``depth`` hidden layers of ``width`` GELU units, then a linear read-out."""

    def __init__(self, n_in: int, n_out: int, *, width: int, depth: int) -> None:
        super().__init__()
        sizes = [n_in] + [width] * depth
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        self.out = nn.Linear(sizes[-1], n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.hidden:
            x = self._drop(F.gelu(layer(x)))
        return self.out(x)


class ResidualMLP(_Scheduled):
    """Pre-norm residual MLP: ``x + W2 gelu(W1 LN(x)) / depth`` per block.

    The ``1/depth`` branch scale keeps deep stacks stable (depth-muP style).
    """

    def __init__(self, n_in: int, n_out: int, *, width: int, depth: int) -> None:
        super().__init__()
        self.embed = nn.Linear(n_in, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.GELU(),
                          nn.Linear(2 * width, width)) for _ in range(depth))
        self.scale = 1.0 / depth
        self.out = nn.Linear(width, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for block in self.blocks:
            h = h + self.scale * self._drop(block(h))
        return self.out(h)


class Block(nn.Module):
    """One pre-norm transformer block: causal self-attention then a 4x MLP."""

    def __init__(self, width: int, heads: int, owner: _Scheduled) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fc_out = nn.Linear(4 * width, width)
        self._owner = [owner]  # a list hides the parent from module registration
        self.explicit = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        owner = self._owner[0]
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.explicit:  # written out: vmap batches it where the fused kernels have no rule
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
            causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            y = owner._drop(scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               dropout_p=owner.dropout_rate if self.training else 0.0)
        x = x + owner._drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))
        return x + owner._drop(self.fc_out(F.gelu(self.fc(self.ln2(x)))))


class GPT(_Scheduled):
    """A small decoder-only transformer over a token vocabulary (nanoGPT's shape).

    Token and position embeddings are learned; the read-out shares the token
    embedding matrix.
    """

    def __init__(self, vocab: int, context: int, *, width: int, depth: int, heads: int | None = None) -> None:
        super().__init__()
        heads = heads or max(1, width // 32)
        if width % heads:
            raise fail("width", width, f"a multiple of the number of attention heads, {heads} "
                       "(by default width // 32)")
        self.context = context
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, self) for _ in range(depth))
        self.ln = nn.LayerNorm(width)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos.weight, std=0.02)
        for name, p in self.named_parameters():
            if name.endswith(("proj.weight", "fc_out.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * depth))

    def forward(self, idx: torch.Tensor, hidden: bool = False) -> torch.Tensor:
        """Logits over the vocabulary at every position, or with ``hidden`` the final
        (layer-normed) hidden states the read-out multiplies, shape ``(batch, time, width)``."""
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        x = self._drop(x)
        for block in self.blocks:
            x = block(x)
        x = self.ln(x)
        return x if hidden else x @ self.tok.weight.T

    def embedding_parameters(self) -> int:
        return self.tok.weight.numel() + self.pos.weight.numel()

    def batched_attention(self) -> None:
        """Compute attention with plain matrix products (the same function as the fused
        kernel) so that :func:`torch.func.vmap` batches it over stacked models."""
        for block in self.blocks:
            block.explicit = True


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Total parameters and those outside the embeddings (N in 6·N·D)."""
    total = sum(p.numel() for p in model.parameters())
    embedding = model.embedding_parameters()
    return {"params_total": total, "params": total - embedding, "params_embedding": embedding}
