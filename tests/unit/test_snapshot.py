"""``reform.snapshot`` / ``same_as_snapshot``: the exact memo keys of the label-dependent parts the
Scores page keeps across decisions (the estimator's design, Table A3's label counts). Any changed
value, NaN pattern, dtype or shape must make the key differ; equal values must match."""

from __future__ import annotations

import numpy as np

from reform_core.unit_index import same_as_snapshot, snapshot


def test_equal_values_match_and_any_change_does_not():
    rng = np.random.default_rng(0)
    g = rng.choice([0.0, 1.0, np.nan], size=1000)
    p = rng.random(1000)  # not labels: kept as a raw copy
    ids = rng.permutation(5000)[:1000].astype(np.int64)
    names = np.array([f"m{i % 7}" for i in range(1000)], dtype=object)
    snap = snapshot(g, p, ids, names)
    assert snap[0][0] == "labels" and snap[0][3].dtype == np.int8 and snap[1][0] == "raw"
    assert same_as_snapshot(snap, g.copy(), p.copy(), ids.copy(), names.copy())
    for i, changed in enumerate((g, p, ids, names)):
        arrays = [g.copy(), p.copy(), ids.copy(), names.copy()]
        a = arrays[i]
        a[17] = {0: 1.0 - np.nan_to_num(g[17]), 1: p[17] + 1e-12, 2: ids[17] + 1, 3: "other"}[i]
        assert not same_as_snapshot(snap, *arrays), i
    nan_at = int(np.flatnonzero(np.isnan(g))[0])
    for v in (2.0, 0.0):  # a NaN filled in (with the code value itself, or a label)
        h = g.copy()
        h[nan_at] = v
        assert not same_as_snapshot(snap, h, p, ids, names)
    h = g.copy()
    h[int(np.flatnonzero(g == 1)[0])] = np.nan  # a label removed
    assert not same_as_snapshot(snap, h, p, ids, names)
    assert not same_as_snapshot(snap, g.astype(np.float32), p, ids, names)  # dtype
    assert not same_as_snapshot(snap, g[:-1], p, ids, names)  # shape
    assert not same_as_snapshot(snap, g, p, ids)  # arity
    assert not same_as_snapshot(None, g, p, ids, names)


def test_the_copy_is_independent_of_later_writes():
    a = np.array([0.0, 1.0, 1.0])
    snap = snapshot(a)
    a[0] = 1.0
    assert not same_as_snapshot(snap, a)
    assert same_as_snapshot(snap, np.array([0.0, 1.0, 1.0]))
