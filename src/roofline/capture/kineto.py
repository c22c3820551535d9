"""Read torch.profiler / Kineto Chrome-trace JSON (.json or .json.gz) into a compact ``Trace``.

Built for traces of a few GB: ``EventStream`` reads the file in blocks and decodes each block's events into a
small typed struct that keeps only the fields we use; here they become compact ``trace_model`` structs with
names, ids and shape lists interned; nothing else is kept. A malformed event is skipped and counted in ``Trace.warnings``; a file that is not a trace
at all raises ``RooflineError`` with one line saying so. Attribution of kernels to ops is not done here
(``roofline.analyze.attribution``); this module records the structure it needs: which op encloses each runtime
launch call, memory event and op (same pid and tid, by time).
"""

from __future__ import annotations

import math
import os
import re
import signal
import tempfile
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec
import numpy as np

from roofline.capture.begin_end import BeginEndPairs
from roofline.capture.event_stream import AT_MIDDLE, EventStream, gzip_json_size, split_offset
from roofline.capture.source_paths import is_generated_file, is_user_file, local_trace_path
from roofline.capture.tool_frames import in_spans, is_tool_frame, tool_spans
from roofline.capture.trace_model import (
    CommArgs,
    DIRECT_LAUNCH_OP,
    GRAPH_REPLAY_LABEL,
    GRAPH_REPLAY_OP,
    CpuOp,
    GpuEvent,
    HostCall,
    Launch,
    MemoryEvent,
    OpColumns,
    Step,
    SyncEvent,
    Trace,
    steps_of,
)
from roofline.errors import RooflineError
from roofline.forked import fork_running
from roofline.gcpause import cyclic_gc_paused
from roofline.time_text import fmt_time

_Raw = msgspec.Raw


class _Args(msgspec.Struct, gc=False):
    external_id: int | None = msgspec.field(default=None, name="External id")
    # torch 1.8-1.10 (Kineto 2021) spelled it in lower case on runtime and device events
    old_external_id: int | None = msgspec.field(default=None, name="external id")
    correlation: int | None = None
    input_dims: _Raw = msgspec.field(default=None, name="Input Dims")
    input_types: _Raw = msgspec.field(default=None, name="Input type")
    input_strides: _Raw = msgspec.field(default=None, name="Input Strides")
    concrete_inputs: _Raw = msgspec.field(default=None, name="Concrete Inputs")
    sequence_number: int | None = msgspec.field(default=None, name="Sequence number")
    device: int | None = None
    stream: int | str | None = None  # ROCm's Kineto writes a runtime call's as text ("0x0"): _stream_id
    bytes: int | None = None
    mem_bytes: int | None = msgspec.field(default=None, name="Bytes")
    addr: int | None = msgspec.field(default=None, name="Addr")
    total_allocated: int | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: int | None = msgspec.field(default=None, name="Total Reserved")
    device_type: int | None = msgspec.field(default=None, name="Device Type")
    device_id: int | None = msgspec.field(default=None, name="Device Id")
    sync_kind: str | None = msgspec.field(default=None, name="cuda_sync_kind")
    # Kineto's XPU plugin: PTI's synchronization type on xpu_sync events (HOST_EVENT, GPU_BARRIER_EXECUTION...)
    sync_type: Any = msgspec.field(default=None, name="Type")
    collective: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    group_size: Any = msgspec.field(default=None, name="Group size")
    dtype: Any = None
    call_from: Any = msgspec.field(default=None, name="CallFrom")


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: Any = None
    dur: Any = None
    args: _Args | None = None


# _PROFILER_SPAN: Kineto's span of its whole record (category "Trace", "PyTorch Profiler (0)"); read, then as _OTHER
_OP, _ANNOTATION, _GPU, _RUNTIME, _SYNC, _PYTHON, _OTHER, _PROFILER_SPAN = range(8)

_CATEGORY_KIND = {
    "cpu_op": _OP,
    "operator": _OP,
    "Operator": _OP,
    "user_annotation": _ANNOTATION,
    "kernel": _GPU,
    "Kernel": _GPU,
    "gpu_memcpy": _GPU,
    "Memcpy": _GPU,
    "gpu_memset": _GPU,
    "Memset": _GPU,
    "cuda_runtime": _RUNTIME,
    "cuda_driver": _RUNTIME,
    "Runtime": _RUNTIME,
    "cuda_sync": _SYNC,
    "python_function": _PYTHON,
}
# Categories Kineto writes besides the events read (its own span of the trace, CUPTI overhead, ac2g flows): a trace
# holding only these recorded nothing, rather than being another tool's.
_KINETO_OWN = frozenset({"Trace", "overhead", "ac2g", "cpu_instant_event", "gpu_user_annotation", "fwdbwd"})
# the process torch 1.7 and older's autograd profiler (export_chrome_trace, before Kineto) put its ops in
_LEGACY_CPU_PROCESS = "CPU functions"
_GPU_CATEGORY = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset"}
_STEP = re.compile(r"ProfilerStep#(\d+)$")
# The instant Kineto (torch 2.x) writes where its record window ends, after everything it recorded
_WINDOW_END = "Record Window End"
# Built-in calls at least this long are kept (Trace.host_calls): the distributed merge names a straggler's sleep.
MIN_HOST_CALL_US = 100.0
_FRAME = re.compile(r"^(.*?)\((\d+)\): ")
_MODULE_PREFIX = "nn.Module: "
# The frames that start torch.profiler's tracing (torch.autograd.profiler.profile's _start_trace, which
# torch.profiler.profile's start_trace calls; either may be renamed one day): every frame around the earliest was
# already running when profiling began.
_PROFILER_START = re.compile(r"^(?:.*/)?torch/(?:autograd/profiler|profiler/profiler)\.py\(\d+\): _?start_trace$")

# A range (_RecordFunctionFast: a cpu_op event) roofline's script runner opens around each top-level module call
# while profiling (script_runner.StepFinder), named with the user line that made the call: the call site for a
# torch that records none (no CallFrom). Read as a frame, never as an op.
CALL_SITE_PREFIX = "roofline: called at "
_GRAPH_LAUNCH_NAMES = frozenset({"cudaGraphLaunch", "cudaGraphLaunch_v10000", "cuGraphLaunch", "hipGraphLaunch"})

NO_KERNELS_WARNING = "no GPU kernels (nor other accelerator kernels) in the trace"
# torch.profiler.profile writes ProfilerStep#N spans only when it has a schedule: without one, prof.step() counts
# steps but records nothing (torch/profiler/profiler.py: record_steps = False), so the note says what to do.
NO_STEPS_WARNING = ("no ProfilerStep#N annotations: steps unknown. torch.profiler.profile marks steps only when "
                    "given a schedule (prof.step() alone records nothing): pass "
                    "schedule=torch.profiler.schedule(wait=0, warmup=1, active=3) and call prof.step() each step, "
                    "or wrap each step in torch.profiler.record_function('ProfilerStep#N')")
# What to do about a trace with nothing to analyse (here: no event at all; analyze/trace_file: no op to place).
RECORD_THE_MODEL = ("record the model's steps inside torch.profiler.profile(record_shapes=True), or let roofline "
                    "record them: `roofline profile SCRIPT.py` or `roofline analyze FILE.py:factory`")

# Why a profile of a model's steps can hold nothing (the usual mistake with a schedule; its trace is no different from
# that of a profiler that recorded nothing)
_SCHEDULED_EXPORT = ("a profiler given a schedule hands each finished cycle to on_trace_ready and keeps only the last, "
                     "unfinished one for an export after its `with` block: pass "
                     "on_trace_ready=torch.profiler.tensorboard_trace_handler(DIR)")

# where torch.utils.checkpoint reruns the forward: the reentrant CheckpointFunction.backward, the non-reentrant
# saved-tensor unpack hook
_CHECKPOINT_FILE = "torch/utils/checkpoint.py"
_RECOMPUTE_FUNCTIONS = frozenset({"backward", "unpack_hook"})

# Work on the gradients that is neither autograd's nor the optimizer's update (CpuOp.is_gradient, phase "gradient"):
# what clip_grad_norm_/clip_grad_value_ and GradScaler's unscale_/step (its inf checks)/update run, and
# zero_grad. With Python stacks their frames tell it (GradScaler.scale is left out: multiplying the loss is part of
# computing it, as a trace without stacks says too); the optimizer's zero_grad span and AMP's own ops tell it from
# any trace; between the last backward op and an optimizer step the position does (_between_backward_and_step).
_GRADIENT_FILES = ("torch/nn/utils/clip_grad.py", "torch/amp/grad_scaler.py", "torch/cuda/amp/grad_scaler.py")
_GRADIENT_SCALER_FUNCTIONS = frozenset({"unscale_", "step", "update"})
_GRADIENT_SPAN_PREFIX = "Optimizer.zero_grad#"
_GRADIENT_OPS = frozenset({"aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"})
_OPTIMIZER_STEP_PREFIX = "Optimizer.step#"
# The node (and its engine frame, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad") that adds a
# leaf's gradient into its .grad (CpuOp.is_grad_accumulation)
_ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"

# Sweep order at equal timestamps: enclosing frames first, then ops (longest first), then what ops contain.
_RANK_FRAME, _RANK_OP = range(2)

# From this size of JSON, load_trace(split=True) reads a trace's second half in a forked child meanwhile: on the
# 307 MB, 1 M-event trace each half takes about 1 s to decode and collect, and sending one back about 0.3 s. A
# gzipped trace's child first decompresses the head it skips (~0.4 s for that trace's 150 MB).
SPLIT_MIN_BYTES = 64 << 20


def load_trace(path: str | os.PathLike[str], *, split: bool = False,
               events_read: Callable[[], None] | None = None) -> Trace:
    """Read a Kineto/torch.profiler trace file into a ``Trace`` (kernels not yet attributed: see attribution).

    ``split``: a file of at least SPLIT_MIN_BYTES of JSON (plain or gzipped) is read in two halves at once, the
    second by a forked child (``_TailReader``), where fork is available and safe and two CPUs are; the Trace is
    the same. ``events_read``: called once this process has read its events, before they are put in order
    (``finish``): from then on this process alone works, and a split read's child is done or nearly, so a CPU is
    free for work waiting on the sidelines (the PNG drawer's warm-up)."""
    builder = _TraceBuilder(str(path))
    with cyclic_gc_paused():
        tail = _TailReader.start(path) if split else None
        head = EventStream(path, _Event, stop=tail.offset if tail else None)
        try:
            _read(builder, head)
        except BaseException:
            if tail is not None:
                tail.abandon()
            raise
        if events_read is not None:
            events_read()
        if tail is not None:
            if head.split_point is None:  # no event boundary near a gzipped trace's middle: the head read it all
                tail.abandon()
            elif builder.pairs.seen:  # begin/end pairs may straddle the split: read on with the spans open
                tail.abandon()
                _read(builder, EventStream(path, _Event, start=head.split_point))
            elif not tail.absorb_into(builder):
                _read(builder, EventStream(path, _Event, start=head.split_point))
        return builder.finish()


def _read(builder: "_TraceBuilder", stream: EventStream) -> None:
    stream.events_read = builder.trace.events_read  # a second range's warnings count the whole file's events
    for events in stream:
        builder.add_events(events)
        del events
    _take_stream(builder.trace, stream)
    builder.skipped += stream.skipped


def _profiler_errors(metadata: dict) -> str:
    """Kineto's own errors, which it lists in the header ("ERROR": ["ERROR:<time> <pid>:<tid>
    DeviceProperties.cpp:47] gpuGetDeviceCount failed with code 35"], torch 2.7 without a usable GPU): why a trace
    may hold no device activity."""
    errors = metadata.get("ERROR")
    if not isinstance(errors, list):
        return ""
    messages = list(dict.fromkeys(e.split("] ", 1)[-1].strip() for e in errors if isinstance(e, str)))
    messages = [m for m in messages if m]
    if not messages:
        return ""
    more = f" (and {len(messages) - 1} more in the trace's header)" if len(messages) > 1 else ""
    return f"; the profiler logged: {messages[0][:200]}{more}"


def _take_stream(trace: Trace, stream: Any) -> None:
    """What a read of the file says about it (metadata before and after the list, warnings, a cut, events read)."""
    trace.metadata.update(stream.metadata)
    trace.warnings.extend(stream.warnings)
    trace.cut = stream.cut
    trace.events_read = stream.events_read


class _StreamState(msgspec.Struct):
    metadata: dict
    warnings: list
    cut: bool
    events_read: int


class _TailReader:
    """The events from ``offset`` (an event boundary near the middle; AT_MIDDLE for a gzipped trace, whose child
    finds it as this process will) to the end of a trace, read by a forked child while this process reads the
    events before it, and handed back as msgpack frames (``_send_tail``) in an unnamed temporary file, with a byte
    on a pipe once they are all there. Ops' shape lists travel as their raw keys, so that the parent shares its own
    lists between ops as a one-process read does; names and ids are interned again. Whatever goes wrong in the
    child (it dies, raises, the trace is cut short there), ``absorb_into`` says False and the caller reads the rest
    itself.

    A file rather than the pipe itself: through a pipe the child could encode only a pipe's worth ahead of this
    process's reading, so it encoded while this process, done with its own half, waited for the frames (on the
    307 MB trace ~0.1 s of the 0.27 s receive); written to a file, the frames are ready when this process is."""

    def __init__(self, path: str, offset: int | str, pid: int, done_fd: int, frames) -> None:
        self.path, self.offset, self._pid = path, offset, pid
        self._done = os.fdopen(done_fd, "rb")
        self._frames = frames

    @classmethod
    def start(cls, path: str | os.PathLike[str]) -> "_TailReader | None":
        path = str(path)
        try:
            gzipped = gzip_json_size(path)
            if ((gzipped or os.path.getsize(path)) < SPLIT_MIN_BYTES or not hasattr(os, "fork")
                    or _usable_cpus() < 2 or threading.active_count() > 1):
                return None
            offset = AT_MIDDLE if gzipped else split_offset(path)
        except (OSError, ValueError):
            return None
        if offset is None:
            return None
        try:
            frames = tempfile.TemporaryFile()
        except OSError:
            return None
        read_fd, write_fd = os.pipe()
        pid = fork_running(_send_tail_to, path, offset, frames.fileno(), write_fd, close=(read_fd,))
        os.close(write_fd)
        return cls(path, offset, pid, read_fd, frames)

    def abandon(self) -> None:
        """Stop the child and reap it (this process failed reading its own half)."""
        self._done.close()
        self._frames.close()
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self._pid, 0)

    def absorb_into(self, builder: "_TraceBuilder") -> bool:
        """Add the child's events to ``builder`` (all or nothing); False if there is nothing whole to add."""
        try:
            if self._done.read(1) != _DONE:
                raise EOFError("the tail reader stopped early")
            self._frames.seek(0)  # the child, which wrote through this file's offset, is done with it
            data = self._frames.read()
            part = _receive_tail(_Frames(memoryview(data)))
            del data
        except (EOFError, OSError, ValueError, msgspec.DecodeError):
            part = None
        finally:
            self._done.close()
            self._frames.close()
            _, status = os.waitpid(self._pid, 0)
        # a tail with begin/end pairs: one may have begun in the head (load_trace reads on with the spans open)
        if part is None or status != 0 or part[0]["cut"] or part[0]["begin_end"]:
            return False
        builder.absorb(*part)
        return True


def _usable_cpus() -> int:
    """CPUs this process may run on (its affinity, where the OS says; else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_FRAME_ITEMS = 1 << 15
_TAIL_LISTS = (("ops", CpuOp), ("kernels", GpuEvent), ("syncs", SyncEvent), ("memory", MemoryEvent),
               ("launches", Launch), ("host_calls", HostCall))
_COLUMNS = ("frame_ts", "frame_ends", "frame_threads", "frame_labels", "memory_threads", "launch_threads", "launch_ts",
            "launch_durs", "op_ts", "op_durs", "op_threads", "tool_ts", "tool_ends", "tool_threads")


_DONE = b"d"  # on the pipe once every frame is in the file


def _send_tail_to(path: str, offset: int | str, frames_fd: int, done_fd: int) -> None:
    with os.fdopen(os.dup(frames_fd), "wb", buffering=1 << 20) as out:
        _send_tail(path, offset, out)
    os.write(done_fd, _DONE)
    os.close(done_fd)


class _Frames:
    """``read`` over frames already in memory, each a view (no copy) that msgpack decodes in place."""

    def __init__(self, data: memoryview) -> None:
        self._data, self._at = data, 0

    def read(self, size: int) -> memoryview:
        chunk = self._data[self._at:self._at + size]
        self._at += len(chunk)
        return chunk


def _send_tail(path: str, offset: int | str, out) -> None:
    """In the child: read the events from ``offset`` on and write them to ``out`` (a header, then each list)."""
    stream = EventStream(path, _Event, start=offset)
    builder = _TraceBuilder(path)
    _read(builder, stream)
    if stream.split_point is None:
        raise ValueError("no event boundary near the middle: the parent reads the whole trace")
    shape_codes = {id(value[0]): i for i, value in enumerate(builder.shape_cache.values())}
    position = {id(op): i for i, op in enumerate(builder.ops)}
    codes = []
    for op in builder.ops:
        if op.input_dims is None:
            codes.append(-1)
        else:
            codes.append(shape_codes[id(op.input_dims)])
            op.input_dims = op.input_types = op.input_strides = op.concrete_inputs = None
    lists = {"ops": builder.ops, "kernels": builder.kernels, "syncs": builder.syncs, "memory": builder.memory,
             "launches": builder.launches, "host_calls": builder.trace.host_calls}
    header = {
        "threads": list(builder.threads), "labels": list(builder.labels), "kinds": builder.kinds,
        "has_stack": builder.has_stack, "has_modules": builder.has_modules, "skipped": builder.skipped,
        "bad_times": builder.bad_times, "legacy_events": builder.legacy_events,
        "begin_end": builder.pairs.seen, "window_end": builder.window_end,
        "profiler_span_end": builder.profiler_span_end, "shapes": list(builder.shape_cache),
        "profiler_start": builder.profiler_start, "saw_call_from": builder.saw_call_from,
        "generated_files": sorted(builder.generated_files),
        "steps": [(number, position[id(op)]) for number, op in builder.step_ops],
        "counts": {name: len(items) for name, items in lists.items()},
        "metadata": builder.trace.metadata, "warnings": builder.trace.warnings, "cut": builder.trace.cut,
        "events_read": builder.trace.events_read,
        **{name: getattr(builder, name).tobytes() for name in _COLUMNS},
    }
    encode = msgspec.msgpack.Encoder().encode
    _write_frame(out, encode(header))
    for name, _ in _TAIL_LISTS:
        items = lists[name]
        for start in range(0, len(items), _FRAME_ITEMS):
            chunk = items[start:start + _FRAME_ITEMS]
            _write_frame(out, encode((chunk, codes[start:start + _FRAME_ITEMS]) if name == "ops" else chunk))


def _write_frame(out, data: bytes) -> None:
    out.write(len(data).to_bytes(8, "little"))
    out.write(data)


def _read_frame(file) -> bytes:
    size = int.from_bytes(_read_exactly(file, 8), "little")
    return _read_exactly(file, size)


def _read_exactly(file, size: int) -> bytes:
    data = file.read(size)
    if len(data) != size:
        raise EOFError("the tail reader stopped early")
    return data


def _receive_tail(file) -> tuple[dict, dict, list[int]]:
    header = msgspec.msgpack.decode(_read_frame(file))
    lists: dict[str, list] = {}
    codes: list[int] = []
    for name, kind in _TAIL_LISTS:
        decode = msgspec.msgpack.Decoder(tuple[list[kind], list[int]] if name == "ops" else list[kind]).decode
        items: list = []
        while len(items) < header["counts"][name]:
            chunk = decode(_read_frame(file))
            if name == "ops":
                chunk, chunk_codes = chunk
                codes.extend(chunk_codes)
            items.extend(chunk)
        lists[name] = items
    return header, lists, codes


def _as_list(data: bytes | None) -> list | None:
    if data is None:
        return None
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def _number(value: Any) -> float | None:
    if type(value) is float or type(value) is int:
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


class _TraceBuilder:
    """Collects events by kind, then orders them and rebuilds the op tree per thread."""

    def __init__(self, path: str) -> None:
        self.trace = Trace(path=path)
        self.ops: list[CpuOp] = []
        self.op_ts = array("d")
        self.op_durs = array("d")
        self.op_threads = array("q")
        self.kernels: list[GpuEvent] = []
        self.syncs: list[SyncEvent] = []
        # What the per-thread sweep needs, as flat columns: a million-event trace's Python frames would cost a
        # tuple, a key tuple and two floats each. Threads are small codes (``_thread``).
        self.threads: dict[tuple[Any, Any], int] = {}
        self.memory: list[MemoryEvent] = []
        self.memory_threads = array("q")
        self.launches: list[Launch] = []
        self.launch_threads = array("q")
        self.launch_ts = array("d")
        self.launch_durs = array("d")
        self.frame_ts = array("d")
        self.frame_ends = array("d")
        self.frame_threads = array("q")
        self.frame_labels = array("q")
        # the profiler's own frames (roofline's capture, torch.profiler: tool_frames.py), kept apart from the labels
        self.tool_ts = array("d")
        self.tool_ends = array("d")
        self.tool_threads = array("q")
        self.labels: dict[tuple, int] = {}
        self.call_sites: dict[str, tuple[int, str, None] | None] = {}
        # (ts, end) of the frame that started tracing (_PROFILER_START), the earliest one seen.
        self.profiler_start: tuple[float, float] | None = None
        self.saw_call_from = False
        self.has_stack = False
        self.has_modules = False
        self.step_ops: list[tuple[int, CpuOp]] = []
        self.gpu_steps: dict[int, tuple[float, float]] = {}
        self.strings: dict[str, str] = {}
        self.shape_cache: dict[tuple, tuple] = {}
        self.ids: dict[Any, Any] = {}
        self.kinds: dict[str, int] = dict(_CATEGORY_KIND)
        self.frame_kinds: dict[str, tuple[int, str] | None] = {}
        self.generated_files: set[str] = set()  # torch.compile's output code that ran (frames of it seen)
        self.skipped = 0
        self.bad_times = 0
        self.legacy_events = 0  # complete events of the pre-Kineto autograd profiler (_LEGACY_CPU_PROCESS)
        self.pairs = BeginEndPairs()  # spans written as begin/end pairs (ph B/E), read as complete events
        self.window_end: float | None = None  # the latest _WINDOW_END instant's time
        self.profiler_span_end: float | None = None  # where the latest-ending _PROFILER_SPAN ends

    def add_events(self, events: list[_Event]) -> None:
        kinds = self.kinds
        intern = self.strings.setdefault
        ops_append = self.ops.append
        op_ts_append, op_durs_append, op_threads_append = self.op_ts.append, self.op_durs.append, self.op_threads.append
        thread = self._thread
        shape_get = self.shape_cache.get
        step_match = _STEP.match
        ids = self.ids
        for ev in events:
            kind = kinds.get(ev.cat)
            if kind is None:
                kind = kinds[ev.cat] = _category_kind(ev.cat)
            if kind >= _OTHER:
                if kind == _PROFILER_SPAN and ev.ph == "X":
                    self._profiler_span(ev)
                elif ev.name == "[memory]":
                    self._memory(ev)
                elif ev.pid == _LEGACY_CPU_PROCESS:
                    self.legacy_events += 1
                elif ev.ph == "E" or ev.ph == "B":  # an "E" may have no category; any "B" is stacked
                    self._begin_end(ev)
                elif ev.name == _WINDOW_END:
                    ts = _number(ev.ts)
                    if ts is not None and (self.window_end is None or ts > self.window_end):
                        self.window_end = ts
                continue
            if ev.ph != "X":
                if ev.ph == "B" or ev.ph == "E":
                    self._begin_end(ev)
                continue
            ts = ev.ts
            dur = ev.dur
            if type(ts) is not float or type(dur) is not float:
                ts, dur = _number(ts), _number(dur)
                if ts is None or dur is None:
                    self.bad_times += 1
                    continue
            if not dur >= 0.0:
                self.bad_times += 1
                continue
            if kind <= _ANNOTATION:
                name = intern(ev.name, ev.name)
                pid = ids.setdefault(ev.pid, ev.pid)
                tid = ev.tid
                if type(tid) is str and " overlap " in tid:
                    tid = _lane_root(tid)
                tid = ids.setdefault(tid, tid)
                args = ev.args
                # torch 1.8-1.10 wrote record_function spans (ProfilerStep#N among them) as "Operator" ops.
                is_annotation = kind == _ANNOTATION or (ev.cat == "Operator" and step_match(name) is not None)
                if is_annotation and name.startswith(GRAPH_REPLAY_LABEL):  # roofline's label of a replay: an op
                    is_annotation = False
                if args is None:
                    op = CpuOp(0, name, ts, dur, pid, tid, is_annotation=is_annotation)
                elif args.input_dims is None:
                    op = CpuOp(0, name, ts, dur, pid, tid, args.external_id,
                               is_annotation=is_annotation, sequence_number=args.sequence_number)
                else:
                    # The raw shape lists as the shared lists' key, inline: a call per op and per list cost 0.04-0.09 s
                    # of CPU reading the 1 M-event trace (both halves together).
                    types, strides, concrete = args.input_types, args.input_strides, args.concrete_inputs
                    key = (bytes(args.input_dims), None if types is None else bytes(types),
                           None if strides is None else bytes(strides), None if concrete is None else bytes(concrete))
                    value = shape_get(key)
                    if value is None:
                        value = self._shape_value(key)
                    dims, types, strides, concrete = value
                    op = CpuOp(0, name, ts, dur, pid, tid, args.external_id, input_dims=dims,
                               input_types=types, input_strides=strides, concrete_inputs=concrete,
                               is_annotation=is_annotation, sequence_number=args.sequence_number)
                if is_annotation:
                    match = step_match(name)
                    if match:
                        self.step_ops.append((int(match.group(1)), op))
                if args is not None and (args.collective is not None or args.in_nelems is not None):
                    op.comm = _comm(args)
                ops_append(op)
                op_ts_append(ts)
                op_durs_append(dur)
                op_threads_append(thread(pid, tid))
            elif kind == _PYTHON:
                self._frame(ev, ts, dur)
            elif kind == _RUNTIME:
                args = ev.args
                if args is not None and args.correlation is not None:
                    self.launches.append(Launch(intern(ev.name, ev.name), ts, dur, args.correlation,
                                                _external_id(args)))
                    self.launch_threads.append(self._thread(ev.pid, ev.tid))
                    self.launch_ts.append(ts)
                    self.launch_durs.append(dur)
            elif kind == _GPU:
                self._gpu(ev, ts, dur)
            else:
                args = ev.args or _Args()
                if isinstance(args.sync_type, str) and args.sync_type.startswith("GPU_BARRIER"):
                    continue  # an XPU barrier between kernels: the device waits, not the host
                name = args.sync_kind or ev.name
                self.syncs.append(
                    SyncEvent(intern(name, name), ts, dur, _external_id(args), args.correlation,
                              _stream_id(args.stream, ev.tid),
                              device=args.device if args.device is not None else ev.pid)
                )

    def _profiler_span(self, ev: _Event) -> None:
        ts, dur = _number(ev.ts), _number(ev.dur)
        if ts is not None and dur is not None and (self.profiler_span_end is None or ts + dur > self.profiler_span_end):
            self.profiler_span_end = ts + dur

    def _begin_end(self, ev: _Event) -> None:
        ready = self.pairs.add(ev)
        if ready:
            self.add_events(ready)

    def _intern(self, text: str) -> str:
        return self.strings.setdefault(text, text)

    def absorb(self, header: dict, lists: dict[str, list], shape_codes: list[int]) -> None:
        """Append what another builder collected from the events after this one's (``_TailReader``): its lists
        follow this one's, as in a one-process read; thread and frame-label codes are mapped to this builder's,
        shape lists, names and ids to this builder's shared objects."""
        intern = self.strings.setdefault
        ids = self.ids.setdefault
        shapes = [self._shape_value(tuple(key)) for key in header["shapes"]]
        ops = lists["ops"]
        for op, code in zip(ops, shape_codes):
            op.name = intern(op.name, op.name)
            op.pid = ids(op.pid, op.pid)
            op.tid = ids(op.tid, op.tid)
            op.kernel_ids = ()
            if code >= 0:
                op.input_dims, op.input_types, op.input_strides, op.concrete_inputs = shapes[code]
        for event in (*lists["kernels"], *lists["launches"], *lists["syncs"]):
            event.name = intern(event.name, event.name)
        for kernel in lists["kernels"]:
            kernel.category = intern(kernel.category, kernel.category)
        for call in lists["host_calls"]:
            call.name = intern(call.name, call.name)
            call.tid = ids(call.tid, call.tid)
        self.step_ops.extend((number, ops[i]) for number, i in header["steps"])
        self.ops.extend(ops)
        self.kernels.extend(lists["kernels"])
        self.syncs.extend(lists["syncs"])
        self.memory.extend(lists["memory"])
        self.launches.extend(lists["launches"])
        self.trace.host_calls.extend(lists["host_calls"])
        threads = np.array([self._thread(pid, tid) for pid, tid in header["threads"]] or [0], dtype=np.int64)
        labels = np.array([self.labels.setdefault(tuple(kind), len(self.labels)) for kind in header["labels"]]
                          or [0], dtype=np.int64)
        for name, codes in (("frame_threads", threads), ("memory_threads", threads), ("launch_threads", threads),
                            ("op_threads", threads), ("tool_threads", threads), ("frame_labels", labels)):
            column = np.frombuffer(header[name], dtype=np.int64)
            getattr(self, name).frombytes(codes[column].tobytes())
        for name in ("frame_ts", "frame_ends", "launch_ts", "launch_durs", "op_ts", "op_durs", "tool_ts", "tool_ends"):
            getattr(self, name).frombytes(header[name])
        for category, kind in header["kinds"].items():
            self.kinds.setdefault(category, kind)
        self.saw_call_from = self.saw_call_from or header["saw_call_from"]
        self.generated_files.update(header["generated_files"])
        start = header["profiler_start"]
        if start is not None and (self.profiler_start is None or start[0] < self.profiler_start[0]):
            self.profiler_start = (start[0], start[1])
        self.has_stack = self.has_stack or header["has_stack"]
        for name in ("window_end", "profiler_span_end"):
            if header[name] is not None and (getattr(self, name) is None or header[name] > getattr(self, name)):
                setattr(self, name, header[name])
        self.has_modules = self.has_modules or header["has_modules"]
        self.skipped += header["skipped"]
        self.bad_times += header["bad_times"]
        self.legacy_events += header["legacy_events"]
        stream = _StreamState(header["metadata"], header["warnings"], header["cut"],
                              self.trace.events_read + header["events_read"])
        _take_stream(self.trace, stream)

    def _thread(self, pid: Any, tid: Any) -> int:
        threads = self.threads
        key = (pid, tid)
        code = threads.get(key)
        if code is None:
            code = threads[key] = len(threads)
        return code

    def _shape_value(self, key: tuple) -> tuple:
        """The four shape lists of an op from their raw JSON (``key``), decoded once per distinct combination and
        shared between ops."""
        value = self.shape_cache.get(key)
        if value is None:
            value = self.shape_cache[key] = tuple(_as_list(part) for part in key)
        return value

    def _frame(self, ev: _Event, ts: float, dur: float) -> None:
        """A Python frame: an nn.Module's (its name), a user frame (its file:line), and where torch records the
        call site (the CallFrom argument), the user line that called it: that line is exact, where the frame's
        own line is its function's first line, or for a frame already running when profiling began the line it
        was on then."""
        kinds = self.frame_kinds
        name = ev.name
        call_from = ev.args.call_from if ev.args is not None else None
        if dur >= MIN_HOST_CALL_US and name.startswith("<built-in"):
            self.trace.host_calls.append(HostCall(self._intern(name), ts, dur, self.ids.setdefault(ev.tid, ev.tid),
                                                  call_from if isinstance(call_from, str) else None))
        kind = kinds.get(name, 0)
        if kind == 0:
            kind = kinds[name] = _frame_kind(name)
            generated = _generated_file(name) if kind is None else None
            if generated is not None:
                self.generated_files.add(generated)
        if kind is _IN_TOOL:
            self._add_tool_frame(ev, ts, dur)
            kind = None
        if kind is _STARTS_PROFILER:
            if self.profiler_start is None or ts < self.profiler_start[0]:
                self.profiler_start = (ts, ts + dur)
            kind = None
        if kind is not None:
            self._add_frame(kind, ev, ts, dur)
        if type(call_from) is str:
            self.saw_call_from = True
        if type(call_from) is str and (kind is None or kind[0] in (_MODULE, _GRADIENT)):
            site = self.call_sites.get(call_from, 0)
            if site == 0:
                site = self.call_sites[call_from] = _call_site(call_from)
            if site is not None:
                self._add_frame(site, ev, ts, dur)

    def _add_frame(self, kind: tuple, ev: _Event, ts: float, dur: float) -> None:
        tid = ev.tid
        if type(tid) is str and " overlap " in tid:
            tid = _lane_root(tid)
        self._add_frame_at(kind, self._thread(ev.pid, tid), ts, ts + dur)

    def _add_tool_frame(self, ev: _Event, ts: float, dur: float) -> None:
        tid = ev.tid
        if type(tid) is str and " overlap " in tid:
            tid = _lane_root(tid)
        self.tool_ts.append(ts)
        self.tool_ends.append(ts + dur)
        self.tool_threads.append(self._thread(ev.pid, tid))

    def _add_frame_at(self, kind: tuple, thread: int, ts: float, end: float) -> None:
        label = self.labels.get(kind)
        if label is None:
            label = self.labels[kind] = len(self.labels)
            if kind[0] == _MODULE:
                self.has_modules = True
            elif kind[0] in (_USER, _CALL_SITE):
                self.has_stack = True
        self.frame_ts.append(ts)
        self.frame_ends.append(end)
        self.frame_threads.append(thread)
        self.frame_labels.append(label)

    def _take_call_site_ranges(self) -> None:
        """roofline's call-site ranges (CALL_SITE_PREFIX; cpu_op events, as _RecordFunctionFast writes them) out of
        the ops, into the frames of their thread. Opened in a module pre-hook and closed in the post-hook, a range
        overlaps the hooks' own frames, so roofline's trace output may put it on a lane of its own ("1234 overlap 1",
        read as thread 1234: _lane_root)."""
        keep = []
        for i, op in enumerate(self.ops):
            if not op.name.startswith(CALL_SITE_PREFIX):
                keep.append(i)
                continue
            self._add_frame_at((_CALL_SITE, op.name[len(CALL_SITE_PREFIX):], None), self._thread(op.pid, op.tid), op.ts_us,
                               op.ts_us + op.dur_us)
        index = np.array(keep, dtype=np.int64)
        self.ops = [self.ops[i] for i in keep]
        for name in ("op_ts", "op_durs", "op_threads"):
            column = getattr(self, name)
            setattr(self, name, array(column.typecode, np.frombuffer(column, dtype=column.typecode)[index].tobytes()))

    def _adopt_orphan_launches(self) -> bool:
        """An op of its own around each CUDA/HIP graph launch, and each kernel launch, that no op encloses; True if
        any was added (the ops are then sorted again).

        A graph replayed from Python (``torch.cuda.CUDAGraph.replay()``) launches under no op: its launch sits
        directly in the profiler step, which is never an attribution target, so every kernel of the graph was
        unattributed (97.7% of the kernel time of a graph-replaying loop on the H200) and had no module or source.
        So was a kernel launched straight from Python (a ``@triton.jit`` kernel called in a forward: 21% of the
        kernel time of such a loop on the H200; ``torch.cuda._sleep``'s spin kernel). The new op (GRAPH_REPLAY_OP,
        DIRECT_LAUNCH_OP) spans the launch call; the sweep gives it the module and line that launched it. A launch
        inside an op or annotation (torch.compile's CUDA graph trees replay inside the compiled graph's call) keeps
        that op. Read off the ops' sorted columns, per thread, with no Python pass over the launches: a
        million-event trace has tens of thousands, all inside ops. A trace with no op at all stays a kernel-level
        report (analyze/trace_file.py says the ops are absent); its graph launches still get theirs."""
        launches = self.launches
        if not launches:
            return False
        threads = np.frombuffer(self.launch_threads, dtype=np.int64)
        starts = np.frombuffer(self.launch_ts, dtype=np.float64)
        ends = starts + np.frombuffer(self.launch_durs, dtype=np.float64)
        covers = self._sorted_ends.copy()
        covers[[op.index for _, op in self.step_ops]] = -np.inf  # a profiler step encloses nothing here
        orphans: list[int] = []
        for code in np.flatnonzero(np.bincount(threads)).tolist():
            on = self._sorted_threads == code
            ts, reach = self._sorted_ts[on], covers[on]
            if len(reach):
                np.maximum.accumulate(reach, out=reach)  # the latest end of the ops begun so far
            mine = np.flatnonzero(threads == code)
            k = np.searchsorted(ts, starts[mine], side="right") - 1
            enclosed = np.zeros(len(mine), dtype=bool)
            inside = k >= 0
            enclosed[inside] = reach[k[inside]] >= ends[mine[inside]]
            orphans += mine[~enclosed].tolist()
        # a launch call (cudaLaunchKernel, cuLaunchKernelEx, hipModuleLaunchKernel...) of a kernel the trace holds;
        # the synchronisations and copies a step makes under no op are no kernels of their own
        orphans = [i for i in orphans if launches[i].name in _GRAPH_LAUNCH_NAMES
                   or (self.ops and "Launch" in launches[i].name)]
        if not orphans:
            return False
        wanted = {launches[i].correlation for i in orphans}
        kernel_ids = {k.correlation for k in self.kernels if k.correlation in wanted and k.category == "kernel"}
        # a launch just outside its op's span that carries the op's External id is that op's (attribution joins
        # them by the id): only a launch no op claims gets one of its own (a profiler step claims nothing)
        claimed = ({launches[i].external_id for i in orphans} & {op.external_id for op in self.ops}) \
            - {op.external_id for _, op in self.step_ops}
        claimed.discard(None)
        where = {code: key for key, code in self.threads.items()}
        # the ops are in sorted order now: their columns follow, for the new ops to be sorted in
        self.op_ts, self.op_durs = array("d", self._sorted_ts.tobytes()), array("d", self._sorted_durs.tobytes())
        self.op_threads = array("q", self._sorted_threads.tobytes())
        added = 0
        for i in sorted(orphans):
            launch = launches[i]
            if launch.name in _GRAPH_LAUNCH_NAMES:
                name = GRAPH_REPLAY_OP
            elif launch.correlation in kernel_ids and launch.external_id not in claimed:
                name = DIRECT_LAUNCH_OP
            else:
                continue
            code = int(threads[i])
            pid, tid = where[code]
            self.ops.append(CpuOp(0, name, launch.ts_us, launch.dur_us, pid, tid))
            self.op_ts.append(launch.ts_us)
            self.op_durs.append(launch.dur_us)
            self.op_threads.append(code)
            added += 1
        return added > 0

    def _gpu(self, ev: _Event, ts: float, dur: float) -> None:
        args = ev.args or _Args()
        category = _GPU_CATEGORY.get(ev.cat, ev.cat)
        self.kernels.append(
            GpuEvent(
                0, self._intern(ev.name), ts, dur,
                args.device if args.device is not None else ev.pid,
                _stream_id(args.stream, ev.tid),
                args.correlation, _external_id(args), category, -1,
                args.bytes, _comm(args),
            )
        )

    def _memory(self, ev: _Event) -> None:
        ts = _number(ev.ts)
        args = ev.args
        if ts is None or args is None or args.mem_bytes is None:
            self.bad_times += 1
            return
        event = MemoryEvent(ts, args.mem_bytes, args.addr, args.total_allocated, args.total_reserved,
                            args.device_type, args.device_id)
        self.memory.append(event)
        self.memory_threads.append(self._thread(ev.pid, ev.tid))

    def finish(self) -> Trace:
        trace = self.trace
        if any(text.startswith(CALL_SITE_PREFIX) for text in self.strings):  # distinct names: a few thousand
            self._take_call_site_ranges()
        held = self.pairs.finish()
        if held:
            self.add_events(held)
        if not (self.ops or self.kernels or self.memory):
            skipped = [f"{self.skipped} malformed events skipped"] if self.skipped else []
            if self.bad_times:
                skipped.append(f"{self.bad_times} events with no usable ts/dur")
            detail = f" ({'; '.join(skipped)})" if skipped else ""
            if self.legacy_events:
                raise RooflineError(f"{trace.path} was written by the legacy autograd profiler (torch 1.7 and older: "
                                    f"events without a category, in processes '{_LEGACY_CPU_PROCESS}' and 'CUDA "
                                    "functions'), whose trace holds no input shapes and no kernel launches: "
                                    f"re-record it with torch.profiler (torch 1.8 or newer); {RECORD_THE_MODEL}")
            foreign = sorted(c for c in self.kinds if c and c not in _CATEGORY_KIND and c not in _KINETO_OWN)
            if foreign:
                shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
                raise RooflineError(f"{trace.path} has no torch.profiler events (cpu_op, kernel, memory){detail}, only "
                                    f"events of categories {shown}: is it another tool's trace (JAX or TensorFlow's "
                                    f"profiler, Perfetto, Nsight Systems)? roofline reads torch.profiler (Kineto) "
                                    f"traces: {RECORD_THE_MODEL}")
            raise RooflineError(f"{trace.path} has no profiler events (no cpu_op, kernel or memory events){detail}: "
                                f"the profiler recorded nothing; {RECORD_THE_MODEL}; {_SCHEDULED_EXPORT}")
        self._refuse_processes_sharing_correlations()
        self._sort_ops()
        if self._adopt_orphan_launches():
            self._sort_ops()
        self.kernels.sort(key=lambda k: k.ts_us)
        for i, kernel in enumerate(self.kernels):
            kernel.index = i
        if not self.syncs and "xpu_sync" not in self.kinds and any(c.startswith("xpu_") for c in self.kinds):
            self.syncs = _xpu_host_waits(self.launches)
        self.syncs.sort(key=lambda s: s.ts_us)
        self._join_sync_calls()
        self._steps()
        stale = self._relabel_stale_frames()
        self._sweep_threads()
        self._between_backward_and_step()
        self._backward_modules()
        self._warn_stale_sources(stale)
        trace.ops = self.ops
        trace.columns = OpColumns(self.ops, self._sorted_ts, np.frombuffer(self._parents, dtype=np.int32),
                                  np.frombuffer(self._depths, dtype=np.int32), self._sorted_steps)
        trace.kernels = self.kernels
        trace.syncs = self.syncs
        trace.memory = sorted(self.memory, key=lambda m: m.ts_us)
        trace.launches = sorted(self.launches, key=lambda l: l.ts_us)
        trace.has_gpu = bool(self.kernels)
        trace.has_shapes = any(op.input_dims is not None for op in self.ops)
        trace.has_stack = self.has_stack
        trace.has_modules = self.has_modules
        trace.skipped_events = self.skipped + self.bad_times
        trace.categories = {c for c in self.kinds if c not in _CATEGORY_KIND}
        self._device_info()
        self._warn()
        return trace

    def _refuse_processes_sharing_correlations(self) -> None:
        """Several processes' traces in one file (ranks concatenated into one trace for one timeline) whose launches
        share correlation ids: each process numbers its own from the start, so a kernel's id names a launch in every
        one of them, and its join to the launch, the op and the step was whichever came last (every kernel of rank 0
        went to rank 1's ops). No field says which process ran a kernel: refused, with what to give instead."""
        if not self.launches:
            return
        threads = list(self.threads)  # by code: a thread's code is its place in the dict
        process = {}
        process_of = np.array([process.setdefault(pid, len(process)) for pid, _ in threads], dtype=np.int64)
        codes = np.frombuffer(self.launch_threads, dtype=np.int64)
        pids = process_of[codes]
        # the host processes (those with ops): a device's own runtime events (MTIA's, on the device's pid) carry
        # the correlation of the host call they serve
        hosts = np.isin(pids, np.unique(process_of[np.frombuffer(self.op_threads, dtype=np.int64)]))
        codes, pids = codes[hosts], pids[hosts]
        if not len(pids) or (pids == pids[0]).all():
            return
        correlations = np.fromiter((launch.correlation for launch in self.launches), dtype=np.int64,
                                   count=len(self.launches))[hosts]
        pairs = np.unique(np.stack([correlations, pids]), axis=1)
        shared = len(pairs[0]) - len(np.unique(pairs[0]))
        if not shared:
            return
        processes = sorted({str(threads[code][0]) for code in np.unique(codes).tolist()})
        raise RooflineError(f"{self.trace.path} holds the kernel launches of {len(processes)} processes (pids "
                            f"{', '.join(processes[:4])}{' ...' if len(processes) > 4 else ''}) whose correlation ids "
                            f"collide ({shared} ids launch in more than one): ranks' traces merged into one file? A "
                            "kernel cannot be told from another process's: give each rank's own trace file; `roofline "
                            "trace rank0.json rank1.json ...` reads a distributed job's ranks together")

    def _join_sync_calls(self) -> None:
        """Each sync's runtime call (by correlation): its name, and whether the profiler's own code made it
        (tool_frames.py); the host time the profiler's code owns, on Trace.tool_spans."""
        if not self.syncs and not self.tool_ts:
            return
        owned = self._tool_spans_by_thread()
        self.trace.tool_spans = sorted(span for spans in owned.values() for span in spans)
        wanted = {s.correlation for s in self.syncs if s.correlation is not None}
        calls = {launch.correlation: (launch.name, launch.ts_us, thread)
                 for launch, thread in zip(self.launches, self.launch_threads) if launch.correlation in wanted}
        starts = {thread: [s for s, _ in spans] for thread, spans in owned.items()}
        for sync in self.syncs:
            call = calls.get(sync.correlation)
            if call is None:
                continue
            name, ts, thread = call
            sync.call = name
            if thread in owned:
                sync.in_tool = in_spans(owned[thread], starts[thread], ts)

    def _tool_spans_by_thread(self) -> dict[int, list[tuple[float, float]]]:
        """tool_frames.tool_spans of each thread with a tool frame; the model's frames that count are those that
        start inside one (a model frame around a tool frame leaves its time the tool's)."""
        if not self.tool_ts:
            return {}
        tool_ts = np.frombuffer(self.tool_ts, dtype=np.float64)
        tool_ends = np.frombuffer(self.tool_ends, dtype=np.float64)
        tool_threads = np.frombuffer(self.tool_threads, dtype=np.int64)
        model_kind = np.array([kind[0] in (_MODULE, _USER, _CALL_SITE) for kind in self.labels] or [False])
        frame_ts = np.frombuffer(self.frame_ts, dtype=np.float64)
        frame_ends = np.frombuffer(self.frame_ends, dtype=np.float64)
        frame_threads = np.frombuffer(self.frame_threads, dtype=np.int64)
        is_model = model_kind[np.frombuffer(self.frame_labels, dtype=np.int64)] if len(frame_ts) else np.zeros(0, bool)
        owned = {}
        for thread in np.unique(tool_threads).tolist():
            mine = tool_threads == thread
            starts, ends = tool_ts[mine], tool_ends[mine]
            order = np.argsort(starts, kind="stable")
            starts, reach = starts[order], np.maximum.accumulate(ends[order])
            candidates = np.flatnonzero(is_model & (frame_threads == thread))
            k = np.searchsorted(starts, frame_ts[candidates], side="right") - 1
            inside = candidates[(k >= 0) & (reach[np.maximum(k, 0)] > frame_ts[candidates])]
            frames = [(s, e, True) for s, e in zip(tool_ts[mine].tolist(), tool_ends[mine].tolist())]
            frames += [(s, e, False) for s, e in zip(frame_ts[inside].tolist(), frame_ends[inside].tolist())]
            owned[thread] = tool_spans(frames)
        return owned

    def _sort_ops(self) -> None:
        """Ops in time order, the longest first at equal times (stable, as list.sort with that key), from the
        columns (which keep the order the ops were read in, until ``_adopt_orphan_launches`` adds some)."""
        ts = np.frombuffer(self.op_ts, dtype=np.float64)
        durs = np.frombuffer(self.op_durs, dtype=np.float64)
        order = np.lexsort((-durs, ts))
        ops = self.ops
        self.ops = [ops[i] for i in order.tolist()]
        del ops
        self._sorted_ts = ts[order]
        self._sorted_durs = durs[order]
        self._sorted_ends = self._sorted_ts + self._sorted_durs
        self._sorted_threads = np.frombuffer(self.op_threads, dtype=np.int64)[order]
        self._sorted_steps = np.full(len(order), -1, dtype=np.int32)
        self._parents = array("i", [-1]) * len(order)
        self._depths = array("i", [0]) * len(order)
        for i, op in enumerate(self.ops):
            op.index = i

    def _steps(self) -> None:
        self.step_ops.sort(key=lambda item: item[1].ts_us)
        steps = [Step(number, op.ts_us, op.dur_us) for number, op in self.step_ops]
        self.trace.steps = steps
        if not steps or not self.ops:
            return
        self._clip_step_past_the_end(steps[-1])
        idx = steps_of(steps, self._sorted_ts)
        self._sorted_steps = idx.astype(np.int32)
        for op, i in zip(self.ops, idx.tolist()):
            if i >= 0:
                op.step = i

    def _clip_step_past_the_end(self, step: Step) -> None:
        """A last step that runs on past the end of the record was cut there: its time after held no event because
        none was recorded, and counted as step time and device idle. Where the record ends is known two ways:
        Kineto's _WINDOW_END instant before the step's end (a step closed after the profiler stopped: HTA's
        triton_example.json holds a 13 s step in a 1.8 ms window); or Kineto's span of its record (_PROFILER_SPAN)
        going on after the step while nothing starts after it, and no kernel or op runs to it (a trace trimmed to a
        time window, or filtered, keeps the spans across the edge whole and drops the events after it; a whole
        Kineto trace always records more after its last step: the profiler's own calls, kernels still running).
        Without either (other tools' traces, hand-written ones) a step is as written."""
        if self.window_end is not None:
            if self.window_end >= step.end_us:
                return
        elif self.profiler_span_end is None or self.profiler_span_end <= step.end_us:
            return
        markers = np.zeros(len(self.ops), dtype=bool)
        markers[[op.index for _, op in self.step_ops]] = True
        host_ops = ~np.fromiter((op.is_annotation for op in self.ops), dtype=bool, count=len(self.ops))
        ends = [self._sorted_ts[~markers], self._sorted_ends[host_ops & ~markers],
                np.frombuffer(self.launch_ts, dtype=np.float64) + np.frombuffer(self.launch_durs, dtype=np.float64),
                np.frombuffer(self.frame_ts, dtype=np.float64), np.frombuffer(self.tool_ts, dtype=np.float64),
                np.fromiter((k.ts_us + k.dur_us for k in self.kernels), dtype=np.float64, count=len(self.kernels)),
                np.fromiter((s.ts_us + s.dur_us for s in self.syncs), dtype=np.float64, count=len(self.syncs)),
                np.fromiter((m.ts_us for m in self.memory), dtype=np.float64, count=len(self.memory)),
                np.array([] if self.window_end is None else [self.window_end])]
        edge = max((float(column.max()) for column in ends if len(column)), default=step.end_us)
        if not step.ts_us < edge < step.end_us:
            return
        past = step.end_us - edge
        step.dur_us = edge - step.ts_us
        why = ("the profiler's record window, which Kineto's 'Record Window End' marks, ends before it"
               if self.window_end is not None else "the profiler's span of its record goes on, but the file holds no "
               "event after: a trace trimmed to a time window, or filtered?")
        self.trace.warnings.append(f"ProfilerStep#{step.number} runs {fmt_time(past / 1e6)} past the end of the "
                                   f"record ({why}): its window ends there")

    def _relabel_stale_frames(self) -> dict[str, str]:
        """User frames already running when profiling began (those around the frame that started tracing, or on
        another thread at that moment) are named by the line they were on then, never updated: such a frame is
        labelled by its function instead ("train.py, in main()"). Returns each such label with the stale line."""
        start = self.profiler_start
        if start is None or not self.frame_labels:
            return {}
        labels = np.frombuffer(self.frame_labels, dtype=np.int64)
        running = ((np.frombuffer(self.frame_ts, dtype=np.float64) <= start[1])
                   & (np.frombuffer(self.frame_ends, dtype=np.float64) > start[1]))
        kinds: list[Any] = [None] * len(self.labels)
        for kind, code in self.labels.items():
            kinds[code] = kind
        remap = np.arange(len(self.labels), dtype=np.int64)
        stale: dict[str, str] = {}
        for code in np.unique(labels[running]).tolist():
            kind = kinds[code]
            if kind[0] == _USER and kind[2] is not None:
                remap[code] = self.labels.setdefault((_USER, kind[2], None), len(self.labels))
                stale[kind[2]] = kind[1]
        if stale:
            self.frame_labels = array("q", np.where(running, remap[labels], labels).tobytes())
        return stale

    def _warn_stale_sources(self, stale: dict[str, str]) -> None:
        """One note when some op is placed only by a function that was running when profiling began."""
        if not stale:
            return
        used = sorted({op.source for op in self.ops if op.source in stale})
        if used:
            places = "; ".join(f"{label} (named at line {stale[label].rpartition(':')[2]})" for label in used[:3])
            more = f" and {len(used) - 3} more" if len(used) > 3 else ""
            self.trace.warnings.append(
                f"source lines: ops called directly from {places}{more} are placed by their function only: it was "
                "already running when profiling began, and the profiler names such a frame by the line it was on "
                "then, never updated"
            )

    def _sweep_threads(self) -> None:
        """Per (pid, tid), walk ops and Python frames in time order with a stack, then give each launch and memory
        event the op it ran in (``_enclosing_ops``, on columns).

        Events are numbered ops, then frames; one lexsort orders them by thread, time, longest first and rank, and
        the walk reads the order in slices, so no per-event Python list is built. Threads with no op are left out
        (nothing there to attach to)."""
        ops = self.ops
        if not ops:
            return
        op_threads, op_ts, op_ends = self._sorted_threads, self._sorted_ts, self._sorted_ends
        frame_ts = np.frombuffer(self.frame_ts, dtype=np.float64)
        parts = [
            (_RANK_OP, op_threads, op_ts, op_ends),
            (_RANK_FRAME, np.frombuffer(self.frame_threads, dtype=np.int64), frame_ts,
             np.frombuffer(self.frame_ends, dtype=np.float64)),
        ]
        threads = np.concatenate([p[1] for p in parts])
        ts = np.concatenate([p[2] for p in parts])
        ends = np.concatenate([p[3] for p in parts])
        ranks = np.concatenate([np.full(len(p[1]), p[0], dtype=np.int8) for p in parts])
        with_op = np.zeros(len(self.threads), dtype=bool)
        with_op[op_threads] = True
        order = np.lexsort((ranks, -ends, ts, threads))
        order = order[with_op[threads[order]]]
        labels: list[Any] = [None] * len(self.labels)
        for kind, label in self.labels.items():
            if kind[0] == _CALL_SITE:  # the fallback for a torch that records no CallFrom
                kind = None if self.saw_call_from else (_USER, kind[1], None)
            labels[label] = kind
        # Event number -> its object (an op, a frame's (kind, label)): one list of references, a few MB, indexed
        # without a call per event.
        objs = [*ops, *[labels[label] for label in self.frame_labels]]
        _sweep(_in_slices(order, ts, ends, ranks, threads), objs, self._parents, self._depths)
        parents = np.frombuffer(self._parents, dtype=np.int32)
        for events, event_threads, event_ts in (
                (self.launches, self.launch_threads, np.frombuffer(self.launch_ts, dtype=np.float64)),
                (self.memory, self.memory_threads,
                 np.fromiter((m.ts_us for m in self.memory), dtype=np.float64, count=len(self.memory)))):
            inside = _enclosing_ops(np.frombuffer(event_threads, dtype=np.int64), event_ts, op_threads, op_ts,
                                    op_ends, parents)
            kept = np.flatnonzero(inside >= 0)
            for event, op in zip(kept.tolist(), inside[kept].tolist()):
                events[event].op = ops[op].index  # the op's own int, not one more object per event (~5 MB)

    def _between_backward_and_step(self) -> None:
        """Ops an optimizer step's thread runs after the last backward op (of any thread: on a GPU the autograd
        engine's own) and before the step begins are work on the gradients (is_gradient), where no module or
        library frame says otherwise: clip_grad_norm_'s norms and scaling, GradScaler's unscale and inf check,
        from a trace without Python stacks as from one with. A forward between them is another micro-batch's
        (gradient accumulation: its backward follows, so the window starts after that), and the forward after the
        step the next step's. Only where a backward ran since this thread's previous optimizer step: a second
        optimizer stepping right after the first (a GAN's) makes no window."""
        names = {name for name in self.strings if name.startswith(_OPTIMIZER_STEP_PREFIX)}
        if not names:  # no optimizer step: no walk over the ops (a million-event inference trace pays nothing)
            return
        ops = self.ops
        starts = [op.index for op in ops if op.name in names and (op.parent < 0 or not ops[op.parent].is_optimizer)]
        threads, ts = self._sorted_threads, self._sorted_ts
        previous_end: dict[int, float] = {}
        for i in starts:
            step, thread = ops[i], int(threads[i])
            since = previous_end.get(thread, -np.inf)
            previous_end[thread] = max(since, step.ts_us + step.dur_us)
            backward_end = self._last_backward_end(i, since)
            if backward_end is None:
                continue
            for k in range(int(ts.searchsorted(backward_end, side="left")), i):
                op = ops[k]
                # a span that holds the step too (the user's record_function around it, a step marker) is not
                if (threads[k] == thread and op.ts_us + op.dur_us <= step.ts_us
                        and not (op.is_backward or op.is_optimizer or op.is_recompute or op.module)):
                    op.is_gradient = True

    def _last_backward_end(self, before: int, since: float) -> float | None:
        """When the last backward op that began after ``since`` and before op ``before`` began ended, with the
        backward ops around it (its autograd node ends after its aten calls), else None. A walk back from
        ``before``: over the ops between the backward and the step, or the step's, once."""
        ops, ts = self.ops, self._sorted_ts
        k = before - 1
        while k >= 0 and ts[k] >= since:
            op = ops[k]
            if op.is_backward:
                end = op.ts_us + op.dur_us
                while op.parent >= 0 and ops[op.parent].is_backward:
                    op = ops[op.parent]
                    end = max(end, op.ts_us + op.dur_us)
                return end if end <= ops[before].ts_us else None
            k -= 1
        return None

    def _backward_modules(self) -> None:
        """A backward op borrows the module and source line of the forward op whose autograd node it runs (by
        sequence number): on a GPU it runs on the autograd thread, outside any Python frame, and on the CPU its
        frames say only `loss.backward()`.

        Several forward ops can carry one sequence number (the profiler records the counter on entry, before the
        node is made): ops that make no node (eval dropout, detach) share it with the next op that does, and that
        op, the last of them, is the one whose node it is. A reentrant checkpoint's inner backward runs the nodes
        its recomputation made."""
        forward: dict[int, CpuOp] = {}
        for op in self.ops:
            if op.sequence_number is not None and (not op.is_backward or op.is_recompute):
                forward[op.sequence_number] = op
        if not forward:
            return
        ops = self.ops
        for op in ops:
            if op.is_backward and op.module is None:
                seq = op.sequence_number
                if seq is None and op.parent >= 0:
                    parent = ops[op.parent]
                    if parent.is_backward and parent.module is not None:
                        op.module = parent.module
                        op.source = parent.source or op.source
                        continue
                    seq = parent.sequence_number
                fwd = forward.get(seq) if seq is not None else None
                if fwd is not None:
                    op.module = fwd.module
                    op.source = fwd.source or op.source

    def _device_info(self) -> None:
        trace = self.trace
        _old_device_properties(trace.metadata)
        props = trace.metadata.get("deviceProperties")
        if isinstance(props, list) and props and isinstance(props[0], dict):
            first = props[0]
            name = first.get("name")
            trace.device_name = name if isinstance(name, str) else None
            major, minor = first.get("computeMajor"), first.get("computeMinor")
            if isinstance(major, int) and isinstance(minor, int):
                trace.compute_capability = (major, minor)

    def _warn(self) -> None:
        trace, warn = self.trace, self.trace.warnings.append
        if self.skipped:
            warn(f"{self.skipped} malformed events skipped")
        if self.bad_times:
            warn(f"{self.bad_times} events without a usable ts/dur skipped")
        pairs = self.pairs
        if pairs.unmatched_begins or pairs.unmatched_ends or pairs.bad_times:
            parts = [f"{pairs.unmatched_begins} begin events (ph B) never ended"] if pairs.unmatched_begins else []
            if pairs.unmatched_ends:
                parts.append(f"{pairs.unmatched_ends} end events (ph E) with no open begin on their thread")
            if pairs.bad_times:
                parts.append(f"{pairs.bad_times} begin/end pairs without a usable ts")
            warn(f"{'; '.join(parts)}: skipped")
        if not trace.has_gpu:
            warn(NO_KERNELS_WARNING + ": a CPU-only profile, or the device's activity was not recorded"
                 + _profiler_errors(trace.metadata))
        if not self.ops:
            warn("no cpu_op events: kernels cannot be attributed to ops")
        elif not trace.has_shapes:
            warn("no input shapes (record_shapes=False): FLOPs and bytes cannot be counted from this trace")
        if self.ops and not trace.steps:
            warn(NO_STEPS_WARNING)
        if self.generated_files:
            files = sorted(self.generated_files)
            more = f" and {len(files) - 2} more" if len(files) > 2 else ""
            warn(f"source lines: ops that torch.compile's generated code ran ({', '.join(files[:2])}{more}) are "
                 "placed at the user line that called the compiled module or function, never at a line of that code")
        if trace.has_gpu and not self.launches:
            warn("no runtime launch events: kernels are attributed by External id only")


_OLD_PROPERTY_KEYS = {"major": "computeMajor", "minor": "computeMinor", "multiProcessorCount": "numSms",
                      "maxThreadsPerMultiProcessor": "maxThreadsPerMultiprocessor"}


def _old_device_properties(metadata: dict) -> None:
    """Kineto of 2021 (torch 1.8/1.9) wrote the GPUs as ``computeProperties`` with ``major``/``minor``/
    ``multiProcessorCount``: given under today's names, so that the device is named from them."""
    old = metadata.get("computeProperties")
    if metadata.get("deviceProperties") or not isinstance(old, list):
        return
    metadata["deviceProperties"] = [{_OLD_PROPERTY_KEYS.get(k, k): v for k, v in p.items()}
                                    for p in old if isinstance(p, dict)]


def _stream_id(stream: int | str | None, tid: Any) -> Any:
    """An event's stream: its ``stream`` arg (text that spells a number, ROCm's "0x0", read as that number), else its
    lane (``tid``)."""
    if isinstance(stream, str):
        try:
            return int(stream, 0)
        except ValueError:
            return stream
    return tid if stream is None else stream


def _external_id(args: _Args) -> int | None:
    return args.external_id if args.external_id is not None else args.old_external_id


def _comm(args: _Args) -> CommArgs | None:
    if args.collective is None and args.in_nelems is None and args.out_nelems is None:
        return None
    return CommArgs(args.collective, args.in_nelems, args.out_nelems, args.group_size, args.dtype)


# Intel XPU calls in which the host waits for the device: SYCL's queue.wait() / event.wait() (Unified Runtime) and the
# Level Zero host synchronizations they and blocking copies make.
_XPU_HOST_WAITS = frozenset({"urQueueFinish", "urEventWait", "zeEventHostSynchronize", "zeCommandListHostSynchronize",
                             "zeCommandQueueSynchronize", "zeFenceHostSynchronize"})


def _xpu_host_waits(launches: list[Launch]) -> list[SyncEvent]:
    """An XPU trace recorded without xpu_sync events (the XPU_SYNC activity off, or a Kineto before it): its runtime
    and driver waits as syncs, a driver wait inside a runtime wait (urQueueFinish -> zeCommandListHostSynchronize)
    counted once, as the outer call."""
    waits = sorted((l for l in launches if l.name in _XPU_HOST_WAITS), key=lambda l: (l.ts_us, -l.dur_us))
    syncs: list[SyncEvent] = []
    end = -math.inf
    for wait in waits:
        if wait.ts_us + wait.dur_us <= end:
            continue
        end = wait.ts_us + wait.dur_us
        syncs.append(SyncEvent(wait.name, wait.ts_us, wait.dur_us, wait.external_id, wait.correlation))
    return syncs


def _lane_root(tid: str) -> Any:
    """The thread of an extra lane ``"<tid> overlap N"`` that roofline's trace output moves partial overlaps to
    (render/chrome_trace.py: a step marker opened inside the optimizer's step, a call-site range): read as the
    thread it came from, so that roofline's own trace.json.gz reads as the trace it was made from."""
    head = tid.split(" overlap ", 1)[0]
    return int(head) if head.isdigit() else head


def _category_kind(cat: str) -> int:
    """Runtime calls of other backends (hip_runtime, xpu_runtime, privateuse1_driver...) count as launches; Intel
    XPU's host waits (xpu_sync, Kineto's XPU plugin) are read like cuda_sync's; Kineto's span of its record
    ("Trace") tells where the record ends. Left out of ``_CATEGORY_KIND`` so that ``Trace.categories`` still names
    them (the device is told from them)."""
    if cat == "Trace":
        return _PROFILER_SPAN
    if cat.lower().endswith(("_runtime", "_driver")):
        return _RUNTIME
    if cat.lower() == "xpu_sync":
        return _SYNC
    return _OTHER


# Frame labels' first members: an nn.Module, a user frame, the frame that started tracing, roofline's call-site
# range, torch.utils.checkpoint's recomputation, torch's gradient clipping or loss scaling.
_MODULE, _USER, _TRACING_START, _CALL_SITE, _RECOMPUTE, _GRADIENT = range(6)
_STARTS_PROFILER = (_TRACING_START, "")
# the profiler's own code (tool_frames.py): recorded apart (_TraceBuilder.tool_ts), no label of its own
_IN_TOOL = (-1, "")
_RECOMPUTES = (_RECOMPUTE, "")
# non-reentrant checkpointing's rerun, which ends by aborting its last op (_mark_aborted_recompute)
_RECOMPUTES_AND_ABORTS = (_RECOMPUTE, "unpack_hook")
_TENDS_GRADIENTS = (_GRADIENT, "")


def _frame_kind(name: str) -> tuple | None:
    """_classify_frame's answer as a frame label, a user frame's with what to show if the frame turns out to have
    been running when profiling began (its function, not the stale line); _STARTS_PROFILER for the frame that
    started tracing."""
    name = _slashed(name)
    if _PROFILER_START.match(name):
        return _STARTS_PROFILER
    if is_tool_frame(name):
        return _IN_TOOL
    kind = _classify_frame(name)
    if kind is None or kind[0] != _USER:
        return kind
    function = name[name.index("): ") + 3:]
    return (_USER, kind[1], f"{kind[1].rpartition(':')[0]}, in {function}{'' if function.startswith('<') else '()'}")


def _generated_file(name: str) -> str | None:
    """The file of a frame of torch.compile's generated code (source_paths.is_generated_file), else None."""
    match = _FRAME.match(name)
    return match.group(1) if match is not None and is_generated_file(match.group(1)) else None


def _call_site(call_from: str) -> tuple[int, str, None] | None:
    """The frame label of a CallFrom value ("file.py:12") when that line is user code, else None."""
    file, sep, line = call_from.rpartition(":")
    if not sep or not line.isdigit() or not is_user_file(file):
        return None
    return (_USER, f"{local_trace_path(file)}:{line}", None)


def _classify_frame(name: str) -> tuple[int, str] | None:
    """(0, module name) for an nn.Module frame, (1, "file.py:line") for a user frame, _RECOMPUTES for the frame in
    which torch.utils.checkpoint reruns a forward during the backward, _TENDS_GRADIENTS for torch's gradient
    clipping and GradScaler's unscale_/step/update, None for other library code."""
    if name.startswith(_MODULE_PREFIX):
        return (_MODULE, name[len(_MODULE_PREFIX):])
    name = _slashed(name)
    match = _FRAME.match(name)
    if match is None:
        return None
    file = match.group(1)
    if file.endswith(_CHECKPOINT_FILE) and name[match.end():] in _RECOMPUTE_FUNCTIONS:
        return _RECOMPUTES_AND_ABORTS if name[match.end():] == _RECOMPUTES_AND_ABORTS[1] else _RECOMPUTES
    if file.endswith(_GRADIENT_FILES) and (file.endswith(_GRADIENT_FILES[0])
                                           or name[match.end():] in _GRADIENT_SCALER_FUNCTIONS):
        return _TENDS_GRADIENTS
    if not is_user_file(file):
        return None
    return (_USER, f"{local_trace_path(file)}:{match.group(2)}")


def _slashed(name: str) -> str:
    """A frame label of a trace recorded on Windows (C:\\Python311\\Lib\\site-packages\\torch\\...) with '/'
    separators, as the tests of which code is whose spell paths."""
    return name.replace("\\", "/") if "\\" in name else name


_SLICE = 1 << 16


def _in_slices(order: np.ndarray, ts: np.ndarray, ends: np.ndarray, ranks: np.ndarray,
               threads: np.ndarray) -> Iterator[tuple[int, float, float, int, int]]:
    """(event, ts, end, rank, thread) in ``order``, converted to Python values a slice at a time."""
    for start in range(0, len(order), _SLICE):
        idx = order[start:start + _SLICE]
        yield from zip(idx.tolist(), ts[idx].tolist(), ends[idx].tolist(), ranks[idx].tolist(),
                       threads[idx].tolist())


def _enclosing_ops(threads: np.ndarray, ts: np.ndarray, op_threads: np.ndarray, op_ts: np.ndarray,
                   op_ends: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """For each instant (a launch, a memory event) on a thread: the innermost op open then (started at or before
    it, ending after it), as an index into the ops, or -1. The ops are in time order, longest first at equal starts,
    with ``parents`` from the sweep (a step's op starts a tree of its own).

    What a stack walk finds there: its top after popping the ops that ended by then is the last op to start
    (at equal starts the shortest), or the nearest of that op's ancestors still open, found here by jumping to
    parents on columns: as many jumps as the tree is deep, not a Python step per event. ~0.1 s less than walking
    the 196,000 launches and memory events of issue 23's 1 M-event trace with the ops."""
    found = np.full(len(ts), -1, dtype=np.int64)
    if not len(ts) or not len(op_ts):
        return found
    # grouped by thread once (stable: within a thread the ops keep their order, by start, longest first), then a
    # slice of each group per thread, not a pass over every op and instant per thread
    op_order = np.argsort(op_threads, kind="stable")
    order = np.argsort(threads, kind="stable")
    op_groups, groups = op_threads[op_order], threads[order]
    for thread in np.unique(groups).tolist():
        thread_ops = op_order[np.searchsorted(op_groups, thread):np.searchsorted(op_groups, thread, side="right")]
        if not len(thread_ops):
            continue
        mine = order[np.searchsorted(groups, thread):np.searchsorted(groups, thread, side="right")]
        last = np.searchsorted(op_ts[thread_ops], ts[mine], side="right") - 1
        found[mine] = np.where(last >= 0, thread_ops[np.maximum(last, 0)], -1)
    while True:
        ended = np.flatnonzero(found >= 0)
        ended = ended[op_ends[found[ended]] <= ts[ended]]
        if not len(ended):
            return found
        found[ended] = parents[found[ended]]


def _sweep(items: Iterable[tuple[int, float, float, int, int]], objs: list, parents: array, depths: array) -> None:
    """Assign parents, depth, flags, module and source to ops; their parents and depths also into ``parents`` and
    ``depths`` (by op index)."""
    forward_paths: dict[str, str] = {}  # module label -> its path in the forward (first seen)
    recomputed: list[CpuOp] = []
    flags_of: dict[str, tuple[bool, bool, bool, bool, bool]] = {}
    ops: list[CpuOp] = []
    op_ends: list[float] = []
    modules: list[tuple[float, str, bool]] = []  # (end, path, entered while a checkpoint recomputes)
    sources: list[tuple[float, str]] = []
    recomputing: list[float] = []
    aborting: list[list] = []  # open non-reentrant reruns: [end, depth of their top-level ops, the last one's tree]
    tending: list[float] = []  # ends of the open gradient clipping / loss scaling frames
    thread = -1
    for j, t, end, rank, code in items:
        if code != thread:
            thread = code
            _mark_aborted_recompute(aborting, float("inf"))
            ops, op_ends, modules, sources, recomputing, tending = [], [], [], [], [], []
        while op_ends and op_ends[-1] <= t:
            op_ends.pop()
            ops.pop()
        obj = objs[j]
        if aborting:
            _mark_aborted_recompute(aborting, t)
        if rank == _RANK_OP:
            if aborting:
                if len(ops) == aborting[-1][1]:
                    aborting[-1][2] = [obj]
                elif aborting[-1][2]:
                    aborting[-1][2].append(obj)
            if modules:
                while modules and modules[-1][0] <= t:
                    modules.pop()
                if modules:
                    obj.module = modules[-1][1]
                    obj.is_recompute = modules[-1][2]
                    if obj.is_recompute:
                        recomputed.append(obj)
            if sources:
                while sources and sources[-1][0] <= t:
                    sources.pop()
                if sources:
                    obj.source = sources[-1][1]
            name = obj.name
            flags = flags_of.get(name)
            if flags is None:
                flags = flags_of[name] = (_is_backward_name(name), name.startswith(_OPTIMIZER_STEP_PREFIX),
                                          obj.is_annotation and _STEP.match(name) is not None,
                                          name in _GRADIENT_OPS or name.startswith(_GRADIENT_SPAN_PREFIX),
                                          name.endswith(_ACCUMULATE_GRAD))
            if tending:
                while tending and tending[-1] <= t:
                    tending.pop()
            if flags[2]:
                # A step boundary nests under nothing: a span still open when profiler.step() ran (the
                # optimizer's own, when steps end at optimizer.step()) would otherwise hold every later step.
                ops, op_ends = [], []
            if ops:
                parent = ops[-1]
                obj.parent = parents[obj.index] = parent.index
                obj.depth = depths[obj.index] = len(ops)
                obj.is_backward = parent.is_backward or flags[0]
                obj.is_grad_accumulation = parent.is_grad_accumulation or flags[4]
                # an optimizer that calls a closure (LBFGS) runs the model's forward (in a module) and backward
                # inside its step: those ops stay forward and backward, not the optimizer's own
                obj.is_optimizer = (parent.is_optimizer or flags[1]) and not (obj.is_backward or obj.module)
                gradient = parent.is_gradient
            else:
                obj.is_backward, obj.is_optimizer, obj.is_grad_accumulation = flags[0], flags[1], flags[4]
                gradient = False
            # a closure's forward and backward run inside GradScaler.step too: they keep their phases; a step
            # marker opened by a hook inside scaler.step(opt) holds the next step's ops
            obj.is_gradient = ((gradient or flags[3] or bool(tending))
                               and not (obj.is_backward or obj.module or flags[2]))
            ops.append(obj)
            op_ends.append(end)
        elif rank == _RANK_FRAME:
            if obj is None:
                continue
            kind, label = obj[0], obj[1]
            if kind == _MODULE:
                while modules and modules[-1][0] <= t:
                    modules.pop()
                while recomputing and recomputing[-1] <= t:
                    recomputing.pop()
                if recomputing and not (modules and modules[-1][2]):
                    # the module a checkpoint reruns: its path starts at its own label, completed after the walk
                    modules.append((end, label, True))
                else:
                    path = f"{modules[-1][1]}.{label}" if modules else label
                    modules.append((end, path, bool(recomputing)))
                    if not recomputing:
                        forward_paths.setdefault(label, path)
            elif kind == _RECOMPUTE:
                while recomputing and recomputing[-1] <= t:
                    recomputing.pop()
                recomputing.append(end)
                if label == _RECOMPUTES_AND_ABORTS[1]:
                    aborting.append([end, len(ops), None])
            elif kind == _GRADIENT:
                while tending and tending[-1] <= t:
                    tending.pop()
                tending.append(end)
            else:
                while sources and sources[-1][0] <= t:
                    sources.pop()
                sources.append((end, label))
    _mark_aborted_recompute(aborting, float("inf"))
    _recomputed_in_forward_paths(recomputed, forward_paths)


_SAVED_TENSOR_HOOK_OPS = frozenset({"aten::detach", "detach"})


def _mark_aborted_recompute(aborting: list[list], t: float) -> None:
    """Close the non-reentrant reruns that ended by ``t``, marking aborted each one's last op and the ops it ran
    inside, up to the rerun's top level: the rerun stops by raising in the saved-tensor hook of the last op whose
    inputs the backward needs, before that op's kernel runs (aten::addmm under aten::linear; what ran before it
    there, a transpose, is kept, and so is the hook's own detach of what it saves, below it), and the profiler
    records it all the same."""
    while aborting and aborting[-1][0] <= t:
        tree = aborting.pop()[2]
        if not tree:
            continue
        by_index = {op.index: op for op in tree}
        op = tree[-1]
        while op is not None and op.name in _SAVED_TENSOR_HOOK_OPS and op.parent in by_index:
            op = by_index[op.parent]
        while op is not None:
            op.is_aborted = True
            op = by_index.get(op.parent)


def _recomputed_in_forward_paths(recomputed: list[CpuOp], forward_paths: dict[str, str]) -> None:
    """A recomputed op takes the module path of the forward it reruns. In the backward the profiler's Python stack
    holds only the checkpointed module and what it calls (the modules that called checkpoint() in the forward
    have returned), but the label it gives a module ("Block_3") names that one instance, so the path that label
    had in the forward is the rerun's path too: one name for a block's forward, recompute and backward ops (a
    reentrant checkpoint's backward ops borrow the recomputed ops' modules). A module no forward frame of the
    trace named (profiling began inside the backward) keeps its own label as root."""
    for op in recomputed:
        root, dot, rest = op.module.partition(".")
        path = forward_paths.get(root)
        if path is not None:
            op.module = f"{path}{dot}{rest}"


def _is_backward_name(name: str) -> bool:
    return "Backward" in name or name.startswith("autograd::engine::evaluate_function")
