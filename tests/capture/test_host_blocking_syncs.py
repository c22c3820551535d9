"""Only syncs where the host blocks in the profiled code are host-device syncs: Kineto's device-side stream waits,
polls (cudaEventQuery, which CUPTI records as an "Event Sync") and the syncs of the profiler's own code (roofline's
step timing, torch.profiler's stop) are counted apart, never as sites."""

from __future__ import annotations

from roofline.capture.kineto import load_trace
from roofline.capture.tool_frames import tool_spans
from roofline.capture.trace_syncs import (DEVICE_SIDE, NON_BLOCKING, PROFILER_OWN, host_syncs_from_trace,
                                          left_out_note)

_THREAD = {"pid": 1, "tid": 1}


def _op(name: str, ts: float, dur: float, ext: int, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **_THREAD, "args": {"External id": ext}}


def _frame(name: str, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": "python_function", "name": name, "ts": ts, "dur": dur, **_THREAD}


def _sync(call: str, kind: str, ts: float, correlation: int, ext: int) -> list[dict]:
    """The runtime call on the host thread and Kineto's cuda_sync event it made."""
    return [
        {"ph": "X", "cat": "cuda_runtime", "name": call, "ts": ts, "dur": 5, **_THREAD,
         "args": {"correlation": correlation, "External id": ext}},
        {"ph": "X", "cat": "cuda_sync", "name": kind, "ts": ts + 1, "dur": 3, "pid": 0, "tid": 7,
         "args": {"cuda_sync_kind": kind, "correlation": correlation, "External id": ext, "stream": 7}},
    ]


def _kernel(ts: float, correlation: int) -> list[dict]:
    return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 2, **_THREAD,
             "args": {"correlation": correlation, "External id": 1}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "ts": ts + 3, "dur": 10, "pid": 0, "tid": 7,
             "args": {"correlation": correlation, "External id": 1, "device": 0, "stream": 7}}]


def _sites(events: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
    sites, left_out = host_syncs_from_trace({"traceEvents": events})
    return {s.kind: s.count for s in sites}, left_out


def test_a_stream_wait_event_and_an_event_query_are_not_host_syncs_but_an_event_synchronize_is():
    events = [_op("aten::mm", 0, 100, 1), *_kernel(1, 100),
              *_sync("cudaStreamWaitEvent", "Stream Wait Event", 10, 101, 1),
              *_sync("cudaEventQuery", "Event Sync", 20, 102, 1),
              *_sync("cudaEventSynchronize", "Event Sync", 30, 103, 1),
              *_sync("cudaStreamSynchronize", "Stream Sync", 40, 104, 1)]
    sites, left_out = _sites(events)
    assert sites == {"mm": 2}
    assert left_out == {DEVICE_SIDE: 1, NON_BLOCKING: 1}


def test_a_stream_wait_whose_runtime_call_is_missing_is_still_device_side():
    events = [_op("aten::cudnn_convolution", 0, 100, 1), *_kernel(1, 100),
              *_sync("cudaStreamWaitEvent", "Stream Wait Event", 10, 101, 1)[1:]]
    assert _sites(events) == ({}, {DEVICE_SIDE: 1})


def test_a_sync_under_a_user_annotation_is_named_by_its_call_not_the_annotation():
    annotation = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
    events = [_op(annotation, 0, 100, 1, cat="user_annotation"), *_kernel(1, 100),
              *_sync("cudaDeviceSynchronize", "Context Sync", 10, 101, 1),
              *_sync("cudaStreamSynchronize", "Stream Sync", 30, 102, 1)]
    sites, left_out = _sites(events)
    assert sites == {"cuda.synchronize": 1, "cuda.Stream.synchronize": 1}
    assert not left_out


def test_syncs_in_the_profilers_own_frames_are_left_out_and_the_users_kept():
    """roofline's _sync inside its step hook and torch.profiler's stop_trace are the tool's; the user's line called
    from roofline's script runner (which wraps the whole script) is the user's, and so is a sync inside a module
    whose forward roofline's hook called."""
    events = [
        _op("aten::mm", 0, 400, 1), *_kernel(1, 100),
        _frame("roofline/capture/script_runner.py(277): run_script", 0, 400),
        _frame("train.py(12): <module>", 2, 390),
        _frame("roofline/capture/profiling.py(210): step", 10, 40),
        _frame("roofline/capture/profiling.py(184): _sync", 12, 30),
        _frame("torch/cuda/__init__.py(1152): synchronize", 13, 20),
        *_sync("cudaDeviceSynchronize", "Context Sync", 15, 101, 1),
        _frame("nn.Module: Net_0", 60, 100),
        _frame("roofline/capture/script_runner.py(151): _before_forward", 61, 10),
        _frame("model.py(30): forward", 80, 50),
        *_sync("cudaStreamSynchronize", "Stream Sync", 90, 102, 1),
        _frame("torch/profiler/profiler.py(278): stop_trace", 200, 60),
        _frame("torch/autograd/profiler.py(403): __exit__", 201, 50),
        *_sync("cudaDeviceSynchronize", "Context Sync", 210, 103, 1),
    ]
    sites, left_out = _sites(events)
    assert sites == {"mm": 1}
    assert left_out == {PROFILER_OWN: 2}
    assert "2 made by the profiler's own code" in left_out_note(left_out)


def test_the_tool_owns_time_only_where_its_frame_is_the_innermost():
    frames = [(0, 100, True), (10, 60, False), (20, 30, True), (70, 80, False)]
    assert tool_spans(frames) == [(0, 10), (20, 30), (60, 70), (80, 100)]
    assert tool_spans([(0, 100, False), (10, 20, True)]) == [(10, 20)]
    assert tool_spans([]) == []


def test_the_loaded_trace_keeps_each_syncs_runtime_call():
    import json
    import tempfile

    events = [_op("aten::mm", 0, 100, 1), *_kernel(1, 100), *_sync("cudaEventQuery", "Event Sync", 20, 102, 1)]
    with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
        json.dump({"traceEvents": events}, fh)
        fh.flush()
        trace = load_trace(fh.name)
    assert [(s.name, s.call, s.in_tool) for s in trace.syncs] == [("Event Sync", "cudaEventQuery", False)]
