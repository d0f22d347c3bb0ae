"""Importing the fitter loads no heavy module that a plain fit does not need at import."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "scipy.stats", "scipy.optimize", "scipy.special", "torch", "matplotlib",
         "sklearn")


def _loaded_after(statement: str) -> list[str]:
    code = (f"import sys\n{statement}\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])


def test_importing_fit_law_loads_no_heavy_module():
    assert _loaded_after("from scalekit.fit import fit_law") == []


def test_a_fit_loads_scipy_optimize_when_it_polishes_but_not_pandas_or_scipy_stats():
    fit = ("import numpy as np\nfrom scalekit.fit import fit_law\n"
           "x = np.geomspace(1, 1e4, 30)\n"
           "fit_law('power', {'x': x}, 2 + 5 * x ** -0.3)")
    assert _loaded_after(fit) == ["scipy.optimize", "scipy.special"]
