"""Plain, compact data read from a torch.profiler / Kineto trace: what ran on the host, on the device, and when.

Times are microseconds on the trace's own clock (``_us``), as Kineto writes them. Indices point into the
Trace's lists (``CpuOp.parent``, ``GpuEvent.op``, ...); -1 means "none". Shape lists (``input_dims`` ...) are
shared between ops with identical values, to keep million-event traces small: treat them as read-only.

``CpuOp.kernel_ids`` is a shared empty tuple until a kernel is attributed (then a list).
Events are ``msgspec.Struct`` objects (C-level construction, no GC tracking: a 1 M-event trace builds in a
fraction of the time dataclasses take); read them like dataclasses, convert with ``msgspec.structs.asdict``.

``roofline.capture.kineto.load_trace`` fills the structure (op tree, steps, modules, source lines, memory
events' ops, launch sites); ``roofline.analyze.attribution.attribute`` then links kernels and syncs to ops
(``GpuEvent.op``, ``SyncEvent.op``, ``CpuOp.kernel_ids`` / ``self_kernel_us`` / ``total_kernel_us``).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import msgspec
import numpy as np

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
# A node's name may be C++-qualified: TorchScript's "torch::jit::(anonymous namespace)::DifferentiableGraphBackward".
_AUTOGRAD_NODE = re.compile(r"^(autograd::engine::evaluate_function: .*|torch::autograd::\w+|(?:[\w:() ]+::)?\w+Backward\d*)$")


def is_step_marker(name: str) -> bool:
    """A ``ProfilerStep#N`` annotation's name: the profiler schedule's step, not an op of the model."""
    return name.startswith("ProfilerStep#")


def is_autograd_frame(name: str) -> bool:
    """True for the autograd engine's frames ("autograd::engine::evaluate_function: AddBackward0",
    "AddBackward0", "torch::autograd::AccumulateGrad", a scripted module's
    "torch::jit::(anonymous namespace)::DifferentiableGraphBackward"): the aten ops inside them are the work; a
    node with none (AddBackward0 passes its gradient through) did nothing but bookkeeping."""
    return _AUTOGRAD_NODE.match(name) is not None


class CommArgs(msgspec.Struct, gc=False, array_like=True):
    """What an event says about the collective it is (NCCL kernels, c10d ops, ``record_param_comms``), as
    written: the communication analysis checks the values. Only events that carry any of it have one."""

    collective: Any = None
    in_nelems: Any = None
    out_nelems: Any = None
    group_size: Any = None
    dtype: Any = None


class HostCall(msgspec.Struct, gc=False, array_like=True):
    """A long call of a Python built-in (``time.sleep``, a blocking read) on the host: time no op shows."""

    name: str
    ts_us: float
    dur_us: float
    tid: Any
    call_from: str | None = None

    @property
    def end_us(self) -> float:
        return self.ts_us + self.dur_us


GRAPH_REPLAY_OP = "CUDA graph replay"  # the op load_trace makes around a graph launch that no op encloses
# The range roofline opens around each replay of a graph it saw captured (capture/cuda_graphs.py), named with the
# graph's capture number ("CUDA graph replay #3"): load_trace reads it as an op, not an annotation.
GRAPH_REPLAY_LABEL = GRAPH_REPLAY_OP + " #"


def is_graph_replay(name: str) -> bool:
    """A graph replay's op: load_trace's around an unlabelled graph launch, or roofline's labelled range."""
    return name == GRAPH_REPLAY_OP or name.startswith(GRAPH_REPLAY_LABEL)


def graph_replay_number(name: str) -> int | None:
    """The capture number a labelled replay's name carries; None for any other name."""
    if not name.startswith(GRAPH_REPLAY_LABEL):
        return None
    digits = name[len(GRAPH_REPLAY_LABEL):]
    return int(digits) if digits.isdigit() else None


DIRECT_LAUNCH_OP = "kernel launched under no op"  # ... and around a kernel launch no op encloses (user Triton)


class CpuOp(msgspec.Struct, gc=False, array_like=True):
    """A host-side op (cat ``cpu_op``) or a ``record_function`` annotation (``is_annotation``)."""

    index: int
    name: str
    ts_us: float
    dur_us: float
    pid: Any
    tid: Any
    external_id: int | None = None
    parent: int = -1
    depth: int = 0
    step: int | None = None
    input_dims: list | None = None
    input_types: list | None = None
    input_strides: list | None = None
    concrete_inputs: list | None = None
    module: str | None = None
    source: str | None = None
    is_backward: bool = False
    is_optimizer: bool = False
    is_recompute: bool = False  # activation checkpointing rerunning a module's forward inside the backward
    # work on the gradients outside autograd and the optimizer's update: clipping, AMP's unscale and inf checks,
    # zero_grad (kineto._GradientWork)
    is_gradient: bool = False
    is_annotation: bool = False
    sequence_number: int | None = None
    kernel_ids: Any = ()  # list[int] | tuple; Any so that msgspec can decode ops (kineto's split load)
    self_kernel_us: float = 0.0
    total_kernel_us: float = 0.0
    comm: CommArgs | None = None
    # run inside autograd's AccumulateGrad node: a leaf's gradient added into (or set as) its .grad, and the hooks it
    # calls (DDP's reducer copying the gradient into its bucket), after the backward graph torch.compile compiles
    is_grad_accumulation: bool = False
    # the op non-reentrant checkpointing aborts to end its rerun: recorded, never run (kineto._mark_aborted_recompute)
    is_aborted: bool = False

    @property
    def end_us(self) -> float:
        return self.ts_us + self.dur_us

    @property
    def is_aten(self) -> bool:
        return self.name.startswith("aten::")


class GpuEvent(msgspec.Struct, gc=False, array_like=True):
    """A device-side event: a kernel, a memcpy or a memset (``category``)."""

    index: int
    name: str
    ts_us: float
    dur_us: float
    device: Any
    stream: Any
    correlation: int | None
    external_id: int | None
    category: str
    op: int = -1
    bytes: int | None = None
    comm: CommArgs | None = None

    @property
    def end_us(self) -> float:
        return self.ts_us + self.dur_us


class SyncEvent(msgspec.Struct, gc=False, array_like=True):
    """A host-device synchronisation recorded by Kineto's cuda_sync events (Stream/Event/Context Sync...)."""

    name: str
    ts_us: float
    dur_us: float
    external_id: int | None
    correlation: int | None = None
    stream: Any = None
    op: int = -1
    call: str | None = None  # the runtime call that waited (cudaStreamSynchronize, cudaEventQuery...), when known
    in_tool: bool = False  # made by the profiler's own code (capture/tool_frames.py), not the user's
    device: Any = None  # the device whose work it waited for, as the trace names it (None: not named)


class MemoryEvent(msgspec.Struct, gc=False, array_like=True):
    """One allocator event (``[memory]`` instant): ``bytes`` > 0 allocates, < 0 frees."""

    ts_us: float
    bytes: int
    addr: int | None
    total_allocated: int | None
    total_reserved: int | None
    device_type: int | None
    device_id: int | None
    op: int = -1


class Step(msgspec.Struct, gc=False):
    """One ``ProfilerStep#N`` annotation on the host."""

    number: int
    ts_us: float
    dur_us: float

    @property
    def end_us(self) -> float:
        return self.ts_us + self.dur_us


class Launch(msgspec.Struct, gc=False, array_like=True):
    """A runtime/driver call on the host (cudaLaunchKernel, cudaMemcpyAsync, cuLaunchKernel, hipLaunchKernel...)."""

    name: str
    ts_us: float
    dur_us: float
    correlation: int | None
    external_id: int | None
    op: int = -1


@dataclass
class Trace:
    path: str
    metadata: dict[str, Any] = field(default_factory=dict)
    device_name: str | None = None
    compute_capability: tuple[int, int] | None = None
    has_gpu: bool = False
    warnings: list[str] = field(default_factory=list)
    ops: list[CpuOp] = field(default_factory=list)
    kernels: list[GpuEvent] = field(default_factory=list)
    syncs: list[SyncEvent] = field(default_factory=list)
    memory: list[MemoryEvent] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    # host time in the profiler's own code (capture/tool_frames.py), every thread's, sorted; empty without stacks
    tool_spans: list[tuple[float, float]] = field(default_factory=list)
    host_calls: list[HostCall] = field(default_factory=list)
    has_shapes: bool = False
    has_stack: bool = False
    has_modules: bool = False
    skipped_events: int = 0
    cut: bool = False
    events_read: int = 0
    categories: set[str] = field(default_factory=set)
    attribution: Any = None
    columns: "OpColumns | None" = field(default=None, repr=False, compare=False)
    _step_starts: list[float] = field(default_factory=list, repr=False, compare=False)

    def step_of(self, ts_us: float) -> int | None:
        """Index of the step whose host span holds ``ts_us``, or None."""
        if len(self._step_starts) != len(self.steps):
            self._step_starts = [s.ts_us for s in self.steps]
        i = bisect.bisect_right(self._step_starts, ts_us) - 1
        if i >= 0 and ts_us < self.steps[i].end_us:
            return i
        return None


def steps_of(steps: list[Step], ts_us: np.ndarray) -> np.ndarray:
    """``Trace.step_of`` of each time (an index into ``steps``, sorted by start; -1: in none), at once."""
    if not steps:
        return np.full(len(ts_us), -1, dtype=np.int64)
    starts = np.fromiter((s.ts_us for s in steps), dtype=np.float64, count=len(steps))
    ends = starts + np.fromiter((s.dur_us for s in steps), dtype=np.float64, count=len(steps))
    i = np.searchsorted(starts, ts_us, side="right") - 1
    inside = (i >= 0) & (ts_us < ends[np.maximum(i, 0)])
    return np.where(inside, i, -1)


@dataclass
class OpColumns:
    """Columns of ``Trace.ops`` (numpy; row i is ``ops[i]``), for passes over every host event that need no
    per-event Python: start, parent (-1: a root), depth, step (-1: in none), int32 as a trace's indices fit; and,
    made when first asked, each op's name as a code into the distinct names (``named``). ``load_trace`` fills the
    first four as it builds the op tree; ``op_columns`` reads them from the ops otherwise."""

    ops: list[CpuOp]
    ts_us: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    step: np.ndarray
    _names: list[str] | None = field(default=None, repr=False)
    _name_codes: np.ndarray | None = field(default=None, repr=False)
    _levels: list[np.ndarray] | None = field(default=None, repr=False)
    derived: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # other passes' columns, by name, made once

    def matches(self, ops: list[CpuOp]) -> bool:
        return self.ops is ops and len(self.parent) == len(ops)

    def named(self, test: Callable[[str], bool]) -> np.ndarray:
        """Which ops' names pass ``test`` (a bool per op), calling it once per distinct name: a million-event trace
        has a few thousand."""
        codes = self.name_codes()
        passes = np.fromiter(map(test, self._names), dtype=bool, count=len(self._names))
        return passes[codes] if len(self._names) else np.zeros(0, dtype=bool)

    def name_codes(self) -> np.ndarray:
        """Each op's name as a code into the distinct names (equal codes: equal names), made once."""
        if self._name_codes is None:
            names = [op.name for op in self.ops]
            codes = {name: code for code, name in enumerate(dict.fromkeys(names))}
            self._name_codes = np.fromiter(map(codes.__getitem__, names), dtype=np.int32, count=len(names))
            self._names = list(codes)
        return self._name_codes

    def levels(self) -> list[np.ndarray]:
        """The ops grouped by depth (``levels()[d]``: the ops at depth d, in index order), for passes that go up or
        down the op tree a level at a time (attribution's kernel totals, the report's host counts): made once."""
        if self._levels is None:
            depth = self.depth
            order = np.argsort(depth, kind="stable").astype(np.int32)
            bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2))
            self._levels = [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]
        return self._levels


def op_columns(trace: Trace) -> OpColumns:
    """The trace's op columns: the loader's, or read from the ops (and kept) when the ops were built or replaced
    otherwise."""
    columns = trace.columns
    if columns is not None and columns.matches(trace.ops):
        return columns
    ops = trace.ops
    n = len(ops)
    columns = OpColumns(
        ops,
        np.fromiter((op.ts_us for op in ops), dtype=np.float64, count=n),
        np.fromiter((op.parent for op in ops), dtype=np.int32, count=n),
        np.fromiter((op.depth for op in ops), dtype=np.int32, count=n),
        np.fromiter((-1 if op.step is None else op.step for op in ops), dtype=np.int32, count=n),
    )
    trace.columns = columns
    return columns
