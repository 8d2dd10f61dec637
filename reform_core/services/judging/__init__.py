"""The judges: runs over the project's (response, constraint) pairs, and response collection."""
