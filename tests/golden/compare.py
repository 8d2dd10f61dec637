"""Recursive comparison of pinned values: numbers equal to 1e-12 (relative or absolute), all else exactly."""

from __future__ import annotations

import math

TOL = 1e-12


def differences(want, got, path: str = "") -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}/{k}: missing" for k in want if k not in got]
        out += [f"{path}/{k}: unexpected" for k in got if k not in want]
        for k in want:
            if k in got:
                out += differences(want[k], got[k], f"{path}/{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(got)} items, pinned {len(want)}"]
        return [d for i, (a, b) in enumerate(zip(want, got)) for d in differences(a, b, f"{path}[{i}]")]
    numbers = (int, float)
    if isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool):
        if math.isclose(want, got, rel_tol=TOL, abs_tol=TOL):
            return []
        return [f"{path}: {got!r}, pinned {want!r}"]
    return [] if want == got else [f"{path}: {got!r}, pinned {want!r}"]
