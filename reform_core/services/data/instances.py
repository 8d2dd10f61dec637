"""Load the INSTANCES and ADJUDICATIONS frames (``reform_core.frames``) of a judge pair.

The scoring, export and adjudication services all start here. Each judge's labels come
from one index scan of ``judgment``; responses, constraints, instructions, questions,
models and the baseline features come from one query each and are joined in numpy by id.
That is about twice as fast on SQLite as one SQL join over all six tables (the join walks
150,000 × 4 index probes at paper scale) and keeps a paper-scale project (150,000
instances) under 1.5 s.

* ``iid`` = ``response_id · 2³² + constraint_id`` (stable, see :func:`instance_id`).
* ``baseline_opposed`` (docs/metrics.md#targets-and-baseline-opposition): a constraint is
  opposed iff it forbids a feature present in the model's baseline response to the question,
  or requires one absent from it;
  ``<NA>`` (pandas ``boolean``) where the (model, question) has no baseline annotation —
  unknown is never "absent" (docs/metrics.md#missing-data; see :func:`_in_baseline`).
* Label columns are ``label_<judge name>`` (:func:`label_column`); the frame's
  ``attrs["judge_a"]`` / ``attrs["judge_b"]`` hold the two column names.
* A judge with several judgments of the same pair (prompt versions) counts with its newest.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import adjudication as repo
from reform_core.frames import IID_SHIFT, MODES

INSTANCE_COLUMNS = [
    "iid",
    "model",
    "question",
    "instruction",
    "condition",
    "pair_group",
    "task_type",
    "domain",
    "position",
    "feature",
    "category",
    "mode",
    "baseline_opposed",
]
ADJUDICATION_COLUMNS = ["iid", "a", "annotator", "choice", "task_id", "adjudication_id", "kind", "seconds"]
_SHIFT = np.int64(IID_SHIFT)


def label_column(judge: str) -> str:
    """The INSTANCES column holding ``judge``'s labels."""
    return f"label_{judge}"


def instance_id(response_id, constraint_id) -> np.ndarray:
    """Stable instance id of (response, constraint): ``response_id · 2³² + constraint_id``."""
    return np.asarray(response_id, dtype=np.int64) * _SHIFT + np.asarray(constraint_id, dtype=np.int64)


def _judge_pair(conn, judge_a: str, judge_b: str) -> tuple[int, int]:
    if judge_a == judge_b:
        raise ValueError(f"judge_a and judge_b must differ, both are {judge_a!r}")
    ids = _judge_ids(conn, [judge_a, judge_b])
    return ids[0], ids[1]


def _judge_ids(conn, names) -> list[int]:
    ids = repo.judge_ids(conn, names=list(names))
    for name in names:
        if name not in ids:
            known = ", ".join(repo.judge_names(conn)) or "none"
            raise ValueError(f"unknown judge {name!r} (judges in this project: {known})")
    return [ids[n] for n in names]


def _in_baseline(
    model_id: np.ndarray, question_id: np.ndarray, feature_code: np.ndarray, features: pd.Index, base: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """``(present, known)`` of each (model, question, feature) in the model's baseline response.

    ``feature_code`` indexes ``features``; baseline rows outside ``features`` never match.
    ``base`` holds every baseline annotation row (``model_id, question_id, feature,
    present``). Known: the (model, question) has a baseline annotation and either lists
    only present features (the bundle's positive list: absent means absent) or has a row
    for this feature (an explicit present/absent annotation, e.g. ``annotate-baseline``,
    where a feature it did not decide stays unknown).
    """
    n_f = len(features) + 1
    n_q = int(max(question_id.max(initial=0), base["question_id"].max() if len(base) else 0)) + 1
    b_mq = base["model_id"].to_numpy(np.int64) * n_q + base["question_id"].to_numpy(np.int64)
    b_present = base["present"].to_numpy(dtype=bool) if len(base) else np.zeros(0, dtype=bool)
    bcode = features.get_indexer(base["feature"].to_numpy(dtype=object))
    keep = bcode >= 0
    bkey = b_mq[keep] * n_f + bcode[keep]
    mq = model_id * n_q + question_id
    key = mq * n_f + feature_code
    present = np.isin(key, bkey[b_present[keep]])
    explicit = np.isin(mq, b_mq[~b_present])
    known = np.isin(mq, b_mq) & (~explicit | np.isin(key, bkey))
    return present, known


def _all_pairs(keys: dict[str, pd.DataFrame]) -> np.ndarray:
    """Instance ids of every constrained response × every constraint of its instruction."""
    resp = keys["responses"]
    resp = resp[resp["instruction_id"].notna()]
    pairs = pd.DataFrame({"r": resp["id"].to_numpy(np.int64), "i": resp["instruction_id"].to_numpy(np.int64)}).merge(
        pd.DataFrame(
            {
                "c": keys["constraints"]["id"].to_numpy(np.int64),
                "i": keys["constraints"]["instruction_id"].to_numpy(np.int64),
            }
        ),
        on="i",
    )
    return instance_id(pairs["r"].to_numpy(), pairs["c"].to_numpy())


def _lookup(keys: pd.DataFrame, ids: np.ndarray, what: str) -> np.ndarray:
    """Positions in ``keys`` (by its ``id`` column) of ``ids``; ValueError if one is missing."""
    pos = pd.Index(keys["id"].astype(np.int64)).get_indexer(np.asarray(ids, dtype=np.int64))
    if (pos < 0).any():
        raise ValueError(f"{what} id {int(np.asarray(ids)[pos < 0][0])} is referenced but missing")
    return pos


def _strings(keys: pd.DataFrame, name: str, pos: np.ndarray):
    """Column ``name`` of a small key table, gathered at ``pos`` (a cheap string take)."""
    return pd.array(keys[name].astype(str).to_numpy(dtype=object), dtype="str").take(pos)


def load_instances(engine: Engine, judge_a: str, judge_b: str) -> pd.DataFrame:
    """The INSTANCES frame of judge pair (``judge_a``, ``judge_b``), every condition.

    As :func:`load_judged` with the two judges; ``attrs["judge_a"]`` / ``attrs["judge_b"]``
    name their label columns.
    """
    if judge_a == judge_b:
        raise ValueError(f"judge_a and judge_b must differ, both are {judge_a!r}")
    out = load_judged(engine, [judge_a, judge_b])
    out.attrs.update(judge_a=label_column(judge_a), judge_b=label_column(judge_b))
    return out


def load_judged(engine: Engine, judges) -> pd.DataFrame:
    """The INSTANCES frame with the labels of every judge in ``judges`` (one or more), every condition.

    Parameters
    ----------
    engine : Engine
        The project database.
    judges : sequence of str
        Judge names; label columns ``label_<name>`` (1.0 / 0.0 / NaN for missing or errored).

    Returns
    -------
    DataFrame
        :data:`INSTANCE_COLUMNS`, one label column per judge, ``response_id`` and
        ``constraint_id``; one row per (constrained response, constraint of its instruction)
        — judged or not: a pair no judge labelled has NaN labels, so scoring can leave its
        instruction out and count it instead of never seeing it — sorted by ``iid``.
    """
    return _load_judged(engine, judges)[0]


def load_judged_with_baseline(engine: Engine, judges) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`load_judged` and the BASELINE frame (``model, question, feature`` of every feature
    present in a baseline response: :func:`db.repo.scoring.baseline_present`), the latter from
    the baseline rows the instances were decorated with (one read of the table, not two)."""
    out, keys = _load_judged(engine, judges)
    base = keys["baseline"]
    present = base[base["present"].astype(bool).to_numpy()] if len(base) else base
    mpos = _lookup(keys["models"], present["model_id"].to_numpy(np.int64), "model")
    qpos = _lookup(keys["questions"], present["question_id"].to_numpy(np.int64), "question")
    baseline = pd.DataFrame(
        {
            "model": _strings(keys["models"], "name", mpos),
            "question": _strings(keys["questions"], "key", qpos),
            "feature": pd.array(present["feature"].astype(str).to_numpy(dtype=object), dtype="str"),
        }
    )
    return out, baseline


def _load_judged(engine: Engine, judges) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    judges = list(dict.fromkeys(judges))
    if not judges:
        raise ValueError("judges: name at least one judge")
    with engine.connect() as conn:
        labels = [repo.judgment_labels(conn, judge_id=j, shift=IID_SHIFT) for j in _judge_ids(conn, judges)]
        keys = repo.instance_keys(conn)
    iid = np.unique(np.concatenate([ids for ids, _ in labels] + [_all_pairs(keys)])).astype(np.int64)
    lab = []
    for ids, values in labels:
        x = np.full(len(iid), np.nan)
        x[np.searchsorted(iid, ids)] = values
        lab.append(x)
    response_id, constraint_id = iid // _SHIFT, iid % _SHIFT

    rpos = _lookup(keys["responses"], response_id, "response")
    model_id = keys["responses"]["model_id"].to_numpy(np.int64)[rpos]
    con = keys["constraints"]
    cpos = _lookup(con, constraint_id, "constraint")
    mode = con["mode"].to_numpy(dtype=object)[cpos]
    bad = ~np.isin(mode, MODES)
    if bad.any():
        raise ValueError(f"constraint {int(constraint_id[bad][0])} has mode {mode[bad][0]!r}; expected one of {MODES}")
    ins = keys["instructions"]
    ipos = _lookup(ins, con["instruction_id"].to_numpy(np.int64)[cpos], "instruction")
    question_id = ins["question_id"].to_numpy(np.int64)[ipos]
    qs = keys["questions"]
    qpos = _lookup(qs, question_id, "question")
    mpos = _lookup(keys["models"], model_id, "model")
    fcode, features = pd.factorize(con["feature"].to_numpy(dtype=object))
    present, known = _in_baseline(model_id, question_id, fcode[cpos], pd.Index(features), keys["baseline"])
    opposed = pd.array(np.where(mode == "forbid", present, ~present), dtype="boolean")
    opposed[~known] = pd.NA
    out = pd.DataFrame(
        {
            "iid": iid,
            "model": _strings(keys["models"], "name", mpos),
            "question": _strings(qs, "key", qpos),
            "instruction": _strings(ins, "key", ipos),
            "condition": _strings(ins, "condition", ipos),
            "pair_group": _strings(ins, "pair_group", ipos),
            "task_type": _strings(qs, "task_type", qpos),
            "domain": _strings(qs, "domain", qpos),
            "position": con["position"].to_numpy(np.int64)[cpos],
            "feature": _strings(con, "feature", cpos),
            "category": _strings(con, "category", cpos),
            "mode": _strings(con, "mode", cpos),
            "baseline_opposed": opposed,
            **{label_column(name): x for name, x in zip(judges, lab)},
            "response_id": response_id,
            "constraint_id": constraint_id,
        }
    )
    return out, keys


def current_decisions(rows: pd.DataFrame) -> pd.DataFrame:
    """Current rows of an adjudication history (``db.repo.adjudication.adjudication_rows``):
    not superseded and not a retraction."""
    if rows.empty:
        return rows
    superseded = set(rows["supersedes_id"].dropna().astype(np.int64))
    keep = ~rows["id"].isin(superseded) & (rows["choice"] != repo.RETRACTED)
    return rows[keep]


def load_adjudications(engine: Engine, judge_a: str, judge_b: str) -> pd.DataFrame:
    """The ADJUDICATIONS frame of a judge pair: one current decision per instance.

    Decisions of every plan of the pair count (a plan stored as (B, A) has its ``choice``
    mapped to this order). With several annotators on one instance (double adjudication)
    the earliest usable decision is the calibration label; "neither/unsure" decisions (no
    label) are dropped.

    Returns
    -------
    DataFrame
        :data:`ADJUDICATION_COLUMNS`: ``iid``, ``a`` (1.0 / 0.0), ``annotator``, ``choice``
        ("A" / "B" relative to ``judge_a`` / ``judge_b``), ``task_id``, ``adjudication_id``,
        ``kind`` (disagreement / audit), ``seconds``.
    """
    with engine.connect() as conn:
        ja, jb = _judge_pair(conn, judge_a, judge_b)
        rows = repo.adjudication_rows(conn, judge_a_id=ja, judge_b_id=jb)
    cur = current_decisions(rows)
    cur = cur[cur["label"].notna()].sort_values("id")
    swapped = cur["judge_a_id"].to_numpy() != ja
    choice = cur["choice"].to_numpy(dtype=object).copy()
    choice[swapped] = np.where(choice[swapped] == "A", "B", np.where(choice[swapped] == "B", "A", choice[swapped]))
    out = pd.DataFrame(
        {
            "iid": instance_id(cur["response_id"], cur["constraint_id"]),
            "a": cur["label"].astype(float).to_numpy(),
            "annotator": cur["annotator"].to_numpy(dtype=object),
            "choice": choice,
            "task_id": cur["task_id"].to_numpy(np.int64),
            "adjudication_id": cur["id"].to_numpy(np.int64),
            "kind": cur["kind"].to_numpy(dtype=object),
            "seconds": cur["seconds"].astype(float).to_numpy(),
        }
    )
    return out.drop_duplicates("iid", keep="first").reset_index(drop=True)
