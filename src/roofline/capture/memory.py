"""Memory over a window: every allocation and free, the live-bytes timeline, the peak and what was live then.

Two producers feed one summariser (``summarize_memory``):

- ``MemoryTracker``: a TorchDispatchMode that sees each op's output storages as they are made and a weakref
  finalizer on each that sees it freed; it knows shape, dtype, op, module path and the user's source line of
  every tensor. It counts tensor storages made in the window (``counter = "tensor storages (dispatch)"``), so
  it works on any device, CPU included; on CUDA it also reads the allocator (torch.cuda.memory_allocated) at each
  event, and then reports that counter.
- ``memory_events_from_trace``: the ``[memory]`` events of a torch.profiler trace (profile_memory=True). Each
  carries the allocator's own running total ("Total Allocated"), which on CUDA is the counter that
  torch.cuda.max_memory_allocated() peaks over, so the peak agrees with it.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Iterable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from roofline.capture.syncs import user_location
from roofline.report import LiveTensor, MemorySummary

COUNTER_DISPATCH = "tensor storages made in the window (dispatch mode)"
COUNTER_CUDA_ALLOCATED = "allocated (CUDA caching allocator, torch.cuda.memory_allocated)"
COUNTER_PROFILER = "allocated (torch.profiler [memory] Total Allocated)"
REFERENCE_CUDA = "torch.cuda.max_memory_allocated() over the same window"

_TIMELINE_POINTS = 400


@dataclass
class MemoryEvent:
    """One allocation (``bytes`` > 0) or free (< 0). ``total_bytes``: the counter's value just after it."""

    time_s: float
    bytes: int
    device: str
    key: Any
    total_bytes: int | None = None
    reserved_bytes: int | None = None
    op: str = ""
    module: str = ""
    source: str | None = None
    shape: tuple[int, ...] = ()
    dtype: str = ""


def summarize_memory(
    events: Iterable[MemoryEvent],
    counter: str,
    *,
    top: int = 10,
    reference_peak_bytes: int | None = None,
    reference_counter: str = "",
    baseline_bytes: int = 0,
) -> MemorySummary:
    """Replay events in time order: timeline, peak, and the largest allocations live at the peak.

    When events carry the counter's running total (``total_bytes``) that total is the live figure; otherwise
    live bytes are ``baseline_bytes`` plus the sum of allocations not yet freed.
    """
    ordered = sorted(events, key=lambda e: e.time_s)
    live: dict[Any, MemoryEvent] = {}
    running = baseline_bytes
    peak_bytes, peak_live, peak_reserved = baseline_bytes, {}, None
    timeline: list[list[float]] = []
    for event in ordered:
        if event.bytes > 0:
            live[event.key] = event
        else:
            live.pop(event.key, None)
        running += event.bytes
        current = event.total_bytes if event.total_bytes is not None else running
        if event.reserved_bytes is not None:
            peak_reserved = max(peak_reserved or 0, event.reserved_bytes)
        timeline.append([event.time_s, float(current)])
        if current > peak_bytes:
            peak_bytes, peak_live = current, dict(live)
    largest = sorted(peak_live.values(), key=lambda e: -e.bytes)[:top]
    t0 = ordered[0].time_s if ordered else 0.0
    return MemorySummary(
        peak_allocated_bytes=int(peak_bytes),
        peak_reserved_bytes=peak_reserved,
        counter=counter,
        peak_live_tensors=[
            LiveTensor(bytes=int(e.bytes), shape=list(e.shape), dtype=e.dtype, op=e.op, module=e.module, source=e.source)
            for e in largest
        ],
        timeline=_downsample([[t - t0, b] for t, b in timeline], _TIMELINE_POINTS),
        reference_peak_bytes=reference_peak_bytes,
        reference_counter=reference_counter,
    )


def _downsample(points: list[list[float]], limit: int) -> list[list[float]]:
    """At most ``limit`` points, keeping each bucket's maximum so the peak survives."""
    if len(points) <= limit:
        return points
    size = -(-len(points) // limit)
    return [max(points[i : i + size], key=lambda p: p[1]) for i in range(0, len(points), size)]


# -- producer 1: live, through a dispatch mode ------------------------------------------------------------


class MemoryTracker(TorchDispatchMode):
    """Record every tensor storage made while active, and when it is freed.

    ``with MemoryTracker() as mem: model(x)`` then ``mem.summary()``. Storages that existed before (weights,
    inputs) are not allocations of the window; their bytes are not counted unless ``baseline_bytes`` says so.
    On CUDA the summary uses the allocator's counter and the window's torch.cuda.max_memory_allocated() as
    the reference.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Leave __torch_dispatch__ unwrapped: torch's wrapper imports torch._dynamo (seconds) on first use."""
        return False

    def __init__(self, *, record_source: bool = True) -> None:
        super().__init__()
        self.record_source = record_source
        self.events: list[MemoryEvent] = []
        self._seen: dict[Any, int] = {}
        self._lock = threading.Lock()
        self._modules: list[str] = []
        self._names: dict[int, str] = {}
        self._hooks: list[Any] = []
        self._cuda = torch.cuda.is_available()
        self._t0 = 0.0
        self._cuda_reference: int | None = None

    def __enter__(self) -> "MemoryTracker":
        self._t0 = time.perf_counter()
        if self._cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self._install_module_hooks()
        try:
            return super().__enter__()
        except BaseException:
            self._remove_module_hooks()
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self._remove_module_hooks()
            if self._cuda:
                torch.cuda.synchronize()
                self._cuda_reference = int(torch.cuda.max_memory_allocated())

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        outputs = _tensors(out)
        if outputs:
            inputs = {_storage_pointer(t) for t in _tensors(args) + _tensors(list((kwargs or {}).values()))}
            for tensor in outputs:
                if _storage_pointer(tensor) not in inputs:
                    self._track(tensor, func)
        return out

    def summary(self, top: int = 10) -> MemorySummary:
        on_cuda = any(e.total_bytes is not None for e in self.events)
        return summarize_memory(
            self.events,
            COUNTER_CUDA_ALLOCATED if on_cuda else COUNTER_DISPATCH,
            top=top,
            reference_peak_bytes=self._cuda_reference,
            reference_counter=REFERENCE_CUDA if self._cuda_reference is not None else "",
        )

    def _track(self, tensor: torch.Tensor, func: Any) -> None:
        if tensor.device.type == "meta":
            return
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return
        nbytes = storage.nbytes()
        pointer = storage.data_ptr()
        if nbytes == 0 or pointer == 0:
            return
        key = (str(tensor.device), pointer)
        with self._lock:
            if key in self._seen:
                return
            self._seen[key] = nbytes
        device = str(tensor.device)
        self.events.append(
            MemoryEvent(
                time_s=time.perf_counter() - self._t0,
                bytes=nbytes,
                device=device,
                key=key,
                total_bytes=self._allocated(tensor.device),
                op=str(getattr(func, "__name__", func)),
                module=self._modules[-1] if self._modules else "",
                source=user_location() if self.record_source else None,
                shape=tuple(tensor.shape),
                dtype=str(tensor.dtype).replace("torch.", ""),
            )
        )
        weakref.finalize(storage, self._freed, key, device)

    def _freed(self, key: Any, device: str) -> None:
        with self._lock:
            nbytes = self._seen.pop(key, None)
        if nbytes is None:
            return
        self.events.append(
            MemoryEvent(time.perf_counter() - self._t0, -nbytes, device, key, self._allocated(torch.device(device)))
        )

    def _allocated(self, device: torch.device) -> int | None:
        if device.type != "cuda":
            return None
        return int(torch.cuda.memory_allocated(device))

    def _install_module_hooks(self) -> None:
        from torch.nn.modules import module as nn_module

        def pre(module: torch.nn.Module, _inputs: Any) -> None:
            if not self._modules and id(module) not in self._names:
                self._names.update({id(m): name for name, m in module.named_modules()})
                self._names[id(module)] = type(module).__name__
            self._modules.append(self._names.get(id(module), type(module).__name__))

        def post(_module: torch.nn.Module, _inputs: Any, _output: Any) -> None:
            if self._modules:
                self._modules.pop()

        self._hooks = [nn_module.register_module_forward_pre_hook(pre), nn_module.register_module_forward_hook(post)]

    def _remove_module_hooks(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []


def _storage_pointer(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return 0


def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for t in out if isinstance(t, torch.Tensor)]
    return []


# -- producer 2: torch.profiler [memory] events -------------------------------------------------------------

_DEVICE_TYPES = {0: "cpu", 1: "cuda"}


def memory_events_from_trace(trace: Any, device_type: str | None = None) -> list[MemoryEvent]:
    """MemoryEvents from a roofline.capture.kineto Trace's ``[memory]`` events, with each one's op, module and
    source. ``device_type`` keeps one device ("cuda", "cpu"); default: cuda when present, else cpu."""
    present = {_DEVICE_TYPES.get(m.device_type, str(m.device_type)) for m in trace.memory}
    wanted = device_type or ("cuda" if "cuda" in present else "cpu")
    events = []
    for m in trace.memory:
        kind = _DEVICE_TYPES.get(m.device_type, str(m.device_type))
        if kind != wanted:
            continue
        op = trace.ops[m.op] if 0 <= m.op < len(trace.ops) else None
        events.append(
            MemoryEvent(
                time_s=m.ts_us * 1e-6,
                bytes=int(m.bytes),
                device=f"{kind}:{m.device_id}" if kind == "cuda" else kind,
                key=m.addr,
                total_bytes=m.total_allocated,
                reserved_bytes=m.total_reserved if kind == "cuda" else None,
                op=op.name if op is not None else "",
                module=(op.module or "") if op is not None else "",
                source=op.source if op is not None else None,
            )
        )
    return events


def memory_from_trace(trace: Any, *, reference_peak_bytes: int | None = None, top: int = 10) -> MemorySummary:
    """The MemorySummary of a trace's [memory] events (profile_memory=True); empty when it has none."""
    events = memory_events_from_trace(trace)
    if not events:
        return MemorySummary(counter="none: the trace has no [memory] events (profile_memory off)")
    return summarize_memory(
        events,
        COUNTER_PROFILER,
        top=top,
        reference_peak_bytes=reference_peak_bytes,
        reference_counter=REFERENCE_CUDA if reference_peak_bytes is not None else "",
    )
