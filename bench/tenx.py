"""The 10× project shared by the issue-16 benchmarks (built once, then reused).

10 × the paper's scale: 9,100 questions, 50,000 instructions, 10 models → 1,500,000
(response, constraint) instances judged by two judges (3,000,000 judgments), the
simulator's oracle deciding 300 disagreements per model, a lead, an annotator and the
default Cochran plan. Written to ``bench/out/tenx.db`` (ignored by git); a file that
is already there is reused (``--rebuild`` writes it again).

    nice -n 5 python bench/tenx.py [--rebuild]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DB = ROOT / "bench" / "out" / "tenx.db"
TENX = {"n_questions": 9100, "n_instructions": 50_000}
ANN = ("ann", "annotator-password")
LEAD = ("lead", "lead-password")


def build(db: Path = DB, *, rebuild: bool = False) -> str:
    """The SQLite URL of the 10× project; built if missing (or ``rebuild``)."""
    url = f"sqlite:///{db}"
    done = db.with_suffix(".done")
    if db.exists() and done.exists() and not rebuild:
        return url
    from reform_core.services.accounts.users import create_user
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.data.importer import frames_bundle, import_bundle_obj
    from reform_core.services.data.simulated import simulation_frames
    from reform_core.services.platform.uow import dispose_engines, get_engine
    from reform_core.simulate import simulate

    db.parent.mkdir(parents=True, exist_ok=True)
    done.unlink(missing_ok=True)
    for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    eng = get_engine(url)
    frames = simulation_frames(simulate(seed=0, scale="paper", **TENX), adjudicate=300, seed=0)
    import_bundle_obj(eng, frames_bundle(frames, source="simulate(seed=0, 10x)"))
    del frames
    lead = create_user(eng, None, username=LEAD[0], password=LEAD[1], role="lead")
    create_user(eng, None, username=ANN[0], password=ANN[1], role="annotator")
    S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=2, name="default plan")
    dispose_engines()
    done.write_text(f"{time.perf_counter() - t0:.0f}\n")
    return url


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rebuild", action="store_true")
    a = ap.parse_args()
    t = time.perf_counter()
    print(build(rebuild=a.rebuild), f"{time.perf_counter() - t:.0f} s")
