"""Rule judge, replay judge and the async runner (offline)."""

import asyncio
import threading

import pytest

from reform_core.judges.base import TASK_PRESENCE, ConstraintSpec, JudgeItem, JudgeResult, Verdict
from reform_core.judges.replay import ReplayJudge
from reform_core.judges.rule_judge import RuleJudge
from reform_core.judges.runner import run_items
from reform_core.verifiers.base import CheckResult, register


@register("feature:tjr_star")
def _star(text: str) -> CheckResult:
    return CheckResult("*" in text, evidence="star found" if "*" in text else "no star")


@register("feature:tjr_broken")
def _broken(text: str) -> CheckResult:
    raise RuntimeError("detector bug")


def _spec(cid, pos, feature, mode, params=None):
    return ConstraintSpec(cid, pos, feature, mode, params=params or {})


def _judge(text, *specs, task="constraints"):
    return asyncio.run(RuleJudge().judge(JudgeItem(1, "instr", text, tuple(specs), task=task))).verdicts


def test_rule_require_and_forbid():
    v = _judge("a * b", _spec(1, 1, "tjr_star", "require"), _spec(2, 2, "tjr_star", "forbid"))
    assert [(x.label, x.status) for x in v] == [(1, "ok"), (0, "ok")]
    v = _judge("plain", _spec(1, 1, "tjr_star", "require"), _spec(2, 2, "tjr_star", "forbid"))
    assert [(x.label, x.status) for x in v] == [(0, "ok"), (1, "ok")]
    assert v[0].rationale == "no star"


def test_rule_abstains_when_it_cannot_decide():
    v = _judge(
        "a * b",
        _spec(1, 1, "tjr_unknown_feature", "require"),
        _spec(2, 2, "tjr_star", "require", {"n": 3}),
        _spec(3, 3, "tjr_broken", "forbid"),
    )
    assert [(x.label, x.status) for x in v] == [(None, "abstain")] * 3
    assert (
        "no rule verifier" in v[0].rationale and "need a judge" in v[1].rationale and "detector bug" in v[2].rationale
    )
    # absent required feature fails even with parameters
    assert _judge("plain", _spec(1, 1, "tjr_star", "require", {"n": 3}))[0].label == 0


def test_rule_presence_task():
    v = _judge("**x**", _spec("tjr_star", 1, "tjr_star", "require"), task=TASK_PRESENCE)
    assert (v[0].constraint_id, v[0].label) == ("tjr_star", 1)


def test_replay_copies_labels_and_flags_missing_pairs():
    labels = {(1, 10): (1, "ok", "ok"), (1, 11): (None, "", "abstain"), (1, 12): (5, "bad", "ok")}
    item = JudgeItem(
        1,
        "i",
        "r",
        (
            _spec(10, 1, "f", "require"),
            _spec(11, 2, "f", "require"),
            _spec(12, 3, "f", "require"),
            _spec(13, 4, "f", "require"),
        ),
    )
    v = asyncio.run(ReplayJudge(labels, source="imported").judge(item)).verdicts
    assert [(x.label, x.status) for x in v] == [(1, "ok"), (None, "abstain"), (None, "error"), (None, "error")]
    assert "imported" in v[3].error


class _SlowJudge:
    provider, model, prompt_version = "fake", "fake", "v"

    def __init__(self, fail_on=()):
        self.active = self.peak = self.calls = 0
        self.fail_on = set(fail_on)

    async def judge(self, item):
        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1
        if item.response_id in self.fail_on:
            raise RuntimeError("boom")
        return JudgeResult(item, [Verdict(c.id, 1) for c in item.constraints], requests=1)


def _items(n):
    return [JudgeItem(i, "i", "r", (_spec(i * 10, 1, "f", "require"),)) for i in range(n)]


def test_runner_bounds_concurrency_and_writes_everything():
    judge, written, progress = _SlowJudge(fail_on={3}), [], []
    threads = set()

    def on_results(batch):
        threads.add(threading.get_ident())
        written.extend(batch)

    stats = asyncio.run(
        run_items(
            judge,
            _items(40),
            on_results=on_results,
            concurrency=5,
            progress=lambda d, t: progress.append((d, t)),
            commit_every=4,
        )
    )
    assert judge.peak == 5 and judge.calls == 40
    assert sorted(r.item.response_id for r in written) == list(range(40))
    assert stats.items == 40 and stats.errors == 1 and stats.verdicts == 40
    failed = next(r for r in written if r.item.response_id == 3)
    assert failed.verdicts[0].status == "error" and "boom" in failed.verdicts[0].error
    assert progress[-1] == (40, 40) and len(progress) == 40
    assert threading.get_ident() not in threads  # commits ran off the event loop thread


def test_runner_cancel_stops_new_calls():
    judge, written = _SlowJudge(), []
    cancel = threading.Event()

    def on_results(batch):
        written.extend(batch)
        cancel.set()

    stats = asyncio.run(run_items(judge, _items(50), on_results=on_results, concurrency=2, cancel=cancel))
    assert stats.cancelled and judge.calls < 50
    assert len(written) == judge.calls  # calls in flight were still written


def test_runner_stops_when_the_writer_fails():
    judge = _SlowJudge()

    def on_results(batch):
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        asyncio.run(run_items(judge, _items(100), on_results=on_results, concurrency=2))
    assert judge.calls < 100


def test_runner_validates_arguments():
    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(run_items(_SlowJudge(), [], on_results=print, concurrency=0))
