"""Placing ops on the roofline, classifying what bounds them, estimating their time, and the totals.

Definitions (per op, with the ceilings of the device it ran on):
- arithmetic intensity I = FLOPs / bytes (minimum bytes: each input view read once, each output written once);
- achieved FLOP/s = FLOPs / time and achieved B/s = bytes / time;
- attainable FLOP/s = min(peak FLOP/s of the op's dtype, I x memory roof);
- efficiency = achieved / attainable. An op that does no FLOPs (copy, cast, cat) is judged on bytes instead:
  efficiency = achieved B/s / memory roof.
- predicted time (the execution time estimator) = max(FLOPs / peak, bytes / memory roof, launch overhead); an op
  that launched nothing (no kernel and no device time on a GPU trace: aten::empty, views, metadata ops) pays no
  launch, so its predicted time is its roofline time alone (0 for a view).

Classification rules, applied in order. The roofline time of an op is max(FLOPs / peak, bytes / memory roof):
the time it would take running exactly on its roof.
0. ``communication``: a collective (c10d::allreduce_, nccl:*, gloo:*: analyze/communication.py), whose time is
   the network's, not a roofline's: its time counts, outside the unmodeled share; its bytes are its message
   (count/collectives.py), its work otherwise unmodelled (``modeled`` False).
1. ``unmodeled``: no formula for the op; its time still counts, in the unmodeled share.
2. ``launch`` for views and other metadata-only ops (no FLOPs, no bytes): all they cost is dispatch.
3. ``memory`` or ``compute`` (by rule 5) when the measured time is within ``ROOF_FACTOR`` of the roofline time
   (at least 1 / ROOF_FACTOR of attainable), however short the op: a 22.5 MB silu in 4.7 us on an H200 moves
   4.8 TB/s and is memory-bound, even though 4.7 us is near the launch overhead.
4. ``launch`` only for an op far above its roofline time (more than ``ROOF_FACTOR`` times it) that is also near
   the launch overhead: its measured time is within ``LAUNCH_CLOSE`` times the measured launch overhead (the
   host cannot issue ops faster than that, so a faster kernel would not help); or, where a kernel timeline
   exists, the device sat idle before the op's kernels longer than they ran and the op took under
   ``LAUNCH_IDLE_FACTOR`` times the launch overhead. Views and other metadata-only ops (no FLOPs, no bytes) are
   launch-bound by definition: all they cost is dispatch.
Before rules 3-5: ``unknown`` when the device's roofs are not known (a trace from a device with no ceilings or datasheet).
5. ``memory`` when I is below the ridge point (peak / roof) of the op's dtype, else ``compute``.
An op whose achieved rate exceeds its attainable rate is flagged ``above_roof`` (data served from cache, or a
counting error): it is shown, never hidden.

Which memory roof (``OpRecord.roof``; the hierarchical roofline, two levels). Every op is judged against the DRAM
roof (``dram``) unless both hold: its distinct footprint fits in the last-level cache (``Ceilings.cache_bytes``;
the footprint is its counted bytes less an in-place op's write back to the input it read), and its measured time
beats the DRAM roof (achieved bytes/s above the DRAM bandwidth: proof that its data came from the cache, e.g. a
tensor the previous kernel just wrote). Such an op is judged against the measured cache roof (``cache``): its
attainable rate, efficiency, roofline time, predicted time, bound and ``above_roof`` all use the cache bandwidth.
When the ceilings have no cache roof (a datasheet, or a ceilings file written before it existed) the op is marked
``cache-unknown``: served from cache, with no roof to measure it against, so its efficiency is set to 1 (it is at
least on the DRAM roof it beats), ``above_roof`` is not set, and views say "from cache" instead of a percentage.
When the cache size is unknown too, nothing tells cache reuse from a counting error: the op stays on the DRAM roof,
flagged above it (datasheet ceilings carry the L2 size where a source gives it, device/datasheet.py).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from math import prod

from roofline.analyze.communication import is_communication_op
from roofline.count.meta import dtype_itemsize
from roofline.report import Ceilings, OpCall, OpHostTime, OpRecord, Summary, module_tree

LAUNCH_CLOSE = 1.5
ROOF_FACTOR = 2.0
LAUNCH_IDLE_FACTOR = 2.0


ROOFS = ("dram", "cache", "cache-unknown")


def place_op(op: OpRecord, ceilings: Ceilings, *, idle_before_s: float | None = None,
             peaks: dict[str, float] | None = None, launches: bool = True) -> OpRecord:
    """Fill the roofline fields of one op in place (and return it). ``peaks``: ``ceilings.peak_for`` by dtype,
    filled as met, for a caller placing many ops against the same ceilings. ``launches``: false for an op that
    launched no device work (no launch overhead in its predicted time)."""
    op.roof = judged_roof(op, ceilings)
    bw = memory_roof(op, ceilings)
    if peaks is None:
        peak = ceilings.peak_for(op.dtype)
    else:
        peak = peaks.get(op.dtype)
        if peak is None:
            peak = peaks[op.dtype] = ceilings.peak_for(op.dtype)
    # an unmodelled op's bytes, if any, are a collective's message (count/collectives.py): no roof to be on
    on_roof_s = _roofline_time_s(op, peak, bw) if op.modeled else 0.0
    op.predicted_time_s = max(on_roof_s, ceilings.launch_overhead_s) if launches else on_roof_s
    op.arithmetic_intensity = op.flops / op.bytes if op.bytes > 0 else (math.inf if op.flops > 0 else 0.0)
    t = op.time_s
    op.achieved_flops_per_s = op.flops / t if t > 0 else 0.0
    op.achieved_bytes_per_s = op.bytes / t if t > 0 else 0.0
    if op.flops > 0:
        op.attainable_flops_per_s = min(peak, op.arithmetic_intensity * bw) if bw else peak
        op.efficiency = op.achieved_flops_per_s / op.attainable_flops_per_s if op.attainable_flops_per_s else 0.0
    else:
        op.attainable_flops_per_s = 0.0
        op.efficiency = op.achieved_bytes_per_s / bw if bw and op.bytes > 0 else 0.0
    if op.roof == "cache-unknown":
        op.efficiency = 1.0
    if not op.modeled:
        op.efficiency = 0.0
    op.above_roof = op.modeled and op.efficiency > 1.0
    op.bound = _bound(op, ceilings, idle_before_s, on_roof_s, peak, bw)
    return op


def footprint_bytes(op: OpRecord) -> float:
    """Distinct bytes an op touches: its counted bytes, less the write of an in-place op (``relu_``, ``add_``)
    back to its first input when the count includes reading that input too (a write-only ``copy_``/``fill_``
    counts no read of it, so nothing is taken off)."""
    name = op.name.rsplit("::", 1)[-1].split(".", 1)[0]
    if not name.endswith("_") or name.startswith("_") or not op.input_shapes:
        return op.bytes
    sizes = [prod(shape) * dtype_itemsize(op.input_dtypes[i] if i < len(op.input_dtypes) else op.dtype)
             for i, shape in enumerate(op.input_shapes)]
    self_bytes = sizes[0]
    if self_bytes > 0 and op.bytes >= sum(sizes) + self_bytes:
        return op.bytes - self_bytes
    return op.bytes


def judged_roof(op: OpRecord, ceilings: Ceilings) -> str:
    """``dram``, ``cache`` or ``cache-unknown`` by the rule in the module docstring."""
    dram = ceilings.memory_bandwidth_bytes_per_s
    if not op.modeled or op.time_s <= 0 or op.bytes <= 0 or dram <= 0 or op.bytes / op.time_s <= dram:
        return "dram"
    if ceilings.cache_bytes <= 0 or footprint_bytes(op) > ceilings.cache_bytes:
        return "dram"
    return "cache" if ceilings.cache_bandwidth_bytes_per_s > 0 else "cache-unknown"


def memory_roof(op: OpRecord, ceilings: Ceilings) -> float:
    """The memory bandwidth an op is judged against: the cache roof when ``op.roof`` is ``cache``, else DRAM's."""
    if op.roof == "cache" and ceilings.cache_bandwidth_bytes_per_s > 0:
        return ceilings.cache_bandwidth_bytes_per_s
    return ceilings.memory_bandwidth_bytes_per_s


def classify(op: OpRecord, ceilings: Ceilings, idle_before_s: float | None = None) -> str:
    peak = ceilings.peak_for(op.dtype)
    bw = memory_roof(op, ceilings)
    return _bound(op, ceilings, idle_before_s, _roofline_time_s(op, peak, bw), peak, bw)


def _bound(op: OpRecord, ceilings: Ceilings, idle_before_s: float | None, roofline_time: float, peak: float,
           bw: float) -> str:
    """``classify`` with the op's roofline time, peak and memory roof already worked out (place_op has them)."""
    if not op.modeled and is_communication_op(op.name):
        return "communication"
    if not op.modeled:
        return "unmodeled"
    launch = ceilings.launch_overhead_s
    if op.flops == 0 and op.bytes == 0:
        return "launch"
    if not ceilings.has_roofs():
        return "unknown"
    on_roof = roofline_time > 0 and 0 < op.time_s <= ROOF_FACTOR * roofline_time
    if not on_roof:
        if op.time_s <= LAUNCH_CLOSE * launch:
            return "launch"
        if idle_before_s is not None and idle_before_s > op.time_s and op.time_s < LAUNCH_IDLE_FACTOR * launch:
            return "launch"
    ridge = peak / bw if bw > 0 else math.inf
    return "memory" if op.arithmetic_intensity < ridge else "compute"


def roofline_time_s(op: OpRecord, ceilings: Ceilings) -> float:
    """The op's time if it ran exactly on its roof: max(FLOPs / peak of its dtype, bytes / its memory roof)."""
    return _roofline_time_s(op, ceilings.peak_for(op.dtype), memory_roof(op, ceilings))


def _roofline_time_s(op: OpRecord, peak: float, bw: float) -> float:
    return max(op.flops / peak if peak else 0.0, op.bytes / bw if bw else 0.0)


def summarize(ops: list[OpRecord], *, timing_method: str = "", kernel_share: float | None = None,
              kernel_total_s: float | None = None, idle_s: float | None = None) -> Summary:
    by_bound: dict[str, float] = defaultdict(float)
    by_module: dict[str, float] = defaultdict(float)
    by_op: dict[str, float] = defaultdict(float)
    total = flops = nbytes = predicted = 0.0
    above = from_cache = 0
    for op in ops:
        from_cache += op.roof != "dram"
        total += op.time_s
        flops += op.flops
        if op.bound != "communication":  # a message, not memory traffic: the op's row shows it, the total does not
            nbytes += op.bytes
        predicted += op.predicted_time_s
        above += op.above_roof
        by_bound[op.bound] += op.time_s
        by_op[op.name] += op.time_s
        for prefix in module_prefixes(op.module):
            by_module[prefix] += op.time_s
    unmodeled = by_bound.get("unmodeled", 0.0)
    return Summary(
        total_time_s=total,
        total_flops=flops,
        total_bytes=nbytes,
        predicted_total_s=predicted,
        time_by_bound_s=dict(by_bound),
        share_by_bound={b: t / total for b, t in by_bound.items()} if total else {},
        time_by_module_s=dict(sorted(by_module.items(), key=lambda kv: -kv[1])),
        time_by_op_s=dict(sorted(by_op.items(), key=lambda kv: -kv[1])),
        unmodeled_time_share=unmodeled / total if total else 0.0,
        kernel_time_attributed_share=kernel_share,
        kernel_time_total_s=kernel_total_s,
        idle_time_s=idle_s,
        ops_above_roof=above,
        ops_from_cache=from_cache,
        timing_method=timing_method,
        module_tree=module_tree(ops),
        top_calls=top_calls(ops),
    )


def host_time_by_op(ops: list[OpRecord]) -> tuple[list[OpHostTime], float]:
    """Each op name's summed host duration and calls, longest first (names with none left out), and the ops' host
    time in all: a GPU profile's view of where the host's time goes beside the op table's device time."""
    by_name: dict[str, list[float]] = {}
    total = 0.0
    for op in ops:
        entry = by_name.setdefault(op.name, [0.0, 0])
        entry[0] += op.cpu_time_s
        entry[1] += op.count
        total += op.cpu_time_s
    rows = sorted(((t, n, name) for name, (t, n) in by_name.items() if t > 0), reverse=True)
    return [OpHostTime(name, int(n), t) for t, n, name in rows], total


TOP_CALLS = 30


def top_calls(ops: list[OpRecord], n: int = TOP_CALLS) -> list[OpCall]:
    """The ``n`` calls with the most time summed over the profiled steps, longest first; none for ops of one step.

    A report of many steps holds each op once a step: its top ops by single time were one call repeated (a
    60-step trace's top 15 rows were one ``_foreach_addcdiv_`` of 15 steps). A call is the ops of one name,
    module, source line, phase, dtype and argument shapes: grouped by the shape lists' identities first (a trace's
    ops share equal lists), then groups with equal shapes merged. One pass, summed in the ops' order."""
    if len({op.step for op in ops if op.step is not None}) < 2:
        return []
    groups: dict[tuple, list] = {}
    for op in ops:
        key = (op.name, op.module, op.source, op.phase, op.dtype, id(op.input_shapes))
        g = groups.get(key)
        t = op.time_s
        if g is None:
            bounds = defaultdict(float)
            bounds[op.bound] = t
            groups[key] = [op, 1, {op.step}, t, op.flops, op.bytes, op.efficiency * t, bounds, op.modeled,
                           op.above_roof]
            continue
        g[1] += 1
        g[2].add(op.step)
        g[3] += t
        g[4] += op.flops
        g[5] += op.bytes
        g[6] += op.efficiency * t
        g[7][op.bound] += t
        if not op.modeled:
            g[8] = False
        if op.above_roof:
            g[9] = True
    calls: dict[tuple, list] = {}
    for g in groups.values():
        first = g[0]
        key = (first.name, first.module, first.source, first.phase, first.dtype, _shape_value(first.input_shapes))
        into = calls.get(key)
        if into is None:
            calls[key] = g
            continue
        into[1] += g[1]
        into[2] |= g[2]
        for i in (3, 4, 5, 6):
            into[i] += g[i]
        for bound, t in g[7].items():
            into[7][bound] += t
        into[8] = into[8] and g[8]
        into[9] = into[9] or g[9]
    longest = sorted(calls.values(), key=lambda g: -g[3])[:n]
    return [OpCall(name=first.name, module=first.module, dtype=first.dtype, source=first.source, phase=first.phase,
                   bound=max(bounds, key=bounds.__getitem__), calls=count, steps=len(steps), time_s=time_s,
                   flops=flops, bytes=nbytes, efficiency=weighted / time_s if time_s > 0 else 0.0, modeled=modeled,
                   roof=first.roof, arithmetic_intensity=flops / nbytes if nbytes > 0 else 0.0,
                   achieved_flops_per_s=flops / time_s if time_s > 0 else 0.0,
                   achieved_bytes_per_s=nbytes / time_s if time_s > 0 else 0.0, above_roof=above)
            for first, count, steps, time_s, flops, nbytes, weighted, bounds, modeled, above in longest]


def _shape_value(shapes: list) -> tuple:
    return tuple(tuple(s) if isinstance(s, list) else s for s in shapes)


@functools.lru_cache(maxsize=65536)
def module_prefixes(module: str) -> tuple[str, ...]:
    """'layers.3.mlp' -> ['layers', 'layers.3', 'layers.3.mlp'], so module totals roll up the tree."""
    if not module:
        return ("(top level)",)
    parts = module.split(".")
    return tuple(".".join(parts[: i + 1]) for i in range(len(parts)))
