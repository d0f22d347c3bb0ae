"""Outputs of analyses: strict JSON reports, rich tables, plots and the HTML page.

The face is lazy: matplotlib and rich load when a name is first used, so importing
:mod:`scalekit.report` (the CLI does, for every command) stays instant. The plot
modules (``fit_plots``, ``isoflop_plots``, ``forecast_plots``, ``allocate_plots``,
``law_plots``, ``task_plots``, ``schedule_plots``, ``design_plot``) are public too;
each plot takes ``ax=`` and returns it.
"""

from __future__ import annotations

from scalekit.lazy import lazy_names

_LAZY = {
    "plot_allocations": "scalekit.report.allocate_plots",
    "plot_frontiers": "scalekit.report.allocate_plots",
    "plot_replay_summary": "scalekit.report.allocate_plots",
    "plot_rungs": "scalekit.report.allocate_plots",
    "plot_design": "scalekit.report.design_plot",
    "efficient_frontier": "scalekit.report.fit_plots",
    "plot_curve": "scalekit.report.fit_plots",
    "plot_law": "scalekit.report.fit_plots",
    "plot_surface": "scalekit.report.fit_plots",
    "diagnostic_lines": "scalekit.report._fit_report",
    "fit_renderables": "scalekit.report._fit_report",
    "plan_rows": "scalekit.report._fit_report",
    "drawn_runs": "scalekit.report.forecast_plots",
    "plot_forecasts": "scalekit.report.forecast_plots",
    "plot_scores": "scalekit.report.forecast_plots",
    "html_page": "scalekit.report._html",
    "plot_isoflop": "scalekit.report.isoflop_plots",
    "plot_metric_allocations": "scalekit.report.isoflop_plots",
    "plot_comparison": "scalekit.report.compare_plots",
    "plot_depth_fit": "scalekit.report.law_plots",
    "plot_inference_k": "scalekit.report.law_plots",
    "plot_schedule_search": "scalekit.report.schedule_plots",
    "FORMATS": "scalekit.report._tables",
    "Estimate": "scalekit.report._tables",
    "render_tables": "scalekit.report._tables",
    "table_data": "scalekit.report._tables",
    "plot_task_law": "scalekit.report.task_plots",
    "plot_hparams": "scalekit.report.hparams_plots",
}

__all__ = list(_LAZY)

__getattr__ = lazy_names(__name__, _LAZY)
