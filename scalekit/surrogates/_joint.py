"""One law across all partial curves of a sweep: L_r(x) = E_r + B * x^-beta.

Every run r shares the data term ``B * x^-beta`` (x: tokens, steps or FLOPs);
its level is ``E_r = E + A * N_r^-alpha`` when run sizes N are given (the
Chinchilla form of Hoffmann et al. 2022, L = E + A/N^alpha + B/D^beta) or a free
per-run level otherwise. A run barely started thus borrows the curve's shape
from the longer runs and needs only its level from its own few points. Each
run's forecast is shifted by the mean log residual of its last points (run
quirks such as a different learning rate), and its uncertainty grows with the
horizon at the rate measured by hiding the tails of the observed prefixes and
forecasting them (:func:`scalekit.surrogates._base.horizon_rate`).

The law is :func:`scalekit.laws._shared_curve.shared_curve_law`, fitted by the
engine's batched minimiser (:func:`scalekit.fit._multistart.minimize_batch`) on log
residuals with the soft-L1 loss of :mod:`scalekit.fit._robust` (scale
``SOFT_L1_SCALE``), every parameter as a logarithm.
"""

from __future__ import annotations

import numpy as np

from scalekit.checks import check_choice, check_number
from scalekit.errors import InputError
from scalekit.fit import minimize_batch
from scalekit.laws import shared_curve_law
from scalekit.surrogates._base import (DIRECTIONS, Surrogate, check_quantiles, check_x, horizon_rate,
                                       mixture_quantiles)

#: Scale of the soft-L1 loss on log residuals: residuals beyond about 2% weigh less.
SOFT_L1_SCALE = 0.02


class _Design:
    """Runs, normalised inputs and the shared-curve law they are fitted with."""

    def __init__(self, x, y, run_index, n_runs, sizes, x_ref, size_ref):
        """``sizes``: one per run (or None for free per-run levels)."""
        self.lx = np.log(x / x_ref)
        self.ly = np.log(y)
        self.run = run_index
        self.n_runs = n_runs
        self.tied = sizes is not None
        self.ln_size = None if sizes is None else np.log(sizes / size_ref)
        self.law = shared_curve_law(None if self.tied else n_runs)

    def inputs(self, lx, run):
        """The law's inputs for points at ``lx`` of runs ``run``."""
        return ({"lx": lx, "ln_size": self.ln_size[run]} if self.tied
                else {"lx": lx, "run": run.astype(float)})

    def log_predict(self, p, lx, run):
        return self.law.log_predict_fitting(self.inputs(lx, run), p)


def _fit_design(design: _Design, y_min_per_run: np.ndarray) -> np.ndarray:
    """Fitting-space parameters of the shared-curve law: the best of four data-based starts,
    each minimised by :func:`scalekit.fit._multistart.minimize_batch` (soft-L1 loss on log
    residuals, scale 0.02)."""
    starts = []
    for beta in (0.3, 0.7):
        for share in (0.5, 0.85):
            level = np.log(share * y_min_per_run)
            if design.tied:
                start_level = [np.log(share * 0.7 * y_min_per_run.min()),
                               np.log(share * 0.3 * y_min_per_run.min()), np.log(0.3)]
            else:
                start_level = list(level)
            drop = np.exp(design.ly) - share * y_min_per_run[design.run]
            log_b = np.median(np.log(np.maximum(drop, 1e-6)) + beta * design.lx)
            starts.append([log_b, np.log(beta), *start_level])
    batch = minimize_batch(design.law, design.inputs(design.lx, design.run), design.ly,
                           np.array(starts), loss="soft_l1", delta=SOFT_L1_SCALE)
    if not np.isfinite(batch.objective).any():
        raise InputError("the joint law could not be fitted to these curves.")
    return batch.z[np.argmin(batch.objective)]


class JointSurrogate(Surrogate):
    """One scaling law fitted to every (partial) curve of a sweep at once.

    Parameters
    ----------
    holdout : float
        Share of each run's log-x span held back to measure the error growth.
    prior_rate, prior_points : float
        Prior growth of the log error per e-fold of x and its weight in points.
    interval_scale : float
        Multiplies every standard deviation (1 = as measured on the prefixes).
    recent_points : int
        The run's last points whose mean log residual shifts its forecast.
    direction : {"minimize", "maximize"}
        Loss (lower is better) or a score below 1 (higher is better).

    Attributes
    ----------
    params_ : dict
        ``B``, ``beta`` and either ``E``, ``A``, ``alpha`` (sizes given) or ``E_r``
        per run; x in units of ``x_ref_``, sizes in units of ``size_ref_``.
    runs_ : list of str
        The runs, in the order of the per-run arrays.
    rate_ : float
        Error growth per e-fold of x, shared by the runs.
    """

    def __init__(self, *, holdout: float = 0.3, prior_rate: float = 0.02,
                 prior_points: float = 2.0, interval_scale: float = 1.0,
                 recent_points: int = 3, direction: str = "minimize") -> None:
        self.holdout = holdout
        self.prior_rate = prior_rate
        self.prior_points = prior_points
        self.interval_scale = interval_scale
        self.recent_points = recent_points
        self.direction = direction

    def fit(self, x, y, *, runs, sizes=None):
        """Fit to the points of all runs; ``runs`` labels each point, ``sizes`` gives N per point."""
        check_choice("direction", self.direction, DIRECTIONS)
        check_number("holdout", self.holdout, low=0.0, high=1.0, low_open=True, high_open=True)
        check_number("interval_scale", self.interval_scale, low=0.0, low_open=True)
        check_number("recent_points", self.recent_points, low=1, integer=True)
        x = np.asarray(x, dtype=float).ravel()
        y = np.asarray(y, dtype=float).ravel()
        runs = np.asarray(runs).astype(str).ravel()
        if not (x.size == y.size == runs.size):
            raise InputError("x, y and runs must have one entry per point.")
        if sizes is not None:
            sizes = np.asarray(sizes, dtype=float).ravel()
            if sizes.size != x.size or not np.isfinite(sizes).all() or (sizes <= 0).any():
                raise InputError("sizes must give a positive finite size for every point.")
        if not np.isfinite(x).all() or (x <= 0).any():
            raise InputError("x must be finite and positive at every point.")
        if not np.isfinite(y).all() or (self.direction == "minimize" and (y <= 0).any()):
            raise InputError("y must be finite and positive at every point."
                             if self.direction == "minimize" else "y must be finite at every point.")
        loss = self._to_loss(y)
        names, index = np.unique(runs, return_inverse=True)
        if x.size < 4 or x.size < names.size + 2:
            raise InputError(f"the joint law needs more points than runs plus two; got {x.size} "
                             f"points in {names.size} runs.")
        run_sizes = None
        if sizes is not None:
            run_sizes = np.array([sizes[index == r][0] for r in range(names.size)])
            if np.unique(run_sizes).size < 3:
                run_sizes = None  # too few distinct sizes to fit E + A/N^alpha: free levels
        self.x_ref_ = float(np.exp(np.log(x).mean()))
        self.size_ref_ = 1.0 if run_sizes is None else float(np.exp(np.log(run_sizes).mean()))
        self.runs_ = names.tolist()
        self._run_sizes = run_sizes

        head, tail, cut = self._backtest_split(x, index, names.size)
        fit_all = self._fit_points(x, loss, index, names.size, np.ones_like(x, bool))
        if tail.any():
            fit_head = self._fit_points(x, loss, index, names.size, head)
            errors = fit_head["log_predict"](x, index) - np.log(loss)
            horizons = np.log(x / cut[index])
            rate = horizon_rate(errors[None], horizons[None], tail[None],
                                np.array([fit_all["sigma_pool"]]),
                                prior_rate=self.prior_rate, prior_points=self.prior_points)[0]
        else:
            rate = self.prior_rate
        self._fit_state = fit_all
        self.params_ = fit_all["params"]
        self.rate_ = float(rate)
        self.sigma_ = fit_all["sigma"]
        self.x_last_ = np.array([x[index == r].max() for r in range(names.size)])
        self.x_, self.y_ = x, y
        self.n_points_ = x.size
        return self

    def _backtest_split(self, x, index, n_runs):
        head = np.ones_like(x, bool)
        cut = np.array([x[index == r].max() for r in range(n_runs)])
        for r in range(n_runs):
            members = np.flatnonzero(index == r)
            lx = np.log(x[members])
            if members.size < 4:
                continue
            edge = lx.min() + (1 - self.holdout) * (lx.max() - lx.min())
            keep = lx <= edge + 1e-12
            keep[np.argsort(lx)[:2]] = True
            if keep.all():
                continue
            head[members] = keep
            cut[r] = x[members][keep].max()
        return head, ~head, cut

    def _fit_points(self, x, loss, index, n_runs, use):
        present = np.unique(index[use])
        remap = -np.ones(n_runs, int)
        remap[present] = np.arange(present.size)
        sizes = None if self._run_sizes is None else self._run_sizes[present]
        design = _Design(x[use], loss[use], remap[index[use]], present.size, sizes,
                         self.x_ref_, self.size_ref_)
        y_min = np.array([loss[use][remap[index[use]] == r].min() for r in range(present.size)])
        p = _fit_design(design, y_min)
        resid = design.ly - design.log_predict(p, design.lx, design.run)
        offsets = np.zeros(n_runs)
        recent = {}
        for local, r in enumerate(present):
            mine = resid[design.run == local][np.argsort(design.lx[design.run == local])]
            offsets[r] = mine[-self.recent_points:].mean()
            recent[r] = mine[-2 * self.recent_points:] - offsets[r]
        pool = float(np.sqrt(np.mean(np.concatenate(list(recent.values())) ** 2)))
        sigma = np.full(n_runs, pool)
        for r, centred in recent.items():   # scatter of the recent points, shrunk to the pool
            sigma[r] = np.sqrt((np.sum(centred ** 2) + 3 * pool ** 2) / (centred.size + 3))

        def log_predict(x_new, run_new):
            local = remap[run_new]
            lx = np.log(x_new / self.x_ref_)
            out = design.log_predict(p, lx, np.maximum(local, 0)) + offsets[run_new]
            return np.where(local >= 0, out, np.nan)

        params = {"B": float(np.exp(p[0])), "beta": float(np.exp(p[1]))}
        if design.tied:
            params.update(E=float(np.exp(p[2])), A=float(np.exp(p[3])), alpha=float(np.exp(p[4])))
        else:
            params["E_r"] = {self.runs_[r]: float(np.exp(v)) for r, v in zip(present, p[2:], strict=True)}
        return {"params": params, "log_predict": log_predict, "sigma": sigma, "sigma_pool": pool}

    def predict_quantiles(self, x, qs, *, runs):
        """Quantiles (len(x), len(qs)) of run ``runs[i]`` at ``x[i]`` (``runs`` may be one name)."""
        self._check_fitted()
        x, qs = check_x(x), check_quantiles(qs)
        runs = np.broadcast_to(np.asarray(runs).astype(str), x.shape)
        lookup = {name: i for i, name in enumerate(self.runs_)}
        unknown = sorted(set(runs) - set(lookup))
        if unknown:
            raise InputError(f"run {unknown[0]!r} was not among the runs the joint law was fitted to.")
        index = np.array([lookup[r] for r in runs])
        mean = self._fit_state["log_predict"](x, index)
        h = np.maximum(np.log(x / self.x_last_[index]), 0.0)
        sd = np.sqrt(self.sigma_[index] ** 2 + (self.rate_ * h) ** 2) * self.interval_scale
        levels = qs if self.direction == "minimize" else 1.0 - qs
        q = mixture_quantiles(mean[:, None], np.ones((x.size, 1)), np.maximum(sd, 1e-6), levels)
        return self._from_loss(np.exp(q))

    def predict(self, x, *, runs):
        """Median forecast of run ``runs[i]`` at ``x[i]``."""
        return self.predict_quantiles(x, [0.5], runs=runs)[:, 0]
