"""A judge run again with another prompt version leaves two judgments of one pair: scoring
reads the newest (highest id), an errored newest one is a missing label (NaN), never the older
label; on SQLite and PostgreSQL (the instance id is computed in SQL there: 64-bit on both)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy import text

from db.repo.adjudication import judgment_labels
from reform_core.frames import IID_SHIFT
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.instances import load_judged
from reform_core.services.platform.uow import get_engine

BUNDLE = Path(__file__).resolve().parents[2] / "reform_core" / "demo" / "bundle"
COLS = (
    "judge_id, response_id, constraint_id, prompt_version, label, rationale, status, error, raw, input_tokens, "
    "output_tokens, cost_usd, created_at"
)


def test_newest_judgment_of_a_pair_wins(any_db_url):
    eng = get_engine(any_db_url)
    import_bundle(eng, BUNDLE)
    with eng.begin() as conn:
        judge, name = conn.execute(text("SELECT id, name FROM judge ORDER BY id LIMIT 1")).one()
        two = conn.execute(
            text(
                "SELECT id, response_id, constraint_id, label FROM judgment WHERE judge_id = :j "
                "AND label IS NOT NULL ORDER BY id LIMIT 2"
            ),
            {"j": judge},
        ).all()
        for k, (jid, rid, cid, lab) in enumerate(two):
            # a newer run: the first pair flips its label, the second errs
            label, status = ("1 - label", "ok") if k == 0 else ("NULL", "error")
            conn.execute(
                text(
                    f"INSERT INTO judgment ({COLS}) SELECT judge_id, response_id, constraint_id, 'v-new', "
                    f"{label}, '', :s, '', '', 0, 0, 0, created_at FROM judgment WHERE id = :i"
                ),
                {"i": jid, "s": status},
            )
        n = conn.execute(text("SELECT COUNT(*) FROM judgment WHERE judge_id = :j"), {"j": judge}).scalar_one()
        iid, lab = judgment_labels(conn, judge_id=judge, shift=IID_SHIFT)
    assert len(iid) == n - 2 and np.all(np.diff(iid) > 0)  # one per pair, sorted
    (_, r0, c0, l0), (_, r1, c1, _) = two
    got = dict(zip(iid.tolist(), lab.tolist()))
    assert got[r0 * IID_SHIFT + c0] == 1 - l0
    assert np.isnan(got[r1 * IID_SHIFT + c1])
    inst = load_judged(eng, [name]).set_index("iid")
    assert inst.loc[r0 * IID_SHIFT + c0, f"label_{name}"] == 1 - l0
    assert np.isnan(inst.loc[r1 * IID_SHIFT + c1, f"label_{name}"])


def test_baseline_frame_read_with_the_instances_is_the_baseline_query(any_db_url):
    """Scoring takes the BASELINE frame from the baseline rows the instances were decorated with
    (issue 16: one read of the table): the same rows as ``baseline_present``'s own query, an
    explicitly absent feature left out."""
    import pandas as pd

    from db.repo.scoring import baseline_present
    from reform_core.services.data.instances import load_judged_with_baseline

    eng = get_engine(any_db_url)
    import_bundle(eng, BUNDLE)
    with eng.begin() as conn:
        conn.execute(
            text("UPDATE baseline_feature SET present = :f WHERE id = (SELECT MIN(id) FROM baseline_feature)"),
            {"f": False},
        )
        judge = conn.execute(text("SELECT name FROM judge ORDER BY id LIMIT 1")).scalar_one()
    _, got = load_judged_with_baseline(eng, [judge])
    with eng.connect() as conn:
        want = baseline_present(conn)
    assert 0 < len(got) == len(want)

    def rows(df):
        return df.astype(str).sort_values(["model", "question", "feature"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(rows(got), rows(want))
