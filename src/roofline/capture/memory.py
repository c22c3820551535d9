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
from typing import Any

import torch
from roofline.capture.dispatch import EagerDispatchMode
from roofline.capture.syncs import user_location
from roofline.capture.trace_memory import (  # noqa: F401 - the trace-side names are re-exported for callers
    COUNTER_CUDA_ALLOCATED,
    COUNTER_DISPATCH,
    COUNTER_PROFILER,
    MemoryEvent,
    REFERENCE_CUDA,
    memory_events_from_trace,
    memory_from_trace,
    summarize_memory,
)
from roofline.report import MemorySummary




class MemoryTracker(EagerDispatchMode):
    """Record every tensor storage made while active, and when it is freed.

    ``with MemoryTracker() as mem: model(x)`` then ``mem.summary()``. Storages that existed before (weights,
    inputs) are not allocations of the window; their bytes are not counted unless ``baseline_bytes`` says so.
    On CUDA the summary uses the allocator's counter and the window's torch.cuda.max_memory_allocated() as
    the reference.
    """

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
