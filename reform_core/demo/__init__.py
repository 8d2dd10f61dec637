"""The bundled demo project: a small, realistic ReFormBench-style bundle.

The JSON Lines files under ``bundle/`` are written by :mod:`reform_core.demo.build`
(deterministic; re-run it with ``python -m reform_core.demo.build`` after editing the
content there) and validate against :mod:`reform_core.records`.
"""

from __future__ import annotations

from pathlib import Path


def bundle_dir() -> Path:
    """The directory holding the demo bundle (``bundle.json`` + ``*.jsonl``)."""
    return Path(__file__).parent / "bundle"
