"""Baseline feature extraction, pure parts (ReFormBench, arXiv:2610.19693, §3.3, App. A.4,
A.6, A.7.3; docs/metrics.md#catalog-coverage).

* :func:`merge_detections` — one catalog annotation per (model, question, feature): rule
  detectors decide the features they cover, the LLM decides the others.
* :func:`map_extracted` — open-ended extracted features mapped to the catalog as
  ``exact | subtype | composite | uncovered | not_format`` (the EXTRACTED frame of
  :mod:`reform_core.metrics.coverage`).
* :func:`catalog_annotations` — the mapped catalog features, once per response (App. A.4:
  "each mapped catalog feature is counted at most once per response").
"""

from __future__ import annotations

import re

import pandas as pd

from reform_core.catalog import Catalog

DETECTION_COLUMNS = ["model", "question", "feature", "present", "source", "evidence"]
MAPPED_COLUMNS = ["model", "question", "name", "mapping", "features", "dropped"]


def _require(df: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; has {list(df.columns)}")


def merge_detections(rule: pd.DataFrame, llm: pd.DataFrame, *, rule_keys) -> pd.DataFrame:
    """Merge rule and LLM presence decisions into one BASELINE-like frame.

    Parameters
    ----------
    rule, llm : DataFrame
        ``model, question, feature, present`` (+ optional ``evidence``).
    rule_keys : iterable of str
        Features decided by rule detectors; for these the rule decision wins, for all
        others the LLM's. A decision only one source made is kept whatever the feature.

    Returns
    -------
    DataFrame ``model, question, feature, present, source`` (``rule`` | ``llm``), ``evidence``,
    one row per (model, question, feature), sorted.
    """
    key = ["model", "question", "feature"]
    frames = []
    for df, source in ((rule, "rule"), (llm, "llm")):
        _require(df, key + ["present"], f"{source} detections")
        d = df.copy()
        if d.duplicated(key).any():
            dup = d[d.duplicated(key)].iloc[0]
            raise ValueError(f"{source} detections: duplicate row for {tuple(dup[key])}")
        d["source"] = source
        d["evidence"] = d["evidence"].fillna("").astype(str) if "evidence" in d else ""
        d["present"] = d["present"].astype(bool)
        frames.append(d[DETECTION_COLUMNS])
    both = pd.concat(frames, ignore_index=True)
    rule_keys = set(rule_keys)
    preferred = both["source"].where(both["feature"].isin(rule_keys), "llm") == both["source"]
    both = both.assign(_rank=(~preferred).astype(int)).sort_values(key + ["_rank"], kind="mergesort")
    return both.drop_duplicates(key).drop(columns="_rank").reset_index(drop=True)


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", str(s).lower()).strip()


def map_extracted(extracted: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """Normalise open-ended extractions to catalog mappings (ReFormBench App. A.4, A.6).

    Rules, in order: ``not_format`` stays (no catalog features); unknown catalog keys are
    dropped (listed in ``dropped``); a name equal to a catalog feature's name or key
    (ignoring case and punctuation) is ``exact`` for that feature; no remaining key is
    ``uncovered``; two or more keys are ``composite``; one key is ``exact`` if labelled so,
    else ``subtype``.

    Parameters
    ----------
    extracted : DataFrame
        ``model, question, name, mapping, catalog_features`` (list of keys).

    Returns
    -------
    DataFrame ``model, question, name, mapping, features`` (tuple), ``dropped`` (tuple).
    """
    _require(extracted, ["model", "question", "name", "mapping", "catalog_features"], "extracted")
    by_name = {}
    for f in catalog:
        by_name[_norm(f.name)] = f.key
        by_name[_norm(f.key)] = f.key
    rows = []
    for r in extracted.itertuples(index=False):
        keys = list(r.catalog_features) if isinstance(r.catalog_features, (list, tuple)) else []
        valid = tuple(dict.fromkeys(k for k in keys if k in catalog))
        dropped = tuple(k for k in keys if k not in catalog)
        named = by_name.get(_norm(r.name))
        if r.mapping == "not_format":
            mapping, valid = "not_format", ()
        elif named is not None:
            mapping, valid = "exact", (named,)
        elif not valid:
            mapping = "uncovered"
        elif len(valid) > 1:
            mapping = "composite"
        else:
            mapping = "exact" if r.mapping == "exact" else "subtype"
        rows.append(
            {
                "model": r.model,
                "question": r.question,
                "name": r.name,
                "mapping": mapping,
                "features": valid,
                "dropped": dropped,
            }
        )
    return pd.DataFrame(rows, columns=MAPPED_COLUMNS)


def catalog_annotations(mapped: pd.DataFrame) -> pd.DataFrame:
    """``model, question, feature``: each covered catalog feature once per response."""
    _require(mapped, ["model", "question", "features"], "mapped")
    out = mapped[["model", "question", "features"]].explode("features").dropna(subset=["features"])
    out = out.rename(columns={"features": "feature"}).drop_duplicates()
    return out.sort_values(["model", "question", "feature"]).reset_index(drop=True)
