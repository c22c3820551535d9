"""Host syncs around collectives: a barrier, or an op that waits for the device (.item(), nonzero...), right
before or after a collective call. The host then stops feeding the device while the collective runs, so
communication cannot overlap the next compute, and every rank's step waits on the slowest sync.

Evidence: ops within two op calls of a collective in the same step (or any barrier), per site; from the merge's
per-rank lists when present, else from this report's own ops (a single rank's profile).
"""

from __future__ import annotations

import msgspec

from roofline.doctor.distributed_evidence import syncs_near_collectives
from roofline.doctor.evidence import severity_for, torch_device
from roofline.doctor.registry import register
from roofline.report import Finding, Report

RULE = "collective-host-sync"

FIX = ("keep the host ahead of the device around collectives: drop per-step dist.barrier() and "
       "torch.{device}.synchronize(); read losses or metrics with .item() every N steps (or all_reduce them on the "
       "device and read once); use async_op=True and wait() only where the result is needed")


@register(RULE, "barriers and device waits beside collective calls")
def check(report: Report) -> list[Finding]:
    info = report.distributed
    if info is not None and info.syncs_near_collectives is not None:
        per_rank = [(entry.rank, entry.sites) for entry in info.syncs_near_collectives]
    else:
        per_rank = [(report.environment.rank, syncs_near_collectives(report))]
    merged: dict[str, dict] = {}
    for rank, sites in per_rank:
        for site in sites:
            entry = merged.setdefault(site.location, {**msgspec.structs.asdict(site), "ranks": []})
            entry["ranks"].append(rank)
            entry["time_s"] = max(entry["time_s"], site.time_s)
    findings = []
    for where, site in merged.items():
        what = ", ".join(site["ops"])
        near = ", ".join(site["collectives"]) or "collectives"
        severity = severity_for(report, site["time_s"])
        if severity == "info" and site["per_step"] >= 1:
            severity = "warning"
        findings.append(Finding(
            rule=RULE, category="sync",
            title=f"host sync ({what}) beside {near}: {site['per_step']:g} per step at {where}",
            evidence={"ops": site["ops"], "collectives": site["collectives"], "count": site["count"],
                      "per_step": site["per_step"], "time_s": site["time_s"],
                      "ranks": [r for r in site["ranks"] if r is not None]},
            locations=[where], estimated_savings_s=site["time_s"],
            savings_method="the sync ops' own measured time (the slowest rank's); the lost overlap is not estimated",
            fix=FIX.format(device=torch_device(report)), severity=severity,
        ))
    return findings
