"""Outputs of analyses: strict JSON reports, rich tables and plots."""
