"""Host-device syncs: .item(), .nonzero(), copies to the CPU... each one drains the device queue.

Evidence: the sync detector's SyncSites (with their stall time) when it ran; otherwise the ops that always sync
(aten::_local_scalar_dense behind .item(), nonzero, masked_select, unique...) or whose kernels copy device -> host,
grouped by location.
A blocking copy to the device (a pageable ``.to('cuda')``) is the host-to-device-copy rule's, which counts its
stall with the copies' time (doctor/rules/host_input.py): its fix, tensors made on the device or pinned and
non_blocking, removes both, and this rule's advice (keep the value on the device) does not apply to it.
On a CPU-only run there is no device to wait for: the same calls are plain reads of a value. They are told only as
what they are (a tensor value read by the host, which would wait for the device on an accelerator), at the severity
of their own cost, never as host-device syncs; the optimizer's own step-counter reads (AdamW's .item() on its CPU
step tensors, which stay on the host on a GPU too) are left out.
A site that syncs more than once per step sits inside a loop: the costly case; where the report has the ops, that is
the same read (one op on tensors of one shape and dtype) more than once per step, since two reads of different
tensors on one line run once each (QuantStub's quantize_per_tensor reads its float scale and its int64 zero point,
2 per step at one line, which is no loop). So does a site syncing in every
step when each step is one forward of the model (the profiler found steps at forwards: a generation loop's decode
steps, an inference loop's batches): the host waits for each token before it can launch the next. A site syncing
once per training step (reading the step's result) is reported only when its cost reaches a 'warning' share.
A sync's saving is the device's idle time inside the host's wait (SyncSite.device_idle_s, OpRecord.device_idle_s),
never the wait itself: the device runs its queued work meanwhile, and a sync-free loop still has to run it.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from roofline.capture.trace_syncs import COPY_TO_DEVICE, copy_direction
from roofline.doctor.evidence import (SYNC_KINDS, is_cpu_report, is_gpu_report, location, op_kind, op_table,
                                      severity_for, step_count, waits_for_data)
from roofline.doctor.registry import register
from roofline.doctor.rules.host_input import host_copies_reported
from roofline.report import Finding, OpRecord, Report
from roofline.time_text import fmt_time

RULE = "host-device-sync"


def _is_sync_op(op: OpRecord, kinds_present: set[str], on_gpu: bool) -> bool:
    """On a GPU report only ops that touched the device count: .item() on a CPU tensor waits for nothing."""
    if on_gpu and not op.kernels:
        return False
    kind = op_kind(op.name)
    if kind == "item" and "_local_scalar_dense" in kinds_present:
        return False
    if kind in SYNC_KINDS and waits_for_data(op):
        return True
    return any(_is_device_to_host(k) for k in op.kernels)


@functools.lru_cache(maxsize=8192)
def _is_device_to_host(kernel: str) -> bool:
    """Memoised: a trace's few hundred kernel names recur on every op of a 127,620-op report."""
    return copy_direction(kernel) == "host"


def _sync_ops_by_location(report: Report, on_cpu: bool = False) -> dict[str, list[OpRecord]]:
    """``_is_sync_op`` over every op, its kind's part asked once per call (doctor/op_table.py). ``on_cpu``: leave
    out the optimizer's step (its reads are torch's bookkeeping on host tensors, on every device)."""
    table = op_table(report)
    kinds_present = set(table.call_kind)
    on_gpu = is_gpu_report(report)
    never = [kind == "item" and "_local_scalar_dense" in kinds_present for kind in table.call_kind]
    always = [kind in SYNC_KINDS and not skip for kind, skip in zip(table.call_kind, never)]
    ops, calls = table.ops, table.call
    # On a GPU report only ops that launched device work can count: the others are left out before the walk.
    launched = table.has_kernels() if on_gpu else None
    candidates = np.flatnonzero(launched).tolist() if on_gpu else range(len(ops))
    reading = [i for i in table.positions(always) if (launched is None or launched[i]) and waits_for_data(ops[i])]
    by_loc: dict[str, list[OpRecord]] = defaultdict(list)
    for i in sorted(set(reading).union(_copying_to_host(ops, candidates))):
        op = ops[i]
        if not never[calls[i]] and not (on_cpu and op.phase == "optimizer"):
            by_loc[location(op)].append(op)
    return by_loc


def _copying_to_host(ops: Sequence[OpRecord], candidates: Iterable[int]) -> list[int]:
    """The positions among ``candidates`` of the ops with a device-to-host copy among their kernels. The names
    are asked once each (a trace's few hundred recur on every step), then each op's kernels against the copies'."""
    kernels = [ops[i].kernels for i in candidates]
    copies = {name for name in set(itertools.chain.from_iterable(kernels)) if _is_device_to_host(name)}
    if not copies:
        return []
    return [i for i, names in zip(candidates, kernels) if not copies.isdisjoint(names)]


def _steps_are_forwards(report: Report) -> bool:
    return report.profile is not None and report.profile.step_source == "forward"


@register(RULE, "host-device syncs, above all inside loops")
def check(report: Report) -> list[Finding]:
    findings = []
    steps = max(report.steps, 1)
    per_forward = _steps_are_forwards(report)
    on_cpu = is_cpu_report(report)
    owned = host_copies_reported(report)
    for site in report.syncs:
        if site.count <= 0 or (owned and site.kind == COPY_TO_DEVICE):
            continue
        per_step = site.per_step if site.per_step is not None else site.count / steps
        stall = max(site.stall_s, 0.0)
        if on_cpu:
            findings.append(_cpu_read_finding(report, [site.kind], site.location, site.count, per_step, stall,
                                              per_forward))
            continue
        savings, method = _site_saving(report, stall, site.device_idle_s)
        findings.append(_finding(
            report, kinds=[site.kind], where=site.location, count=site.count, per_step=per_step, savings=savings,
            per_forward=per_forward, method=method, blocked=(stall, site.device_idle_s),
        ))
    by_location = {} if report.syncs else _sync_ops_by_location(report, on_cpu)
    on_gpu = is_gpu_report(report)
    for loc, ops in by_location.items():
        steps_spanned = step_count(report, ops)
        per_step = len(ops) / steps_spanned
        # Reads are told apart only at a source line: an op-name site (a trace with no stacks) lumps every call of
        # that op in the program, where different shapes may be one loop over ragged data or several sites.
        sourced = all(op.source for op in ops)
        repeats = max(Counter(map(_read_of, ops)).values()) / steps_spanned if sourced else None
        blocked = sum(max(op.time_s, op.cpu_time_s) for op in ops)
        if on_cpu:
            kinds = sorted({op_kind(op.name) for op in ops})
            findings.append(_cpu_read_finding(report, kinds, loc, len(ops), per_step, blocked, per_forward,
                                              repeats=repeats))
            continue
        savings, method, idle = _ops_saving(report, ops, blocked, on_gpu)
        findings.append(_finding(
            report, kinds=sorted({op_kind(op.name) for op in ops}), where=loc, count=len(ops), per_step=per_step,
            savings=savings, method=method, ops=ops, per_forward=per_forward, blocked=(blocked, idle),
            repeats=repeats,
        ))
    return [f for f in findings if f.evidence["in_loop"] or f.severity != "info"]


def _read_of(op: OpRecord) -> tuple:
    """What one read reads: the op and its operands' shapes and dtypes. A loop repeats one; reads of different
    tensors on one line (a scale and a zero point) differ here."""
    return op.name, tuple(map(tuple, op.input_shapes)), tuple(op.input_dtypes)


def _in_loop(per_step: float, repeats: float | None, every_forward: bool) -> bool:
    """``repeats``: how often the site's most repeated read ran per step (None: the site's reads are not told
    apart, a sync detector's count)."""
    return (repeats if repeats is not None else per_step) > 1 or every_forward


_DEVICE_IDLE_ONLY = ("the device ran its queued work for the rest of the wait, which a sync-free loop still has to "
                     "run: only the idle stretches are saved")


def _site_saving(report: Report, stall: float, device_idle_s: float | None) -> tuple[float, str]:
    """A detector or trace site's saving: the device's idle time during its stalls where the trace measured it,
    else the stall, at most the device's idle time over the profile."""
    if stall <= 0:
        return 0.0, "not estimated: the sync detector measured no stall at this site"
    if device_idle_s is not None:
        return min(device_idle_s, stall), (
            f"the device's idle time during this site's stalls ({fmt_time(device_idle_s)} of the "
            f"{fmt_time(stall)} the host waited: no kernel, memcpy or memset of its device ran); "
            + _DEVICE_IDLE_ONLY)
    return _at_most_profile_idle(
        report, stall, "the sync detector's measured stall at this site", "the idle time inside each stall was not "
        "measured", "the sync detector's measured stall at this site (host blocked waiting for the device), which a "
        "sync-free loop overlaps with device work")


def _ops_saving(report: Report, ops: list[OpRecord], blocked: float, on_gpu: bool
                ) -> tuple[float, str, float | None]:
    """The sync ops' saving on a device: the device's idle time inside the ops' host spans where the report has
    it (OpRecord.device_idle_s), else their measured time, at most the device's idle time over the profile; the
    idle time when measured."""
    idle = [op.device_idle_s for op in ops]
    if on_gpu and all(x is not None for x in idle):
        idle_s = min(sum(idle), blocked)
        return idle_s, (f"the device's idle time while the host was blocked in the sync ops ({fmt_time(idle_s)} of "
                        f"their {fmt_time(blocked)}: no kernel, memcpy or memset of their device ran); "
                        + _DEVICE_IDLE_ONLY), idle_s
    if not on_gpu:
        return blocked, ("the sync ops' measured time (host CPU time blocked in them); on a GPU each one also "
                         "drains the queue and idles the device until the host launches again"), None
    return (*_at_most_profile_idle(
        report, blocked, "the sync ops' measured time", "the report has no device idle time inside each op",
        "the sync ops' measured time (host CPU time blocked in them, or their device time if longer)"), None)


def _at_most_profile_idle(report: Report, blocked: float, what: str, why: str, whole: str) -> tuple[float, str]:
    """``blocked`` as the saving (said by ``whole``), or the device's idle time over the whole profile where that is
    less: all a sync can free where the idle time inside its waits was not measured (``why``)."""
    idle = report.summary.idle_time_s
    cap = max(idle, 0.0) if idle is not None else None
    if cap is not None and cap < blocked:
        return cap, (f"{what} ({fmt_time(blocked)}), capped at the device's idle time over the profile "
                     f"({fmt_time(cap)}): {why}")
    return blocked, whole


def _finding(report: Report, *, kinds: list[str], where: str, count: int, per_step: float, savings: float,
             method: str, ops: list[OpRecord] | None = None, per_forward: bool = False,
             blocked: tuple[float, float | None] = (0.0, None), repeats: float | None = None) -> Finding:
    """``blocked``: the host's time blocked at the site and, where measured, the device's idle time within it;
    ``repeats``: the site's most repeated read per step (``_in_loop``)."""
    every_forward = per_forward and per_step >= 1
    in_loop = _in_loop(per_step, repeats, every_forward)
    what = ", ".join(kinds)
    if every_forward:
        title = (f"host-device sync ({what}) in every forward (each decode step of a generation loop): "
                 f"{per_step:g} per forward at {where}")
    elif in_loop and repeats is None and ops:  # the report's ops at an op-name site (``check``): reads not told apart
        title = (f"host-device sync ({what}): {per_step:g} per step at {where} (the trace records no source line: "
                 "one site in a loop, or several sites)")
    elif in_loop:
        title = f"host-device sync ({what}) inside a loop: {per_step:g} per step at {where}"
    else:
        title = f"host-device sync ({what}) at {where}" + _once_each(per_step)
    evidence = {"sync_kinds": kinds, "count": count, "per_step": per_step, "in_loop": in_loop,
                "every_forward": every_forward, "host_blocked_s": blocked[0], "device_idle_s": blocked[1]}
    if repeats is not None:
        evidence["same_read_per_step"] = repeats
    if ops:
        evidence["ops"] = sorted({op.name for op in ops})
        evidence["time_s"] = sum(op.time_s for op in ops)
    severity = severity_for(report, savings)
    if in_loop and severity == "info":
        severity = "warning"
        method += ("; a warning whatever this saving, as it sits in a loop: each wait also keeps the host from "
                   "queueing the next work, a cost that shows as the device's idle time after the wait (launch "
                   "gaps), not in it")
    return Finding(
        rule=RULE, title=title, category="sync", evidence=evidence, locations=[where],
        estimated_savings_s=savings, savings_method=method, severity=severity,
        fix=("keep the value on the device: replace .item()/.tolist()/.cpu() checks in the loop with tensor ops "
             "(e.g. torch.where on a device flag), check stop conditions every N iterations, or only read results "
             "after the loop; for nonzero/masked_select use fixed-size masks" if in_loop else
             "move the read of device values out of the hot path, or make it non_blocking into pinned memory"),
    )


def _once_each(per_step: float) -> str:
    """A site's reads that are no loop though more than one a step: different reads, each once."""
    return f" ({per_step:g} different reads per step, each once)" if per_step > 1 else ""


def _cpu_read_finding(report: Report, kinds: list[str], where: str, count: int, per_step: float, call_s: float,
                      per_forward: bool, repeats: float | None = None) -> Finding:
    """A detector site on a CPU-only run: the call read a CPU tensor's value, waiting for nothing; told because the
    same line would stall an accelerator, in words that do not call it a sync and at the severity of its own cost."""
    kind = ", ".join(kinds)
    every_forward = per_forward and per_step >= 1
    in_loop = _in_loop(per_step, repeats, every_forward)
    if every_forward:
        title = (f"tensor value read by the host ({kind}) in every forward: {per_step:g} per forward at {where} "
                 "(waits for nothing on the CPU; on an accelerator each read would wait for the device)")
    elif in_loop:
        title = (f"tensor value read by the host ({kind}) inside a loop: {per_step:g} per step at {where} "
                 "(waits for nothing on the CPU; on an accelerator each read would wait for the device)")
    else:
        title = f"tensor value read by the host ({kind}) at {where}" + _once_each(per_step)
    evidence = {"sync_kinds": kinds, "count": count, "per_step": per_step, "in_loop": in_loop,
                "every_forward": every_forward, "device": "cpu", "waits_for_device": False}
    if repeats is not None:
        evidence["same_read_per_step"] = repeats
    return Finding(
        rule=RULE, title=title, category="sync", locations=[where], evidence=evidence,
        estimated_savings_s=call_s, severity=severity_for(report, call_s),
        savings_method="the reads' measured time in the call itself: on the CPU there is no device to wait for",
        fix=("nothing waits on the CPU: each read costs only itself. If this loop is meant to run on an accelerator, "
             "keep the value in a tensor there (a flag tensor and torch.where) or read it every N iterations"),
    )
