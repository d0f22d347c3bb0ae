"""The ``commit`` allocator: probe cheaply across sizes, fit a law, finish what the budget can.

Successive Halving ranks runs by what they show part-way; the best a budget
can buy, though, is usually one run trained *to the end of its schedule*: a
half-finished cosine run is not what it will become, since its loss drops
when its learning rate decays. ``commit`` spends the budget the way a
scaling-law study does (Hoffmann et al. 2022 fit ``L(N, D)`` on small runs and
train the one large run the budget affords):

1. **Probe** (phase 0, at most ``probe_share`` of the budget): complete cheap
   candidates spread over sizes and schedule lengths (farthest-point design in
   ``(log N, log D)``, one per cell). Where no candidate is cheap enough to
   finish, the cheapest candidate of each of a few sizes is trained part-way
   instead, and its points are read as if its schedule had ended there.
2. **Fit** the law ``L(N, x) = E + A·(N/N₀)^-α + B·(x/x₀)^-β`` (Hoffmann et al.
   2022, approach 3; ``x`` = FLOPs per parameter ∝ tokens) to the *end-of-schedule*
   losses of the probes by variable projection (a grid over ``α, β``, a
   non-negative least-squares solve for ``E, A, B``, relative residuals). Its
   forecasts read the data term no further than ``data_extrapolation`` times the
   probes' largest ``x``.
3. **Guard** (phase 1): the candidates of the best predicted configuration
   that the rest of the budget can finish with a short prefix
   (``guard_fraction`` of their schedule) of each of its other variants — same
   size and same schedule, differing in, e.g., the learning rate — are each
   trained that prefix, and the lowest loss at the prefix wins. (A configuration
   that can be guarded whole goes first where its forecast lies within the
   law's residual spread of the best one's; else the best one is guarded in
   part, as many of its variants as fit.)
   Where finished probes show how far above its end-of-schedule loss a run lies
   part-way (the *schedule shape*), a run the budget cannot finish competes too:
   its predicted loss after all that is left is the law at that compute times the
   shape at that share of its schedule (at least ``min_partial``), and it is
   guarded and committed to part-way when that beats every finishable one.
   A configuration with a single variant has nothing to be guarded against but
   the law: its prefix is checked against the law's forecast there, and it is
   dropped when it lies further above it than the worst probe did at that share
   of its schedule (times the law's residual spread), e.g. a diverging learning
   rate.
4. **Commit** (phases 2, 3, …): the winner is trained to its end; whatever is
   left carries the loss-compute frontier on, never below the largest compute
   any run has reached: it finishes, one after the other, the candidates ending
   at or beyond that compute that the law forecasts to end least above its
   frontier at their compute (the lowest forecast of any candidate size there),
   and, when none fits, trains part-way with exactly what is left the best
   predicted run that this carries that far. A run ending below adds no point
   where a frontier law is read (the largest compute) and pulls a law fitted to
   the explored frontier toward compute already mapped; a run counts as far as its
   own end, not as far as what is left would take it. Where no run qualifies, the
   rest of the budget is not spent, and where that is more than a tenth of it the
   decisions (``leave unspent``) and the allocation's ``unspent_reason`` say why.
   The budget is never exceeded.

Every decision depends only on the points seen and the cost model, so
``plan`` and a resumed ``run`` make the same ones; :attr:`CommitLoop.decisions`
says what was probed, what was committed to and why. Each forecast it states
comes with 80% and 95% prediction intervals (:meth:`EndLaw.interval`,
:meth:`CommitLoop.forecast`; a bound from above after part-way probes, none where
the probes cannot measure the law's error); no decision reads them.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass

import numpy as np

from scalekit.allocate._engine import UNSPENT, Advance, Allocation, _join
from scalekit.allocate._sweep import Curve, Sweep
from scalekit.checks import check_choice, check_number

_EMPTY = Curve(np.empty(0), np.empty(0), np.empty(0))
#: Exponent grid of the law fit (variable projection over alpha and beta).
_EXPONENTS = np.geomspace(0.05, 1.5, 24)
#: Exponents of the size and data terms where the probes cannot determine them
#: (Hoffmann et al. 2022, approach 3).
PRIOR_ALPHA, PRIOR_BETA = 0.34, 0.28
#: Levels of the prediction intervals stated with every forecast.
LEVELS = (0.8, 0.95)
#: How the law's choice must separate from the robust rule's (:class:`CommitPolicy`).
SEPARATIONS = ("none", "point", "interval")


@dataclass
class EndLaw:
    """``L(N, x) = E + A (N/N0)^-alpha + B (x/x0)^-beta`` fitted to end-of-schedule losses.

    A term whose axis takes a single value in the data is dropped (its level is
    part of ``E``); an exponent whose axis takes two values is held at
    :data:`PRIOR_ALPHA` or :data:`PRIOR_BETA`, and both are held where the points are
    no more than the law's parameters with both free. Fitted by variable projection:
    on a grid over the exponents, the levels ``E, A, B >= 0`` minimising the squared relative residuals (every
    support of the non-negative least-squares problem solved at once, the best
    feasible one kept), then the best grid point. ``sd_`` is the root mean
    square relative residual; ``x_max_`` the largest ``x`` fitted.
    """

    def fit(self, params: np.ndarray, x: np.ndarray, loss: np.ndarray, *,
            groups: np.ndarray | None = None) -> EndLaw:
        """Fit the law; with ``groups`` (one label per point, e.g. the probe it comes
        from) and three groups or more, also its leave-one-group-out error ``cv_``."""
        params, x, loss = (np.asarray(v, float) for v in (params, x, loss))
        self.cv_, self.cv_dof_ = np.nan, 0
        if groups is not None and len(set(groups)) >= 3:
            groups = np.asarray(groups)
            squared = []
            for label in dict.fromkeys(groups):
                out = groups == label
                rest = EndLaw().fit(params[~out], x[~out], loss[~out])
                squared.append(np.mean((rest.predict(params[out], x[out]) / loss[out] - 1) ** 2))
            self.cv_, self.cv_dof_ = float(np.sqrt(np.mean(squared))), len(squared) - 1
        self.x_max_ = float(x.max())
        self.n0_, self.x0_ = float(np.exp(np.log(params).mean())), float(np.exp(np.log(x).mean()))
        self.use_n_ = bool(np.ptp(np.log(params)) > 1e-9)
        self.use_x_ = bool(np.ptp(np.log(x)) > 1e-9)
        # an exponent is free only where its axis has three values or more; with two, the
        # data cannot tell it from E, and it is held at Hoffmann et al.'s (2022) value
        alphas = _EXPONENTS if _distinct(params) > 2 else np.array([PRIOR_ALPHA])
        betas = _EXPONENTS if _distinct(x) > 2 else np.array([PRIOR_BETA])
        # nor where the points cannot over-determine the law with both exponents free
        # (``E, A, B, alpha, beta``): such a fit passes through every point and tells nothing
        if len(loss) <= 1 + 2 * (self.use_n_ + self.use_x_):
            alphas, betas = np.array([PRIOR_ALPHA]), np.array([PRIOR_BETA])
        step = float(_EXPONENTS[1] / _EXPONENTS[0])
        for _ in range(2):  # the grid, then a finer one around its best point
            a, b = (g.ravel() for g in np.meshgrid(alphas, betas, indexing="ij"))
            design = self._design(params[None, :], x[None, :], a[:, None], b[:, None])
            coef, sse = _nonnegative_fit(design / loss[None, :, None], np.ones_like(loss))
            best = int(np.argmin(sse))
            alphas, betas = (grid if len(grid) == 1 else
                             pick[best] * np.geomspace(1 / step, step, len(_EXPONENTS))
                             for grid, pick in ((alphas, a), (betas, b)))
        self.alpha_, self.beta_, self.coef_ = float(a[best]), float(b[best]), coef[best]
        self.sd_ = float(np.sqrt(sse[best] / max(len(loss) - 1, 1)))
        self.free_ = (len(alphas) > 1, len(betas) > 1)
        # the prediction interval's parts: the fitted parameters' covariance (per unit
        # residual variance) from the relative Jacobian, and the residual scale on n - p
        jacobian = self._gradient(params, x) / loss[:, None]
        self.dof_ = len(loss) - jacobian.shape[1]
        self.scale_ = float(np.sqrt(sse[best] / self.dof_)) if self.dof_ > 0 else np.nan
        self.cov_ = np.linalg.pinv(jacobian.T @ jacobian)
        return self

    def _gradient(self, params, x) -> np.ndarray:
        """``(n, p)`` derivatives of the law at ``(params, x)`` with respect to its fitted
        parameters: ``E`` and the size and data levels off their bound of zero, then the
        free exponents whose level is off it (a size or data level at zero and the
        exponents held are not fitted). ``E`` counts even at its bound: the fit stopped
        there because ``E >= 0``, not because the points rule out an ``E`` above it, and
        where the points cannot tell ``E`` from a term (an axis they barely span) the
        forecast's leverage must say so; reading ``E`` as known to be zero would make the
        interval as narrow as if they could (at a bound the linearised theory does not
        hold; Self and Liang 1987). Unlike a dropped term's, ``E``'s column has no
        exponent, so the linearisation is defined there."""
        design = self._design(np.asarray(params, float), np.asarray(x, float),
                              self.alpha_, self.beta_)
        on = self.coef_ > 0
        on[0] = True
        columns = [design[:, j] for j in range(design.shape[1]) if on[j]]
        logs = [np.log(np.asarray(params, float) / self.n0_)] if self.use_n_ else []
        logs += [np.log(np.asarray(x, float) / self.x0_)] if self.use_x_ else []
        free = [f for f, used in zip(self.free_, (self.use_n_, self.use_x_), strict=True) if used]
        for j, (log, is_free) in enumerate(zip(logs, free, strict=True), start=1):
            if is_free and on[j]:
                columns.append(-self.coef_[j] * design[:, j] * log)
        return np.stack(columns, axis=-1)

    @property
    def no_interval(self) -> str | None:
        """Why the law states no prediction interval (None where it does): no residual
        freedom to measure its error by, or a size or data term the fit dropped (its level
        at the bound zero). A dropped term makes the law flat along its axis, and the
        linearisation, which reads the level as known to be zero, has no leverage along
        it: its interval would be as narrow for a run 100 times larger as for a probe
        (at a bound the linearised theory does not hold; Self and Liang 1987)."""
        if np.any(self.coef_[1:] <= 0):
            return "the fit dropped a size or data term"
        if not (self.dof_ > 0 or self.cv_dof_ > 0):
            return "no more probe points than law parameters"
        return None

    def interval(self, params, x, level: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
        """Prediction interval at ``level`` for an end-of-schedule loss at ``(params, x)``.

        The relative error ``r = L_law / L - 1`` of a new run is read as Gaussian with
        variance ``s^2 (1 + h)``: ``s^2`` the residual sum of squares over ``n - p``
        (``p`` fitted parameters: ``E``, the size and data levels off zero and the free
        exponents; see :meth:`_gradient`) and
        ``h = g' (J'J)^-1 g`` the leverage of the new point (``J`` the Jacobian of the
        relative residuals, ``g`` the law's relative gradient there; the linearised
        nonlinear-regression interval, Seber and Wild 1989, section 5.3), on ``n - p``
        degrees of freedom. Where the fit was given groups (``cv_``), the error a new
        run's law makes is read from the leave-one-group-out error instead, which also
        holds what the law's form gets wrong: variance ``cv^2 + s^2 h`` (``s = cv`` where
        ``n <= p``) on ``groups - 1`` degrees of freedom. With the Student ``t`` quantile
        ``q = t((1 + level)/2) sqrt(variance)`` the loss lies in
        ``[L_law / (1 + q), L_law / (1 - q)]`` (``inf`` above for ``q >= 1``); NaN where
        :attr:`no_interval` says why there is none."""
        from scipy.stats import t

        params, x = np.broadcast_arrays(np.asarray(params, float), np.asarray(x, float))
        forecast = self.predict(params, x)
        if self.no_interval is not None:
            return np.full(params.shape, np.nan), np.full(params.shape, np.nan)
        g = self._gradient(params.ravel(), x.ravel()) / forecast.ravel()[:, None]
        leverage = np.einsum("ni,ij,nj->n", g, self.cov_, g).reshape(params.shape)
        if self.cv_dof_ > 0:
            scale = self.scale_ if self.dof_ > 0 else self.cv_
            q = t.ppf(0.5 + level / 2, self.cv_dof_) * np.sqrt(self.cv_ ** 2 + scale ** 2 * leverage)
        else:
            q = t.ppf(0.5 + level / 2, self.dof_) * self.scale_ * np.sqrt(1 + leverage)
        high = np.where(q < 1, forecast / np.maximum(1 - q, 1e-300), np.inf)
        return forecast / (1 + q), high

    def _design(self, params, x, alpha, beta) -> np.ndarray:
        """``(grid, n, k)`` columns ``1``, ``(N/N0)^-alpha``, ``(x/x0)^-beta`` (those used)."""
        params, x, alpha, beta = np.broadcast_arrays(params, x, alpha, beta)
        columns = [np.ones_like(params)]
        if self.use_n_:
            columns.append((params / self.n0_) ** -alpha)
        if self.use_x_:
            columns.append((x / self.x0_) ** -beta)
        return np.stack(columns, axis=-1)

    def predict(self, params, x) -> np.ndarray:
        params, x = np.broadcast_arrays(np.asarray(params, float), np.asarray(x, float))
        design = self._design(params.ravel(), x.ravel(), self.alpha_, self.beta_)
        return (design @ self.coef_).reshape(params.shape)

    @property
    def on_bound(self) -> str:
        """The fitted parameters at a bound, in words (empty where none is): ``E = 0``, a
        size or data term dropped (its level at zero), a free exponent at or past the edge
        of its grid."""
        said = ["E = 0"] if self.coef_[0] <= 0 else []
        used = [name for name, on in (("size", self.use_n_), ("data", self.use_x_)) if on]
        said += [f"{name} term dropped" for name, level in zip(used, self.coef_[1:], strict=True)
                 if level <= 0]
        for name, value, free in (("alpha", self.alpha_, self.free_[0] and self.use_n_),
                                  ("beta", self.beta_, self.free_[1] and self.use_x_)):
            if free and not _EXPONENTS[0] * 1.001 < value < _EXPONENTS[-1] / 1.001:
                said.append(f"{name} = {value:.3g} at the edge of its grid")
        return ", ".join(said)

    def describe(self) -> str:
        terms = [f"E={self.coef_[0]:.4g}"]
        if self.use_n_:
            terms.append(f"alpha={self.alpha_:.3g}")
        if self.use_x_:
            terms.append(f"beta={self.beta_:.3g}")
        said = ", ".join(terms) + f", residual sd {self.sd_:.2%}"
        if self.cv_dof_ > 0:
            said += f", leave-one-probe-out error {self.cv_:.2%} ({self.cv_dof_ + 1} probes)"
        if self.on_bound:
            said += f"; on a bound: {self.on_bound}"
        return said


def _distinct(values: np.ndarray) -> int:
    """Distinct values, counted on a log scale to 1e-9."""
    return len(np.unique(np.round(np.log(values), 9)))


def _nonnegative_fit(design: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative least squares for a batch of small problems ``design (g, n, k)``: every
    support solved by least squares, the feasible one of least error kept (the NNLS optimum
    is the least-squares solution on its support). Returns ``(coef (g, k), sse (g,))``."""
    g, _, k = design.shape
    coef, sse = np.zeros((g, k)), np.full(g, float(np.sum(target ** 2)))  # the empty support
    for mask in range(1, 2 ** k):
        support = [j for j in range(k) if mask >> j & 1]
        sub = design[:, :, support]
        gram = np.einsum("gni,gnj->gij", sub, sub) + 1e-12 * np.eye(len(support))
        solution = np.linalg.solve(gram, np.einsum("gni,n->gi", sub, target)[..., None])[..., 0]
        error = np.sum((np.einsum("gni,gi->gn", sub, solution) - target) ** 2, axis=1)
        better = np.all(solution >= 0, axis=1) & (error < sse)
        sse = np.where(better, error, sse)
        full = np.zeros((g, k))
        full[:, support] = solution
        coef = np.where(better[:, None], full, coef)
    return coef, sse


@dataclass
class CommitPolicy:
    """Settings of the ``commit`` allocator (see the module docstring).

    Parameters
    ----------
    probe_share : float
        Largest share of the budget spent on probes.
    guard_fraction : float
        Share of its schedule each variant of the chosen configuration is tried on.
    max_probes : int
        Most probes.
    min_partial : float
        Least share of its schedule a run the budget cannot finish must reach for a
        partial commitment to it (before that, its learning rate has barely decayed).
    data_extrapolation : float
        Forecasts read the law's data term at most at this multiple of the largest
        compute per parameter (∝ tokens per parameter) among the probes.
    max_probe_error, max_spread : float, optional
        Where the law's choice differs from the robust rule's (:meth:`CommitLoop._rule_pick`),
        the law is trusted only with a leave-one-probe-out error and a residual spread
        (relative) up to these (None: not checked).
    check_bounds : bool
        Nor with a parameter on its bound (``E = 0``, a size or data term dropped, an
        exponent at the edge of its grid) or a term the probes cannot identify (they span
        a single size, or schedule length per parameter, where the candidates do not).
    size_extrapolation : float, optional
        Nor where its choice is larger than this multiple of the largest probe, or reads
        the data term past ``data_extrapolation`` times the probes' largest (None: not
        checked).
    separation : str
        Nor, with ``"point"``, where the upper end of the 80% interval of its choice's
        forecast is not below the forecast of the rule's choice; with ``"interval"``,
        below the lower end of that one's 80% interval; ``"none"``: not checked.
    """

    probe_share: float = 0.1
    guard_fraction: float = 0.05
    max_probes: int = 12
    min_partial: float = 0.5
    data_extrapolation: float = 4.0
    max_probe_error: float | None = None
    max_spread: float | None = None
    check_bounds: bool = False
    size_extrapolation: float | None = None
    separation: str = "none"
    name: str = "commit"

    @classmethod
    def checked(cls, **settings) -> CommitPolicy:
        """The settings leave-one-family-out chose on every one of eight sweep families held
        out (``bench/allocate_generalisation.py``; docs/allocate.md): probes on 3% of the
        budget, the law set aside for the robust rule where a parameter is on its bound or
        its choice's 80% interval does not separate from the rule's. Not the default: it
        raises the (Mis)Fitting every-run regret at 5% from 2.40% to 3.09%."""
        return cls(**{"probe_share": 0.03, "check_bounds": True, "separation": "interval",
                      **settings})

    def __post_init__(self) -> None:
        check_number("probe_share", self.probe_share, low=0, high=1, high_open=True)
        check_number("guard_fraction", self.guard_fraction, low=0, high=1, low_open=True,
                     high_open=True)
        check_number("max_probes", self.max_probes, low=1, integer=True)
        check_number("min_partial", self.min_partial, low=0, high=1)
        check_number("data_extrapolation", self.data_extrapolation, low=1)
        for name, low in (("max_probe_error", 0), ("max_spread", 0), ("size_extrapolation", 1)):
            if getattr(self, name) is not None:
                check_number(name, getattr(self, name), low=low, low_open=True)
        check_choice("separation", self.separation, SEPARATIONS)


class CommitLoop:
    """One ``commit`` allocation; :meth:`steps` is the generator (as :class:`HalvingLoop`'s),
    :attr:`state` its progress and :attr:`decisions` the reasons, one dict per phase
    (``phase``, ``action``, ``runs``, ``why``; the probe's also ``law``; ``guard``,
    ``commit`` and ``spend the rest`` also ``forecast``: :meth:`forecast` of the run,
    its loss with 80% and 95% intervals, which ``why`` states in words and
    ``state.forecasts`` collects for the runs trained)."""

    def __init__(self, sweep: Sweep, policy: CommitPolicy, budget: float, *,
                 runs: list[str] | None = None, seed: int = 0,
                 prefixes: Mapping[str, list[str]] | None = None) -> None:
        check_number("budget", budget, low=0, low_open=True)
        self.sweep, self.policy, self.budget = sweep, policy, float(budget)
        self.runs = list(runs if runs is not None else sweep.runs)
        # runs that continue one another (``prefixes``: run -> the longer runs it is a
        # prefix of, e.g. :func:`~scalekit.allocate._continuation.prefix_groups`), both ways
        self.related: dict[str, set[str]] = {r: set() for r in self.runs}
        for short, longer in (prefixes or {}).items():
            for long in longer:
                if short in self.related and long in self.related:
                    self.related[short].add(long)
                    self.related[long].add(short)
        self.state = Allocation({r: _EMPTY for r in self.runs}, {r: 0.0 for r in self.runs},
                                0.0, self.budget)
        self.decisions: list[dict] = []
        self.law: EndLaw | None = None
        self.set_aside: EndLaw | None = None  # a law that failed its checks
        self.part_way = False
        self.shape: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.dropped: set[str] = set()
        self.end = {r: sweep.flops_per_unit[r] * sweep.max_resource[r] for r in self.runs}
        self.size = {r: float(sweep.params.get(r, np.nan)) for r in self.runs}
        if not all(np.isfinite(v) and v > 0 for v in self.size.values()):
            self.size = {r: 1.0 for r in self.runs}  # no sizes: the law has the data axis only

    # -- the generator -------------------------------------------------------------------
    def steps(self) -> Generator[list[Advance], Mapping[str, Curve], Allocation]:
        probes, complete = self._probes()
        self.decisions.append(dict(phase=0, action="probe", runs=list(probes),
                                   why="cheap runs spread over sizes and schedule lengths, "
                                       + ("each trained to the end of its schedule" if complete
                                          else "none cheap enough to finish: each trained "
                                               "part-way") if probes else
                                       "none: the candidates share one size, so the most "
                                       "compute the budget can finish wins"))
        yield from self._advance(0, probes)
        self.part_way = bool(probes) and not complete
        self.law = self._fit_law(probes, complete)
        self.shape = self._schedule_shape(probes) if complete else None
        phase = 1
        cell, variants = self._choose()
        if self.law is not None and cell is not None:
            failed = self._failed_checks(cell)
            if failed:
                self._fall_back(failed, cell)
                cell, variants = self._choose()
        if cell is not None:
            if len(variants) > 1:
                prefix = {r: self.policy.guard_fraction * self.sweep.max_resource[r]
                          for r in variants}
                self.decisions.append(dict(phase=1, action="guard", runs=variants,
                                           why=f"variants of the best predicted configuration "
                                               f"({self._said(cell)}) tried on "
                                               f"{self.policy.guard_fraction:.0%} of their "
                                               "schedule", forecast=self.forecast(cell)))
                yield from self._advance(1, {r: max(prefix[r], self.state.reached[r])
                                             for r in variants})
                cell = min(variants, key=lambda r: (self._loss_at(r, prefix[r]), r))
            elif self._lone_check(cell):
                prefix = self.policy.guard_fraction * self.sweep.max_resource[cell]
                yield from self._advance(1, {cell: max(prefix, self.state.reached[cell])})
                if self._off_course(cell, prefix):
                    self.decisions.append(dict(phase=1, action="drop", runs=[cell],
                                               why="its only variant lies further above the "
                                                   "law at "
                                                   f"{self.policy.guard_fraction:.0%} of its "
                                                   "schedule than any probe did"))
                    self.dropped.add(cell)
                    options = self._affordable()
                    cell = options[0] if options else self._partial_option()
                    cell = cell[0] if isinstance(cell, tuple) else cell
            phase = 2
            while cell is not None and not self.state.exhausted:
                left = self.budget - self.state.spent
                finish = self.sweep.cost(cell, self.state.reached[cell],
                                         self.sweep.max_resource[cell]) <= left * (1 + 1e-12)
                at = None if finish else self._compute(cell) + left
                self.decisions.append(dict(phase=phase, action="commit", runs=[cell],
                                           why=self._why_commit(cell, phase, finish, left),
                                           forecast=self.forecast(cell, at)))
                yield from self._advance(phase, {cell: self.sweep.max_resource[cell]})
                phase += 1
                reach = self._reach()
                options = [r for r in self._affordable() if self.end[r] >= reach * (1 - 1e-9)]
                cell = (min(options, key=lambda r: (self._excess(r), self._predicted(r), r))
                        if options else None)   # without sizes every excess is 1: lowest forecast
        left = self.budget - self.state.spent
        while left > 1e-9 * self.budget and not self.state.exhausted:
            run = self._best_partial(left)
            if run is None:
                break
            at = min(self._compute(run) + left, self.end[run])
            self.decisions.append(dict(phase=phase, action="spend the rest", runs=[run],
                                       why="no candidate that carries the frontier on can be "
                                           "finished with what is left; lowest predicted loss "
                                           "of the runs it carries at least to the largest "
                                           f"compute reached: {self._said(run, at)}",
                                       forecast=self.forecast(run, at)))
            yield from self._advance(phase, {run: self.sweep.max_resource[run]})
            phase += 1
            left = self.budget - self.state.spent
        self.state.unspent_reason = self._unspent_reason(phase)
        self.state.promotions = [list(d["runs"]) for d in self.decisions]
        self.state.forecasts = [dict(run=d["runs"][0], **d["forecast"]) for d in self.decisions
                                if d["action"] in ("commit", "spend the rest") and d["forecast"]]
        return self.state

    def _advance(self, phase: int, stops: Mapping[str, float]):
        """Yield one batch training each run to its stop, cut to the budget (in order)."""
        state, batch = self.state, []
        for run, stop in stops.items():
            self._continue(run)
            start = state.reached[run]
            stop = min(stop, self.sweep.max_resource[run])
            cost = self.sweep.cost(run, start, stop)
            left = self.budget - state.spent
            if cost > left:
                stop, cost, state.exhausted = self.sweep.resource_after(run, start, left), left, True
            if stop > start:
                batch.append(Advance(phase, run, start, stop, cost))
                state.spent = min(state.spent + cost, self.budget)
                state.reached[run] = stop
            if state.exhausted:
                break
        if batch:
            results = yield batch
            for a in batch:
                state.observed[a.run] = _join(state.observed[a.run], results.get(a.run, _EMPTY))
            state.advances.extend(batch)

    # -- decisions ----------------------------------------------------------------------
    def _coords(self, run: str) -> np.ndarray:
        return np.array([np.log(self.size[run]), np.log(self.end[run] / self.size[run])])

    def _probes(self) -> tuple[dict[str, float], bool]:
        """Runs to probe and how far: farthest-point design over the cheap finishable cells,
        or, where fewer than three cells can be finished, part-way runs of a few sizes;
        none where every candidate has the same size (a law across sizes has nothing to
        learn, and at one size the longest schedule the budget finishes ends lowest)."""
        if len({self.size[r] for r in self.runs}) < 2:
            return {}, False  # one size: no law across sizes to learn; the longest wins
        cap = self.policy.probe_share * self.budget
        cells = {}
        for run in sorted(self.runs, key=lambda r: (self.end[r], r)):
            cells.setdefault((self.size[run], self.end[run]), run)
        cheap = [r for r in cells.values() if self.end[r] <= cap]
        if len({tuple(self._coords(r)) for r in cheap}) >= 3:
            coords = {r: self._coords(r) for r in cheap}
            scale = np.ptp(np.array(list(coords.values())), axis=0)
            scale = np.where(scale > 0, scale, 1.0)
            chosen, spent = [cheap[0]], self.end[cheap[0]]
            while len(chosen) < self.policy.max_probes:
                fits = [r for r in cheap if r not in chosen and spent + self.end[r] <= cap]
                if not fits:
                    break
                far = [min(np.linalg.norm((coords[r] - coords[c]) / scale) for c in chosen)
                       for r in fits]
                if max(far) <= 0:
                    break
                pick = fits[int(np.argmax(far))]
                chosen.append(pick)
                spent += self.end[pick]
            return {r: self.sweep.max_resource[r] for r in chosen}, True
        sizes = sorted({self.size[r] for r in self.runs})
        picks = [sizes[int(i)] for i in np.unique(np.round(
            np.linspace(0, len(sizes) - 1, min(len(sizes), 4))))]
        runs = [min((r for r in self.runs if self.size[r] == s), key=lambda r: (self.end[r], r))
                for s in picks]
        share = cap / len(runs)
        return {r: self.sweep.resource_after(r, 0.0, share) for r in runs}, False

    def _fit_law(self, probes, complete) -> EndLaw | None:
        """The law on the probes' end points (their last points; with part-way probes,
        every point past a third of the probe's compute, read as schedule-free)."""
        points = {}
        for run in probes:
            curve = self.state.observed[run]
            if len(curve):
                keep = slice(-1, None) if complete else curve.compute >= curve.compute[-1] / 3
                points[run] = (curve.compute[keep] / self.size[run], curve.loss[keep])
        if sum(len(v[1]) for v in points.values()) < 2:
            return None
        law = EndLaw().fit(np.concatenate([np.full(len(v[0]), self.size[r])
                                           for r, v in points.items()]),
                           np.concatenate([v[0] for v in points.values()]),
                           np.concatenate([v[1] for v in points.values()]),
                           groups=np.concatenate([[r] * len(v[1]) for r, v in points.items()]))
        self.decisions[-1]["law"] = law.describe()
        return law

    def _predicted(self, run: str, compute: float | None = None) -> float:
        """The law's forecast of ``run``'s loss at ``compute`` (default: its end).

        Without a law (no probe logged a point), a score instead: the most compute
        wins, and among equal computes the size nearest 20 tokens per parameter, the
        compute-optimal ratio of Hoffmann et al. (2022) (``D/N = C / (6 N^2)``)."""
        compute = self.end[run] if compute is None else compute
        if self.law is None:
            return self._score(run, compute)
        x, ratio = self._read_at(run, compute)
        return float(self.law.predict(self.size[run], x) * ratio)

    def _score(self, run: str, compute: float | None = None) -> float:
        """The robust rule's score (lowest first): the most compute, and among equal
        computes the size nearest 20 tokens per parameter, the compute-optimal ratio of
        Hoffmann et al. (2022) (``D/N = C / (6 N^2)``)."""
        compute = self.end[run] if compute is None else compute
        return float(-np.log(compute) + 1e-3 * abs(np.log(compute / (120.0 * self.size[run] ** 2))))

    def _read_at(self, run: str, compute: float) -> tuple[float, float]:
        """Where the law is read for ``run`` at ``compute`` and the schedule shape's factor:
        the data term is not extrapolated past a bounded multiple of the probes' longest
        schedule per parameter (short probes overstate how far more data keeps helping)."""
        ratio = 1.0 if self.shape is None else float(np.interp(compute / self.end[run],
                                                               *self.shape[:2]))
        return min(compute / self.size[run], self.policy.data_extrapolation * self.law.x_max_), ratio

    def forecast(self, run: str, compute: float | None = None) -> dict | None:
        """The law's forecast of ``run``'s loss at ``compute`` (default: its end) with its
        prediction intervals (:meth:`EndLaw.interval`, times the schedule shape's factor
        part-way), as plain data: ``loss``, ``compute`` and ``[low, high]`` per level in
        :data:`LEVELS`; None without a law.

        After part-way probes the interval is one-sided, ``[0, high]`` with ``high`` the
        upper end of the law's interval at ``2 level - 1`` (the ``level`` quantile): their
        points were read as schedule ends, and a run whose schedule decays ends below
        such a point by an amount the probes do not show (the premise of the schedule
        shape), so the law bounds the loss from above only."""
        if self.law is None:
            return None
        compute = self.end[run] if compute is None else float(compute)
        x, ratio = self._read_at(run, compute)
        said = {"loss": float(self.law.predict(self.size[run], x) * ratio), "compute": compute}
        one_sided = self.part_way and self.law.no_interval is None
        for level in LEVELS:
            low, high = (self.law.interval(self.size[run], x, level) if not one_sided else
                         (0.0, self.law.interval(self.size[run], x, 2 * level - 1)[1]))
            said[f"{level:.0%}"] = [float(low * ratio), float(high * ratio)]
        if self.law.no_interval is not None:
            said["no interval"] = self.law.no_interval
        return said

    def _schedule_shape(self, probes) -> tuple[np.ndarray, np.ndarray] | None:
        """How far above the law's end-of-schedule loss a run lies part-way through its
        schedule (its learning rate not yet decayed): the median over the finished probes
        of ``loss(f T) / L(N, f x)`` at fractions ``f`` of their schedule, as
        ``(fractions, ratios)``; None without a law or with fewer than two finished probes."""
        curves = [(r, self.state.observed[r]) for r in probes
                  if self.state.reached[r] >= self.sweep.max_resource[r]]
        curves = [(r, c) for r, c in curves if len(c) >= 3]
        if self.law is None or len(curves) < 2:
            return None
        fractions = np.linspace(0.05, 1.0, 20)
        ratios = [np.interp(fractions, c.compute / self.end[r],
                            c.loss / self.law.predict(self.size[r], c.compute / self.size[r]))
                  for r, c in curves]
        ratio = np.maximum(np.median(ratios, axis=0), 1.0)
        ratio[-1] = 1.0
        return fractions, ratio, np.maximum(np.max(ratios, axis=0), ratio)

    def _choose(self) -> tuple[str | None, list[str]]:
        """The configuration to guard and commit to, and its variants to guard: the best
        predicted one whose every variant can be guarded, where its forecast is within the
        law's residual spread of the best one's, else the best; a run trained part-way
        where that is predicted lower (:meth:`_partial_option`). ``(None, [])`` where
        nothing is affordable."""
        options = self._affordable()
        partial = self._partial_option()
        if not options and partial is None:
            return None, []
        options = options or [partial[0]]
        spread = self._predicted(options[0]) * (1 + self.law.sd_) if self.law else -np.inf
        whole = [r for r in options if len(self._variants(r)) == len(self._variants(r, 0))
                 and self._predicted(r) <= spread]
        cell = whole[0] if whole else options[0]
        variants = self._variants(cell)
        if partial is not None and partial[1] < self._predicted(cell):
            cell, variants = partial[0], self._variants(partial[0], 0)
        return cell, variants

    def _rule_pick(self) -> str | None:
        """The robust rule's choice, which needs no law: of the runs what is left can finish,
        the largest compute (then the size nearest 20 tokens per parameter)."""
        options = self._affordable()
        return min(options, key=lambda r: (self._score(r), r)) if options else None

    def _failed_checks(self, cell: str) -> list[str]:
        """The checks the law fails before ``cell``, its choice, is acted on (empty where it
        passes all, or where the robust rule picks the same configuration)."""
        rule, law, policy = self._rule_pick(), self.law, self.policy
        if rule is None or (self.size[rule], self.end[rule]) == (self.size[cell], self.end[cell]):
            return []
        failed = [f"the probes span a single {axis}, along which the candidates differ"
                  for axis, used, values in (("size", law.use_n_, self.size.values()),
                                             ("schedule length per parameter", law.use_x_,
                                              [self.end[r] / self.size[r] for r in self.runs]))
                  if policy.check_bounds and not used and _distinct(np.array(list(values))) > 1]
        if (policy.max_probe_error is not None and np.isfinite(law.cv_)
                and law.cv_ > policy.max_probe_error):
            failed.append(f"leave-one-probe-out error {law.cv_:.1%} > {policy.max_probe_error:.0%}")
        if policy.max_spread is not None and law.sd_ > policy.max_spread:
            failed.append(f"residual spread {law.sd_:.1%} > {policy.max_spread:.0%}")
        if policy.check_bounds and law.on_bound:
            failed.append(f"on a bound: {law.on_bound}")
        probed = max(self.size[r] for r in self.decisions[0]["runs"])
        if policy.size_extrapolation is not None and self.size[cell] > policy.size_extrapolation * probed:
            failed.append(f"its choice is {self.size[cell] / probed:.3g}x the largest probed "
                          f"size (> {policy.size_extrapolation:g}x)")
        if (policy.size_extrapolation is not None
                and self.end[cell] / self.size[cell] > policy.data_extrapolation * law.x_max_):
            failed.append(f"its choice reads the data term at "
                          f"{self.end[cell] / self.size[cell] / law.x_max_:.3g}x the probes' "
                          f"longest (> {policy.data_extrapolation:g}x)")
        if policy.separation != "none":
            mine, theirs = self.forecast(cell), self.forecast(rule)
            bar = theirs["loss"] if policy.separation == "point" else theirs["80%"][0]
            if not mine["80%"][1] < bar:
                failed.append(f"its 80% interval ({_stated(mine)}) does not separate from the "
                              f"rule's choice {rule} ({_stated(theirs)})")
        return failed

    def _fall_back(self, failed: list[str], cell: str) -> None:
        """Set the law aside for the robust rule, saying which checks failed."""
        rule = self._rule_pick()
        self.decisions.append(dict(
            phase=0, action="fall back", runs=[rule],
            why=f"the law ({self.law.describe()}) picked {self._said(cell)}, against "
                f"{rule} of the robust rule, but fails {'; '.join(failed)}: instead the "
                "robust rule, the largest compute the budget can finish"))
        self.set_aside = self.law
        self.law, self.shape = None, None

    def _partial_option(self) -> tuple[str, float] | None:
        """The best run the rest of the budget cannot finish, trained part-way with all
        that is left after a guard prefix of each of its variants, and its predicted loss
        there (the law times the schedule shape); None without a schedule shape."""
        if self.shape is None:
            return None
        left = self.budget - self.state.spent
        best = None
        for run in self.runs:
            if run in self.dropped:
                continue
            todo = self.sweep.cost(run, self.state.reached[run], self.sweep.max_resource[run])
            if todo <= left:
                continue
            guards = self.policy.guard_fraction * self.end[run] * (len(self._variants(run, 0)) - 1)
            spend = left - guards
            if spend <= 0:
                continue
            reached = self._compute(run) + spend
            if reached / self.end[run] < max(self.shape[0][0], self.policy.min_partial):
                continue
            guess = self._predicted(run, reached)
            if best is None or (guess, run) < best[::-1]:
                best = (run, guess)
        return best

    def _why_commit(self, run: str, phase: int, finish: bool, left: float) -> str:
        if not finish:
            return ("lower predicted loss part-way, with all that is left (schedule shape of "
                    "the probes), than any run the budget can finish: "
                    + self._said(run, self._compute(run) + left))
        if phase == 2:
            return f"lowest predicted end-of-schedule loss the budget can finish: {self._said(run)}"
        if self.law is None:
            return f"lowest predicted loss of what is left that it can finish: {self._said(run)}"
        return ("what is left carries the frontier on: of what it can finish at or beyond the "
                "largest compute reached, predicted to end least above the law's loss-compute "
                f"frontier ({self._excess(run) - 1:.1%}): {self._said(run)}")

    def _excess(self, run: str) -> float:
        """How far above the law's loss-compute frontier ``run`` is forecast to end: its
        forecast over the lowest forecast of any candidate size at its end compute."""
        if self.law is None:
            return self._predicted(run)
        x_cap = self.policy.data_extrapolation * self.law.x_max_
        best = min(float(self.law.predict(n, min(self.end[run] / n, x_cap)))
                   for n in set(self.size.values()))
        return self._predicted(run) / best

    def _lone_check(self, cell: str) -> bool:
        return self.shape is not None and self.law is not None and cell not in self._finished()

    def _off_course(self, run: str, prefix: float) -> bool:
        """Whether ``run`` at ``prefix`` lies further above the law's forecast there than the
        worst probe did at that share of its schedule (times the law's residual spread)."""
        curve = self.state.observed[run].until(prefix)
        if not len(curve):
            return False
        share = curve.compute[-1] / self.end[run]
        worst = float(np.interp(share, self.shape[0], self.shape[2]))
        expected = self.law.predict(self.size[run], curve.compute[-1] / self.size[run])
        return bool(curve.loss[-1] > expected * worst * (1 + self.law.sd_))

    def _affordable(self) -> list[str]:
        """Runs that what is left can finish, best predicted first, of configurations
        (size and schedule) none of whose variants is finished yet (a run that continues
        another counts from that one's checkpoint)."""
        left = self.budget - self.state.spent
        done = {(self.size[r], self.end[r]) for r in self._finished()}
        runs = [r for r in self.runs if (self.size[r], self.end[r]) not in done
                and r not in self.dropped
                and self.sweep.cost(r, self._head_start(r), self.sweep.max_resource[r])
                <= left * (1 + 1e-12)]
        return sorted(runs, key=lambda r: (self._predicted(r), r))

    def _head_start(self, run: str) -> float:
        """Where ``run`` can start: the furthest any run it continues (or that continues
        it) has been trained, up to its own end, or where it is."""
        shared = [min(self.state.reached[r], self.sweep.max_resource[run])
                  for r in self.related.get(run, ())]
        return max([self.state.reached[run], *shared])

    def _continue(self, run: str) -> None:
        """Start ``run`` from the checkpoint of a prefix-related run trained further: take
        its points up to there and count the FLOPs not paid as ``continued``."""
        start = self._head_start(run)
        if start <= self.state.reached[run]:
            return
        donor = max(self.related[run], key=lambda r: (self.state.reached[r], r))
        self.state.observed[run] = _join(self.state.observed[run],
                                         self.state.observed[donor].until(start,
                                                                          self.state.reached[run]))
        self.state.continued += self.sweep.cost(run, self.state.reached[run], start)
        self.state.reached[run] = start

    def _variants(self, run: str, left: float | None = None) -> list[str]:
        """The runs of ``run``'s configuration (same size and schedule), ``run`` first, that
        fit ``left`` FLOPs (default: what is left; 0: all of them) with one guard prefix for
        each of the others."""
        finished = self._finished()
        same = [run] + [r for r in self.runs if r != run and self.size[r] == self.size[run]
                        and self.end[r] == self.end[run] and r not in finished]
        if left == 0:
            return same
        left = self.budget - self.state.spent if left is None else left
        guard = self.policy.guard_fraction * self.end[run]
        while len(same) > 1 and self.end[run] + guard * (len(same) - 1) > left:
            same.pop()
        return same

    def _finished(self) -> set[str]:
        return {r for r in self.runs if self.state.reached[r] >= self.sweep.max_resource[r]}

    def _loss_at(self, run: str, stop: float) -> float:
        curve = self.state.observed[run].until(stop)
        return float(curve.loss[-1]) if len(curve) else np.inf

    def _compute(self, run: str) -> float:
        """The FLOPs ``run`` has been trained for."""
        return self.sweep.flops_per_unit[run] * self.state.reached[run]

    def _reach(self) -> float:
        """The largest compute any run has reached: where the explored frontier ends."""
        return max((self._compute(r) for r in self.runs), default=0.0)

    def _best_partial(self, left: float) -> str | None:
        """The run with the lowest forecast after ``left`` more FLOPs (or at its end, where
        that comes first), of those that carry the explored frontier at least as far as it
        reaches (None if no run can). A run counts as far as its own end: one that ends
        below the frontier's reach carries nothing on, however much is left."""
        reach = self._reach()
        stop = {r: min(self._compute(r) + left, self.end[r]) for r in self.runs}
        finished = self._finished()
        runs = [r for r in self.runs if r not in finished and r not in self.dropped
                and stop[r] >= reach * (1 - 1e-9)]
        if not runs:
            return None
        return min(runs, key=lambda r: (self._predicted(r, stop[r]), r))

    def _unspent_reason(self, phase: int) -> str | None:
        """Why more than :data:`UNSPENT` of the budget is left at the end (None where it is
        not), also logged as a ``leave unspent`` decision."""
        left = self.budget - self.state.spent
        if left <= UNSPENT * self.budget:
            return None
        if all(self.state.reached[r] >= self.sweep.max_resource[r] or r in self.dropped
               for r in self.runs):
            why = "every candidate is finished (or dropped): the sweep costs less than the budget"
        else:
            reach = self._reach()
            why = (f"no unfinished candidate ends at or beyond the largest compute reached "
                   f"({reach:.3g} FLOPs) within what is left: a run ending below it adds no "
                   "point where the frontier law is read")
        self.decisions.append(dict(phase=phase, action="leave unspent", runs=[],
                                   why=f"{left:.3g} FLOPs ({left / self.budget:.0%} of the "
                                       f"budget) left: {why}"))
        return why

    def _said(self, run: str, compute: float | None = None) -> str:
        said = f"{run}, {self.end[run]:.3g} FLOPs to finish"
        if self.law is None:
            why = ("the law failed its checks" if self.set_aside is not None else
                   "no law: no probe logged a point")
            return said + f" ({why}; the most compute, then the size nearest 20 tokens per " \
                          "parameter)"
        at = "" if compute is None else f" at {compute / self.end[run]:.0%} of its schedule"
        return said + f", predicted loss{at} " + _stated(self.forecast(run, compute))


def _stated(forecast: dict) -> str:
    """``2.79 [2.70, 2.88] (80%), [2.64, 2.95] (95%)`` (``at least 2.64`` where the upper
    end is infinite); after part-way probes ``2.79, at most 2.88 (80%), at most 2.95 (95%)
    (…)`` (``no bound`` where infinite); where the law states none, the forecast and why it
    has no interval."""
    if "no interval" in forecast:
        return f"{forecast['loss']:.4g} (no interval: {forecast['no interval']})"
    levels = [k for k in forecast if k.endswith("%")]
    if forecast[levels[0]][0] == 0:  # after part-way probes: a bound from above only
        return f"{forecast['loss']:.4g}, " + ", ".join(
            (f"at most {forecast[k][1]:.4g}" if np.isfinite(forecast[k][1]) else "no bound")
            + f" ({k})" for k in levels) + \
            " (part-way probes: a finished schedule ends lower by what they do not show)"
    return f"{forecast['loss']:.4g} " + ", ".join(
        (f"[{forecast[k][0]:.4g}, {forecast[k][1]:.4g}]" if np.isfinite(forecast[k][1])
         else f"at least {forecast[k][0]:.4g}") + f" ({k})" for k in levels)
