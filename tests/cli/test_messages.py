"""The one line a failing command prints: the right reason, where, and nothing before it."""

from __future__ import annotations

import subprocess
import sys

from scalekit_cli.app import main

WARNS = """
import sys
import numpy as np
import typer
from scalekit.errors import InputError
from scalekit_cli.app import app, main

@app.command("warn-then")
def warn_then(fail: bool = typer.Option(False, "--fail"),
              quiet: bool = typer.Option(False, "--quiet", "-q")):
    np.log(np.zeros(1))  # numpy: RuntimeWarning, divide by zero
    if fail:
        raise InputError("bad input", source="f.csv", line=3)
    if not quiet:
        print("result")

sys.exit(main(sys.argv[1:]))
"""


def _run(*args):
    done = subprocess.run([sys.executable, "-c", WARNS, *args], capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_warnings_follow_a_success_and_are_held_back_under_quiet_and_before_an_error():
    code, out, err = _run("warn-then")
    assert code == 0 and out == "result\n"
    assert err == "warning: RuntimeWarning: divide by zero encountered in log\n"
    assert _run("warn-then", "-q") == (0, "", "")
    assert _run("warn-then", "--fail") == (2, "", "error: f.csv:3: bad input\n")


def test_a_step_beyond_2_53_is_too_large_not_fractional(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text(f"run,step,compute,loss\nr0,{2 ** 60},1e18,3.0\n")
    assert main(["fit", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"error: {path}:2, column 'step': the step {float(2 ** 60)!r} is too large to be held "
        "exactly; whole numbers up to 2**53 are supported\n")


def test_a_class_count_out_of_range_names_the_file_line_the_run_and_the_value(tmp_path, capsys):
    path = tmp_path / "classes.csv"
    path.write_text("run,classes,error\nb,3,0.2\na,1,0.3\n")
    assert main(["law", "classes", str(path), "-q"]) == 2
    assert capsys.readouterr().err == (f"error: {path}:3, column 'classes': run 'a' has "
                                       "classes = 1, but every value must be at least 2\n")
    path.write_text("run,classes,error\nb,3,0.2\nc,4,1.5\n")
    assert main(["law", "classes", str(path), "-q"]) == 2
    assert "run 'c' has error = 1.5, but every value must be strictly between 0 and 1" in \
        capsys.readouterr().err
