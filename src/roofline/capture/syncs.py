"""Host-device synchronisation: found live (SyncDetector) or read back from a trace (syncs_from_trace).

SyncDetector patches the Python entry points that make the host wait for the device (``Tensor.item``,
``.tolist``, ``.numpy``, ``.cpu``, ``.to('cpu')``, ``__bool__/__int__/__float__``, ``torch.cuda.synchronize``,
``Event.synchronize``, ``Stream.synchronize``) and the ops whose output size depends on data, which must copy a
count back to the host (``nonzero``, ``masked_select``, boolean-mask indexing and assignment,
``repeat_interleave`` without ``output_size``, ``multinomial``, ``unique``). On CUDA it also turns on
``torch.cuda.set_sync_debug_mode("warn")`` and turns those warnings into sites, which catches syncs made inside
torch where no Python entry point is visible.

Where no accelerator is present, the same calls on CPU tensors are reported as sites that *would* synchronise on
one (``simulated=True``), so the check runs on a laptop and in CI.

Overhead: one Python frame per patched call, and a short frame walk only when a call counts. Nothing is added to
ops that do not synchronise, apart from a type check in ``Tensor.__getitem__``/``__setitem__``. The profiling
harness runs the detector only in its profiled steps, never in the steps it times as the true step time.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch

from roofline.report import SyncSite

MODES = ("warn", "error", "silent")

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_ROOFLINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_ROOFLINE_USER_CODE = tuple(_ROOFLINE_DIR + name + os.sep for name in ("models", "lab"))
_SYNC_DEBUG_MESSAGE = "called a synchronizing CUDA operation"
IMPLICIT = "implicit (inside torch)"


class SyncWarning(UserWarning):
    """A host-device synchronisation at a user source line (raised instead of warned in mode "error")."""


@dataclass
class _Site:
    kind: str
    location: str
    count: int = 0
    stall_s: float = 0.0
    steps: dict[int, int] = field(default_factory=dict)


def user_location() -> str:
    """file:line of the innermost frame outside torch and roofline (the user's code), or "<unknown>".

    roofline's built-in workloads (roofline/models, roofline/lab) count as user code."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(_TORCH_DIR) or _is_roofline_machinery(filename) or _is_library(filename)):
            return f"{_short_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


_STDLIB_PLUMBING = tuple(os.sep + name for name in ("runpy.py", "contextlib.py", "warnings.py", "functools.py"))


def _is_roofline_machinery(filename: str) -> bool:
    """roofline's own frames, except its built-in workloads and case study, which are user code here."""
    return filename.startswith(_ROOFLINE_DIR) and not filename.startswith(_ROOFLINE_USER_CODE)


def _is_library(filename: str) -> bool:
    return filename.startswith("<frozen") or filename.endswith(_STDLIB_PLUMBING)


def _short_path(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith(".." + os.sep + "..") else relative


def _is_device(tensor: Any) -> bool:
    return isinstance(tensor, torch.Tensor) and tensor.device.type not in ("cpu", "meta")


def _targets_cpu(args: tuple, kwargs: dict) -> bool:
    """Whether Tensor.to(*args, **kwargs) moves to the host."""
    target = kwargs.get("device")
    if target is None and args:
        first = args[0]
        if isinstance(first, torch.Tensor):
            target = first.device
        elif isinstance(first, (str, torch.device)):
            target = first
    if target is None:
        return False
    try:
        return torch.device(target).type == "cpu"
    except (RuntimeError, TypeError):
        return False


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
        had_own = name in vars(owner)
        original = getattr(owner, name)
        setattr(owner, name, make(original))

        def undo() -> None:
            if had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

        self._restore.append(undo)

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

    def _install(self) -> None:
        for name, kind in (("item", "item"), ("tolist", "tolist"), ("numpy", "numpy"), ("cpu", "cpu"),
                           ("__bool__", "bool"), ("__int__", "int"), ("__float__", "float")):
            self._tensor_method(name, kind)
        self._tensor_method("to", "to(cpu)", when=_targets_cpu)
        self._tensor_method("__getitem__", "boolean-mask indexing", when=lambda a, k: bool(a) and _has_bool_mask(a[0]))
        self._tensor_method("__setitem__", "boolean-mask assignment", when=lambda a, k: bool(a) and _has_bool_mask(a[0]))
        no_output_size = lambda a, k: k.get("output_size") is None  # noqa: E731
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


def patched_names() -> list[str]:
    """Names on torch.Tensor, torch and torch.cuda that a running SyncDetector replaces (for leak checks)."""
    tensor = ["item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__", "to", "__getitem__",
              "__setitem__", "nonzero", "masked_select", "multinomial", "unique", "argwhere", "repeat_interleave"]
    return [f"Tensor.{n}" for n in tensor] + [
        f"torch.{n}" for n in ("nonzero", "masked_select", "multinomial", "unique", "argwhere", "repeat_interleave")
    ] + ["torch.cuda.synchronize", "torch.cuda.Event.synchronize", "torch.cuda.Stream.synchronize"]


# -- syncs read back from a trace (Kineto cuda_sync events) ------------------------------------------------

_KIND_BY_OP = {
    "aten::_local_scalar_dense": "item",
    "aten::item": "item",
    "aten::nonzero": "nonzero",
    "aten::masked_select": "masked_select",
    "aten::repeat_interleave": "repeat_interleave",
    "aten::multinomial": "multinomial",
    "aten::unique": "unique",
    "aten::_unique2": "unique",
    "aten::index": "boolean-mask indexing",
}


def sync_kind(op_name: str | None, memcpy_name: str | None = None) -> str:
    """A readable kind for a cuda_sync event, from the op that made it and the copy it waited for."""
    if op_name is None:
        return "cuda.synchronize"
    if op_name in ("aten::copy_", "aten::to", "aten::_to_copy"):
        if memcpy_name and "DtoH" in memcpy_name:
            return "copy to host"
        if memcpy_name and "HtoD" in memcpy_name:
            return "copy to device"
        return "copy"
    return _KIND_BY_OP.get(op_name, op_name.replace("aten::", ""))


@dataclass
class TraceSync:
    """One cuda_sync event joined with what launched it (the input of sites_from_trace_syncs)."""

    kind: str
    location: str
    stall_s: float
    step: int | None = None


def sites_from_trace_syncs(syncs: Iterable[TraceSync], steps: int | None = None) -> list[SyncSite]:
    """Group sync events by (kind, location); per_step = count / the number of profiled steps."""
    grouped: dict[tuple[str, str], _Site] = {}
    seen_steps: set[int] = set()
    for sync in syncs:
        site = grouped.setdefault((sync.kind, sync.location), _Site(sync.kind, sync.location))
        site.count += 1
        site.stall_s += sync.stall_s
        if sync.step is not None:
            seen_steps.add(sync.step)
    n_steps = steps or len(seen_steps) or 1
    rows = [SyncSite(s.kind, s.location, s.count, s.stall_s, s.count / n_steps) for s in grouped.values()]
    return sorted(rows, key=lambda r: (-r.count, -r.stall_s, r.location))


def syncs_from_trace(trace: Any) -> list[SyncSite]:
    """SyncSites from a trace's cuda_sync events, located at the launching op's user source line (else module).

    ``trace``: a raw Chrome trace dict (or its event list) as torch.profiler exports it, a path to one, or a
    roofline.capture.kineto Trace. Syncs outside the profiled steps (the profiler's own stop) are left out
    when the trace has steps.
    """
    if isinstance(trace, (str, os.PathLike)):
        trace = _read_json_trace(trace)
    if isinstance(trace, dict):
        events = trace.get("traceEvents", [])
    elif isinstance(trace, list):
        events = trace
    else:
        syncs, steps = trace_syncs_from_trace(trace)
        return sites_from_trace_syncs(syncs, steps)
    syncs, steps = trace_syncs_from_events(events)
    return sites_from_trace_syncs(syncs, steps)


def _read_json_trace(path: str | os.PathLike[str]) -> dict:
    import gzip
    import json

    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def trace_syncs_from_trace(trace: Any) -> tuple[list[TraceSync], int | None]:
    """The same join over roofline.capture.kineto's Trace: sync -> op by External id, op.source / op.module."""
    op_by_ext = {op.external_id: op for op in trace.ops if op.external_id is not None and not op.is_annotation}
    memcpy_by_ext = {k.external_id: k.name for k in trace.kernels if k.category == "gpu_memcpy"}
    result = []
    for sync in trace.syncs:
        op = trace.ops[sync.op] if sync.op >= 0 else op_by_ext.get(sync.external_id)
        step = op.step if op is not None else trace.step_of(sync.ts_us)
        if trace.steps and step is None:
            continue
        location = (op.source or op.module or "<unknown>") if op is not None else "<unknown>"
        kind = sync_kind(op.name if op is not None else None, memcpy_by_ext.get(sync.external_id))
        result.append(TraceSync(kind, location, sync.dur_us * 1e-6, step))
    return result, (len(trace.steps) or None)


def trace_syncs_from_events(events: list[dict]) -> tuple[list[TraceSync], int | None]:
    """Join each cuda_sync event to its cpu_op (External id), the copy it waited for, the user's Python frame
    and module around that op (with_stack traces), and the ProfilerStep it fell in."""
    ops: dict[Any, dict] = {}
    memcpy_by_ext: dict[Any, str] = {}
    frames_by_thread: dict[tuple, list[dict]] = {}
    steps: list[dict] = []
    sync_events: list[dict] = []
    for event in events:
        if event.get("ph") != "X":
            continue
        cat = event.get("cat")
        args = event.get("args") or {}
        if cat == "cpu_op":
            ops[args.get("External id")] = event
        elif cat == "cuda_sync":
            sync_events.append(event)
        elif cat == "gpu_memcpy":
            memcpy_by_ext.setdefault(args.get("External id"), str(event.get("name", "")))
        elif cat == "python_function":
            frames_by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(event)
        elif cat == "user_annotation" and str(event.get("name", "")).startswith("ProfilerStep#"):
            steps.append(event)
    launching = {id(ops[e["args"].get("External id")]): ops[e["args"].get("External id")]
                 for e in sync_events if (e.get("args") or {}).get("External id") in ops}
    places = python_places(list(launching.values()), frames_by_thread)
    result = []
    for event in sync_events:
        ext = (event.get("args") or {}).get("External id")
        op = ops.get(ext)
        step = _step_of(op if op is not None else event, steps)
        if steps and step is None:
            continue
        location = places.get(id(op), "<unknown>") if op is not None else "<unknown>"
        kind = sync_kind(op.get("name") if op is not None else None, memcpy_by_ext.get(ext))
        result.append(TraceSync(kind, location, float(event.get("dur", 0.0)) * 1e-6, step))
    return result, (len(steps) or None)


def _step_of(event: dict, steps: list[dict]) -> int | None:
    ts = float(event.get("ts", 0.0))
    for step in steps:
        start = float(step["ts"])
        if start <= ts <= start + float(step.get("dur", 0.0)):
            name = str(step["name"])
            return int(name.split("#", 1)[1]) if name.split("#", 1)[1].isdigit() else None
    return None


def python_places(targets: list[dict], frames_by_thread: dict[tuple, list[dict]]) -> dict[int, str]:
    """For each target op: the user source line ("file:line") of the Python frames around it, else its module.

    One sweep per thread over frames and targets sorted by start, keeping the stack of open frames.
    """
    places: dict[int, str] = {}
    by_thread: dict[tuple, list[dict]] = {}
    for op in targets:
        by_thread.setdefault((op.get("pid"), op.get("tid")), []).append(op)
    for thread, thread_targets in by_thread.items():
        frames = frames_by_thread.get(thread, [])
        merged = [(float(f["ts"]), -float(f.get("dur", 0.0)), 0, i) for i, f in enumerate(frames)]
        merged += [(float(t["ts"]), -float(t.get("dur", 0.0)), 1, i) for i, t in enumerate(thread_targets)]
        merged.sort()
        stack: list[dict] = []
        for ts, _, is_target, i in merged:
            while stack and float(stack[-1]["ts"]) + float(stack[-1].get("dur", 0.0)) < ts:
                stack.pop()
            if is_target:
                places[id(thread_targets[i])] = _place_from_stack(stack)
            else:
                stack.append(frames[i])
    return places


def _place_from_stack(stack: list[dict]) -> str:
    module = ""
    for frame in reversed(stack):
        name = str(frame.get("name", ""))
        call_from = (frame.get("args") or {}).get("CallFrom")
        if call_from and not _is_library_frame(str(call_from)):
            return str(call_from)
        if name.startswith("nn.Module: "):
            module = module or name[len("nn.Module: "):]
            continue
        if name.startswith("<") or _is_library_frame(name):
            continue
        file_part, _, rest = name.partition("(")
        line = rest.partition(")")[0]
        return f"{file_part}:{line}" if line.isdigit() else name
    return module or "<unknown>"


def _is_library_frame(name: str) -> bool:
    return name.startswith(("torch/", "<", "enum.py", "typing.py", "contextlib.py", "runpy.py")) or "/torch/" in name
