"""Scores and metrics over long DataFrames (pure; see SPEC §3, §5, §6)."""
