"""A benchmark project generated *elsewhere*: an independent generator with known truth
(issue 13, "Done when": scenarios the estimator's authors did not write).

It shares no code with :mod:`reform_core.simulate` and has a different structure:

* 360 questions, 6 evaluated models; 40 synthetic features in 8 categories (own names);
* each question owns a small pool of 4–9 targets (feature, mode); its 1–14 variants
  (geometric, mean ≈ 4) each draw 3 distinct targets from that pool, so targets recur
  heavily inside a question;
* truth is a **latent-class mixture**, not a logistic model: per (model, question) a mastery
  class (mastered with probability rising with the model's ability); per (model,
  question, target) a pass probability from a U-shaped Beta (mastered: Beta(2.5, 0.25),
  not mastered: Beta(0.9, 0.6); baseline-opposed targets take a further ×0.85), and every
  variant of the target passes independently with that probability — truths of one
  target across variants are strongly dependent;
* baseline opposition is drawn per (model, question, target) with a model-specific rate;
* judge A errs by **category** (each category its own false-pass / false-fail rates), judge
  B by **position** in the instruction and by model (later constraints and weaker models
  err more); about 10 % of the instances are disagreements;
* both judges wrong together is **clustered**: 6 % of the (question, target) pairs are
  "ambiguous", and on an ambiguous target both judges flip together with probability
  0.15 in every variant (≈ 1 % of the instances, concentrated on a few targets), unlike
  the simulator's uniformly scattered both-wrong errors;
* adjudicators are **heterogeneous**: a pool of 6 with error rates spread around the
  scenario's mean (0 % or 5 %; 5 %: individual rates 2–8 %) and asymmetric (false passes
  1.5 × as likely as false fails).

:func:`generate` returns an INSTANCES frame (``reform_core.frames``) with ``label_a``,
``label_b`` and ``truth``; :func:`decide` makes the adjudicators' decisions on a plan's
tasks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

N_QUESTIONS = 360
N_MODELS = 6
CATEGORIES = ("layout", "headings", "enumeration", "fields", "framing", "organisation", "markers", "blocks")
FEATURES_PER_CATEGORY = 5
ANNOTATORS = 6


def generate(seed: int, *, n_questions: int = N_QUESTIONS, n_models: int = N_MODELS) -> pd.DataFrame:
    """One project (module docstring). Columns: ``iid, model, question, instruction,
    condition, task_type, position, feature, category, mode, baseline_opposed, label_a,
    label_b, truth``."""
    rng = np.random.default_rng([seed, 7013])
    feats = [(f"{c}-{k}", c) for c in CATEGORIES for k in range(FEATURES_PER_CATEGORY)]
    n_feat = len(feats)
    recs = []
    instr_no = 0
    for q in range(n_questions):
        pool_size = int(rng.integers(4, 10))
        pool_f = rng.choice(n_feat, size=pool_size, replace=False)
        pool_mode = rng.random(pool_size) < 0.3  # forbid
        n_var = 1 if rng.random() < 0.3 else min(int(rng.geometric(0.28)), 14)
        for _ in range(n_var):
            instr_no += 1
            pick = rng.choice(pool_size, size=3, replace=False)
            for pos, t in enumerate(pick, start=1):
                recs.append((f"Q{q:04d}", f"I{instr_no:05d}", pos, int(pool_f[t]), bool(pool_mode[t]), f"Q{q:04d}:{t}"))
    base = pd.DataFrame(recs, columns=["question", "instruction", "position", "f", "forbid", "target"])
    task_of_q = {q: ("analysis", "writing", "coding")[i % 3] for i, q in enumerate(base["question"].unique())}
    ability = np.sort(rng.uniform(0.35, 0.9, n_models))[::-1]
    oppose_rate = rng.uniform(0.45, 0.75, n_models)
    targets = base["target"].unique()
    t_code = pd.Index(targets).get_indexer(base["target"])
    questions = base["question"].unique()
    target_q = pd.Index(questions).get_indexer(base.drop_duplicates("target")["question"])  # question of each target
    ambiguous = rng.random(len(targets)) < 0.06
    cat_fp = rng.uniform(0.01, 0.07, len(CATEGORIES))
    cat_ff = rng.uniform(0.005, 0.05, len(CATEGORIES))
    cat_idx = np.array([CATEGORIES.index(feats[f][1]) for f in base["f"]])
    frames = []
    for mi in range(n_models):
        mastered = rng.random(len(questions)) < ability[mi]
        opposed_t = rng.random(len(targets)) < oppose_rate[mi]
        p_t = np.where(mastered[target_q], rng.beta(2.5, 0.25, len(targets)), rng.beta(0.9, 0.6, len(targets)))
        p_t = np.where(opposed_t, 0.85 * p_t, p_t)
        truth = (rng.random(len(base)) < p_t[t_code]).astype(float)
        # judge A: by category; judge B: by position and model
        ea = np.where(truth == 1, cat_ff[cat_idx], cat_fp[cat_idx])
        eb = (0.015 + 0.02 * (base["position"].to_numpy() - 1)) * (1.0 + 0.5 * mi / max(n_models - 1, 1))
        eb = np.where(truth == 1, eb, 1.4 * eb)
        la = np.where(rng.random(len(base)) < ea, 1 - truth, truth)
        lb = np.where(rng.random(len(base)) < eb, 1 - truth, truth)
        together = ambiguous[t_code] & (rng.random(len(base)) < 0.15)
        la = np.where(together, 1 - truth, la)
        lb = np.where(together, 1 - truth, lb)
        frames.append(
            pd.DataFrame(
                {
                    "model": f"sys-{mi + 1}",
                    "question": base["question"].to_numpy(),
                    "instruction": base["instruction"].to_numpy(),
                    "condition": "main",
                    "task_type": base["question"].map(task_of_q).to_numpy(),
                    "position": base["position"].to_numpy(),
                    "feature": [feats[f][0] for f in base["f"]],
                    "category": [feats[f][1] for f in base["f"]],
                    "mode": np.where(base["forbid"].to_numpy(), "forbid", "require"),
                    "baseline_opposed": opposed_t[t_code],
                    "label_a": la.astype(float),
                    "label_b": lb.astype(float),
                    "truth": truth,
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "iid", np.arange(1, len(out) + 1, dtype=np.int64) * 13 + 5)
    return out


def annotator_rates(mean_error: float, seed: int) -> pd.DataFrame:
    """Per annotator: P(report pass | truth fail) and P(report fail | truth pass)."""
    rng = np.random.default_rng([seed, 7014])
    if mean_error == 0:
        e = np.zeros(ANNOTATORS)
    else:
        e = np.clip(mean_error * rng.uniform(0.4, 1.6, ANNOTATORS), 0.0, 0.45)
    return pd.DataFrame(
        {"annotator": [f"ext-{i + 1}" for i in range(ANNOTATORS)], "false_pass": 1.2 * e, "false_fail": 0.8 * e}
    )


def decide(instances: pd.DataFrame, tasks: pd.DataFrame, mean_error: float, seed: int) -> pd.DataFrame:
    """Decisions ``iid, annotator, h`` on every task: ``required`` distinct annotators each."""
    rng = np.random.default_rng([seed, 7015])
    rates = annotator_rates(mean_error, seed)
    truth = instances.set_index("iid")["truth"]
    rows = []
    req = tasks["required"].to_numpy(dtype=int)
    for iid, k in zip(tasks["iid"].to_numpy(), req):
        y = float(truth.loc[iid])
        for a in rng.choice(ANNOTATORS, size=k, replace=False):
            err = rates["false_fail"].iloc[a] if y == 1 else rates["false_pass"].iloc[a]
            rows.append((int(iid), rates["annotator"].iloc[a], (1 - y) if rng.random() < err else y))
    return pd.DataFrame(rows, columns=["iid", "annotator", "h"])
