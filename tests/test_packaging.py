"""The package list in pyproject.toml matches the tree, and the CLI stays light."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from conftest import REPO


def test_every_package_is_listed_in_pyproject():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts)
               for p in (REPO / "scalekit").rglob("__init__.py")}
    on_disk |= {"scalekit_cli" + "".join("." + part for part in p.parent.relative_to(REPO / "cli").parts)
                for p in (REPO / "cli").rglob("__init__.py")}
    assert listed == on_disk


def test_help_does_not_import_torch_or_the_fitters():
    code = ("import sys\nfrom scalekit_cli.app import main\n"
            "rc = main(['--help'])\n"
            "heavy = [m for m in ('torch', 'scipy', 'sklearn', 'pandas', 'matplotlib') if m in sys.modules]\n"
            "print(rc, heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "0 []"
