"""Golden test: every estimate, interval and export file of three simulated projects
(``tests/golden/projects.py``: a finished default plan, a default plan part-way, the paper's
rules on every condition) equals its pinned value to 1e-12.

The pinned values (``tests/data/golden/``) were written before the estimation code was
restructured; a change that moves a number fails here. When a change of the numbers is
intended (an estimator's rule changes), rewrite them with
``python -m tests.golden.projects --update`` and say in the commit why each number moved.
"""

from __future__ import annotations

import json

import pytest

from tests.golden.compare import differences as _differences
from tests.golden.projects import GOLDEN, NAMES, build, snapshot


def test_differences_finds_a_moved_number_and_a_changed_text():
    want = {"a": [1.0, {"b": "x"}], "c": 2}
    assert _differences(want, {"a": [1.0 + 1e-13, {"b": "x"}], "c": 2}) == []
    assert _differences(want, {"a": [1.0 + 1e-9, {"b": "y"}], "c": 2}) == [
        "/a[0]: 1.000000001, pinned 1.0",
        "/a[1]/b: 'y', pinned 'x'",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_number_equals_its_pinned_value(name, tmp_path):
    want = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    got = json.loads(json.dumps(snapshot(name, build(name, tmp_path), tmp_path), sort_keys=True))
    diffs = _differences(want, got)
    assert not diffs, f"{len(diffs)} value(s) moved, e.g.:\n" + "\n".join(diffs[:40])
