"""WISE matched items and manifests (the WISE paper, *When Verifiable Counts Depend on Wording*,
§3, §4, App. R; docs/metrics.md#wording-robustness).

A *task manifest* records ``item, task, target`` (100 base tasks balanced across target
counts 5, 8, 10, 12 in the paper). A *form manifest* records ``form, template, checker``:
verifier-equivalent wordings of one operational target. Matched items are every
task × form × repetition: the base request ``x_i`` stays fixed, only the wording
``w_f(t_i)`` changes, and the prompt is ``x_i`` followed by ``w_f(t_i)`` (eq. 1).

Targets use the wording service's canonical strings, which also name the checker:

==================  =====================  ===================
target              checker                template placeholder
==================  =====================  ===================
``10``              ``wise:exact_words``   ``{N}``
``8-12``            ``wise:word_range``    ``{L}``, ``{H}``
``keyword:harbor``  ``wise:keyword_once``  ``{K}``
``keys:name,year``  ``wise:json_keys``     ``{KEYS}``
==================  =====================  ===================

Panels: the exact-count forms of Table 1, the avoidance-family forms (§5), the
constructional-control forms (§4) — all quoted from the paper — and keyword / range / JSON
panels whose templates the paper does not print (written for this project).
"""

from __future__ import annotations

import re
import string

import numpy as np
import pandas as pd

CHECKERS = ("wise:exact_words", "wise:word_range", "wise:keyword_once", "wise:json_keys")
PLACEHOLDERS = {
    "wise:exact_words": {"N"},
    "wise:word_range": {"L", "H"},
    "wise:keyword_once": {"K"},
    "wise:json_keys": {"KEYS"},
}

PANELS: dict[str, dict] = {
    "exact_count": {
        "checker": "wise:exact_words",
        "forms": {
            "POS": "Answer using exactly {N} words.",
            "NEG": "Do not use more or fewer than {N} words.",
            "NEVER": "Never use more or fewer than {N} words.",
            "AVOID1": "Avoid using any number of words other than {N}.",
            "AVOID2": "Avoid giving an answer that is not exactly {N} words.",
            "CNEG": "Do not fail to answer using exactly {N} words.",
        },
    },
    "avoidance_family": {
        "checker": "wise:exact_words",
        "forms": {
            "POS": "Answer using exactly {N} words.",
            "AVOID1": "Avoid using any number of words other than {N}.",
            "AVOID3": "Avoid exceeding or falling short of {N} words.",
            "AVOID4": "Avoid an answer with a word count different from {N}.",
            "EXCLUDE1": "Use no word count except {N}.",
            "EXCLUDE2": "Your answer should have no length other than {N} words.",
        },
    },
    "constructional_control": {
        "checker": "wise:exact_words",
        "forms": {
            "POS": "Answer using exactly {N} words.",
            "LONG": "Your answer should consist of a total of exactly {N} words.",
            "LATE": "The total number of words in your answer should be exactly {N}.",
            "AVOID1": "Avoid using any number of words other than {N}.",
        },
    },
    "keyword": {
        "checker": "wise:keyword_once",
        "forms": {
            "POS": 'Use the word "{K}" exactly once.',
            "NEG": 'Do not use the word "{K}" more or fewer than one time.',
            "AVOID1": 'Avoid using the word "{K}" any number of times other than once.',
        },
    },
    "range": {
        "checker": "wise:word_range",
        "forms": {
            "POS": "Answer using between {L} and {H} words.",
            "NEG": "Do not use fewer than {L} or more than {H} words.",
            "AVOID1": "Avoid using any number of words outside {L} to {H}.",
        },
    },
    "json": {
        "checker": "wise:json_keys",
        "forms": {
            "POS": "Answer only with a JSON object that has exactly the keys {KEYS}.",
            "NEG": "Do not answer with anything but a JSON object with exactly the keys {KEYS}.",
            "AVOID": "Avoid any output other than a JSON object with exactly the keys {KEYS}.",
        },
    },
}


def parse_target(target) -> tuple[str, dict]:
    """``(checker id, checker params)`` of a canonical target string (see module doc)."""
    t = str(target).strip()
    if re.fullmatch(r"\d+", t):
        return "wise:exact_words", {"n": int(t)}
    m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", t)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > hi:
            raise ValueError(f"target {t!r}: range low {lo} exceeds high {hi}")
        return "wise:word_range", {"low": lo, "high": hi}
    if t.startswith("keyword:") and t[8:].strip():
        return "wise:keyword_once", {"keyword": t[8:].strip()}
    if t.startswith("keys:"):
        keys = [k.strip() for k in t[5:].split(",") if k.strip()]
        if keys:
            return "wise:json_keys", {"keys": keys}
    raise ValueError(f"target {t!r}: expected N, L-H, keyword:WORD or keys:K1,K2")


def render(template: str, target) -> str:
    """The wording of ``template`` for ``target`` (placeholders must match its checker)."""
    checker, params = parse_target(target)
    values = {
        "N": params.get("n"),
        "L": params.get("low"),
        "H": params.get("high"),
        "K": params.get("keyword"),
        "KEYS": ", ".join(params.get("keys", [])),
    }
    used = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    if used != PLACEHOLDERS[checker]:
        raise ValueError(
            f"template {template!r}: placeholders {sorted(used)} do not fit target {target!r} "
            f"(checker {checker} needs {sorted(PLACEHOLDERS[checker])})"
        )
    return template.format(**{k: values[k] for k in used})


def task_manifest(tasks: list[str], targets: list, rng: np.random.Generator, *, prefix: str = "item") -> pd.DataFrame:
    """Assign ``targets`` to ``tasks`` in balance (each target ⌊n/T⌋ or ⌈n/T⌉ times, in random
    order); ids ``{prefix}-001`` … Returns ``item, task, target``."""
    if not tasks:
        raise ValueError("tasks: need at least one base task")
    if not targets:
        raise ValueError("targets: need at least one target")
    for t in targets:
        parse_target(t)
    for i, t in enumerate(tasks, 1):
        if not str(t).strip():
            raise ValueError(f"tasks: task #{i} is empty")
    cycle = [str(targets[i % len(targets)]) for i in range(len(tasks))]
    assigned = [cycle[i] for i in rng.permutation(len(tasks))]
    width = max(3, len(str(len(tasks))))
    return pd.DataFrame(
        {"item": [f"{prefix}-{i:0{width}d}" for i in range(1, len(tasks) + 1)], "task": list(tasks), "target": assigned}
    )


def form_manifest(
    panel: str | None = None, *, forms: dict[str, str] | None = None, checker: str | None = None
) -> pd.DataFrame:
    """``form, template, checker`` of a bundled ``panel`` or of custom ``forms`` + ``checker``."""
    if panel is not None:
        if panel not in PANELS:
            raise ValueError(f"panel: unknown panel {panel!r} (known: {list(PANELS)})")
        forms, checker = PANELS[panel]["forms"], PANELS[panel]["checker"]
    if not forms or checker not in CHECKERS:
        raise ValueError(f"forms/checker: need forms and a checker among {CHECKERS}, got {checker!r}")
    for key, tmpl in forms.items():
        used = {f for _, f, _, _ in string.Formatter().parse(tmpl) if f is not None}
        if used != PLACEHOLDERS[checker]:
            raise ValueError(
                f"form {key!r}: placeholders {sorted(used)}; checker {checker} needs {sorted(PLACEHOLDERS[checker])}"
            )
    return pd.DataFrame({"form": list(forms), "template": list(forms.values()), "checker": checker})


def matched_items(tasks: pd.DataFrame, forms: pd.DataFrame, *, repetitions: int = 3) -> pd.DataFrame:
    """Every task × form × repetition with the instantiated wording and complete prompt.

    Returns
    -------
    DataFrame ``item, task, target, form, repetition`` (0-based), ``wording``, ``prompt``,
    ``checker``, ``params`` (the checker's keyword arguments).
    """
    for df, cols, what in (
        (tasks, ["item", "task", "target"], "tasks"),
        (forms, ["form", "template", "checker"], "forms"),
    ):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise ValueError(f"{what} lacks column(s) {missing}; has {list(df.columns)}")
    if repetitions < 1:
        raise ValueError(f"repetitions: must be >= 1, got {repetitions}")
    rows = []
    for t in tasks.itertuples(index=False):
        checker, params = parse_target(t.target)
        for f in forms.itertuples(index=False):
            if f.checker != checker:
                raise ValueError(
                    f"item {t.item!r}: target {t.target!r} needs {checker}, form {f.form!r} is for {f.checker}"
                )
            wording = render(f.template, t.target)
            for rep in range(repetitions):
                rows.append(
                    {
                        "item": t.item,
                        "task": t.task,
                        "target": str(t.target),
                        "form": f.form,
                        "repetition": rep,
                        "wording": wording,
                        "prompt": f"{str(t.task).rstrip()} {wording}",
                        "checker": checker,
                        "params": params,
                    }
                )
    return pd.DataFrame(rows)
