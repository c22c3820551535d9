"""Host-device synchronisation: found live (SyncDetector) or read back from a trace (syncs_from_trace).

SyncDetector patches the Python entry points that make the host wait for the device (``Tensor.item``,
``.tolist``, ``.numpy``, ``.cpu``, ``.to('cpu')``, ``__bool__/__int__/__float__``, ``torch.cuda.synchronize``,
``Event.synchronize``, ``Stream.synchronize``) and the ops whose output size depends on data, which must copy a
count back to the host (``nonzero``, ``masked_select``, boolean-mask indexing and assignment,
``repeat_interleave`` by a tensor of repeats without ``output_size``, ``multinomial``, ``unique``). On CUDA it
also turns on ``torch.cuda.set_sync_debug_mode("warn")`` and turns those warnings into sites, which catches syncs
made inside torch where no Python entry point is visible.

Where no accelerator is present, the same calls on CPU tensors are reported as sites that *would* synchronise on
one (``simulated=True``), so the check runs on a laptop and in CI.

Overhead: one Python frame per patched call, and a short frame walk only when a call counts. Nothing is added to
ops that do not synchronise, apart from a type check in ``Tensor.__getitem__``/``__setitem__``. The profiling
harness runs the detector only in its profiled steps, never in the steps it times as the true step time.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
import sys
import threading
import time
import warnings
from typing import Any, Callable

import torch

from roofline.capture.patching import patch_attribute
from roofline.capture.source_paths import is_user_file, short_path
from roofline.capture.trace_syncs import (  # noqa: F401 - the trace-side names are re-exported for callers
    _Site,
    syncs_from_trace,
)
from roofline.report import SyncSite

MODES = ("warn", "error", "silent")

_SYNC_DEBUG_MESSAGE = "called a synchronizing CUDA operation"
IMPLICIT = "implicit (inside torch)"


def _repeats_on_device(args: tuple, kwargs: dict) -> bool:
    """Whether repeat_interleave's repeats (after the input) are a tensor, whose sum the host must read to size the
    output: an int's size is the input's times it, no read (GQA's ``k.repeat_interleave(n_rep, dim=1)`` was
    reported as a would-be sync in every forward, gpu_sweep batch 2). ``torch.repeat_interleave(repeats)``, the
    repeats as the input, leaves ``args`` empty."""
    repeats = args[0] if args else kwargs.get("repeats")
    return repeats is None or isinstance(repeats, torch.Tensor)


class SyncWarning(UserWarning):
    """A host-device synchronisation at a user source line (raised instead of warned in mode "error")."""


_CALLER = object()


def _host_bookkeeping_readers() -> frozenset:
    """Code objects of torch functions that call ``.item()`` on tensors torch keeps on the host on every device:
    the optimizers' step counters (``_get_value``; with capturable=False, the default, they stay on the CPU on a
    GPU too, and capturable or fused optimizers never call it). A simulated run, where every tensor is on the
    CPU, would otherwise report each optimizer step as a would-be sync."""
    try:
        from torch.optim import optimizer
    except ImportError:  # pragma: no cover - every supported torch has it
        return frozenset()
    reader = getattr(optimizer, "_get_value", None)
    return frozenset({reader.__code__}) if reader is not None else frozenset()


_OPTIM_DIR = os.sep + os.path.join("torch", "optim") + os.sep


def _reads_a_step_counter(frame: Any, args: tuple) -> bool:
    """A torch optimizer reading one of the step counters it was passed (its ``state_steps``, the per-parameter
    "step" tensors), which torch keeps on the host unless the optimizer is capturable: no sync on a device either.
    Adafactor reads them itself (``step_t.item()``), not through ``_get_value``: sweep 8 counted 4 such reads a step
    among its 8 real ones (the norms it reads, which do sync on a GPU)."""
    if not args or _OPTIM_DIR not in frame.f_code.co_filename:
        return False
    steps = frame.f_locals.get("state_steps")
    return isinstance(steps, (list, tuple)) and any(step is args[0] for step in steps)


def user_location(frame: Any = _CALLER, unknown: Any = "<unknown>") -> Any:
    """file:line of the innermost frame of user code (source_paths.is_user_file states the rule), or ``unknown``.

    The walk starts at ``frame`` (default: the caller's; None, as on the thread autograd runs a CUDA backward
    on, where no Python frame is below the hook, gives ``unknown``)."""
    frame = sys._getframe(1) if frame is _CALLER else frame
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            return f"{short_path(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return unknown


def _moves_to_host(tensor: Any, args: tuple, kwargs: dict, simulated: bool, caller: Any = None) -> bool:
    """Whether ``tensor.to(*args, **kwargs)`` copies device data to the host.

    On an accelerator: the tensor is on it and the target is the CPU. Simulated (a CPU tensor standing for a device
    one): only a target spelled ``"cpu"`` counts; a device read off another tensor (``x.to(y.device)``,
    ``x.to(y)``) is where the data already lives on the real device too, so no copy and no sync. Nor does a "cpu"
    the calling line (``caller``, a frame) does not spell: ``x.to(DEV)`` in a script run with ``DEV = "cpu"`` is
    the copy to the device the same script makes on a GPU (host to device, no wait for the device)."""
    target = kwargs.get("device")
    if target is None and args:
        first = args[0]
        if isinstance(first, (torch.Tensor, str, torch.device)):
            target = first
    if target is None:
        return False
    if isinstance(target, torch.Tensor):
        target = target.device
    if tensor.device.type != "cpu":
        try:
            return torch.device(target).type == "cpu"
        except (RuntimeError, TypeError):
            return False
    return (simulated and isinstance(target, str) and target.split(":")[0] == "cpu"
            and (caller is None or _spells_cpu(caller)))


_CPU_LITERAL = re.compile(r"""["']cpu(:\d+)?["']""")


def _spells_cpu(frame: Any) -> bool:
    """The frame's current line names the CPU as a literal ("cpu", 'cpu:0'), or its text is not to be had."""
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return not text or _CPU_LITERAL.search(text) is not None


def _has_bool_mask(index: Any) -> bool:
    if isinstance(index, torch.Tensor):
        return index.dtype == torch.bool
    if isinstance(index, tuple):
        return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in index)
    return False


class SyncDetector:
    """Context manager that records every host-device sync site while it is active.

    ``mode``: "warn" issues one SyncWarning per site, "error" raises SyncWarning at the first sync (before it
    happens), "silent" only records. ``simulated`` (default: no CUDA present) counts calls on CPU tensors as
    would-be syncs. ``sites()`` gives roofline.report.SyncSite rows; ``mark_step()`` separates steps so
    ``per_step`` can be filled.
    """

    def __init__(self, mode: str = "warn", *, simulated: bool | None = None, sync_debug: bool = True) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.simulated = (not torch.cuda.is_available()) if simulated is None else simulated
        self.sync_debug = sync_debug and torch.cuda.is_available()
        self.step = 0
        self._sites: dict[tuple[str, str], _Site] = {}
        self._warned: set[tuple[str, str]] = set()
        self._restore: list[Callable[[], None]] = []
        self._local = threading.local()
        self._active = False
        self._bookkeeping = _host_bookkeeping_readers() if self.simulated else frozenset()

    # -- public -------------------------------------------------------------------------------------------
    def __enter__(self) -> "SyncDetector":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._active:
            return
        self._active = True
        try:
            self._install()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Undo every patch, in reverse order; safe to call twice and after a failed start."""
        while self._restore:
            undo = self._restore.pop()
            try:
                undo()
            except Exception:  # pragma: no cover - restoring must go on whatever one undo does
                pass
        self._active = False

    def mark_step(self) -> None:
        self.step += 1

    def sites(self, steps: int | None = None) -> list[SyncSite]:
        """Sites, most stall time first. ``per_step`` = count / steps (default: the steps marked, at least 1)."""
        n_steps = steps if steps is not None else max(self.step, 1)
        rows = [
            SyncSite(kind=s.kind, location=s.location, count=s.count, stall_s=s.stall_s, per_step=s.count / n_steps)
            for s in self._sites.values()
        ]
        return sorted(rows, key=lambda r: (-r.stall_s, -r.count, r.location))

    @property
    def total_count(self) -> int:
        return sum(s.count for s in self._sites.values())

    def record(self, kind: str, location: str, stall_s: float = 0.0) -> None:
        key = (kind, location)
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = _Site(kind, location)
        site.count += 1
        site.stall_s += stall_s
        site.steps[self.step] = site.steps.get(self.step, 0) + 1

    # -- the call path of every patched function ---------------------------------------------------------
    def _call(self, kind: str, original: Callable, args: tuple, kwargs: dict) -> Any:
        local = self._local
        if getattr(local, "inside", False):
            return original(*args, **kwargs)
        if self.simulated:
            caller = sys._getframe(2)
            if caller.f_code in self._bookkeeping or _reads_a_step_counter(caller, args):
                return original(*args, **kwargs)
        location = user_location()
        self._announce(kind, location)
        local.inside = True
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            local.inside = False
            self.record(kind, location, time.perf_counter() - start)

    def _announce(self, kind: str, location: str) -> None:
        key = (kind, location)
        if self.mode == "silent" or key in self._warned:
            return
        self._warned.add(key)
        what = "would synchronise on an accelerator" if self.simulated and not torch.cuda.is_available() else (
            "synchronises host and device"
        )
        message = f"{kind} at {location} {what}"
        if self.mode == "error":
            raise SyncWarning(message)
        filename, _, line = location.rpartition(":")
        warnings.warn_explicit(SyncWarning(message), SyncWarning, filename, int(line) if line.isdigit() else 0)

    def _counts(self, tensor: Any) -> bool:
        if not isinstance(tensor, torch.Tensor):
            return False
        device_type = tensor.device.type
        if device_type == "meta":
            return False
        return device_type != "cpu" or self.simulated

    # -- patches ---------------------------------------------------------------------------------------
    def _patch(self, owner: Any, name: str, make: Callable[[Callable], Callable]) -> None:
        patch_attribute(owner, name, make, self._restore)

    def _tensor_method(self, name: str, kind: str, when: Callable[[tuple, dict], bool] | None = None) -> None:
        detector = self

        def make(original: Callable) -> Callable:
            @functools.wraps(original)
            def patched(tensor: Any, *args: Any, **kwargs: Any) -> Any:
                if detector._counts(tensor) and (when is None or when(args, kwargs)):
                    return detector._call(kind, original, (tensor, *args), kwargs)
                return original(tensor, *args, **kwargs)

            return patched

        self._patch(torch.Tensor, name, make)

    def _function(self, owner: Any, name: str, kind: str, first_tensor: bool = True,
                  when: Callable[[tuple, dict], bool] | None = None) -> None:
        detector = self
        if not hasattr(owner, name):
            return

        def make(original: Callable) -> Callable:
            @functools.wraps(original)
            def patched(*args: Any, **kwargs: Any) -> Any:
                counts = (not first_tensor) or (args and detector._counts(args[0]))
                if counts and (when is None or when(args[1:], kwargs)):
                    return detector._call(kind, original, args, kwargs)
                return original(*args, **kwargs)

            return patched

        self._patch(owner, name, make)

    def _install_to(self) -> None:
        detector = self

        def make(original: Callable) -> Callable:
            @functools.wraps(original)
            def patched(tensor: Any, *args: Any, **kwargs: Any) -> Any:
                if detector._counts(tensor) and _moves_to_host(tensor, args, kwargs, detector.simulated,
                                                               sys._getframe(1)):
                    return detector._call("to(cpu)", original, (tensor, *args), kwargs)
                return original(tensor, *args, **kwargs)

            return patched

        self._patch(torch.Tensor, "to", make)

    def _install(self) -> None:
        for name, kind in (("item", "item"), ("tolist", "tolist"), ("numpy", "numpy"), ("cpu", "cpu"),
                           ("__bool__", "bool"), ("__int__", "int"), ("__float__", "float")):
            self._tensor_method(name, kind)
        self._install_to()
        self._tensor_method("__getitem__", "boolean-mask indexing", when=lambda a, k: bool(a) and _has_bool_mask(a[0]))
        self._tensor_method("__setitem__", "boolean-mask assignment", when=lambda a, k: bool(a) and _has_bool_mask(a[0]))
        no_output_size = lambda a, k: k.get("output_size") is None and _repeats_on_device(a, k)  # noqa: E731
        for name in ("nonzero", "masked_select", "multinomial", "unique", "argwhere"):
            self._tensor_method(name, name)
            self._function(torch, name, name)
        self._tensor_method("repeat_interleave", "repeat_interleave", when=no_output_size)
        self._function(torch, "repeat_interleave", "repeat_interleave", when=no_output_size)
        self._function(torch.cuda, "synchronize", "cuda.synchronize", first_tensor=False)
        self._function(torch.cuda.Event, "synchronize", "Event.synchronize", first_tensor=False)
        self._function(torch.cuda.Stream, "synchronize", "Stream.synchronize", first_tensor=False)
        if self.sync_debug:
            self._install_sync_debug()

    def _install_sync_debug(self) -> None:
        """Catch syncs made inside torch (no Python entry point) through torch.cuda's sync debug warnings."""
        previous_mode = torch.cuda.get_sync_debug_mode()
        previous_filters = list(warnings.filters)
        previous_show = warnings.showwarning
        detector = self

        def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            if _SYNC_DEBUG_MESSAGE in str(message):
                if not getattr(detector._local, "inside", False):
                    location = user_location()
                    detector.record(IMPLICIT, location)
                    if detector.mode == "warn" and (IMPLICIT, location) not in detector._warned:
                        detector._warned.add((IMPLICIT, location))
                        previous_show(SyncWarning(f"implicit sync at {location}"), SyncWarning, filename, lineno, file, line)
                return
            previous_show(message, category, filename, lineno, file, line)

        warnings.filterwarnings("always", message=f".*{_SYNC_DEBUG_MESSAGE}", category=UserWarning)
        warnings.showwarning = show
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype")
            torch.cuda.set_sync_debug_mode("warn")

        def undo() -> None:
            torch.cuda.set_sync_debug_mode(previous_mode)
            warnings.showwarning = previous_show
            warnings.filters[:] = previous_filters
            warnings._filters_mutated() if hasattr(warnings, "_filters_mutated") else None

        self._restore.append(undo)
