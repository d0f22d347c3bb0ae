"""Rung arithmetic of Successive Halving and Hyperband is exact."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalekit.allocate._schedules import (Hyperband, SuccessiveHalving, bracket_to, format_rung_table,
                                          rung_count, rung_resources)
from scalekit.errors import InputError


def test_one_to_243_with_eta_3_has_six_rungs():
    assert rung_count(1, 243, 3) == 6
    bracket = SuccessiveHalving(243, 1, 243, 3)
    assert [r.resource for r in bracket.rungs] == [1, 3, 9, 27, 81, 243]
    assert [r.runs for r in bracket.rungs] == [243, 81, 27, 9, 3, 1]


def test_float_log_would_lose_a_rung_but_count_does_not():
    # log(243)/log(3) is 4.999999999999999 in binary floating point.
    assert math.floor(math.log(243) / math.log(3)) + 1 == 5
    assert rung_count(1, 243, 3) == 6
    # decimals as a user writes them: 0.1 -> 24.3 is five factors of 3
    assert rung_count(0.1, 24.3, 3) == 6
    assert rung_count(1e17, 2.43e19, 3) == 6


def test_rung_resources_are_the_decimals_a_user_would_write():
    # 0.1 * 3 is 0.30000000000000004 in binary floating point; the rungs are 0.3, 0.9, ...
    assert rung_resources(0.1, 24.3, 3) == (0.1, 0.3, 0.9, 2.7, 8.1, 24.3)
    assert rung_resources(0.1, 24.2, 3) == (0.1, 0.3, 0.9, 2.7, 8.1)
    assert rung_resources(2, 2, 3) == (2.0,)


@settings(max_examples=200, deadline=None)
@given(low=st.integers(1, 10**6), eta=st.integers(2, 9), k=st.integers(0, 12))
def test_rung_count_matches_integer_powers(low, eta, k):
    high = low * eta ** k
    assert rung_count(low, high, eta) == k + 1
    assert rung_count(low, high + low * eta ** k * (eta - 1) // eta, eta) == k + 1
    if k > 0:
        assert rung_count(low, high - 1, eta) == k


def test_hyperband_brackets_match_li_et_al_table():
    # Li et al. (2018), Table 1: R = 81, eta = 3.
    brackets = Hyperband(1, 81, 3).bracket_list()
    assert [b.n_runs for b in brackets] == [81, 34, 15, 8, 5]
    assert [b.rungs[0].resource for b in brackets] == [1, 3, 9, 27, 81]
    assert [[r.runs for r in b.rungs] for b in brackets][1] == [34, 11, 3, 1]
    assert len(Hyperband(1, 81, 3, brackets=2).bracket_list()) == 2


@pytest.mark.parametrize("low, high, eta", [(1, 10, 3), (1, 100, 3), (1, 50, 4), (2, 1000, 3)])
def test_hyperband_bracket_s_has_s_plus_one_rungs_when_max_over_eta_is_inexact(low, high, eta):
    # Li et al. (2018), Algorithm 1: bracket s runs s + 1 rungs, r_i = R eta^(i - s),
    # n_i = floor(n eta^-i). 10 / 3 rounds up in binary, which must not drop a rung.
    hb = Hyperband(low, high, eta)
    s_max = hb.s_max
    assert low * eta ** s_max <= high < low * eta ** (s_max + 1)
    for bracket, s in zip(hb.bracket_list(), range(s_max, -1, -1), strict=True):
        n = math.ceil((s_max + 1) * eta ** s / (s + 1))
        assert bracket.n_runs == n
        assert [r.runs for r in bracket.rungs] == [max(1, n // eta ** i) for i in range(s + 1)]
        assert [r.resource for r in bracket.rungs] == pytest.approx(
            [high / eta ** (s - i) for i in range(s + 1)], rel=1e-12)
        assert bracket.rungs[-1].resource == high


@settings(max_examples=100, deadline=None)
@given(top=st.floats(1e3, 1e22), eta=st.integers(2, 5), levels=st.integers(1, 7))
def test_bracket_to_has_exactly_the_levels_asked(top, eta, levels):
    bracket = bracket_to(50, top, eta, levels)
    assert len(bracket.rungs) == levels
    assert bracket.rungs[-1].resource == top


@pytest.mark.parametrize("kwargs, message", [
    (dict(eta=1), "The value of `eta` is 1, but must be > 1."),
    (dict(eta=0), "The value of `eta` is 0, but must be > 1."),
    (dict(eta=2.5), "The value of `eta` is 2.5, but must be an integer."),
    (dict(min_resource=0), "The value of `min_resource` is 0, but must be > 0."),
    (dict(min_resource=500), "The value of `min_resource` is 500, but must be <= max_resource"),
    (dict(n_runs=0), "The value of `n_runs` is 0, but must be >= 1."),
])
def test_bad_settings_are_rejected_up_front(kwargs, message):
    settings = dict(n_runs=27, min_resource=1, max_resource=243, eta=3) | kwargs
    with pytest.raises(InputError) as error:
        SuccessiveHalving(**settings)
    assert str(error.value).startswith(message)


def test_rung_table_lists_every_rung():
    table = format_rung_table(SuccessiveHalving(27, 1, 27, 3), unit="step")
    lines = table.splitlines()
    assert len(lines) == 1 + 4
    assert lines[-1].split() == ["3", "1", "27"]
