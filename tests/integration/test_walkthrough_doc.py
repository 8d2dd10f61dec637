"""docs/walkthrough.md, followed block by block (issue 32 item 7: "a test follows it command by command").

The page's fenced blocks are taken in order and their info string says what each one is:

- ```` ```bash setup ````: the ``export`` lines of step 0. They become the commands' environment with
  the **one substitution** this test makes: the documented ``REFORM_DATABASE_URL=sqlite:///helpdesk.db``
  is replaced by a temporary SQLite URL (a file outside the work folder, so a command that ignored it
  would leave ``helpdesk.db`` behind, which is checked), and ``PYTHONPATH=/path/to/reform`` by this
  checkout.
- ```` ```bash ````: every line is run as written, in a temporary work folder, through ``subprocess``:
  ``python -m reform_core …`` with this interpreter, ``touch`` / ``mkdir`` as they are; any other
  command fails the test (the page must stay runnable). Each must exit 0.
- ```` ```bash not-run ````: shown, not run (an LLM judge needs a key and the network); every
  ``--option`` it uses must still exist in ``COMMAND --help``.
- ```` ```LANG file=PATH ````: a file the reader saves: written to PATH before the next command.
- ```` ```LANG excerpt=PATH ````: text the page shows from a file a command wrote: it must occur in it.
- ```` ```json output ````: what the preceding command printed, abridged: every key shown must be
  there with the value shown; a number shown with d decimals equals the output rounded to d
  decimals; a string ending in ``…`` is a prefix; a list ending in ``…`` lists some of the items.

Beyond what the page shows, the test checks the facts it states from the outputs themselves: the
counts imported, the plan's task count against the tasks written, that the decisions hold an audit
and a disagreement line of the plan, TCPR for each model near the literal all-pass share of the
adjudicated labels (a loop over the page's table and decisions), ``null`` EMCR that the catalog does
not declare, and ``score-export`` reproducing ``score`` from the export's files.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "walkthrough.md"
DOC_SETUP = {"PYTHONPATH": "/path/to/reform", "REFORM_DATABASE_URL": "sqlite:///helpdesk.db"}
ELLIPSIS = "…"
RUNNABLE = {"touch", "mkdir"}  # besides python -m reform_core


@dataclass
class Block:
    lang: str
    attrs: dict
    body: str
    line: int


def _blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^```(\w+)([^\n]*)\n(.*?)^```[ \t]*$", text, flags=re.M | re.S):
        attrs = dict(a.split("=", 1) if "=" in a else (a, True) for a in m.group(2).split())
        out.append(Block(m.group(1), attrs, m.group(3), text.count("\n", 0, m.start()) + 1))
    assert out, "docs/walkthrough.md has no code blocks"
    return out


def _commands(block: Block) -> list[list[str]]:
    """The block's command lines, split as a shell would (comments dropped)."""
    return [argv for raw in block.body.splitlines() if (argv := shlex.split(raw, comments=True))]


def _setup_env(block: Block, db_url: str) -> dict:
    """The setup block's exports, checked against the documented values, with the substitution."""
    found = {}
    for argv in _commands(block):
        assert argv[0] == "export" and len(argv) == 2 and "=" in argv[1], f"walkthrough.md:{block.line}: {argv}"
        name, value = argv[1].split("=", 1)
        found[name] = value
    assert found == DOC_SETUP, f"walkthrough.md:{block.line}: the setup block changed; update DOC_SETUP: {found}"
    return {"PYTHONPATH": str(REPO), "REFORM_DATABASE_URL": db_url}


def _matches(shown, actual, where: str) -> list[str]:
    """Where ``shown`` (the page's abridged output) differs from ``actual`` (what the command printed)."""
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {actual!r}"]
        return [
            p
            for k, v in shown.items()
            for p in ([f"{where}.{k}: missing"] if k not in actual else _matches(v, actual[k], f"{where}.{k}"))
        ]
    if isinstance(shown, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {actual!r}"]
        if shown and shown[-1] == ELLIPSIS:
            return [f"{where}: {s!r} not among {actual!r}" for s in shown[:-1] if s not in actual]
        if len(shown) != len(actual):
            return [f"{where}: {len(actual)} items, the page shows {len(shown)}: {actual!r}"]
        return [p for i, (s, a) in enumerate(zip(shown, actual)) for p in _matches(s, a, f"{where}[{i}]")]
    if isinstance(shown, str) and shown.endswith(ELLIPSIS):
        ok = isinstance(actual, str) and actual.startswith(shown[:-1])
    elif isinstance(shown, float):
        decimals = len(repr(shown).split(".")[1])
        ok = isinstance(actual, (int, float)) and not isinstance(actual, bool) and round(actual, decimals) == shown
    else:
        ok = type(shown) is type(actual) and shown == actual
    return [] if ok else [f"{where}: the page shows {shown!r}, the command printed {actual!r}"]


class Walk:
    """Runs the page's blocks in order in ``work`` and keeps each command's output."""

    def __init__(self, work: Path, db_url: str):
        self.work, self.db_url, self.env, self.outputs, self.last = work, db_url, None, [], None

    def run(self, block: Block) -> None:
        where = f"walkthrough.md:{block.line}"
        if block.attrs.get("setup"):
            self.env = {**os.environ, **_setup_env(block, self.db_url)}
        elif "file" in block.attrs:
            path = self.work / block.attrs["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.body, encoding="utf-8")
        elif "excerpt" in block.attrs:
            text = (self.work / block.attrs["excerpt"]).read_text(encoding="utf-8")
            assert block.body in text, f"{where}: not in {block.attrs['excerpt']}:\n{block.body}\n--- file:\n{text}"
        elif block.attrs.get("output"):
            assert self.last is not None, f"{where}: an output block with no command before it"
            problems = _matches(json.loads(block.body), json.loads(self.last[1]), "output")
            assert not problems, f"{where}: `{' '.join(self.last[0])}`:\n" + "\n".join(problems)
        elif block.lang == "bash" and block.attrs.get("not-run"):
            for argv in _commands(block):
                self._check_options(argv, where)
        elif block.lang == "bash":
            for argv in _commands(block):
                self._exec(argv, where)
        else:
            raise AssertionError(f"{where}: a ```{block.lang} block must say file=, excerpt= or output")

    def _argv(self, argv: list[str], where: str) -> list[str]:
        assert self.env is not None, f"{where}: a command before the setup block"
        if argv[:3] == ["python", "-m", "reform_core"]:
            return [sys.executable, *argv[1:]]
        assert argv[0] in RUNNABLE, f"{where}: the walkthrough may run only python -m reform_core, touch, mkdir: {argv}"
        return argv

    def _exec(self, argv: list[str], where: str) -> None:
        r = subprocess.run(
            self._argv(argv, where), cwd=self.work, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert r.returncode == 0, f"{where}: `{shlex.join(argv)}` exited {r.returncode}:\n{r.stderr}"
        self.last = (argv, r.stdout)
        self.outputs.append((argv, r.stdout))

    def _check_options(self, argv: list[str], where: str) -> None:
        full = self._argv(argv, where)
        r = subprocess.run([*full[:4], "--help"], cwd=self.work, env=self.env, capture_output=True, text=True)
        assert r.returncode == 0, f"{where}: {argv[3]} --help: {r.stderr}"
        missing = [a for a in argv[4:] if a.startswith("--") and a not in r.stdout]
        assert not missing, f"{where}: `{argv[3]}` has no option {missing}"

    def output(self, *words: str) -> dict:
        """The JSON printed by the last command whose arguments start with ``words``."""
        hits = [out for argv, out in self.outputs if argv[3 : 3 + len(words)] == list(words)]
        assert hits, f"the walkthrough no longer runs `{' '.join(words)}`"
        return json.loads(hits[-1])


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _literal_tcpr(table: str, decisions: list[dict]) -> dict[str, float]:
    """All-pass share per model of the adjudicated labels, by a literal loop: a constraint's label is the
    judges' common label, or the label of the judge chosen for it (``neither``: the opposite of theirs)."""
    rows = list(csv.DictReader(io.StringIO(table)))
    chosen = {}
    for d in decisions:  # the last decision of an item stands; the page's second opinions agree with the first
        chosen[(d["model"], d["instruction"], d["position"])] = d["choice"]
    passes: dict[tuple, list[int]] = {}
    for r in rows:
        labels = passes.setdefault((r["model"], r["question"]), [])
        a, b = int(r["label:gpt"]), int(r["label:gem"])
        choice = chosen.get((r["model"], r["question"], len(labels) + 1))
        if choice is None:
            assert a == b, f"an undecided disagreement: {r}"
        labels.append({"A": a, "B": b, "neither": 1 - a}.get(choice, a))
    models = sorted({m for m, _ in passes})
    return {
        m: 100 * sum(all(v) for (mm, _), v in passes.items() if mm == m) / sum(1 for mm, _ in passes if mm == m)
        for m in models
    }


def test_walkthrough_runs_as_written(tmp_path):
    work, dbdir = tmp_path / "work", tmp_path / "db"
    work.mkdir()
    dbdir.mkdir()
    walk = Walk(work, f"sqlite:///{dbdir / 'walkthrough.db'}")
    blocks = _blocks()
    for block in blocks:
        walk.run(block)

    # the substitution held: the project went to the temporary database, not to the page's file
    assert (dbdir / "walkthrough.db").exists() and not (work / "helpdesk.db").exists()

    imported = walk.output("import-table")
    assert imported["rows"] == 30 and imported["constraints"] == 15 and imported["judgments"] == 60
    assert imported["catalog"] == "helpdesk" and imported["models"] == 2

    plan = walk.output("plan")
    tasks = _jsonl(work / walk.output("tasks", "--out", "tasks.jsonl")["out"])
    per_model = plan["models"].values()
    assert plan["tasks"] == len(tasks) == sum(m["disagreement_tasks"] + m["audit_tasks"] for m in per_model) > 0

    decisions = _jsonl(work / "decisions" / "adjudications.jsonl") + _jsonl(work / "second" / "adjudications.jsonl")
    kind = {(t["model"], t["instruction"], t["position"]): t["kind"] for t in tasks}
    kinds = [kind.get((d["model"], d["instruction"], d["position"])) for d in decisions]
    assert None not in kinds, "every decision of the page answers a task of the plan"
    assert {"audit", "disagreement"} <= set(kinds)

    score = walk.output("score", "--intervals")
    assert score["provisional"] is False and set(score["models"]) == {"large", "small"}
    assert "emcr" not in score["metrics"] and "emcr" not in score["metric_definitions"]
    literal = _literal_tcpr(next(b.body for b in blocks if b.attrs.get("file") == "helpdesk.csv"), decisions)
    for name, m in score["models"].items():
        assert m["emcr"] is None and m["r1"] is None
        assert abs(m["tcpr"] - literal[name]) < 1.0, (name, m["tcpr"], literal[name])
        lo, hi = m["intervals"]["measurement"]["tcpr"]
        assert 0 <= lo <= m["tcpr"] <= hi <= 100
    assert literal == {"large": 60.0, "small": 40.0}  # what the page says: 3 of 5 and 2 of 5

    manifest = json.loads((work / "export" / "manifest.json").read_text(encoding="utf-8"))
    assert "helpdesk" in json.dumps(manifest["catalogs"]) and (work / "export" / "catalog_helpdesk.yaml").exists()
    again = walk.output("score-export")
    for name, m in score["models"].items():
        assert abs(again["models"][name]["tcpr"] - m["tcpr"]) < 1e-6


def test_the_output_check_can_fail():
    """The abridged-output rule rejects what it should (so the page's output blocks are real checks)."""
    assert _matches({"tcpr": 59.8}, {"tcpr": 59.76}, "o") == []
    assert _matches({"tcpr": 59.8}, {"tcpr": 59.7}, "o")
    assert _matches({"n": 9}, {"n": 9.0}, "o") and _matches({"x": None}, {"x": 0}, "o")
    assert _matches({"files": ["a", ELLIPSIS]}, {"files": ["b", "a"]}, "o") == []
    assert _matches({"files": ["a", ELLIPSIS]}, {"files": ["b"]}, "o")
    assert _matches({"notes": ["abc…"]}, {"notes": ["abcdef"]}, "o") == []
    assert _matches({"notes": ["abd…"]}, {"notes": ["abcdef"]}, "o")
    assert _matches({"iv": [1.0, 2.0]}, {"iv": [1.0, 2.0, 3.0]}, "o")
    assert _matches({"k": 1}, {}, "o") == ["o.k: missing"]
