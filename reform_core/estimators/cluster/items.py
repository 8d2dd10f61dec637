"""Step 3 of the default estimator: the decisions, the adjudicator-error model and each decided
item's estimate of its truth.

The error model (:mod:`reform_core.estimators.adjudicator_error`) is fitted on the decisions of
the observed rows; :func:`classical` gives each decided item the classical debiased value (used
to fit the predictions), :func:`item_values` its least-variance unbiased estimate with the
item's prediction as prior, and that estimate's noise variance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reform_core.estimators import adjudicator_error as ae
from reform_core.estimators.cluster.layout import Layout, rows_of_items
from reform_core.estimators.cluster.progress import Progress
from reform_core.estimators.opinion_phases import PhasedLayout
from reform_core.frames import INSTANCE_KEY


@dataclass
class Decisions:
    """The decisions on observed rows (``dec``: ``iid, annotator, h, group``), each one's row
    (``pos``), the error model, and the opinion rule's reference and depth of each decided item."""

    dec: pd.DataFrame
    pos: np.ndarray
    error_model: ae.ErrorModel
    item_ref: pd.Series | None
    item_depth: pd.Series | None
    notes: list
    item_required: pd.Series | None = None  # decisions asked from the start (2: doubled), by item
    item_stratum: pd.Series | None = None  # the second phase's strata of the later opinions (model × kind), by item
    complete: bool = True  # every decided item has the decisions its rule asks for


def decisions_used(
    lay: Layout,
    prog: Progress,
    decisions: pd.DataFrame,
    g: np.ndarray,
    m: np.ndarray,
    error_model: ae.ErrorModel | None,
) -> Decisions:
    """The decisions on observed disagreements and audited agreements, and the error model fitted
    on them (infallible adjudicators, with a note, when no item was decided twice)."""
    dec_pos = np.where(prog.slot >= 0, lay.need_pos[np.maximum(prog.slot, 0)], -1)  # each decision's row (-1: none)
    used = dec_pos >= 0
    used[used] = (prog.obs_dis | prog.audited)[dec_pos[used]]
    dec = decisions[used].copy()
    pos = dec_pos[used]
    dis = g != m
    dec["group"] = np.where(dis[pos], np.where(g[pos] == 1, "A1B0", "A0B1"), np.where(g[pos] == 1, "agree1", "agree0"))
    notes = []
    if error_model is None:
        error_model = ae.fit(dec) if len(dec) else ae.perfect()
        if not error_model.identified:
            error_model = ae.perfect(dec["annotator"].astype(str).unique())
            if len(dec):
                notes.append("no item was decided twice: adjudicator error cannot be estimated and is assumed zero")
    item_ref = prog.reference.reindex(dec[INSTANCE_KEY].unique()) if prog.reference is not None and len(dec) else None
    item_depth = prog.depth.reindex(item_ref.index) if prog.depth is not None and item_ref is not None else None
    slot = prog.slot[used]
    items = pd.unique(dec[INSTANCE_KEY])
    first = pd.Series(np.arange(len(dec))).groupby(dec[INSTANCE_KEY].to_numpy()).first().reindex(items).to_numpy()
    required = pd.Series(lay.need_required[slot][first] if lay.need_required is not None else 1, index=items)
    stratum = pd.Series(lay.clusters.row_model[pos][first] * 2 + (g == m)[pos][first], index=items)
    n_dec = dec.groupby(INSTANCE_KEY, sort=False).size().reindex(items).to_numpy()
    complete = not pd.Index(items).isin(prog.pending).any() and bool((n_dec >= required.to_numpy()).all())
    return Decisions(
        dec=dec,
        pos=pos,
        error_model=error_model,
        item_ref=item_ref,
        item_depth=item_depth,
        notes=notes,
        item_required=required,
        item_stratum=stratum,
        complete=complete,
    )


def _phased(d: Decisions, prior: pd.Series) -> PhasedLayout:
    """The items' layout while some await another opinion (:mod:`reform_core.estimators.opinion_phases`)."""
    ref = d.item_ref if d.item_ref is not None else pd.Series(np.nan, index=d.item_required.index)
    depth = d.item_depth if d.item_depth is not None else pd.Series(2, index=ref.index)
    return PhasedLayout(d.dec, prior, ref, depth, d.item_required, d.item_stratum)


def classical(lay: Layout, d: Decisions) -> np.ndarray:
    """Each decided row's classical debiased value (NaN elsewhere): unbiased over the opinion
    rule's outcomes for the items of the rule (a flat prior), the mean of the decisions'
    debiased values for the others."""
    y0 = np.full(lay.n, np.nan)
    dec = d.dec
    if not len(dec):
        return y0
    if not d.complete:  # some items await another opinion: every decision counts as it is
        deb = _phased(d, pd.Series(dtype=float)).estimate(d.error_model)["y_tilde"]
    elif d.item_ref is not None and d.item_ref.notna().any():
        in_seq = dec[INSTANCE_KEY].isin(d.item_ref.dropna().index).to_numpy()
        deb = ae.debiased(dec[~in_seq], d.error_model)["y_tilde"] if (~in_seq).any() else pd.Series(dtype=float)
        seq = ae.item_estimates(
            dec[in_seq], d.error_model, pd.Series(dtype=float), reference=d.item_ref, depth=d.item_depth
        )["y_tilde"]
        deb = pd.concat([deb, seq])
    else:
        deb = ae.debiased(dec, d.error_model)["y_tilde"]
    y0[rows_of_items(lay, deb.index)] = deb.to_numpy(dtype=float)
    return y0


@dataclass
class ItemValues:
    """Each decided row's estimate ``y`` of its truth and its noise variance ``v`` (0 elsewhere);
    ``layout``: the items' layout (reused by the error-model bootstrap)."""

    y: np.ndarray
    v: np.ndarray
    layout: ae.ItemLayout | PhasedLayout | None


def item_values(lay: Layout, d: Decisions, x: np.ndarray, iid: np.ndarray) -> ItemValues:
    """Each decided item's least-variance unbiased estimate, its prediction ``x`` as prior."""
    y, v = np.zeros(lay.n), np.zeros(lay.n)
    if not len(d.dec):
        return ItemValues(y, v, None)
    item_rows = np.unique(d.pos)
    prior = pd.Series(x[item_rows], index=iid[item_rows])
    layout = ae.ItemLayout(d.dec, prior, d.item_ref, depth=d.item_depth) if d.complete else _phased(d, prior)
    items = layout.estimate(d.error_model)
    at = rows_of_items(lay, items.index)
    y[at] = np.nan_to_num(items["y_tilde"].to_numpy(dtype=float))
    v[at] = items["var"].fillna(0.0).to_numpy(dtype=float)
    return ItemValues(y, v, layout)
