"""Old projects score exactly as before: a stored plan of every past version of the default
design (``tests/golden/plan_versions.py``) gives the estimates, variance components and
both-wrong rates pinned when that code was current, to 1e-12."""

from __future__ import annotations

import json

from tests.golden.compare import differences
from tests.golden.plan_versions import snapshot
from tests.golden.projects import GOLDEN


def test_every_stored_plan_version_scores_as_pinned():
    want = json.loads((GOLDEN / "plan_versions.json").read_text(encoding="utf-8"))
    got = json.loads(json.dumps(snapshot(), default=float))
    assert set(got) == {"v1", "v2", "v3_two_opinions_audit", "v3_two_opinions_all", "v3"}
    diffs = differences(want, got)
    assert not diffs, "\n".join(diffs[:40])
