"""MOSAIC and WISE studies end to end through the CLI, as docs/formats.md describes them, on
loopback fake OpenAI / Gemini servers: generate → import → collect (resumable, settings
recorded) → check (deterministic + LLM judge) → score with intervals → export; and the
same from outputs produced elsewhere. The printed metrics are recomputed from the
exported per-output rows with literal loops written from the formulas (MOSAIC,
arXiv:2601.18554, §3.2; the WISE paper, *When Verifiable Counts Depend on Wording*, eqs. 4–10;
docs/metrics.md#mosaic-scores, #wording-robustness), not with the product's functions."""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import defaultdict
from itertools import combinations

import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from db.repo.wording import study_items
from reform_core import display
from reform_core.cli import app
from reform_core.services.accounts.users import cli_principal
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.studies import mosaic
from reform_core.services.studies.wording import fill_template
from tests.integration.fake_servers import FakeServer, _find_ids, _prompt_text

TASKS = [
    "Name the largest planet.",
    "Say what a cell is.",
    "Describe rain.",
    "Explain tides.",
    "Define a verb.",
    "Describe a cat.",
    "Explain wind.",
    "Name a colour.",
]


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class StudyServer(FakeServer):
    """Answers MOSAIC prompts, App. D.4 judge prompts and WISE items as a chat model would.

    ``style`` "tidy" writes a <BOC>…<EOC> list, for some prompts addressing {{FirstName}} and
    for most with dashes; "plain" writes
    two plain sentences (which the judge scores 3/10, the tidy text 8/10). WISE: the answer
    has the requested N words, or N+1 for a hash-chosen third of the prompts (style- and
    wire-format-dependent, so models differ)."""

    def __init__(self, style: str = "tidy", **kw):
        super().__init__(**kw)
        self.style = style
        self.answered: list[float] = []  # when each answered MOSAIC prompt arrived (time.monotonic)

    def _verdicts(self, body, fault=""):
        if _find_ids(body):
            return super()._verdicts(body, fault)
        prompt = _prompt_text(body)
        gemini = "contents" in body
        if "expert writing coach" in prompt:
            passage = prompt.split("### Passage ###", 1)[1].split("### Rubric ###", 1)[0]
            return json.dumps({"reasoning": "checked against the rubric", "score": 3 if "Plainly" in passage else 8})
        if "writing assistant" in prompt:
            self.answered.append(time.monotonic())
            if gemini or self.style == "plain":
                return "Plainly put, this product is useful. It works well for most people every day."
            # two hash-chosen variations (greeting, list marker) so outcomes vary across prompts
            greet = "Dear {{FirstName}}, meet" if _h(prompt + "greet") % 2 else "Meet"
            mark = "-" if _h(prompt + "mark") % 3 else "*"
            return (
                f"<BOC>\n{mark} {greet} a brilliant product that helps you capture the day.\n"
                f"{mark} It is secure and simple. It lasts all day because the battery is large.\n<EOC>"
            )
        n = int(re.search(r"(\d+)", prompt).group(1))
        extra = 0 if _h(prompt + self.style + str(gemini)) % 3 else 1
        return " ".join(["word"] * (n + extra))


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-studies")
    monkeypatch.setenv("GOOGLE_API_KEY", "g-test-studies")
    tidy, plain = StudyServer().start(), StudyServer(style="plain").start()
    yield {"db": f"sqlite:///{tmp_path / 'studies.db'}", "tidy": tidy, "plain": plain, "dir": tmp_path}
    tidy.stop()
    plain.stop()
    dispose_engines()


def cli(*args: str) -> dict | str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.output) if "--json" in args else res.output


def fails(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code != 0, res.output
    return res.output


# --------------------------------------------------------------------------- independent loops


def loop_mosaic(rows: pd.DataFrame) -> dict:
    """PA, SCC, PosCC, PCC per model from ``mosaic_checks.csv`` rows (MOSAIC §3.2), in %."""
    out = {}
    for model in sorted(set(rows["model"])):
        followed = defaultdict(dict)  # prompt -> {constraint: 0/1}
        at = defaultdict(dict)  # prompt -> {position: 0/1}
        for r in rows[rows["model"] == model].itertuples(index=False):
            f = 1 if str(r.followed).lower() in ("true", "1") else 0
            followed[r.prompt][r.constraint] = f
            at[r.prompt][int(r.position)] = f
        pa = sum(sum(c.values()) / len(c) for c in followed.values()) / len(followed)
        scc = {}
        for c in sorted({c for cs in followed.values() for c in cs}):
            having = [cs[c] for cs in followed.values() if c in cs]
            scc[c] = 100 * sum(having) / len(having)
        poscc = {}
        for p in sorted({p for ps in at.values() for p in ps}):
            having = [ps[p] for ps in at.values() if len(ps) >= p]
            poscc[str(p)] = 100 * sum(having) / len(having)
        pcc, pearson = {}, {}
        for a, b in combinations(sorted(scc), 2):
            pairs = [(cs[a], cs[b]) for cs in followed.values() if a in cs and b in cs]
            if pairs:
                pcc[(a, b)] = 100 * sum(x * y for x, y in pairs) / len(pairs)
                pearson[(a, b)] = _pearson(pairs)
        out[model] = {"pa": 100 * pa, "scc": scc, "poscc": poscc, "pcc": pcc, "pearson": pearson}
    return out


def _pearson(pairs: list) -> tuple:
    """(r, two-sided p) of paired 0/1 outcomes from the textbook formulas; (None, None) below
    3 pairs or with a constant outcome. p from Student's t with n - 2 degrees of freedom."""
    n = len(pairs)
    mx, my = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx, syy = sum((x - mx) ** 2 for x, _ in pairs), sum((y - my) ** 2 for _, y in pairs)
    if n < 3 or sxx == 0 or syy == 0:
        return None, None
    r = sxy / math.sqrt(sxx * syy)
    if abs(r) >= 1 - 1e-12:
        return r, 0.0
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return r, 2 * stats.t.sf(abs(t), n - 2)


def _avg_ranks(values: dict) -> dict:
    """Average ranks, 1 = highest (ties share the mean of their positions)."""
    ranks = {}
    for m, v in values.items():
        higher = sum(1 for w in values.values() if w > v)
        equal = sum(1 for w in values.values() if w == v)
        ranks[m] = higher + (equal + 1) / 2
    return ranks


def loop_wise(rows: pd.DataFrame, reference: str = "POS") -> dict:
    """Per-form pooled compliance, Δ, τ_b, reversal rate, top-3 Jaccard, rank shift, and
    C_mean / C_worst / G_wording from ``wise_outputs.csv`` rows (WISE eqs. 4–10)."""
    cells = defaultdict(list)
    for r in rows.itertuples(index=False):
        cells[(r.model, r.form)].append(1 if str(r.compliant).lower() in ("true", "1") else 0)
    models = sorted({m for m, _ in cells})
    forms = sorted({f for _, f in cells})
    c = {(m, f): sum(v) / len(v) for (m, f), v in cells.items()}
    pooled = {f: sum(c[(m, f)] for m in models) / len(models) for f in forms}
    out = {
        "forms": {},
        "c_mean": 100 * sum(pooled.values()) / len(forms),
        "c_worst": 100 * min(pooled.values()),
        "g_wording": 100 * (max(pooled.values()) - min(pooled.values())),
    }
    for f in forms:
        entry = {"compliance": 100 * pooled[f], "delta": 100 * (pooled[f] - pooled[reference])}
        if f != reference:
            conc = disc = tie_x = tie_y = rev = strict = 0
            for a, b in combinations(models, 2):
                dx = c[(a, reference)] - c[(b, reference)]
                dy = c[(a, f)] - c[(b, f)]
                if dx * dy > 0:
                    conc += 1
                elif dx * dy < 0:
                    disc += 1
                tie_x += dx == 0
                tie_y += dy == 0
                if dx != 0 and dy != 0:
                    strict += 1
                    rev += dx * dy < 0
            n0 = len(models) * (len(models) - 1) / 2
            entry["tau_b"] = (conc - disc) / math.sqrt((n0 - tie_x) * (n0 - tie_y))
            entry["reversal_rate"] = rev / strict
            ref_rank = _avg_ranks({m: c[(m, reference)] for m in models})
            f_rank = _avg_ranks({m: c[(m, f)] for m in models})

            def top(form):
                return {m for m in models if 1 + sum(c[(o, form)] > c[(m, form)] for o in models) <= 3}

            entry["top3_jaccard"] = len(top(f) & top(reference)) / len(top(f) | top(reference))
            entry["max_rank_shift"] = max(abs(ref_rank[m] - f_rank[m]) for m in models)
        out["forms"][f] = entry
    return out


# --------------------------------------------------------------------------- MOSAIC


def test_mosaic_from_generated_prompts_to_scores_export_and_recomputation(env):
    db, tidy, d = env["db"], env["tidy"], env["dir"]
    prompts = d / "mosaic.jsonl"
    cli("mosaic-generate", "--out", str(prompts), "--n", "42", "--seed", "3", "--json")
    out = cli("mosaic-import", str(prompts), "--db", db, "--study", "launch", "--json")
    assert (out["prompts"], out["written"]) == (42, 42)
    assert cli("mosaic-import", str(prompts), "--db", db, "--study", "launch", "--json")["existing"] == 42

    tidy.push("429", "500")  # the runner retries both
    out = cli(
        "mosaic-collect",
        "--db",
        db,
        "--study",
        "launch",
        "--model",
        "alpha",
        "--provider",
        "openai",
        "--base-url",
        f"{tidy.url}/v1",
        "--temperature",
        "0.3",
        "--max-tokens",
        "300",
        "--limit",
        "30",
        "--json",
    )
    assert (out["pending"], out["written"], out["errors"]) == (30, 30, 0)
    out = cli(
        "mosaic-collect",
        "--db",
        db,
        "--study",
        "launch",
        "--model",
        "alpha",
        "--provider",
        "openai",
        "--base-url",
        f"{tidy.url}/v1",
        "--temperature",
        "0.3",
        "--max-tokens",
        "300",
        "--json",
    )
    assert (out["pending"], out["written"]) == (12, 12)  # resumed: only the rest
    tidy.push("400")  # a call that fails for good writes nothing; the rerun asks for it again
    tidy.answered.clear()
    out = cli(
        "mosaic-collect",
        "--db",
        db,
        "--study",
        "launch",
        "--model",
        "beta",
        "--provider",
        "gemini",
        "--base-url",
        tidy.url,
        "--concurrency",
        "3",
        "--rpm",
        "30",
        "--limit",
        "32",
        "--json",
    )
    assert (out["pending"], out["written"], out["errors"]) == (32, 31, 1) and "400" in out["first_error"]
    # 30 requests per minute (a bucket of 30 that drains one every 2 s): 32 requests, the failed
    # one first, so the 31 answered ones span at least (31 - 30) x 2 s
    t = sorted(tidy.answered)
    assert len(t) == 31 and t[-1] - t[0] >= 1.8
    out = cli(
        "mosaic-collect",
        "--db",
        db,
        "--study",
        "launch",
        "--model",
        "beta",
        "--provider",
        "gemini",
        "--base-url",
        tidy.url,
        "--concurrency",
        "3",
        "--json",
    )
    assert (out["pending"], out["written"], out["errors"]) == (11, 11, 0)
    chat = [c for c in tidy.calls if c["path"] == "/v1/chat/completions"]
    assert all(c["body"]["temperature"] == 0.3 and c["body"]["max_tokens"] == 300 for c in chat)
    assert all(
        c["body"]["messages"][0]["role"] == "system" and "writing assistant" in c["body"]["messages"][0]["content"]
        for c in chat
    )
    gem = [c for c in tidy.calls if ":generateContent" in c["path"]]
    assert len(gem) == 43 and all("systemInstruction" in c["body"] for c in gem)
    eng = get_engine(db)
    meta = mosaic.output_detail(eng, cli_principal(eng), study="launch", prompt="mosaic-00001", model="alpha")["meta"]
    assert meta["settings"] == {"temperature": 0.3, "max_tokens": 300} and meta["provider"] == "openai"
    assert meta["source"] == "collected" and meta["finish_reason"] == "stop" and "sk-test" not in json.dumps(meta)

    out = cli("mosaic-check", "--db", db, "--study", "launch", "--json")
    assert out["checked"] > 0 and out["judged"] == 0 and out["unchecked"] > 0 and out["errors"] == 0
    partial = cli("mosaic-score", "--db", db, "--study", "launch", "--n-boot", "0", "--json")
    assert any("need the LLM judge" in n for n in partial["notes"])
    assert "tone" not in partial["models"]["alpha"]["scc"]  # unchecked: left out, not a pass
    out = cli(
        "mosaic-check",
        "--db",
        db,
        "--study",
        "launch",
        "--judge-provider",
        "openai",
        "--judge-model",
        "judge-mini",
        "--judge-base-url",
        f"{tidy.url}/v1",
        "--json",
    )
    assert out["judged"] > 0 and out["unchecked"] == 0 and out["errors"] == 0
    assert cli("mosaic-check", "--db", db, "--study", "launch", "--json")["checked"] == 0  # nothing left to do

    score = cli("mosaic-score", "--db", db, "--study", "launch", "--n-boot", "300", "--seed", "5", "--json")
    alpha, beta = score["models"]["alpha"], score["models"]["beta"]
    assert alpha["scc"]["boc_token"] == 100 and beta["scc"]["boc_token"] == 0
    assert alpha["scc"]["tone"] == 100 and beta["scc"]["tone"] == 0  # the judge's 8/10 vs 3/10
    for m in (alpha, beta):
        lo, hi = m["intervals"]["pa"]
        assert lo <= m["pa"] <= hi and m["unchecked"] == 0
        for c, v in m["scc"].items():
            lo, hi = m["intervals"]["scc"][c]
            assert lo <= v <= hi
        assert all(isinstance(p["r"], (float, type(None))) and "p_value" in p for p in m["pcc"])

    cli("export", "--db", db, "--out", str(d / "export"))
    manifest = json.loads((d / "export" / "manifest.json").read_text())
    assert "mosaic_checks.csv" in manifest["files"] and "mosaic_scc.parquet" in manifest["files"]
    rows = pd.read_csv(d / "export" / "mosaic_checks.csv")
    assert list(rows.columns[:6]) == ["study", "model", "prompt", "position", "constraint", "followed"]
    ref = loop_mosaic(rows[rows["study"] == "launch"])
    for model, m in score["models"].items():
        assert m["pa"] == pytest.approx(ref[model]["pa"], abs=1e-5)
        assert m["scc"] == pytest.approx(ref[model]["scc"], abs=1e-5)
        assert m["poscc"] == pytest.approx(ref[model]["poscc"], abs=1e-5)
        assert {(p["constraint_i"], p["constraint_j"]): p["pcc"] for p in m["pcc"]} == pytest.approx(
            ref[model]["pcc"], abs=1e-5
        )
        for p in m["pcc"]:
            r, pv = ref[model]["pearson"][(p["constraint_i"], p["constraint_j"])]
            assert (p["r"] is None) == (r is None), p
            if r is not None:
                assert p["r"] == pytest.approx(r, abs=1e-12) and p["p_value"] == pytest.approx(pv, rel=1e-9, abs=1e-12)
    assert sum(p["r"] is not None for m in score["models"].values() for p in m["pcc"]) >= 3  # not vacuous
    _assert_tables_in_every_format(
        d / "export", manifest, ["mosaic_checks", "mosaic_pa", "mosaic_scc", "mosaic_poscc", "mosaic_pcc"]
    )
    # the metric tables are what the manifest's recompute command prints (shares in the tables, % in the JSON)
    assert manifest["studies"]["mosaic"]["recompute"] == "python -m reform_core mosaic-score --study NAME --json"
    default = cli("mosaic-score", "--db", db, "--study", "launch", "--json")  # 2,000 replicates, seed 0, as export
    scc_table = pd.read_csv(d / "export" / "mosaic_scc.csv")
    assert len(scc_table) == sum(len(m["scc"]) for m in default["models"].values())
    for r in scc_table.itertuples(index=False):
        m = default["models"][r.model]
        assert 100 * r.scc == pytest.approx(m["scc"][r.constraint], abs=1e-6)
        assert [100 * r.ci_low, 100 * r.ci_high] == pytest.approx(m["intervals"]["scc"][r.constraint], abs=1e-6)
    pa_table = pd.read_csv(d / "export" / "mosaic_pa.csv").set_index("model")
    for model, m in default["models"].items():
        assert 100 * pa_table.loc[model, "pa"] == pytest.approx(m["pa"], abs=1e-6)
        assert pa_table.loc[model, "unchecked"] == m["unchecked"]

    # the text report prints the same numbers as the JSON
    text = cli("mosaic-score", "--db", db, "--study", "launch", "--n-boot", "300", "--seed", "5")
    for model, m in score["models"].items():
        assert f"{model}: PA {_shown(m['pa'], m['intervals']['pa'])}" in text
        for c, v in m["scc"].items():
            assert f"{_shown(v, m['intervals']['scc'][c])}  n={m['n']['scc'][c]}" in text, c
            assert re.search(rf"SCC +{c} ", text), c
        for pos, v in m["poscc"].items():
            assert re.search(rf"PosCC +position {pos} +{re.escape(_shown(v, m['intervals']['poscc'][pos]))}", text), pos
        for p in m["pcc"]:
            r = "n/a" if p["r"] is None else f"{p['r']:+.3f}"
            assert f"{p['constraint_i']} & {p['constraint_j']}" in text and f"n={p['n']}  r={r}" in text


def _shown(x, pair, unit: str = " %", *, coefficient: bool = False) -> str:
    """A point and its interval as the text reports print them: to the places of the half-width's first
    significant digit (docs/display.md: shares whole points at least, coefficients 1–3 decimals)."""
    lo, hi = pair or (None, None)
    if lo is None or hi is None:
        return f"{display.number_text(x, 3 if coefficient else 1)}{unit} [n/a]"
    d = display.decimals_for(lo, hi, coarsest=1, finest=3, default=3) if coefficient else display.decimals_for(lo, hi)
    if not coefficient and hi - lo > display.MAX_WIDTH_PP:
        return f"{display.number_text(x, 0)}{unit} too uncertain: wider than 50 pp"
    return f"{display.number_text(x, d)}{unit} [{display.number_text(lo, d)}, {display.number_text(hi, d)}]"


def _assert_tables_in_every_format(out, manifest: dict, stems: list[str]) -> None:
    """Each table in CSV, Parquet and JSON with the same rows, each file hashed in the manifest."""
    for stem in stems:
        csv = pd.read_csv(out / f"{stem}.csv")
        parquet = pd.read_parquet(out / f"{stem}.parquet")
        records = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
        assert len(csv) == len(parquet) == len(records) and list(csv.columns) == list(parquet.columns)
        for ext in ("csv", "parquet", "json"):
            name = f"{stem}.{ext}"
            assert manifest["files"][name] == hashlib.sha256((out / name).read_bytes()).hexdigest(), name


def test_mosaic_from_outputs_produced_elsewhere(env):
    db, d = env["db"], env["dir"]
    prompts = d / "mosaic.jsonl"
    cli("mosaic-generate", "--out", str(prompts), "--n", "21", "--seed", "1")
    cli("mosaic-import", str(prompts), "--db", db, "--study", "ext")
    ids = [json.loads(line)["id"] for line in prompts.read_text().splitlines()]
    outputs = d / "outputs.jsonl"
    outputs.write_text(
        "".join(
            json.dumps({"prompt": p, "model": m, "output": text}) + "\n"
            for p in ids
            for m, text in (("m1", "<BOC>\nShort text.\n<EOC>"), ("m2", ""))
        )
    )
    assert cli("mosaic-import-outputs", str(outputs), "--db", db, "--study", "ext", "--json")["written"] == 42
    assert cli("mosaic-import-outputs", str(outputs), "--db", db, "--study", "ext", "--json")["existing"] == 42
    as_csv = d / "more.csv"  # CSV works too (a quoted multi-line output)
    pd.DataFrame({"prompt": ids[:3], "model": "m4", "output": ['<BOC>\nline one,\n"two"\n<EOC>'] * 3}).to_csv(
        as_csv, index=False
    )
    assert cli("mosaic-import-outputs", str(as_csv), "--db", db, "--study", "ext", "--json")["written"] == 3

    bad = d / "bad.jsonl"
    bad.write_text(
        json.dumps({"prompt": "nope", "model": "m3", "output": "x"})
        + "\n"
        + json.dumps({"prompt": ids[0], "model": "m3"})
        + "\n"
        + json.dumps({"prompt": ids[0], "model": "m1", "output": "changed"})
        + "\n"
    )
    msg = fails("mosaic-import-outputs", str(bad), "--db", db, "--study", "ext")
    assert f"{bad}:1: prompt: 'nope' is not a prompt of study 'ext'" in msg
    assert f"{bad}:2: output: missing" in msg
    assert "m3" not in json.dumps(cli("mosaic-score", "--db", db, "--study", "ext", "--n-boot", "0", "--json"))
    msg = fails("mosaic-import-outputs", str(d / "absent.jsonl"), "--db", db, "--study", "ext")
    assert "absent.jsonl" in msg and msg.count("\n") == 1
    assert "no MOSAIC study 'zzz'" in fails("mosaic-score", "--db", db, "--study", "zzz", "--json")

    out = cli("mosaic-check", "--db", db, "--study", "ext", "--json")
    assert out["checked"] > 0 and out["unchecked"] > 0
    # the judge constraints through the Gemini wire format (App. D.4 prompt, temperature 0)
    srv = env["tidy"]
    out = cli(
        "mosaic-check",
        "--db",
        db,
        "--study",
        "ext",
        "--judge-provider",
        "gemini",
        "--judge-model",
        "gemini-judge",
        "--judge-base-url",
        srv.url,
        "--json",
    )
    assert out["judged"] > 0 and out["unchecked"] == 0 and out["errors"] == 0
    calls = [c for c in srv.calls if ":generateContent" in c["path"]]
    assert len(calls) == out["judged"] and all("gemini-judge" in c["path"] for c in calls)
    assert all(
        c["body"]["generationConfig"]["temperature"] == 0
        and "expert writing coach" in json.dumps(c["body"]["systemInstruction"])
        for c in calls
    )
    score = cli("mosaic-score", "--db", db, "--study", "ext", "--n-boot", "100", "--json")
    m1, m2 = score["models"]["m1"], score["models"]["m2"]
    assert m1["scc"]["boc_token"] == 100 and m2["scc"]["boc_token"] == 0  # an empty answer fails the rule checks
    judged = {
        c["constraint"]
        for line in prompts.read_text().splitlines()
        for c in json.loads(line)["checks"]
        if c["verifier"] == "judge"
    }
    assert judged and all(m1["scc"][c] == 100 for c in judged)  # the fake judge gives 8/10: followed (>= 0.5)
    assert m1["unchecked"] == m2["unchecked"] == 0
    for m in score["models"].values():  # scores with intervals
        lo, hi = m["intervals"]["pa"]
        assert lo <= m["pa"] <= hi
    detail = mosaic.output_detail(get_engine(db), cli_principal(get_engine(db)), study="ext", prompt=ids[0], model="m4")
    assert detail["output"] == '<BOC>\nline one,\n"two"\n<EOC>' and detail["meta"]["file"] == "more.csv"


# --------------------------------------------------------------------------- WISE


def test_wise_from_manifest_to_scores_export_and_recomputation(env):
    db, tidy, plain, d = env["db"], env["tidy"], env["plain"], env["dir"]
    tasks = d / "tasks.txt"
    tasks.write_text("\n".join(TASKS) + "\n", encoding="utf-8")
    out = cli("wise-generate", "--tasks", str(tasks), "--out", str(d / "wise"), "--repetitions", "2", "--json")
    assert out["items"] == 8 * 6 * 2
    runs = (("alpha", "openai", tidy), ("beta", "gemini", tidy), ("gamma", "openai", plain), ("delta", "gemini", plain))
    for model, provider, srv in runs:
        url = f"{srv.url}/v1" if provider == "openai" else srv.url
        args = [
            "wise-collect",
            "--db",
            db,
            "--manifest",
            str(d / "wise"),
            "--study",
            "panel",
            "--model",
            model,
            "--provider",
            provider,
            "--base-url",
            url,
            "--json",
        ]
        first = cli(*args, "--limit", "40")
        assert (first["pending"], first["written"]) == (40, 40)
        rest = cli(*args)
        assert (rest["pending"], rest["written"]) == (56, 56)  # resumed
        assert cli(*args)["pending"] == 0
    chat = [c for c in tidy.calls + plain.calls if c["path"] == "/v1/chat/completions"]
    assert all(c["body"]["temperature"] == 0.2 and c["body"]["max_tokens"] == 120 for c in chat)  # the WISE paper's §4

    score = cli("wise-score", "--db", db, "--study", "panel", "--n-boot", "300", "--json")
    assert score["reference"] == "POS" and score["scheme"] == "provider-model-item"
    assert set(score["forms"]) == {"POS", "NEG", "NEVER", "AVOID1", "AVOID2", "CNEG"}
    for form, f in score["forms"].items():
        lo, hi = f["compliance_interval"]
        assert lo <= f["compliance"] <= hi
        if form != "POS":
            lo, hi = f["delta_interval"]
            assert lo <= f["delta"] <= hi and 0 <= f["p_value"] <= f["p_holm"] <= 1
            assert f["tau_b_interval"] is not None
    assert score["c_mean_interval"][0] <= score["c_mean"] <= score["c_mean_interval"][1]

    cli("export", "--db", db, "--out", str(d / "export"))
    rows = pd.read_csv(d / "export" / "wise_outputs.csv")
    assert list(rows.columns[:7]) == ["study", "model", "item", "form", "target", "repetition", "compliant"]
    assert len(rows) == 4 * 96
    ref = loop_wise(rows[rows["study"] == "panel"])
    for key in ("c_mean", "c_worst", "g_wording"):
        assert score[key] == pytest.approx(ref[key], abs=1e-6)
    for form, f in score["forms"].items():
        for key, value in ref["forms"][form].items():
            assert f[key] == pytest.approx(value, abs=1e-6), (form, key)
    manifest = json.loads((d / "export" / "manifest.json").read_text())
    _assert_tables_in_every_format(
        d / "export", manifest, ["wise_outputs", "wise_forms", "wise_summary", "wise_model_compliance"]
    )
    # the metric tables are what the manifest's recompute command prints (2,000 replicates, seed 0)
    assert manifest["studies"]["wise"]["recompute"] == "python -m reform_core wise-score --study NAME --json"
    default = cli("wise-score", "--db", db, "--study", "panel", "--json")
    forms = pd.read_csv(d / "export" / "wise_forms.csv").set_index("form")
    assert set(forms.index) == set(default["forms"])
    for form, f in default["forms"].items():
        row = forms.loc[form]
        assert 100 * row["compliance"] == pytest.approx(f["compliance"], abs=1e-6)
        assert [100 * row["compliance_low"], 100 * row["compliance_high"]] == pytest.approx(
            f["compliance_interval"], abs=1e-6
        )
        if form != "POS":
            assert row["p_holm"] == pytest.approx(f["p_holm"], abs=1e-9)
            assert [row["tau_b_low"], row["tau_b_high"]] == pytest.approx(f["tau_b_interval"], abs=1e-9)
    summary = pd.read_csv(d / "export" / "wise_summary.csv").iloc[0]
    assert 100 * summary["g_wording"] == pytest.approx(default["g_wording"], abs=1e-6)
    assert [100 * summary["c_worst_low"], 100 * summary["c_worst_high"]] == pytest.approx(
        default["c_worst_interval"], abs=1e-6
    )

    # a human wording-validation study of the same forms (templates from the manifest), compared with them
    out = cli(
        "wording-create", "--db", db, "--name", "panel-human", "--wise-study", "panel", "--targets", "5,8", "--json"
    )
    assert (out["forms"], out["items"]) == (6, 12)
    templates = pd.read_csv(d / "wise" / "forms.csv").set_index("form")["template"]
    with get_engine(db).connect() as conn:
        items = study_items(conn, study_id=out["id"])
    assert {(r.form, r.target): r.text for r in items.itertuples()} == {
        (f, t): fill_template(templates[f], t) for f in templates.index for t in ("5", "8")
    }
    res = cli("wording-results", "--db", db, "--study", "panel-human", "--n-boot", "20", "--json")
    for form, f in score["forms"].items():
        assert 100 * res["recognition"][form]["compliance"] == pytest.approx(f["compliance"], abs=1e-9)
        assert 100 * res["recognition"][form]["delta"] == pytest.approx(f["delta"], abs=1e-9)

    # the text report prints every number of the JSON
    text = cli("wise-score", "--db", db, "--study", "panel", "--n-boot", "300")
    for form, f in score["forms"].items():
        assert f"{form}: compliance {_shown(f['compliance'], f['compliance_interval'])}" in text
        if form == "POS":
            continue
        p = lambda v: "<0.0033" if v == 0 else display.p_value_text(v, replicates=300)  # noqa: E731
        assert f"{_shown(f['delta'], f['delta_interval'], ' pp')}  p {p(f['p_value'])}  Holm p {p(f['p_holm'])}" in text
        for k in ("tau_b", "reversal_rate", "top3_jaccard", "max_rank_shift"):
            assert f"{k} {_shown(f[k], f[f'{k}_interval'], '', coefficient=True)}" in text, (form, k)
    for k, unit in (("c_mean", " %"), ("c_worst", " %"), ("g_wording", " pp")):
        assert f"{k.replace('c_', 'C_').replace('g_', 'G_')} {_shown(score[k], score[f'{k}_interval'], unit)}" in text


def test_wise_from_outputs_produced_elsewhere_and_linked_human_study(env):
    db, d = env["db"], env["dir"]
    lines = []
    for m, off in (("m1", 0), ("m2", 1), ("m3", 2)):
        for i in range(6):
            for form, extra in (("POS", 0), ("NEG", off), ("AVOID1", (i + off) % 2)):
                lines.append(
                    {
                        "item": f"t{i}",
                        "model": m,
                        "provider": "p" + m,
                        "form": form,
                        "target": "5",
                        "repetition": 0,
                        "output": " ".join(["w"] * (5 + extra)),
                    }
                )
    gens = d / "gens.jsonl"
    gens.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = cli("wording-import-generations", str(gens), "--db", db, "--study", "ext", "--json")
    assert out["written"] == len(lines)
    score = cli("wise-score", "--db", db, "--study", "ext", "--n-boot", "200", "--json")
    assert score["forms"]["POS"]["compliance"] == 100 and score["forms"]["NEG"]["compliance"] == pytest.approx(100 / 3)
    assert score["c_worst"] == pytest.approx(100 / 3) and score["g_wording"] == pytest.approx(200 / 3)
    lo, hi = score["forms"]["NEG"]["delta_interval"]
    assert lo <= score["forms"]["NEG"]["delta"] <= hi and score["forms"]["NEG"]["p_holm"] is not None
    assert score["g_wording_interval"][0] <= score["g_wording"] <= score["g_wording_interval"][1]
    # the same file into a second study does not collide with the first
    assert cli("wording-import-generations", str(gens), "--db", db, "--study", "copy", "--json")["written"] == len(
        lines
    )

    forms = d / "forms.csv"
    forms.write_text(
        "key,template\nPOS,Answer using exactly {N} words.\nNEG,Do not use more or fewer than {N} words.\n"
        "AVOID1,Avoid using any number of words other than {N}.\n"
    )
    out = cli(
        "wording-create",
        "--db",
        db,
        "--name",
        "human",
        "--forms",
        str(forms),
        "--targets",
        "5,8",
        "--wise-study",
        "ext",
        "--json",
    )
    assert out["items"] == 6
    res = cli("wording-results", "--db", db, "--study", "human", "--n-boot", "50", "--json")
    assert res["recognition"]["NEG"]["compliance"] == pytest.approx(1 / 3)
    msg = fails(
        "wording-create", "--db", db, "--name", "h2", "--forms", str(forms), "--targets", "5", "--wise-study", "nope"
    )
    assert "no WISE study 'nope'" in msg

    # a keyword study: the linked human study compares under the WISE study's checker
    kw = d / "kw.jsonl"
    kw.write_text(
        "".join(
            json.dumps(
                {
                    "item": f"t{i}",
                    "model": m,
                    "provider": "p",
                    "form": form,
                    "target": "keyword:apple",
                    "repetition": 0,
                    "output": "an apple a day" if ok else "apple and apple",
                }
            )
            + "\n"
            for i in range(4)
            for m in ("m1", "m2")
            for form, ok in (("POS", True), ("NEG", i % 2 == 0 or m == "m1"))
        )
    )
    cli("wording-import-generations", str(kw), "--db", db, "--study", "kw")
    kw_score = cli("wise-score", "--db", db, "--study", "kw", "--n-boot", "50", "--json")
    assert kw_score["checker"] == "wise:keyword_once" and kw_score["forms"]["NEG"]["compliance"] == 75
    kw_forms = d / "kw_forms.csv"
    kw_forms.write_text(
        "key,template\nPOS,Use the word {K} exactly once.\nNEG,Do not use the word {K} more than once or not at all.\n"
    )
    cli(
        "wording-create",
        "--db",
        db,
        "--name",
        "kw-human",
        "--forms",
        str(kw_forms),
        "--targets",
        "apple",
        "--question",
        "Does this require the word {target} exactly once?",
        "--wise-study",
        "kw",
    )
    res = cli("wording-results", "--db", db, "--study", "kw-human", "--n-boot", "50", "--json")
    for form in ("POS", "NEG"):
        assert 100 * res["recognition"][form]["compliance"] == pytest.approx(kw_score["forms"][form]["compliance"])
    msg = fails(
        "wording-create",
        "--db",
        db,
        "--name",
        "kw-2",
        "--forms",
        str(kw_forms),
        "--targets",
        "apple",
        "--checker",
        "wise:word_range",
        "--wise-study",
        "kw",
    )
    assert "checker: 'wise:word_range' differs from WISE study 'kw'" in msg
