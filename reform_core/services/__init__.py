"""Use cases, one module per job: the one place that joins ``db`` and the pure core."""
