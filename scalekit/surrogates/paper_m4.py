"""M4 fitted as Alabdulmohsin, Neyshabur and Zhai (2022) fit it: the benchmark's reference.

The law is :mod:`scalekit.laws.m4`; the fit is the shared engine's batched
multi-start Levenberg-Marquardt (:func:`scalekit.fit.multistart.minimize_batch`,
squared error of ln L) under the paper's
settings for one curve: ``0 <= Linf <= min L - 1e-3``, ``L0 >= max L + 1e-3``,
and ``L0 <= 1 + 1e-3`` where the metric is bounded by 1 (their image
classification error rates and BIG-bench scores; not for log-perplexity and
language-model loss). The starts are the law's grid plus the paper's own
first iterate: ``Linf = min L - 1e-3``, ``L0`` at the paper's initial value
(1, or 1.001 on BIG-bench) moved into its bounds, and ``(beta, c, alpha)`` from
the least-squares problem the paper alternates with (``ln(L - Linf) = ln beta -
c ln x + alpha ln(L0 - L)``, ``c, alpha >= 0``). The paper then alternates that
step with gradient and Newton steps on ``Linf, L0`` in the same transformed
space; here every parameter moves at once on ln L, the scale its benchmark
scores. (:func:`scalekit.fit.fit_law` would also polish the best starts with
L-BFGS-B at a relative tolerance of 1e-15, which creeps for minutes along the
nearly flat L0-alpha valley of M4 on the language-model curves for no change
in the forecast; it is left out.) The interval is a normal in ln L with the fit's residual scale
(in-sample scatter only; the reference is scored by its median).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import lsq_linear

from scalekit.checks import check_number
from scalekit.surrogates.base import Surrogate

#: The paper's settings per domain of its benchmark: (initial L0, upper bound of L0).
PAPER_SETTINGS = {"IC": (1.0, 1.0), "BB": (1.001, 1.0), "NMT": (1.0, None), "LM": (1.0, None)}


def paper_start(x: np.ndarray, y: np.ndarray, bounds: dict, l0_start: float) -> np.ndarray:
    """The paper's first iterate, in the fitting space of :func:`scalekit.laws.m4.m4_law`."""
    linf = bounds["linf_max"]
    l0 = float(np.clip(l0_start, bounds["l0_min"], bounds["l0_max"]))
    A = np.column_stack([np.ones_like(x), -np.log(x), np.log(l0 - y)])
    sol = lsq_linear(A, np.log(np.maximum(y - linf, 1e-12)),
                     bounds=([-np.inf, 0.0, 0.0], [np.inf, np.inf, np.inf]))
    log_beta, c, alpha = sol.x
    return np.array([linf, l0, alpha, log_beta, c])


class PaperM4(Surrogate):
    """M4 with the settings of Alabdulmohsin et al. (2022), fitted by the shared engine.

    Parameters
    ----------
    upper : float or None
        Upper bound of the metric (1 for error rates); ``L0 <= upper + 1e-3``.
    l0_start : float
        The paper's initial ``L0`` (moved into its bounds).

    Attributes
    ----------
    values_ : dict
        Fitted ``Linf``, ``L0``, ``alpha``, ``beta``, ``c``.
    converged_ : bool
        Whether the best start met the engine's stopping rule.
    sigma_ : float
        Residual scale of ln L about the fit.
    """

    def __init__(self, *, upper: float | None = None, l0_start: float = 1.0,
                 direction: str = "minimize") -> None:
        self.upper = upper
        self.l0_start = l0_start
        self.direction = direction

    def _fit(self, x, loss):
        law, starts = self._problem(x, loss)
        (z, converged), = _best_rows([(x, loss, law, starts)])
        self._adopt(x, loss, law, z, converged)

    def _problem(self, x, loss):
        """The law with this curve's bounds, and its starts inside them."""
        from scalekit.laws.m4 import m4_law, paper_bounds

        if self.upper is not None:
            check_number("upper", self.upper, low=0.0, low_open=True)
        check_number("l0_start", self.l0_start, low=0.0, low_open=True)
        bounds = paper_bounds(loss, upper=self.upper)
        law = m4_law(**bounds)
        starts = np.vstack([paper_start(x, loss, bounds, self.l0_start),
                            law.start_grid({"x": x}, loss)])
        return law, np.clip(starts, *law.fitting_bounds())

    def _adopt(self, x, loss, law, z, converged):
        residuals = np.log(loss) - law.log_predict_fitting({"x": x}, z)
        self.law_ = law
        self.values_ = dict(zip(law.param_names, law.to_natural(z).tolist()))
        self.converged_ = bool(converged)
        self.sigma_ = float(np.sqrt((residuals ** 2).sum() / max(x.size - len(law.params), 1)))

    def _log_mixture(self, x):
        log_l = np.log(self.law_.predict({"x": x}, self.values_))
        return log_l[:, None], np.ones((x.size, 1)), np.full(x.size, max(self.sigma_, 1e-6))


def fit_paper_m4(models: Sequence[PaperM4], curves: Sequence[tuple]) -> list[PaperM4]:
    """Fit ``models[i]`` to the curve ``curves[i] = (x, y)``, all in one batch of the engine.

    Each fit is the one ``models[i].fit(x, y)`` gives: the engine's rows never
    interact, and a curve's rows carry its own points (shorter curves padded with
    points of weight 0) and its own bounds. Returns ``models``, fitted.
    """
    problems = []
    for model, (x, y) in zip(models, curves, strict=True):
        x, y, loss = model._checked_curve(x, y)
        problems.append((model, x, y, loss, *model._problem(x, loss)))
    fits = _best_rows([(x, loss, law, starts) for _, x, _, loss, law, starts in problems])
    for (model, x, y, loss, law, _), (z, converged) in zip(problems, fits):
        model._adopt(x, loss, law, z, converged)
        model._remember(x, y)
    return list(models)


def _best_rows(problems) -> list[tuple[np.ndarray, bool]]:
    """The best start of each problem ``(x, loss, law, starts)`` (``z`` and whether it
    converged), every problem's starts minimised in one batch as per-row data."""
    from scalekit.fit.multistart import minimize_batch

    sizes = [len(starts) for *_, starts in problems]
    n = max(x.size for x, *_ in problems)
    rows = np.repeat(np.arange(len(problems)), sizes)
    x_rows, log_y_rows, weights = np.ones((len(problems), n)), np.zeros((len(problems), n)), None
    for i, (x, loss, _, _) in enumerate(problems):
        x_rows[i, :x.size], log_y_rows[i, :x.size] = x, np.log(loss)
    if any(x.size < n for x, *_ in problems):
        weights = (np.arange(n) < np.array([x.size for x, *_ in problems])[:, None])[rows]
    lower, upper = (np.vstack([np.broadcast_to(law.fitting_bounds()[side], starts.shape)
                               for _, _, law, starts in problems]) for side in (0, 1))
    batch = minimize_batch(problems[0][2], {"x": x_rows[rows]}, log_y_rows[rows],
                           np.vstack([starts for *_, starts in problems]), loss="squared",
                           delta=1.0, weights=None if weights is None else weights.astype(float),
                           bounds=(lower, upper))
    out = []
    for first, size in zip(np.cumsum([0] + sizes[:-1]), sizes):
        best = first + int(np.argmin(batch.objective[first:first + size]))
        out.append((batch.z[best], batch.converged[best]))
    return out
