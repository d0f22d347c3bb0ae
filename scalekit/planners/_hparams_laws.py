"""Power laws of the optimal learning rate and batch size in N, D or C, and their choice.

A law is linear in logs: ``ln y = Φ(N, D) β`` with the columns of one of :data:`LAW_FORMS`:

- ``"N,D"``: ``y = k N^a D^b`` (the form of Step Law's learning rate, Li et al. 2025);
- ``"C"``: ``y = k C^a`` with ``C = 6 N D`` (the form of DeepSeek LLM, Bi et al. 2024);
- ``"D"``: ``y = k D^b`` (the form of Step Law's batch size);
- ``"N"``: ``y = k N^a``.

``"auto"`` picks the form of least error on held-out sizes: each distinct N in turn is left
out, the law is fitted to the other cells and scored (in log) on the cells of that N.
"""

from __future__ import annotations

import numpy as np

LAW_FORMS = ("N,D", "C", "D", "N")
_FORM_PARAMS = {"N,D": ("a", "b"), "C": ("a",), "D": ("b",), "N": ("a",)}


def law_columns(form: str, params, tokens) -> np.ndarray:
    """The columns ``Φ`` of ``form`` at ``params`` (N) and ``tokens`` (D)."""
    ln_n, ln_d = np.log(np.asarray(params, float)), np.log(np.asarray(tokens, float))
    one = np.ones_like(ln_n)
    columns = {"N,D": [one, ln_n, ln_d], "C": [one, np.log(6.0) + ln_n + ln_d],
               "D": [one, ln_d], "N": [one, ln_n]}[form]
    return np.stack(columns, axis=-1)


def fit_log_law(form: str, params, tokens, values) -> np.ndarray:
    """Least-squares ``β`` of ``ln values`` on the columns of ``form``."""
    coef, *_ = np.linalg.lstsq(law_columns(form, params, tokens), np.log(values), rcond=None)
    return coef


def predict_log(form: str, coef, params, tokens) -> np.ndarray:
    """``ln y`` of the law at ``params`` and ``tokens``."""
    return law_columns(form, params, tokens) @ np.asarray(coef)


def held_out_residuals(form: str, params, tokens, values, observed=None) -> np.ndarray:
    """Log residuals of each cell's ``observed`` value (``values`` by default), predicted by
    the law fitted to ``values`` without its N (NaN where the rest cannot fit the form)."""
    params, tokens, values = (np.asarray(a, float) for a in (params, tokens, values))
    observed = values if observed is None else np.asarray(observed, float)
    residuals = np.full(len(values), np.nan)
    for size in np.unique(params):
        out = params == size
        rest = ~out
        columns = law_columns(form, params[rest], tokens[rest])
        if rest.sum() <= columns.shape[1] or np.linalg.matrix_rank(columns) < columns.shape[1]:
            continue
        coef = fit_log_law(form, params[rest], tokens[rest], values[rest])
        residuals[out] = np.log(observed[out]) - predict_log(form, coef, params[out], tokens[out])
    return residuals


def choose_form(params, tokens, values, forms=LAW_FORMS) -> tuple[str, dict[str, float]]:
    """The form of least held-out root mean squared log error, and each form's error."""
    scores = {}
    for form in forms:
        residuals = held_out_residuals(form, params, tokens, values)
        scores[form] = (float(np.sqrt(np.nanmean(residuals ** 2)))
                        if np.isfinite(residuals).any() else float("inf"))
    return min(scores, key=scores.get), scores


def law_terms(form: str, coef) -> dict[str, float]:
    """``k`` and the exponents of a fitted law, by name."""
    return {"k": float(np.exp(coef[0])),
            **{name: float(c) for name, c in zip(_FORM_PARAMS[form], coef[1:], strict=True)}}
