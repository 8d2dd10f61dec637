"""The LLM prompts of benchmark construction and the prompting condition (ReFormBench,
arXiv:2610.19693, §4.4, App. A.7.3, A.7.4, A.11). Pure: message lists in, parsed dicts out.

* Integration: an LLM rewrites a question so that it naturally contains its three
  constraints (App. A.7.4: "integrates the three constraints into the question"),
  preserving the task; it answers ``{"instruction": "…"}``.
* Open-ended extraction: an LLM lists the formatting features of a response and maps
  each to the catalog (App. A.4, A.7.3); it answers ``{"features": [...]}``.
* Meta-prompt: the fixed guidance of the prompting condition (§4.4), appended to the user
  message of every ``prompted`` instruction.

The papers print English translations of their prompts only as figures; the texts below
are written for this project following their described content.
"""

from __future__ import annotations

import json

PROMPT_VERSION = "construction-v1"
MAPPINGS = ("exact", "subtype", "composite", "uncovered", "not_format")

META_PROMPT = (
    "Before answering, follow these steps:\n"
    "1. Identify all explicit constraints in the request.\n"
    "2. Plan a minimal output structure that satisfies these constraints.\n"
    "3. Avoid unrequested content.\n"
    "4. Check the response against each constraint and revise any violations before answering."
)


def user_message(text: str, condition: str = "main") -> str:
    """The user message for an instruction under ``condition`` (the meta-prompt is appended
    for ``prompted``, ReFormBench §4.4)."""
    return f"{text.rstrip()}\n\n{META_PROMPT}" if condition == "prompted" else text


def json_object(text: str) -> dict:
    """The JSON object in a model's reply (a fenced code block or surrounding text allowed)."""
    t = (text or "").strip()
    if t.startswith("```"):
        t = t.strip("`")
        t = t[t.find("\n") + 1 :] if "\n" in t else t
    start, end = t.find("{"), t.rfind("}")
    if start < 0 or end < start:
        raise ValueError(f"expected a JSON object, got {text[:200]!r}")
    try:
        obj = json.loads(t[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    return obj


# --- integration -------------------------------------------------------------------------


def integration_messages(question: str, constraints: list[dict]) -> list[dict]:
    """Messages asking an LLM to integrate ``constraints`` (dicts with ``text`` and
    ``acceptance``) into ``question``."""
    if not constraints:
        raise ValueError("constraints: need at least one constraint to integrate")
    listed = "\n".join(
        f"{n}. {c['text']} (accepted when: {c.get('acceptance', '')})" for n, c in enumerate(constraints, 1)
    )
    system = (
        "You write benchmark instructions. Rewrite the user's question so that it naturally includes every "
        "formatting requirement listed. Keep the task, its content and its language unchanged; state every "
        "requirement explicitly with its counts, names and positions; add no other requirement. Answer only "
        'with a JSON object {"instruction": "<the rewritten instruction>"}.'
    )
    user = f"Question:\n{question}\n\nFormatting requirements:\n{listed}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_integration(text: str) -> str:
    """The integrated instruction from the LLM's answer (ValueError if unusable)."""
    obj = json_object(text)
    ins = obj.get("instruction")
    if not isinstance(ins, str) or not ins.strip():
        raise ValueError("field 'instruction': missing or empty")
    return ins.strip()


# --- open-ended feature extraction -------------------------------------------------------


def extraction_messages(response: str, catalog_rows: list[dict]) -> list[dict]:
    """Messages asking an LLM to list a response's formatting features and map them to the
    catalog (``catalog_rows``: dicts with ``key``, ``name``, ``definition``)."""
    listed = "\n".join(f"- {r['key']}: {r['name']} — {r['definition']}" for r in catalog_rows)
    system = (
        "You annotate the formatting of a response. List every observable feature of its organisation or "
        "presentation (layout, structure, lists, fields, framing, markers, blocks). For each give a short name, a "
        "one-sentence description, and how it maps to the catalog below:\n"
        "  exact      — it is one catalog feature;\n"
        "  subtype    — it is a narrower variant of one catalog feature;\n"
        "  composite  — it combines several catalog features (list them all);\n"
        "  uncovered  — no catalog feature describes it;\n"
        "  not_format — it is about content, not formatting.\n"
        'Answer only with JSON: {"features": [{"name": "...", "description": "...", "mapping": "...", '
        '"catalog_features": ["key", ...]}]}.\n\nCatalog:\n' + listed
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": f"Response:\n{response}"}]


def parse_extraction(text: str) -> list[dict]:
    """The extracted features (name, description, mapping, catalog_features) of an answer."""
    obj = json_object(text)
    feats = obj.get("features")
    if not isinstance(feats, list):
        raise ValueError("field 'features': expected a list")
    out = []
    for i, f in enumerate(feats, 1):
        if not isinstance(f, dict) or not str(f.get("name", "")).strip():
            raise ValueError(f"features[{i}]: needs a non-empty 'name'")
        mapping = f.get("mapping")
        if mapping not in MAPPINGS:
            raise ValueError(f"features[{i}].mapping: expected one of {MAPPINGS}, got {mapping!r}")
        keys = f.get("catalog_features") or []
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValueError(f"features[{i}].catalog_features: expected a list of catalog keys")
        out.append(
            {
                "name": str(f["name"]).strip(),
                "description": str(f.get("description", "")),
                "mapping": mapping,
                "catalog_features": keys,
            }
        )
    return out
