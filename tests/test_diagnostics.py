"""The diagnostic codes: one table in the docs, one in the code, and the same names in both."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from scalekit.diagnostics import CODES, Diagnostic


def test_every_code_is_documented_once_and_nothing_else_is():
    table = (REPO / "docs" / "diagnostics.md").read_text()
    documented = re.findall(r"^\| `(\w+)` \|", table, flags=re.M)
    assert sorted(documented) == sorted(CODES)
    assert len(documented) == len(set(documented))


def test_round_trip_leaves_out_what_does_not_apply():
    item = Diagnostic("extrapolation", "warning", "The target is 30x beyond the data; add larger runs.",
                      value=30.0)
    assert item.to_dict() == {"code": "extrapolation", "severity": "warning",
                              "message": "The target is 30x beyond the data; add larger runs.", "value": 30.0}
    assert Diagnostic.from_dict(item.to_dict()) == item


@pytest.mark.parametrize("field, value", [("code", "nope"), ("severity", "fatal")])
def test_unknown_code_or_severity_is_refused(field, value):
    kwargs = {"code": "on_bound", "severity": "info", "message": "m", field: value}
    with pytest.raises(ValueError, match=f"The value of `{field}` is"):
        Diagnostic(**kwargs)


def test_every_code_has_a_place_in_the_worst_first_order():
    """A code missing from the order would make a report with it fail to sort (a ValueError)."""
    from scalekit.diagnostics import CODES, WORST_FIRST

    assert sorted(WORST_FIRST) == sorted(CODES)
