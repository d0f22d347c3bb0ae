"""`scalekit fit` (being built)."""

import typer


def register(app: typer.Typer) -> None:
    """Add the `fit` command to ``app``."""
