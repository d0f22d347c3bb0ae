"""Time to fit and forecast 1,000 learning curves of 100 points, per surrogate.

Curves: saturating power laws ``E + A (x/x0)^-alpha`` with 1% log-normal noise,
random E, A, alpha (seeded), 100 points each; every method fits each curve and
forecasts 20 positions up to 10x beyond it, with 7 quantiles.

Reference measured in the same run: one ``scipy.optimize.curve_fit`` of the
saturating power law per curve (a plain loop), i.e. the cost of the simplest
single-family fit one would write by hand. The ratio ``method / reference`` is
what to compare across machines; the target is <= 20 ms per curve for the
parametric ensemble on 2 cores. The machine's load average is printed: on a
shared machine a load near the core count means the times are inflated. GP
and joint are timed on subsets (stated) and reported per curve.

The default forecaster (``stacked-backtest``: M4, the ensemble and their average
stacked on backtests) is timed in CPU time (a shared machine's wall time also counts
others' jobs) on ``--stacked`` sets of the same kind of curves (300 and 3,000 by
default), each beside the batched ensemble on the same curves (target: <= 10 ms of
CPU per curve at each size). Its reference check: the same stack with every
candidate's estimator fitted to one curve or backtest prefix at a time (the slow
direct path, ~1.3 s per curve, so timed on the first ``--verify-stacked`` curves only)
against the batched stack on the same curves (target: forecasts within 1e-6 in log).
Its M4, fitted to all curves in one batch, is also checked against M4 fitted one
curve at a time on the first ``--verify`` curves (target: within 1e-6 in log).

The M4 fit is also checked against a slow, straightforward, tightly converged
reference on the first ``--reference`` curves and their backtest prefixes (the
problems stacked-backtest fits): ``scipy.optimize.least_squares`` (trust-region
reflective, analytic Jacobian, ``ftol = xtol = gtol = 1e-15``, at most 3,000
evaluations) from every one of the same starts, one curve at a time, timed in the
same run, in the limit coordinates of :func:`scalekit.laws._m4.to_limit` (in the
law's own coordinates it stops short along M4's valley toward ``L0 -> inf``).
Target: the objective within 1e-9 (relative) of the reference's best. Where the
reference's optimum is well defined (its starts that reach the best objective within
1e-9 relative give forecasts within 1e-6 in log of each other) the target is
forecasts within 1e-6 in log of it; where it is flat, the objective and the forecast
at the horizon are compared and counted apart.

With ``--published K`` the same check also runs on ``K`` curves of the published
revisiting benchmark (``data/published/revisiting_nsl_*.csv``, evenly spread over its
runs; each domain's settings of the paper) and their backtest prefixes.

Run: ``python bench/bench_surrogates.py [--curves 1000] [--stacked 300,3000]
[--verify-stacked 10] [--verify 20] [--reference 10] [--published 0]``. The exit
status is 1 where a target is missed.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from scipy.optimize import curve_fit
from threadpoolctl import threadpool_limits

from scalekit.surrogates._ensemble import forecast_batch
from scalekit.surrogates._evaluate import QUANTILES, Task, paper_m4_method
from scalekit.surrogates._forecast import default_method
from scalekit.surrogates._gp import GPSurrogate
from scalekit.surrogates._joint import JointSurrogate


def make_curves(n_curves: int, n_points: int = 100, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = np.tile(np.arange(1, n_points + 1) * 10.0, (n_curves, 1))
    e, a, alpha = (rng.uniform(lo, hi, (n_curves, 1)) for lo, hi in ((1.5, 2.5), (2, 6), (0.3, 0.8)))
    y = (e + a * (x / 10) ** -alpha) * np.exp(rng.normal(0, 0.01, x.shape))
    x_new = np.tile(np.geomspace(x[0, -1] * 1.1, x[0, -1] * 10, 20), (n_curves, 1))
    return x, y, x_new


def _satpow(x, e, a, alpha):
    return e + a * (x / 10) ** -alpha


def reference(x, y, x_new):
    out = np.empty_like(x_new)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(x.shape[0]):
            try:
                p, _ = curve_fit(_satpow, x[i], y[i], p0=(1.0, 3.0, 0.5), maxfev=2000)
            except RuntimeError:
                p = (y[i, -1], 0.0, 0.5)
            out[i] = _satpow(x_new[i], *p)
    return out


def as_tasks(x, y, x_new):
    return [Task(run=str(i), x=x[i], y=y[i], x_target=x_new[i], y_target=np.full(x_new.shape[1],
                                                                                np.nan))
            for i in range(len(x))]


def one_curve_at_a_time_stack():
    """The reference for the default forecaster: the same stack over its candidates'
    estimators, each fitted to one curve (or backtest prefix) at a time."""
    from scalekit.surrogates._backtest_stack import BacktestStacked
    from scalekit.surrogates._ensemble import ParametricEnsemble
    from scalekit.surrogates._evaluate import estimator_method
    from scalekit.surrogates._paper_m4 import PaperM4

    return BacktestStacked({
        "m4-paper": estimator_method(PaperM4), "ensemble": estimator_method(ParametricEnsemble),
        "average": estimator_method(lambda: ParametricEnsemble(weighting="equal"))})


def cpu_timed(fn, *args):
    """CPU seconds of ``fn(*args)`` (this process), and its result."""
    start = time.process_time()
    result = fn(*args)
    return time.process_time() - start, result


def stacked_timings(sizes, k_verify):
    """The default forecaster's CPU ms per curve and the batched ensemble's on the same
    curves, per size; and the direct path against the batched stack on ``k_verify``
    curves (its ms per curve, the batched stack's, the largest |log difference|)."""
    rows = []
    for size in sizes:
        x, y, x_new = make_curves(size)
        stacked_s, _ = cpu_timed(default_method(), as_tasks(x, y, x_new))
        ens_s, _ = cpu_timed(forecast_batch, x, y, np.ones_like(x, bool), x_new, QUANTILES)
        rows.append((size, 1000 * stacked_s / size, 1000 * ens_s / size))
    tasks = as_tasks(*make_curves(k_verify))
    direct_s, direct = cpu_timed(one_curve_at_a_time_stack(), tasks)
    batched_s, batched = cpu_timed(default_method(), tasks)
    gap = max(float(np.max(np.abs(np.log(a / b)))) for a, b in zip(batched, direct, strict=True))
    return rows, (1000 * direct_s / k_verify, 1000 * batched_s / k_verify, gap)


def report_stacked(rows, verify, k_verify) -> bool:
    """Print :func:`stacked_timings`; whether its targets are met."""
    met = True
    for size, stacked_ms, ens_ms in rows:
        ok = stacked_ms <= 10
        met &= ok
        print(f"stacked-backtest at {size} curves: {stacked_ms:.1f} ms of CPU per curve (target "
              f"<= 10 ms): {'PASS' if ok else 'FAIL'}; the batched ensemble on the same curves "
              f"{ens_ms:.1f} ms ({stacked_ms / ens_ms:.1f}x)")
    direct_ms, batched_ms, gap = verify
    print(f"stacked-backtest against its candidates fitted one curve at a time on {k_verify} "
          f"curves: {direct_ms:.0f} ms against {batched_ms:.1f} ms of CPU per curve "
          f"({direct_ms / batched_ms:.0f}x); largest |log difference| of the forecasts "
          f"{gap:.1e} (target <= 1e-6): {'PASS' if gap <= 1e-6 else 'FAIL'}")
    return met and gap <= 1e-6


def one_curve_at_a_time_m4(tasks):
    """The reference for the batched M4: each curve fitted on its own."""
    from scalekit.surrogates._paper_m4 import PaperM4

    return [PaperM4().fit(t.x, t.y).predict_quantiles(t.x_target, QUANTILES) for t in tasks]


def reference_m4(problems):
    """The reference for M4's fit: every start polished by scipy's least_squares, tightly,
    in the limit coordinates of :func:`scalekit.laws._m4.to_limit` (where the limit of
    M4's valley, ``L0 -> inf``, is a finite point; in the law's own coordinates scipy
    stops short along that valley)."""
    from scipy.optimize import least_squares

    from scalekit.laws._m4 import limit_bounds, limit_terms, to_limit

    out = []
    for law, x, log_y, starts in problems:
        lower, upper = law.fitting_bounds()
        w_lower, w_upper = limit_bounds(lower, upper)

        def residuals(w, x=x, log_y=log_y):
            return limit_terms(x[None], w[None])[0][0] - log_y

        def jacobian(w, x=x):
            return limit_terms(x[None], w[None])[1][0]

        ends = []
        for start in to_limit(np.clip(starts, lower, upper)):
            with np.errstate(all="ignore"):
                fit = least_squares(residuals, start, jac=jacobian, bounds=(w_lower, w_upper),
                                    ftol=1e-15, xtol=1e-15, gtol=1e-15, max_nfev=3000,
                                    x_scale="jac")
            value = 0.5 * float(fit.fun @ fit.fun)
            ends.append((value if np.isfinite(value) else np.inf, fit.x))
        out.append(ends)
    return out


def m4_against_reference(tasks):
    """M4 as stacked-backtest fits it (whole curves and backtest prefixes, one batch) against
    :func:`reference_m4`: seconds of each, and per problem (objective gap relative, forecast
    gap in log, whether the reference's optimum is well defined)."""
    from scalekit.laws._m4 import limit_terms
    from scalekit.surrogates._backtest_stack import backtest_task
    from scalekit.surrogates._paper_m4 import PAPER_SETTINGS, PaperM4, fit_paper_m4

    cases = [t for task in tasks for t in (task, backtest_task(task, min_points=6)) if t]
    settings = [PAPER_SETTINGS.get(t.group.split("|")[0], (1.0, None)) for t in cases]
    models = [PaperM4(upper=upper, l0_start=l0_start) for l0_start, upper in settings]
    seconds, _ = timed(fit_paper_m4, models, [(t.x, t.y) for t in cases])
    problems = [(m.law_, m.x_, np.log(m.y_), m._problem(m.x_, m.y_)[1]) for m in models]
    ref_seconds, ends = timed(reference_m4, problems)
    rows = []
    for (_, x, log_y, _), model, t, found in zip(problems, models, cases, ends, strict=True):
        best = min(value for value, _ in found)
        horizon = [limit_terms(t.x_target[None], w[None])[0][0] for value, w in found
                   if value <= best * (1 + 1e-9)]
        value = 0.5 * float(np.sum((np.log(model.predict(x)) - log_y) ** 2))
        gap = float(np.max(np.abs(np.log(model.predict(t.x_target)) - horizon[0])))
        spread = max(float(np.max(np.abs(h - horizon[0]))) for h in horizon)
        rows.append(((value - best) / best, gap, spread <= 1e-6))
    return len(cases), seconds, ref_seconds, rows


def published_tasks(count: int):
    """``count`` curves of the revisiting benchmark (Alabdulmohsin et al. 2022, both files),
    evenly spread over its runs, each with its training rows and held-out positions."""
    import pandas as pd

    from scalekit.surrogates._evaluate import split_tasks

    folder = os.path.join(os.path.dirname(__file__), "..", "data", "published")
    frame = pd.concat([pd.read_csv(os.path.join(folder, f"revisiting_nsl_{name}.csv"))
                       .drop_duplicates() for name in ("lang", "vision")], ignore_index=True)
    frame["run"] = frame["Domain"] + "|" + frame["Task"] + "|" + frame["Model"]
    runs = sorted(frame["run"].unique())
    keep = [runs[k] for k in np.unique(np.linspace(0, len(runs) - 1, count).astype(int))]
    return split_tasks(frame[frame["run"].isin(keep)], train="Training", x="Seen Examples",
                       y="Loss", group="Domain")


def report_reference(label, n_cases, own_s, ref_s, rows) -> bool:
    """Print the comparison of :func:`m4_against_reference`; whether its targets are met."""
    gaps = np.array([r[0] for r in rows])
    off = np.array([r[1] for r in rows])
    defined = np.array([r[2] for r in rows])
    print(f"m4-paper against the tight reference (scipy least_squares from every start) on "
          f"{n_cases} problems ({label} and their backtest prefixes): "
          f"{1000 * own_s / n_cases:.1f} ms per problem against the reference's "
          f"{1000 * ref_s / n_cases:.1f} ms ({ref_s / own_s:.1f}x)")
    print(f"  objective above the reference's best by more than 1e-9 (relative): "
          f"{int((gaps > 1e-9).sum())} of {n_cases} (largest {gaps.max():.1e}; target none): "
          f"{'PASS' if (gaps <= 1e-9).all() else 'FAIL'}; below it: {int((gaps < -1e-9).sum())}")
    print(f"  optimum well defined on {int(defined.sum())}: forecasts within 1e-6 in log of the "
          f"reference on {int((off[defined] <= 1e-6).sum())} (largest gap "
          f"{off[defined].max() if defined.any() else 0:.1e}; target all): "
          f"{'PASS' if (off[defined] <= 1e-6).all() else 'FAIL'}")
    if (~defined).any():
        print(f"  flat (the reference's optimum not unique): {int((~defined).sum())}, largest "
              f"forecast gap {off[~defined].max():.1e}")
    return bool((gaps <= 1e-9).all() and (off[defined] <= 1e-6).all())


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def main() -> None:
    threadpool_limits(1)  # thousands of tiny matrices: BLAS threads would only contend
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--curves", type=int, default=1000)
    parser.add_argument("--stacked", default="300,3000",
                        help="curve counts to time the default forecaster at (comma-separated)")
    parser.add_argument("--verify-stacked", type=int, default=10,
                        help="curves of the default forecaster's check against the direct path")
    parser.add_argument("--verify", type=int, default=20)
    parser.add_argument("--reference", type=int, default=10)
    parser.add_argument("--published", type=int, default=0,
                        help="also check M4 against the reference on this many published curves")
    args = parser.parse_args()
    n = args.curves
    load_before = os.getloadavg()[0]
    x, y, x_new = make_curves(n)
    mask = np.ones_like(x, bool)
    rows = []
    ref_s, ref_pred = timed(reference, x, y, x_new)
    rows.append(("reference: scipy curve_fit per curve", n, ref_s))
    ens_s, ens_q = timed(forecast_batch, x, y, mask, x_new, QUANTILES)
    rows.append(("ensemble (12 families, batched)", n, ens_s))
    one_s, _ = timed(forecast_batch, x, y, mask, x_new, QUANTILES, families=("satpow",))
    rows.append(("single family satpow (batched)", n, one_s))

    tasks = as_tasks(x, y, x_new)
    stacked_rows, stacked_verify = stacked_timings(
        [int(size) for size in args.stacked.split(",") if size], args.verify_stacked)
    k_verify = min(n, args.verify)
    m4_s, m4_batched = timed(paper_m4_method(), tasks[:k_verify])
    m4_one_s, m4_alone = timed(one_curve_at_a_time_m4, tasks[:k_verify])
    rows.append((f"m4-paper, batched (first {k_verify} curves)", k_verify, m4_s))
    rows.append((f"m4-paper, one curve at a time ({k_verify})", k_verify, m4_one_s))
    m4_gap = max(float(np.max(np.abs(np.log(a / b)))) for a, b in zip(m4_batched, m4_alone, strict=True))

    k_ref = min(n, args.reference)
    n_cases, m4_ref_own, m4_ref_s, ref_rows = m4_against_reference(tasks[:k_ref])

    k_gp = min(n, 50)
    gp_s, _ = timed(lambda: [GPSurrogate().fit(x[i], y[i]).predict_quantiles(x_new[i], QUANTILES)
                             for i in range(k_gp)])
    rows.append((f"gp (first {k_gp} curves)", k_gp, gp_s))

    k_sweep, sweeps = 10, min(n // 10, 20)

    def joint():
        for s in range(sweeps):
            rows_ = slice(s * k_sweep, (s + 1) * k_sweep)
            runs = np.repeat(np.arange(k_sweep).astype(str), x.shape[1])
            model = JointSurrogate().fit(x[rows_].ravel(), y[rows_].ravel(), runs=runs)
            for r in range(k_sweep):
                model.predict_quantiles(x_new[s * k_sweep + r], QUANTILES, runs=str(r))
    joint_s, _ = timed(joint)
    rows.append((f"joint ({sweeps} sweeps of {k_sweep} curves)", sweeps * k_sweep, joint_s))

    print(f"{n} curves x {x.shape[1]} points, forecast at {x_new.shape[1]} positions, "
          f"{QUANTILES.size} quantiles; 1-minute load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores (others' jobs slow it)")
    print(f"{'method':42s} {'curves':>6s} {'ms/curve':>9s} {'x reference':>12s}")
    ref_ms = 1000 * ref_s / n
    for name, count, seconds in rows:
        ms = 1000 * seconds / count
        print(f"{name:42s} {count:6d} {ms:9.2f} {ms / ref_ms:12.2f}")
    ens_ms = 1000 * ens_s / n
    print(f"ensemble: {ens_ms:.1f} ms per curve (target <= 20 ms on 2 cores): "
          f"{'met' if ens_ms <= 20 else 'NOT met'}")
    met = report_stacked(stacked_rows, stacked_verify, args.verify_stacked)
    print(f"m4-paper batched against one curve at a time on {k_verify} curves: largest |log "
          f"ratio| of the forecasts {m4_gap:.1e} (target <= 1e-6): "
          f"{'PASS' if m4_gap <= 1e-6 else 'FAIL'}")
    met &= report_reference(f"{k_ref} curves", n_cases, m4_ref_own, m4_ref_s, ref_rows)
    if args.published:
        met &= report_reference(f"{args.published} published curves",
                                *m4_against_reference(published_tasks(args.published)))
    err_ens = np.median(np.abs(np.log(ens_q[..., 3] / ref_pred)))
    print(f"median |log(ensemble median / reference fit)| at the forecasts: {err_ens:.4f}")
    if m4_gap > 1e-6 or not met:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
