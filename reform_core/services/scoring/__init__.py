"""Scores: the paper's rules and the estimators through the estimation seam, intervals, analyses."""
