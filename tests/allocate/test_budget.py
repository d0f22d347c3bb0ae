"""Budgets are parsed into FLOPs."""

from __future__ import annotations

import pytest

from scalekit.allocate._budget import PF_DAY, parse_budget
from scalekit.errors import InputError


@pytest.mark.parametrize("text, flops", [
    ("1e18", 1e18), ("3.2e17", 3.2e17), (5e19, 5e19), ("2e20 FLOPs", 2e20),
    ("1.5PF-days", 1.5 * 1e15 * 86400), ("0.5 pf-days", 0.5 * 8.64e19),
    ("1.5 PF days", 1.5 * 8.64e19), ("2 pf_day", 2 * 8.64e19), ("1e18flop", 1e18),
])
def test_budget_in_flops(text, flops):
    assert parse_budget(text) == pytest.approx(flops, rel=1e-15)


def test_pf_day_is_a_petaflop_per_second_for_a_day():
    assert PF_DAY == 1e15 * 24 * 3600


@pytest.mark.parametrize("text", ["", "abc", "-1e18", "0", "1e18 parsecs", "nan", "inf"])
def test_bad_budgets_are_rejected(text):
    with pytest.raises(InputError, match="`budget`"):
        parse_budget(text)


def test_an_overflowing_budget_is_called_too_large_not_too_small():
    with pytest.raises(InputError, match="finite"):
        parse_budget("1e400")
    with pytest.raises(InputError, match="finite"):
        parse_budget(10.0 ** 300 * 10.0 ** 10)
