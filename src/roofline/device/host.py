"""This machine as a trace or a cache sees it (CPU model, host name), without importing torch."""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["cpu_name", "host_name"]


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def host_name() -> str:
    """The name torch.profiler writes as a trace's ``host_name`` (gethostname)."""
    return platform.node()
