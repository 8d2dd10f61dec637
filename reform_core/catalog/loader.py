"""Load and validate feature catalogs (docs/metrics.md#catalog; the file format: docs/catalog.md).

A catalog is data: a YAML or JSON file with ``name``, ``version``, ``categories`` (list of
``{key, name}``), ``features`` and optionally ``metrics``: the scores that apply to it
(docs/metrics.md#catalog-metrics; ids of :data:`METRICS`, default :data:`DEFAULT_METRICS`). Each feature has

``key``               stable snake_case id (IFEval: the instruction id, e.g. ``punctuation:no_comma``)
``name``              display name
``category``          key of one of the catalog's categories
``definition``        the generic presence definition (ReFormBench, arXiv:2610.19693, Table A12)
``modes``             meaningful constraint modes, default ``[require, forbid]``
``require_template``  constraint text for ``require`` (needed when ``require`` is a mode)
``forbid_template``   constraint text for ``forbid`` (needed when ``forbid`` is a mode)
``params``            list of ``{name, type, default, min?, max?, choices?, description?}``; ``type``
                      one of int, float, str, list, bool, any (any JSON value)
``acceptance``        ``{mode: acceptance-criteria template}`` for every mode
``rule_detectable``   true when a ``feature:<key>`` presence detector decides the feature
``paper_counts``      optional ``{require: n, forbid: n}`` from the source paper
``verifier``          optional id of the verifier that checks an instantiated constraint

Templates may use ``{param}`` placeholders naming declared params. ``load_catalog`` takes a
bundled catalog name (``"reformbench"``, ``"ifeval"``) or a path; :func:`parse_catalog_text`
takes a file's text (an upload, a catalog stored with a project). Every problem is reported
in one :class:`CatalogError` (a ``ValueError``) as ``file:line: field: message``, the message
naming the feature. The format, with a complete example: ``docs/catalog.md``.
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
PARAM_TYPES = {"int": int, "float": (int, float), "str": str, "list": list, "bool": bool, "any": object}
BOOL_OK = ("bool", "any")  # the param types a true/false value is (bool is an int subclass in Python)
BUNDLED = ("reformbench", "ifeval")
# Scores a catalog may declare (docs/metrics.md#benchmark-scores, #catalog-metrics):
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


class CatalogError(ValueError):
    """Every problem of a catalog file, each located as ``file:line: field: message``
    (``errors``; the line is the nearest one of the file, 0 where unknown)."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


class _Problem(Exception):
    def __init__(self, path: tuple, message: str):
        self.path, self.message = path, message


def _fail(message: str, *path) -> None:
    raise _Problem(path, message)


def load_catalog(name_or_path: str | Path) -> Catalog:
    """Load a bundled catalog by name or a custom catalog file (YAML or JSON).

    Parameters
    ----------
    name_or_path : str or Path
        ``"reformbench"`` or ``"ifeval"`` for the bundled catalogs, otherwise the path of a
        ``.yaml`` / ``.yml`` / ``.json`` file with the same schema (``docs/catalog.md``).

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        If the file is missing, unparsable or violates the schema; a :class:`CatalogError`
        lists every problem as ``file:line: field: message`` (the message names the feature).
    """
    if isinstance(name_or_path, str) and name_or_path in BUNDLED:
        return _bundled(name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise ValueError(f"catalog {str(name_or_path)!r} is neither a bundled catalog {list(BUNDLED)} nor a file")
    return parse_catalog_text(
        path.read_text(encoding="utf-8"), source=str(path), json_format=path.suffix.lower() == ".json"
    )


@lru_cache(maxsize=None)
def _bundled(name: str) -> Catalog:
    """A bundled catalog, parsed once per process (catalogs are immutable): scoring reads the
    project catalog's metrics on every score, which cost 0.12 s of YAML parsing each time."""
    return parse_catalog(yaml.load(bundled_text(name), Loader=_YAML_LOADER), source=f"<bundled {name}.yaml>")


def bundled_text(name: str) -> str:
    """The text of a bundled catalog's YAML file."""
    return resources.files("reform_core.catalog").joinpath(f"{name}.yaml").read_text(encoding="utf-8")


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: same safe subset, faster


def parse_catalog_text(text: str, *, source: str = "<catalog>", json_format: bool = False) -> Catalog:
    """A catalog from the text of a YAML (or, ``json_format``, JSON) file; every problem is
    reported in one :class:`CatalogError` with its line: parse errors, keys given twice in a
    mapping (YAML and JSON would silently keep the last one) and schema violations."""
    tree = None
    try:
        tree = yaml.compose(text, Loader=yaml.SafeLoader)  # line numbers (JSON is YAML too, nearly always)
    except yaml.YAMLError as exc:
        if not json_format:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else 0
            raise CatalogError([f"{source}:{line}: (file): cannot parse catalog: {_one_line(exc)}"]) from None
    dupes = _duplicate_keys(tree, source) if tree is not None else []
    try:
        data = json.loads(text) if json_format else yaml.load(text, Loader=_YAML_LOADER)
    except (ValueError, RecursionError, yaml.YAMLError) as exc:
        line = getattr(exc, "lineno", 0)
        raise CatalogError([f"{source}:{line}: (file): cannot parse catalog: {_one_line(exc)}"]) from None
    if json_format and tree is None:  # not composable as YAML: the repeated keys without their lines
        from reform_core.records import duplicate_keys

        dupes = [
            f"{source}:0: {k}: given twice in one object (the file would keep only the last value)"
            for k in duplicate_keys(text)
        ]
    try:
        catalog = parse_catalog(data, source=source, locate=lambda path: _line_of(tree, path))
    except CatalogError as exc:
        raise CatalogError(dupes + exc.errors) from None
    if dupes:
        raise CatalogError(dupes)
    return catalog


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _duplicate_keys(node, source: str) -> list[str]:
    """A located error for every key given twice in one mapping of a composed YAML tree."""
    found, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.MappingNode):
            seen = set()
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in seen:
                        found.append((k.start_mark.line + 1, k.value))
                    seen.add(k.value)
                stack.append(v)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return [
        f"{source}:{line}: {key}: given twice in one mapping (the file would keep only the last value)"
        for line, key in sorted(found)
    ]


def _line_of(tree, path: tuple) -> int:
    """The 1-based line of the deepest node of ``path`` (keys and list indices) in ``tree``."""
    node, line = tree, (tree.start_mark.line + 1 if tree is not None else 0)
    for part in path:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def parse_catalog(data: Any, *, source: str = "<catalog>", locate=None) -> Catalog:
    """Validate a catalog given as plain data (the parsed YAML/JSON) and build it.

    Every feature is checked (one problem per feature: its first); ``locate(path)`` gives the
    line of a field's path (``("features", 3, "name")``) for the :class:`CatalogError`."""
    problems: list[_Problem] = []
    try:
        categories = _parse_header(data)
    except _Problem as p:
        raise _catalog_error([p], source, locate) from None
    features: list[Feature] = []
    seen: set[str] = set()
    for i, f in enumerate(data["features"]):
        try:
            if not isinstance(f, dict):
                _fail(f"feature #{i + 1} must be a mapping", "features", i)
            key = f.get("key")
            if not key or not isinstance(key, str):
                _fail(f"feature #{i + 1}: missing field 'key'", "features", i, "key")
            if key in seen:
                _fail(f"duplicate feature key {key!r}", "features", i, "key")
            seen.add(key)
            features.append(_parse_feature(f, categories, f"feature {key!r}", ("features", i)))
        except _Problem as p:
            problems.append(p)
    try:
        metrics = _parse_tail(data, categories, features)
    except _Problem as p:
        problems.append(p)
    if problems:
        raise _catalog_error(problems, source, locate)
    return Catalog(
        name=str(data["name"]),
        version=str(data["version"]),
        categories=tuple(categories.values()),
        features=tuple(features),
        description=str(data.get("description", "")),
        metrics=tuple(dict.fromkeys(metrics)),
    )


def _catalog_error(problems: list[_Problem], source: str, locate) -> CatalogError:
    out = []
    for p in problems:
        line = locate(p.path) if locate else 0
        field_ = ".".join(map(str, p.path)) or "(catalog)"
        out.append(" ".join(f"{source}:{line}: {field_}: {p.message}".split("\n")))
    return CatalogError(out)


def _parse_header(data: Any) -> dict[str, Category]:
    """The top-level fields and the categories (problems here stop the parse)."""
    if not isinstance(data, dict):
        _fail("a catalog must be a mapping with name, version, categories and features")
    for fld in ("name", "version", "categories", "features"):
        if not data.get(fld):
            _fail(f"missing or empty field {fld!r}", fld)
    for fld in ("categories", "features"):
        if not isinstance(data[fld], list):
            _fail(f"{fld!r} must be a list", fld)
    if not isinstance(data["name"], str) or not data["name"].strip() or len(data["name"]) > 100:
        _fail("field 'name' must be a text of 1 to 100 characters", "name")
    categories: dict[str, Category] = {}
    for i, c in enumerate(data["categories"]):
        if not isinstance(c, dict) or not c.get("key") or not c.get("name"):
            _fail(f"category #{i + 1} needs a 'key' and a 'name'", "categories", i)
        if c["key"] in categories:
            _fail(f"duplicate category key {c['key']!r}", "categories", i, "key")
        categories[c["key"]] = Category(str(c["key"]), str(c["name"]))
    return categories


def _parse_tail(data: dict, categories: dict, features: list[Feature]) -> list[str]:
    used = {f.category for f in features}
    empty = [k for k in categories if k not in used]
    if empty and len(features) == len(data["features"]):
        _fail(f"categories without features: {empty}", "categories")
    metrics = data.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not metrics or any(m not in METRICS for m in metrics):
        _fail(f"field 'metrics' must be a non-empty list of {list(METRICS)}, got {metrics!r}", "metrics")
    if set(EMCR_METRICS) & set(metrics) and not set(EMCR_METRICS) <= set(metrics):
        _fail(f"field 'metrics': EMCR and its components come together ({list(EMCR_METRICS)})", "metrics")
    return metrics


def _parse_feature(f: dict, categories: dict, where: str, at: tuple) -> Feature:
    for fld in ("name", "category", "definition"):
        if not f.get(fld) or not isinstance(f[fld], str):
            _fail(f"{where}: missing field {fld!r}", *at, fld)
    if f["category"] not in categories:
        _fail(f"{where}: unknown category {f['category']!r} (known: {list(categories)})", *at, "category")

    modes = f.get("modes", list(MODES))
    if not isinstance(modes, list) or not modes or any(m not in MODES for m in modes) or len(set(modes)) < len(modes):
        _fail(f"{where}: field 'modes' must be a non-empty subset of {list(MODES)}, got {modes!r}", *at, "modes")

    params = _parse_params(f.get("params") or [], where, (*at, "params"))
    names = {p.name for p in params}
    acceptance = f.get("acceptance") or {}
    if not isinstance(acceptance, dict):
        _fail(f"{where}: field 'acceptance' must map modes to texts", *at, "acceptance")
    for mode in MODES:
        tmpl, acc = f.get(f"{mode}_template"), acceptance.get(mode)
        if mode not in modes:
            if tmpl or acc:
                _fail(
                    f"{where}: has a {mode} template or acceptance text but {mode!r} is not in its modes",
                    *at,
                    f"{mode}_template" if tmpl else "acceptance",
                )
            continue
        for fld, text, path in (
            (f"{mode}_template", tmpl, (*at, f"{mode}_template")),
            (f"acceptance.{mode}", acc, (*at, "acceptance", mode)),
        ):
            if not text or not isinstance(text, str):
                _fail(f"{where}: missing field {fld!r}", *path)
            _check_placeholders(text, names, f"{where}: field {fld!r}", path)

    detectable = f.get("rule_detectable", False)
    if not isinstance(detectable, bool):
        _fail(f"{where}: field 'rule_detectable' must be true or false, got {detectable!r}", *at, "rule_detectable")
    counts = f.get("paper_counts") or {}
    if not isinstance(counts, dict) or any(
        k not in MODES or not isinstance(v, int) or v < 0 for k, v in counts.items()
    ):
        _fail(f"{where}: field 'paper_counts' must map require/forbid to non-negative integers", *at, "paper_counts")
    verifier = f.get("verifier")
    if verifier is not None and (not isinstance(verifier, str) or not verifier.strip()):
        _fail(f"{where}: field 'verifier' must be the id of a verifier, got {verifier!r}", *at, "verifier")
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
        verifier=verifier,
    )


def _parse_params(raw: Any, where: str, at: tuple) -> tuple[Param, ...]:
    if not isinstance(raw, list):
        _fail(f"{where}: field 'params' must be a list", *at)
    params: list[Param] = []
    for j, p in enumerate(raw):
        if not isinstance(p, dict) or not p.get("name"):
            _fail(f"{where}: param #{j + 1} needs a 'name'", *at, j)
        pname, ptype = p["name"], p.get("type", "str")
        pwhere, pat = f"{where}: param {pname!r}", (*at, j)
        if pname in {q.name for q in params}:
            _fail(f"{where}: duplicate param {pname!r}", *pat, "name")
        if ptype not in PARAM_TYPES:
            _fail(f"{pwhere}: unknown type {ptype!r} (known: {list(PARAM_TYPES)})", *pat, "type")
        default = p.get("default")
        if default is not None and (
            not isinstance(default, PARAM_TYPES[ptype]) or (isinstance(default, bool) and ptype not in BOOL_OK)
        ):
            _fail(f"{pwhere}: default {default!r} is not of type {ptype}", *pat, "default")
        lo, hi, choices = p.get("min"), p.get("max"), tuple(p.get("choices") or ())
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            if (lo is not None and default < lo) or (hi is not None and default > hi):
                _fail(f"{pwhere}: default {default} outside [{lo}, {hi}]", *pat, "default")
        if choices and default is not None and default not in choices:
            _fail(f"{pwhere}: default {default!r} not among choices {list(choices)}", *pat, "default")
        params.append(Param(pname, ptype, default, lo, hi, choices, str(p.get("description", ""))))
    return tuple(params)


def _check_placeholders(text: str, names: set[str], where: str, at: tuple) -> None:
    try:
        fields = {fname for _, fname, _, _ in string.Formatter().parse(text) if fname is not None}
    except ValueError as exc:
        _fail(f"{where}: malformed placeholder ({exc}); write literal braces as {{{{ }}}}", *at)
    undeclared = sorted(fields - names)
    if undeclared:
        _fail(f"{where}: placeholder(s) {undeclared} are not declared params", *at)
