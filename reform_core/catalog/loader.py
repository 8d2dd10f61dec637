"""Load and validate feature catalogs (SPEC §2).

A catalog is data: a YAML or JSON file with ``name``, ``version``, ``categories`` (list of
``{key, name}``), ``features`` and optionally ``metrics``: the scores that apply to it
(SPEC §4.2; ids of :data:`METRICS`, default :data:`DEFAULT_METRICS`). Each feature has

``key``               stable snake_case id (IFEval: the instruction id, e.g. ``punctuation:no_comma``)
``name``              display name
``category``          key of one of the catalog's categories
``definition``        the generic presence definition (seed 000, Table A12)
``modes``             meaningful constraint modes, default ``[require, forbid]``
``require_template``  constraint text for ``require`` (needed when ``require`` is a mode)
``forbid_template``   constraint text for ``forbid`` (needed when ``forbid`` is a mode)
``params``            list of ``{name, type, default, min?, max?, choices?, description?}``
``acceptance``        ``{mode: acceptance-criteria template}`` for every mode
``rule_detectable``   true when a ``feature:<key>`` presence detector decides the feature
``paper_counts``      optional ``{require: n, forbid: n}`` from the source paper
``verifier``          optional id of the verifier that checks an instantiated constraint

Templates may use ``{param}`` placeholders naming declared params. ``load_catalog`` takes a
bundled catalog name (``"reformbench"``, ``"ifeval"``) or a path; every validation error is
a ``ValueError`` naming the file, the feature and the field.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

MODES = ("require", "forbid")
PARAM_TYPES = {"int": int, "float": (int, float), "str": str, "list": list, "bool": bool}
BUNDLED = ("reformbench", "ifeval")
# Scores a catalog may declare (SPEC §3, §4.2):
#   tcpr              all-constraints pass rate (= IFEval's prompt-level accuracy)
#   constraint_level  mean pass over constraints (= IFEval's instruction-level accuracy)
#   emcr, r1, r2, r3  baseline-opposed multi-constraint correction (needs baseline data)
#   prompt_level, instruction_level   IFEval's names for tcpr / constraint_level
#   strict, loose     IFEval's official accuracies from the catalog's verifiers in that mode
METRICS = ("tcpr", "constraint_level", "emcr", "r1", "r2", "r3", "prompt_level", "instruction_level", "strict", "loose")
DEFAULT_METRICS = ("tcpr", "constraint_level", "emcr", "r1", "r2", "r3")
EMCR_METRICS = ("emcr", "r1", "r2", "r3")


@dataclass(frozen=True)
class Param:
    """One constraint parameter with its default and allowed range or choices."""

    name: str
    type: str = "str"
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: tuple = ()
    description: str = ""


@dataclass(frozen=True)
class Category:
    key: str
    name: str


@dataclass(frozen=True)
class Feature:
    """One catalog feature with its complementary constraint templates."""

    key: str
    name: str
    category: str
    category_name: str
    definition: str
    require_template: str | None
    forbid_template: str | None
    params: tuple[Param, ...] = ()
    acceptance: dict = field(default_factory=dict)
    rule_detectable: bool = False
    modes: tuple[str, ...] = MODES
    paper_require: int | None = None
    paper_forbid: int | None = None
    verifier: str | None = None

    def template(self, mode: str) -> str:
        """The raw constraint template for ``mode`` (ValueError if the mode is not offered)."""
        if mode not in self.modes:
            raise ValueError(f"feature {self.key!r} has no {mode!r} mode (modes: {list(self.modes)})")
        return self.require_template if mode == "require" else self.forbid_template

    def render(self, mode: str, **params) -> str:
        """The constraint text for ``mode`` with ``params`` (defaults fill the rest)."""
        return self._fill(self.template(mode), params)

    def render_acceptance(self, mode: str, **params) -> str:
        """The acceptance-criteria text for ``mode`` with ``params``."""
        self.template(mode)  # validates the mode
        return self._fill(self.acceptance[mode], params)

    def _fill(self, text: str, params: dict) -> str:
        declared = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(declared))
        if unknown:
            raise ValueError(f"feature {self.key!r}: unknown param(s) {unknown}; declared: {sorted(declared)}")
        values = {name: p.default for name, p in declared.items()} | params
        shown = {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in values.items()}
        return text.format_map(shown)


@dataclass(frozen=True)
class Catalog:
    """A named, versioned set of categories and features, in table order."""

    name: str
    version: str
    categories: tuple[Category, ...]
    features: tuple[Feature, ...]
    description: str = ""
    metrics: tuple[str, ...] = DEFAULT_METRICS

    def __post_init__(self):
        object.__setattr__(self, "_by_key", {f.key: f for f in self.features})

    def __len__(self) -> int:
        return len(self.features)

    def __iter__(self):
        return iter(self.features)

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __getitem__(self, key: str) -> Feature:
        return self.feature(key)

    def feature(self, key: str) -> Feature:
        """The feature with ``key`` (KeyError naming the catalog if unknown)."""
        try:
            return self._by_key[key]
        except KeyError:
            raise KeyError(f"catalog {self.name!r} has no feature {key!r}") from None

    def keys(self) -> list[str]:
        return [f.key for f in self.features]

    def in_category(self, category: str) -> list[Feature]:
        return [f for f in self.features if f.category == category]

    def rule_detectable_keys(self) -> list[str]:
        return [f.key for f in self.features if f.rule_detectable]

    def to_frame(self) -> pd.DataFrame:
        """One row per feature, in catalog order."""
        rows = [
            {
                "key": f.key,
                "name": f.name,
                "category": f.category,
                "category_name": f.category_name,
                "definition": f.definition,
                "require_template": f.require_template,
                "forbid_template": f.forbid_template,
                "require_acceptance": f.acceptance.get("require"),
                "forbid_acceptance": f.acceptance.get("forbid"),
                "params": ",".join(p.name for p in f.params),
                "modes": ",".join(f.modes),
                "rule_detectable": f.rule_detectable,
                "paper_require": f.paper_require,
                "paper_forbid": f.paper_forbid,
                "verifier": f.verifier,
            }
            for f in self.features
        ]
        frame = pd.DataFrame(rows)
        for col in ("paper_require", "paper_forbid"):
            frame[col] = frame[col].astype("Int64")
        return frame


def load_catalog(name_or_path: str | Path) -> Catalog:
    """Load a bundled catalog by name or a custom catalog file (YAML or JSON).

    Parameters
    ----------
    name_or_path : str or Path
        ``"reformbench"`` or ``"ifeval"`` for the bundled catalogs (SPEC §2), otherwise the
        path of a ``.yaml`` / ``.yml`` / ``.json`` file with the same schema.

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        If the file is missing, unparsable or violates the schema; the message names the
        file and the offending feature and field.
    """
    if isinstance(name_or_path, str) and name_or_path in BUNDLED:
        return _bundled(name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise ValueError(f"catalog {str(name_or_path)!r} is neither a bundled catalog {list(BUNDLED)} nor a file")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot parse catalog: {exc}") from None
    return parse_catalog(data, source=str(path))


@lru_cache(maxsize=None)
def _bundled(name: str) -> Catalog:
    """A bundled catalog, parsed once per process (catalogs are immutable): scoring reads the
    project catalog's metrics on every score, which cost 0.12 s of YAML parsing each time."""
    res = resources.files("reform_core.catalog").joinpath(f"{name}.yaml")
    return parse_catalog(yaml.load(res.read_text(encoding="utf-8"), Loader=_YAML_LOADER), source=f"<bundled {name}.yaml>")


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: same safe subset, faster


def parse_catalog(data: Any, *, source: str = "<catalog>") -> Catalog:
    """Validate a catalog given as plain data (the parsed YAML/JSON) and build it."""

    def fail(msg: str):
        raise ValueError(f"{source}: {msg}")

    if not isinstance(data, dict):
        fail("a catalog must be a mapping with name, version, categories and features")
    for fld in ("name", "version", "categories", "features"):
        if not data.get(fld):
            fail(f"missing or empty field {fld!r}")
    if not isinstance(data["categories"], list) or not isinstance(data["features"], list):
        fail("'categories' and 'features' must be lists")

    categories: dict[str, Category] = {}
    for i, c in enumerate(data["categories"]):
        if not isinstance(c, dict) or not c.get("key") or not c.get("name"):
            fail(f"category #{i + 1} needs a 'key' and a 'name'")
        if c["key"] in categories:
            fail(f"duplicate category key {c['key']!r}")
        categories[c["key"]] = Category(str(c["key"]), str(c["name"]))

    features: list[Feature] = []
    seen: set[str] = set()
    for i, f in enumerate(data["features"]):
        where = f"feature #{i + 1}"
        if not isinstance(f, dict):
            fail(f"{where} must be a mapping")
        key = f.get("key")
        if not key or not isinstance(key, str):
            fail(f"{where}: missing field 'key'")
        where = f"feature {key!r}"
        if key in seen:
            fail(f"duplicate feature key {key!r}")
        seen.add(key)
        features.append(_parse_feature(f, categories, where, fail))

    used = {f.category for f in features}
    empty = [k for k in categories if k not in used]
    if empty:
        fail(f"categories without features: {empty}")
    metrics = data.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not metrics or any(m not in METRICS for m in metrics):
        fail(f"field 'metrics' must be a non-empty list of {list(METRICS)}, got {metrics!r}")
    if set(EMCR_METRICS) & set(metrics) and not set(EMCR_METRICS) <= set(metrics):
        fail(f"field 'metrics': EMCR and its components come together ({list(EMCR_METRICS)})")
    return Catalog(
        name=str(data["name"]),
        version=str(data["version"]),
        categories=tuple(categories.values()),
        features=tuple(features),
        description=str(data.get("description", "")),
        metrics=tuple(dict.fromkeys(metrics)),
    )


def _parse_feature(f: dict, categories: dict, where: str, fail) -> Feature:
    for fld in ("name", "category", "definition"):
        if not f.get(fld) or not isinstance(f[fld], str):
            fail(f"{where}: missing field {fld!r}")
    if f["category"] not in categories:
        fail(f"{where}: unknown category {f['category']!r} (known: {list(categories)})")

    modes = f.get("modes", list(MODES))
    if not isinstance(modes, list) or not modes or any(m not in MODES for m in modes) or len(set(modes)) < len(modes):
        fail(f"{where}: field 'modes' must be a non-empty subset of {list(MODES)}, got {modes!r}")

    params = _parse_params(f.get("params") or [], where, fail)
    names = {p.name for p in params}
    acceptance = f.get("acceptance") or {}
    if not isinstance(acceptance, dict):
        fail(f"{where}: field 'acceptance' must map modes to texts")
    for mode in MODES:
        tmpl, acc = f.get(f"{mode}_template"), acceptance.get(mode)
        if mode not in modes:
            if tmpl or acc:
                fail(f"{where}: has a {mode} template or acceptance text but {mode!r} is not in its modes")
            continue
        for fld, text in ((f"{mode}_template", tmpl), (f"acceptance.{mode}", acc)):
            if not text or not isinstance(text, str):
                fail(f"{where}: missing field {fld!r}")
            _check_placeholders(text, names, f"{where}: field {fld!r}", fail)

    detectable = f.get("rule_detectable", False)
    if not isinstance(detectable, bool):
        fail(f"{where}: field 'rule_detectable' must be true or false, got {detectable!r}")
    counts = f.get("paper_counts") or {}
    if not isinstance(counts, dict) or any(
        k not in MODES or not isinstance(v, int) or v < 0 for k, v in counts.items()
    ):
        fail(f"{where}: field 'paper_counts' must map require/forbid to non-negative integers")
    return Feature(
        key=f["key"],
        name=f["name"],
        category=f["category"],
        category_name=categories[f["category"]].name,
        definition=f["definition"],
        require_template=f.get("require_template"),
        forbid_template=f.get("forbid_template"),
        params=params,
        acceptance={m: acceptance[m] for m in modes},
        rule_detectable=detectable,
        modes=tuple(modes),
        paper_require=counts.get("require"),
        paper_forbid=counts.get("forbid"),
        verifier=f.get("verifier"),
    )


def _parse_params(raw: Any, where: str, fail) -> tuple[Param, ...]:
    if not isinstance(raw, list):
        fail(f"{where}: field 'params' must be a list")
    params: list[Param] = []
    for j, p in enumerate(raw):
        if not isinstance(p, dict) or not p.get("name"):
            fail(f"{where}: param #{j + 1} needs a 'name'")
        pname, ptype = p["name"], p.get("type", "str")
        pwhere = f"{where}: param {pname!r}"
        if pname in {q.name for q in params}:
            fail(f"{where}: duplicate param {pname!r}")
        if ptype not in PARAM_TYPES:
            fail(f"{pwhere}: unknown type {ptype!r} (known: {list(PARAM_TYPES)})")
        default = p.get("default")
        if default is not None and not isinstance(default, PARAM_TYPES[ptype]):
            fail(f"{pwhere}: default {default!r} is not of type {ptype}")
        lo, hi, choices = p.get("min"), p.get("max"), tuple(p.get("choices") or ())
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            if (lo is not None and default < lo) or (hi is not None and default > hi):
                fail(f"{pwhere}: default {default} outside [{lo}, {hi}]")
        if choices and default is not None and default not in choices:
            fail(f"{pwhere}: default {default!r} not among choices {list(choices)}")
        params.append(Param(pname, ptype, default, lo, hi, choices, str(p.get("description", ""))))
    return tuple(params)


def _check_placeholders(text: str, names: set[str], where: str, fail) -> None:
    try:
        fields = {fname for _, fname, _, _ in string.Formatter().parse(text) if fname is not None}
    except ValueError as exc:
        fail(f"{where}: malformed placeholder ({exc}); write literal braces as {{{{ }}}}")
    undeclared = sorted(fields - names)
    if undeclared:
        fail(f"{where}: placeholder(s) {undeclared} are not declared params")
