"""The machine line every benchmark result carries."""

from __future__ import annotations

import datetime
import os
import platform


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or what platform knows)."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_line() -> str:
    cpu = cpu_model()
    mem = ""
    try:
        kb = int(next(line for line in open("/proc/meminfo") if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration):
        pass
    return (
        f"Machine: {os.cpu_count()} cores ({cpu}){mem}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC."
    )
