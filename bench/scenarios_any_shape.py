"""A benchmark that is *not* ReFormBench-shaped, with known truth (issue 32, "Validity beyond
ReFormBench"): the project generator of the ``any-shape`` validation family.

Shape (what differs from :mod:`reform_core.simulate` and ``bench/independent_project.py``):

* one instruction per question — **no variants**, so no target recurs and no EMCR unit
  exists; every (model, question) cluster is one prompt;
* a **variable number of constraints** per prompt, 1–6 (weights :data:`COUNT_WEIGHTS`), on
  distinct features drawn by popularity from 30 features in 6 categories; 30 % forbid;
* **no baseline data**: ``baseline_opposed`` is ``<NA>`` on every row, so only TCPR ("all of
  the prompt's constraints") and the constraint-level pass rate apply; EMCR and R^(K) have
  no eligible unit and must come out absent;
* truth ~ Bernoulli(logistic(ability_m + ease_f + u_{m,q} − 0.15 (k − 1))): a per
  (model, prompt) effect ``u`` (sd 1) makes a prompt's constraints pass or fail together,
  and longer prompts are harder;
* judges **lenient on some features and harsh on others**: each feature is lenient (a third:
  the judges pass what fails), harsh (a third: they fail what passes) or neutral, with its own
  rates drawn per feature (:data:`RATES`); judge A errs at the feature's rates, judge B at half
  of them plus a flat 1 %, both independently given the truth — so disagreements concentrate
  on the lenient and harsh features, in the feature's direction;
* **both judges wrong together** on the same features only: on a lenient feature both pass a
  failing constraint with the feature's shared rate, on a harsh one both fail a passing one
  (:data:`SHARED`); neutral features never mislead both. About 1 % of all instances, every
  one on a third of the features and in one direction per feature.

``judge="uniform"`` is the control for diagnostics: the same draws, but every feature errs at
the features' mean false-pass and false-fail rates, and both judges are wrong together on a
share :data:`UNIFORM_SHARED` of *every* constraint, whatever its feature and truth (about as
many both-wrong errors, not concentrated).

:func:`generate` returns the INSTANCES frame (``reform_core.frames``) the estimators take,
as ``reform_core.simulate.SimProject.instances()`` does: ``iid, model, question,
instruction, condition, pair_group, task_type, domain, position, feature, category, mode,
baseline_opposed, label_judge_a, label_judge_b, truth``, plus ``leniency`` (the feature's
judge type, kept for diagnostics; the estimators never read it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

N_QUESTIONS = 800
N_MODELS = 6
JUDGES = ("judge_a", "judge_b")
CATEGORIES = ("layout", "lists", "fields", "framing", "markers", "length")
FEATURES_PER_CATEGORY = 5
COUNT_WEIGHTS = (0.2, 0.2, 0.2, 0.15, 0.15, 0.1)  # prompts with 1, 2, …, 6 constraints
FORBID_SHARE = 0.3
LENIENCY = ("lenient", "harsh", "neutral")
# judge A's (false-pass, false-fail) rate ranges per feature type; each feature draws its own
RATES = {
    "lenient": ((0.12, 0.30), (0.003, 0.015)),
    "harsh": ((0.003, 0.015), (0.06, 0.14)),
    "neutral": ((0.01, 0.04), (0.01, 0.04)),
}
# rate at which both judges give the same wrong label: lenient features on failing constraints,
# harsh features on passing ones (range per feature)
SHARED = {"lenient": (0.02, 0.06), "harsh": (0.004, 0.012), "neutral": (0.0, 0.0)}
LENGTH_PENALTY = 0.15  # logit per constraint beyond the first
PROMPT_SD = 1.0  # sd of the (model, prompt) effect
UNIFORM_SHARED = 0.006  # the control's both-wrong share of every constraint


def features(rng: np.random.Generator) -> pd.DataFrame:
    """The 30 features: ``feature, category, leniency, false_pass, false_fail, shared,
    popularity, ease``; leniency types in equal thirds, shuffled across categories."""
    n = len(CATEGORIES) * FEATURES_PER_CATEGORY
    kind = rng.permutation(np.resize(np.array(LENIENCY, dtype=object), n))
    fp = np.array([rng.uniform(*RATES[k][0]) for k in kind])
    ff = np.array([rng.uniform(*RATES[k][1]) for k in kind])
    shared = np.array([rng.uniform(*SHARED[k]) for k in kind])
    return pd.DataFrame(
        {
            "feature": [f"{c}-{i + 1}" for c in CATEGORIES for i in range(FEATURES_PER_CATEGORY)],
            "category": np.repeat(np.array(CATEGORIES, dtype=object), FEATURES_PER_CATEGORY),
            "leniency": kind,
            "false_pass": fp,
            "false_fail": ff,
            "shared": shared,
            "popularity": rng.dirichlet(np.full(n, 2.0)),
            "ease": rng.normal(0.0, 0.7, n),
        }
    )


def prompts(rng: np.random.Generator, feats: pd.DataFrame, n_questions: int) -> pd.DataFrame:
    """One instruction per question with 1–6 distinct features: ``question, instruction,
    position, f (feature row), forbid, k (the prompt's constraint count)``."""
    k = rng.choice(np.arange(1, len(COUNT_WEIGHTS) + 1), size=n_questions, p=COUNT_WEIGHTS)
    pop = feats["popularity"].to_numpy()
    f = np.concatenate([rng.choice(len(feats), size=int(kq), replace=False, p=pop) for kq in k])
    q = np.repeat(np.arange(n_questions), k)
    pos = np.arange(len(q)) - np.repeat(np.cumsum(k) - k, k) + 1
    return pd.DataFrame(
        {
            "question": [f"p{i:04d}" for i in q],
            "instruction": [f"p{i:04d}-i" for i in q],
            "position": pos,
            "f": f,
            "forbid": rng.random(len(q)) < FORBID_SHARE,
            "k": np.repeat(k, k),
        }
    )


def judge_labels(
    rng: np.random.Generator, feats: pd.DataFrame, f: np.ndarray, truth: np.ndarray, judge: str = "by-feature"
) -> tuple[np.ndarray, np.ndarray]:
    """Judge A and B labels (module docstring): feature-dependent independent errors, then the
    feature's shared error where both are wrong together (``judge="uniform"``: the control)."""
    fp, ff, shared = (feats[c].to_numpy()[f] for c in ("false_pass", "false_fail", "shared"))
    if judge == "uniform":
        fp, ff = np.full(len(f), feats["false_pass"].mean()), np.full(len(f), feats["false_fail"].mean())
        shared = np.full(len(f), UNIFORM_SHARED)
    err_a = np.where(truth == 1, ff, fp)
    err_b = 0.5 * err_a + 0.01
    la = np.where(rng.random(len(truth)) < err_a, 1 - truth, truth)
    lb = np.where(rng.random(len(truth)) < err_b, 1 - truth, truth)
    kind = feats["leniency"].to_numpy()[f]
    exposed = np.where(kind == "lenient", truth == 0, np.where(kind == "harsh", truth == 1, False))
    exposed = np.ones(len(truth), dtype=bool) if judge == "uniform" else exposed
    together = exposed & (rng.random(len(truth)) < shared)
    return np.where(together, 1 - truth, la).astype(float), np.where(together, 1 - truth, lb).astype(float)


def generate(
    seed: int, *, n_questions: int = N_QUESTIONS, n_models: int = N_MODELS, judge: str = "by-feature"
) -> pd.DataFrame:
    """One project (module docstring) as an INSTANCES frame with ``truth``; ``judge``:
    "by-feature" (the family) or "uniform" (the diagnostics' control)."""
    if judge not in ("by-feature", "uniform"):
        raise ValueError(f"judge must be 'by-feature' or 'uniform', got {judge!r}")
    rng = np.random.default_rng([int(seed), 3201])
    feats = features(rng)
    base = prompts(rng, feats, n_questions)
    ability = np.sort(rng.uniform(1.2, 3.0, n_models))[::-1]
    f = base["f"].to_numpy()
    ease = feats["ease"].to_numpy()[f] - LENGTH_PENALTY * (base["k"].to_numpy() - 1)
    q_code = pd.factorize(base["question"])[0]
    frames = []
    for mi in range(n_models):
        u = rng.normal(0.0, PROMPT_SD, n_questions)[q_code]
        truth = (rng.random(len(base)) < expit(ability[mi] + ease + u)).astype(float)
        la, lb = judge_labels(rng, feats, f, truth, judge)
        frames.append(
            pd.DataFrame(
                {
                    "model": f"m{mi + 1}",
                    "question": base["question"].to_numpy(),
                    "instruction": base["instruction"].to_numpy(),
                    "condition": "main",
                    "pair_group": base["instruction"].to_numpy(),
                    "task_type": "own",
                    "domain": "own",
                    "position": base["position"].to_numpy(),
                    "feature": feats["feature"].to_numpy()[f],
                    "category": feats["category"].to_numpy()[f],
                    "mode": np.where(base["forbid"].to_numpy(), "forbid", "require").astype(object),
                    f"label_{JUDGES[0]}": la,
                    f"label_{JUDGES[1]}": lb,
                    "truth": truth,
                    "leniency": feats["leniency"].to_numpy()[f],
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "iid", np.arange(1, len(out) + 1, dtype=np.int64))
    out.insert(out.columns.get_loc("label_judge_a"), "baseline_opposed", pd.array([pd.NA] * len(out), dtype="boolean"))
    return out
