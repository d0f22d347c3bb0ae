"""Published laws of the optimal learning rate and batch size (facts, with their citations).

- ``deepseek_llm``: Bi et al. (2024), "DeepSeek LLM: Scaling open-source language models with
  longtermism", arXiv:2401.02954, §3.1: ``η_opt = 0.3118·C^-0.1250``, ``B_opt = 0.2920·C^0.3271``,
  with ``C = M·D`` in FLOPs, ``M`` the non-embedding FLOPs per token (``6·N`` plus attention's
  ``6·n_layer·d_model·l_seq``, which N alone does not give: ``6·N`` is taken here, a few per
  cent low, which moves η by under 1%) and ``B`` in tokens.
- ``step_law``: Li et al. (2025), "Predictable Scale: Part I — Optimal hyperparameter scaling
  law in large language model pretraining" (Step Law), arXiv:2503.04715:
  ``η = 1.79·N^-0.713·D^0.307``, ``B = 0.58·D^0.571``, with ``N`` the non-embedding
  parameters, ``D`` tokens and ``B`` in tokens (their fitting code multiplies the batch in
  sequences by the sequence length, 2048, before fitting).

A batch in tokens becomes one in sequences by dividing by ``sequence_length``.
"""

from __future__ import annotations

PUBLISHED_HPARAMS = {
    "deepseek_llm": {
        "citation": "Bi et al. (2024), DeepSeek LLM, arXiv:2401.02954, §3.1",
        "lr": "0.3118·C^-0.1250", "batch": "0.2920·C^0.3271 tokens",
        "applies": "C = 6·N·D FLOPs (non-embedding N; attention's FLOPs left out), batch in "
                   "tokens; fitted on compute-optimal (N, D) with a multi-step schedule"},
    "step_law": {
        "citation": "Li et al. (2025), Step Law, arXiv:2503.04715",
        "lr": "1.79·N^-0.713·D^0.307", "batch": "0.58·D^0.571 tokens",
        "applies": "N non-embedding parameters, D tokens, batch in tokens (sequences of 2048); "
                   "fitted on dense and MoE models, 60M-1B, 2B-100B tokens"},
}


def published_at(params: float, tokens: float, *, sequence_length: float | None = None
                 ) -> dict[str, dict]:
    """Each published law's learning rate and batch at ``params`` and ``tokens``.

    ``batch_tokens`` is the batch in tokens; ``batch`` is in sequences of
    ``sequence_length`` tokens, or ``None`` where ``sequence_length`` is not given.
    """
    compute = 6.0 * params * tokens
    values = {"deepseek_llm": (0.3118 * compute ** -0.1250, 0.2920 * compute ** 0.3271),
              "step_law": (1.79 * params ** -0.713 * tokens ** 0.307, 0.58 * tokens ** 0.571)}
    return {name: {**PUBLISHED_HPARAMS[name], "lr_value": lr, "batch_tokens": batch,
                   "batch_value": None if sequence_length is None else batch / sequence_length}
            for name, (lr, batch) in values.items()}
