"""The page registry: every screen, its section and the action its role must allow."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    path: str
    title: str
    icon: str
    section: str
    action: str  # the permission checked by reform_core.services.accounts.auth


PAGES: list[PageSpec] = [
    PageSpec("pages/overview.py", "Overview", ":material/home:", "Project", "view_overview"),
    PageSpec("pages/data.py", "Data", ":material/folder_open:", "Project", "view_data"),
    PageSpec("pages/import_data.py", "Import", ":material/upload_file:", "Project", "import_data"),
    PageSpec("pages/construction.py", "Construction", ":material/construction:", "Pipeline", "run_construction"),
    PageSpec("pages/judges.py", "Judges", ":material/gavel:", "Pipeline", "run_judges"),
    PageSpec("pages/sampling.py", "Sampling", ":material/shuffle:", "Adjudication", "plan_sampling"),
    PageSpec("pages/adjudicate.py", "Adjudicate", ":material/balance:", "Adjudication", "adjudicate"),
    PageSpec("pages/scores.py", "Scores", ":material/leaderboard:", "Analysis", "view_scores"),
    PageSpec("pages/explore.py", "Explore", ":material/search:", "Analysis", "explore"),
    PageSpec("pages/wording_design.py", "Wording studies", ":material/edit_note:", "Wording", "manage_wording"),
    PageSpec("pages/wording_rate.py", "Rate wordings", ":material/rate_review:", "Wording", "rate_wording"),
    PageSpec("pages/wording_results.py", "Wording results", ":material/analytics:", "Wording", "view_scores"),
    PageSpec("pages/mosaic_results.py", "MOSAIC results", ":material/checklist:", "Studies", "view_scores"),
    PageSpec("pages/export.py", "Export", ":material/download:", "Admin", "export"),
    PageSpec("pages/users.py", "Users", ":material/group:", "Admin", "manage_users"),
]
