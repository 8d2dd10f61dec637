"""ReForm core library: pure maths, verifiers, judges and services.

Everything here except ``reform_core.services``, ``reform_core.commands`` and
``reform_core.cli`` is pure: it imports neither ``db`` nor ``streamlit``.
"""

__version__ = "0.1.0"
