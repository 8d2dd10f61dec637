"""MOSAIC prompt generator (MOSAIC, arXiv:2601.18554, §3.1, Tables 2–4, App. D).

A prompt is a content task (Table 2) × a product or service (Table 3) × an ordered list of
1–20 distinct constraints drawn from the 21 of Table 4, assembled with the paper's
template::

    system: You are a writing assistant. Your task is to <task>. Ensure your draft complies
            with all of the following requirements: <constraint list>
    user:   Product/Service: <product description>.

Two phases, as in the paper:

* :func:`comprehensive_pool` — every task × product pairing with lists of each size: all
  permutations of all combinations for sizes ≤ ``small_max`` (3), ``shuffles`` random
  orders of ``combos`` random combinations for larger sizes (lazy; the paper's pool has
  765,472 prompts).
* :func:`balanced_sample` — the balanced subset (default 4,000 prompts): list sizes
  uniform, task × product pairings uniform within each size, and each constraint equally
  often at every (size, rank). The paper samples prompts per (task, product, size) pool and
  notes that it "cannot directly optimize" rank balance; here the subset is built as a
  design instead: for each size, rows come in blocks of 21 that use a random permutation
  π and a random step s coprime to 21, row j holding π[(j + s·r) mod 21] at rank r, so a
  full block places every constraint exactly once at every rank. Every list is still an
  ordered list of distinct constraints, i.e. a member of the comprehensive space.

Placeholders (``<SelectedTone>``, keyword lists) are filled per product at assembly; the
paper's Appendix B values are not in the text, so the tones and keywords below are this
project's choices. Each constraint names its checker: a ``mosaic:*`` verifier with params,
or ``judge`` with the App. D.4.2 rubric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations, permutations
from math import gcd, perm
from typing import Iterator

import numpy as np
import pandas as pd

TASKS: dict[str, str] = {
    "marketing_email": "write a marketing email to promote a given product or service",
    "product_review": "write a detailed description and review of a given product or service",
    "faq_entry": "write a clear and concise entry for a product's Frequently Asked Questions page, "
    "explaining a specific feature",
    "internal_memo": "write a brief internal memo for employees announcing a new product or service",
}

PRODUCTS: dict[str, str] = {
    "smartphone": "A flagship smartphone featuring a 120Hz dynamic display, a triple-lens camera system with a "
    "108MP main sensor, and 2-day battery life",
    "wireless_earbuds": "True wireless stereo earbuds with active noise cancellation, 8-hour playback on a single "
    "charge, and a water-resistance rating of IPX7",
    "savings_account": "An online savings account with a 4.5% Annual Percentage Yield (APY), no monthly "
    "maintenance fees, and FDIC insurance up to $250,000",
    "credit_card": "A credit card offering 3% cashback on rotating categories (gas, groceries), 1% on all other "
    "purchases, and no annual fee for the first year",
    "meditation_app": "A subscription-based mobile app offering a library of over 500 guided meditations, sleep "
    "stories, and mindfulness exercises",
    "fitness_monitor": "A wrist-worn device that tracks steps, heart rate, sleep patterns, and SpO2 levels, with a "
    "companion app for goal setting and progress monitoring",
    "meals_subscription": "A weekly subscription box that delivers pre-portioned ingredients and recipes for "
    "chef-designed meals, with options for various dietary needs",
    "news_streaming": "An online service providing 24/7 live access to international news channels, "
    "documentaries, and in-depth political analysis",
}

TONES = ("friendly", "professional", "enthusiastic", "reassuring", "authoritative")

# Per product: keywords to use (brand voice) and keywords to avoid (project's choices).
KEYWORDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "smartphone": (("brilliant", "capture", "all-day"), ("cheap", "clunky", "outdated")),
    "wireless_earbuds": (("immersive", "freedom", "crystal-clear"), ("tangled", "noisy", "cheap")),
    "savings_account": (("grow", "secure", "effortless"), ("gamble", "volatile", "hidden")),
    "credit_card": (("rewards", "flexible", "save"), ("debt", "penalty", "hidden")),
    "meditation_app": (("calm", "balance", "mindful"), ("stress", "anxious", "hard")),
    "fitness_monitor": (("insight", "progress", "motivate"), ("lazy", "complicated", "bulky")),
    "meals_subscription": (("fresh", "convenient", "delicious"), ("bland", "frozen", "hassle")),
    "news_streaming": (("trusted", "global", "live"), ("biased", "fake", "delayed")),
}


@dataclass(frozen=True)
class MosaicConstraint:
    """One Table 4 constraint; ``text`` may hold ``{tone}`` / ``{keywords}``."""

    key: str
    category: str
    name: str
    text: str
    verifier: str  # a mosaic:* verifier id, or "judge"
    params: dict = field(default_factory=dict)
    rubric: str = ""  # App. D.4.2 rubric for judge constraints


CONSTRAINTS: tuple[MosaicConstraint, ...] = (
    MosaicConstraint(
        "short_paragraphs",
        "formatting",
        "Keep paragraphs short",
        "Keep paragraphs short, ideally 2-4 sentences.",
        "mosaic:paragraph_length",
        {"min_sentences": 2, "max_sentences": 4},
    ),
    MosaicConstraint(
        "short_body",
        "formatting",
        "Keep body short",
        "The body content should be organized into 2-3 paragraphs.",
        "mosaic:paragraph_count",
        {"min_paragraphs": 2, "max_paragraphs": 3},
    ),
    MosaicConstraint(
        "dash_lists",
        "formatting",
        "Structure body into lists",
        "Organize the body content into lists using only dashes.",
        "mosaic:dash_list",
        {"bullet": "-"},
    ),
    MosaicConstraint(
        "boc_token",
        "formatting",
        "Include <BOC> token",
        "At the beginning of the generated content, include the special token <BOC>.",
        "mosaic:boc_token",
        {"token": "<BOC>"},
    ),
    MosaicConstraint(
        "eoc_token",
        "formatting",
        "Include <EOC> token",
        "At the end of the generated content, include the special token <EOC>.",
        "mosaic:eoc_token",
        {"token": "<EOC>"},
    ),
    MosaicConstraint(
        "json",
        "formatting",
        "Respond in JSON",
        'Respond in JSON format following the schema: {{"response": <your response>}}.',
        "mosaic:json",
        {"keys": ["response"]},
    ),
    MosaicConstraint(
        "flesch",
        "lexical",
        "Flesch Reading Ease 70-80",
        "Content should target a Flesch Reading Ease level between 70 and 80 to ensure broad accessibility.",
        "mosaic:flesch",
        {"low": 70.0, "high": 80.0},
    ),
    MosaicConstraint(
        "positive_language",
        "lexical",
        "Use positive language",
        "Use positive and empowering language (e.g., 'opportunity', 'benefit', 'simplify') and avoid "
        "negative or fear-based terms (e.g., 'problem', 'risk', 'failure').",
        "judge",
        rubric="Positive language: The given passage uses positive and empowering language (e.g., "
        '"opportunity", "benefit", "simplify", etc.) and avoids negative or fear-based '
        'terms (e.g., "problem", "risk", "failure", etc.).',
    ),
    MosaicConstraint(
        "use_keywords",
        "lexical",
        "Use given keywords",
        "Incorporate keywords aligned with the brand voice i.e., {keywords}.",
        "mosaic:keywords_use",
    ),
    MosaicConstraint(
        "avoid_keywords",
        "lexical",
        "Avoid given keywords",
        "Do not use keywords like {avoid_keywords}.",
        "mosaic:keywords_avoid",
    ),
    MosaicConstraint(
        "custom_variable",
        "lexical",
        "Use custom variable",
        "Refer to the recipient of the message using the variable {{{{FirstName}}}} enclosed by double curly brackets.",
        "mosaic:variable",
        {"name": "FirstName"},
    ),
    MosaicConstraint(
        "vary_sentences",
        "syntactic",
        "Vary sentence length",
        "Vary sentence length and structure to create a compelling rhythm. Mix simple, compound, and "
        "complex sentences.",
        "mosaic:sentence_variation",
    ),
    MosaicConstraint(
        "short_sentences",
        "syntactic",
        "Keep sentences short",
        "Individual sentences should not exceed 25 words to maintain clarity and momentum.",
        "mosaic:max_sentence_length",
        {"max_words": 25},
    ),
    MosaicConstraint(
        "tone",
        "semantic",
        "Use given tone",
        "Maintain a single, consistent tone throughout the entire response as specified. Your response "
        "tone should be: {tone}.",
        "judge",
        rubric="Specific tone: The given passage maintains a single, consistent, {tone} tone throughout "
        "the entire context.",
    ),
    MosaicConstraint(
        "inverted_pyramid",
        "semantic",
        "Use inverted pyramid principle",
        'Structure the response following the "inverted pyramid" principle. The most critical piece of '
        "information (the core answer, main announcement, or key takeaway) must be presented at the "
        "beginning, before supporting details or secondary context.",
        "judge",
        rubric="Inverted pyramid principle: The given passage presents the most critical piece of "
        "information (e.g., the core answer, main announcement, key takeaway, etc.) in the "
        "description {product}, before supporting details or secondary context.",
    ),
    MosaicConstraint(
        "no_contradictions",
        "semantic",
        "Avoid contradictions",
        "The response must not contain any internal contradictions. All stated facts, arguments, and "
        "data points must be consistent with each other from start to finish.",
        "judge",
        rubric="Internal contradictions: The given passage does not contain any internal contradictions. "
        "All stated facts, arguments, and data points are consistent with each other from start "
        "to finish.",
    ),
    MosaicConstraint(
        "substantiate_claims",
        "semantic",
        "Substantiate every claim",
        "Every significant claim, benefit, or conclusion must be supported by a reason or piece of "
        "evidence within the text. Avoid making unsupported assertions. For example, instead of "
        '"It\'s faster," write "It\'s faster because it uses a next-generation processor."',
        "judge",
        rubric="Supporting evidence: The given passage avoids making unsupported assertions and provides "
        "a reason or piece of evidence within the text for every significant claim, benefit or "
        "conclusion.",
    ),
    MosaicConstraint(
        "clear_purpose",
        "semantic",
        "Clear purpose",
        "The content must directly address the primary underlying question of the target audience for "
        "the task (e.g., 'How will this help me?', 'What do I need to know?', 'Is my problem solved?'). "
        "The purpose of the communication must be clear.",
        "judge",
        rubric="Communication purpose: The given passage has a clear purpose of communication and "
        "directly addresses the primary underlying question of the target audience.",
    ),
    MosaicConstraint(
        "unambiguous_language",
        "business_legal",
        "Use unambiguous language",
        "Use precise and unambiguous language. Avoid vague terms or phrases that could be misinterpreted "
        "by the target audience. All instructions, descriptions, or conclusions should be explicit and "
        "clear.",
        "judge",
        rubric="Precise language: The given passage uses precise and unambiguous language. All "
        "instructions, descriptions or conclusions are explicit and clear.",
    ),
    MosaicConstraint(
        "correct_features",
        "business_legal",
        "Report correct features",
        "All product names, features, and numerical data (e.g., prices, percentages) must be accurate "
        "and up-to-date as of the generation date.",
        "judge",
        rubric="Accurate product information: The given passage only contains accurate product names, "
        "features, and numerical data that can be verified against the product description "
        "{product}.",
    ),
    MosaicConstraint(
        "no_superlatives",
        "business_legal",
        "Avoid unsubstantiated superlatives",
        "Avoid superlatives (e.g., 'best', 'greatest') unless they can be substantiated by a verifiable "
        "source, which must be cited or linked.",
        "judge",
        rubric="Substantiated superlatives: If the passage contains superlatives (e.g., best, greatest, "
        "etc.) they are substantiated by verifiable sources.",
    ),
)
CONSTRAINT_KEYS = tuple(c.key for c in CONSTRAINTS)
_BY_KEY = {c.key: c for c in CONSTRAINTS}
MAX_SIZE = len(CONSTRAINTS) - 1  # lists of 1–20 from a pool of 21


def _check_sizes(sizes) -> list[int]:
    sizes = sorted(set(int(k) for k in sizes))
    if not sizes or sizes[0] < 1 or sizes[-1] > len(CONSTRAINTS):
        raise ValueError(f"sizes: list sizes must lie in 1..{len(CONSTRAINTS)}, got {sizes}")
    return sizes


# --- phase 1: the comprehensive pool ----------------------------------------------------


def pool_size(*, sizes=range(1, MAX_SIZE + 1), small_max: int = 3, combos: int = 50, shuffles: int = 3) -> int:
    """Number of prompts :func:`comprehensive_pool` yields with these settings."""
    per_pair = sum(perm(len(CONSTRAINTS), k) if k <= small_max else combos * shuffles for k in _check_sizes(sizes))
    return per_pair * len(TASKS) * len(PRODUCTS)


def comprehensive_pool(
    rng: np.random.Generator, *, sizes=range(1, MAX_SIZE + 1), small_max: int = 3, combos: int = 50, shuffles: int = 3
) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """Every (task, product, ordered constraint list) of the comprehensive dataset, lazily.

    Sizes ≤ ``small_max``: all permutations of all combinations; larger sizes: ``combos``
    random combinations (drawn without replacement of constraints) × ``shuffles`` random
    orders each (MOSAIC §3.1, "Comprehensive Generation").
    """
    sizes = _check_sizes(sizes)
    n = len(CONSTRAINTS)
    for task in TASKS:
        for product in PRODUCTS:
            for k in sizes:
                if k <= small_max:
                    for combo in combinations(range(n), k):
                        for order in permutations(combo):
                            yield task, product, tuple(CONSTRAINT_KEYS[i] for i in order)
                    continue
                for _ in range(combos):
                    combo = rng.choice(n, size=k, replace=False)
                    for _ in range(shuffles):
                        yield task, product, tuple(CONSTRAINT_KEYS[i] for i in rng.permutation(combo))


# --- phase 2: the balanced subset ---------------------------------------------------------


def _size_rows(k: int, count: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """``count`` ordered lists of size ``k`` from a cyclic design balanced by rank."""
    m = len(CONSTRAINTS)
    steps = [s for s in range(1, m) if gcd(s, m) == 1]
    rows: list[tuple[int, ...]] = []
    while len(rows) < count:
        pi = rng.permutation(m)
        s = steps[int(rng.integers(len(steps)))]
        block = [tuple(int(pi[(j + s * r) % m]) for r in range(k)) for j in range(m)]
        need = count - len(rows)
        rows += block if need >= m else [block[j] for j in sorted(rng.choice(m, size=need, replace=False))]
    return rows


def balanced_sample(
    n: int, rng: np.random.Generator, *, sizes=range(1, MAX_SIZE + 1)
) -> list[tuple[str, str, tuple[str, ...]]]:
    """The balanced subset of ``n`` (task, product, ordered list) triples (see module doc).

    Sizes get ``n // len(sizes)`` prompts each (the remainder goes to randomly chosen
    sizes); pairings are dealt from a stream of shuffled task × product lists; the result
    is in random order.
    """
    sizes = _check_sizes(sizes)
    if n < 1:
        raise ValueError(f"n: must be >= 1, got {n}")
    counts = {k: n // len(sizes) for k in sizes}
    for k in rng.choice(sizes, size=n % len(sizes), replace=False):
        counts[int(k)] += 1
    pairs = [(t, p) for t in TASKS for p in PRODUCTS]
    stream: list[tuple[str, str]] = []
    out = []
    for k in sizes:
        for row in _size_rows(k, counts[k], rng):
            if not stream:
                stream = [pairs[i] for i in rng.permutation(len(pairs))]
            task, product = stream.pop()
            out.append((task, product, tuple(CONSTRAINT_KEYS[i] for i in row)))
    return [out[i] for i in rng.permutation(len(out))]


# --- assembly -----------------------------------------------------------------------------


def fill(constraint: str, product: str, rng: np.random.Generator) -> tuple[str, dict, str]:
    """(constraint text, checker params, judge rubric) with placeholders filled for ``product``."""
    c = _BY_KEY.get(constraint)
    if c is None:
        raise ValueError(f"constraint: unknown MOSAIC constraint {constraint!r} (known: {list(CONSTRAINT_KEYS)})")
    if product not in PRODUCTS:
        raise ValueError(f"product: unknown product {product!r} (known: {list(PRODUCTS)})")
    use, avoid = KEYWORDS[product]
    values = {
        "product": PRODUCTS[product],
        "tone": TONES[int(rng.integers(len(TONES)))],
        "keywords": ", ".join(use),
        "avoid_keywords": ", ".join(avoid),
    }
    params = dict(c.params)
    if c.key == "use_keywords":
        params["keywords"] = list(use)
    elif c.key == "avoid_keywords":
        params["keywords"] = list(avoid)
    elif c.key == "tone":
        params["tone"] = values["tone"]
    return c.text.format(**values), params, c.rubric.format(**values)


def assemble(
    task: str, product: str, constraints: tuple[str, ...], rng: np.random.Generator, *, prompt_id: str = ""
) -> dict:
    """One prompt record: ids, the system and user messages, and one check per constraint."""
    if task not in TASKS:
        raise ValueError(f"task: unknown task {task!r} (known: {list(TASKS)})")
    if len(set(constraints)) != len(constraints):
        raise ValueError(f"constraints: duplicates in {list(constraints)}")
    texts, checks = [], []
    for pos, key in enumerate(constraints, 1):
        text, params, rubric = fill(key, product, rng)
        texts.append(f"- {text}")
        c = _BY_KEY[key]
        checks.append(
            {
                "position": pos,
                "constraint": key,
                "category": c.category,
                "text": text,
                "verifier": c.verifier,
                "params": params,
                "rubric": rubric,
            }
        )
    system = (
        f"You are a writing assistant. Your task is to {TASKS[task]}. Ensure your draft complies with all "
        f"of the following requirements:\n" + "\n".join(texts)
    )
    return {
        "id": prompt_id,
        "task": task,
        "product": product,
        "size": len(constraints),
        "constraints": list(constraints),
        "system": system,
        "user": f"Product/Service: {PRODUCTS[product]}.",
        "checks": checks,
    }


def generate(n: int, rng: np.random.Generator, *, sizes=range(1, MAX_SIZE + 1)) -> list[dict]:
    """``n`` assembled prompts of the balanced subset, ids ``mosaic-00001`` …"""
    width = max(5, len(str(n)))
    return [
        assemble(t, p, c, rng, prompt_id=f"mosaic-{i:0{width}d}")
        for i, (t, p, c) in enumerate(balanced_sample(n, rng, sizes=sizes), 1)
    ]


def balance_counts(prompts: list) -> dict[str, pd.DataFrame]:
    """Constraint × list-size and constraint × rank counts (rows: constraints).

    ``prompts``: assembled records or (task, product, list) triples.
    """
    rows = []
    for p in prompts:
        cons = p["constraints"] if isinstance(p, dict) else p[2]
        rows += [(c, len(cons), r) for r, c in enumerate(cons, 1)]
    df = pd.DataFrame(rows, columns=["constraint", "size", "rank"])
    return {"size": pd.crosstab(df["constraint"], df["size"]), "rank": pd.crosstab(df["constraint"], df["rank"])}
