"""What the distributed doctor rules read from a merged Report (``extra["distributed"]`` and ``ranks``)."""

from __future__ import annotations

import statistics
from typing import Any

from roofline.report import Report


def distributed_info(report: Report) -> dict[str, Any] | None:
    """The merge's evidence, or None for a report of one rank (the rules then have nothing to compare)."""
    info = report.extra.get("distributed")
    if not isinstance(info, dict) or len(report.ranks) < 2:
        return None
    return info


def median_step_s(report: Report) -> float:
    steps = [r.get("step_time_s") for r in report.ranks if r.get("step_time_s")]
    return statistics.median(steps) if steps else 0.0


def profiled_steps(report: Report) -> float:
    info = report.extra.get("distributed") or {}
    return float(info.get("steps") or max(report.steps, 1))


def step_severity(per_step_s: float, step_s: float) -> str:
    """'critical' from a fifth of the step, 'warning' from 5%, else 'info'."""
    share = per_step_s / step_s if step_s > 0 else 0.0
    if share >= 0.2:
        return "critical"
    if share >= 0.05:
        return "warning"
    return "info"
