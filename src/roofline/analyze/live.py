"""Live models: one step counted (op recorder), the same step timed under torch.profiler, both joined.

The counting pass is never timed and the timed pass carries no counting instrumentation; the exported trace
then goes through the same ``report_from_trace`` as any trace file.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from roofline.analyze.pipeline import report_from_trace
from roofline.capture import one_session
from roofline.capture.cuda_graphs import GraphCaptures
from roofline.capture.op_recorder import OpRecording, record_ops
from roofline.capture.trace_model import Trace
from roofline.device.measure import time_fn
from roofline.errors import RooflineError
from roofline.report import Ceilings, Environment, Report, Timing


def _noop(_: str) -> None:
    pass


Inputs = tuple | dict


def call_model(model: torch.nn.Module, inputs: Inputs) -> Any:
    """``model(*inputs)``, or ``model(**inputs)`` for a dict of keyword arguments (Hugging Face style)."""
    return model(**inputs) if isinstance(inputs, dict) else model(*inputs)


def make_step(model: torch.nn.Module, inputs: Inputs, *, backward: bool = False,
              loss_fn: Callable[[Any], torch.Tensor] | None = None) -> Callable[[], Any]:
    """One step of work: a forward (no grad), or forward + loss + backward (``default_loss`` without a loss_fn),
    with grad on whatever the caller's mode (the API called from evaluation code, under no_grad or inference_mode)."""
    if not backward:
        def forward() -> Any:
            with torch.no_grad():
                return call_model(model, inputs)
        return forward

    inputs = _saveable(inputs)

    def train_step() -> Any:
        model.zero_grad(set_to_none=True)
        with torch.inference_mode(False), torch.enable_grad():
            out = call_model(model, inputs)
            loss = loss_fn(out) if loss_fn is not None else default_loss(out)
            loss.backward()
        return loss

    return train_step


def _saveable(inputs: Inputs) -> Inputs:
    """The inputs with copies of those made under inference_mode, which autograd cannot save for the backward
    ("Inference tensors cannot be saved for backward"), whatever the mode the step then runs in."""
    from torch.utils._pytree import tree_map

    def plain(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_inference():
            with torch.inference_mode(False):
                return value.clone()
        return value

    return tree_map(plain, inputs)


_PREFERRED_OUTPUTS = ("logits", "last_hidden_state", "prediction_logits", "pooler_output")


def default_loss(out: Any) -> torch.Tensor:
    """A scalar to run backward from when no loss_fn is given: the model's own ``loss`` when it computed one (a
    Hugging Face model given labels), else the mean of its main tensor output (logits, last_hidden_state, the
    output itself, or the first floating tensor in a tuple/dict)."""
    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor) and loss.numel() == 1 and loss.requires_grad:
        return loss
    tensor = _main_tensor(out)
    if tensor is None:
        raise RooflineError(f"cannot make a loss from the model's output ({type(out).__name__}): it holds no "
                            "floating-point tensor that requires grad")
    return tensor.float().mean()


def _main_tensor(out: Any) -> torch.Tensor | None:
    def usable(x: Any) -> bool:
        return isinstance(x, torch.Tensor) and x.is_floating_point() and x.requires_grad

    if usable(out):
        return out
    for name in _PREFERRED_OUTPUTS:
        value = out.get(name) if isinstance(out, dict) else getattr(out, name, None)
        if usable(value):
            return value
    values = list(out.values()) if isinstance(out, dict) else list(out) if isinstance(out, (tuple, list)) else []
    for value in values:
        found = _main_tensor(value)
        if found is not None:
            return found
    return None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step: Callable[[], Any], device: torch.device, iters: int) -> Timing:
    """True step time, without any profiler: device events on CUDA, a synchronised perf_counter on CPU."""
    samples = time_fn(step, device, warmup=0, repeats=iters)
    method = "CUDA events around each step" if device.type == "cuda" else "perf_counter around each step"
    return Timing.from_samples(samples, f"{method}, no profiler; median of {iters} after warm-up")


def analyze_profiler(device: torch.device, *, record_shapes: bool = True, **kwargs: Any) -> Any:
    """torch.profiler as ``analyze_model`` runs it (CPU activity, and CUDA's on a GPU; shapes and memory recorded):
    host_costs.py measures this configuration's own cost."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    return profile(activities=activities, record_shapes=record_shapes, profile_memory=True, **kwargs)


def profile_steps(step: Callable[[], Any], device: torch.device, iters: int, trace_path: Path,
                  *, record_shapes: bool = True) -> Timing:
    """Run 1 warm-up + ``iters`` active steps under torch.profiler and export the Chrome trace; returns the
    profiled wall time of each active step (what a profiled run alone would report)."""
    from torch.profiler import schedule

    samples: list[float] = []

    def export(prof: Any) -> None:
        prof.export_chrome_trace(str(trace_path))

    one_session.claim(_SESSION)
    try:
        with analyze_profiler(device, record_shapes=record_shapes, on_trace_ready=export,
                              schedule=schedule(wait=0, warmup=1, active=iters, repeat=1)) as prof:
            for i in range(1 + iters):
                t0 = time.perf_counter()
                step()
                _sync(device)
                if i >= 1:
                    samples.append(time.perf_counter() - t0)
                prof.step()
    finally:
        one_session.release(_SESSION)
    return Timing.from_samples(samples, "perf_counter around each step under torch.profiler (synchronised)")


_SESSION = "RooflineAnalyzer.analyze"


def _count_and_profile(step: Callable[[], Any], dev: torch.device, warmup: int, iters: int,
                       trace_path: str | Path | None, workload: str, model: torch.nn.Module, graphs: GraphCaptures,
                       progress: Callable[[str], None]) -> tuple[OpRecording, Trace, Timing, Timing]:
    """Warm up, time without the profiler, count, then time under the profiler: (recording, trace, profiled time,
    true time)."""
    from roofline.capture.kineto import load_trace
    from roofline.device.host import host_probe_us

    one_session.refuse_beside(_SESSION)
    progress(f"warm-up ({warmup} steps)")
    for _ in range(warmup):
        step()
    _sync(dev)
    progress(f"timing {iters} steps without the profiler")
    probe_before = host_probe_us()
    true_time = time_steps(step, dev, iters)
    true_time.host_probe_us = (probe_before + host_probe_us()) / 2
    progress("counting pass (every aten op, shapes, module, source line)")
    recording = record_ops(step, root=model)
    if not recording.ops and not graphs.replays:
        raise RooflineError(f"{workload or type(model).__name__} ran no torch operation in a step: nothing to count "
                            "or time (an empty model, or inputs that skip all its work)")
    _sync(dev)
    progress(f"timed pass ({iters} steps under torch.profiler)")
    with tempfile.TemporaryDirectory(prefix="roofline-") as tmp:
        raw = Path(trace_path) if trace_path is not None else Path(tmp) / "trace.json"
        profiled = profile_steps(step, dev, iters, raw)
        progress("joining counts with timings")
        trace = load_trace(raw)
    return recording, trace, profiled, true_time


def analyze_model(
    model: torch.nn.Module,
    inputs: Inputs,
    *,
    device: str | torch.device | None = None,
    ceilings: Ceilings | None = None,
    backward: bool = False,
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
    warmup: int = 2,
    iters: int = 5,
    workload: str = "",
    trace_path: str | Path | None = None,
    progress: Callable[[str], None] = _noop,
) -> Report:
    """Count every op once, time the same step under the profiler, join the two, place each op on the roofline."""
    from roofline.device import get_ceilings, resolve_device

    dev = resolve_device(device)
    if ceilings is None:
        progress("measuring ceilings (cached after the first run)")
        ceilings = get_ceilings(dev, progress=progress)
    step = make_step(model, inputs, backward=backward, loss_fn=loss_fn)
    # CUDA graphs the model captures (in its warm-up calls, typically) have their ops recorded, and their replays in
    # the profiled steps labelled: each replay's row carries its graph's work (capture/cuda_graphs.py)
    with GraphCaptures() as graphs:
        recording, trace, profiled, true_time = _count_and_profile(step, dev, warmup, iters, trace_path, workload,
                                                                   model, graphs, progress)
    report = report_from_trace(trace, ceilings, recording, kind="analyze", workload=workload,
                               environment=Environment.capture(trace.device_name or ceilings.device_name),
                               graphs=dict(graphs.graphs))
    if dev.type == "cpu":
        from roofline.analyze.unused_gpu import drop_no_kernels_note

        drop_no_kernels_note(report)
    report.step_time = true_time
    report.profiled_step_time = profiled
    if dev.type == "cpu":
        from roofline.analyze.inflated_profile import note_inflated_profile

        note_inflated_profile(report)
    from roofline.analyze.script_ops import note_unseen_script_ops

    note_unseen_script_ops(report, model)
    report.extra["backward"] = backward
    return report
