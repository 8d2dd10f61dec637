"""Every benchmark shape scores (issue 32, point 1).

Hypothesis draws benchmark shapes (``shapes.py``) and takes each through the command line, in
process, twice — imported as a bundle and as a plain table — : ``import`` / ``import-table`` →
``pair`` → ``plan`` (the default design, or one that decides everything) → ``tasks`` →
decisions of two annotators who report the truth → ``import`` → ``score --intervals`` →
``export`` → ``score-export``. Never an exception; every score is ``null`` or inside [0, 100]
with its interval around it; metrics that cannot apply (EMCR and R^K without baseline data) are
``null`` with a note; and where the plan decides every instance, the default estimate equals
the score of the true labels computed by a literal loop.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from typer.testing import CliRunner

from reform_core.cli import app
from reform_core.services.platform.uow import dispose_engines
from tests.integration.shapes import benchmark, literal_scores, shapes, write_bundle, write_table

EXAMPLES = int(os.environ.get("REFORM_SHAPE_EXAMPLES", "12"))
JOINT = ("emcr", "r1", "r2", "r3")
runner = CliRunner()


def cli(*args) -> dict:
    r = runner.invoke(app, [str(a) for a in args], catch_exceptions=True)
    assert r.exception is None or isinstance(r.exception, SystemExit) and r.exit_code == 0, (
        f"{' '.join(map(str, args))} raised {r.exception!r}\n{r.output}"
    )
    assert r.exit_code == 0, f"{' '.join(map(str, args))} exited {r.exit_code}:\n{r.output}"
    return json.loads(r.stdout) if "--json" in args else {}


def _decide(db: str, work: Path, rows, round_: int) -> int:
    """Decide every open task by annotators reporting the truth; returns decisions written."""
    path = work / f"tasks{round_}.jsonl"
    cli("tasks", "--db", db, "--out", path, "--json")
    lab = rows.set_index(["model", "instruction", "position"])
    out = []
    for line in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
        r = lab.loc[(line["model"], line["instruction"], line["position"])]
        agrees = int(r["label_a"]) == int(r["truth"])
        choice = ("A" if agrees else "neither") if line["kind"] == "audit" else ("A" if agrees else "B")
        who = [f"ann{round_}-{k}" for k in range(line["required"])]
        out += [
            {k: line[k] for k in ("plan", "judge_a", "judge_b", "model", "instruction", "position")}
            | {"annotator": a, "choice": choice}
            for a in who
        ]
    if out:
        bundle = work / f"decisions{round_}"
        bundle.mkdir()
        (bundle / "questions.jsonl").write_text("", encoding="utf-8")
        (bundle / "adjudications.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out), encoding="utf-8")
        cli("import", bundle, "--db", db, "--json")
    return len(out)


def _check_scores(got: dict, rows, shape, *, everything: bool) -> None:
    exact = literal_scores(rows)
    for m, r in got["models"].items():
        notes = " ".join(r.get("notes", []) + got.get("notes", []))
        for metric in ("tcpr", "constraint_level", *JOINT):
            v = r.get(metric)
            if v is None:
                continue
            assert 0 <= v <= 100, (m, metric, v)
            for kind in ("measurement", "population"):
                iv = (r.get("intervals") or {}).get(kind, {}).get(metric)
                if iv is not None:
                    assert iv[0] <= v + 1e-9 and v - 1e-9 <= iv[1], (m, metric, kind, v, iv)
        if not shape.baseline:
            assert all(r.get(k) is None for k in JOINT), (m, {k: r.get(k) for k in JOINT})
            assert "baseline" in notes, notes
        if everything and not math.isnan(exact[m]["tcpr"]):
            bound = _smoothing_bound(got.get("annotators", []), shape.max_constraints)
            for metric in ("tcpr", "constraint_level"):
                assert abs(r[metric] - exact[m][metric]) <= bound, (m, metric, r[metric], exact[m], bound)


def _smoothing_bound(annotators: list[dict], k: int) -> float:
    """How far (pp) agreeing decisions may move a score from their labels' literal score.

    The adjudicator-error model is fitted with a smoothing prior, so annotators whose doubled
    items all agree still get an estimated accuracy just below 1 (99.99 % after ~100 items, less
    on a handful), and each decision is debiased by at most
    ``δ = max(1 − sensitivity, 1 − specificity) / (sensitivity + specificity − 1)``; a product of
    ``k`` of them moves by at most ``k δ (1 + δ)^k``."""
    delta = 0.0
    for a in annotators:
        se, sp = a["sensitivity"] / 100, a["specificity"] / 100
        delta = max(delta, max(1 - se, 1 - sp) / (se + sp - 1))
    return 100 * k * delta * (1 + delta) ** k + 1e-6


def _run(fmt: str, rows, baseline, shape, work: Path, *, everything: bool) -> None:
    work.mkdir(parents=True)
    db = f"sqlite:///{work / 'p.db'}"
    if fmt == "bundle":
        cli("import", write_bundle(rows, baseline, work / "bundle"), "--db", db, "--json")
    else:
        cli("import-table", write_table(rows, work / "t.csv"), "--db", db, "--json")
    cli("pair", "ja", "jb", "--db", db, "--json")
    options = ("--margin", "0.0001", "--audit-share", "1", "--overlap", "1") if everything else ()
    cli("plan", "--db", db, "--judges", "ja,jb", *options, "--json")
    for round_ in range(4):
        if not _decide(db, work, rows, round_):
            break
    if all(math.isnan(v["tcpr"]) for v in literal_scores(rows).values()):
        # no instruction has both labels on every constraint: a located refusal, not a score of nothing
        r = runner.invoke(app, ["score", "--db", db, "--json"])
        assert r.exit_code == 1 and "nothing to score" in r.output, r.output
        return
    got = cli("score", "--db", db, "--intervals", "--reps", "40", "--json")
    assert got["estimator"] == "cluster"
    _check_scores(got, rows, shape, everything=everything)
    cli("export", "--db", db, "--out", work / "export", "--json")
    cli("score-export", work / "export", "--json")
    dispose_engines()


@pytest.mark.slow
@pytest.mark.timeout(1800)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)  # no shrinking: each example takes seconds
@given(shape=shapes(), everything=__import__("hypothesis").strategies.booleans())
def test_every_shape_imports_plans_scores_and_exports(shape, everything, tmp_path_factory):
    rows, baseline = benchmark(shape)
    root = tmp_path_factory.mktemp("shape")
    _run("bundle", rows, baseline, shape, root / "bundle", everything=everything)
    _run(
        "table",
        rows,
        baseline.iloc[0:0],
        shape if not shape.baseline else _no_baseline(shape),
        root / "table",
        everything=everything,
    )


def _no_baseline(shape):
    from dataclasses import replace

    return replace(shape, baseline=False)
