"""What annotators see, in real Chromium (issue 33): the keyboard to the end on Adjudicate and
Rate wordings, the decision in view at 1280×800, and blinding on an IFEval strict/loose
project. No test here clicks: every action is a key press (setup goes through the services)."""

from __future__ import annotations

import re
import time

import pytest
from sqlalchemy import text

from tests.e2e.harness import browser_context, require_chromium, streamlit_app

pytestmark = pytest.mark.e2e
VIEW = {"width": 1280, "height": 800}


def _local(url: str) -> dict:
    return {"REFORM_DATABASE_URL": url, "REFORM_AUTH_MODE": "local", "REFORM_LOAD_DEMO": "false"}


@pytest.fixture(scope="module")
def keys_app(tmp_path_factory):
    """The demo with a plan of its disagreements and 25 audits of agreements (the newest plan:
    the one Adjudicate opens on), in local mode."""
    require_chromium()
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication.adjudication import create_plan
    from reform_core.services.platform.uow import dispose_engines, get_engine
    from reform_core.services.project.setup import ensure_demo
    from reform_core.services.studies import wording

    url = f"sqlite:///{tmp_path_factory.mktemp('keys') / 'keys.db'}"
    eng = get_engine(url)
    ensure_demo(eng)
    lead = local_principal(eng)
    plan = create_plan(eng, lead, judge_a="gpt-judge", judge_b="gemini-judge", seed=3, audit=25, name="keys")
    wording.create_study(
        eng,
        lead,
        name="twenty",
        targets=[5, 8, 10, 12],
        forms=[
            {"key": f"F{k}", "template": t}
            for k, t in enumerate(
                (
                    "Answer using exactly {N} words.",
                    "Do not use more or fewer than {N} words.",
                    "Your answer should have no length other than {N} words.",
                    "Write {N} words, no more, no less.",
                    "Keep the answer at precisely {N} words.",
                )
            )
        ],
    )
    dispose_engines()
    with streamlit_app(_local(url)) as base:
        yield base, url, plan.plan_id


def _decisions(url: str, plan_id: int) -> list[tuple]:
    from reform_core.services.platform.uow import get_engine

    with get_engine(url).connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT t.kind, d.choice, d.label, d.note, (SELECT j.label FROM judgment j WHERE j.id = d.judgment_a_id) "
                    "FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id JOIN app_user u ON u.id = d.user_id "
                    "WHERE t.plan_id = :p AND u.username = 'local' AND d.choice <> 'retracted' ORDER BY d.id"
                ),
                {"p": plan_id},
            ).all()
        ]


def _in_view(page, locator, *, first_px: float = 0.0) -> None:
    """``locator`` lies within the 1280×800 viewport (its top ``first_px`` pixels at least)."""
    box = locator.bounding_box()
    assert box is not None, locator
    bottom = box["y"] + (first_px or box["height"])
    assert 0 <= box["y"] and bottom <= VIEW["height"], (locator, box)


def _task(page) -> str:
    """The id of the task on screen (its constraint box is keyed by it)."""
    return re.search(
        r"st-key-adj_constraint_(\d+)", page.locator("[class*='st-key-adj_constraint_']").get_attribute("class")
    ).group(1)


IDLE = """() => !document.querySelector('[data-stale="true"]')
    && !document.querySelector('[data-testid="stStatusWidget"]')"""


def _gone(page, task: str) -> None:
    """Wait until the item ``task`` has left the screen, the next one is shown and the page is
    idle (no rerun running, no stale element still bound to a key)."""
    from playwright.sync_api import expect

    expect(page.locator(f".st-key-adj_constraint_{task}")).to_have_count(0)
    expect(page.locator("[class*='st-key-adj_constraint_']")).to_have_count(1)
    page.wait_for_function(IDLE, polling="raf")


def _check_layout(page, audit: bool) -> None:
    """Issue 33 item 4: the constraint, the decision bar and the start of both rationales are
    visible without scrolling; the item starts at the top."""
    _in_view(page, page.get_by_role("heading", name=re.compile(r"^Item \d+ of \d+$")))
    _in_view(page, page.locator("[class*='st-key-adj_constraint_']"))
    first = ("Passes", "Fails") if audit else ("Judge A is better supported", "Judge B is better supported")
    for label in (*first, "Skip", "Undo my last decision"):
        _in_view(page, page.get_by_role("button", name=label).first)
    judges = page.locator("[class*='st-key-adj_judge_']")
    if audit:  # an audit shows neither the judges' verdict nor their reasons
        assert judges.count() == 0
        return
    assert judges.count() == 2
    for k in range(2):  # the first line of each rationale
        _in_view(page, judges.nth(k).locator("[data-testid='stHtml']").first, first_px=24)


def _decide_by_keys(page, audit: bool, n: int) -> None:
    """The ``n``-th decision of its kind: on an audit F with a note every fourth time, else P and
    Enter; on a disagreement N with a note every fifth time, else A or B."""
    from playwright.sync_api import expect

    note = audit and n % 4 == 0 or not audit and n % 5 == 0
    if not audit and not note:
        page.keyboard.press("a" if n % 2 else "b")
        return
    page.keyboard.press(("f" if note else "p") if audit else "n")
    expect(page.get_by_role("textbox")).to_be_focused()
    if note:
        page.keyboard.type(f"fails: note {n}" if audit else f"both misread it: note {n}")
    page.keyboard.press("Enter")


def test_twenty_decisions_of_each_kind_by_keys_only_with_the_decision_in_view(keys_app):
    """20 disagreements (A, B, N with a note) and 20 audits (P, F with a note, P with Enter)
    decided with key presses only at 1280×800; an Escape leaves a note without saving; every
    item's constraint, decision bar and rationale starts are in view when it appears."""
    from playwright.sync_api import expect

    base, url, plan_id = keys_app
    done = {"disagreement": 0, "audit": 0}
    seconds = []
    with browser_context(viewport=VIEW) as ctx:
        page = ctx.new_page()
        page.goto(f"{base}/adjudicate")
        counter = page.get_by_role("heading", name=re.compile(r"^Item \d+ of \d+$"))
        expect(counter).to_be_visible(timeout=90_000)
        page.wait_for_function(IDLE, polling="raf")  # the first page load ran to its end: the keys are bound
        escaped = False
        while min(done.values()) < 20:
            task, shown = _task(page), counter.inner_text()
            expect(page.locator(f".st-key-adj_btn_s_{task}")).to_have_count(1)  # the item's bar is drawn
            audit = page.locator(f".st-key-adj_btn_p_{task}").count() > 0
            kind = "audit" if audit else "disagreement"
            if done[kind] >= 20:
                page.keyboard.press("s")  # enough of this kind: skip it
                _gone(page, task)
                continue
            _check_layout(page, audit)
            n = done[kind]
            start = time.monotonic()
            if audit and n == 3 and not escaped:  # Escape leaves the note without saving
                before = len(_decisions(url, plan_id))
                page.keyboard.press("p")
                expect(page.get_by_role("textbox")).to_be_focused()
                page.keyboard.type("changed my mind")
                page.keyboard.press("Escape")
                expect(page.get_by_role("textbox")).to_have_count(0)
                assert len(_decisions(url, plan_id)) == before and _task(page) == task
                escaped = True
                continue
            _decide_by_keys(page, audit, n)
            _gone(page, task)
            expect(page.get_by_text(f"on {shown.lower()}.")).to_be_visible()
            seconds.append(time.monotonic() - start)
            done[kind] += 1
    print(f"\n40 decisions by keys: median {sorted(seconds)[20]:.2f} s from key to the next item")

    rows = _decisions(url, plan_id)
    assert len(rows) == 40 and sum(r[0] == "audit" for r in rows) == 20
    dis = [r for r in rows if r[0] == "disagreement"]
    assert sum(r[1] == "neither" and r[3].startswith("both misread it") for r in dis) == 4
    assert {r[1] for r in dis} == {"A", "B", "neither"}
    for kind, choice, label, note, agreed in (r for r in rows if r[0] == "audit"):
        said = 0 if note.startswith("fails") else 1  # the verdict given
        assert (choice, label) == (("A", agreed) if said == agreed else ("neither", None)), (choice, label, note)
    assert sum(r[3].startswith("fails") for r in rows) == 5


def test_twenty_wording_items_rated_by_keys_only(keys_app):
    """Rate wordings: Y / N, then 1–5 for each scale in turn, U to the next unanswered item
    (saving this one) — 20 items, keys only."""
    from playwright.sync_api import expect

    from reform_core.services.accounts.users import local_principal
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.studies import wording

    base, url, _ = keys_app
    given = {}
    with browser_context(viewport=VIEW) as ctx:
        page = ctx.new_page()
        page.goto(f"{base}/wording_rate")
        for n in range(1, 21):
            heading = page.get_by_role("heading", name=f"Item {n} of 20")
            expect(heading).to_be_visible(timeout=90_000 if n == 1 else 30_000)
            expect(page.get_by_role("button", name="Yes")).to_be_visible()  # the keys are bound
            page.wait_for_timeout(300)
            values = ["y" if n % 3 else "n", *(str((n + k) % 5 + 1) for k in range(4))]
            for g, key in enumerate(values):  # each key's answer is on screen before the next key
                page.keyboard.press(key)
                shown = ("Yes" if key == "y" else "No") if g == 0 else key
                radio = page.get_by_role("radiogroup").nth(g).get_by_role("radio", name=shown, exact=True)
                expect(radio).to_be_checked()
            given[n] = (values[0] == "y", [int(v) for v in values[1:]])
            page.keyboard.press("u")
        expect(page.get_by_text("Every item is answered.")).to_be_visible()
    eng = get_engine(url)
    lead = local_principal(eng)
    sid = int(wording.list_studies(eng, lead).set_index("name").loc["twenty", "id"])
    queue = wording.annotator_queue(eng, lead, study_id=sid).set_index("position")
    assert bool(queue["answered"].all())
    for n, (yes, ratings) in given.items():
        assert bool(queue.loc[n, wording.ANSWER]) == yes, n
        assert [int(queue.loc[n, r]) for r in wording.RATINGS] == ratings, n


# ----------------------------------------------------------------------------- blinding on IFEval

SECRETS = re.compile(r"\b(strict|loose|rules?|verifiers?(-loose)?|gpt4)\b|ifeval:", re.I)
PAGE_TEXT = """() => {
  const main = document.querySelector('[data-testid="stMain"]').cloneNode(true);
  main.querySelectorAll('[class*="st-key-adj_response_"], [class*="st-key-adj_instruction_"]').forEach(e => e.remove());
  const attrs = [...main.querySelectorAll('*')].flatMap(e =>
    ['title', 'aria-label', 'placeholder', 'value'].map(a => e.getAttribute(a) || ''));
  const inputs = [...document.querySelectorAll('[data-testid="stMain"] input')].map(e => e.value);
  return main.textContent + ' ' + attrs.join(' ') + ' ' + inputs.join(' ');
}"""


@pytest.fixture(scope="module")
def ifeval_app(tmp_path_factory):
    """IFEval (GPT-4's responses) judged by the rules judge strict and loose — judges named after
    their modes as in the README — with half the rationales stored as an earlier version or an
    import wrote them (``[ifeval:<id>, strict]``, the judge and its provider named), a plan of
    disagreements and 20 audits, in local mode."""
    require_chromium()
    from pathlib import Path

    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication.adjudication import create_plan
    from reform_core.services.data.ifeval_import import import_ifeval
    from reform_core.services.judging.judging import run_judge
    from reform_core.services.platform.uow import dispose_engines, get_engine

    data = Path(__file__).resolve().parents[1] / "data" / "ifeval"
    url = f"sqlite:///{tmp_path_factory.mktemp('ifeval') / 'ifeval.db'}"
    eng = get_engine(url)
    import_ifeval(
        eng,
        input_path=data / "input_data.jsonl",
        responses={"gpt4": data / "input_response_data_gpt4_20231107_145030.jsonl"},
    )
    for mode in ("strict", "loose"):
        run_judge(eng, provider="rules", mode=mode, name=mode)
    with eng.begin() as conn:
        conn.execute(
            text(
                "UPDATE judgment SET rationale = 'The ' || j.name || ' judge (' || j.model || ', rules provider): ' "
                "|| rationale || ' [ifeval:' || (SELECT c.feature FROM constraint_item c WHERE c.id = constraint_id) "
                "|| ', ' || j.name || ']' FROM judge j WHERE j.id = judgment.judge_id AND judgment.id % 2 = 0"
            )
        )
    plan = create_plan(eng, local_principal(eng), judge_a="strict", judge_b="loose", seed=5, audit=20)
    assert plan.tasks >= 30 and plan.name == "strict vs loose #1"
    dispose_engines()
    with streamlit_app(_local(url)) as base:
        yield base


def test_thirty_ifeval_items_name_no_judge_mode_or_provider(ifeval_app):
    """Every text of 30 items (the response and the instruction aside: the evaluated model wrote
    the one and the benchmark the other) holds no judge, mode or provider name — not the plan
    name "strict vs loose #1", not the rationales' old "[…, strict]" suffix."""
    from playwright.sync_api import expect

    with browser_context(viewport=VIEW) as ctx:
        page = ctx.new_page()
        page.goto(f"{ifeval_app}/adjudicate")
        expect(page.locator("[class*='st-key-adj_constraint_']")).to_be_visible(timeout=90_000)
        page.wait_for_function(IDLE, polling="raf")  # the first page load ran to its end: the keys are bound
        seen, rationales = set(), 0
        while len(seen) < 30:
            task = _task(page)
            assert task not in seen
            seen.add(task)
            expect(page.locator(f".st-key-adj_btn_s_{task}")).to_have_count(1)  # the item is drawn to its bar
            page.wait_for_timeout(300)
            shown = page.evaluate(PAGE_TEXT)
            assert "Constraint under review" in shown, shown
            leaks = sorted({m.group(0) for m in SECRETS.finditer(shown)})
            assert not leaks, (task, leaks)
            rationales += page.locator("[class*='st-key-adj_judge_'] [data-testid='stHtml']").count()
            page.keyboard.press("s")
            _gone(page, task)
    assert rationales >= 20  # disagreements were among them, with their rationales read
