"""The Report: the one versioned, serialisable object between capture and everything else.

Capture and analysis fill a Report; renderers, the doctor's output, diff and the HTML page only read it.
Field names carry their units (``_s`` seconds, ``_bytes``, ``_flops``, ``_per_s``). Names listed in the
foundation issue are stable: tests outside the project read them. A later schema adds fields with defaults,
so reports written by an older version still load.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import math
import os
import platform
import re
import stat
import sys
from collections.abc import Callable, Iterator
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Struct, field

from roofline.argument_lists import share_equal_argument_lists
from roofline.errors import RooflineError
from roofline.gcpause import cyclic_gc_paused
from roofline.io import atomic_write_bytes, atomic_write_chunks, non_json_number_hint, read_maybe_gzip

_REPORT_HEAD = re.compile(rb'(?:\xef\xbb\xbf)?\s*\{\s*"schema_version"\s*:')  # after a UTF-8 BOM too (read_maybe_gzip)

SCHEMA_VERSION = 2

# Checked when a report is loaded (a hand-edited or foreign file fails there in one line, not in a renderer).
NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]

BOUNDS = ("compute", "memory", "launch", "communication", "unmodeled", "unknown")


class Environment(Struct):
    """Where a report's run happened. For a report read from a trace file, what the trace's own metadata says
    (never the analyst's machine); ``unknown`` names the fields the source did not record (left empty)."""

    torch_version: str = ""
    device_name: str = ""
    python_version: str = ""
    command_line: str = ""
    timestamp: str = ""
    platform: str = ""
    hostname: str = ""
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    unknown: list[str] = field(default_factory=list)
    threads: int | None = None  # torch's CPU threads in the run (torch.get_num_threads()); None: not known (a trace)

    @classmethod
    def capture(cls, device_name: str = "") -> "Environment":
        torch_version = _torch_version()
        torch = sys.modules.get("torch")
        return cls(
            torch_version=torch_version,
            device_name=device_name,
            python_version=platform.python_version(),
            command_line=" ".join(sys.argv),
            timestamp=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            platform=platform.platform(),
            hostname=platform.node(),
            threads=torch.get_num_threads() if torch is not None else None,
        )


def _torch_version() -> str:
    """torch's version without importing torch when it is not loaded yet (the trace path never needs it)."""
    module = sys.modules.get("torch")
    if module is not None:
        return str(module.__version__)
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:  # noqa: BLE001 - metadata missing: not worth failing a report over
        return "unknown"


class DatasheetEntry(Struct):
    """A vendor's dense (never with-sparsity) peak figures for one GPU, with where they come from."""

    name: str
    memory_bandwidth_bytes_per_s: float
    peak_flops_per_s: dict[str, float]
    source: str
    memory_bytes: float | None = None


class Ceilings(Struct):
    """The device's roofs. Measured ones state how; the datasheet entry, when known, sits beside them.

    ``cache_bandwidth_bytes_per_s`` is the last-level cache's roof and ``cache_bytes`` that cache's size (0: not
    known, as in ceilings written before the cache roof existed and in datasheet ceilings). The shared-memory roof
    (``shared_memory_bandwidth_bytes_per_s``) is the aggregate over all SMs, measured on CUDA GPUs only."""

    device: str = "cpu"
    device_name: str = ""
    memory_bandwidth_bytes_per_s: float = 0.0
    peak_flops_per_s: dict[str, float] = field(default_factory=dict)
    launch_overhead_s: float = 0.0
    launch_overhead_graph_s: float | None = None
    datasheet: DatasheetEntry | None = None
    bandwidth_by_kernel_bytes_per_s: dict[str, float] = field(default_factory=dict)
    source: str = "measured"
    method: str = ""
    torch_version: str = ""
    measured_at: str = ""
    threads: int | None = None
    load_average: list[float] = field(default_factory=list)
    cache_bandwidth_bytes_per_s: float = 0.0
    cache_bytes: int = 0
    # CUDA GPUs only (device/shared_memory.py); None: not measured, ``shared_memory_method`` says why (ceilings
    # written before this roof existed have neither, and load as "not measured").
    shared_memory_bandwidth_bytes_per_s: float | None = None
    shared_memory_method: str = ""

    def has_roofs(self) -> bool:
        """Whether there is a roofline to judge against: a memory roof and at least one compute roof."""
        return self.memory_bandwidth_bytes_per_s > 0 and bool(self.peak_flops_per_s)

    def own_roof(self, dtype: str) -> str | None:
        """The compute roof kept for this dtype: its own, or for uint8 the int8 one (VNNI, tensor cores and
        NPUs multiply unsigned by signed 8-bit values at the int8 rate), for a complex dtype its real part's (its
        FLOPs are counted in real arithmetic); None when the fallback applies."""
        if dtype in self.peak_flops_per_s:
            return dtype
        if REAL_PART_OF.get(dtype) in self.peak_flops_per_s:
            return REAL_PART_OF[dtype]
        if dtype == "uint8" and "int8" in self.peak_flops_per_s:
            return "int8"
        return None

    def peak_for(self, dtype: str) -> float:
        """Peak FLOP/s for an op of this dtype; integer and unknown dtypes without a roof of their own
        (``own_roof``) fall back to float32's roof."""
        own = self.own_roof(dtype)
        if own is not None:
            return self.peak_flops_per_s[own]
        return self.peak_flops_per_s.get("float32", max(self.peak_flops_per_s.values(), default=0.0))

    def ridge_point(self, dtype: str) -> float:
        """Arithmetic intensity (FLOP/byte) where the memory roof meets this dtype's compute roof."""
        if self.memory_bandwidth_bytes_per_s <= 0:
            return float("inf")
        return self.peak_for(dtype) / self.memory_bandwidth_bytes_per_s


REAL_PART_OF = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}  # a complex dtype's lanes


class MeasuredTraffic(Struct):
    """What Nsight Compute measured for one op's kernels (summed over them), beside the modelled minimum ``bytes``.

    Set only when ncu counters were joined (analyze/ncu_join.py says how). None: the counter was not collected.
    ``excess_ratio`` is measured DRAM bytes over the modelled minimum; ``dram_intensity``/``l2_intensity`` are the
    op's FLOPs over the bytes measured at that level (the hierarchical roofline's x positions)."""

    dram_read_bytes: NonNegative = 0.0
    dram_write_bytes: NonNegative = 0.0
    dram_bytes: NonNegative = 0.0
    l2_bytes: float | None = None
    l2_hit_rate: float | None = None
    l1_bytes: float | None = None
    shared_bytes: float | None = None
    sm_throughput_pct: float | None = None
    memory_throughput_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    tensor_pipe_pct: float | None = None
    duration_s: NonNegative = 0.0
    kernels: Count = 0
    kernels_total: Count = 0
    excess_ratio: float | None = None
    dram_intensity: float | None = None
    l2_intensity: float | None = None


class TrafficGroup(Struct):
    """Measured traffic summed over the ops of one module site (or op name) for the memory-access view."""

    name: str
    ops: Count = 0
    time_s: NonNegative = 0.0
    modelled_bytes: NonNegative = 0.0
    dram_bytes: NonNegative = 0.0
    l2_bytes: float | None = None
    l2_hit_rate: float | None = None
    excess_ratio: float | None = None


class NcuSummary(Struct):
    """How ncu's per-kernel counters were joined to the report's ops, and the totals (the memory-access view).

    ``joined_share`` is the share of ncu's kernels matched to a kernel of an op; ``step_share`` the share of the
    step's kernels that got counters."""

    source: str = ""
    method: str = ""
    metrics: list[str] = field(default_factory=list)
    kernels: Count = 0
    kernels_joined: Count = 0
    joined_share: float = 0.0
    step_kernels: Count = 0
    step_kernels_measured: Count = 0
    step_share: float = 0.0
    ops_measured: Count = 0
    modelled_bytes: NonNegative = 0.0
    dram_bytes: NonNegative = 0.0
    l2_bytes: float | None = None
    by_module: list[TrafficGroup] = field(default_factory=list)
    by_op: list[TrafficGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class OpRecord(Struct):
    """One op call in one representative step, joined with its measured device time. ``roof`` names the memory
    roof it was judged against: ``dram``, ``cache`` (served from the last-level cache) or ``cache-unknown``
    (served from cache, no cache roof known); analyze/roofline.py states the rule."""

    name: str
    module: str = ""
    dtype: str = ""
    flops: NonNegative = 0.0
    bytes: NonNegative = 0.0
    time_s: NonNegative = 0.0
    arithmetic_intensity: float = 0.0
    achieved_flops_per_s: float = 0.0
    achieved_bytes_per_s: float = 0.0
    attainable_flops_per_s: float = 0.0
    efficiency: float = 0.0
    bound: str = "unmodeled"
    source: str | None = None
    # forward, backward, recompute (activation checkpointing), optimizer (its step), gradient (between the two:
    # clipping, AMP unscale/inf checks/scale update, zero_grad): analyze/join.op_phase
    phase: str = "forward"
    input_shapes: list[list[int]] = field(default_factory=list)
    input_dtypes: list[str] = field(default_factory=list)
    input_strides: list[list[int]] = field(default_factory=list)
    output_shapes: list[list[int]] = field(default_factory=list)
    predicted_time_s: NonNegative = 0.0
    above_roof: bool = False
    modeled: bool = True
    kernels: list[str] = field(default_factory=list)
    start_s: float | None = None
    cpu_time_s: NonNegative = 0.0
    index: int = 0
    step: int | None = None
    count: Count = 1
    external_id: int | None = None
    output_dtypes: list[str] = field(default_factory=list)
    roof: str = "dram"
    measured: MeasuredTraffic | None = None
    # What the profiler recorded on the host for this op (analyze/host_events.py): 0 in reports written before.
    profiled_events: Count = 0
    runtime_calls: Count = 0
    host_gap_s: NonNegative = 0.0
    # Of profiled_events, those with no enclosing event (the calls the model made, autograd's engine frames): 0 in
    # reports written before it.
    profiled_top_level: Count = 0
    # Of the op's host span (its call on the CPU), the time its device ran nothing (no kernel, memcpy or memset): what
    # a host blocked in the op (a sync) left the device waiting. None: not measured (an op that reads no device
    # value on the host nor copies to it, a report without a device timeline, reports written before it).
    device_idle_s: NonNegative | None = None
    # Run inside autograd's AccumulateGrad (a parameter's gradient added into its .grad, the hooks it calls): torch's
    # own step after the backward graph, in no module to compile. False in reports written before it.
    grad_accumulation: bool = False


class KernelRecord(Struct):
    """One device-side event (kernel, memcpy, memset) of the representative step, on the report's timeline."""

    name: str
    start_s: float = 0.0
    dur_s: NonNegative = 0.0
    stream: int | None = None
    device: int | None = None
    category: str = "kernel"
    op_index: int | None = None


class Finding(Struct):
    rule: str
    title: str
    category: str
    evidence: dict[str, Any] = field(default_factory=dict)
    locations: list[str] = field(default_factory=list)
    estimated_savings_s: float = 0.0
    savings_method: str = ""
    fix: str = ""
    severity: str = "warning"
    share_of_time: float | None = None


class SyncSite(Struct):
    kind: str
    location: str
    count: Count = 0
    stall_s: NonNegative = 0.0
    per_step: float | None = None
    # Of the stall, the time the device ran nothing (no kernel, memcpy or memset): all that removing the syncs can
    # give back, as the device was working the rest of it. None: not measured (the live detector, a trace without
    # device work, reports written before).
    device_idle_s: NonNegative | None = None


class LiveTensor(Struct):
    bytes: int
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    op: str = ""
    module: str = ""
    source: str | None = None


class MemorySummary(Struct):
    """Memory over the profiled window. ``counter`` names what was counted (allocated vs reserved)."""

    peak_allocated_bytes: int = 0
    peak_reserved_bytes: int | None = None
    counter: str = ""
    peak_live_tensors: list[LiveTensor] = field(default_factory=list)
    timeline: list[list[float]] = field(default_factory=list)
    reference_peak_bytes: int | None = None
    reference_counter: str = ""


class Timing(Struct):
    """A timed quantity with every sample kept, so spread can be judged (torch.utils.benchmark's habit)."""

    median_s: float = 0.0
    spread_s: float = 0.0
    n: int = 0
    samples_s: list[float] = field(default_factory=list)
    method: str = ""
    host_probe_us: float | None = None
    """The host's speed while this was timed (roofline.device.host.host_probe_us, the mean of probes just before
    and just after; None where not probed): a host-bound step's time holds only at this speed."""

    @classmethod
    def from_samples(cls, samples: list[float], method: str) -> "Timing":
        import statistics

        if not samples:
            return cls(method=method)
        ordered = sorted(samples)
        q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
        return cls(statistics.median(ordered), q3 - q1, len(ordered), list(samples), method)


def _quantile(ordered: list[float], q: float) -> float:
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class ModuleTotals(Struct):
    """One node of the module tree: the op calls at this dotted module path or below it, summed (``n``: op
    calls). The root, ``(model)``, holds every op, those with no module path too; children are sorted by time."""

    name: str
    time_s: NonNegative = 0.0
    flops: NonNegative = 0.0
    bytes: NonNegative = 0.0
    n: Count = 0
    children: list[ModuleTotals] = field(default_factory=list)


def module_tree(ops: list[OpRecord]) -> ModuleTotals:
    """Time, FLOPs, bytes and calls rolled up to every prefix of each op's module path (``layers.3.mlp`` counts
    in ``layers``, ``layers.3`` and ``layers.3.mlp``). Summed in op index order, so a report loaded without the
    tree gets the figures the run that wrote it would have."""
    per_module: dict[str, list[float]] = {}
    for op in sorted(ops, key=lambda op: op.index):
        sums = per_module.setdefault(op.module or "", [0.0, 0.0, 0.0, 0])
        sums[0] += op.time_s
        sums[1] += op.flops
        sums[2] += op.bytes
        sums[3] += op.count
    root: dict[str, Any] = {"sums": [0.0, 0.0, 0.0, 0], "children": {}}
    for module, sums in per_module.items():
        node = root
        _add_sums(node["sums"], sums)
        for part in [p for p in module.split(".") if p]:
            node = node["children"].setdefault(part, {"sums": [0.0, 0.0, 0.0, 0], "children": {}})
            _add_sums(node["sums"], sums)
    return _module_node("(model)", root)


def _add_sums(into: list[float], sums: list[float]) -> None:
    for i, value in enumerate(sums):
        into[i] += value


def _module_node(name: str, node: dict[str, Any]) -> ModuleTotals:
    time_s, flops, nbytes, n = node["sums"]
    children = sorted((_module_node(k, v) for k, v in node["children"].items()), key=lambda c: -c.time_s)
    return ModuleTotals(name, time_s, flops, nbytes, n, children)


class KernelClassTime(Struct):
    """One kernel class's share of a step's device time (analyze/kernel_classes.py), per step.

    ``time_s`` counts each kernel from where the kernels before it ended (kernels that overlap, as under
    programmatic dependent launch, are not counted twice; ``overlapped_s`` is what was left out). ``bytes`` is
    the modelled minimum traffic of the class's ops whose work is known, ``bytes_time_s`` those ops' kernel time,
    and ``achieved_bytes_per_s`` their ratio; None where no op of the class has known bytes."""

    name: str
    time_s: NonNegative = 0.0
    kernels: NonNegative = 0.0
    overlapped_s: NonNegative = 0.0
    bytes: float | None = None
    bytes_time_s: NonNegative = 0.0
    achieved_bytes_per_s: float | None = None
    share_of_roof: float | None = None


class KernelClasses(Struct):
    """A step's device time by kernel class (matrix products, attention, other) and the gaps between kernels.

    ``span_s`` runs from a step's first kernel start to its last kernel end; ``gaps_s`` = span - the time any
    kernel ran (launch gaps, host waits inside the step, tails). All per step (or per ``unit``)."""

    classes: list[KernelClassTime] = field(default_factory=list)
    kernel_time_s: NonNegative = 0.0
    span_s: NonNegative = 0.0
    gaps_s: NonNegative = 0.0
    overlapped_s: NonNegative = 0.0
    kernels: NonNegative = 0.0
    steps: Count = 1
    bandwidth_bytes_per_s: float = 0.0
    method: str = ""
    # What each figure is per: a profiled step, or (``per_step`` > 1) one of the units each step did (tokens).
    unit: str = "step"
    per_step: Count = 1


class OpCall(Struct):
    """One call of a report with several profiled steps, summed over them (analyze/roofline.py ``top_calls``): the
    ops of one name, module, source line, phase, dtype and argument shapes. ``efficiency`` is the ops' roof
    efficiencies weighted by their time (the share of the roof the call reached over all its time); ``bound`` is the
    bound of most of its time; ``modeled`` whether every op's work is known; ``above_roof`` whether any op was;
    the achieved rates are its summed work over its summed time."""

    name: str
    module: str = ""
    dtype: str = ""
    source: str | None = None
    phase: str = ""
    bound: str = ""
    calls: int = 0
    steps: int = 0
    time_s: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    efficiency: float = 0.0
    modeled: bool = True
    roof: str = "dram"
    arithmetic_intensity: float = 0.0
    achieved_flops_per_s: float = 0.0
    achieved_bytes_per_s: float = 0.0
    above_roof: bool = False


class Summary(Struct):
    """Totals over the report's ops. Shares are fractions of ``total_time_s`` (the ops' summed time);
    ``wall_time_s`` is the wall-clock span of the profiled steps those ops cover (None when the trace has no steps),
    the fair base for savings that are not op time (launch gaps, syncs, idle); ``span_s``, of a trace without
    steps, its first op's start to its last op's or kernel's end (a GPU trace's summed kernel time leaves out
    the host's time: a 3 s first launch of a cuDNN kernel was "4615%" of it). ``module_tree``: time, FLOPs,
    bytes and calls per module path prefix (the HTML page's module tree); a report written before it was a field
    gets it on load."""

    total_time_s: float = 0.0
    total_flops: float = 0.0
    total_bytes: float = 0.0
    predicted_total_s: float = 0.0
    time_by_bound_s: dict[str, float] = field(default_factory=dict)
    time_by_module_s: dict[str, float] = field(default_factory=dict)
    time_by_op_s: dict[str, float] = field(default_factory=dict)
    unmodeled_time_share: float = 0.0
    kernel_time_attributed_share: float | None = None
    kernel_time_total_s: float | None = None
    idle_time_s: float | None = None
    wall_time_s: float | None = None
    span_s: float | None = None
    ops_above_roof: int = 0
    timing_method: str = ""
    notes: list[str] = field(default_factory=list)
    stale_ceilings: str | None = None
    share_by_bound: dict[str, float] = field(default_factory=dict)
    ops_from_cache: int = 0
    module_tree: ModuleTotals | None = None
    kernel_classes: KernelClasses | None = None
    top_calls: list[OpCall] = field(default_factory=list)

    def fill_shares(self) -> None:
        """share_by_bound for a report written before it was a field (every view reads the field)."""
        if not self.share_by_bound and self.total_time_s:
            self.share_by_bound = {b: t / self.total_time_s for b, t in self.time_by_bound_s.items()}

    @property
    def reference_time_s(self) -> float | None:
        """What findings' shares of time are taken against: the profiled wall time when known (the steps', else a
        trace's ``span_s``), else the ops' summed time (which, for launch-bound or merged reports, is not the run's
        length)."""
        return self.wall_time_s or self.span_s or self.total_time_s or None


class RankRecord(Struct):
    """One rank of a merged multi-rank job, per profiled step (the Ranks table of the HTML page); a one-rank
    trace whose collectives ran on the host carries its own (analyze/rank_timeline.py)."""

    rank: int
    hostname: str = ""
    device_name: str = ""
    step_time_s: float = 0.0
    true_step_time_s: float | None = None
    compute_time_s: float = 0.0
    communication_time_s: float = 0.0
    exposed_communication_s: float = 0.0
    hidden_communication_share: float | None = None
    idle_time_s: float = 0.0
    busy_time_s: float = 0.0
    straggler: bool = False
    slowest_op: str | None = None
    slowest_op_excess_s: float | None = None
    collectives_per_step: float = 0.0
    profiled_steps: int = 0


class StragglerRecord(Struct):
    """A rank whose busy time per step exceeds the other ranks' median by more than the merge's threshold."""

    rank: int
    busy_time_s: float
    median_busy_time_s: float
    excess_s: float
    slowest_op: str | None = None
    slowest_op_excess_s: float | None = None


class CollectiveRecord(Struct):
    """One kind of collective at one message size: calls, median time and bus bandwidth, and its ceiling."""

    kind: str
    bytes: float | None = None
    calls: int = 0
    calls_per_step: float = 0.0
    time_s: float = 0.0
    total_time_per_step_s: float = 0.0
    busbw_bytes_per_s: float | None = None
    algbw_bytes_per_s: float | None = None
    dtype: str | None = None
    example: str = ""
    ceiling_busbw_bytes_per_s: float | None = None
    ceiling_share: float | None = None
    ceiling_method: str | None = None


class CollectiveCeilingRecord(Struct):
    """The measured collective bandwidths the collectives were judged against, and where they come from."""

    backend: str | None = None
    world_size: int | None = None
    device_name: str | None = None
    origin: str = ""
    peak_busbw_bytes_per_s: dict[str, float] = field(default_factory=dict)
    method: str | None = None


class CollectiveSyncSite(Struct):
    """Host syncs (device waits, barriers) beside collective calls at one source location."""

    location: str
    ops: list[str] = field(default_factory=list)
    collectives: list[str] = field(default_factory=list)
    count: int = 0
    time_s: float = 0.0
    per_step: float = 0.0


class RankSyncs(Struct):
    rank: int | None
    sites: list[CollectiveSyncSite] = field(default_factory=list)


class DistributedInfo(Struct):
    """The multi-rank merge's evidence (distributed/merge.py), read by the distributed doctor rules."""

    world_size: int
    backend: str | None = None
    ranks_merged: list[int] = field(default_factory=list)
    base_rank: int = 0
    steps: float = 0.0
    stragglers: list[StragglerRecord] = field(default_factory=list)
    straggler_threshold: float | None = None
    straggler_method: str = ""
    breakdown_method: str = ""
    collectives: list[CollectiveRecord] = field(default_factory=list)
    collective_method: str = ""
    collective_ceiling: CollectiveCeilingRecord | None = None
    collective_ceiling_note: str | None = None
    syncs_near_collectives: list[RankSyncs] | None = None


class OpHostTime(Struct):
    """The host time of the ops of one name in a profile (analyze/roofline.py ``host_time_by_op``): their
    durations in the profiler trace summed, and their calls."""

    name: str
    calls: int = 0
    cpu_time_s: float = 0.0


class ProfileInfo(Struct):
    """How a profiled run went (``roofline profile``, ProfilingContext): its schedule, the steps seen, the
    syncs Kineto recorded (beside the live detector's ``Report.syncs``) and the user code's own error.
    ``host_time_by_op``: every op name's host time, longest first, beside the op table's device time;
    ``host_time_total_s`` their ops' host time in all (a share's base)."""

    schedule: dict[str, int] = field(default_factory=dict)
    steps_seen: int = 0
    whole_block: bool = False
    device: str = ""
    syncs_from_trace: list[SyncSite] = field(default_factory=list)
    error: str | None = None
    step_source: str | None = None
    host_time_by_op: list[OpHostTime] = field(default_factory=list)
    host_time_total_s: float = 0.0


class HostCosts(Struct):
    """What the host spends issuing one op, measured on one machine for one device (analyze/host_costs.py):
    dispatch per op kind (a tiny op's call, enqueue only on a GPU), one nn.Module call, the framework's Python
    left over per op in a reference block, and one backward op run by autograd's engine. ``profiler_*``: what
    torch.profiler, as ``analyze_model`` runs it, adds per top-level event (a call the model made, an autograd
    engine frame), per aten event nested in one, and per CUDA runtime call (a non-negative least-squares fit of
    relative errors over reference loops timed with and without it; ``profiler_fit_residual``: the fit's RMS
    relative error over the references' added times; ``profiler_fit_condition``: the condition number of the fitted
    costs' scaled columns; ``profiler_references``: each loop's figures per call, named
    by analyze/host_costs.py's REFERENCE_FIELDS; ``profiler_left_out``: references the fit did not use, with why;
    ``profiler_model``: the cost model fitted, a cache fitted with another is measured again;
    ``profiler_per_step_s``: what it adds once per profiled step, between the step's annotation and its first op;
    all empty in files written before them)."""

    device: str = "cpu"
    device_name: str = ""
    dispatch_s: dict[str, float] = field(default_factory=dict)
    module_call_s: NonNegative = 0.0
    python_per_op_s: NonNegative = 0.0
    backward_per_op_s: NonNegative = 0.0
    profiler_per_top_level_s: NonNegative = 0.0
    profiler_per_nested_event_s: NonNegative = 0.0
    profiler_per_runtime_call_s: NonNegative = 0.0
    profiler_fit_residual: NonNegative = 0.0
    profiler_fit_condition: NonNegative = 0.0
    profiler_references: dict[str, list[float]] = field(default_factory=dict)
    profiler_left_out: dict[str, str] = field(default_factory=dict)
    profiler_model: str = ""
    profiler_per_step_s: NonNegative = 0.0
    spread: NonNegative = 0.0
    method: str = ""
    torch_version: str = ""
    measured_at: str = ""


class PredictedOps(Struct):
    """Ops of one name (and module) in a prediction: calls, predicted device and host time, their bound."""

    name: str
    module: str = ""
    calls: Count = 0
    device_time_s: NonNegative = 0.0
    host_time_s: NonNegative = 0.0
    measured_time_s: float | None = None
    bound: str = ""


class PredictedModule(Struct):
    """One top-level module's predicted device and host time, beside its measured device time when known."""

    module: str
    device_time_s: NonNegative = 0.0
    host_time_s: NonNegative = 0.0
    measured_time_s: float | None = None


class BoundChange(Struct):
    """Ops (of one name and module) whose bound class changes from the measured run to the projected one."""

    name: str
    module: str = ""
    calls: Count = 0
    before: str = ""
    after: str = ""


class Prediction(Struct):
    """A predicted step time (analyze/predict.py) and its breakdown: a host stream issuing ops and a device stream
    running them, overlapped, with each sync making the host wait for the device (``bound``: ``host``, ``device``
    or ``serial`` where one thread does both, as on a CPU). ``low_s``/``high_s`` are the range from the efficiency
    table's quartiles and the host costs' spread. ``scenario`` names what was changed from the measured run."""

    step_time_s: NonNegative = 0.0
    low_s: NonNegative = 0.0
    high_s: NonNegative = 0.0
    host_time_s: NonNegative = 0.0
    device_time_s: NonNegative = 0.0
    bound: str = ""
    syncs: Count = 0
    ops: Count = 0
    measured_step_time_s: float | None = None
    scenario: dict[str, str] = field(default_factory=dict)
    device_name: str = ""
    dominant: list[PredictedOps] = field(default_factory=list)
    modules: list[PredictedModule] = field(default_factory=list)
    bound_changes: list[BoundChange] = field(default_factory=list)
    method: str = ""
    notes: list[str] = field(default_factory=list)


class Report(Struct):
    """Schema 2 (this version) types what schema 1 kept as dicts: ``ranks`` are RankRecords, and the merge's
    evidence and a profiled run's details, schema 1's ``extra["distributed"]`` and ``extra["profile"]``, are the
    ``distributed`` and ``profile`` fields (same keys inside). Schema 1 reports load into schema 2."""

    schema_version: int = SCHEMA_VERSION
    kind: str = "analyze"
    workload: str = ""
    environment: Environment = field(default_factory=Environment)
    ceilings: Ceilings = field(default_factory=Ceilings)
    ops: list[OpRecord] = field(default_factory=list)
    kernels: list[KernelRecord] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)
    findings: list[Finding] = field(default_factory=list)
    syncs: list[SyncSite] = field(default_factory=list)
    memory: MemorySummary = field(default_factory=MemorySummary)
    step_time: Timing | None = None
    profiled_step_time: Timing | None = None
    steps: Count = 1
    ranks: list[RankRecord] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    distributed: DistributedInfo | None = None
    profile: ProfileInfo | None = None
    ncu: NcuSummary | None = None
    prediction: Prediction | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; non-finite floats become None (JSON has no NaN or Infinity); an unmodelled
        op's FLOPs, bytes and intensity are None (unknown, never zero), and so are a collective's bytes where the
        trace recorded no message size."""
        return finite_for_json(_null_unknown_work(msgspec.to_builtins(self)))

    def json_bytes(self) -> bytes:
        """``to_json()`` as UTF-8 bytes, without the text copy (a 100,000-op report is ~150 MB of JSON)."""
        if not _any_unknown_work(self.ops):
            return msgspec.json.encode(self)
        return b"".join(self.json_chunks())

    def json_chunks(self, records_per_chunk: int = 4096,
                    before_findings: Callable[[], None] | None = None) -> Iterator[bytes]:
        """``json_bytes()`` in pieces whose concatenation is the same bytes: the op and kernel lists are encoded
        ``records_per_chunk`` at a time, so writing a large report never holds its whole JSON.

        ``before_findings``: called just before the findings are read (a doctor running elsewhere sets them), so
        the ops, kernels and summary before them can be written meanwhile.

        An op whose work is unknown (``_unknown_work``: unmodelled, or a collective of unrecorded size) is written
        with nulls (``_null_unknown_work``) by way of plain data, one chunk at a time: turning the whole report
        into plain data for one such op took a 127,620-op report's JSON from 0.27 to 2.25 s and 215 MB more."""
        encode = msgspec.json.encode
        for i, info in enumerate(msgspec.structs.fields(self)):
            if info.name == "findings" and before_findings is not None:
                before_findings()
            key = (b"{" if i == 0 else b",") + encode(info.encode_name) + b":"
            value = getattr(self, info.name)
            if info.name == "ops" or (isinstance(value, list) and len(value) > records_per_chunk):
                records = _ops_json if info.name == "ops" else _records_json
                yield key + b"["
                for start in range(0, len(value), records_per_chunk):
                    yield (b"," if start else b"") + records(value[start:start + records_per_chunk])
                yield b"]"
            else:
                yield key + encode(value)
        yield b"}"

    def to_json(self, indent: int | None = None) -> str:
        """JSON text; non-finite floats become null. msgspec encodes the records directly, which keeps a
        report of 100,000+ ops fast to write."""
        data = self.json_bytes()
        if indent:
            data = msgspec.json.format(data, indent=indent)
        return data.decode()

    def ceilings_by_device(self) -> dict[int, Ceilings]:
        """Each GPU's roofs, by device id, where one process drove GPUs of different models and each op was judged
        against its own GPU's (``extra["ceilings_by_device"]``, analyze/trace_file.py); empty otherwise, when
        ``ceilings`` are every op's."""
        stored = self.extra.get("ceilings_by_device")
        if not isinstance(stored, dict):
            return {}
        found = {}
        for device, data in stored.items():
            try:
                found[int(device)] = from_builtins(Ceilings, dict(data))
            except (TypeError, ValueError, msgspec.ValidationError):
                continue
        return dict(sorted(found.items()))

    @classmethod
    def from_dict(cls, data: Any) -> "Report":
        """A Report from plain JSON data of any schema up to this one (schema 1's dicts become typed records)."""
        if not isinstance(data, dict) or "schema_version" not in data:
            raise RooflineError("not a roofline report: no schema_version field")
        _check_version(data["schema_version"])
        try:
            report = from_builtins(Report, data)
        except msgspec.ValidationError as exc:
            raise RooflineError(f"malformed roofline report: {describe_invalid(exc, data)}") from None
        return report._decoded()

    @classmethod
    def from_json(cls, raw: bytes) -> "Report":
        """Decoded by msgspec straight into the types; a file with nulls where numbers go (non-finite values,
        an unmodelled op's unknown work) or of an older schema takes the plain-data route of from_dict, and so
        does JSON that does not open with schema_version (typed decoding would fill a missing one with its default
        and take any JSON object, a trace included, for an empty report). The cycle collector is paused meanwhile
        (gcpause.py): decoding a 127,620-op report made it rescan the report's new objects again and again, 1.2 s
        of 1.9."""
        with cyclic_gc_paused():
            if _REPORT_HEAD.match(raw[:256]) is None:
                return cls.from_dict(msgspec.json.decode(raw))
            try:
                report = msgspec.json.decode(raw, type=Report)
            except msgspec.ValidationError:
                return cls.from_dict(msgspec.json.decode(raw))
            _check_version(report.schema_version)
            return report._decoded()

    def _decoded(self) -> "Report":
        """The report as analysis hands it over: ops with equal argument lists share them again (argument_lists.py);
        a schema 1 report becomes schema 2: its ``extra["profile"]``/``extra["distributed"]`` become typed fields;
        the summary's fields added since the file was written (shares, module tree) are filled from its ops."""
        share_equal_argument_lists(self.ops)
        if self.schema_version < 2:
            try:
                if isinstance(self.extra.get("profile"), dict):
                    self.profile = msgspec.convert(self.extra.pop("profile"), ProfileInfo)
                if isinstance(self.extra.get("distributed"), dict):
                    self.distributed = from_builtins(DistributedInfo, self.extra.pop("distributed"))
            except msgspec.ValidationError as exc:
                raise RooflineError(f"malformed roofline report: {describe_invalid(exc)}") from None
            self.extra.pop("chrome_trace", None)  # the path of a temporary file, gone once its run ended
            self.schema_version = SCHEMA_VERSION
        self.summary.fill_shares()
        if self.summary.module_tree is None:
            self.summary.module_tree = module_tree(self.ops)
        return self

    def save(self, path: str | os.PathLike[str]) -> Path:
        """JSON (gzip-compressed for a .gz name); schema_version is always the first field written."""
        return atomic_write_chunks(path, self.json_chunks())

    @staticmethod
    def is_report_file(path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` holds a roofline report rather than a trace, from its first bytes only (a trace
        can be gigabytes): a report's JSON opens with its schema_version field."""
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe's bytes, once read, would be gone for its reader
                return False
            with open(path, "rb") as fh:
                head = fh.read(2)
            opener = gzip.open if head == b"\x1f\x8b" else open
            with opener(path, "rb") as fh:
                head = fh.read(256)
        except (OSError, EOFError):
            return False
        return _REPORT_HEAD.match(head) is not None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Report":
        raw = read_maybe_gzip(path, "report", json=True)
        try:
            return cls.from_json(raw)
        except (UnicodeDecodeError, msgspec.DecodeError) as exc:
            raise RooflineError(f"cannot parse report {path}: {exc}{_syntax_hint(exc, raw)}") from None
        except RooflineError as exc:
            if b'"traceEvents"' in raw[:1 << 20] or raw.lstrip()[:1] == b"[":
                raise RooflineError(f"{path} is a trace, not a roofline report: run `roofline trace {path}` "
                                    "first and pass its report.json") from None
            raise RooflineError(f"{path}: {exc}") from None

    def to_pandas(self):
        """The ops as a pandas DataFrame (one row per op call). Needs pandas."""
        try:
            import pandas as pd
        except ImportError:
            raise RooflineError("to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame(msgspec.to_builtins(self.ops))


def _syntax_hint(exc: Exception, raw: bytes) -> str:
    """Why a report does not parse, where the bytes at the error are a NaN or Infinity: '; ...' or ''."""
    at = re.search(r"\(byte (\d+)\)", str(exc))
    if at is None:
        return ""
    pos = int(at.group(1))
    return non_json_number_hint(raw[max(0, pos - 64):pos + 16])


_INVALID = re.compile(r"(?P<what>.*?)(?: - at `\$(?P<where>.*)`)?", re.S)
_EXPECTED = re.compile(r"Expected `(?P<want>[^`]*)`(?:, got `(?P<got>[^`]*)`)?(?P<rest>.*)", re.S)
_KINDS = {"float": "a number", "int": "a whole number", "str": "a string", "array": "a list", "object": "an object",
          "bool": "true or false", "null": "null"}


def describe_invalid(exc: msgspec.ValidationError, data: Any = None, whole: str = "the report") -> str:
    """A msgspec validation error in roofline's words: where (``ops[0].time_s``), what it holds (its value, looked
    up in ``data`` where given) and what was expected, instead of the decoder's ``Expected `float`, got `str` - at
    `$.ops[0].time_s```."""
    message = _INVALID.fullmatch(str(exc))
    where = message.group("where") or ""
    place = where.lstrip(".") or whole
    what = message.group("what")
    missing = re.fullmatch(r"Object missing required field `(.*)`", what)
    if missing:
        return f"{place} has no {missing.group(1)} field"
    enum = re.fullmatch(r"Invalid enum value (.*)", what)
    if enum:
        return f"{place} is {enum.group(1)}, not one of the values roofline knows"
    expected = _EXPECTED.fullmatch(what)
    if expected is None:
        return what.replace("`", "'") + (f" at {place}" if where else "")
    want = " or ".join(_KINDS.get(kind.strip(), kind.strip()) for kind in expected.group("want").split("|"))
    value = _value_at(data, where)
    if value is not None:
        held = value
    elif expected.group("got"):
        held = _KINDS.get(expected.group("got"), expected.group("got"))
    else:
        held = "out of range"
    return f"{place} is {held}, expected {want}{expected.group('rest').rstrip()}"


def _value_at(data: Any, where: str) -> str | None:
    """The JSON of the scalar at msgspec's path ``where`` (``.ops[0].time_s``) in ``data``, short; None when
    ``data`` is not given, the path does not lead anywhere, or it leads to a list or object."""
    if data is None:
        return None
    for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", where):
        try:
            data = data[name] if name else data[int(index)]
        except (KeyError, IndexError, TypeError):
            return None
    if isinstance(data, (dict, list)):
        return None
    text = msgspec.json.encode(data).decode() if not isinstance(data, float) or math.isfinite(data) else repr(data)
    return text if len(text) <= 40 else text[:37] + "..."


def finite_for_json(obj: Any) -> Any:
    """Plain data with non-finite floats replaced by None (JSON has no NaN or Infinity)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_for_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_for_json(v) for v in obj]
    return obj


UNKNOWN_WORK_FIELDS = ("flops", "bytes", "arithmetic_intensity")


# Collectives that move no message whatever the trace recorded: a zero there is their size, not a missing one.
SIZELESS_COLLECTIVES = ("barrier", "barrier_", "wait_tensor")


def collective_size_unknown(name: str, bound: str, nbytes: float | None) -> bool:
    """A collective row (bound ``communication``) whose bytes are 0 for want of a record (the trace recorded no
    message size), not because it sends nothing."""
    return bound == "communication" and not nbytes and not name.endswith(SIZELESS_COLLECTIVES)


def known_bytes(op: OpRecord) -> float | None:
    """The op's bytes as report.json writes them: None where unknown (an unmodelled op's work; a collective's
    message the trace did not record), a collective's message even though its row is unmodelled."""
    if op.bound == "communication":
        return None if collective_size_unknown(op.name, op.bound, op.bytes) else op.bytes
    return op.bytes if op.modeled else None


def _unknown_work(op: OpRecord) -> bool:
    return not op.modeled or collective_size_unknown(op.name, op.bound, op.bytes)


def _any_unknown_work(ops: list[OpRecord]) -> bool:
    """``any(_unknown_work(op) for op in ops)``, the common case (every op modelled, none a collective) read
    without a call per op: op by op it was 0.045 s of writing a 127,620-op report.json (0.026 s now)."""
    if not all(map(_MODELED, ops)):
        return True
    return "communication" in set(map(_BOUND, ops)) and any(_unknown_work(op) for op in ops)


_MODELED, _BOUND = attrgetter("modeled"), attrgetter("bound")


def _records_json(records: list) -> bytes:
    """The JSON of ``records`` without the list's brackets."""
    return msgspec.json.encode(records)[1:-1]


def _ops_json(ops: list[OpRecord]) -> bytes:
    """``_records_json`` of report ops, an op whose work is unknown with its nulls (``_null_unknown_work``)."""
    if not _any_unknown_work(ops):
        return _records_json(ops)
    return _records_json(_null_unknown_work({"ops": msgspec.to_builtins(ops)})["ops"])


def _null_unknown_work(data: dict[str, Any]) -> dict[str, Any]:
    """An unmodelled op's work is unknown: null in JSON, not 0 (the report's plain data, changed in place). A
    collective's (bound ``communication``) bytes are its message: kept where the trace recorded it, 0 for one that
    sends none (a barrier), else null, modelled or not (a script must not read an unsized all-gather as one that
    moved nothing). Loading turns each null back into the field's 0 (from_builtins), which collective_size_unknown
    reads as unknown again."""
    for op in data.get("ops") or ():
        message = op.get("bytes")
        if not op.get("modeled", True):
            for name in UNKNOWN_WORK_FIELDS:
                op[name] = None
        if op.get("bound") == "communication":  # its bytes are its message, a barrier's none at all
            op["bytes"] = None if collective_size_unknown(op.get("name") or "", "communication", message) else message
    return data


def _check_version(version: Any) -> None:
    if not isinstance(version, int) or isinstance(version, bool):
        raise RooflineError(f"malformed roofline report: schema_version is {version!r}, expected a whole number")
    if version > SCHEMA_VERSION:
        raise RooflineError(
            f"report schema_version {version!r} is newer than this roofline understands ({SCHEMA_VERSION}); upgrade roofline"
        )


def from_builtins(cls: type, data: Any) -> Any:
    """A record of type ``cls`` from plain JSON data, decoded and checked by msgspec from the type itself.

    A null where ``cls`` (or a record nested in it) has a plain number is removed first (changing ``data``), so
    the field takes its default: JSON writes non-finite floats as null, and an unmodelled op's unknown work is
    null. Unknown keys (a newer minor version's) are ignored. Raises msgspec.ValidationError."""
    _drop_nulls(data, msgspec.inspect.type_info(cls))
    return msgspec.convert(data, cls)


_NUMBERS = (msgspec.inspect.FloatType, msgspec.inspect.IntType)
_PLANS: dict[type, tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]] = {}


def _drop_nulls(data: Any, info: Any) -> None:
    if isinstance(info, msgspec.inspect.UnionType):
        for member in info.types:
            if not isinstance(member, msgspec.inspect.NoneType):
                _drop_nulls(data, member)
    elif isinstance(info, msgspec.inspect.ListType) and isinstance(data, list):
        item = info.item_type
        if _holds_records(item):
            for value in data:
                _drop_nulls(value, item)
    elif isinstance(info, msgspec.inspect.StructType) and isinstance(data, dict):
        numbers, nested = _plan(info)
        for name in numbers:
            if name in data and data[name] is None:
                del data[name]
        for name, sub in nested:
            value = data.get(name)
            if value is not None:
                _drop_nulls(value, sub)


def _holds_records(info: Any) -> bool:
    if isinstance(info, msgspec.inspect.StructType):
        return True
    if isinstance(info, msgspec.inspect.ListType):
        return _holds_records(info.item_type)
    if isinstance(info, msgspec.inspect.UnionType):
        return any(_holds_records(t) for t in info.types)
    return False


def _plan(info: Any) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """Per record type, once: its plain-number fields, and the fields that hold records (a 100,000-op report
    must not inspect the op type per op)."""
    plan = _PLANS.get(info.cls)
    if plan is None:
        numbers = tuple(f.encode_name for f in info.fields if isinstance(f.type, _NUMBERS))
        nested = tuple((f.encode_name, f.type) for f in info.fields if _holds_records(f.type))
        plan = _PLANS[info.cls] = (numbers, nested)
    return plan
