"""CUDA graphs under roofline: the work of each graph captured while roofline records, and a label on each replay.

A replay (``torch.cuda.CUDAGraph.replay()``) launches the captured kernels with no aten op around them, so neither
the trace's shapes nor the counting pass see its work. The capture itself runs eagerly through the dispatcher:
while a ``GraphCaptures`` is entered, the counting pass's recording dispatch mode (op_recorder._Recorder) is active
between each graph's ``capture_begin`` and ``capture_end``, and records every aten op the capture dispatched, with
its shapes, dtypes and count (count/), per graph (recording.CapturedGraph). Each replay made while a profiler runs is
wrapped in a range named with the graph's capture number (trace_model.GRAPH_REPLAY_LABEL: "CUDA graph replay #3"),
so the trace says which graph replayed; analyze/graph_replays.py gives that row the captured ops' work.

This covers ``torch.cuda.graph(...)``, ``torch.cuda.make_graphed_callables`` and torch.compile's CUDA graph trees
(mode="reduce-overhead"): all three capture and replay ``torch.cuda.CUDAGraph`` objects. Under graph trees the
capture runs Inductor's code, whose Triton kernels launch without the dispatcher: the dispatch mode records its extern
calls (the matmuls), and while such a capture is open Inductor's kernel launcher (CachingAutotuner.run) is wrapped
too, recording each kernel by its name and buffers, counted as a trace's ``triton_*`` events are (count/inductor.py:
estimates).

Patched: the graph class's capture_begin, capture_end and replay, once however many sessions are entered (a
ProfilingContext inside a profiled script), restored when the last one exits, whatever the user's code raised; a
capture left open by code that raised has its dispatch mode popped then too. A graph captured under an earlier
session carries its recording (an attribute of the graph) to a later session that sees it replay.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable
from typing import Any

from roofline.capture.patching import patch_attribute
from roofline.capture.recording import CapturedGraph, OpRecording
from roofline.capture.trace_model import GRAPH_REPLAY_LABEL

_ATTRIBUTE = "_roofline_captured_graph"
_numbers = itertools.count(1)
_lock = threading.RLock()
_sessions: list["GraphCaptures"] = []
_restore: list[Callable[[], None]] = []
# graph id -> (capture number, recording, dispatch mode, by Inductor) while a capture is open
_open: dict[int, tuple[int, OpRecording, Any, bool]] = {}
_by_id: dict[int, CapturedGraph] = {}  # graphs that take no attribute
_INDUCTOR_FILES = ("torch/_inductor/", "torch\\_inductor\\")
_TRITON_LAUNCHER_MODULE = "torch._inductor.runtime.triton_heuristics"
_kernel_restore: list[Callable[[], None]] = []  # Inductor's launcher, wrapped while an Inductor capture is open
_kernel_targets: list[OpRecording] = []  # the open Inductor captures' recordings, innermost last


class _NoModules:
    """The module tracker the recorder asks, for a capture: a capture starts inside forwards already running, so
    the module path is not known; the replay's row takes its module and line from the trace."""

    parents: frozenset = frozenset()
    entered_in_backward: frozenset = frozenset()
    is_bw = False


class GraphCaptures:
    """``with GraphCaptures() as graphs: ...``: ``graphs.graphs`` maps the capture number of each graph captured, or
    replayed after a capture under roofline, while entered to its CapturedGraph; ``graphs.replays`` counts the
    replays seen, ``graphs.unseen_replays`` those of graphs whose capture roofline did not see (no label, no work).

    ``graph_class``: the class to patch (tests pass a stand-in); by default ``torch.cuda.CUDAGraph``, and nothing is
    patched where this torch has none."""

    def __init__(self, graph_class: Any = None) -> None:
        self.graph_class = graph_class
        self.graphs: dict[int, CapturedGraph] = {}
        self.replays = 0
        self.unseen_replays = 0
        self._entered = False

    def __enter__(self) -> "GraphCaptures":
        with _lock:
            cls = self.graph_class if self.graph_class is not None else _default_graph_class()
            if cls is None:
                return self
            if _sessions and _patched_class() is not cls:
                return self  # another class is patched (a test's stand-in): this session sees nothing
            if not _sessions:
                _install(cls)
            _sessions.append(self)
            self._entered = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop seeing captures and replays; the last session open restores the class (safe to call twice)."""
        with _lock:
            if not self._entered:
                return
            self._entered = False
            if self in _sessions:
                _sessions.remove(self)
            if not _sessions:
                _uninstall()

    @property
    def active(self) -> bool:
        return self._entered


def _default_graph_class() -> Any:
    try:
        import torch

        return getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    except Exception:  # noqa: BLE001 - no usable torch.cuda: nothing to patch
        return None


_patched: list[Any] = []


def _patched_class() -> Any:
    return _patched[0] if _patched else None


def _install(cls: Any) -> None:
    try:
        _patch(cls, "capture_begin", _capture_begin)
        _patch(cls, "capture_end", _capture_end)
        _patch(cls, "replay", _replay)
        _patched.append(cls)
    except BaseException:
        _uninstall()
        raise


def _uninstall() -> None:
    """Undo every patch, in reverse order, and pop the dispatch mode of any capture left open (the user's code
    raised between capture_begin and capture_end, and never ended it)."""
    for entry in list(_open.values()):
        _exit_mode(entry[2])
    _open.clear()
    _kernel_targets.clear()
    _unwrap_kernels()
    while _restore:
        undo = _restore.pop()
        try:
            undo()
        except Exception:  # noqa: BLE001 - restoring must go on whatever one undo does
            pass
    _patched.clear()


def _patch(owner: Any, name: str, make: Callable[[Callable], Callable],
           restore: list[Callable[[], None]] = _restore) -> None:
    patch_attribute(owner, name, make, restore)


def _capture_begin(original: Callable) -> Callable:
    def capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(graph, *args, **kwargs)
        with _lock:
            if _sessions and id(graph) not in _open:
                _start(graph)
        return result

    return capture_begin


def _capture_end(original: Callable) -> Callable:
    def capture_end(graph: Any, *args: Any, **kwargs: Any) -> Any:
        with _lock:
            entry = _open.pop(id(graph), None)
        if entry is not None:
            _exit_mode(entry[2])
            if entry[3]:
                _stop_kernels(entry[1])
        result = original(graph, *args, **kwargs)  # raises where the capture failed: no graph, nothing kept
        if entry is not None:
            captured = CapturedGraph(entry[0], entry[1].ops, inductor=entry[3])
            _attach(graph, captured)
            with _lock:
                for session in _sessions:
                    session.graphs[captured.number] = captured
        return result

    return capture_end


def _replay(original: Callable) -> Callable:
    def replay(graph: Any, *args: Any, **kwargs: Any) -> Any:
        captured = _captured_of(graph)
        with _lock:
            for session in _sessions:
                session.replays += 1
                if captured is None:
                    session.unseen_replays += 1
                else:
                    session.graphs.setdefault(captured.number, captured)
        if captured is None or not _profiler_enabled():
            return original(graph, *args, **kwargs)
        from torch.autograd.profiler import record_function

        with record_function(f"{GRAPH_REPLAY_LABEL}{captured.number}"):
            return original(graph, *args, **kwargs)

    return replay


def _start(graph: Any) -> None:
    """Open the recording of a capture that just began: the counting pass's dispatch mode, entered until its
    capture_end."""
    from roofline.capture.op_recorder import _Recorder

    recording = OpRecording()
    mode = _Recorder(recording, _NoModules(), str)
    try:
        mode.__enter__()
    except Exception:  # noqa: BLE001 - no recording rather than a broken capture
        return
    inductor = _under_inductor()
    _open[id(graph)] = (next(_numbers), recording, mode, inductor)
    if inductor:
        _start_kernels(recording)


def _inductor_launcher() -> Any:
    """Inductor's Triton kernel launcher class, where torch.compile's runtime is loaded (never imported here)."""
    module = sys.modules.get(_TRITON_LAUNCHER_MODULE)
    return getattr(module, "CachingAutotuner", None)


def _start_kernels(recording: OpRecording) -> None:
    _kernel_targets.append(recording)
    launcher = _inductor_launcher()
    if _kernel_restore or launcher is None or not callable(getattr(launcher, "run", None)):
        return
    try:
        _patch(launcher, "run", _kernel_run, _kernel_restore)
    except Exception:  # noqa: BLE001 - its kernels go uncounted; the capture goes on
        _unwrap_kernels()


def _stop_kernels(recording: OpRecording) -> None:
    if recording in _kernel_targets:
        _kernel_targets.remove(recording)
    if not _kernel_targets:
        _unwrap_kernels()


def _unwrap_kernels() -> None:
    while _kernel_restore:
        try:
            _kernel_restore.pop()()
        except Exception:  # noqa: BLE001 - restoring must go on
            pass


def _kernel_run(original: Callable) -> Callable:
    def run(autotuner: Any, *args: Any, **kwargs: Any) -> Any:
        if _kernel_targets:
            _record_kernel(_kernel_targets[-1], autotuner, args)
        return original(autotuner, *args, **kwargs)

    return run


def _record_kernel(recording: OpRecording, autotuner: Any, args: tuple) -> None:
    """One Inductor kernel launched inside a capture, by its name and buffers (its scalar sizes kept), counted as a
    trace's ``triton_*`` event with those arguments is."""
    from roofline.capture.recording import RecordedOp, op_dtype
    from roofline.count.counting import count_op, to_meta

    try:
        meta = getattr(autotuner, "inductor_meta", None) or {}
        name = meta.get("kernel_name") or getattr(getattr(autotuner, "fn", None), "__name__", "")
        if not isinstance(name, str) or not name:
            return
        metas = to_meta(list(args))
        recording.ops.append(RecordedOp(name, metas, [], count_op(name, metas, None, None), op_dtype(metas, []),
                                        "", "forward", None))
    except Exception:  # noqa: BLE001 - a kernel not counted rather than a broken capture
        pass


def _under_inductor() -> bool:
    """Whether torch.compile's generated code is capturing (a CUDA graph tree's node): a frame of torch._inductor
    on the stack."""
    frame = sys._getframe(2)
    while frame is not None:
        if any(part in frame.f_code.co_filename for part in _INDUCTOR_FILES):
            return True
        frame = frame.f_back
    return False


def _exit_mode(mode: Any) -> None:
    try:
        mode.__exit__(None, None, None)
    except Exception:  # noqa: BLE001 - popped already, or another mode on top: the capture goes on
        pass


def _attach(graph: Any, captured: CapturedGraph) -> None:
    try:
        setattr(graph, _ATTRIBUTE, captured)
        _by_id.pop(id(graph), None)
    except (AttributeError, TypeError):
        _by_id[id(graph)] = captured


def _captured_of(graph: Any) -> CapturedGraph | None:
    found = getattr(graph, _ATTRIBUTE, None)
    if isinstance(found, CapturedGraph):
        return found
    return _by_id.get(id(graph))


def _profiler_enabled() -> bool:
    try:
        import torch.autograd.profiler as autograd_profiler

        flag = getattr(autograd_profiler, "_is_profiler_enabled", None)
        if isinstance(flag, bool):
            return flag
        import torch

        return bool(torch._C._autograd._profiler_enabled())
    except Exception:  # noqa: BLE001 - unknown: label it (a range outside a profiler records nothing)
        return True
