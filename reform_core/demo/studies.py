"""The demo's MOSAIC and WISE studies (deterministic, hash-seeded; no LLM involved).

MOSAIC ``demo-mosaic``: 36 prompts assembled with the real generator
(:func:`reform_core.construction.mosaic_gen.assemble`) from lists of 1–8 constraints, drawn
from the deterministic constraints of Table 4 (without the Flesch check, whose syllable
dictionary would slow the first start) plus two judge constraints. Three demo models answer
with their own habits: each *tries* to follow a constraint with a model- and
position-dependent probability (``helix-pro`` keeps to the top of the list, ``quill-2``
to its end, ``pixel-mini`` is erratic) and the text is written accordingly; whether an
output *follows* a constraint is then decided by the real App. D checks. The two judge
constraints stay unchecked (the demo has no LLM judge), which the results page reports.

WISE ``demo-wise``: the exact-count panel (the WISE paper's Table 1) over eight base tasks with
targets 5, 8, 10, 12 and two repetitions, answered by five models whose word counts miss
the target with a model × form dependent probability.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from reform_core.construction import mosaic_gen, wise_gen

MOSAIC_STUDY, WISE_STUDY = "demo-mosaic", "demo-wise"
POOL = (
    "short_paragraphs",
    "short_body",
    "dash_lists",
    "boc_token",
    "eoc_token",
    "json",
    "use_keywords",
    "avoid_keywords",
    "custom_variable",
    "vary_sentences",
    "short_sentences",
    "tone",
    "clear_purpose",
)
MOSAIC_MODELS = {"helix-pro": ("primacy", 0.92), "quill-2": ("recency", 0.85), "pixel-mini": ("flat", 0.7)}
WISE_MODELS = {"helix-pro": "helix", "quill-2": "quill", "pixel-mini": "pixel", "atlas-7": "atlas", "nova-lite": "nova"}
WISE_TASKS = (
    "Say why the sky is blue.",
    "Describe a sourdough starter.",
    "Give one tip for a new investor.",
    "Say what a houseplant needs.",
    "Describe a community garden.",
    "Explain what a password manager does.",
    "Say why we have seasons.",
    "Describe a good meeting note.",
)
FILLER = (
    "clear",
    "simple",
    "useful",
    "steady",
    "bright",
    "careful",
    "quick",
    "honest",
    "calm",
    "fresh",
    "solid",
    "friendly",
)


def _u(*key) -> float:
    """A stable uniform number in [0, 1) for ``key``."""
    return int(hashlib.sha256("|".join(map(str, key)).encode()).hexdigest()[:12], 16) / 16**12


# ----------------------------------------------------------------------------- MOSAIC


def mosaic_prompts() -> list[dict]:
    """The 36 demo prompts, as ``mosaic-generate`` writes them."""
    rng = np.random.default_rng(18)
    tasks, products = list(mosaic_gen.TASKS), list(mosaic_gen.PRODUCTS)
    out = []
    for i in range(36):
        size = 1 + i % 8
        cons = tuple(str(c) for c in rng.choice(POOL, size=size, replace=False))
        out.append(
            mosaic_gen.assemble(
                tasks[i % len(tasks)], products[(i * 3) % len(products)], cons, rng, prompt_id=f"demo-{i + 1:02d}"
            )
        )
    return out


def _tries(model: str, prompt: str, position: int, size: int) -> bool:
    habit, base = MOSAIC_MODELS[model]
    rel = (position - 1) / max(size - 1, 1)
    p = base - 0.35 * rel if habit == "primacy" else base - 0.35 * (1 - rel) if habit == "recency" else base
    return _u("mosaic", model, prompt, position) < p


NOUNS = {
    "smartphone": "phone",
    "wireless_earbuds": "earbuds",
    "savings_account": "account",
    "credit_card": "card",
    "meditation_app": "app",
    "fitness_monitor": "tracker",
    "meals_subscription": "meal box",
    "news_streaming": "news service",
}
VARIED = (6, 14, 8, 21, 5)


def _sentences(product: str, n: int, *, short: bool, varied: bool, words: list[str], seed: str) -> list[str]:
    """``n`` sentences about ``product``: 10 words each, varied lengths, or 30 words (too long)."""
    out = []
    for k in range(n):
        length = (VARIED[k % len(VARIED)] if varied else 10) if short else 30
        head = ["The", NOUNS[product], "is"] + ([words[k % len(words)]] if words else [])
        body = [FILLER[int(_u(seed, k, j) * len(FILLER))] for j in range(max(length - len(head), 1))]
        out.append(" ".join(head + body) + ".")
    return out


def mosaic_output(model: str, prompt: dict) -> str:
    """A demo model's answer to ``prompt``: a plain attempt at the constraints it tries."""
    checks = {c["constraint"]: c for c in prompt["checks"]}
    tries = {k: _tries(model, prompt["id"], c["position"], prompt["size"]) for k, c in checks.items()}
    want = lambda k: k in checks and tries[k]  # noqa: E731
    use = checks["use_keywords"]["params"]["keywords"] if "use_keywords" in checks else []
    avoid = checks["avoid_keywords"]["params"]["keywords"] if "avoid_keywords" in checks else []
    words = list(use if want("use_keywords") else use[:1])
    if "avoid_keywords" in checks and not want("avoid_keywords"):
        words.append(avoid[0])
    n_par = 3 if want("short_body") or "short_body" not in checks else 5
    per_par = 3 if want("short_paragraphs") or "short_paragraphs" not in checks else 6
    short = want("short_sentences") or "short_sentences" not in checks and model != "pixel-mini"
    varied = want("vary_sentences") or "vary_sentences" not in checks and model == "quill-2"
    paragraphs = []
    for p in range(n_par):
        sents = _sentences(prompt["product"], per_par, short=short, varied=varied, words=words, seed=f"{model}{p}")
        if p == 0 and want("custom_variable"):
            sents[0] = "Dear {{FirstName}}, " + sents[0][0].lower() + sents[0][1:]
        if want("dash_lists"):
            paragraphs.append("\n".join(f"- {s}" for s in sents))
        else:
            paragraphs.append(" ".join(sents))
    text = "\n\n".join(paragraphs)
    if want("json"):
        text = json.dumps({"response": text})
    if want("boc_token"):
        text = "<BOC> " + text
    if want("eoc_token"):
        text = text + " <EOC>"
    return text


def mosaic_outputs(prompts: list[dict]) -> list[dict]:
    return [{"prompt": p["id"], "model": m, "output": mosaic_output(m, p)} for p in prompts for m in MOSAIC_MODELS]


# ----------------------------------------------------------------------------- WISE


def wise_forms() -> list[dict]:
    return wise_gen.form_manifest("exact_count").to_dict("records")


def wise_generations() -> list[dict]:
    """Every task × form × repetition answered by every demo model (``wording-import-generations`` rows)."""
    tasks = wise_gen.task_manifest(list(WISE_TASKS), [5, 8, 10, 12], np.random.default_rng(2), prefix="demo")
    items = wise_gen.matched_items(tasks, wise_gen.form_manifest("exact_count"), repetitions=2)
    skill = {"helix-pro": 0.75, "quill-2": 0.6, "pixel-mini": 0.45, "atlas-7": 0.65, "nova-lite": 0.35}
    penalty = {"POS": 0.0, "NEG": 0.12, "NEVER": 0.1, "AVOID1": 0.25, "AVOID2": 0.04, "CNEG": 0.0}
    rows = []
    for r in items.itertuples(index=False):
        n = int(r.target)
        for model, vendor in WISE_MODELS.items():
            p = skill[model] - penalty[r.form] * (1.6 if model in ("pixel-mini", "atlas-7") else 1.0)
            u = _u("wise", model, r.item, r.form, r.repetition)
            miss = (
                0
                if u < p
                else (
                    -1 - int(3 * _u("dir", model, r.item, r.form))
                    if u < p + (1 - p) / 2
                    else 1 + int(3 * _u("size", model, r.item, r.form))
                )
            )
            count = max(1, n + miss)
            words = [FILLER[(k + len(r.item)) % len(FILLER)] for k in range(count)]
            rows.append(
                {
                    "item": r.item,
                    "model": model,
                    "provider": vendor,
                    "form": r.form,
                    "target": r.target,
                    "repetition": int(r.repetition),
                    "output": " ".join(words).capitalize() + ".",
                }
            )
    return rows
