"""The public data contract: records of the import/export bundle, validated with pydantic.

A **bundle** is a directory of JSON Lines files (one JSON object per line, UTF-8).
Every file is optional except ``questions.jsonl``; files are read in this order and
later files refer to earlier ones by key:

``bundle.json`` (optional)
    ``{"format": "reform-bundle", "version": 1, "catalog": "reformbench", "name": "…"}``
``questions.jsonl`` — :class:`QuestionRecord`
    ``{"key": "q001", "text": "…", "task_type": "explain", "domain": "science", "language": "en"}``
``instructions.jsonl`` — :class:`InstructionRecord` (constraints nested)
    ``{"key": "q001-v1", "question": "q001", "condition": "main", "pair_group": "q001-v1",
    "text": "…", "constraints": [{"position": 1, "feature": "bullet_list", "mode": "require",
    "text": "…", "acceptance": "…", "params": {"n": 3}}, …]}``
``models.jsonl`` — :class:`ModelRecord` (models are also created from responses)
``responses.jsonl`` — :class:`ResponseRecord`; ``instruction`` null/absent = baseline response
    ``{"model": "m1", "question": "q001", "instruction": "q001-v1", "text": "…"}``
``baseline_features.jsonl`` — :class:`BaselineFeatureRecord`
    ``{"model": "m1", "question": "q001", "feature": "bullet_list", "present": true}``
``judges.jsonl`` — :class:`JudgeRecord` (judges are also created from judgments)
``judgments.jsonl`` — :class:`JudgmentRecord`
    ``{"judge": "gpt", "model": "m1", "instruction": "q001-v1", "position": 1, "label": 1,
    "rationale": "…"}``
``extractions.jsonl`` — :class:`ExtractionRecord` (open-ended feature extractions of baseline
    responses and their catalog match, Table A4 / Table 4)
    ``{"model": "m1", "question": "q001", "label": "numbered steps", "feature": "numbered_list",
    "match": "exact"}`` — ``match`` exact | subtype | composite | uncovered | not_format;
    ``feature`` the catalog feature (required for exact and subtype, empty when uncovered)
``adjudications.jsonl`` — :class:`AdjudicationRecord` (decisions made elsewhere)
    ``{"judge_a": "gpt", "judge_b": "gemini", "model": "m1", "instruction": "q001-v1",
    "position": 2, "choice": "A", "annotator": "alice"}`` — on an audit item (the judges agree)
    ``"verdict": "pass" | "fail"`` (the annotator's own verdict on the constraint) instead of
    ``choice``; a verdict against the agreed label is stored as ``neither`` (both judges wrong)

Errors are reported as ``file:line: field: message``, every problem at once. No string
anywhere in a record (nested ``params``/``meta``/… included) may contain NUL, and every
number must be finite: PostgreSQL can store neither.

Records are read strictly (:func:`parse_record`): every value must have its JSON type (a
``"position": "1"`` or a ``"present": 1`` is an error, never converted), and a key given twice
in one object (``{"name": "a", "name": "b"}``) is an error instead of the last one winning.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

BUNDLE_FILES = (
    "questions.jsonl",
    "instructions.jsonl",
    "models.jsonl",
    "responses.jsonl",
    "baseline_features.jsonl",
    "judges.jsonl",
    "judgments.jsonl",
    "adjudications.jsonl",
    "extractions.jsonl",
)
BUNDLE_FORMAT = "reform-bundle"
BUNDLE_VERSION = 1

# string lengths are those of the database columns (``db.models``): PostgreSQL enforces them
Key = Annotated[str, Field(max_length=200)]
Str20 = Annotated[str, Field(max_length=20)]
Str50 = Annotated[str, Field(max_length=50)]
Str100 = Annotated[str, Field(max_length=100)]
Str200 = Annotated[str, Field(max_length=200)]


def _utf8_ok(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storage_problem(value: Any) -> Optional[str]:
    """Why ``value`` (a string, number, or nested dict/list of them) cannot be stored, or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "must not contain a NUL character"
        return None if _utf8_ok(value) else "must not contain a lone surrogate (not valid Unicode)"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"must be a finite number, got {value!r}"
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple)):
        return next((p for p in map(storage_problem, value) if p), None)
    return None


class DuplicateKeyError(ValueError):
    """A JSON object gives the same key twice; ``keys`` names the repeated ones."""

    def __init__(self, keys: list[str]):
        self.keys = keys
        super().__init__(f"duplicate key(s) {', '.join(map(repr, keys))}: JSON would keep only the last value")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise DuplicateKeyError(sorted({k for k, _ in pairs if k in seen or seen.add(k)}))
    return out


def loads_unique(text: str) -> Any:
    """``json.loads`` that refuses an object with a repeated key (:class:`DuplicateKeyError`)."""
    return json.loads(text, object_pairs_hook=_no_duplicate_keys)


def duplicate_keys(text: str) -> list[str]:
    """The keys some object of the JSON ``text`` repeats (the first such object), or ``[]``
    (also for text that is not JSON: its parse error is reported elsewhere)."""
    try:
        loads_unique(text)
    except DuplicateKeyError as exc:
        return exc.keys
    except (ValueError, RecursionError):
        return []
    return []


def parse_record(record_type: type[BaseModel], line: str) -> tuple[Optional[BaseModel], list[tuple[str, str]]]:
    """One JSON line validated strictly as ``record_type``: ``(record, [])`` or ``(None,
    [(field, message), …])`` with every problem of the line (type errors, each repeated key).

    Fast path: a line with as many colons as given fields cannot repeat a key (each key is
    followed by a colon outside strings), so only other lines are parsed a second time."""
    problems: list[tuple[str, str]] = []
    record = None
    try:
        record = record_type.model_validate_json(line, strict=True)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = ".".join(map(field_label, err.get("loc", ()))) or "(line)"
            problems.append((loc, err.get("msg", "invalid")))
    if record is None or line.count(":") != len(record.model_fields_set):
        problems += [
            (field_label(k), "given twice in this line (JSON would keep only the last value)")
            for k in duplicate_keys(line)
        ]
    return (None, problems) if problems else (record, [])


def field_label(part) -> str:
    """A field name (or list index) as printed: names from the user's file are quoted unless plain."""
    if isinstance(part, int):
        return str(part)
    return part if isinstance(part, str) and part.isidentifier() else repr(part)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    @field_validator("*")
    @classmethod
    def _storable(cls, v):
        problem = storage_problem(v)
        if problem:
            raise ValueError(problem)
        return v


def _nonblank(v: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("must be a non-empty string")
    return v


class BundleManifest(_Record):
    format: Literal["reform-bundle"] = BUNDLE_FORMAT
    version: int = BUNDLE_VERSION
    name: Annotated[str, Field(max_length=2000)] = ""
    catalog: str = "reformbench"
    description: str = ""
    # the models that built the instructions (Table 4's reference group), if known
    construction_models: list[Key] = Field(default_factory=list)


class QuestionRecord(_Record):
    key: Key
    text: str = ""
    task_type: Str100 = ""
    domain: Str100 = ""
    language: Str20 = ""
    source: Str200 = ""

    _k = field_validator("key")(_nonblank)


class ConstraintRecord(_Record):
    position: int = Field(ge=1, le=50)
    feature: Key
    mode: Literal["require", "forbid"]
    category: Str100 = ""
    text: str = ""
    acceptance: str = ""
    params: dict[str, Any] = Field(default_factory=dict)

    _f = field_validator("feature")(_nonblank)


class InstructionRecord(_Record):
    key: Key
    question: Key
    condition: Str50 = "main"
    pair_group: Str200 = ""
    text: str = ""
    constraints: list[ConstraintRecord] = Field(min_length=1)

    _k = field_validator("key", "question", "condition")(_nonblank)

    @model_validator(mode="after")
    def _distinct_positions(self) -> "InstructionRecord":
        positions = [c.position for c in self.constraints]
        if len(set(positions)) != len(positions):
            raise ValueError(f"constraints: duplicate positions {sorted(positions)}")
        return self


class ModelRecord(_Record):
    name: Key
    provider: Str100 = ""
    settings: dict[str, Any] = Field(default_factory=dict)

    _k = field_validator("name")(_nonblank)


class ResponseRecord(_Record):
    model: Key
    question: Key
    instruction: Optional[Key] = None  # None: the baseline (unconstrained) response
    text: str
    meta: dict[str, Any] = Field(default_factory=dict)

    _k = field_validator("model", "question")(_nonblank)


class BaselineFeatureRecord(_Record):
    model: Key
    question: Key
    feature: Key
    present: bool = True
    source: Str50 = "import"
    evidence: str = ""

    _k = field_validator("model", "question", "feature")(_nonblank)


class JudgeRecord(_Record):
    name: Key
    provider: Str50 = "replay"
    model: Str200 = ""
    prompt_version: Str50 = ""
    config: dict[str, Any] = Field(default_factory=dict)

    _k = field_validator("name")(_nonblank)


class JudgmentRecord(_Record):
    judge: Key
    model: Key
    instruction: Key
    position: int = Field(ge=1, le=50)
    label: Optional[Literal[0, 1]] = None
    rationale: str = ""
    status: Literal["ok", "error", "abstain"] = "ok"
    error: str = ""
    prompt_version: Str50 = ""

    _k = field_validator("judge", "model", "instruction")(_nonblank)

    @field_validator("label", mode="before")
    @classmethod
    def _strict_label(cls, v):
        # bool is an int subclass in Python; accept true/false explicitly, nothing else.
        if isinstance(v, bool):
            return int(v)
        if v is None or (isinstance(v, int) and v in (0, 1)):
            return v
        raise ValueError(f"must be 0, 1, true, false or null, got {v!r}")

    @model_validator(mode="after")
    def _label_matches_status(self) -> "JudgmentRecord":
        if self.status == "ok" and self.label is None:
            raise ValueError("label: required when status is 'ok'")
        if self.status != "ok" and self.label is not None:
            raise ValueError(f"label: must be null when status is {self.status!r}")
        return self


class AdjudicationRecord(_Record):
    judge_a: Key
    judge_b: Key
    model: Key
    instruction: Key
    position: int = Field(ge=1, le=50)
    # a disagreement: the better-supported judgment (``neither`` = unsure, with a note); an audit
    # (the judges agree): ``verdict``, the annotator's own pass / fail on the constraint, or as before
    # a ``choice`` (A / B confirm the agreed label, ``neither`` = both judges wrong)
    choice: Optional[Literal["A", "B", "neither"]] = None
    verdict: Optional[Literal["pass", "fail"]] = Field(default=None, validate_default=True)
    # the person who decided: an existing annotator account, else kept as text (never an account)
    annotator: Str100 = "import"
    note: str = ""
    seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    plan: Str200 = "imported"

    @field_validator("verdict")
    @classmethod
    def _one_answer(cls, v, info):
        if "choice" not in info.data:  # an invalid choice: reported on its own
            return v
        if (info.data["choice"] is None) == (v is None):
            raise PydanticCustomError(
                "answer",
                "give either choice (A | B | neither) or, on an audit of an agreement, verdict (pass | fail){more}",
                {"more": "" if v is None else "; not both"},
            )
        return v


EXTRACTION_MATCHES = ("exact", "subtype", "composite", "uncovered", "not_format")


class ExtractionRecord(_Record):
    model: Key
    question: Key
    label: Key  # the extracted feature's free label (or the catalog key itself)
    feature: Key = ""  # the catalog feature it maps to
    match: Literal["exact", "subtype", "composite", "uncovered", "not_format"]
    source: Str50 = "import"

    _k = field_validator("model", "question", "label")(_nonblank)

    @model_validator(mode="after")
    def _feature_for_match(self) -> "ExtractionRecord":
        if self.match in ("exact", "subtype") and not self.feature.strip():
            raise ValueError(f"feature: required when match is {self.match!r}")
        if self.match in ("uncovered", "not_format") and self.feature:
            raise ValueError(f"feature: must be empty when match is {self.match!r}")
        return self


RECORD_TYPES: dict[str, type[_Record]] = {
    "questions.jsonl": QuestionRecord,
    "instructions.jsonl": InstructionRecord,
    "models.jsonl": ModelRecord,
    "responses.jsonl": ResponseRecord,
    "baseline_features.jsonl": BaselineFeatureRecord,
    "judges.jsonl": JudgeRecord,
    "judgments.jsonl": JudgmentRecord,
    "adjudications.jsonl": AdjudicationRecord,
    "extractions.jsonl": ExtractionRecord,
}
