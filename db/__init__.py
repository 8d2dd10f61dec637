"""Persistence: SQLModel tables, the engine factory, queries (repo) and migrations."""
