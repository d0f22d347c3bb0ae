"""`scalekit store` (being built)."""

import typer


def register(app: typer.Typer) -> None:
    """Add the `store` command to ``app``."""
