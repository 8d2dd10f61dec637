"""Where the parts of an Adjudicate item sit in a 1280×800 window (issue 33 item 4), on the demo
in local mode, for the first item and then for items after a skip (each new item starts at the
top), until both kinds were seen: the item heading, the constraint box, the first decision
button, both judgments and the response, as (top, bottom) pixels from the top of the window.

    python bench/adjudicate_layout.py [--width 1280] [--height 800] [--shots DIR]

The browser test ``tests/e2e/test_annotation_browser.py`` asserts the same for 40 items.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PARTS = {
    "heading": "h3:has-text('Item ')",
    "constraint": "[class*='st-key-adj_constraint_']",
    "judge_A": "[class*='st-key-adj_judge_A_']",
    "judge_B": "[class*='st-key-adj_judge_B_']",
    "response": "[class*='st-key-adj_response_']",
}


def _box(page, selector: str):
    loc = page.locator(selector)
    box = loc.first.bounding_box() if loc.count() else None
    return None if box is None else (round(box["y"]), round(box["y"] + box["height"]))


def main(argv: list[str] | None = None) -> None:
    from reform_core.services.platform.uow import dispose_engines, get_engine
    from reform_core.services.project.setup import ensure_demo
    from tests.e2e.harness import browser_context, streamlit_app

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--shots", type=Path, help="write a screenshot of each kind of item here")
    args = ap.parse_args(argv)
    url = f"sqlite:///{tempfile.mkdtemp()}/layout.db"
    ensure_demo(get_engine(url))
    dispose_engines()
    env = {"REFORM_DATABASE_URL": url, "REFORM_AUTH_MODE": "local", "REFORM_LOAD_DEMO": "false"}
    with streamlit_app(env) as base, browser_context(viewport={"width": args.width, "height": args.height}) as ctx:
        page = ctx.new_page()
        page.goto(f"{base}/adjudicate")
        page.get_by_role("button", name="Skip").wait_for()
        seen: set[str] = set()
        for _ in range(20):
            time.sleep(1.5)
            audit = page.locator("[class*='st-key-adj_btn_p_']").count() > 0
            kind = "audit" if audit else "disagreement"
            first = "[class*='st-key-adj_btn_p_'] button" if audit else "[class*='st-key-adj_btn_a_'] button"
            print({"kind": kind, **{k: _box(page, s) for k, s in PARTS.items()}, "decision": _box(page, first)})
            if args.shots and kind not in seen:
                args.shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.shots / f"adjudicate_{kind}.png"))
            seen.add(kind)
            if seen == {"audit", "disagreement"}:
                break
            page.keyboard.press("s")


if __name__ == "__main__":
    main()
