"""Replay judge: labels already in the database (e.g. imported) under another judge.

The service loads the source judge's judgments into a mapping
``(response_id, constraint_id) -> (label, rationale, status)``; a pair missing from the
source becomes an error verdict, so it stays pending and is retried by a later run.
"""

from __future__ import annotations

from typing import Mapping, Optional

from reform_core.judges.base import JudgeItem, JudgeResult, Verdict

REPLAY_VERSION = "replay-v1"


class ReplayJudge:
    provider = "replay"
    prompt_version = REPLAY_VERSION

    def __init__(self, labels: Mapping[tuple[int, int], tuple[Optional[int], str, str]], *, source: str):
        self.labels = labels
        self.model = source
        self.source = source

    async def judge(self, item: JudgeItem) -> JudgeResult:
        verdicts = []
        for c in item.constraints:
            got = self.labels.get((item.response_id, c.id))
            if got is None:
                verdicts.append(Verdict(c.id, None, "", "error", f"no judgment by {self.source!r} for this pair"))
                continue
            label, rationale, status = got
            if status == "ok" and label not in (0, 1):
                verdicts.append(Verdict(c.id, None, rationale, "error", f"source label {label!r} is not 0 or 1"))
            else:
                verdicts.append(Verdict(c.id, label if status == "ok" else None, rationale, status))
        return JudgeResult(item, verdicts)
