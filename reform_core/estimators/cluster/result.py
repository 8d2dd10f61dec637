"""The default estimator's result (:class:`ClusterEstimate`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from reform_core.estimators import adjudicator_error as ae
from reform_core.unit_index import UnitIndex


@dataclass
class ClusterEstimate:
    """Result of :func:`estimate`.

    ``table``: one row per model with each metric (%), its measurement standard error
    ``se_<metric>`` and interval ``<metric>_lo / _hi``; ``components``: variance by source
    per model and metric (``sampling``, ``audit``, ``adjudicator_error``; %²; ``audit_direct``:
    the audit's design-based estimate before :func:`audit_composite` and the floor, kept for
    diagnostics, not part of the total); ``totals`` /
    ``denominators``: per numerator, arrays (n_models, n_questions) of ``T_c`` and counts
    for the population bootstrap; ``both_wrong``: per model the audited both-wrong rate
    with its interval; ``error_model``: the fitted adjudicator error; ``progress``: per
    model planned and observed clusters and audits; ``notes``: what was assumed or left out.
    """

    models: np.ndarray
    questions: np.ndarray
    tasks_of_question: np.ndarray
    table: pd.DataFrame
    components: pd.DataFrame
    totals: dict
    denominators: dict
    error_variance: dict
    both_wrong: pd.DataFrame
    error_model: ae.ErrorModel
    progress: pd.DataFrame
    df: np.ndarray
    notes: list = field(default_factory=list)
    smooth: np.ndarray | None = None  # point estimate of each scored row's truth (for plug-in tables)
    index: UnitIndex | None = None
    floor_variance: dict | None = (
        None  # per metric, per model: what the audit's composite and floor add beyond the T_c spread
    )
    # ``index.evaluate(clip(smooth, 0, 1))`` (per-instruction all-pass, per-unit Ĵ and Ŵ): what the
    # plug-in tables evaluate, from the evaluation of the predictions patched on the observed clusters
    smooth_evaluation: tuple | None = None
