"""Every query, one module per area; functions are keyword-only and return DataFrames
or plain records (dicts / dataclasses), never live ORM objects to pages."""
