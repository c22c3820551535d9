"""What the distributed doctor rules read from a merged Report (``distributed`` and ``ranks``)."""

from __future__ import annotations

import statistics
from typing import Any

from roofline.analyze.communication import is_communication_op
from roofline.doctor.evidence import SYNC_KINDS, location, op_kind, op_table, ordered_ops
from roofline.report import CollectiveSyncSite, DistributedInfo, Report


def distributed_info(report: Report) -> DistributedInfo | None:
    """The merge's evidence, or None for a report of one rank (the rules then have nothing to compare)."""
    if report.distributed is None or len(report.ranks) < 2:
        return None
    return report.distributed


def median_step_s(report: Report) -> float:
    steps = [r.step_time_s for r in report.ranks if r.step_time_s]
    return statistics.median(steps) if steps else 0.0


def profiled_steps(report: Report) -> float:
    steps = report.distributed.steps if report.distributed is not None else 0
    return float(steps or max(report.steps, 1))


def step_severity(per_step_s: float, step_s: float) -> str:
    """'critical' from a fifth of the step, 'warning' from 5%, else 'info'."""
    share = per_step_s / step_s if step_s > 0 else 0.0
    if share >= 0.2:
        return "critical"
    if share >= 0.05:
        return "warning"
    return "info"


def syncs_near_collectives(report: Report, reach: int = 2) -> list[CollectiveSyncSite]:
    """Host syncs (ops that wait on the device, barriers) within ``reach`` ops of a collective call, by site."""
    roles: dict[str, tuple[bool, bool, bool]] = {}  # per op name: (collective, barrier, host sync)
    for op in op_table(report).calls:
        if op.name not in roles:
            comm = is_communication_op(op.name)
            roles[op.name] = (comm and "barrier" not in op.name, comm and "barrier" in op.name,
                              op_kind(op.name) in SYNC_KINDS)
    if not any(collective or barrier for collective, barrier, _ in roles.values()):
        return []  # no sync is near a collective, and no barrier: no site
    ops = ordered_ops(report)
    comm_positions = [i for i, op in enumerate(ops) if roles[op.name][0]]
    sites: dict[str, dict[str, Any]] = {}
    for i, op in enumerate(ops):
        _, barrier, sync = roles[op.name]
        if not barrier and not sync:
            continue
        near = [ops[j].name for j in comm_positions if abs(j - i) <= reach and ops[j].step == op.step]
        if not near and not barrier:
            continue
        where = location(op)
        site = sites.setdefault(where, {"location": where, "ops": set(), "collectives": set(), "count": 0,
                                        "time_s": 0.0})
        site["ops"].add(op.name)
        site["collectives"].update(near)
        site["count"] += 1
        site["time_s"] += max(op.time_s, op.cpu_time_s)
    return [CollectiveSyncSite(s["location"], sorted(s["ops"]), sorted(s["collectives"]), s["count"], s["time_s"],
                               s["count"] / max(report.steps, 1)) for s in sites.values()]
