"""What each score means, worded for the benchmark at hand.

Every text that describes a metric — the Scores page, ``score`` (its JSON's
``metric_definitions`` and its text output), an export's manifest — comes from
:func:`describe_metrics`, from the catalog's declared metric set and the data's shape
(:class:`DataShape`): how many constraints the scored prompts carry and whether the project
has baseline annotations. So TCPR reads "all three of its constraints" only where every
prompt has exactly three and "all of the prompt's constraints" otherwise, and EMCR, R¹–R³ and
their exclusion counts appear only where the catalog declares them *and* baseline data
exists (a project without baseline data never claims EMCR). Definitions: ``docs/metrics.md``;
TCPR, EMCR and R^K are those of "ReFormBench: Benchmarking the Stability of Response-Conditioned
Format Correction in Large Language Models" (Gao et al., arXiv 2610.19693), the accuracies
IFEval's (Zhou et al., 2023, arXiv 2311.07911).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

EMCR_METRICS = ("emcr", "r1", "r2", "r3")
_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


@dataclass(frozen=True)
class DataShape:
    """The facts of the data that change how a metric reads.

    ``constraints_per_prompt``: the distinct numbers of constraints of the scored prompts;
    ``has_baseline``: the project has baseline annotations (a target's baseline opposition is
    known somewhere)."""

    constraints_per_prompt: tuple[int, ...] = ()
    has_baseline: bool = False

    @classmethod
    def of(cls, counts: Iterable[int], *, has_baseline: bool) -> "DataShape":
        return cls(tuple(sorted({int(c) for c in counts})), bool(has_baseline))


@dataclass(frozen=True)
class MetricText:
    """One metric as shown: its ``label`` (TCPR), expanded ``name``, the ``definition``
    sentence and a short ``tooltip`` for a table header."""

    metric: str
    label: str
    name: str
    definition: str
    tooltip: str

    def sentence(self) -> str:
        """``LABEL (name): definition`` — one line of plain text."""
        return f"{self.label} ({self.name}): {self.definition}"


@dataclass(frozen=True)
class MetricDescriptions:
    """The texts of the metrics that apply, in display order, and what applies."""

    texts: tuple[MetricText, ...]
    emcr: bool  # EMCR and R¹–R³ apply: declared by the catalog and baseline data exists
    emcr_declared: bool  # declared by the catalog (with or without baseline data)
    note: str = ""  # why a declared metric is not computed, when one is not

    def get(self, metric: str) -> MetricText | None:
        return next((t for t in self.texts if t.metric == metric), None)

    def display(self) -> list[MetricText]:
        """The texts as a page lists them: R1–R3 as one entry (``R¹, R², R³``)."""
        out, rs = [], [t for t in self.texts if t.metric in ("r1", "r2", "r3")]
        for t in self.texts:
            if t.metric == "r1":
                out.append(
                    MetricText("r", "R¹, R², R³", "joint correction rates at K = 1, 2, 3", f"{R_UNITS}.", rs[0].tooltip)
                )
            elif t.metric not in ("r2", "r3"):
                out.append(t)
        return out

    def as_dict(self) -> dict[str, str]:
        """``{metric: sentence}`` (the ``metric_definitions`` of ``score --json`` and exports)."""
        return {t.metric: t.sentence() for t in self.texts}


def _count_words(counts: tuple[int, ...]) -> str:
    if not counts:
        return ""
    lo, hi = counts[0], counts[-1]
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


def _tcpr(counts: tuple[int, ...], ifeval: bool) -> MetricText:
    three = counts == (3,)
    unit = "instruction" if three else "prompt"
    remarks = ["= IFEval's prompt-level accuracy"] if ifeval else []
    if three:
        name, meets, tip = (
            "three-constraint pass rate",
            "all three of its constraints",
            "Three-constraint pass rate: share of instructions meeting all three constraints (%).",
        )
    elif counts == (1,):
        name, meets, tip = (
            "constraint-set pass rate",
            "the prompt's constraint",
            "Share of prompts whose response meets the prompt's constraint (%).",
        )
        remarks.insert(0, "each prompt has one here")
    else:
        name, meets, tip = (
            "all-constraints pass rate",
            "all of the prompt's constraints",
            "All-constraints pass rate: share of prompts meeting all of the prompt's constraints (%).",
        )
        if len(counts) == 1:
            remarks.insert(0, f"each prompt has {_NUMBER_WORDS.get(counts[0], counts[0])} here")
        elif counts:
            remarks.insert(0, f"{_count_words(counts)} per prompt here")
    said = f" ({'; '.join(remarks)})" if remarks else ""
    return MetricText(
        "tcpr",
        "TCPR",
        name,
        f"the share of {unit}s whose response meets {meets}{said}; calibrated, each {unit} counts with "
        "the product of its constraints' pass probabilities.",
        tip,
    )


R_UNITS = (
    "an eligible unit is a set of K baseline-opposed targets of one question — formatting the model's own "
    "answer to the question does not show where it is required, or shows where it is forbidden — that recur "
    "across the question's variants; each R is the share of eligible units whose targets are all met in every "
    "variant that asks for them"
)


def _emcr_texts() -> list[MetricText]:
    out = [
        MetricText(
            f"r{k}",
            f"R{k}",
            f"joint correction rate at K = {k}",
            f"at K = {k}, {R_UNITS}.",
            f"Joint correction rate at K = {k}: share of eligible units of {k} baseline-opposed target(s) "
            "met in every variant that asks for them (%).",
        )
        for k in (1, 2, 3)
    ]
    out.append(
        MetricText(
            "emcr",
            "EMCR",
            "equal-weight multi-constraint correction rate",
            "(R1 + R2 + R3) / 3; its denominator is the eligible units at K = 1, 2, 3.",
            "Equal-weight multi-constraint correction rate: (R¹ + R² + R³) / 3 (%).",
        )
    )
    return out


def describe_metrics(declared: Sequence[str], shape: DataShape) -> MetricDescriptions:
    """The descriptions of the metrics a project reports.

    Parameters
    ----------
    declared : sequence of str
        The metric ids the project's catalog(s) declare (``tcpr``, ``constraint_level``,
        ``emcr``, ``r1``–``r3``, ``prompt_level``, ``instruction_level``, ``strict``, ``loose``).
    shape : DataShape
        Constraints per scored prompt and whether baseline annotations exist.

    Returns
    -------
    MetricDescriptions
        The texts of the metrics that apply, in display order (TCPR, R1–R3 and EMCR where
        they apply, the constraint pass rate, IFEval's strict / loose accuracies); ``emcr``
        true only where the catalog declares EMCR and baseline data exists; ``note`` says
        why a declared EMCR is not computed.
    """
    declared = set(declared)
    ifeval = bool({"prompt_level", "instruction_level"} & declared)
    texts = [_tcpr(shape.constraints_per_prompt, ifeval)] if "tcpr" in declared or not declared else []
    emcr_declared = bool(set(EMCR_METRICS) & declared)
    emcr = emcr_declared and shape.has_baseline
    if emcr:
        texts += _emcr_texts()
    if "constraint_level" in declared or ifeval:
        alias = " (= IFEval's instruction-level accuracy)" if ifeval else ""
        texts.append(
            MetricText(
                "constraint_level",
                "constraint level",
                "constraint pass rate",
                f"the mean pass probability over all scored constraints{alias}.",
                "Mean pass over constraints (%).",
            )
        )
    for mode in ("strict", "loose"):
        if mode in declared:
            texts.append(
                MetricText(
                    mode,
                    mode,
                    f"IFEval's {mode} accuracies",
                    f"prompt- and instruction-level accuracy from the catalog's verifiers run as the "
                    f"rules judge in {mode} mode (IFEval's official rules).",
                    f"IFEval {mode} accuracy (%).",
                )
            )
    note = (
        (
            "EMCR and R1–R3, declared by the catalog, need baseline annotations (which features a model's own answer "
            "shows); this project has none, so they are not computed"
        )
        if emcr_declared and not emcr
        else ""
    )
    return MetricDescriptions(tuple(texts), emcr, emcr_declared, note)
