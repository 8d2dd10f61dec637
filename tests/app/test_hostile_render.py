"""Hostile input renders inert (issue 9): no imported text can run script in the app.

A project is imported whose response texts, question and instruction texts, model name
and constraint texts carry HTML/JS and Markdown tricks. Every page that shows them is
rendered with AppTest and the element tree is inspected: no element may render
untrusted text as HTML (no ``st.html``, no markdown with ``unsafe_allow_html``), and
every response text must be shown verbatim in a code element or through the safe
renderer (``pages/components/render.py``: st.html of escaped, link-free HTML).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from pages.components import render
from pages.components.nav import PAGES
from reform_core.config import get_settings

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 60

PAYLOADS = [
    "<script>alert('xss-script')</script>",
    "<img src=x onerror=alert('xss-img')>",
    "[click me](javascript:alert('xss-link'))",
    "<iframe src=\"javascript:alert('xss-iframe')\"></iframe>",
    "![pixel](https://attacker.invalid/track.png)",
    "<a href=\"javascript:alert('xss-a')\">a</a> <svg onload=alert('xss-svg')>",
]
HOSTILE = "\n\n".join(PAYLOADS)
RESPONSES = {f"resp-{n}": f"Answer {n}\n{p}\n<style>body{{display:none}}</style>" for n, p in enumerate(PAYLOADS)}


def _bundle(root: Path) -> Path:
    root.mkdir(parents=True)

    def w(name, rows):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    w(
        "questions.jsonl",
        [{"key": "qx", "text": f"Question {HOSTILE}", "task_type": "<b>explain</b>", "domain": "<i>d</i>"}],
    )
    w(
        "instructions.jsonl",
        [
            {
                "key": "qx-v1",
                "question": "qx",
                "text": f"Instruction {HOSTILE}",
                "constraints": [
                    {
                        "position": 1,
                        "feature": "bullet_list",
                        "mode": "require",
                        "text": PAYLOADS[0],
                        "acceptance": PAYLOADS[1],
                    },
                    {
                        "position": 2,
                        "feature": "code_block",
                        "mode": "forbid",
                        "text": PAYLOADS[2],
                        "acceptance": PAYLOADS[4],
                    },
                    {"position": 3, "feature": "section_headings", "mode": "require", "text": "x", "acceptance": "y"},
                ],
            }
        ],
    )
    rows = [{"model": "<b onmouseover=alert(1)>m</b>", "question": "qx", "text": RESPONSES["resp-0"]}]
    for n, key in enumerate(list(RESPONSES)[1:], start=1):
        rows.append({"model": f"model-{n}", "question": "qx", "instruction": "qx-v1", "text": RESPONSES[key]})
    w("responses.jsonl", rows)
    w(
        "judgments.jsonl",
        [
            {
                "judge": j,
                "model": f"model-{n}",
                "instruction": "qx-v1",
                "position": pos,
                "label": (n + pos + (j == "jb")) % 2,
                "rationale": f"{j} {PAYLOADS[(n + pos) % len(PAYLOADS)]}",
            }
            for j in ("ja", "jb")
            for n in range(1, len(PAYLOADS))
            for pos in (1, 2, 3)
        ],
    )
    return root


HOSTILE_MODEL = "<img src=x onerror=alert('xss-model')>"
HOSTILE_HTML_MODEL = '<b onmouseover="alert(1)">m2</b>'  # well-formed HTML, live if ever rendered as HTML


def _hostile_studies(eng, lead) -> None:
    """A MOSAIC and a WISE study whose names, models, forms, prompts and outputs are hostile."""
    from reform_core.services.studies import generations, mosaic

    checks = [
        {
            "position": 1,
            "constraint": "<b>boc</b>",
            "category": PAYLOADS[0],
            "text": PAYLOADS[2],
            "verifier": "mosaic:boc_token",
            "params": {},
            "rubric": "",
        },
        {
            "position": 2,
            "constraint": "[x](javascript:alert(1))",
            "category": "c",
            "text": PAYLOADS[4],
            "verifier": "mosaic:eoc_token",
            "params": {},
            "rubric": "",
        },
    ]
    prompt = {
        "id": "<script>p1</script>",
        "task": PAYLOADS[1],
        "product": PAYLOADS[3],
        "system": HOSTILE,
        "user": HOSTILE,
        "checks": checks,
    }
    mosaic.import_prompts(eng, lead, study=PAYLOADS[5], data=(json.dumps(prompt) + "\n").encode(), filename="p.jsonl")
    out = {"prompt": prompt["id"], "model": HOSTILE_MODEL, "output": RESPONSES["resp-1"]}
    mosaic.import_outputs(eng, lead, study=PAYLOADS[5], data=(json.dumps(out) + "\n").encode(), filename="o.jsonl")
    mosaic.run_checks(eng, lead, study=PAYLOADS[5])
    gens = [
        {
            "item": f"<i>{i}</i>",
            "model": m,
            "provider": PAYLOADS[0],
            "form": f,
            "target": "3",
            "repetition": 0,
            "output": RESPONSES["resp-2"] if (i + len(m)) % 2 else "one two three",
        }
        for i in range(3)
        for m in (HOSTILE_MODEL, HOSTILE_HTML_MODEL)
        for f in ("POS", PAYLOADS[2])
    ]
    generations.import_generations(
        eng, lead, data="".join(json.dumps(g) + "\n" for g in gens).encode(), filename="g.jsonl", study=PAYLOADS[4]
    )


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory):
    import streamlit as st

    from reform_core.services.data.importer import import_bundle
    from reform_core.services.platform.uow import dispose_engines, get_engine

    d = tmp_path_factory.mktemp("hostile")
    url = f"sqlite:///{d / 'app.db'}"
    eng = get_engine(url)
    import_bundle(eng, _bundle(d / "bundle"))
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication

    adjudication.create_plan(eng, local_principal(eng), judge_a="ja", judge_b="jb", seed=1)
    _hostile_studies(eng, local_principal(eng))
    mp = pytest.MonkeyPatch()
    mp.setenv("REFORM_DATABASE_URL", url)
    mp.setenv("REFORM_LOAD_DEMO", "false")
    mp.setenv("REFORM_AUTH_MODE", "local")
    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    yield url
    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    dispose_engines()
    mp.undo()


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _elements(at: AppTest) -> list:
    return [n for n in _walk(at._tree) if getattr(n, "type", None) not in (None, "block", "root")]


def _render(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["q"] = "qx"
    at.run()
    at.switch_page(page).run()
    assert not at.exception, f"{page}: {at.exception}"
    return at


class _Tags(HTMLParser):
    """Collect live (unescaped) start tags and their attributes of an HTML fragment."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


UNSAFE_TAGS = {"script", "img", "iframe", "svg", "style", "a", "object", "embed", "link", "meta", "form", "base"}


def unsafe_html(fragment: str) -> list[str]:
    """Live tags or attributes in ``fragment`` that could run script or load a resource."""
    p = _Tags()
    p.feed(fragment)
    bad = []
    for tag, attrs in p.tags:
        if tag in UNSAFE_TAGS:
            bad.append(f"<{tag}>")
        for k, v in attrs.items():
            if k.startswith("on") or (k in ("href", "src", "srcdoc", "style", "action") and v):
                bad.append(f"<{tag} {k}={v!r}>")
    return bad


def test_unsafe_html_detector_can_fail():
    assert unsafe_html(PAYLOADS[1]) and unsafe_html(PAYLOADS[0]) and unsafe_html(PAYLOADS[5])
    assert not unsafe_html("<p>&lt;script&gt;alert(1)&lt;/script&gt; <code>&lt;javascript:x&gt;</code></p>")


def _assert_inert(at: AppTest, page: str) -> None:
    for e in _elements(at):
        if e.type == "html" and e.proto.body == render.MARKDOWN_CSS:
            continue  # app.py's constant stylesheet (no data in it): capped headings, the response box
        if e.type == "html":  # st.html: only inert HTML from the safe renderer may reach it
            bad = unsafe_html(e.proto.body)
            assert not bad, f"{page}: st.html carries live HTML {bad}: {e.proto.body[:200]!r}"
        if e.type == "markdown":
            assert not e.proto.allow_html, f"{page}: markdown with unsafe_allow_html: {e.value[:200]!r}"


def test_data_page_shows_responses_verbatim_in_code_and_no_html(hostile_db):
    at = _render("pages/data.py")
    _assert_inert(at, "data")
    codes = [c.value for c in at.code]
    for key, text in RESPONSES.items():
        assert text in codes, f"{key} is not shown verbatim in a code element"


@pytest.mark.parametrize("spec", PAGES, ids=[p.path for p in PAGES])
def test_every_page_renders_hostile_project_inert(hostile_db, spec):
    _assert_inert(_render(spec.path), spec.path)


ADJUDICATE = Path(APP).parent / "pages" / "adjudicate.py"


@pytest.mark.skipif(not ADJUDICATE.exists(), reason="no adjudication page yet")
def test_adjudication_item_renders_inert(hostile_db):
    """The queue shows a hostile response and rationales: inert, links and images not interpreted."""
    at = AppTest.from_file(str(ADJUDICATE), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    _assert_inert(at, "adjudicate")
    shown = " ".join(str(e.proto) for e in _elements(at))
    assert "xss" in shown, "the hostile item was not rendered at all"
    for e in _elements(at):
        if e.type == "markdown":
            for p in (PAYLOADS[2], PAYLOADS[4]):
                assert p not in e.value, f"adjudicate: untrusted Markdown interpreted: {e.value[:120]!r}"


def test_no_untrusted_markdown_link_or_image_is_interpreted(hostile_db):
    """Markdown elements must not carry untrusted link/image syntax (remote pixels, javascript: links).

    Imported question/instruction texts are untrusted like responses: render them as text
    (``st.text`` / ``st.code`` / the safe renderer), not as Markdown.
    """
    for spec in PAGES:
        at = _render(spec.path)
        for e in _elements(at):
            if e.type == "markdown":
                for p in (PAYLOADS[2], PAYLOADS[4]):
                    assert p not in e.value, f"{spec.path}: untrusted Markdown interpreted: {e.value[:120]!r}"


def test_study_pages_show_hostile_studies_inert_and_outputs_verbatim(hostile_db):
    """MOSAIC results (drill-down to the output and its failing checks) and the WISE section of
    Wording results render hostile study, model, constraint and form names and outputs inertly
    (issue 18)."""
    at = _render("pages/mosaic_results.py")
    _assert_inert(at, "mosaic_results")
    assert RESPONSES["resp-1"] in [c.value for c in at.code], "the output is not shown verbatim in a code element"
    checks = next(d.value for d in at.dataframe if "evidence" in d.value.columns)
    assert list(checks["constraint"]) == ["<b>boc</b>", "[x](javascript:alert(1))"]
    at = _render("pages/wording_results.py")
    _assert_inert(at, "wording_results")
    forms = next(d.value for d in at.dataframe if "Holm p" in d.value.columns)
    assert set(forms["form"]) == {"POS", PAYLOADS[2]}
    for e in _elements(at):
        if e.type == "markdown":
            assert "xss-model" not in e.value and PAYLOADS[2] not in e.value, e.value[:200]


# ----------------------------------------------------------------------------- hostile names (issue 15 item 2)
# Every other field of a bundle: models, judges, question/instruction keys, task types,
# domains, annotators, plan and project names, each with a remote image and a link
# (tests/hostile_names.py), and query parameters echoed in errors.

PLAIN_TYPES = {"code", "text", "html", "json", "dataframe", "arrow_data_frame", "table", "exception"}
MARKDOWN_FIELDS = {"body", "label", "help", "caption", "captions"}
MARKDOWN_OPTIONS = {"radio", "button_group", "pills", "segmented_control"}  # option labels are Markdown there
_md_parser = MarkdownIt("commonmark")
_LIVE_URL = re.compile(r"(?i)(https?://|www\.)[^\s]*evil\.test|[\w.+-]+@([\w-]+\.)*evil\.test")


def live_markdown(text: str) -> list[str]:
    """Links, images and GFM autolink literals to evil.test that Markdown ``text`` would make
    (CommonMark parse; autolinks are found in the text after escapes are resolved, as
    remark-gfm does)."""
    bad = []
    for block in _md_parser.parse(text):
        for t in block.children or []:
            if t.type in ("link_open", "image") and "evil.test" in (t.attrGet("href") or t.attrGet("src") or ""):
                bad.append(f"{t.type} {t.attrGet('href') or t.attrGet('src')}")
            elif t.type == "text" and _LIVE_URL.search(t.content):
                bad.append(f"autolink {_LIVE_URL.search(t.content).group(0)}")
    return bad


def test_live_markdown_detector_can_fail():
    from pages.components.render import md
    from tests.hostile_names import PROJECT, URL_VALUE

    assert live_markdown(PROJECT) and live_markdown(URL_VALUE) and live_markdown(f"x {md('a')} http://h.evil.test/")
    assert live_markdown("mail me: x@evil.test")
    assert not live_markdown(md(PROJECT)) and not live_markdown(md(URL_VALUE)) and not live_markdown("x@ok.org")


def _markdown_strings(node) -> list[tuple[str, str]]:
    """(where, text) of every Markdown-interpreted string of an element or block."""
    out = []
    kind = getattr(node, "type", None)
    proto = getattr(node, "proto", None)
    if proto is None or kind in PLAIN_TYPES:
        return out

    def walk(msg, path):
        for field, value in msg.ListFields():
            name = field.name
            if field.type == field.TYPE_MESSAGE:
                for v in [value] if hasattr(value, "ListFields") else value:
                    walk(v, f"{path}.{name}")
            elif field.type == field.TYPE_STRING and (
                name in MARKDOWN_FIELDS or (name == "options" and kind in MARKDOWN_OPTIONS)
            ):
                for v in [value] if isinstance(value, str) else value:
                    out.append((f"{kind}{path}.{name}", v))

    walk(proto, "")
    return out


@pytest.fixture(scope="module")
def hostile_names_db(tmp_path_factory):
    import streamlit as st

    from reform_core.services.platform.uow import dispose_engines
    from tests.hostile_names import load_project

    root = tmp_path_factory.mktemp("hostile-names")
    url = f"sqlite:///{root / 'app.db'}"
    load_project(url, root)
    mp = pytest.MonkeyPatch()
    for k, v in {"REFORM_DATABASE_URL": url, "REFORM_LOAD_DEMO": "false", "REFORM_AUTH_MODE": "local"}.items():
        mp.setenv(k, v)
    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    yield url
    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    dispose_engines()
    mp.undo()


def _hostile_visits():
    from tests.hostile_names import URL_VALUE

    bad = {"q": URL_VALUE, "f_model": URL_VALUE, "f_p_min": URL_VALUE}
    visits = [(spec.path, bad) for spec in PAGES]
    visits.append(("pages/explore.py", {"model": URL_VALUE, "question": URL_VALUE}))
    return visits


@pytest.mark.parametrize("path,params", _hostile_visits(), ids=lambda v: v if isinstance(v, str) else "")
def test_hostile_names_and_url_parameters_render_as_text(hostile_names_db, path, params):
    """Titles, headers, captions, alerts, widget labels and help, tab and expander labels and
    radio options are Markdown: a hostile name or URL parameter in any of them must come out
    as text (no link, no image, no autolink), and st.html must stay inert."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(path).run()
    assert not at.exception, f"{path}: {at.exception}"
    _assert_inert(at, path)
    bad = [
        (where, problem, text[:120])
        for node in _walk(at._tree)
        for where, text in _markdown_strings(node)
        for problem in live_markdown(text)
    ]
    assert not bad, f"{path}: untrusted names interpreted as Markdown: {bad[:5]}"


def test_explore_example_and_data_question_with_hostile_names(hostile_names_db):
    """The explorer's example view and the Data page's question view show every hostile name
    (model, question and instruction keys, task type, domain, judges) as text."""
    from tests.hostile_names import write_bundle

    names = write_bundle(Path(hostile_names_db.removeprefix("sqlite:///")).parent / "names-again")
    for path, params in (
        (
            "pages/explore.py",
            {
                "model": names[("model", "helix-pro")],
                "question": names[("qkey", "q01")],
                "instruction": names[("ikey", "q01-v1")],
            },
        ),
        ("pages/data.py", {"q": names[("qkey", "q05")]}),
    ):
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        for k, v in params.items():
            at.query_params[k] = v
        at.run()
        at.switch_page(path).run()
        assert not at.exception, at.exception
        strings = [s for node in _walk(at._tree) for s in _markdown_strings(node)]
        assert any("evil" in text for _, text in strings), f"{path}: no hostile name shown"
        bad = [(where, p) for where, text in strings for p in live_markdown(text)]
        assert not bad, f"{path}: {bad[:5]}"
