"""The newest Alembic revision, importable without SQLAlchemy (``status`` reads a SQLite file
with ``sqlite3`` alone). A test keeps it equal to the migration scripts' head."""

SCHEMA_HEAD = "0011_wording_outside_raters"
