"""Compute budgets: parse ``1e18``, ``3.2e17`` or ``1.5PF-days`` into FLOPs."""

from __future__ import annotations

import math
import re

from scalekit.compute import PF_DAY
from scalekit.errors import InputError

_UNITS = {"": 1.0, "flop": 1.0, "flops": 1.0, "pf-day": PF_DAY, "pf-days": PF_DAY,
          "pfday": PF_DAY, "pfdays": PF_DAY}
_PATTERN = re.compile(r"^\s*([0-9.eE+-]+)\s*([A-Za-z_\- ]*?)\s*$")


def parse_budget(text: str | float | int) -> float:
    """Return the budget ``text`` in FLOPs.

    Accepts a number (``1e18``), a number with ``FLOPs``, or petaflop/s-days
    (``1.5PF-days`` = 1.5 x 1e15 x 86400 FLOPs; also ``1.5 PF days``, ``1.5 pf_day``).
    The budget must be positive and finite.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = _PATTERN.match(str(text))
        if match is None:
            raise InputError(f"The value of `budget` is {text!r}, but must be a number of "
                             "FLOPs such as 1e18 or a value in PF-days such as 1.5PF-days.")
        try:
            value = float(match.group(1))
        except ValueError:
            raise InputError(f"The value of `budget` is {text!r}, but must start with a "
                             "number.") from None
        unit = re.sub(r"[\s_-]+", "-", match.group(2).lower())
        if unit not in _UNITS:
            raise InputError(f"The value of `budget` is {text!r}, but its unit must be FLOPs "
                             "or PF-days.")
    flops = value * _UNITS[unit]
    if not math.isfinite(flops):
        raise InputError(f"The value of `budget` is {text!r}, but must be a finite number of "
                         "FLOPs.")
    if flops <= 0:
        raise InputError(f"The value of `budget` is {text!r}, but must be > 0 FLOPs.")
    return flops
