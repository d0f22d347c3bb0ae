"""``scalekit law depth|classes|inference-k``: fit a paper's law to measurements and plan with it.

- ``depth``: ``L(m, l, D)`` of Liu, Kangaslahti, Liu & Gore (2026), and the best
  width and depth for a parameter budget.
- ``classes``: ``eps(K) = min(c K^gamma, 1 - 1/K)`` of Nadgir, Balasubramanian &
  Chaudhari, and the best tree of chain-of-thought steps for K answers.
- ``inference-k``: error against the number of samples k (Halder & Pehlevan),
  its optimum and the k worth a cost per sample; ``--simulate`` runs the theory model.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer

from .common import (json_option, open_frame, parse_mapping, plot_option, print_renderable,
                     quiet_option, store_option)
from .fit import objective_option

law_app = typer.Typer(help="Fit the depth, class-count or inference-k law and plan with it.",
                      no_args_is_help=True)

_FILE = typer.Argument(None, help="Measurements file (CSV, JSONL, Parquet, …). Omit to read --store.")
_MAP = typer.Option([], "--map", help="Column role, as role=column (repeatable).")
_BOOTSTRAP = typer.Option(0, "--bootstrap", help="Bootstrap resamples (0: normal intervals "
                          "from the standard errors).")
_LOSS = objective_option()
_SEED = typer.Option(0, "--seed", help="Seed of every random choice.")
_JSON = json_option()
_PLOT = plot_option()
_QUIET = quiet_option()


def _param_count(text: str) -> str:
    """--param-count parses as a formula in m and l (checked as it is parsed, --plan or not)."""
    from scalekit.errors import InputError
    from scalekit.planners.depth import param_count_from_expression

    try:
        count = float(param_count_from_expression(text)(64.0, 4.0))  # at width 64, depth 4
    except InputError as exc:  # `param_count` in the message becomes `--param-count`
        raise InputError(f"--param-count: {exc}") from None
    if not count > 0 or count == float("inf"):
        raise InputError(f"The value of `--param-count` is {text!r}, but must give a positive "
                         f"finite count (it gives {count:g} at m = 64, l = 4).")
    return text


@law_app.command("depth")
def depth(
    file: Optional[Path] = _FILE,
    store: Optional[Path] = store_option(default=None),
    mapping: list[str] = _MAP,
    y: str = typer.Option("loss", "--y", help="Loss column."),
    keep_lowest: Optional[int] = typer.Option(None, "--keep-lowest",
                                              help="Fit only the N lowest losses (Liu et al. keep 203)."),
    exclude_end_layers: bool = typer.Option(False, "--exclude-end-layers",
                                            help="Count depth without the first and last layers."),
    loss: str = _LOSS,
    bootstrap: int = _BOOTSTRAP,
    seed: int = _SEED,
    plan: Optional[str] = typer.Option(None, "--plan", help="params=N,tokens=D[,width=m,depth=l]"
                                       "[,integer=1]: best shape for N parameters and D tokens, "
                                       "and the loss lost at width m, depth l."),
    param_count: str = typer.Option("12*m**2*l", "--param-count", callback=_param_count,
                                    help="Parameters as a formula in m (width) and l (depth)."),
    json_out: Optional[Path] = _JSON,
    plot: Optional[Path] = _PLOT,
    quiet: bool = _QUIET,
) -> None:
    """Fit L(m, l, D) = c_m m^-α_m + c_l l^-α_l + c_D D^-α_D + L0 and plan the model's shape."""
    from scalekit.checks import check_number
    from scalekit.laws.depth import count_depth
    from scalekit.planners.depth import param_count_from_expression, plan_depth

    frame, digest = open_frame(file, store, parse_mapping(mapping), metric=y)
    rows = _last_points(frame)
    if exclude_end_layers:
        _require_columns(rows, ["depth"], file)
        if (rows["depth"] < 3).any():
            raise _input_error("--exclude-end-layers needs at least 3 layers in every run", file,
                               "depth")
        rows = rows.assign(depth=count_depth(rows["depth"], exclude_end_layers=True))
    drop_top = 0
    if keep_lowest is not None:
        check_number("keep_lowest", keep_lowest, low=1, high=len(rows), integer=True)
        drop_top = len(rows) - keep_lowest
    result, prepared = _fit(rows, "depth_width_data", y, drop_top, loss, bootstrap, seed, file)
    planned = None
    if plan is not None:
        spec = _parse_plan(plan, required=("params", "tokens"),
                           optional=("width", "depth", "integer"))
        shape = None
        if "width" in spec or "depth" in spec:
            if not ("width" in spec and "depth" in spec):
                raise _input_error("--plan needs both width and depth for a shape", None, None)
            shape = (spec["width"], spec["depth"])
        with _plan_terms(params_budget="params", tokens="tokens"):
            planned = plan_depth(result.values, spec["params"], spec["tokens"],
                                 param_count=param_count_from_expression(param_count),
                                 shape=shape, integer_depth=bool(spec.get("integer", 0)),
                                 exclude_end_layers=exclude_end_layers,
                                 alpha_l_interval=tuple(result.ci["alpha_l"])).to_dict()
    settings = {"y": y, "keep_lowest": keep_lowest, "exclude_end_layers": exclude_end_layers,
                "loss": loss, "bootstrap": bootstrap, "plan": plan, "param_count": param_count,
                "flops_convention": "none: the depth law is in width, depth and tokens"}
    _finish("law.depth", result, prepared.notes, planned, "Plan: loss-optimal shape", digest, seed,
            settings, json_out, quiet)
    if plot is not None:
        from scalekit.report.law_plots import plot_depth_fit

        plot_depth_fit(result, prepared.X, prepared.y, plot, plan=planned)


@law_app.command("classes")
def classes(
    file: Optional[Path] = _FILE,
    store: Optional[Path] = store_option(default=None),
    mapping: list[str] = _MAP,
    y: str = typer.Option("error", "--y", help="Error column (fraction wrong)."),
    loss: str = _LOSS,
    bootstrap: int = _BOOTSTRAP,
    seed: int = _SEED,
    plan: Optional[str] = typer.Option(None, "--plan", help="classes=K: the least-error tree of "
                                       "steps for K answers."),
    json_out: Optional[Path] = _JSON,
    plot: Optional[Path] = _PLOT,
    quiet: bool = _QUIET,
) -> None:
    """Fit ε(K) = min(c K^γ, 1 − 1/K) and plan a chain-of-thought tree of steps."""
    from scalekit.planners.cot import plan_tree

    frame, digest = open_frame(file, store, parse_mapping(mapping), metric=y)
    rows = _last_points(frame)
    _require_columns(rows, ["classes", y], file)
    _check_range(rows, "classes", rows["classes"] < 2, "at least 2", file)
    _check_range(rows, y, (rows[y] <= 0) | (rows[y] >= 1), "strictly between 0 and 1", file)
    result, prepared = _fit(rows, "class_count", y, 0, loss, bootstrap, seed, file)
    planned = None
    if plan is not None:
        spec = _parse_plan(plan, required=("classes",), optional=())
        with _plan_terms(classes="classes"):
            planned = plan_tree(spec["classes"], result.values).to_dict()
    settings = {"y": y, "loss": loss, "bootstrap": bootstrap, "plan": plan,
                "flops_convention": "none: the class-count law is in classes"}
    _finish("law.classes", result, prepared.notes, planned, "Plan: least-error tree of steps",
            digest, seed, settings, json_out, quiet)
    if plot is not None:
        from scalekit.report.fit_plots import plot_curve

        plot_curve(result, prepared.X["classes"], prepared.y, plot, x_label="classes K", y_label=y)


@law_app.command("inference-k")
def inference_k(
    file: Optional[Path] = _FILE,
    store: Optional[Path] = store_option(default=None),
    mapping: list[str] = _MAP,
    y: str = typer.Option("error", "--y", help="Error column."),
    loss: str = _LOSS,
    bootstrap: int = _BOOTSTRAP,
    seed: int = _SEED,
    plan: Optional[str] = typer.Option(None, "--plan", help="cost=c[,k_max=K]: the k that "
                                       "minimises error + c·k."),
    simulate: bool = typer.Option(False, "--simulate", help="Run the theory model (Bayesian linear "
                                  "regression with a judge) instead of reading a file."),
    dim: int = typer.Option(40, "--dim", help="Simulation: input dimension."),
    n_train: int = typer.Option(80, "--n-train", help="Simulation: training examples."),
    noise: float = typer.Option(0.5, "--noise", help="Simulation: teacher noise σ."),
    misspecification: float = typer.Option(0.0, "--misspecification",
                                           help="Simulation: judge weights w_T + this·g."),
    temperature: float = typer.Option(0.0, "--temperature",
                                      help="Simulation: softmax temperature (0: best-of-k)."),
    k_max: int = typer.Option(256, "--k-max", help="Simulation: largest k."),
    n_test: int = typer.Option(50, "--n-test", help="Simulation: test inputs."),
    repeats: int = typer.Option(200, "--repeats", help="Simulation: Monte Carlo repeats."),
    json_out: Optional[Path] = _JSON,
    plot: Optional[Path] = _PLOT,
    quiet: bool = _QUIET,
) -> None:
    """Fit error(k) = E + A k^-a + B (1 − k^-b) (monotone or U-shaped), or simulate the theory."""
    if simulate:
        if file is not None or store is not None:
            raise _input_error("--simulate reads no FILE or --store", None, None)
        _simulate(dim, n_train, noise, misspecification, temperature, k_max, n_test, repeats,
                  seed, json_out, plot, quiet)
        return
    from scalekit.planners.inference_k import plan_samples

    frame, digest = open_frame(file, store, parse_mapping(mapping), metric=y)
    rows = _last_points(frame)
    _require_columns(rows, ["k", y], file)
    if (rows["k"] < 1).any():
        raise _input_error("every k must be at least 1", file, "k")
    if (rows[y] <= 0).any():
        raise _input_error("every error must be positive", file, y)
    result, prepared = _fit(rows, "inference_k", y, 0, loss, bootstrap, seed, file)
    planned = None
    if plan is not None:
        spec = _parse_plan(plan, required=("cost",), optional=("k_max",))
        with _plan_terms(cost_per_sample="cost", k_max="k_max"):
            planned = plan_samples(result.values, spec["cost"],
                                   k_max=spec.get("k_max", 100_000)).to_dict()
    settings = {"y": y, "loss": loss, "bootstrap": bootstrap, "plan": plan,
                "flops_convention": "none: cost is per sample, in units of error"}
    _finish("law.inference_k", result, prepared.notes, planned, "Plan: samples per query",
            digest, seed, settings, json_out, quiet)
    if plot is not None:
        from scalekit.report.law_plots import plot_inference_k

        plot_inference_k(prepared.X["k"], prepared.y, plot, result=result, plan=planned)


def _simulate(dim, n_train, noise, misspecification, temperature, k_max, n_test, repeats, seed,
              json_out, plot, quiet) -> None:
    import numpy as np

    from scalekit.checks import check_number
    from scalekit.planners.judge_model import (JudgeModel, best_of_k_asymptote, error_many_samples,
                                               error_one_sample)
    from scalekit.planners.judge_selection import monte_carlo_errors, quadrature_errors
    from scalekit import serialise

    check_number("k_max", k_max, low=1, high=100_000, integer=True)
    model = JudgeModel(dim=dim, n_train=n_train, noise=noise, misspecification=misspecification,
                       n_test=n_test, seed=seed)
    predictive = model.draw()
    ks = np.unique(np.round(np.geomspace(1, k_max, 12)).astype(int))
    quadrature = quadrature_errors(predictive, ks, temperature)
    mc, stderr = monte_carlo_errors(predictive, ks, temperature, repeats=repeats, seed=seed)
    closed = {"k=1": error_one_sample(predictive)}
    if temperature > 0:
        closed["k->inf"] = error_many_samples(predictive, temperature)
    if temperature == 0 and misspecification == 0:
        closed["best_of_k_asymptote"] = best_of_k_asymptote(predictive, ks).tolist()
    best = int(np.argmin(quadrature))
    body = {"model": model.to_dict(), "temperature": temperature, "k": ks.tolist(),
            "quadrature": quadrature.tolist(), "monte_carlo": mc.tolist(),
            "monte_carlo_stderr": stderr.tolist(), "closed_forms": closed,
            "k_least_error": int(ks[best]), "least_error": float(quadrature[best]),
            "warnings": []}
    settings = {"repeats": repeats, "k_max": k_max,
                "flops_convention": "none: cost is counted in samples"}
    if not quiet:
        from rich.table import Table

        table = Table(title=f"Theory model, T = {temperature:g}", box=None)
        for column in ("k", "quadrature", "Monte Carlo", "± stderr"):
            table.add_column(column, justify="right")
        for row in zip(ks, quadrature, mc, stderr):
            table.add_row(str(row[0]), *(f"{v:.5g}" for v in row[1:]))
        print_renderable(table)
        print_renderable(_pairs("Closed forms", {k: v for k, v in closed.items()
                                                 if not isinstance(v, list)}))
    if json_out is not None:
        serialise.write_report(json_out, "law.inference_k_simulation", body, input_sha256=None,
                               seed=seed, settings=settings)
    if plot is not None:
        from scalekit.report.law_plots import plot_inference_k

        plot_inference_k(ks, mc, plot, stderr=stderr, theory=quadrature, label="Monte Carlo")


def _last_points(frame):
    """Each run's last logged point (laws describe final measurements)."""
    if "run" in frame and "step" in frame and frame["run"].duplicated().any():
        return frame.sort_values(["run", "step"]).groupby("run", sort=False).tail(1)
    return frame


def _fit(rows, law, y, drop_top, loss, bootstrap, seed, file):
    from scalekit.checks import check_number
    from scalekit.fit.frame import fit_frame
    from scalekit.laws import get_law

    check_number("bootstrap", bootstrap, low=0, integer=True)
    _require_columns(rows, list(get_law(law).inputs) + [y], file)
    return fit_frame(rows, law=law, y=y, drop_top=drop_top, loss=loss, bootstrap=bootstrap,
                     seed=seed)


def _require_columns(rows, columns, file) -> None:
    missing = [column for column in columns if column not in rows]
    if missing:
        raise _input_error(f"needs the column(s) {', '.join(missing)} (found: "
                           f"{', '.join(map(str, rows.columns))}); name them with --map role=column",
                           file, None)


def _check_range(rows, column, bad, rule, file) -> None:
    """Refuse the first row where ``bad`` holds, naming its run (or row) and value."""
    import numpy as np

    if not bad.any():
        return
    where = int(np.flatnonzero(np.asarray(bad))[0])
    row = rows.iloc[where]
    which = f"run {row['run']!r}" if "run" in rows else f"row {where + 1}"
    lines = rows.attrs.get("source_lines")  # the reader's file line of each (run, step)
    line = (lines.line(row["run"], row["step"])
            if lines is not None and {"run", "step"} <= set(rows.columns) else None)
    raise _input_error(f"{which} has {column} = {row[column]:g}, but every value must be {rule}",
                       file, column, line=line)


def _input_error(reason, file, column, *, line=None):
    from scalekit.errors import InputError

    return InputError(reason, source=None if file is None else str(file), column=column,
                      line=line)


@contextmanager
def _plan_terms(**keys: str):
    """A planner's errors name its parameters as the ``--plan`` keys they were given by
    (`k_max` -> `--plan k_max`, not the simulation's `--k-max`)."""
    from scalekit.errors import InputError

    try:
        yield
    except InputError as exc:
        text = str(exc)
        for parameter, key in keys.items():
            text = text.replace(f"`{parameter}`", f"`--plan {key}`")
        raise InputError(text) from None


def _parse_plan(text: str, *, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
    """Parse ``key=value,key=value`` into floats, checking the keys."""
    values = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in required + optional:
            raise _input_error(f"--plan takes {', '.join(k + '=…' for k in required + optional)}; "
                               f"got {item.strip()!r}", None, None)
        try:
            values[key] = float(value)
        except ValueError:
            raise _input_error(f"--plan value of {key} is not a number: {value.strip()!r}",
                               None, None) from None
    missing = [key for key in required if key not in values]
    if missing:
        raise _input_error(f"--plan needs {', '.join(missing)}", None, None)
    return values


def _pairs(title, mapping):
    from rich.table import Table

    table = Table(title=title, box=None, show_header=False)
    table.add_column("name", style="cyan")
    table.add_column("value", justify="right")
    for key, value in mapping.items():
        table.add_row(str(key), _text(value))
    return table


def _text(value) -> str:
    from scalekit.formatting import format_number

    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    return format_number(value, 6)


def _finish(kind, result, notes, planned, plan_title, digest, seed, settings, json_out, quiet):
    from scalekit import serialise
    from scalekit.report.fit_report import fit_renderables

    if not quiet:
        print_renderable(fit_renderables(result, notes=notes))
        if planned is not None:
            print_renderable(_pairs(plan_title, planned))
    if json_out is not None:
        from .fit import fit_body

        serialise.write_report(json_out, kind, fit_body(result, notes, planned,
                                                        result.diagnostics),
                               input_sha256=digest, seed=seed, settings=settings)


def register(app: typer.Typer) -> None:
    """Add the ``law`` command group to ``app``."""
    app.add_typer(law_app, name="law")
