"""``main_adjudications`` keeps the decisions on main-condition instances; it now looks them up in
an Index of the frame's main iids kept while the frame lives (rescoring reuses the frame after every
decision). Same rows as the literal filter, for the same frame twice and for a changed frame."""

import numpy as np
import pandas as pd

from reform_core.services.scoring.scoring import ProjectFrames, main_adjudications


def _literal(inst, adj):
    return adj[adj["iid"].isin(inst.loc[inst["condition"] == "main", "iid"])]


def test_main_adjudications_match_the_literal_filter():
    rng = np.random.default_rng(1)
    inst = pd.DataFrame({"iid": np.arange(0, 2000, 2), "condition": rng.choice(["main", "single", "prompted"], 1000)})
    adj = pd.DataFrame({"iid": rng.choice(np.arange(0, 2100), 300, replace=False), "a": rng.random(300)})
    frames = ProjectFrames(inst, pd.DataFrame(), adj, "judge_a", "judge_b")
    want = _literal(inst, adj)
    assert 0 < len(want) < len(adj)
    for _ in range(2):  # the second call uses the kept Index
        pd.testing.assert_frame_equal(main_adjudications(frames), want)
    other = inst.assign(condition="main")  # a new frame: its own Index
    pd.testing.assert_frame_equal(
        main_adjudications(ProjectFrames(other, pd.DataFrame(), adj, "judge_a", "judge_b")), _literal(other, adj)
    )
