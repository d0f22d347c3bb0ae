"""Law families: formulas, analytic derivatives, the Chinchilla optimum, expressions."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

from scalekit.errors import InputError
from scalekit.laws import available_laws, get_law, law_from_expression
from scalekit.laws._bnsl import bnsl
from scalekit.laws._chinchilla import chinchilla_optimum

RNG = np.random.default_rng(7)
X_ALL = {"x": np.exp(RNG.uniform(0, 8, 12)), "compute": np.exp(RNG.uniform(40, 55, 12)),
         "params": np.exp(RNG.uniform(16, 24, 12)), "tokens": np.exp(RNG.uniform(19, 28, 12))}
# Parameter values (natural units) where each law is checked.
POINTS = {
    "power": [3.0, 0.4],
    "saturating_power": [0.8, 4.0, 0.35],
    "frontier": [1.7, 900.0, 0.15],
    "chinchilla": [1.69, 406.4, 410.7, 0.34, 0.28],
    "kaplan": [8.8e13, 0.076, 5.4e13, 0.095],
    "bnsl": [0.3, 6.0, 0.2, 1.5, 50.0, 0.3],
    "bnsl2": [0.3, 6.0, 0.2, 1.5, 50.0, 0.3, 0.7, 900.0, 0.5],
    "m4": [0.3, 1.2, 1.3, 2.0, 0.4],
}


def _law(name):
    return bnsl(2) if name == "bnsl2" else get_law(name)


def test_builtin_names_are_registered():
    assert {"power", "saturating_power", "frontier", "chinchilla", "kaplan",
            "bnsl"} <= set(available_laws())


@pytest.mark.parametrize("name", sorted(POINTS))
def test_log_form_equals_log_of_formula(name):
    law = _law(name)
    theta = np.array(POINTS[name])
    direct = np.log(law.predict(X_ALL, theta))
    z = law.to_fitting(theta)
    np.testing.assert_allclose(law.log_predict_fitting(X_ALL, z), direct, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(POINTS))
def test_analytic_jacobian_matches_central_differences(name):
    law = _law(name)
    z = law.to_fitting(np.array(POINTS[name]))
    value, J = law.log_value_and_jacobian(law_inputs(law), z[None, :])
    assert value.shape == (1, 12) and J.shape == (1, 12, len(z))
    for k in range(len(z)):
        h = 1e-6 * max(1.0, abs(z[k]))
        up, down = z.copy(), z.copy()
        up[k] += h
        down[k] -= h
        numeric = (law.log_predict_fitting(X_ALL, up)
                   - law.log_predict_fitting(X_ALL, down)) / (2 * h)
        np.testing.assert_allclose(J[0, :, k], numeric, rtol=1e-5, atol=1e-7)


def law_inputs(law):
    return {name: X_ALL[name] for name in law.inputs}


def test_chinchilla_optimum_matches_numerical_minimisation_under_fixed_compute():
    values = dict(zip(get_law("chinchilla").param_names, POINTS["chinchilla"], strict=True))
    law = get_law("chinchilla")
    for C in (1e20, 5.76e23, 1e25):
        def loss_at(log_n, C=C):
            N = np.exp(log_n)
            return law.predict({"params": np.array([N]), "tokens": np.array([C / (6 * N)])},
                               values)[0]
        best = minimize_scalar(loss_at, bounds=(np.log(1e6), np.log(1e14)), method="bounded",
                               options={"xatol": 1e-10})
        optimum = chinchilla_optimum(values, C)
        assert optimum["params"] == pytest.approx(np.exp(best.x), rel=1e-4)
        assert optimum["tokens"] == pytest.approx(C / (6 * np.exp(best.x)), rel=1e-4)
        assert optimum["loss"] == pytest.approx(best.fun, rel=1e-9)
        assert optimum["a"] + optimum["b"] == pytest.approx(1.0)


def test_chinchilla_optimum_with_hoffmann_values_gives_their_exponents():
    # Hoffmann et al. (2022), approach 3: alpha = 0.34, beta = 0.28 -> a = 0.46, b = 0.54.
    values = dict(zip(get_law("chinchilla").param_names, POINTS["chinchilla"], strict=True))
    optimum = chinchilla_optimum(values, np.array([1e21, 1e23]))
    assert optimum["a"] == pytest.approx(0.45, abs=0.01)
    assert optimum["b"] == pytest.approx(0.55, abs=0.01)
    assert optimum["params"].shape == (2,)
    slope = np.diff(np.log(optimum["params"])) / np.log(100.0)
    assert slope[0] == pytest.approx(optimum["a"], rel=1e-9)


def test_expression_law_evaluates_like_builtin():
    custom = law_from_expression("E + A*N**-alpha + B*D**-beta")
    assert custom.inputs == ("params", "tokens")
    assert custom.param_names == ("E", "A", "alpha", "B", "beta")
    theta = dict(zip(get_law("chinchilla").param_names, POINTS["chinchilla"], strict=True))
    np.testing.assert_allclose(custom.predict(X_ALL, theta),
                               get_law("chinchilla").predict(X_ALL, theta), rtol=1e-12)


def test_expression_extra_input_and_functions():
    law = law_from_expression("L0 + c*exp(-k*depth) * x**-a", inputs=["depth"])
    assert set(law.inputs) == {"x", "depth"}
    assert set(law.param_names) == {"L0", "c", "k", "a"}
    X = {"x": np.array([2.0, 4.0]), "depth": np.array([1.0, 3.0])}
    theta = {"L0": 1.0, "c": 2.0, "k": 0.5, "a": 1.0}
    expected = 1.0 + 2.0 * np.exp(-0.5 * X["depth"]) / X["x"]
    np.testing.assert_allclose(law.predict(X, theta), expected)


@pytest.mark.parametrize("bad", [
    "__import__('os').system('true')", "x.real + a", "E + a*x[0]", "(lambda: 1)() + a*x",
    "a * x +", "a*x if a else x", "open('f') + a*x", "'s' + a*x", "a + b",
])
def test_expression_rejects_anything_outside_the_whitelist(bad):
    with pytest.raises(InputError):
        law_from_expression(bad)


def test_expression_param_overrides():
    law = law_from_expression("a + b*log(x)", params={"b": {"lower": -5.0, "upper": 5.0}})
    b = law.params[law.param_names.index("b")]
    assert (b.log, b.lower, b.upper) == (False, -5.0, 5.0)
    with pytest.raises(InputError):
        law_from_expression("a + b*x", params={"c": {"log": False}})


@pytest.mark.parametrize("expression", ["a*x + 10**400", "a*x + 1" + "0" * 400])
def test_expression_constants_follow_float_arithmetic(expression):
    # Constants are floats, as everywhere else in a law: what overflows a double gives
    # inf or nan (a fit then reports the law as not finite), never an OverflowError.
    law = law_from_expression(expression)
    value = law.predict({"x": np.array([1.0, 2.0])}, {"a": 1.0})
    assert not np.isfinite(value).any()


def test_expression_constant_powers_do_not_build_huge_integers():
    # 9**9**9 as Python integers has 370 million digits: evaluating it must not hang.
    code = ("import numpy as np\n"
            "from scalekit.laws import law_from_expression\n"
            "law = law_from_expression('a*x + 9**9**9')\n"
            "print(law.predict({'x': np.array([1.0])}, {'a': 1.0})[0])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "inf"


# Every operator and function, each parameter once positive (log-fitted) and once signed.
EXPRESSIONS = [
    ("E + A*N**-alpha + B*D**-beta", {}),
    ("L0 + c*exp(-k*x) + log(1 + q*x) + s/x", {}),
    ("a*log10(x) + b*log2(x) + sqrt(c*x) + abs(d - x) + tanh(e*x)", {"d": {"lower": -9.0}}),
    ("log1p(a*x) + expm1(b/x) + minimum(c*x, 4) + maximum(d, x**0.5)", {}),
    ("(a + x)**(b*x) - (-c)*x**2 + +d", {"c": {"lower": -1.0}}),
]


@pytest.mark.parametrize("expression,params", EXPRESSIONS)
def test_expression_jacobian_matches_central_differences(expression, params):
    law = law_from_expression(expression, params=params)
    rng = np.random.default_rng(3)
    X = {name: X_ALL[name] if name != "x" else np.geomspace(1.5, 20.0, 12) for name in law.inputs}
    z = rng.uniform(-1.0, 0.5, (4, len(law.params)))      # four parameter points at once
    value, J = law.log_value_and_jacobian(X, z)
    assert value.shape == (4, 12) and J.shape == (4, 12, len(law.params))
    np.testing.assert_allclose(value, np.log(law.function(X, law.to_natural(z))), rtol=1e-12)
    for k in range(len(law.params)):
        h = np.zeros(len(law.params))
        h[k] = 1e-6
        numeric = (law.log_predict_fitting(X, z + h) - law.log_predict_fitting(X, z - h)) / 2e-6
        np.testing.assert_allclose(J[..., k], numeric, rtol=1e-5, atol=1e-7)


BNSL_EXPRESSION = "a + b*x**-c0 * (1 + (x/d1)**(1/f1))**(-c1*f1)"


def test_expression_bnsl_matches_the_builtin_log_form_where_the_plain_form_overflows():
    # Sharp breaks (f1 = 1e-3, 0.01) make (x/d1)**(1/f1) overflow a double far past the
    # break; the built-in law is written in the log-sum-exp form by hand, and the
    # expression must give its values and derivatives there too (not nan: issue 15).
    builtin = bnsl(1)
    specs = {p.name: {"lower": p.lower, "upper": p.upper, "log": p.log} for p in builtin.params}
    custom = law_from_expression(BNSL_EXPRESSION, params=specs)
    order = [builtin.param_names.index(name) for name in custom.param_names]  # reading order
    X = {"x": np.geomspace(1.0, 1e5, 40)}
    theta = np.array([[0.3, 6.0, 0.2, 1.5, 50.0, 0.3], [0.3, 6.0, 0.2, 1.5, 50.0, 1e-3],
                      [1e-3, 2.0, -0.3, 4.0, 3.0, 0.01], [0.5, 1e4, 1.5, -0.5, 1e3, 20.0]])
    z = builtin.to_fitting(theta)
    with np.errstate(over="ignore"):
        assert not np.isfinite((X["x"] / 50.0) ** 1e3).all()
    value, J = custom.log_value_and_jacobian(X, z[:, order])
    expected_value, expected_J = builtin.log_value_and_jacobian(X, z)
    assert np.isfinite(J).all()
    np.testing.assert_allclose(value, expected_value, rtol=1e-12)
    np.testing.assert_allclose(custom.log_predict_fitting(X, z[:, order]), expected_value,
                               rtol=1e-12)
    np.testing.assert_allclose(J, expected_J[..., order], rtol=1e-9, atol=1e-12)


def test_expression_power_of_a_positive_term_keeps_finite_derivatives_when_it_overflows():
    # Not positive by its form (a difference), so the log is taken of the value; the power
    # inside is exp(-c log(1 + (x/d)**(1/f))), its base in the log space.
    law = law_from_expression("a - b*(1 + (x/d)**(1/f))**(-c)")
    X = {"x": np.geomspace(1.0, 1e5, 30)}
    z = law.to_fitting(np.array([[2.0, 1.0, 30.0, 2e-3, 0.7], [2.0, 1.5, 300.0, 0.5, 0.2]]))
    _, J = law.log_value_and_jacobian(X, z)
    assert np.isfinite(J).all()
    for k in range(len(law.params)):
        h = np.zeros(len(law.params))
        h[k] = 1e-6
        with np.errstate(over="ignore"):
            numeric = (np.log(law.function(X, law.to_natural(z + h)))
                       - np.log(law.function(X, law.to_natural(z - h)))) / 2e-6
        np.testing.assert_allclose(J[..., k], numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bad,reason", [
    ("E + log(A, A)*N**-a", "log takes 1 argument, but is given 2"),
    ("E + A*log(N, 10)", "log takes 1 argument, but is given 2"),
    ("exp(N, N, N) + a", "exp takes 1 argument, but is given 3"),
    ("maximum(a*x) + b", "maximum takes 2 arguments, but is given 1"),
    ("a + exp(x, out=x)", "keyword arguments are not accepted"),
    ("a*x + " + "x + " * 600 + "1", "characters, but at most 2,000"),
    ("-" * 150 + "a*x", "nested 152 levels deep, but at most 100"),
    ("a*x + True", "only numeric constants"),
    ("a + b*x + c*x**2 + d*x**3 + e*x**4 + f*x**5 + g*x**6 + h*x**7 + i*x**8",
     "at most 400,000 are allowed"),
])
def test_expression_refuses_wrong_arity_and_oversize_with_the_reason(bad, reason):
    with pytest.raises(InputError, match=reason.replace("*", r"\*")):
        law_from_expression(bad)


def test_expression_functions_cannot_write_into_parameters():
    # numpy's log(x, out) would store log(A) into A's own array: the parameter is not
    # an argument any function may write to (issue 17: A came back as 2.6e78).
    law = law_from_expression("E + A*x**-a")
    theta = np.array([1.0, 2.0, 0.5])
    before = theta.copy()
    law.log_value_and_jacobian({"x": np.array([1.0, 4.0])}, law.to_fitting(theta))
    law.function({"x": np.array([1.0, 4.0])}, theta)
    np.testing.assert_array_equal(theta, before)


@pytest.mark.parametrize("law", ["E + log(A, A)*N**-a", "E + A*log(N, 10)", "exp(N,N,N)",
                                 "a*x + " * 400 + "1", "(" * 300 + "a*x" + ")" * 300])
def test_cli_fit_exits_2_on_a_bad_expression(tmp_path, capsys, law):
    from scalekit_cli.app import main

    path = tmp_path / "runs.csv"
    n = np.geomspace(1e7, 1e10, 12)
    pd.DataFrame({"N": n, "D": 20 * n, "loss": 1.7 + 400 * n ** -0.34}).to_csv(path, index=False)
    assert main(["fit", str(path), "--law", law, "--bootstrap", "0", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "expression" in err


def test_embedded_expression_cannot_close_its_parentheses():
    # issue 17: 'm) + (l' pasted into '_unit * (...)' read as _unit*(m) + (l)
    from scalekit.planners._depth import param_count_from_expression

    with pytest.raises(InputError, match="does not parse"):
        param_count_from_expression("m) + (l")
    count = param_count_from_expression("12*m**2*l")
    assert count(np.array([64.0]), np.array([2.0]))[0] == pytest.approx(12 * 64 ** 2 * 2)


@pytest.mark.parametrize("n_runs", [3, None])
def test_shared_curve_law_jacobian_and_formula(n_runs):
    from scalekit.laws._shared_curve import shared_curve_law

    law = shared_curve_law(n_runs)
    rng = np.random.default_rng(5)
    lx = rng.uniform(-3, 3, 12)
    run = np.arange(12) % 3
    X = {"lx": lx, "run": run.astype(float), "ln_size": rng.uniform(-2, 2, 3)[run]}
    theta = np.exp(rng.uniform(-1, 1, (2, len(law.params))))
    level = (theta[:, 2:3] + theta[:, 3:4] * np.exp(X["ln_size"]) ** -theta[:, 4:5]
             if n_runs is None else theta[:, 2 + run])
    np.testing.assert_allclose(law.predict(X, theta),
                               level + theta[:, :1] * np.exp(lx) ** -theta[:, 1:2], rtol=1e-12)
    z = law.to_fitting(theta)
    _, J = law.log_value_and_jacobian(X, z)
    for k in range(len(law.params)):
        h = np.zeros(len(law.params))
        h[k] = 1e-6
        numeric = (law.log_predict_fitting(X, z + h) - law.log_predict_fitting(X, z - h)) / 2e-6
        np.testing.assert_allclose(J[..., k], numeric, rtol=1e-5, atol=1e-8)
