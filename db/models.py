"""All SQLModel tables of ReForm.

One database holds one project. Every table has an integer surrogate key ``id`` and a
unique constraint on its natural key, so re-running an import or a judge run cannot
duplicate rows. Adjudications and wording ratings are append-only: a correction is a
new row whose ``supersedes_id`` points at the row it replaces.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _json(**kw) -> Any:
    return Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict), **kw)


def _text(**kw) -> Any:
    return Field(default="", sa_column=Column(Text, nullable=False, default="", server_default=""), **kw)


class ProjectMeta(SQLModel, table=True):
    """Key/value facts about the project (name, catalog in use, demo flag)."""

    __tablename__ = "project_meta"
    key: str = Field(primary_key=True, max_length=100)
    value: str = Field(default="", max_length=2000)


class CatalogFeature(SQLModel, table=True):
    __tablename__ = "catalog_feature"
    __table_args__ = (UniqueConstraint("catalog", "key", name="uq_feature_catalog_key"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    catalog: str = Field(max_length=100)
    catalog_version: str = Field(default="", max_length=50)
    key: str = Field(max_length=200)
    name: str = Field(max_length=200)
    category: str = Field(max_length=100)
    category_name: str = Field(default="", max_length=200)
    definition: str = _text()
    require_template: str = _text()
    forbid_template: str = _text()
    rule_detectable: bool = False


class CatalogDocument(SQLModel, table=True):
    """A team's own catalog file as imported (``import-table --catalog FILE``, the Import page),
    kept with the project so that later commands (judge, score, export) need no file: its
    text, the name and version it declares, the uploaded file's name and the text's SHA-256."""

    __tablename__ = "catalog_document"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=100, unique=True)
    version: str = Field(default="", max_length=50)
    filename: str = Field(default="", max_length=200)
    sha256: str = Field(max_length=64)
    content: str = _text()


class Question(SQLModel, table=True):
    __tablename__ = "question"
    id: Optional[int] = Field(default=None, primary_key=True)
    key: str = Field(max_length=200, unique=True)
    text: str = _text()
    task_type: str = Field(default="", max_length=100)
    domain: str = Field(default="", max_length=100)
    language: str = Field(default="", max_length=20)
    source: str = Field(default="", max_length=200)


class Instruction(SQLModel, table=True):
    """An instruction variant of a question, under a condition (main / single / prompted)."""

    __tablename__ = "instruction"
    id: Optional[int] = Field(default=None, primary_key=True)
    key: str = Field(max_length=200, unique=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    condition: str = Field(default="main", max_length=50)
    pair_group: str = Field(default="", max_length=200, index=True)
    text: str = _text()


class Constraint(SQLModel, table=True):
    __tablename__ = "constraint_item"
    __table_args__ = (UniqueConstraint("instruction_id", "position", name="uq_constraint_pos"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    instruction_id: int = Field(foreign_key="instruction.id", index=True)
    position: int
    feature: str = Field(max_length=200, index=True)
    category: str = Field(default="", max_length=100)
    mode: str = Field(max_length=10)  # require | forbid
    text: str = _text()
    acceptance: str = _text()
    params: dict = _json()


class EvalModel(SQLModel, table=True):
    """An evaluated model (never shown to judges or annotators)."""

    __tablename__ = "eval_model"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True)
    provider: str = Field(default="", max_length=100)
    settings: dict = _json()


class Response(SQLModel, table=True):
    """A model's answer: to a question (kind=baseline, variant='') or an instruction."""

    __tablename__ = "response"
    __table_args__ = (UniqueConstraint("model_id", "question_id", "variant", name="uq_response_key"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    model_id: int = Field(foreign_key="eval_model.id", index=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    instruction_id: Optional[int] = Field(default=None, foreign_key="instruction.id", index=True)
    variant: str = Field(default="", max_length=200)  # instruction key, '' for the baseline
    kind: str = Field(default="constrained", max_length=20)  # baseline | constrained
    text: str = _text()
    meta: dict = _json()


class BaselineFeature(SQLModel, table=True):
    """A catalog feature annotated as present (or absent) in a baseline response."""

    __tablename__ = "baseline_feature"
    __table_args__ = (UniqueConstraint("response_id", "feature", name="uq_baseline_feature"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", index=True)
    feature: str = Field(max_length=200)
    present: bool = True
    source: str = Field(default="import", max_length=50)  # import | rule | llm
    evidence: str = _text()


class FeatureExtraction(SQLModel, table=True):
    """An open-ended feature extracted from a baseline response and how it maps to the
    catalog (ReFormBench, arXiv:2610.19693, App. A.4, Table A4): ``mapping`` exact | subtype | composite |
    uncovered | not_format; ``feature`` the catalog feature it maps to ('' when none)."""

    __tablename__ = "feature_extraction"
    __table_args__ = (UniqueConstraint("response_id", "label", name="uq_feature_extraction"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", index=True)
    label: str = Field(max_length=200)
    feature: str = Field(default="", max_length=200)
    mapping: str = Field(max_length=20)
    source: str = Field(default="import", max_length=50)


class Judge(SQLModel, table=True):
    __tablename__ = "judge"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True)
    provider: str = Field(default="replay", max_length=50)  # openai | gemini | rules | replay
    model: str = Field(default="", max_length=200)
    prompt_version: str = Field(default="", max_length=50)
    config: dict = _json()


class Judgment(SQLModel, table=True):
    __tablename__ = "judgment"
    __table_args__ = (
        UniqueConstraint("judge_id", "response_id", "constraint_id", "prompt_version", name="uq_judgment_key"),
        # covering: the disagreement count (status, Overview) reads this index alone (migration 0008)
        Index("ix_judgment_response_constraint_label", "response_id", "constraint_id", "label"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    judge_id: int = Field(foreign_key="judge.id", index=True)
    response_id: int = Field(foreign_key="response.id")
    constraint_id: int = Field(foreign_key="constraint_item.id")
    prompt_version: str = Field(default="", max_length=50)
    label: Optional[int] = None  # 1 pass, 0 fail, None when errored / abstained
    rationale: str = _text()
    status: str = Field(default="ok", max_length=20)  # ok | error | abstain
    error: str = _text()
    raw: str = _text()
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)


class User(SQLModel, table=True):
    """An account. ``password_hash`` is empty for an account that signs in only by single
    sign-on; ``email`` (stored lower-case) finds the account at its first SSO sign-in, when the
    provider vouches for the address (``email_verified``), and binds it to the provider's
    ``(sso_issuer, sso_subject)``, which alone identify it from then on (migration 0009)."""

    __tablename__ = "app_user"
    __table_args__ = (
        Index("ux_app_user_email", "email", unique=True),
        Index("ux_app_user_sso", "sso_issuer", "sso_subject", unique=True),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    username: str = Field(max_length=100, unique=True)
    display_name: str = Field(default="", max_length=200)
    role: str = Field(default="annotator", max_length=20)  # annotator | analyst | lead
    password_hash: str = Field(default="", max_length=500)
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    email: Optional[str] = Field(default=None, max_length=254)
    sso_issuer: Optional[str] = Field(default=None, max_length=255)
    sso_subject: Optional[str] = Field(default=None, max_length=255)


class SigninThrottle(SQLModel, table=True):
    """Failed sign-in attempts per username in the current window (shared by every app
    process). An attempt *reserves* a slot with one conditional UPDATE before the password
    hash is checked, so parallel attempts cannot all pass the check."""

    __tablename__ = "signin_throttle"
    username: str = Field(primary_key=True, max_length=100)
    failures: int = 0
    window_start: datetime = Field(default_factory=utcnow, index=True)


class AuthSession(SQLModel, table=True):
    """A signed-in browser session. Password mode: the browser holds a signed token naming
    this row and its secret; the row holds the secret's SHA-256. Single sign-on: the row holds
    the SHA-256 of the sign-in's identity (issuer, subject, nonce, issue time of its ID token).
    Either way the row holds the role it was issued for, its expiry and its revocation
    (sign-out, deactivation, role change, password reset)."""

    __tablename__ = "auth_session"
    id: Optional[int] = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="app_user.id", index=True)
    secret_hash: str = Field(max_length=64)
    role: str = Field(max_length=20)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime = Field(default_factory=utcnow)
    revoked_at: Optional[datetime] = None


class SamplePlan(SQLModel, table=True):
    __tablename__ = "sample_plan"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True)
    judge_a_id: int = Field(foreign_key="judge.id")
    judge_b_id: int = Field(foreign_key="judge.id")
    params: dict = _json()  # confidence, p, margin, seed, audit, overlap fraction
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    created_by: Optional[int] = Field(default=None, foreign_key="app_user.id")


class AdjudicationTask(SQLModel, table=True):
    """One sampled (response, constraint) instance to adjudicate under a plan."""

    __tablename__ = "adjudication_task"
    __table_args__ = (
        UniqueConstraint("plan_id", "response_id", "constraint_id", name="uq_task_key"),
        Index("ix_task_queue", "plan_id", "status", "order_key"),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    plan_id: int = Field(foreign_key="sample_plan.id")
    response_id: int = Field(foreign_key="response.id")
    constraint_id: int = Field(foreign_key="constraint_item.id")
    stratum: str = Field(default="", max_length=400, index=True)
    kind: str = Field(default="disagreement", max_length=20)  # disagreement | audit
    required: int = 1  # how many distinct annotators must decide it
    decided: int = 0
    status: str = Field(default="open", max_length=20)  # open | claimed | done | withdrawn (its plan closed)
    claimed_by: Optional[int] = Field(default=None, foreign_key="app_user.id")
    lease_until: Optional[datetime] = None
    order_key: float = 0.0
    a_left: str = Field(default="A", max_length=1)  # which judge is shown on the left


class PlanStratumCount(SQLModel, table=True):
    """Progress counters of one stratum of a plan, kept by task creation, decide, undo and
    import in the same transaction (so no screen ever counts a plan's task list)."""

    __tablename__ = "plan_stratum_count"
    __table_args__ = (UniqueConstraint("plan_id", "stratum", name="uq_plan_stratum_count"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    plan_id: int = Field(foreign_key="sample_plan.id")
    stratum: str = Field(default="", max_length=400)
    tasks: int = 0  # items
    needed: int = 0  # decisions the items need: sum of required
    done: int = 0  # items with all the decisions they need
    filled: int = 0  # decisions made towards that: sum of min(decided, required)


class PlanAnnotatorCount(SQLModel, table=True):
    """Current (not withdrawn) decisions of one annotator in one stratum of a plan, and the
    seconds they took; kept like :class:`PlanStratumCount`. ``user_id`` 0 = an outside
    annotator named by ``annotator`` (0, not NULL, so the unique key holds)."""

    __tablename__ = "plan_annotator_count"
    __table_args__ = (UniqueConstraint("plan_id", "user_id", "annotator", "stratum", name="uq_plan_annotator_count"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    plan_id: int = Field(foreign_key="sample_plan.id")
    user_id: int = 0
    annotator: str = Field(default="", max_length=100)
    stratum: str = Field(default="", max_length=400)
    decided: int = 0
    seconds: float = 0.0


class Adjudication(SQLModel, table=True):
    """An append-only human decision; a correction supersedes an earlier row."""

    __tablename__ = "adjudication"
    id: Optional[int] = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="adjudication_task.id", index=True)
    user_id: Optional[int] = Field(default=None, foreign_key="app_user.id", index=True)
    choice: str = Field(max_length=10)  # A | B | neither
    label: Optional[int] = None  # the chosen judgment's label; None for neither/unsure
    note: str = _text()
    seconds: float = 0.0
    supersedes_id: Optional[int] = Field(default=None, foreign_key="adjudication.id", index=True)
    created_at: datetime = Field(default_factory=utcnow)
    # An outside annotator's name (decisions imported from elsewhere, ``user_id`` NULL): a
    # name is text, never an account. Empty for decisions of an account.
    annotator: str = Field(default="", max_length=100)
    # The judgments of the plan's judge A and judge B that the decision was made on (what
    # the annotator was shown); ``label`` is the chosen one's. NULL for rows recorded before.
    judgment_a_id: Optional[int] = Field(default=None, foreign_key="judgment.id")
    judgment_b_id: Optional[int] = Field(default=None, foreign_key="judgment.id")


class WordingStudy(SQLModel, table=True):
    __tablename__ = "wording_study"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True)
    question: str = Field(default="Does this require exactly {target}?", max_length=500)
    params: dict = _json()
    created_at: datetime = Field(default_factory=utcnow)


class WordingForm(SQLModel, table=True):
    __tablename__ = "wording_form"
    __table_args__ = (UniqueConstraint("study_id", "key", name="uq_form_key"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="wording_study.id", index=True)
    key: str = Field(max_length=100)
    template: str = _text()


class WordingItem(SQLModel, table=True):
    __tablename__ = "wording_item"
    __table_args__ = (UniqueConstraint("study_id", "form_id", "target", name="uq_item_key"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="wording_study.id", index=True)
    form_id: int = Field(foreign_key="wording_form.id")
    target: str = Field(max_length=100)
    text: str = _text()


class WordingRating(SQLModel, table=True):
    """An append-only answer of one annotator on one item; edits supersede."""

    __tablename__ = "wording_rating"
    id: Optional[int] = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="wording_item.id", index=True)
    user_id: Optional[int] = Field(default=None, foreign_key="app_user.id", index=True)
    # An outside rater's name (ratings imported by ``wording-import-ratings``, ``user_id`` NULL):
    # never an account (migration 0011)
    annotator: str = Field(default="", max_length=100, sa_column_kwargs={"server_default": ""})
    requires_exact: Optional[bool] = None
    clarity: Optional[int] = None
    naturalness: Optional[int] = None
    ambiguity: Optional[int] = None
    complexity: Optional[int] = None
    supersedes_id: Optional[int] = Field(default=None, foreign_key="wording_rating.id", index=True)
    created_at: datetime = Field(default_factory=utcnow)


class WiseGeneration(SQLModel, table=True):
    """A model output for a WISE wording item (docs/metrics.md#wording-robustness); ``study`` names its WISE study
    (``wise_study.name``; empty for generations imported without one)."""

    __tablename__ = "wise_generation"
    __table_args__ = (UniqueConstraint("study", "item", "model", "form", "target", "repetition", name="uq_wise_gen"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    study: str = Field(default="", max_length=200, sa_column_kwargs={"server_default": ""})
    item: str = Field(max_length=200)
    model: str = Field(max_length=200)
    provider: str = Field(default="", max_length=100)
    form: str = Field(max_length=100)
    target: str = Field(max_length=200)
    repetition: int = 0
    output: str = _text()
    meta: dict = _json()  # how it was collected: provider, endpoint model, settings, finish reason, tokens


class WiseStudy(SQLModel, table=True):
    """A WISE wording-robustness study (docs/metrics.md#wording-robustness): its forms, reference form and manifest."""

    __tablename__ = "wise_study"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True)
    params: dict = _json()  # {"reference", "forms": [{form, template, checker}], "manifest": {...}}
    created_at: datetime = Field(default_factory=utcnow)


class MosaicStudy(SQLModel, table=True):
    """A MOSAIC constraint-list study (docs/metrics.md#mosaic): prompts imported from ``mosaic-generate``."""

    __tablename__ = "mosaic_study"
    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(max_length=200, unique=True)
    params: dict = _json()
    created_at: datetime = Field(default_factory=utcnow)


class MosaicPrompt(SQLModel, table=True):
    __tablename__ = "mosaic_prompt"
    __table_args__ = (UniqueConstraint("study_id", "key", name="uq_mosaic_prompt"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="mosaic_study.id", index=True)
    key: str = Field(max_length=200)
    task: str = Field(default="", max_length=200)
    product: str = Field(default="", max_length=200)
    system_prompt: str = _text()
    user_prompt: str = _text()


class MosaicConstraint(SQLModel, table=True):
    """One constraint of a prompt's list at its 1-based position, with its checker."""

    __tablename__ = "mosaic_constraint"
    __table_args__ = (UniqueConstraint("prompt_id", "position", name="uq_mosaic_constraint"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    prompt_id: int = Field(foreign_key="mosaic_prompt.id", index=True)
    position: int
    key: str = Field(max_length=100)
    category: str = Field(default="", max_length=100)
    text: str = _text()
    verifier: str = Field(max_length=100)  # a mosaic:* verifier id, or "judge"
    params: dict = _json()
    rubric: str = _text()


class MosaicOutput(SQLModel, table=True):
    """A model's output for a MOSAIC prompt (collected or imported)."""

    __tablename__ = "mosaic_output"
    __table_args__ = (UniqueConstraint("prompt_id", "model", name="uq_mosaic_output"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    prompt_id: int = Field(foreign_key="mosaic_prompt.id", index=True)
    model: str = Field(max_length=200)
    output: str = _text()
    meta: dict = _json()
    created_at: datetime = Field(default_factory=utcnow)


class MosaicCheck(SQLModel, table=True):
    """The score in [0, 1] of one (output, constraint): a deterministic check or an LLM judge."""

    __tablename__ = "mosaic_check"
    __table_args__ = (UniqueConstraint("output_id", "constraint_id", name="uq_mosaic_check"),)
    id: Optional[int] = Field(default=None, primary_key=True)
    output_id: int = Field(foreign_key="mosaic_output.id", index=True)
    constraint_id: int = Field(foreign_key="mosaic_constraint.id", index=True)
    checker: str = Field(max_length=300)  # mosaic:<check> or judge:<model>
    score: float
    followed: bool
    evidence: str = _text()
    created_at: datetime = Field(default_factory=utcnow)


ALL_TABLES = [
    m.__table__
    for m in (  # type: ignore[attr-defined]
        ProjectMeta,
        CatalogFeature,
        Question,
        Instruction,
        Constraint,
        EvalModel,
        Response,
        BaselineFeature,
        Judge,
        Judgment,
        User,
        SamplePlan,
        AdjudicationTask,
        Adjudication,
        WordingStudy,
        WordingForm,
        WordingItem,
        WordingRating,
        WiseGeneration,
        WiseStudy,
        MosaicStudy,
        MosaicPrompt,
        MosaicConstraint,
        MosaicOutput,
        MosaicCheck,
    )
]


class Job(SQLModel, table=True):
    """Long work with its progress in the database (DESIGN "Long work is a job"), and the
    run lock of that work: at most one *running* job per ``lock_key`` (a partial unique
    index), so a second run of the same judge is refused instead of calling the provider
    twice. ``params`` never holds a secret. A running job whose ``heartbeat_at`` is older
    than the stale limit belongs to a process that died; the next claim takes it over."""

    __tablename__ = "job"
    __table_args__ = (
        Index(
            "uq_job_running_lock",
            "lock_key",
            unique=True,
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
    )
    id: Optional[int] = Field(default=None, primary_key=True)
    kind: str = Field(max_length=50, index=True)  # e.g. judge
    lock_key: str = Field(max_length=300)  # e.g. judge:<name>
    params: dict = _json()
    status: str = Field(default="running", max_length=20, index=True)  # running | done | failed | cancelled
    done: int = 0
    total: Optional[int] = None
    result: dict = _json()  # live counters while running, the final summary after
    error: str = _text()
    owner: str = Field(default="", max_length=300)  # host:pid of the process doing the work
    created_by: str = Field(default="", max_length=100)
    cancel_requested: bool = False
    started_at: datetime = Field(default_factory=utcnow)
    heartbeat_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None
