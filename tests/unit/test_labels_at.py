"""``estimates._labels_at``: the judges' labels of a plan's decided instances, looked up by binary
search in rows sorted by iid (the Scores page reruns it after every decision) — the same values as
pandas' ``set_index("iid").reindex`` on sorted and on shuffled rows, NaN for an iid not in the rows."""

import numpy as np
import pandas as pd

from reform_core.services.scoring.estimates import _labels_at


def test_labels_at_matches_reindex():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "iid": np.sort(rng.choice(10**6, 1000, replace=False)),
            "label_a": rng.integers(0, 2, 1000).astype(float),
            "label_b": rng.integers(0, 2, 1000).astype(float),
        }
    )
    df.loc[5, "label_a"] = np.nan
    ids = df["iid"].to_numpy()
    q = np.r_[ids[[3, 5, 999, 0]], [-1, 10**7, ids[10] + 1]]
    want = df.set_index("iid")[["label_a", "label_b"]].reindex(q)
    for frame in (df, df.sample(frac=1, random_state=1)):
        g, m = _labels_at(frame, q, "label_a", "label_b")
        np.testing.assert_array_equal(g, want["label_a"].to_numpy())
        np.testing.assert_array_equal(m, want["label_b"].to_numpy())
    g, m = _labels_at(df.iloc[:0], q, "label_a", "label_b")
    assert np.isnan(g).all() and np.isnan(m).all()
