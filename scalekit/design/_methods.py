"""How the next runs are chosen: baselines and model-based scores per unit of cost.

Every model-based method scores candidates through one joint covariance ``C`` of
the log predictions at the target rows and at the candidates, and picks a batch
greedily: the run of the highest score per unit cost (see below for ``ensemble``), then
the rank-one update ``C <- C - C[:, j] C[j, :] / (C[j, j] + s2)`` (what observing run ``j`` with noise
variance ``s2`` leaves; done on the factor ``A`` of ``C = F A F^T``), and again. The
methods differ in the score and in ``C``:

- ``d_optimal``: the gain in log-determinant of the information, ``log(1 + C_jj / s2)``
  (D-optimal design), with ``C`` from the Laplace approximation at the best fit.
- ``v_optimal``: the expected reduction of the summed predictive variance over the
  target rows, ``sum_t C_tj^2 / (C_jj + s2)`` (V-optimal design), same ``C``.
- ``ensemble`` (ours): the V-optimal score under a mixture posterior, ``C`` being
  the covariance over an ensemble of refits (the best fit and bootstrap refits over
  runs, each warm-started from the best fit and random rows of the start grid) plus the
  members' Laplace covariance, so that a law the runs do not yet pin (several optima,
  a flat direction the linearisation misses) shows as variance at the target and
  draws runs that tell the members apart; plus the law's discrepancy near the target
  (:func:`with_discrepancy`), so that runs beside the target keep their value once the
  parameters are pinned, and a run far from the target counts the discrepancy there,
  which the target rows do not explain, as noise. Its target rows are weighted by the
  predicted values, so that the score is the expected reduction of the summed squared
  error of the values (``Var(y) ~ y^2 Var(log y)``, the delta method), what R² scores.

``d_optimal`` and ``v_optimal`` score per unit cost and start from cheap runs spread out
(:func:`spread_pick`) until the law can be fitted. ``ensemble`` scores per
``cost ** COST_EXPONENT`` and starts from the cheapest runs, 2.5 per parameter within 2%
of the pool (:func:`start_pick`), both as Li et al.'s method does, and within half of the
budget beyond the P + 1 runs a fit needs (ours: the rest is left to the model).

Li et al. (2026), "Spend less, fit better: budget-efficient scaling law fitting via
active experiment selection", compare such criteria on ScaleBench; the baselines
``random``, ``cheapest`` and ``cost_random`` (probability inversely proportional to
cost) are theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Selection methods, in the order the benchmark reports them.
METHODS = ("random", "cheapest", "cost_random", "d_optimal", "v_optimal", "ensemble")
#: ``ensemble`` divides its score by ``cost ** COST_EXPONENT``: Li et al.'s (2026)
#: sub-linear cost penalty (their method's 0.4), so that a dear run beside the target can
#: outscore many cheap runs far from it; the textbook methods divide by cost.
COST_EXPONENT = 0.4


@dataclass(frozen=True)
class Scoring:
    """How a model-based method starts and scores (the module docstring says why).

    ``cost_exponent``: the score is divided by ``cost ** cost_exponent``;
    ``cheapest_start``: the starting design is :func:`start_pick`'s (else
    :func:`spread_pick`'s, until the law can be fitted); ``ensemble``: the posterior
    mixes bootstrap refits; ``discrepancy``: the law's discrepancy near the target
    joins the covariance; ``in_values``: the target rows are weighted by the
    predicted values.
    """

    cost_exponent: float = 1.0
    cheapest_start: bool = False
    ensemble: bool = False
    discrepancy: bool = False
    in_values: bool = False


#: The methods that fit the law and score candidates, and how.
SCORING = {"d_optimal": Scoring(), "v_optimal": Scoring(),
           "ensemble": Scoring(cost_exponent=COST_EXPONENT, cheapest_start=True, ensemble=True,
                               discrepancy=True, in_values=True)}


def baseline_pick(method: str, cost: np.ndarray, affordable: np.ndarray,
                  rng: np.random.Generator) -> int:
    """One run among the ``affordable`` ones (boolean mask) by a model-free rule."""
    index = np.flatnonzero(affordable)
    if method == "cheapest":
        return int(index[np.argmin(cost[index])])
    if method == "cost_random":
        weights = 1.0 / cost[index]
        return int(rng.choice(index, p=weights / weights.sum()))
    return int(rng.choice(index))


def greedy_batch(method: str, F: np.ndarray, A: np.ndarray, n_target: int, cost: np.ndarray,
                 money: float, k: int, noise, weights: np.ndarray | None = None
                 ) -> list[tuple[int, float, float]]:
    """Up to ``k`` picks within ``money``: ``(candidate position, score, share of the
    target variance it removes)``.

    Each pick is the best score per unit cost (per ``cost ** COST_EXPONENT`` for
    ``ensemble``). The joint covariance is ``F A F^T`` (kept factored: ``F`` has the
    ``n_target`` target rows, then one row per candidate; ``cost`` is the candidates').
    ``noise`` is the variance a candidate is observed with (one for all, or one each);
    ``weights`` scale the target rows (the predicted values, for the variance of the
    values rather than of their logs).
    """
    A = A.copy()
    T, Fc = F[:n_target], F[n_target:]
    noise = np.broadcast_to(np.asarray(noise, dtype=float), (len(Fc),))
    if weights is not None:
        T = T * weights[:, None]
    penalty = cost ** SCORING[method].cost_exponent
    taken: list[tuple[int, float, float]] = []
    free = np.ones(len(Fc), dtype=bool)
    for _ in range(k):
        ok = free & (cost <= money)
        if not ok.any():
            break
        FA = Fc @ A
        diag = np.maximum(np.einsum("mr,mr->m", FA, Fc), 0.0)
        TA = T @ A
        if method == "d_optimal":
            score = np.log1p(diag / noise)
        else:
            score = ((TA @ Fc.T) ** 2).sum(axis=0) / (diag + noise)
        j = int(np.argmax(np.where(ok, score / penalty, -np.inf)))
        before = max(float(np.einsum("tr,tr->", TA, T)), 1e-300)
        a = FA[j]
        A -= np.outer(a, a) / (diag[j] + noise[j])
        after = float(np.einsum("tr,tr->", T @ A, T))
        taken.append((j, float(score[j]), float(1.0 - after / before)))
        free[j] = False
        money -= cost[j]
    return taken


def with_discrepancy(F: np.ndarray, A: np.ndarray, target: np.ndarray, candidates: np.ndarray,
                     variance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The factored covariance ``F A F^T`` (target rows, then candidates) plus the law's
    discrepancy: a Gaussian process of ``variance`` and unit length scale in standardised
    log inputs (``target``, ``candidates``: one row each), in its Nystrom form on the
    target rows, ``K(x, T) K(T, T)^-1/2`` (exact at the target).

    A law is wrong by a smooth amount no refit removes (Kennedy & O'Hagan 2001, model
    discrepancy); only runs near the target tell what it is there, so once the parameters
    are pinned, cheap runs far away stop outscoring a dearer one beside the target.

    Also returns each row's own discrepancy variance that the target rows do not explain,
    ``variance - diag(G G^T)`` (0 at the target): the Nystrom form drops it, and a run
    observes it as noise on top of the law (the FITC correction, Snelson & Ghahramani
    2006), so a run far from the target tells less about the parameters the more the
    law is wrong.
    """
    points = np.vstack([target, candidates])
    kernel = np.exp(-0.5 * ((points[:, None, :] - target[None, :, :]) ** 2).sum(axis=-1))
    values, vectors = np.linalg.eigh(kernel[:len(target)])
    keep = values > 1e-8 * values.max()
    G = kernel @ (vectors[:, keep] / np.sqrt(values[keep])) * np.sqrt(variance)
    size = A.shape[0] + G.shape[1]
    out = np.zeros((size, size))
    out[:A.shape[0], :A.shape[0]] = A
    out[A.shape[0]:, A.shape[0]:] = np.eye(G.shape[1])
    own = np.maximum(variance - np.einsum("nr,nr->n", G, G), 0.0)
    return np.concatenate([F, G], axis=1), out, own


def start_pick(features: np.ndarray, cost: np.ndarray, affordable: np.ndarray,
               have: np.ndarray, allowance: float, must: bool) -> int | None:
    """A starting-design run: the cheapest affordable one (among equally cheap ones, the
    farthest from the runs ``have``: :func:`spread_pick`), if it fits in ``allowance``
    (what is left of the starting design's share) or the law ``must`` have more runs to
    be fitted at all; None when the starting design is done (Li et al. 2026 start from
    the cheapest runs)."""
    least = cost[affordable].min()
    if not must and least > allowance:
        return None
    return spread_pick(features, cost, affordable & (cost <= least * (1 + 1e-9)), have)


def spread_pick(features: np.ndarray, cost: np.ndarray, affordable: np.ndarray,
                have: np.ndarray) -> int:
    """A starting-design run: among the cheapest affordable quarter, the one farthest (in
    standardised log inputs) from the runs ``have`` (the cheapest when there are none)."""
    index = np.flatnonzero(affordable)
    cheap = index[cost[index] <= np.quantile(cost[index], 0.25)]
    if not len(have):
        return int(cheap[np.argmin(cost[cheap])])
    distance = np.min(np.linalg.norm(features[cheap, None, :] - features[None, have, :],
                                     axis=-1), axis=1)
    return int(cheap[np.argmax(distance)])
