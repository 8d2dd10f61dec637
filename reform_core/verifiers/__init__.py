"""Deterministic checkers: ``text (+ params) -> CheckResult``, registered by id."""

from reform_core.verifiers.base import CheckResult, get, register, registered_ids

__all__ = ["CheckResult", "get", "register", "registered_ids"]
