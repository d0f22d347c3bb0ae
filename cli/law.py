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

import typer

from .common import (bootstrap_option, checked_inputs, json_option, open_curves, parse_mapping,
                     plot_option, print_renderable, quiet_option, seed_option, store_option)
from .fit import objective_option
from .options import html_option, map_option

law_app = typer.Typer(help="Fit the depth, class-count or inference-k law and plan with it.",
                      no_args_is_help=True)

_FILE = typer.Argument(None, callback=checked_inputs, is_eager=True,
                       help="Measurements file (CSV, JSONL, Parquet, …). Omit to read --store.")
_MAP = map_option()
_BOOTSTRAP = bootstrap_option(0)
_LOSS = objective_option()
_SEED = seed_option()
_JSON = json_option()
_PLOT = plot_option()
_HTML = html_option()
_QUIET = quiet_option()


def _param_count(text: str) -> str:
    """--param-count parses as a formula in m and l (checked as it is parsed, --plan or not)."""
    from scalekit.errors import InputError
    from scalekit.planners import param_count_from_expression

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
    file: Path | None = _FILE,
    store: Path | None = store_option(default=None),
    mapping: list[str] = _MAP,
    y: str = typer.Option("loss", "--y", help="Loss column."),
    keep_lowest: int | None = typer.Option(None, "--keep-lowest",
                                              help="Fit only the N lowest losses (Liu et al. keep 203)."),
    exclude_end_layers: bool = typer.Option(False, "--exclude-end-layers", metavar="",
                                            help="Count depth without the first and last layers."),
    loss: str = _LOSS,
    bootstrap: int = _BOOTSTRAP,
    seed: int = _SEED,
    plan: str | None = typer.Option(None, "--plan", help="params=N,tokens=D[,width=m,depth=l]"
                                       "[,integer=1]: best shape for N parameters and D tokens, "
                                       "and the loss lost at width m, depth l."),
    param_count: str = typer.Option("12*m**2*l", "--param-count", callback=_param_count,
                                    help="Parameters as a formula in m (width) and l (depth)."),
    json_out: Path | None = _JSON,
    html: Path | None = _HTML,
    plot: Path | None = _PLOT,
    quiet: bool = _QUIET,
) -> None:
    """Fit L(m, l, D) = c_m m^-α_m + c_l l^-α_l + c_D D^-α_D + L0 and plan the model's shape."""
    from scalekit.planners import param_count_from_expression
    from scalekit.planners import fit_depth_law, plan_depth_in_data

    curves, digest = open_curves(file, store, parse_mapping(mapping), metric=y)
    result = fit_depth_law(curves, y=y, keep_lowest=keep_lowest,
                           exclude_end_layers=exclude_end_layers, source=_source(file),
                           loss=loss, bootstrap=bootstrap, seed=seed)
    planned = None
    if plan is not None:
        spec = _parse_plan(plan, required=("params", "tokens"),
                           optional=("width", "depth", "integer"))
        shape = None
        if "width" in spec or "depth" in spec:
            if not ("width" in spec and "depth" in spec):
                raise _input_error("--plan needs both width and depth for a shape")
            shape = (spec["width"], spec["depth"])
        with _plan_terms(params_budget="params", tokens="tokens"):
            planned, found = plan_depth_in_data(
                result, spec["params"], spec["tokens"],
                param_count=param_count_from_expression(param_count), shape=shape,
                integer_depth=bool(spec.get("integer", 0)), exclude_end_layers=exclude_end_layers,
                alpha_l_interval=tuple(result.ci["alpha_l"]))
            planned = planned.to_dict()
            result.diagnostics.extend(found)
    settings = {"y": y, "keep_lowest": keep_lowest, "exclude_end_layers": exclude_end_layers,
                "loss": loss, "bootstrap": bootstrap, "plan": plan, "param_count": param_count,
                "flops_convention": "none: the depth law is in width, depth and tokens"}
    figure = None
    if plot is not None or html is not None:
        from scalekit.report import plot_depth_fit

        figure = plot_depth_fit(result, result.points.X, result.points.y, plot, plan=planned)
    _finish("law.depth", result, result.points.notes, planned, "Plan: loss-optimal shape", digest, seed,
            settings, json_out, quiet, html=html, figure=figure)


@law_app.command("classes")
def classes(
    file: Path | None = _FILE,
    store: Path | None = store_option(default=None),
    mapping: list[str] = _MAP,
    y: str = typer.Option("error", "--y", help="Error column (fraction wrong)."),
    loss: str = _LOSS,
    bootstrap: int = _BOOTSTRAP,
    seed: int = _SEED,
    plan: str | None = typer.Option(None, "--plan", help="classes=K: the least-error tree of "
                                       "steps for K answers."),
    json_out: Path | None = _JSON,
    html: Path | None = _HTML,
    plot: Path | None = _PLOT,
    quiet: bool = _QUIET,
) -> None:
    """Fit ε(K) = min(c K^γ, 1 − 1/K) and plan a chain-of-thought tree of steps."""
    from scalekit.planners import fit_class_count_law, plan_tree_in_data

    curves, digest = open_curves(file, store, parse_mapping(mapping), metric=y)
    result = fit_class_count_law(curves, y=y, source=_source(file), loss=loss,
                                 bootstrap=bootstrap, seed=seed)
    planned = None
    if plan is not None:
        spec = _parse_plan(plan, required=("classes",), optional=())
        with _plan_terms(classes="classes"):
            planned, found = plan_tree_in_data(result, spec["classes"])
            planned = planned.to_dict()
            result.diagnostics.extend(found)
    settings = {"y": y, "loss": loss, "bootstrap": bootstrap, "plan": plan,
                "flops_convention": "none: the class-count law is in classes"}
    figure = None
    if plot is not None or html is not None:
        from scalekit.report import plot_curve

        figure = plot_curve(result, result.points.X["classes"], result.points.y, plot, x_label="classes K",
                            y_label=y).figure
    _finish("law.classes", result, result.points.notes, planned, "Plan: least-error tree of steps",
            digest, seed, settings, json_out, quiet, html=html, figure=figure)


@law_app.command("inference-k")
def inference_k(
    file: Path | None = _FILE,
    store: Path | None = store_option(default=None),
    mapping: list[str] = _MAP,
    y: str = typer.Option("error", "--y", help="Error column."),
    loss: str = _LOSS,
    bootstrap: int = _BOOTSTRAP,
    seed: int = _SEED,
    plan: str | None = typer.Option(None, "--plan", help="cost=c[,k_max=K]: the k that "
                                       "minimises error + c·k."),
    simulate: bool = typer.Option(False, "--simulate", metavar="",
                                  help="Run the theory model (Bayesian linear regression with a "
                                  "judge) instead of reading a file."),
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
    json_out: Path | None = _JSON,
    html: Path | None = _HTML,
    plot: Path | None = _PLOT,
    quiet: bool = _QUIET,
) -> None:
    """Fit error(k) = E + A k^-a + B (1 − k^-b) (monotone or U-shaped), or simulate the theory."""
    if simulate:
        if file is not None or store is not None:
            raise _input_error("--simulate reads no FILE or --store")
        if html is not None:
            raise _input_error("--html writes the page of a fit; --simulate has none (use --plot)")
        _simulate(dim, n_train, noise, misspecification, temperature, k_max, n_test, repeats,
                  seed, json_out, plot, quiet)
        return
    from scalekit.planners import plan_samples
    from scalekit.planners import fit_inference_k_law

    curves, digest = open_curves(file, store, parse_mapping(mapping), metric=y)
    result = fit_inference_k_law(curves, y=y, source=_source(file), loss=loss,
                                 bootstrap=bootstrap, seed=seed)
    planned = None
    if plan is not None:
        spec = _parse_plan(plan, required=("cost",), optional=("k_max",))
        with _plan_terms(cost_per_sample="cost", k_max="k_max"):
            planned = plan_samples(result.values, spec["cost"],
                                   k_max=spec.get("k_max", 100_000)).to_dict()
    settings = {"y": y, "loss": loss, "bootstrap": bootstrap, "plan": plan,
                "flops_convention": "none: cost is per sample, in units of error"}
    figure = None
    if plot is not None or html is not None:
        from scalekit.report import plot_inference_k

        figure = plot_inference_k(result.points.X["k"], result.points.y, plot, result=result,
                                  plan=planned).figure
    _finish("law.inference_k", result, result.points.notes, planned, "Plan: samples per query",
            digest, seed, settings, json_out, quiet, html=html, figure=figure)


def _simulate(dim, n_train, noise, misspecification, temperature, k_max, n_test, repeats, seed,
              json_out, plot, quiet) -> None:
    from scalekit import serialise
    from scalekit.planners import simulate_samples
    from scalekit.planners import JudgeModel

    model = JudgeModel(dim=dim, n_train=n_train, noise=noise, misspecification=misspecification,
                       n_test=n_test, seed=seed)
    simulation = simulate_samples(model, temperature=temperature, k_max=k_max, repeats=repeats,
                                  seed=seed)
    settings = {"repeats": repeats, "k_max": k_max,
                "flops_convention": "none: cost is counted in samples"}
    if not quiet:
        from rich.table import Table

        from scalekit.formatting import format_number

        table = Table(title=f"Theory model, T = {format_number(temperature)}", box=None)
        for column in ("k", "quadrature", "Monte Carlo", "± stderr"):
            table.add_column(column, justify="right")
        for row in zip(simulation.k, simulation.quadrature, simulation.monte_carlo,
                       simulation.monte_carlo_stderr, strict=True):
            table.add_row(str(row[0]), *(format_number(v, 5) for v in row[1:]))
        print_renderable(table)
        print_renderable(_pairs("Closed forms", {k: v for k, v in simulation.closed_forms.items()
                                                 if not isinstance(v, list)}))
    if json_out is not None:
        serialise.write_report(json_out, "law.inference_k_simulation",
                               simulation, input_sha256=None,
                               seed=seed, settings=settings)
    if plot is not None:
        from scalekit.report import plot_inference_k

        plot_inference_k(simulation.k, simulation.monte_carlo, plot,
                         stderr=simulation.monte_carlo_stderr, theory=simulation.quadrature,
                         label="Monte Carlo")


def _source(file) -> str | None:
    return None if file is None else str(file)


def _input_error(reason):
    from scalekit.errors import InputError

    return InputError(reason)


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
                               f"got {item.strip()!r}")
        try:
            values[key] = float(value)
        except ValueError:
            raise _input_error(f"--plan value of {key} is not a number: {value.strip()!r}"
                               ) from None
    missing = [key for key in required if key not in values]
    if missing:
        raise _input_error(f"--plan needs {', '.join(missing)}")
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
    return format_number(value)


def _finish(kind, result, notes, planned, plan_title, digest, seed, settings, json_out, quiet, *,
            html=None, figure=None):
    from scalekit import serialise
    from scalekit.report import fit_renderables

    from .fit import fit_body

    if not quiet:
        print_renderable(fit_renderables(result, notes=notes))
        if planned is not None:
            print_renderable(_pairs(plan_title, planned))
    body = fit_body(result, notes, planned, result.diagnostics)
    if json_out is not None:
        serialise.write_report(json_out, kind, body, input_sha256=digest, seed=seed,
                               settings=settings)
    if html is not None:
        from .report import law_page, write_page

        write_page(html, law_page(result, body, settings, figure))


def register(app: typer.Typer) -> None:
    """Add the ``law`` command group to ``app``."""
    from .law_hparams import add_hparams_command
    from .law_task import add_task_command

    add_task_command(law_app)
    add_hparams_command(law_app)
    app.add_typer(law_app, name="law")
