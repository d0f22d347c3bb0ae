"""Information criteria of a fit on log residuals.

AIC and BIC use the Gaussian likelihood of the log residuals with its variance
estimated, so ``k = P + 1``: ``AIC = n log(RSS / n) + 2 k`` and
``BIC = n log(RSS / n) + k log n`` (lower is better; only differences between
laws fitted to the same points mean anything).
"""

from __future__ import annotations

import numpy as np


def information_criteria(log_residuals: np.ndarray, n_params: int) -> dict[str, float]:
    """``aic`` and ``bic`` of a fit with these log residuals and ``n_params`` parameters."""
    r = np.asarray(log_residuals, dtype=float)
    n = r.size
    k = n_params + 1
    fit = n * np.log(max(float(np.mean(r ** 2)), np.finfo(float).tiny))
    return {"aic": float(fit + 2 * k), "bic": float(fit + k * np.log(n))}
