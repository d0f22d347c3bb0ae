"""scalekit.integrations and its rung rule import neither Optuna nor Ray (optional extras)."""

from __future__ import annotations

import subprocess
import sys


def test_integrations_package_imports_no_sweep_tool():
    code = ("import sys, scalekit.integrations, scalekit.integrations._rungs; "
            "print(sorted(m for m in ('optuna', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
