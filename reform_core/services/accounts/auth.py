"""Who is calling: the signed-in principal and server-side role checks.

Every service that changes or reveals role-restricted data takes a ``Principal`` and
calls :func:`require` first; a hidden menu entry is not access control.
"""

from __future__ import annotations

from dataclasses import dataclass

ROLES = ("annotator", "analyst", "lead")
# What each role may do. A lead may do everything.
PERMISSIONS: dict[str, set[str]] = {
    "annotator": {"adjudicate", "rate_wording", "view_overview"},
    "analyst": {"view_overview", "view_scores", "explore", "view_data"},
    "lead": {"*"},
}


class AccessDenied(PermissionError):
    """The principal's role does not allow this action."""


@dataclass(frozen=True)
class Principal:
    """The signed-in user as services see it (never a typed name)."""

    user_id: int
    username: str
    role: str

    def can(self, action: str) -> bool:
        perms = PERMISSIONS.get(self.role, set())
        return "*" in perms or action in perms


def require(principal: Principal | None, action: str) -> Principal:
    """Raise :class:`AccessDenied` unless ``principal`` may perform ``action``."""
    if principal is None:
        raise AccessDenied(f"sign-in required to {action.replace('_', ' ')}")
    if not principal.can(action):
        raise AccessDenied(f"role {principal.role!r} may not {action.replace('_', ' ')}")
    return principal


def require_any(principal: Principal | None, actions: tuple[str, ...]) -> Principal:
    """Raise :class:`AccessDenied` unless ``principal`` may perform at least one of ``actions``."""
    if principal is not None and any(principal.can(a) for a in actions):
        return principal
    return require(principal, actions[0])
