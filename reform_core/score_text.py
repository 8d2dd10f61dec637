"""The ``score`` JSON as text a person reads: the CLI's tables and the export's ``summary.txt``.

Every point is rounded to what its interval supports and a rate over too few units shows
"too few units (n = 3)" instead of its interval (:mod:`reform_core.display`,
docs/display.md); the JSON itself keeps full precision. Pure: dict in, text out.
"""

from __future__ import annotations

from reform_core import display

METRICS = (
    ("TCPR", "tcpr"),
    ("EMCR", "emcr"),
    ("R1", "r1"),
    ("R2", "r2"),
    ("R3", "r3"),
    ("constr.", "constraint_level"),
)
TOO_FEW_MARK = "*"


def units(row: dict, metric: str) -> int | None:
    """The denominator of ``metric`` in one model's ``score`` JSON row: instructions for TCPR
    and the constraint level, eligible units for EMCR (all K) and R^K."""
    u = row.get("units") or []
    if metric in ("tcpr", "constraint_level", "prompt_level", "instruction_level"):
        return (row.get("instructions") or {}).get("scored")
    if metric == "emcr":
        return sum(u) if u else None
    k = int(metric[1]) - 1
    return u[k] if k < len(u) else None


def _bounds(row: dict, metric: str, kind: str):
    iv = ((row.get("intervals") or {}).get(kind) or {}).get(metric)
    return (iv[0], iv[1]) if iv and iv[0] is not None and iv[1] is not None else (None, None)


def shown(row: dict, metric: str, kind: str = "measurement") -> display.Shown:
    """One metric of one model as shown, rounded by its ``kind`` interval (the population one
    when there is no measurement interval, as for a raw judge)."""
    lo, hi = _bounds(row, metric, kind)
    if lo is None and kind == "measurement":
        lo, hi = _bounds(row, metric, "population")
    unit = "instructions" if metric in ("tcpr", "constraint_level") else "units"
    return display.show(row.get(metric), lo, hi, units(row, metric), unit=unit)


def _cell(row: dict, metric: str) -> str:
    if row.get(metric) is None:
        return "—"
    s = shown(row, metric)
    return s.point + (TOO_FEW_MARK if s.greyed else "")


def score_text(out: dict) -> str:
    """The ``score`` JSON as a table; a missing number shows — and its reason below the table;
    a point over too few units carries ``*`` (explained below the table)."""
    ifeval = [m for m in ("strict", "loose") if m in out.get("metrics", [])]
    emcr = "emcr" in out.get("metrics", [])  # EMCR, R1–R3 and their units only where they apply
    cols = [c for c in METRICS if emcr or c[1] in ("tcpr", "constraint_level")]
    head = f"{'model':<24}" + "".join(f"{c:>9}" for c, _ in cols)
    head += (
        "".join(f"{m + ' P':>10}{m + ' I':>10}" for m in ifeval)
        + ("  units         " if emcr else "")
        + " scored/answered"
    )
    lines, marked = [head], False
    for m, r in out["models"].items():
        cells = [_cell(r, k) for _, k in cols]
        marked = marked or any(c.endswith(TOO_FEW_MARK) for c in cells)
        row = f"{m[:23]:<24}" + "".join(f"{c:>9}" for c in cells)
        for mode in ifeval:
            acc = r.get(mode) or {}
            row += "".join(f"{display.number_text(acc.get(k), 1):>10}" for k in ("prompt_level", "instruction_level"))
        row += (
            f"  {str(r['units']):<14}" if emcr else ""
        ) + f" {r['instructions']['scored']}/{r['instructions']['answered']}"
        lines.append(row)
    if marked:
        lines.append(
            f"{TOO_FEW_MARK} too few units for an informative interval (n < {display.MIN_UNITS}, or an interval "
            f"wider than {display.MAX_WIDTH_PP:.0f} pp)"
        )
    if not any(r.get("intervals") for r in out["models"].values()):
        lines.append(
            "(points to one decimal; with --intervals each is rounded to what its interval supports, docs/display.md)"
        )
    for m, r in out["models"].items():
        lines += [f"{m}: {n}" for n in r["notes"]]
    if out.get("other_pair_decisions"):
        lines.append(f"{out['other_pair_decisions']} decision(s) belong to plans of other judge pairs and are not used")
    lines += list(out.get("metric_definitions", {}).values())
    return "\n".join(lines)


def interval_lines(m: str, r: dict) -> list[str]:
    """One model's measurement and population intervals, each rounded by its own width."""
    lines = []
    for kind in ("measurement", "population"):
        parts = []
        for k, v in ((r.get("intervals") or {}).get(kind) or {}).items():
            if not v or v[0] is None:
                continue
            name = "constraint level" if k == "constraint_level" else k.upper()
            unit = "instructions" if k in ("tcpr", "constraint_level") else "units"
            s = display.show(r.get(k), v[0], v[1], units(r, k), unit=unit)
            parts.append(
                f"{name} {s.point} — {s.interval}"
                if s.greyed
                else f"{name} [{display.interval_text(v[0], v[1], s.decimals, sep=', ')}]"
            )
        if parts:
            lines.append(f"{m}: {kind} 95 %: " + ", ".join(parts))
    return lines


def estimate_lines(out: dict) -> list[str]:
    """Intervals, both-wrong rates, annotators and the verdict of a ``score`` JSON, as text."""
    lines = []
    for m, r in out["models"].items():
        lines += interval_lines(m, r)
        bw = r.get("both_wrong")
        if bw and bw["rate"] is not None:
            lo, hi = bw["interval"]
            d = display.decimals_for(lo, hi)
            lines.append(
                f"{m}: both judges wrong on {display.number_text(bw['rate'], d)} % of agreements "
                f"[{display.interval_text(lo, hi, d, sep=', ')}] ({bw['audited']} audited)"
            )
    for a in out.get("annotators", []):
        lines.append(
            f"annotator {a['annotator']}: estimated accuracy {a['accuracy']:.1f} % "
            f"({a['decisions']} decisions, {a['double_items']} double-adjudicated)"
        )
    if out.get("verdict"):
        lines.append(out["verdict"]["message"])
    return lines


def summary_text(out: dict, analyses: dict | None = None, *, title: str = "ReForm export") -> str:
    """The export's ``summary.txt``: the score table with its intervals (as ``score`` prints it)
    and each auxiliary analysis as a readable table — every number rounded to what its interval
    supports. ``out``: the ``score --json`` document; ``analyses``: name → result frame."""
    from reform_core import analyses_display

    lines = [
        title,
        "=" * len(title),
        "",
        "Numbers are rounded to what their intervals support (one significant digit of the half-width, "
        "docs/display.md); the CSV, Parquet and JSON files keep full precision.",
        "",
        f"estimator: {out.get('estimator')}",
        "",
        score_text(out),
        *estimate_lines(out),
    ]
    for key, frame in (analyses or {}).items():
        if key in analyses_display.TABLES and len(frame):
            lines += ["", key, "-" * len(key), analyses_display.readable(key, frame).text().to_string(index=False)]
    return "\n".join(lines) + "\n"
