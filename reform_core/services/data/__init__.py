"""A project's data in and out: imports (bundles, tables, decisions), catalogs, the frames scoring reads."""
