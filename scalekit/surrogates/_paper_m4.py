"""M4 fitted as Alabdulmohsin, Neyshabur and Zhai (2022) fit it: the benchmark's reference.

The law is :mod:`scalekit.laws._m4`; the fit minimises the squared error of ln L
from many starts under the paper's settings for one curve: ``0 <= Linf <= min L -
1e-3``, ``L0 >= max L + 1e-3``, and ``L0 <= 1 + 1e-3`` where the metric is bounded
by 1 (their image classification error rates and BIG-bench scores; not for
log-perplexity and language-model loss). The starts are the law's grid plus the
paper's own first iterate: ``Linf = min L - 1e-3``, ``L0`` at the paper's initial
value (1, or 1.001 on BIG-bench) moved into its bounds, and ``(beta, c, alpha)``
from the least-squares problem the paper alternates with (``ln(L - Linf) = ln beta
- c ln x + alpha ln(L0 - L)``, ``c, alpha >= 0``). The paper then alternates that
step with gradient and Newton steps on ``Linf, L0`` in the same transformed space;
here every parameter moves at once on ln L, the scale its benchmark scores, by the
batched trust-region solver :func:`scalekit.fit._least_squares.least_squares_batch`
in the limit coordinates of :func:`scalekit.laws._m4.to_limit` (``Linf, ln L0,
alpha / L0, ln beta + alpha ln L0, c``). M4's nearly flat valley is the approach
to the limit ``L0 -> inf`` at fixed ``alpha / L0``; in those coordinates it is a
straight line that the solver walks in geometric steps, so every start converges
(where the data prefer the limit, ``L0`` ends near 1e11 and the forecast is the
limit's to about 1e-9). The interval is a normal in ln L with the fit's residual
scale (in-sample scatter only; the reference is scored by its median).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import lsq_linear

from scalekit.checks import check_number
from scalekit.surrogates._base import Surrogate

#: Most problems fitted in one batch (~2,000 starts): a batch's arrays stay small enough
#: for the cache, where one of 3,000 curves' starts (75,000 rows of 100 points) costs
#: twice as much per row (M4 on 3,000 curves of the bench: 44 -> 22 ms per curve).
CHUNK = 80

#: The paper's settings per domain of its benchmark: (initial L0, upper bound of L0).
PAPER_SETTINGS = {"IC": (1.0, 1.0), "BB": (1.001, 1.0), "NMT": (1.0, None), "LM": (1.0, None)}


def paper_start(x: np.ndarray, y: np.ndarray, bounds: dict, l0_start: float) -> np.ndarray:
    """The paper's first iterate, in the fitting space of :func:`scalekit.laws._m4.m4_law`."""
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
        Fitted ``Linf``, ``L0``, ``alpha``, ``beta``, ``c`` (far along M4's valley
        toward its limit ``L0 -> inf``, ``beta`` underflows to 0).
    coef_ : ndarray (5,)
        The fit in the limit coordinates of :func:`scalekit.laws._m4.to_limit`, which
        the forecasts use.
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
        (w, converged), = _best_rows([(x, loss, law, starts)])
        self._adopt(x, loss, law, w, converged)

    def _problem(self, x, loss):
        """The law with this curve's bounds, and its starts inside them."""
        from scalekit.laws import m4_law, paper_bounds

        if self.upper is not None:
            check_number("upper", self.upper, low=0.0, low_open=True)
        check_number("l0_start", self.l0_start, low=0.0, low_open=True)
        bounds = paper_bounds(loss, upper=self.upper)
        law = m4_law(**bounds)
        starts = np.vstack([paper_start(x, loss, bounds, self.l0_start),
                            law.start_grid({"x": x}, loss)])
        return law, np.clip(starts, *law.fitting_bounds())

    def _adopt(self, x, loss, law, w, converged):
        from scalekit.laws import from_limit

        self.law_ = law
        self.coef_ = w
        with np.errstate(over="ignore"):
            self.values_ = dict(zip(law.param_names, law.to_natural(from_limit(w)).tolist(), strict=True))
        self.converged_ = bool(converged)
        residuals = np.log(loss) - self._log_median(x)
        self.sigma_ = float(np.sqrt((residuals ** 2).sum() / max(x.size - len(law.params), 1)))

    def _log_median(self, x):
        from scalekit.laws import limit_terms

        return limit_terms(x[None, :], self.coef_[None, :])[0][0]

    def _log_mixture(self, x):
        log_l = self._log_median(x)
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
    for (model, x, y, loss, law, _), (w, converged) in zip(problems, fits, strict=True):
        model._adopt(x, loss, law, w, converged)
        model._remember(x, y)
    return list(models)


def _best_rows(problems) -> list[tuple[np.ndarray, bool]]:
    """The best start of each problem ``(x, loss, law, starts)`` (its parameters in the
    limit coordinates of :func:`scalekit.laws._m4.to_limit`, and whether it converged).

    Every problem's starts are minimised at once by
    :func:`scalekit.fit._least_squares.least_squares_batch` in limit coordinates,
    problems of similar length together (each group padded to its longest curve
    with points of weight 0), at most :data:`CHUNK` problems a batch; rows never
    interact, so a problem's fit does not depend on the others (nor on the
    batch's size: the forecasts are bitwise equal). The roots of M4's equation at
    each row's last parameters start the next evaluation's.
    """
    out: list = [None] * len(problems)
    groups: dict[int, list[int]] = {}
    for i, (x, *_) in enumerate(problems):
        groups.setdefault(int(np.ceil(np.log2(x.size))), []).append(i)
    for members in groups.values():
        for first in range(0, len(members), CHUNK):
            chunk = members[first:first + CHUNK]
            for i, best in zip(chunk, _fit_group([problems[i] for i in chunk]), strict=True):
                out[i] = best
    return out


def _fit_group(problems) -> list[tuple[np.ndarray, bool]]:
    """:func:`_best_rows` for one group of problems, all their starts in one batch."""
    from scalekit.fit import least_squares_batch
    from scalekit.laws import limit_bounds, limit_terms, to_limit

    sizes = [len(starts) for *_, starts in problems]
    n = max(x.size for x, *_ in problems)
    x_rows, log_y_rows, mask = (np.ones((len(problems), n)), np.zeros((len(problems), n)),
                                np.zeros((len(problems), n)))
    for i, (x, loss, _, _) in enumerate(problems):
        x_rows[i, :x.size], log_y_rows[i, :x.size], mask[i, :x.size] = x, np.log(loss), 1.0
    rows = np.repeat(np.arange(len(problems)), sizes)
    x_rows, log_y_rows, mask = x_rows[rows], log_y_rows[rows], mask[rows]
    padded = not mask.all()
    lower, upper = (np.vstack([np.broadcast_to(law.fitting_bounds()[side], starts.shape)
                               for _, _, law, starts in problems]) for side in (0, 1))
    starts = np.clip(np.vstack([starts for *_, starts in problems]), lower, upper)
    lower, upper = limit_bounds(lower, upper)
    roots = None

    def evaluate(w, which):
        nonlocal roots
        log_l, J, u = limit_terms(x_rows[which], w,
                                  start=None if roots is None else roots[which])
        if roots is None:
            roots = np.empty_like(x_rows)
        roots[which] = u
        if padded:
            return (log_l - log_y_rows[which]) * mask[which], J * mask[which][..., None]
        return log_l - log_y_rows[which], J

    fit = least_squares_batch(evaluate, to_limit(starts), lower, upper)
    out = []
    for first, size in zip(np.cumsum([0] + sizes[:-1]), sizes, strict=True):
        best = first + int(np.argmin(fit.objective[first:first + size]))
        out.append((fit.z[best], bool(fit.converged[best])))
    return out
