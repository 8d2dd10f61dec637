"""Scores and metrics over long DataFrames (pure; definitions in docs/metrics.md)."""
