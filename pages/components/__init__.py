"""Shared render helpers, session-state keys and the only st.cache_* wrappers."""
