"""The human side: sample plans, the work queue, decisions, closing and extending plans."""
