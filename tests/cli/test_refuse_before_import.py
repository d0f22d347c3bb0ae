"""Every command refuses a missing input file before it imports the analysis packages: the
check runs as the command line is parsed, so the one-line error costs what ``--help`` costs
(the modules a process imported are read from its ``sys.modules``, not from a timing)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "sklearn", "torch", "lmfit", "pyarrow")

COMMANDS = [
    ["fit", "missing.csv"],
    ["isoflop", "missing.csv"],
    ["plan", "missing.csv", "--compute", "1e20"],
    ["plan", "--from", "missing.json", "--compute", "1e20"],
    ["forecast", "missing.csv"],
    ["forecast", "missing.csv", "--method", "multipower"],
    ["law", "depth", "missing.csv"],
    ["law", "classes", "missing.csv"],
    ["law", "inference-k", "missing.csv"],
    ["law", "task", "missing.csv", "--runs", "missing.json"],
    ["design", "--law", "chinchilla", "--pool", "missing.csv", "--target-compute", "1e22",
     "--budget", "1e20"],
    ["allocate", "replay", "synthetic", "--policy", "forecast", "--curves", "missing.csv",
     "--budget", "1e18"],
    ["store", "import", "missing.csv", "--store", "{tmp}/new.db"],
    ["report", "missing.json", "-o", "{tmp}/page.html"],
]

_PROBE = """
import contextlib, io, json, sys
from scalekit_cli.app import main
out = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(args)
    out.append([args, code, err.getvalue(), [m for m in {heavy!r} if m in sys.modules]])
print(json.dumps(out))
"""


def test_a_missing_input_is_refused_before_any_analysis_package_is_imported(tmp_path):
    commands = [[word.format(tmp=tmp_path) for word in args] for args in COMMANDS]
    done = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY), json.dumps(commands)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, check=True)
    for args, code, err, imported in json.loads(done.stdout):
        assert code == 2, (args, err)
        assert err.count("\n") == 1 and "missing." in err and "no such file" in err, (args, err)
        assert imported == [], f"scalekit {' '.join(args)} imported {imported} before refusing"
    assert not list(tmp_path.iterdir()), "nothing is written"
