"""The page registry: every screen, its section and the action its role must allow."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    path: str
    title: str
    icon: str
    section: str
    action: str  # the permission checked by reform_core.services.auth


PAGES: list[PageSpec] = [
    PageSpec("pages/overview.py", "Overview", "🏠", "Project", "view_overview"),
    PageSpec("pages/data.py", "Data", "🗂️", "Project", "view_data"),
    PageSpec("pages/scores.py", "Scores", "📊", "Analysis", "view_scores"),
    PageSpec("pages/explore.py", "Explore", "🔎", "Analysis", "explore"),
    PageSpec("pages/export.py", "Export", "📦", "Admin", "export"),
    PageSpec("pages/users.py", "Users", "👥", "Admin", "manage_users"),
]
