"""Property tests of ``sampling.allocate`` (docs/metrics.md#allocation: sum = n whenever
n ≥ the number of non-empty strata)."""

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from reform_core.sampling import allocate


def test_minimum_per_stratum_does_not_inflate_the_total():
    """Pins issue 14: allocate([1000, 1, 1, 1], 4) returned 6 units where [1, 1, 1, 1] meets every rule."""
    out = allocate(pd.Series([1000, 1, 1, 1], index=list("abcd")), 4)
    assert out.tolist() == [1, 1, 1, 1]
    assert allocate(pd.Series([1000, 1, 1, 1], index=list("abcd")), 5).tolist() == [2, 1, 1, 1]


sizes_strategy = st.lists(
    st.one_of(st.integers(0, 3), st.integers(0, 40), st.integers(0, 5000)), min_size=1, max_size=9
)


@settings(max_examples=400, deadline=None)
@given(sizes=sizes_strategy, n=st.integers(1, 12000))
def test_allocation_rules_hold(sizes, n):
    keys = [f"s{i}" for i in range(len(sizes))]
    out = allocate(pd.Series(sizes, index=keys), n)
    a, N = out.to_numpy(), np.array(sizes)
    total, nonempty = int(N.sum()), N > 0
    assert list(out.index) == keys
    if total == 0:
        assert a.sum() == 0
        return
    target = min(n, total)
    # the total is exactly n' = min(n, N) whenever n' covers every non-empty stratum
    assert a.sum() == max(target, int(nonempty.sum()))
    # every non-empty stratum at least one, none above its size, empty strata nothing
    assert (a[nonempty] >= 1).all() and (a <= N).all() and (a[~nonempty] == 0).all()
    # proportional: never more than the proportional quota rounded up (except the minimum one) ...
    quota = target * N / total
    assert all(a[h] <= max(1, math.ceil(quota[h] - 1e-9)) for h in np.flatnonzero(nonempty))
    # ... and never less than its floor unless the minimums had to be paid for
    if np.maximum(1, np.floor(quota[nonempty])).sum() <= target:
        assert (a >= np.floor(quota)).all()
    # a smaller stratum never gets more than one unit above a larger one
    for h in range(len(N)):
        for g in range(len(N)):
            if N[h] <= N[g]:
                assert a[h] <= a[g] + 1


@settings(max_examples=200, deadline=None)
@given(sizes=sizes_strategy, n=st.integers(1, 3000), seed=st.integers(0, 2**16))
def test_allocation_does_not_depend_on_row_order(sizes, n, seed):
    s = pd.Series(sizes, index=[f"s{i}" for i in range(len(sizes))])
    shuffled = s.iloc[np.random.default_rng(seed).permutation(len(s))]
    assert allocate(shuffled, n).sort_index().equals(allocate(s, n).sort_index())
