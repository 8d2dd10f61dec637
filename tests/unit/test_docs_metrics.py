"""docs/metrics.md against the product code.

Every worked example and reference value of the page is parsed from the page itself (its
inputs and its stated results) and recomputed with ``reform_core``, so a change to either the
page or the code that makes them disagree fails here. The published values the page quotes
are also pinned below as outside references (Fleiss 1971; Shrout & Fleiss 1979; Krippendorff
2011; the ReFormBench paper, arXiv:2610.19693, Table A4 and App. A.1), so the page's input
data cannot be edited together with its stated result. Anchors are checked too: every heading
has a unique GitHub anchor, and every link into the page (from the page, the docs, the README
and the product code) resolves.
"""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from markdown_it import MarkdownIt
from scipy import stats

from reform_core import agreement
from reform_core.calibration import calibrate_stratified, pooled_weights, stratum_rates
from reform_core.catalog import load_catalog
from reform_core.metrics import mosaic, wise
from reform_core.metrics.composition import composition_table, prompting_comparison
from reform_core.metrics.coverage import catalog_coverage, spearman
from reform_core.metrics.intervals import point_scores
from reform_core.metrics.reform import build_index, coverage_table, table2, violation_spread
from reform_core.sample_size import cochran_size
from reform_core.sampling import allocate
from reform_core.verifiers import wise as wise_checks

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "metrics.md"
TEXT = DOC.read_text(encoding="utf-8")

# Outside references the page quotes (published, not computed here).
PUBLISHED = {
    "fleiss": 0.4302,  # Fleiss (1971), diagnoses data
    "icc": {"ICC(1,1)": 0.1657, "ICC(2,1)": 0.2898, "ICC(3,1)": 0.7148, "ICC(2,k)": 0.6201},  # Shrout & Fleiss (1979)
    "alpha": {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797},  # Krippendorff (2011)
    "worked": {"TCPR": 66.67, "EMCR": 27.78},  # ReFormBench App. A.1
    "pooled_coverage": 95.75,  # ReFormBench Table A4
}


# Anchors the product's docstrings and docs are meant to cite (docs/metrics.md#<anchor>).
ANCHORS = """tcpr constraint-level eligible-units joint-correction correction-rates emcr violation-spread
worked-example table-2 table-a2 table-a3 tables-a5-to-a7 table-a8 disagreements-and-strata sample-size allocation
stratified-calibration pooled-calibration missing-data intervals composition prompting-comparison catalog-coverage
feature-frequency-correlation catalog-metrics ifeval wording-robustness ranking-stability human-wording-validation
fleiss-kappa icc krippendorff-alpha mosaic mosaic-scores reference-values"""


# ----------------------------------------------------------------------------- reading the page


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def _sections() -> tuple[list[str], dict[str, list]]:
    """Every heading's anchor in order, and the tokens of each section (heading to the next
    heading of the same or a higher level)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(TEXT)
    heads = [(k, int(t.tag[1]), slug(tokens[k + 1].content)) for k, t in enumerate(tokens) if t.type == "heading_open"]
    out = {}
    for n, (start, level, name) in enumerate(heads):
        end = next((k for k, lv, _ in heads[n + 1 :] if lv <= level), len(tokens))
        out[name] = tokens[start:end]
    return [name for _, _, name in heads], out


HEADS, SECTIONS = _sections()


def tables(section: str) -> list[list[list[str]]]:
    """The tables of a section: each a list of rows (header first) of cell texts."""
    out, rows, row = [], None, None
    for t in SECTIONS[section]:
        if t.type == "table_open":
            rows = []
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(t.content.strip())
        elif t.type == "tr_close":
            rows.append(row)
            row = None
        elif t.type == "table_close":
            out.append(rows)
    return out


def table(section: str, header0: str) -> list[list[str]]:
    """The rows (without header) of the section's table whose first header cell is ``header0``."""
    found = [t for t in tables(section) if t[0][0] == header0]
    assert len(found) == 1, f"section #{section}: expected one table headed {header0!r}, found {len(found)}"
    return found[0][1:]


def prose(section: str) -> str:
    """The section's text (paragraphs, lists, code) in one string, spaces normalised."""
    parts = [t.content for t in SECTIONS[section] if t.type in ("inline", "fence")]
    return re.sub(r"\s+", " ", " ".join(parts))


def number(cell: str) -> float:
    """The first number of a cell ('66.67 %', '-16.67', '1,308' → float)."""
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", cell)
    assert m, f"no number in {cell!r}"
    return float(m.group().replace(",", ""))


def stated(section: str, pattern: str) -> re.Match:
    m = re.search(pattern, prose(section))
    assert m, f"section #{section} no longer states {pattern!r}"
    return m


def arithmetic(expr: str, names: dict | None = None) -> float:
    """The value of a plain arithmetic formula written on the page, e.g. ``(1 + 0.75 + 1) / 3`` or
    ``(BMS − EMS) / (BMS + (k − 1) EMS)``: Unicode minus read as ``-``, a space between two
    operands as a product; only numbers, ``names``, + − × / and parentheses are allowed."""
    ops = {"+", "-", "*", "/"}
    out = []
    for token in expr.replace("−", "-").split():
        if out and out[-1] not in ops and token not in ops:
            out.append("*")
        out.append(token)
    tree = ast.parse(" ".join(out), mode="eval")
    allowed = (
        ast.Expression,
        ast.BinOp,
        ast.UnaryOp,
        ast.Constant,
        ast.Name,
        ast.Load,
        ast.Add,
        ast.Sub,
        ast.Mult,
        ast.Div,
        ast.USub,
    )
    assert all(isinstance(node, allowed) for node in ast.walk(tree)), f"not plain arithmetic: {expr!r}"
    return float(eval(compile(tree, "<page>", "eval"), {"__builtins__": {}}, dict(names or {})))


def places(cell: str) -> float:
    """Half a unit of the cell's last printed digit: the tolerance of a rounded value."""
    m = re.search(r"\d[\d,]*(?:\.(\d+))?", cell)
    return 0.5 * 10 ** -len(m.group(1) or "")


# ----------------------------------------------------------------------------- anchors and wording


def test_every_heading_has_a_unique_anchor_and_every_link_resolves():
    heads = HEADS
    assert len(heads) == len(set(heads)), sorted(h for h in heads if heads.count(h) > 1)
    internal = set(re.findall(r"\]\(#([^)]+)\)", TEXT))
    assert internal - set(heads) == set()
    cited = set()
    for path in [
        *ROOT.glob("reform_core/**/*.py"),
        *ROOT.glob("pages/**/*.py"),
        *ROOT.glob("docs/*.md"),
        ROOT / "README.md",
    ]:
        cited |= set(re.findall(r"metrics\.md#([A-Za-z0-9_\-]+)", path.read_text(encoding="utf-8")))
    assert cited - set(heads) == set(), "links into docs/metrics.md name anchors it does not have"
    assert set(ANCHORS.split()) <= set(heads), "an anchor that code and docs cite has gone"


def test_page_cites_papers_not_private_files():
    for word in ("SP" + "EC", "seed 00", "/work/" + "shared"):
        assert word not in TEXT
    for arxiv in ("arXiv:2610.19693", "arXiv:2601.18554", "arXiv:2311.07911"):
        assert arxiv in TEXT


def test_catalog_sizes_match_the_bundled_catalogs():
    text = prose("catalog")
    frame = load_catalog("reformbench").to_frame()
    counts = frame.groupby("category_name", sort=False).size()
    assert f"has {len(frame)} features in eight categories" in text and counts.size == 8
    for name, n in counts.items():
        assert f"{name.lower()} ({n})" in text.lower(), name
    ifeval = load_catalog("ifeval").to_frame()
    assert f"IFEval's {len(ifeval)} instruction ids" in text and ifeval["category"].nunique() == 9


# ----------------------------------------------------------------------------- benchmark scores


def worked_instances() -> pd.DataFrame:
    """The worked example's judgment table as an INSTANCES frame (p = the label)."""
    modes = {"a": "forbid", "b": "require", "c": "forbid"}
    rows = []
    for inst, *cells, others in table("worked-example", "Instruction"):
        labels = [(t, cell) for t, cell in zip("abc", cells) if cell != "—"]
        labels += [(f"other-{inst}-{k}", x.strip()) for k, x in enumerate(others.split(",")) if others != "—"]
        for pos, (feature, value) in enumerate(labels, 1):
            rows.append(
                {
                    "iid": len(rows),
                    "model": "m",
                    "question": "q1",
                    "instruction": inst,
                    "condition": "main",
                    "task_type": "t",
                    "pair_group": inst,
                    "position": pos,
                    "feature": feature,
                    "category": f"cat-{feature}",
                    "mode": modes.get(feature, "require"),
                    "baseline_opposed": feature in modes,
                    "p": float(value),
                }
            )
    return pd.DataFrame(rows)


def result_rows(header0: str) -> dict[str, list[str]]:
    return {r[0]: r for r in table("worked-example", header0)}


def test_worked_example_binary_scores():
    inst = worked_instances()
    assert len(inst) == 9 and inst.groupby("instruction").size().eq(3).all()
    got = table2(inst).iloc[0]
    rows = result_rows("Score")
    assert set(rows) == {"TCPR", "R^(1)", "R^(2)", "R^(3)", "EMCR"}
    assert number(rows["TCPR"][1]) == got["n_instructions"]
    assert number(rows["TCPR"][2]) == pytest.approx(got["tcpr"] * got["n_instructions"] / 100)
    for k in (1, 2, 3):
        denominator, successes, value = rows[f"R^({k})"][1:]
        assert number(denominator) == got[f"n{k}"]
        assert number(successes) == pytest.approx(got[f"r{k}"] * got[f"n{k}"] / 100)
        assert got[f"r{k}"] == pytest.approx(number(value), abs=places(value))
    for name in ("TCPR", "EMCR"):
        assert got[name.lower()] == pytest.approx(number(rows[name][-1]), abs=places(rows[name][-1]))
        assert number(rows[name][-1]) == PUBLISHED["worked"][name]
    assert got["emcr"] == pytest.approx(100 * float(Fraction(1, 3) * (Fraction(1, 2) + Fraction(1, 3))))


def test_worked_example_violation_spread_and_coverage():
    inst = worked_instances()
    spread, cover = violation_spread(inst).iloc[0], coverage_table(inst).iloc[0]
    rows = table("worked-example", "K")
    assert [int(r[0]) for r in rows] == [1, 2, 3]
    for k, failed, violating, c, mean_cover in rows:
        assert spread[f"fail{k}"] == number(failed) and spread[f"w{k}"] == number(violating)
        assert spread[f"c{k}"] == pytest.approx(number(c), abs=places(c))
        assert cover[f"cover{k}"] == pytest.approx(number(mean_cover), abs=places(mean_cover))


def calibrated_frame() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The worked example with b in v2 an unreviewed A1B0 disagreement, plus the reviewed
    disagreements of its stratum (in another question) with the page's adjudicated labels."""
    labels = [
        int(x) for x in stated("worked-example", r"adjudicated labels are ((?:[01], )+[01])").group(1).split(", ")
    ]
    inst = worked_instances().assign(label_a=lambda d: d["p"], label_b=lambda d: d["p"])
    b_v2 = (inst["instruction"] == "v2") & (inst["feature"] == "b")
    inst.loc[b_v2, ["label_a", "label_b"]] = [1.0, 0.0]
    extra = inst[b_v2].copy().loc[inst[b_v2].index.repeat(len(labels))]
    extra = extra.assign(
        iid=range(100, 100 + len(labels)),
        question="q2",
        instruction=[f"w{k}" for k in range(len(labels))],
        pair_group=lambda d: d["instruction"],
    )
    inst = pd.concat([inst, extra], ignore_index=True)
    adjudications = pd.DataFrame({"iid": extra["iid"].to_numpy(), "a": np.array(labels, dtype=float)})
    return inst.drop(columns="p"), adjudications


def test_worked_example_calibrated_scores():
    inst, adjudications = calibrated_frame()
    rates = stratum_rates(inst, adjudications)
    assert len(rates) == 1 and rates["pi_hat"].iloc[0] == pytest.approx(
        number(stated("worked-example", r"π̂_h = ([\d.]+)").group(1))
    )
    cal = calibrate_stratified(inst, adjudications, rates=rates)
    assert cal.loc[(cal["instruction"] == "v2") & (cal["feature"] == "b"), "source"].item() == "stratum"
    got = table2(cal[cal["question"] == "q1"]).iloc[0]
    rows = result_rows("Calibrated score")
    for name, col in (("TCPR", "tcpr"), ("R^(1)", "r1"), ("R^(2)", "r2"), ("R^(3)", "r3"), ("EMCR", "emcr")):
        computation, value = rows[name][1:]
        assert got[col] == pytest.approx(number(value), abs=places(value))
        factor = 1 if name == "EMCR" else 100  # the page's own arithmetic, e.g. "(1 + 0.75 + 1) / 3"
        assert factor * arithmetic(computation) == pytest.approx(got[col], abs=0.01)


def test_prompting_example_keeps_the_denominators():
    base = worked_instances()
    prompted = base.assign(condition="prompted", instruction=base["instruction"] + "-p", p=1.0)
    got = prompting_comparison(pd.concat([base, prompted], ignore_index=True)).set_index("metric")
    m = stated(
        "prompting-comparison",
        r"TCPR rises from ([\d.]+) % to ([\d.]+) % \(\+([\d.]+) pp\) and EMCR from "
        r"([\d.]+) % to ([\d.]+) % \(\+([\d.]+) pp\), on the same (\d+) instructions and (\d+) units",
    )
    for metric, (b, o, d) in (("tcpr", m.groups()[0:3]), ("emcr", m.groups()[3:6])):
        assert (got.loc[metric, "base"], got.loc[metric, "other"], got.loc[metric, "diff_pp"]) == pytest.approx(
            (float(b), float(o), float(d)), abs=0.005
        )
    assert got.loc["tcpr", "n"] == int(m.group(7)) and got.loc["emcr", "n"] == int(m.group(8))


# ----------------------------------------------------------------------------- judging and calibration


def test_cochran_sizes():
    rows = table("sample-size", "Disagreements N")
    assert [r[2] for r in rows] == ["588", "609"]
    z = stats.norm.ppf(0.975)
    n0 = z * z * 0.25 / 0.03**2
    for population, n0_stated, n in rows:
        assert n0 == pytest.approx(number(n0_stated), abs=places(n0_stated))
        assert cochran_size(int(number(population))) == int(n)
        assert math.ceil(n0 / (1 + (n0 - 1) / number(population))) == int(n)  # the formula, literally


def test_allocation_example():
    n = int(stated("allocation", r"Example with `n = (\d+)`").group(1))
    rows = table("allocation", "Stratum")
    sizes = pd.Series([int(r[1]) for r in rows], index=[r[0] for r in rows])
    total = int(sizes.sum())
    assert [int(r[2]) for r in rows] == [n * s // total for s in sizes]
    assert [int(r[3]) for r in rows] == [max(n * s // total, 1) for s in sizes]
    assert allocate(sizes, n).tolist() == [int(r[4]) for r in rows]


def test_pooled_weights_example():
    m = stated(
        "pooled-calibration",
        r"a pool of ([\d,]+) decisions of which ([\d,]+) selected judge A gives "
        r"`W_A = ([\d.]+) %` and `W_B = ([\d.]+) %`",
    )
    n, k = int(number(m.group(1))), int(number(m.group(2)))
    w = pooled_weights(pd.DataFrame({"choice": ["A"] * k + ["B"] * (n - k)}))
    assert 100 * w["A"] == pytest.approx(float(m.group(3)), abs=0.005)
    assert 100 * w["B"] == pytest.approx(float(m.group(4)), abs=0.005)


# ----------------------------------------------------------------------------- auxiliary analyses


def test_composition_example():
    rows = []
    for group, pos, opposed, separate, joint in table("composition", "Group"):
        common = {"model": "m", "pair_group": group, "position": int(pos), "baseline_opposed": opposed == "yes"}
        rows.append({**common, "instruction": group, "condition": "main", "p": float(joint)})
        rows.append({**common, "instruction": f"{group}-{pos}", "condition": "single", "p": float(separate)})
    got = composition_table(pd.DataFrame(rows)).set_index("measure")
    names = {
        "All-pass": "all_pass",
        "Opposed target pass": "opposed",
        "Aligned target pass": "aligned",
        "Group gap": "gap",
    }
    for measure, separate, joint, delta in table("composition", "Measure"):
        r = got.loc[names[measure]]
        assert (r["separate"], r["joint"], r["delta_pp"]) == pytest.approx(
            (number(separate), number(joint), number(delta)), abs=0.005
        )


def coverage_from_page() -> pd.DataFrame:
    """Table A4's counts on the page as extracted instances, scored by ``catalog_coverage``."""
    frames = []
    for model, _, excluded, _, covered, uncovered, _ in table("catalog-coverage", "Model")[:-1]:
        mapping = ["exact"] * int(covered) + ["uncovered"] * int(uncovered) + ["not_format"] * int(excluded)
        frames.append(pd.DataFrame({"model": model, "mapping": mapping}))
    return catalog_coverage(pd.concat(frames, ignore_index=True)).set_index("model")


def test_catalog_coverage_counts_of_the_paper():
    rows = table("catalog-coverage", "Model")
    got = coverage_from_page()
    columns = ["extracted", "excluded", "valid", "covered", "uncovered"]
    for model, *counts, coverage in rows:
        assert got.loc[model, columns].tolist() == [int(c) for c in counts]
        assert got.loc[model, "coverage"] == pytest.approx(number(coverage), abs=0.005)
    assert rows[-1][0] == "Pooled" and number(rows[-1][-1]) == PUBLISHED["pooled_coverage"]


def spearman_vectors() -> tuple[np.ndarray, np.ndarray]:
    rows = table("feature-frequency-correlation", "Feature")
    return tuple(np.array([float(r[k]) for r in rows]) for k in (1, 2))


def test_spearman_example_with_ties():
    f_m, f_ref = spearman_vectors()
    rho = float(stated("feature-frequency-correlation", r"ρ = ([\d.]+)").group(1))
    assert spearman(f_m, f_ref) == pytest.approx(rho, abs=5e-5)
    assert spearman(f_m, f_ref) == pytest.approx(stats.spearmanr(f_m, f_ref).statistic, abs=1e-12)


def test_ifeval_prompt_and_instruction_level():
    rows = []
    for prompt, labels, _ in table("ifeval", "Prompt"):
        for pos, label in enumerate(labels.split(","), 1):
            rows.append(
                {
                    "model": "m",
                    "question": prompt,
                    "instruction": prompt,
                    "condition": "main",
                    "task_type": "t",
                    "feature": f"f{pos}",
                    "mode": "require",
                    "baseline_opposed": False,
                    "p": float(label),
                }
            )
    inst = pd.DataFrame(rows)
    got = point_scores(build_index(inst), inst["p"].to_numpy())
    m = stated(
        "ifeval", r"Prompt-level accuracy is \*\*([\d.]+) %\*\*.*instruction-level accuracy is \*\*([\d.]+) %\*\*"
    )
    assert got["tcpr"][0] == pytest.approx(float(m.group(1))) and got["constraint_level"][0] == pytest.approx(
        float(m.group(2))
    )


# ----------------------------------------------------------------------------- wording robustness


def test_wise_checker_examples():
    for output, check, result in table("wording-forms-and-checkers", "Output"):
        text = output.strip("`")
        if m := re.fullmatch(r"exactly (\d+) words", check):
            res = wise_checks.exact_words(text, n=int(m.group(1)))
        elif m := re.fullmatch(r"keyword `(\w+)` once", check):
            res = wise_checks.keyword_once(text, keyword=m.group(1))
        else:
            keys = re.fullmatch(r"keys \{(.+)\}", check).group(1).split(", ")
            res = wise_checks.json_keys(text, keys=keys)
        assert res.passed == result.startswith("pass"), (output, res.evidence)
        if "(" in result:
            assert res.detail["direction"] == result.split("(")[1].rstrip(")")


def test_wise_ranking_example():
    rows = table("ranking-stability", "Model")
    compliance = pd.DataFrame(
        {f: [float(r[k]) for r in rows] for k, f in enumerate(["POS", "NEG", "AVOID"], 1)}, index=[r[0] for r in rows]
    )
    rank, contrast = wise.ranking_stability(compliance), wise.wording_contrasts(compliance)
    for form, comp, delta, *metrics in table("ranking-stability", "Form"):
        assert contrast.loc[form, "compliance"] == pytest.approx(number(comp), abs=5e-5)
        assert contrast.loc[form, "delta"] == pytest.approx(number(delta), abs=5e-5)
        if form != "POS":
            for name, cell in zip(wise.RANKING_COLUMNS, metrics):
                assert rank.loc[form, name] == pytest.approx(number(cell), abs=places(cell))
            tau = stats.kendalltau(compliance["POS"], compliance[form], variant="b").statistic
            assert rank.loc[form, "tau_b"] == pytest.approx(tau, abs=1e-9)
    summary = wise.robustness(compliance)
    m = stated("ranking-stability", r"`C_mean = ([\d.]+)`, `C_worst = ([\d.]+)` \((\w+)\) and `G_wording = ([\d.]+)`")
    assert (summary["c_mean"], summary["c_worst"], summary["g_wording"]) == pytest.approx(
        (float(m.group(1)), float(m.group(2)), float(m.group(4))), abs=5e-5
    )
    assert summary["worst_form"] == m.group(3)


def test_holm_example():
    m = stated("bootstrap-intervals-and-holm", r"For example \(([\d., ]+)\) becomes \(([\d., ]+)\)")
    raw, adjusted = ([float(x) for x in g.split(", ")] for g in m.groups())
    assert wise.holm(raw) == pytest.approx(adjusted, abs=1e-12)


# ----------------------------------------------------------------------------- human wording validation


def shrout_fleiss() -> pd.DataFrame:
    rows = table("icc", "Target")
    return pd.DataFrame(
        [(t, f"j{k}", float(x)) for t, *xs in rows for k, x in enumerate(xs)], columns=["target", "rater", "rating"]
    )


def test_icc_reference_values():
    df = shrout_fleiss()
    published = table("icc", "Statistic")
    assert {kind: number(v) for kind, v in published} == PUBLISHED["icc"]
    for kind, value in published:
        got = agreement.icc(df, kind=kind[4:-1]).value
        assert got == pytest.approx(number(value), abs=places(value))


def krippendorff_data() -> pd.DataFrame:
    rows = table("krippendorff-alpha", "Observer")
    units = [f"u{k}" for k in range(1, len(rows[0]))]
    return pd.DataFrame(
        [(u, r[0], float(x)) for r in rows for u, x in zip(units, r[1:]) if x != "."],
        columns=["item", "rater", "label"],
    )


def test_icc_formulas_of_the_page():
    """The page's six ICC formulas, evaluated on mean squares from a literal two-way ANOVA,
    equal the library's values (on the reference data and on random ratings)."""
    rng = np.random.default_rng(3)
    y_random = rng.integers(1, 6, size=(12, 5)) + rng.integers(0, 3, size=(12, 1))
    sf = shrout_fleiss().pivot(index="target", columns="rater", values="rating").to_numpy()
    for y in (sf, y_random.astype(float)):
        n, k = y.shape
        grand = y.mean()
        ss_rows = k * ((y.mean(axis=1) - grand) ** 2).sum()
        ss_cols = n * ((y.mean(axis=0) - grand) ** 2).sum()
        ss_err = ((y - grand) ** 2).sum() - ss_rows - ss_cols
        names = {
            "BMS": ss_rows / (n - 1),
            "JMS": ss_cols / (k - 1),
            "EMS": ss_err / ((n - 1) * (k - 1)),
            "WMS": (ss_cols + ss_err) / (n * (k - 1)),
            "n": n,
            "k": k,
        }
        df = pd.DataFrame([(i, j, y[i, j]) for i in range(n) for j in range(k)], columns=["target", "rater", "rating"])
        for kind, _, formula in table("icc", "Kind"):
            value = arithmetic(formula.strip("`"), names)
            assert agreement.icc(df, kind=kind[4:-1]).value == pytest.approx(value, abs=1e-12), kind


def test_krippendorff_reference_values():
    df = krippendorff_data()
    assert len(df) == 41  # 48 cells, 7 of them missing
    published = table("krippendorff-alpha", "Level")
    assert {level: number(v) for level, v in published} == PUBLISHED["alpha"]
    for level, value in published:
        assert agreement.krippendorff_alpha(df, level=level) == pytest.approx(number(value), abs=places(value))


def fleiss_diagnoses() -> pd.DataFrame:
    rows = table("fleiss-kappa", "Patient")
    return pd.DataFrame(
        [(p, f"r{k}", int(x)) for p, labels in rows for k, x in enumerate(labels.split())],
        columns=["item", "rater", "label"],
    )


def test_fleiss_kappa_reference_value():
    df = fleiss_diagnoses()
    assert df["item"].nunique() == 30 and np.bincount(df["label"])[1:].tolist() == [26, 26, 30, 55, 43]
    assert df.groupby("item").size().eq(6).all()
    value = float(stated("fleiss-kappa", r"κ = ([\d.]+)").group(1))
    assert value == PUBLISHED["fleiss"]
    assert agreement.fleiss_kappa(df) == pytest.approx(value, abs=5e-5)


# ----------------------------------------------------------------------------- MOSAIC


def test_mosaic_example():
    rows = table("mosaic-scores", "Response")
    df = pd.DataFrame(
        [(r, int(p), c, float(s)) for r, p, c, s, _ in rows], columns=["prompt", "position", "constraint", "score"]
    )
    assert [int(r[4]) for r in rows] == (df["score"] >= 0.5).astype(int).tolist()
    got = mosaic.study_metrics(df)
    values = {}
    for r in got["scc"].itertuples():
        values[f"SCC {r.constraint}"] = r.scc
    for r in got["pcc"].itertuples():
        values[f"PCC {r.constraint_i}, {r.constraint_j}"] = r.pcc
    for r in got["poscc"].itertuples():
        values[f"PosCC {r.position}"] = r.poscc
    values["PA"], values["All followed"] = got["pa"]["pa"].item(), got["pa"]["all_followed"].item()
    stated_values = {name: number(v) for name, v in table("mosaic-scores", "Score")}
    assert set(stated_values) == set(values)
    for name, v in stated_values.items():
        assert values[name] == pytest.approx(v, abs=5e-5), name


# ----------------------------------------------------------------------------- the summary table


def _reference_computations() -> dict:
    """Each summary row's value, recomputed by the product code from the page's inputs."""
    worked = table2(worked_instances()).iloc[0]
    inst, adjudications = calibrated_frame()
    cal = calibrate_stratified(inst, adjudications)
    pool = pd.DataFrame({"choice": ["A"] * 6689 + ["B"] * (7125 - 6689)})
    sf = shrout_fleiss()
    return {
        "TCPR, worked example": worked["tcpr"],
        "EMCR, worked example": worked["emcr"],
        "EMCR, calibrated worked example": table2(cal[cal["question"] == "q1"])["emcr"].item(),
        "Cochran sample size, N = 1308": cochran_size(1308),
        "Cochran sample size, N = 1416": cochran_size(1416),
        "Pooled weight of judge A, 6,689 of 7,125": 100 * pooled_weights(pool)["A"],
        "Pooled catalog coverage": coverage_from_page().loc["Pooled", "coverage"],
        "Spearman ρ with ties": spearman(*spearman_vectors()),
        "Fleiss' κ, Fleiss 1971 diagnoses": agreement.fleiss_kappa(fleiss_diagnoses()),
        **{f"{kind}, Shrout & Fleiss 1979": agreement.icc(sf, kind=kind[4:-1]).value for kind in PUBLISHED["icc"]},
        "Krippendorff's α (nominal), Krippendorff 2011": agreement.krippendorff_alpha(krippendorff_data()),
    }


def test_reference_values_table():
    """The summary table: each row is one of the checks above (the values a reader looks up)."""
    computed = _reference_computations()
    rows = table("reference-values", "Quantity")
    assert {r[0] for r in rows} == set(computed), "a row of the table has no check here (or a check lost its row)"
    for quantity, _, value in rows:
        assert computed[quantity] == pytest.approx(number(value), abs=places(value)), quantity
