"""This machine as a trace or a cache sees it (CPU model, host name), without importing torch at import time, and
the host's speed at a moment (``host_probe_us``)."""

from __future__ import annotations

import platform
import re
import time
from pathlib import Path

__all__ = ["cpu_name", "generic_host_name", "host_name", "host_probe_us"]


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


# Names many machines share: an unset host name, a distribution's default, a container's default (Docker names a
# container by the first 12 hex digits of its id, and two containers of one image on two machines share nothing
# else but the pattern).
_GENERIC_HOST_NAMES = frozenset({"", "localhost", "localhost.localdomain", "localhost6", "localhost6.localdomain6",
                                 "ip6-localhost", "(none)", "ubuntu", "debian", "fedora", "centos", "archlinux",
                                 "raspberrypi", "buildkitsandbox", "runner", "sandbox", "container"})
_CONTAINER_ID = re.compile(r"[0-9a-f]{12}|[0-9a-f]{64}")


def generic_host_name(name: str | None) -> bool:
    """A host name that says nothing about which machine it is (``_GENERIC_HOST_NAMES``, a container id): two
    traces, or a trace and this machine, that share it need not have run on one machine."""
    name = (name or "").strip().lower()
    return name in _GENERIC_HOST_NAMES or _CONTAINER_ID.fullmatch(name) is not None


PROBE_ITERATIONS = 300
PROBE_REPEATS = 3


def host_probe_us(iterations: int = PROBE_ITERATIONS, repeats: int = PROBE_REPEATS) -> float:
    """This host's speed right now: microseconds per iteration of a fixed loop that calls a Python function which
    runs one tiny in-place op on a one-element CPU tensor (the interpreter and torch's dispatcher, what an eager
    host-bound step spends its time in), the fastest of ``repeats`` runs (about 1-5 ms in all).

    Why: on the lent H200's host (2026-12-01, benchmarks/results/h200/host_level_probe/) the CPU's speed moved
    between two levels about 1.8x apart for tens of seconds at a time, and host-bound steps followed it (correlation
    +0.86 with a pure-Python probe). A step time means little without the host speed it was measured at; a
    prediction for another moment scales the host stream by the ratio of two probes."""
    import torch

    x = torch.zeros(1)

    def op() -> None:
        x.add_(1.0)

    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iterations):
            op()
        best = min(best, time.perf_counter() - t0)
    return best / iterations * 1e6
