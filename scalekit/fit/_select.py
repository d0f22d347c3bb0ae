"""Model comparison on one data set: AIC, BIC and leave-the-largest-out error.

AIC and BIC are those every fit carries (:mod:`scalekit.fit._criteria`); only
differences between laws fitted to the same points mean anything.

The extrapolation error fits each law to all but the largest points (by the
product of the law's inputs, which orders Chinchilla points by ``N D`` and so by
compute) and reports the root mean square log error on the held-out points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from scalekit.checks import check_number
from scalekit.fit._engine import fit_law
from scalekit.laws import get_law
from scalekit.laws import Law

if TYPE_CHECKING:
    import pandas as pd


def largest_points(X: Mapping, names: Sequence[str], fraction: float) -> np.ndarray:
    """Boolean mask of the ``fraction`` of points with the largest product of ``names``."""
    scale = np.sum([np.log(np.asarray(X[name], dtype=float)) for name in names], axis=0)
    n = len(scale)
    held = max(1, int(round(fraction * n)))
    mask = np.zeros(n, dtype=bool)
    mask[np.argsort(scale, kind="stable")[n - held:]] = True
    return mask


def compare_laws(laws: Sequence[Law | str], X: Mapping, y, *, holdout: float = 0.1,
                 by: Sequence[str] | None = None, loss: str = "huber", delta: float = 1e-3,
                 seed: int = 0) -> pd.DataFrame:
    """Fit every law to the same points and compare them.

    Parameters
    ----------
    laws : sequence of Law or str
    X, y
        Points, as for :func:`~scalekit.fit.fit_law` (X holds every law's inputs).
    holdout : float
        Share of the points held out for the extrapolation error (the largest ones).
    by : sequence of str, optional
        Inputs whose product orders the points by size; each law's own inputs by
        default (pass e.g. ``["compute"]`` to rank different laws on the same split).
    loss, delta, seed
        As for :func:`~scalekit.fit.fit_law`.

    Returns
    -------
    DataFrame
        One row per law, sorted by AIC: ``law``, ``n_params``, ``objective``, ``aic``,
        ``bic``, ``delta_aic``, ``extrapolation_rmse`` (log space, held-out points),
        ``n_holdout``.
    """
    check_number("holdout", holdout, low=0, high=1, low_open=True, high_open=True)
    y = np.asarray(y, dtype=float)
    rows = []
    for law in laws:
        law = get_law(law) if isinstance(law, str) else law
        full = fit_law(law, X, y, loss=loss, delta=delta, seed=seed)
        held = largest_points(X, by or law.inputs, holdout)
        train = {name: np.asarray(X[name], dtype=float)[~held] for name in law.inputs}
        test = {name: np.asarray(X[name], dtype=float)[held] for name in law.inputs}
        part = fit_law(law, train, y[~held], loss=loss, delta=delta, seed=seed)
        error = np.log(part.predict(test)) - np.log(y[held])
        rows.append({"law": law.name, "n_params": len(law.params),
                     "objective": full.stats["objective"], "aic": full.stats["aic"],
                     "bic": full.stats["bic"],
                     "extrapolation_rmse": float(np.sqrt(np.mean(error ** 2))),
                     "n_holdout": int(held.sum())})
    import pandas as pd

    table = pd.DataFrame(rows).sort_values("aic", kind="stable").reset_index(drop=True)
    table.insert(table.columns.get_loc("bic") + 1, "delta_aic", table["aic"] - table["aic"].min())
    return table
