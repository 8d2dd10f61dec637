"""Item estimates at any moment of the work: every decision counts from the moment it is made.

An item's decisions come one after another: its first decision, then — where the plan asks
for more (an item doubled from the start, or a first opinion against the plan's reference
under the second-opinion rule) — a second, and a third on an audit. Let ``f_k`` be the
least-variance unbiased estimate of the item's truth under the rule *cut at its k-th decision*
(``f_1`` the classical correction of the first decision; ``f_D`` the full rule's, what a
finished plan uses: :mod:`reform_core.estimators.adjudicator_error`). Each ``f_k`` is unbiased
for the truth, so every increment ``Δ_k = f_k − f_{k−1}`` has expectation zero, and

    ``ỹ = f_1 + Σ_{k ≥ 2} W_k Δ_k``

is unbiased for any weights that do not depend on the item's answers. An increment is known
without the k-th decision where the rule stopped before it (a decision equal to the reference
came first) or never asks for it: weight 1. Where it needs the k-th decision, the items that
have it are a second-phase sample of those that need it (the queue serves them in an order
that does not depend on their answers): weight ``1/π_k`` on those that have it, 0 on those
awaiting it, ``π_k`` their share within the item's stratum — the caller's strata (model × kind),
with the rule's items apart from those doubled from the start (Horvitz–Thompson; Särndal, Swensson
& Wretman 1992, §9.3 two-phase sampling). Where no item of a stratum has its k-th decision yet,
the stratum's increments are left out (weight 0): still unbiased, since each has expectation 0.
An increment's weight ``W_k`` is the product of the phases' weights along the item's path (its
later increments follow an earlier one that was left out or reweighted: nested two-phase
sampling).
When every item has the decisions its rule asks for, every weight is 1 and ``ỹ = f_D``: the
finished plan's estimate, exactly.

The noise variance of ``ỹ`` is that of the deepest ``f_k`` it uses, plus the second phase's
``(1 − π_k)/π_k² Δ_k²`` for each reweighted increment (its Horvitz–Thompson variance estimate).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reform_core.estimators.adjudicator_error import ErrorModel, FixedItems, SequentialItems

MAX_PHASES = 3


def _first(decisions: pd.DataFrame, k: int, item: str) -> pd.DataFrame:
    """Each item's first ``k`` decisions, in the order they were made."""
    return decisions[decisions.groupby(item, sort=False).cumcount().to_numpy() < k]


class PhasedLayout:
    """The decided items, prepared once (module docstring): ``reference`` — each item's reference
    label under the opinion rule (NaN: a fixed number of decisions), ``depth`` — the rule's most
    decisions, ``required`` — a fixed item's decisions from the start (1, or 2 when doubled),
    ``stratum`` — the second phase's strata (e.g. model × kind). :meth:`estimate` gives
    ``y_tilde, var`` per item under an error model (the bootstrap refits reuse the layout)."""

    def __init__(
        self,
        decisions: pd.DataFrame,
        prior: pd.Series,
        reference: pd.Series,
        depth: pd.Series,
        required: pd.Series,
        stratum: pd.Series,
        *,
        item: str = "iid",
        annotator: str = "annotator",
        label: str = "h",
    ):
        self.item, self.annotator, self.label = item, annotator, label
        self.items = pd.Index(pd.unique(decisions[item]), name=item)
        ref = reference.reindex(self.items).to_numpy(dtype=float)
        self.rule = np.isfinite(ref)
        self.n_dec = decisions.groupby(item, sort=False).size().reindex(self.items).to_numpy()
        h = pd.to_numeric(decisions[label], errors="coerce").to_numpy(dtype=float)
        rank = decisions.groupby(item, sort=False).cumcount().to_numpy()
        codes = self.items.get_indexer(decisions[item])
        never = 1 << 20
        hit = np.full(len(self.items), never)
        np.minimum.at(hit, codes, np.where(h == ref[codes], rank, never))  # position of the first decision = ref
        self.depth_rule = depth.reindex(self.items).fillna(2).to_numpy(dtype=np.int64)
        self.required = required.reindex(self.items).fillna(1).to_numpy(dtype=np.int64)
        self.stop = np.where(self.rule, np.minimum(hit + 1, self.depth_rule), self.required)  # decisions the rule asks
        # items doubled from the start and items of the rule are apart: whether a later opinion is owed
        # depends on the answers under the rule, never for a doubled item
        self.stratum = pd.factorize(
            stratum.reindex(self.items).astype(str).to_numpy() + np.where(self.rule, "|rule", "")
        )[0]
        self.parts = {
            k: self._layouts(decisions, prior, reference, depth, k)
            for k in range(1, min(int(max(self.n_dec.max(initial=1), self.stop.max(initial=1))), 6) + 1)
        }

    def _layouts(self, decisions, prior, reference, depth, k: int):
        """The estimators of the rule cut at ``k`` decisions, for the items whose cut outcome is known
        (as :class:`~reform_core.estimators.adjudicator_error.ItemLayout` would make them from those
        decisions: the later annotators' shares from the same decisions)."""
        known = self.n_dec >= np.minimum(k, self.stop)
        d = _first(decisions[decisions[self.item].isin(self.items[known])], k, self.item)
        share = d[self.annotator].astype(str).value_counts().sort_index()
        rule = d[self.item].isin(self.items[self.rule]).to_numpy()
        kw = dict(item=self.item, annotator=self.annotator, label=self.label)
        out = []
        if (~rule).any():
            out.append(FixedItems(d[~rule], prior, **kw))
        if rule.any():
            cut = depth.reindex(pd.unique(d.loc[rule, self.item])).fillna(2).clip(upper=k).astype(np.int64)
            out.append(SequentialItems(d[rule], prior, reference, share, cut, **kw))
        return out

    def _values(self, model: ErrorModel, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``f_k`` and its variance per item (NaN where the cut outcome is not known)."""
        got = [p.estimate(model) for p in self.parts[k]]
        if not got:
            return np.full(len(self.items), np.nan), np.full(len(self.items), np.nan)
        frame = (got[0] if len(got) == 1 else pd.concat(got)).reindex(self.items)
        return frame["y_tilde"].to_numpy(dtype=float), frame["var"].to_numpy(dtype=float)

    def weights(self, k: int) -> np.ndarray:
        """Each item's weight on its k-th increment (module docstring)."""
        # the items owed a k-th decision among those whose (k−1)-th outcome is known: the second
        # phase's frame (an item still owed an earlier opinion is not known to need this one)
        needed = (self.stop >= k) & (self.n_dec >= np.minimum(k - 1, self.stop))
        have = needed & (self.n_dec >= k)
        n_strata = int(self.stratum.max(initial=-1)) + 1
        n_need = np.bincount(self.stratum, needed, minlength=n_strata)
        n_have = np.bincount(self.stratum, have, minlength=n_strata)
        pi = np.where(n_need > 0, n_have / np.maximum(n_need, 1), 1.0)[self.stratum]
        w = np.where(needed, np.where(have, 1.0 / np.where(pi > 0, pi, 1.0), 0.0), 1.0)
        return np.where(pi > 0, w, 0.0)

    @property
    def complete(self) -> bool:
        """Whether every item has the decisions its rule asks for (then ``ỹ`` is the full rule's)."""
        return bool((self.n_dec >= self.stop).all())

    def estimate(self, model: ErrorModel) -> pd.DataFrame:
        y, v = self._values(model, 1)
        prev, w = y.copy(), np.ones(len(y))
        for k in range(2, max(self.parts) + 1):
            fk, vk = self._values(model, k)
            # the phases' weights multiply along an item's path: a later increment of an item whose
            # earlier phase was left out (or reweighted) follows it
            w = w * np.where(np.isnan(fk), 0.0, self.weights(k))
            use = w > 0
            delta = np.where(use, fk - prev, 0.0)
            y = y + w * delta
            v = np.where(use, vk + np.where(w > 1, (w - 1.0) * w * delta**2, 0.0), v)
            prev = np.where(np.isnan(fk), prev, fk)
        return pd.DataFrame({"y_tilde": y, "var": np.maximum(v, 0.0)}, index=self.items)
