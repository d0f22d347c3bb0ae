"""CommitScheduler's settings are checked when it is built (no Ray session needed)."""

from __future__ import annotations

import pytest

pytest.importorskip("ray")

from scalekit.errors import InputError
from scalekit.integrations.ray_commit import CommitScheduler


@pytest.mark.parametrize(("settings", "named"), [
    ({"budget": 0.0}, "`budget`"),
    ({"budget": 0.1, "mode": "max"}, "`mode`"),
])
def test_bad_settings_are_refused_naming_the_parameter(settings, named):
    with pytest.raises(InputError, match=named):
        CommitScheduler(**settings)


def test_a_metric_and_mode_given_twice_are_refused():
    scheduler = CommitScheduler(budget=0.1, metric="loss", mode="min")
    assert not scheduler.set_search_properties("loss", "min")
    fresh = CommitScheduler(budget=0.1)
    assert fresh.set_search_properties("loss", "min")
    with pytest.raises(InputError, match="`mode`"):
        CommitScheduler(budget=0.1).set_search_properties("loss", "max")
