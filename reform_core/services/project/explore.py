"""Analysis use cases of the Scores and Explore pages, each behind a role check.

``scores`` wraps :func:`reform_core.services.scoring.scoring.score` with the principal check the
scoring service itself does not do; ``filter_instances`` pages through the calibrated
INSTANCES frame of a (cached) scoring result; ``example`` reads one model's answers to one
question with every label, rationale and p_u.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import explore as repo
from reform_core.metrics.composition import composition_table, prompting_comparison
from reform_core.services.accounts.auth import Principal, require, require_any
from reform_core.services.scoring import scoring
from reform_core.unit_index import build_index, opposition

LIST_COLUMNS = [
    "iid",
    "model",
    "question",
    "instruction",
    "condition",
    "task_type",
    "domain",
    "position",
    "feature",
    "category",
    "mode",
    "baseline_opposed",
    "label_a",
    "label_b",
    "agree",
    "adjudicated",
    "source",
    "p",
]
PARAM_PREFIX = "f_"
_CATEGORICAL = [
    "model",
    "question",
    "instruction",
    "condition",
    "task_type",
    "domain",
    "feature",
    "category",
    "mode",
    "source",
]


def data_version(engine: Engine) -> tuple:
    """A cheap stamp of the scored state for cache keys: row counts and max ids of the scored
    tables, and the project's scoring pair."""
    with engine.connect() as conn:
        return (*repo.data_version(conn), str(scoring.project_pair(engine)))


# ----------------------------------------------------------------------------- scores


def scores(
    engine: Engine,
    principal: Optional[Principal],
    *,
    calibration: str = scoring.DEFAULT_CALIBRATION,
    judge: Optional[str] = None,
) -> scoring.ScoreResult:
    """Every table of docs/metrics.md#reporting-tables: one judge's raw labels (``judge``) or
    calibrated p (``calibration``).

    Analysts (``view_scores``) and, for the explorer's p_u, ``explore`` may call this.
    """
    require_any(principal, ("view_scores", "explore"))
    return scoring.score(engine, principal, judge=judge, calibration=calibration)


def judges(engine: Engine, principal: Optional[Principal]) -> list[str]:
    """Judges with labels, in creation order (a judge with only error rows has no scores)."""
    require_any(principal, ("view_scores", "explore"))
    return scoring.scoreable_judges(engine)


def pair(engine: Engine, principal: Optional[Principal]) -> scoring.PairChoice:
    """The scoring pair the calibrated scores use, and how it was chosen."""
    require_any(principal, ("view_scores", "explore"))
    return scoring.resolve_pair(engine)


def score_intervals(
    principal: Optional[Principal], result: scoring.ScoreResult, *, n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Measurement and population 95 % intervals of TCPR, EMCR, R1–R3 per model (seeded;
    :func:`reform_core.services.scoring.scoring.compute_intervals`); the default estimator's rerun
    estimate (with the adjudicator-error term) rides along as ``attrs["estimate"]`` (a
    :class:`Shared` holder: ``.value``)."""
    require(principal, "view_scores")
    ci, est = scoring.compute_intervals(result, reps=n_boot, seed=seed)
    ci.attrs["estimate"] = Shared(est)
    return ci


class Shared:
    """A read-only value carried in a frame's ``attrs`` (``.value``), shared, never copied.

    pandas deep-copies ``attrs`` into every frame or column an operation returns: with the
    estimate in them, each column read of the interval frame copied the whole estimate (its unit
    index and design arrays: ~350 MB at 10× the paper, several times per Scores rerun — the
    app's memory peak; measured with tracemalloc). Deep-copying this holder returns itself."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def condition_tables(principal: Optional[Principal], result: scoring.ScoreResult) -> dict[str, pd.DataFrame]:
    """Table 3 (composition) when single-constraint rows exist; the prompting comparison
    (ReFormBench, arXiv:2610.19693, §4.4) when a ``prompted`` condition exists. Keys ``composition`` / ``prompting``."""
    require(principal, "view_scores")
    from reform_core.metrics.analyses import composition_pairs, prompting_pairs

    inst = result.instances
    conditions = set(inst["condition"].unique())
    out = {}
    if "single" in conditions:  # complete, consistent pairs only (issue 17; services/scoring/analyses.py has the rest)
        clean, _ = composition_pairs(inst)
        if len(clean):
            out["composition"] = composition_table(clean)
    if "prompted" in conditions:
        clean, _ = prompting_pairs(inst)
        if len(clean):
            out["prompting"] = prompting_comparison(clean)
    return out


def failing_units(
    principal: Optional[Principal], result: scoring.ScoreResult, *, model: str, task_type: str
) -> pd.DataFrame:
    """Eligible units of one model × task cell that are not certainly corrected (Ĵ < 1), worst first.

    Ĵ_{q,S} = ∏_{t∈S} ∏_{i∈V(q,t)} p[i,t] (docs/metrics.md#joint-correction; ReFormBench eq. 9).
    Returns ``question, k, targets`` ("feature:mode" joined by ", "), ``variants`` (|∪V|), ``failed_in`` (variants
    where some target of S has p < 0.5), ``j_hat`` (%).
    """
    require(principal, "view_scores")
    inst = result.instances
    sub = inst[(inst["condition"] == "main") & (inst["model"] == model) & (inst["task_type"] == task_type)]
    cols = ["question", "k", "targets", "variants", "failed_in", "j_hat"]
    if sub.empty:
        raise ValueError(f"no scored instance for model {model!r} and task type {task_type!r}")
    index = build_index(sub)
    if len(index.unit_k) == 0:
        return pd.DataFrame(columns=cols)
    _, joint, _ = index.evaluate(index.pass_vector(sub, "p"))
    n_units = len(index.unit_k)
    uv_unit = np.repeat(np.arange(n_units), np.diff(np.r_[index.unit_uv_starts, len(index.uv_starts)]))
    mem_unit = np.repeat(uv_unit, np.diff(np.r_[index.uv_starts, len(index.mem_rows)]))
    rows = sub.iloc[index.row_pos[index.mem_rows]]
    mem = pd.DataFrame(
        {
            "unit": mem_unit,
            "instruction": rows["instruction"].to_numpy(),
            "target": (rows["feature"].astype(str) + ":" + rows["mode"].astype(str)).to_numpy(),
            "fail": rows["p"].to_numpy(dtype=float) < 0.5,
        }
    )
    g = mem.groupby("unit")
    out = pd.DataFrame(
        {
            "question": index.questions[index.unit_question],
            "k": index.unit_k,
            "targets": g["target"].agg(lambda s: ", ".join(sorted(set(s)))).to_numpy(),
            "variants": g["instruction"].nunique().to_numpy(),
            "failed_in": mem[mem["fail"]]
            .groupby("unit")["instruction"]
            .agg(lambda s: ", ".join(sorted(set(s))))
            .reindex(range(n_units), fill_value="")
            .to_numpy(),
            "j_hat": 100 * joint,
        }
    )
    return out[out["j_hat"] < 100 - 1e-9].sort_values(["j_hat", "question", "k"]).reset_index(drop=True)[cols]


# ----------------------------------------------------------------------------- explorer


@dataclass(frozen=True)
class Filters:
    """Explorer filters; '' means "any". Round-trips through URL query parameters ``f_<field>``."""

    model: str = ""
    task: str = ""
    domain: str = ""
    feature: str = ""
    category: str = ""
    mode: str = ""
    opposed: str = ""  # "" | "opposed" | "aligned" | "unknown" (no baseline annotation)
    agree: str = ""  # "" | "agree" | "disagree"
    adjudicated: str = ""  # "" | "yes" | "no"
    p_min: float = 0.0
    p_max: float = 1.0

    CHOICES = {
        "opposed": ("", "opposed", "aligned", "unknown"),
        "agree": ("", "agree", "disagree"),
        "adjudicated": ("", "yes", "no"),
        "mode": ("", "require", "forbid"),
    }

    def __post_init__(self):
        for name, allowed in self.CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"filter {name}: must be one of {list(allowed)}, got {value!r}")
        if not 0.0 <= self.p_min <= self.p_max <= 1.0:
            raise ValueError(f"filter p range: need 0 ≤ p_min ≤ p_max ≤ 1, got {self.p_min}–{self.p_max}")

    @classmethod
    def from_params(cls, params: dict) -> "Filters":
        """Build from query parameters (unknown keys ignored; ValueError naming a bad value)."""
        kw = {}
        for f in fields(cls):
            raw = params.get(PARAM_PREFIX + f.name, "")
            if raw != "":
                if isinstance(f.default, float):
                    try:
                        kw[f.name] = float(raw)
                    except ValueError:
                        raise ValueError(f"filter {f.name}: not a number: {raw!r}") from None
                else:
                    kw[f.name] = str(raw)
        return cls(**kw)

    def to_params(self) -> dict[str, str]:
        """Only the non-default filters, as strings."""
        default = Filters()
        return {
            PARAM_PREFIX + k: (f"{v:g}" if isinstance(v, float) else v)
            for k, v in asdict(self).items()
            if v != getattr(default, k)
        }


def explore_frame(principal: Optional[Principal], result: scoring.ScoreResult) -> pd.DataFrame:
    """The explorer's table of every scored instance: LIST_COLUMNS, categorical keys (fast filters)."""
    require_any(principal, ("explore", "view_scores"))
    inst = result.instances
    out = pd.DataFrame(index=inst.index)
    for c in LIST_COLUMNS:
        if c in inst.columns:
            out[c] = inst[c]
    a, b = inst["label_a"], inst["label_b"]
    # agree: True / False, NaN where a judge label is missing (float keeps filtering vectorised)
    out["agree"] = np.where(a.notna() & b.notna(), (a == b).astype(float), np.nan)
    adj = result.frames.adjudications["iid"] if result.frames is not None else pd.Series(dtype="int64")
    out["adjudicated"] = inst["iid"].isin(adj)
    if "source" not in out:
        out["source"] = ""
    for c in _CATEGORICAL:
        out[c] = out[c].astype("category")
    return out[LIST_COLUMNS].reset_index(drop=True)


def filter_instances(
    principal: Optional[Principal], frame: pd.DataFrame, filters: Filters, *, page: int = 0, page_size: int = 50
) -> tuple[pd.DataFrame, int]:
    """One page (``page`` from 0) of the instances matching ``filters``, and the match count."""
    require(principal, "explore")
    if page < 0 or page_size < 1:
        raise ValueError(f"page must be ≥ 0 and page_size ≥ 1, got page={page}, page_size={page_size}")
    mask = np.ones(len(frame), dtype=bool)
    for col, value in (
        ("model", filters.model),
        ("task_type", filters.task),
        ("domain", filters.domain),
        ("feature", filters.feature),
        ("category", filters.category),
        ("mode", filters.mode),
    ):
        if value:
            mask &= (frame[col] == value).to_numpy()
    if filters.opposed:
        known, opposed = opposition(frame["baseline_opposed"])
        mask &= ~known if filters.opposed == "unknown" else known & (opposed == (filters.opposed == "opposed"))
    if filters.agree:
        mask &= frame["agree"].to_numpy(dtype=float) == (1.0 if filters.agree == "agree" else 0.0)
    if filters.adjudicated:
        mask &= frame["adjudicated"].to_numpy(dtype=bool) == (filters.adjudicated == "yes")
    if filters.p_min > 0.0 or filters.p_max < 1.0:
        p = frame["p"].to_numpy(dtype=float)
        mask &= (p >= filters.p_min) & (p <= filters.p_max)
    hits = np.flatnonzero(mask)
    rows = hits[page * page_size : (page + 1) * page_size]
    return frame.iloc[rows].reset_index(drop=True), len(hits)


def example(
    engine: Engine, principal: Optional[Principal], *, model: str, question: str, p: Optional[pd.Series] = None
) -> Optional[dict]:
    """One model's baseline and every variant of one question, per-constraint labels, rationales and p_u.

    ``p`` maps iid → calibrated probability (e.g. from the cached scoring result); the
    ``constraints`` frame gets ``p`` and one ``label_<judge>`` / ``rationale_<judge>`` pair
    per judge, plus the current human decision. None when model or question is unknown.
    """
    require(principal, "explore")
    with engine.connect() as conn:
        ex = repo.example(conn, model=model, question=question)
    if ex is None:
        return None
    cons, judg, adj = ex["constraints"], ex["judgments"], ex["adjudications"]
    for judge, g in judg.groupby("judge", sort=False):
        g = g.set_index("iid")
        cons[f"label_{judge}"] = cons["iid"].map(g["label"].where(g["status"] == "ok"))
        cons[f"rationale_{judge}"] = cons["iid"].map(g["rationale"]).fillna("")
    last = adj.drop_duplicates("iid", keep="last").set_index("iid")
    cons["decision"] = cons["iid"].map(last["label"])
    cons["decided_by"] = cons["iid"].map(last["annotator"].astype(object)).astype(object).fillna("")
    cons["p"] = cons["iid"].map(p) if p is not None else np.nan
    ex["judges"] = list(dict.fromkeys(judg["judge"]))
    return ex


# ----------------------------------------------------------------------------- export archive


def export_archive(
    engine: Engine, principal: Optional[Principal], *, calibration: str = scoring.DEFAULT_CALIBRATION, seed: int = 0
) -> tuple[bytes, dict]:
    """Run the export (docs/formats.md#exports) into a temporary directory; return it as a zip and the manifest.

    The zip holds exactly the files the CLI ``export`` writes (every manifest entry plus
    ``manifest.json``).
    """
    import tempfile
    import zipfile
    from io import BytesIO
    from pathlib import Path

    from reform_core.services.project.export import export

    require(principal, "export")
    with tempfile.TemporaryDirectory(prefix="reform-export-") as tmp:
        manifest = export(engine, tmp, calibration=calibration, principal=principal, seed=seed)
        buf = BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(manifest["files"]) + ["manifest.json"]:
                zf.write(Path(tmp) / name, arcname=name)
    return buf.getvalue(), manifest
