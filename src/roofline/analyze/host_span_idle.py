"""The device's idle time inside the host span of each op that may sync (OpRecord.device_idle_s).

A host blocked in a sync (.item(), a copy to the host) waits while the device drains its queue: the device is
busy for most of such a wait, and only the stretches where it ran nothing are time the sync took from it. The doctor
reads this instead of the op's whole host time (doctor/rules/host_sync.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from roofline.capture.trace_model import Trace
from roofline.capture.trace_syncs import DeviceIdle, copy_direction
from roofline.count.families import HOST_READ, op_kind
from roofline.gcpause import cyclic_gc_paused
from roofline.report import KernelRecord, OpRecord


def fill_device_idle(trace: Trace, event_to_report: dict[int, int], ops: list[OpRecord],
                     kernels: list[KernelRecord]) -> None:
    """Of the ops the doctor may read as host syncs (``_may_sync``), ``_fill_device_idle``: measuring every op
    that launched device work took 0.23 s of the 1 M-event trace's critical path, for the few that read a value."""
    may = _may_sync()
    syncing = {e: i for e, i in event_to_report.items() if may(ops[i])}
    if syncing:
        _fill_device_idle(trace, syncing, ops, kernels)


def _may_sync() -> Callable[[OpRecord], bool]:
    """Whether an op reads a device value on the host (count/families.HOST_READ) or copies to the host: the ops
    doctor/rules/host_sync.py reads as syncs, each kind and kernel name asked once."""
    kinds: dict[str, bool] = {}
    to_host: dict[str, bool] = {}

    def may(op: OpRecord) -> bool:
        if not op.kernels:
            return False
        hit = kinds.get(op.name)
        if hit is None:
            hit = kinds[op.name] = op_kind(op.name) in HOST_READ
        if hit:
            return True
        for kernel in op.kernels:
            down = to_host.get(kernel)
            if down is None:
                down = to_host[kernel] = copy_direction(kernel) == "host"
            if down:
                return True
        return False

    return may


def _fill_device_idle(trace: Trace, event_to_report: dict[int, int], ops: list[OpRecord],
                      kernels: list[KernelRecord]) -> None:
    """Each op that launched device work and has a trace event: of that event's host span, the time the op's device
    ran nothing. The op's device is the one its kernels (``kernels``, the report's timeline) ran on; an op on
    several, or on none named, is asked of every device's work (DeviceIdle). The cyclic GC is paused: its passes over
    a large trace's objects took two thirds of this (df_index_resolver's 32,150 ops: 0.16 -> 0.05 s)."""
    if not trace.kernels:
        return
    with cyclic_gc_paused():
        devices: dict[int, set] = defaultdict(set)
        for k in kernels:
            if k.op_index is not None:
                devices[k.op_index].add(k.device)
        rows: dict[object, tuple[list[int], list[float], list[float]]] = {}
        events = trace.ops
        for event, i in event_to_report.items():
            if ops[i].kernels:
                on = devices.get(i, ())
                index, starts, durs = rows.setdefault(next(iter(on)) if len(on) == 1 else None, ([], [], []))
                ev = events[event]
                index.append(i)
                starts.append(ev.ts_us)
                durs.append(ev.dur_us)
        idle = DeviceIdle(trace.kernels)
        for device, (index, starts, durs) in rows.items():
            for i, idle_s in zip(index, idle.idle_s_of(starts, durs, device).tolist()):
                ops[i].device_idle_s = idle_s
