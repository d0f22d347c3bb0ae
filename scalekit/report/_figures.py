"""What every plot function shares: matplotlib on demand, new or given axes, saving.

Each plot function takes ``ax=`` (draw into the caller's Axes; a multi-panel
plot takes a sequence of them) and returns the Axes (or the Figure, for a
multi-panel plot). With ``path`` the figure is also written there (PNG, SVG
or PDF by suffix); a figure the function made itself is then closed, so that
scripts and the CLI keep no figures open. matplotlib is imported when a plot
is drawn, with the Agg backend unless pyplot is loaded or ``MPLBACKEND`` names
one (as Jupyter does).
"""

from __future__ import annotations

from pathlib import Path


def pyplot():
    """``matplotlib.pyplot``, imported on first use (see the module docstring for the backend)."""
    import os
    import sys

    if "matplotlib.pyplot" not in sys.modules and not os.environ.get("MPLBACKEND"):
        import matplotlib

        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def axes(ax, *, figsize: tuple[float, float], panels: int = 1):
    """``(axes, made)``: the given ``ax`` (one Axes, or ``panels`` of them), or a new figure's."""
    if ax is not None:
        if panels > 1 and len(ax) != panels:
            from scalekit.checks import fail

            raise fail("ax", f"{len(ax)} Axes", f"{panels} Axes (one per panel)")
        return ax, False
    plt = pyplot()
    fig, made = plt.subplots(1, panels, figsize=figsize, constrained_layout=True)
    return made, True


def finish(figure, path: str | Path | None, made: bool) -> None:
    """Write ``figure`` to ``path`` (if given); close it if this module made it."""
    if path is None:
        return
    from scalekit.serialise import atomic_output

    with atomic_output(path) as temporary:   # whole or not at all
        figure.savefig(temporary, dpi=120)
    if made:
        pyplot().close(figure)


def plain_log_ticks(ax, axis: str = "y") -> None:
    """Label the ticks of a log ``axis`` ("x", "y" or "both") with plain numbers
    (:func:`scalekit.formatting.format_number`: ``3``, ``0.5``, ``1e+09``) instead of
    matplotlib's ``3×10⁰`` on a log axis spanning less than a decade or two."""
    from matplotlib.ticker import FuncFormatter

    from scalekit.formatting import format_number

    plain = FuncFormatter(lambda value, _: format_number(value, 3))
    for which in ("x", "y") if axis == "both" else (axis,):
        target = ax.xaxis if which == "x" else ax.yaxis
        target.set_major_formatter(plain)
        target.set_minor_formatter(plain)
