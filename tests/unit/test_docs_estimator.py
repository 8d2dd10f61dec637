"""docs/estimator.md against the code, so the page cannot drift from it silently.

Every code name in the page's notation table must be a name in the code (not only in a docstring
or comment) of the module(s) that row names; every path, ``path::name``, dotted module, link and
anchor the page cites must exist; every bench section and scenario it quotes must be in
``bench/RESULTS.md``. The decision-noise numbers the page quotes are recomputed twice: with the
product's functions, and with a literal Lagrange solve of the least-variance problem written here.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest
from markdown_it import MarkdownIt

from reform_core.estimators.adjudicator_error import unbiased_values
from reform_core.estimators.allocation import second_opinion_noise

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "estimator.md"
TEXT = DOC.read_text(encoding="utf-8")
ESTIMATORS = ROOT / "reform_core" / "estimators"
RESULTS = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
TICKED = re.findall(r"`([^`\n]+)`", TEXT)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _tokens():
    return MarkdownIt("commonmark").enable("table").parse(TEXT)


def _notation_rows() -> list[list[str]]:
    """The cells (inline Markdown) of each body row of the first table under "Notation"."""
    toks = _tokens()
    start = next(k for k, t in enumerate(toks) if t.type == "heading_open" and toks[k + 1].content == "Notation")
    begin = next(k for k in range(start, len(toks)) if toks[k].type == "table_open")
    rows, row, in_body = [], None, False
    for t in toks[begin:]:
        if t.type == "table_close":
            break
        in_body = in_body or t.type == "tbody_open"
        if t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t.content)
        elif t.type == "tr_close" and in_body:
            rows.append(row)
    return rows


def _module(path: str) -> Path:
    """A module path of the page: from the repository root, else from ``reform_core/estimators/``."""
    return ROOT / path if path.startswith(("reform_core/", "bench/", "tests/", "docs/")) else ESTIMATORS / path


def _code_names(path: Path) -> set[str]:
    """Every name token of a Python file outside strings and comments."""
    src = path.read_text(encoding="utf-8")
    return {t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.NAME}


def _defined(path: Path, qualname: str) -> bool:
    """Whether ``qualname`` (``f``, ``Class`` or ``Class.member``) is defined in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def names(body) -> dict:
        out = {}
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out[node.name] = node
            elif isinstance(node, ast.Assign):
                out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                out[node.target.id] = node
        return out

    scope = names(tree.body)
    parts = qualname.split(".")
    for part in parts[:-1]:
        node = scope.get(part)
        if not isinstance(node, ast.ClassDef):
            return False
        scope = names(node.body)
    return parts[-1] in scope


# ----------------------------------------------------------------------------- the notation table


def test_every_code_name_of_the_notation_table_is_a_name_in_the_modules_of_its_row():
    rows = _notation_rows()
    assert len(rows) >= 40, "the notation table was not found or lost its rows"
    checked = 0
    for symbol, meaning, code, where in rows:
        names = re.findall(r"`([^`]+)`", code)
        modules = [_module(p) for p in re.findall(r"`([^`]+)`", where)]
        if not names:
            assert code.strip() == "—" and not modules, f"row {symbol!r}: a code name or '—' expected"
            continue
        assert modules, f"row {symbol!r} names no module"
        for m in modules:
            assert m.is_file(), f"row {symbol!r}: {m.relative_to(ROOT)} does not exist"
        found = set().union(*(_code_names(m) for m in modules))
        for name in names:
            assert re.fullmatch(r"[A-Za-z_]\w*", name), f"row {symbol!r}: {name!r} is not a code name"
            assert name in found, (
                f"row {symbol!r}: {name!r} is not a name in {[str(m.relative_to(ROOT)) for m in modules]}"
            )
            checked += 1
    assert checked >= 60


def test_a_renamed_variable_would_fail_the_table_check():
    """The check reads code, not prose: a name only in a docstring or comment does not count."""
    names = _code_names(ESTIMATORS / "cluster" / "totals.py")
    assert "higher" in names and "a_dev" in names
    assert "derivation" not in names  # a word of the module's docstring only


# ----------------------------------------------------------------------------- what the page cites


def test_every_path_and_definition_the_page_cites_exists():
    cited = 0
    for tok in TICKED:
        path, _, qualname = tok.partition("::")
        if re.fullmatch(r"(reform_core|bench|tests|docs)/[\w./-]+", path) or re.fullmatch(r"[\w/]+\.py", path):
            target = _module(path)
            assert target.exists(), f"{tok!r}: {target.relative_to(ROOT)} does not exist"
            if qualname:
                assert _defined(target, qualname), f"{tok!r}: {qualname} is not defined in {path}"
            cited += 1
    assert cited >= 30


def test_every_dotted_module_the_page_cites_imports():
    for tok in TICKED:
        if not re.fullmatch(r"reform_core(\.\w+)+", tok):
            continue
        parts = tok.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
        else:
            pytest.fail(f"{tok!r} does not import")


def test_links_and_anchors_resolve():
    toks = _tokens()
    heads = [slug(toks[k + 1].content) for k, t in enumerate(toks) if t.type == "heading_open"]
    assert len(heads) == len(set(heads)), "two headings share an anchor"
    for target in re.findall(r"\]\(([^)\s]+)\)", TEXT):
        page, _, anchor = target.partition("#")
        if not page:
            assert anchor in heads, f"no heading for #{anchor}"
        else:
            assert (DOC.parent / page).is_file(), f"link to a missing page {page}"
    # the sections the contents list promises
    for name in (
        "notation",
        "the-design",
        "the-point-estimate",
        "measurement-variance",
        "population-interval",
        "design-choices-and-their-measured-reasons",
        "references",
    ):
        assert name in heads


def test_the_bench_sections_and_scenarios_it_quotes_are_in_the_results():
    heads = [re.sub(r"^#+\s*", "", line) for line in RESULTS.splitlines() if line.startswith("#")]
    prose = re.sub(r"`[^`]*`", "", TEXT)
    quoted = {" ".join(q.split()) for q in re.findall(r'"([^"]+)"', prose)}
    sections = {q for q in quoted if q[0].isupper() and len(q.split()) >= 3}
    assert len(sections) >= 4
    for q in sections:
        assert any(h.startswith(q) for h in heads), f"bench/RESULTS.md has no section {q!r}"
    for scenario in set(re.findall(r"err\d\d_both\d_(?:corr|indep)", TEXT)):
        assert f"#### {scenario}" in RESULTS, scenario


def test_the_page_cites_papers_not_private_files():
    for word in ("SP" + "EC", "seed 00", "/work/", "eq. 3.5.?"):
        assert word not in TEXT
    for ref in (
        "Dawid, A. P., & Skene",
        "Hui, S. L., & Walter",
        "Zrnic, T., & Candès",
        "Neyman, J. (1934)",
        "Särndal, C.-E., Swensson, B., & Wretman, J. (1992)",
        "Wolter, K. M. (2007)",
        "Efron, B., & Tibshirani",
    ):
        assert ref in TEXT


# ----------------------------------------------------------------------------- quoted decision noise


def _literal_noise(p1: np.ndarray, p0: np.ndarray, rho: float) -> float:
    """Least prior-weighted variance of an unbiased estimate over outcomes with probabilities
    p1 / p0 given the truth 1 / 0: the KKT system of min Σ w f² s.t. Σ p1 f = 1, Σ p0 f = 0."""
    w = rho * p1 + (1 - rho) * p0
    n = len(w)
    kkt = np.zeros((n + 2, n + 2))
    kkt[:n, :n] = np.diag(2 * w)
    kkt[:n, n], kkt[:n, n + 1] = p1, p0
    kkt[n, :n], kkt[n + 1, :n] = p1, p0
    f = np.linalg.solve(kkt, np.r_[np.zeros(n), 1.0, 0.0])[:n]
    return float(rho * (p1 @ f**2 - 1) + (1 - rho) * (p0 @ f**2))


def _rule(q: float, depth: int) -> np.ndarray:
    """Leaves of the opinion rule: stop at the k-th decision equal to the reference, or all against."""
    return np.array([(1 - q) ** k * q for k in range(depth)] + [(1 - q) ** depth])


@pytest.mark.parametrize("quoted, depth", [("0.0177", 2), ("0.0054", 3)])
def test_the_quoted_noise_of_the_opinion_rule(quoted, depth):
    """At 10 % adjudicator error and an agreed label right with probability 0.99."""
    e, rho = 0.1, 0.99
    literal = _literal_noise(_rule(1 - e, depth), _rule(e, depth), rho)
    assert float(second_opinion_noise(e, np.array([rho]), depth)[0]) == pytest.approx(literal, rel=1e-9)
    assert f"{literal:.4f}" == quoted and quoted in TEXT


def test_the_quoted_noise_of_one_and_of_two_fixed_decisions():
    e, rho = 0.1, 0.99
    one = e * (1 - e) / (1 - 2 * e) ** 2
    pats = np.array([[0, 0], [1, 0], [0, 1], [1, 1]])
    p1, p0 = np.prod(np.where(pats == 1, 1 - e, e), 1), np.prod(np.where(pats == 1, e, 1 - e), 1)
    two = _literal_noise(p1, p0, rho)
    f, _ = unbiased_values(p1, p0, np.float64(rho))
    assert rho * (p1 @ f**2 - 1) + (1 - rho) * (p0 @ f**2) == pytest.approx(two, rel=1e-9)
    assert _literal_noise(np.array([1 - e, e]), np.array([e, 1 - e]), rho) == pytest.approx(one, rel=1e-9)
    assert f"{one:.4f}" in TEXT and f"{two:.4f}" in TEXT and f"{rho * (1 - rho):.4f}" in TEXT
