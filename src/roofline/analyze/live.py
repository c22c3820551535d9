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
from roofline.capture.op_recorder import record_ops
from roofline.device.measure import time_fn
from roofline.report import Ceilings, Report, Timing


def _noop(_: str) -> None:
    pass


def make_step(model: torch.nn.Module, inputs: tuple, *, backward: bool = False,
              loss_fn: Callable[[Any], torch.Tensor] | None = None) -> Callable[[], Any]:
    """One step of work: a forward (no grad), or forward + loss + backward."""
    if not backward:
        def forward() -> Any:
            with torch.no_grad():
                return model(*inputs)
        return forward

    def train_step() -> Any:
        model.zero_grad(set_to_none=True)
        out = model(*inputs)
        loss = loss_fn(out) if loss_fn is not None else _default_loss(out)
        loss.backward()
        return loss

    return train_step


def _default_loss(out: Any) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out.float().mean()
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state.float().mean()
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0].float().mean()
    raise TypeError("cannot make a loss from the model's output: pass loss_fn")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step: Callable[[], Any], device: torch.device, iters: int) -> Timing:
    """True step time, without any profiler: device events on CUDA, a synchronised perf_counter on CPU."""
    samples = time_fn(step, device, warmup=0, repeats=iters)
    method = "CUDA events around each step" if device.type == "cuda" else "perf_counter around each step"
    return Timing.from_samples(samples, f"{method}, no profiler; median of {iters} after warm-up")


def profile_steps(step: Callable[[], Any], device: torch.device, iters: int, trace_path: Path,
                  *, record_shapes: bool = True) -> Timing:
    """Run 1 warm-up + ``iters`` active steps under torch.profiler and export the Chrome trace; returns the
    profiled wall time of each active step (what a profiled run alone would report)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    samples: list[float] = []

    def export(prof: Any) -> None:
        prof.export_chrome_trace(str(trace_path))

    with profile(activities=activities, schedule=schedule(wait=0, warmup=1, active=iters, repeat=1),
                 on_trace_ready=export, record_shapes=record_shapes, profile_memory=True) as prof:
        for i in range(1 + iters):
            t0 = time.perf_counter()
            step()
            _sync(device)
            if i >= 1:
                samples.append(time.perf_counter() - t0)
            prof.step()
    return Timing.from_samples(samples, "perf_counter around each step under torch.profiler (synchronised)")


def analyze_model(
    model: torch.nn.Module,
    inputs: tuple,
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
    from roofline.capture.kineto import load_trace
    from roofline.device import get_ceilings, resolve_device

    dev = resolve_device(device)
    if ceilings is None:
        progress("measuring ceilings (cached after the first run)")
        ceilings = get_ceilings(dev, progress=progress)
    step = make_step(model, inputs, backward=backward, loss_fn=loss_fn)
    progress(f"warm-up ({warmup} steps)")
    for _ in range(warmup):
        step()
    _sync(dev)
    progress(f"timing {iters} steps without the profiler")
    true_time = time_steps(step, dev, iters)
    progress("counting pass (every aten op, shapes, module, source line)")
    recording = record_ops(step, root=model)
    _sync(dev)
    progress(f"timed pass ({iters} steps under torch.profiler)")
    with tempfile.TemporaryDirectory(prefix="roofline-") as tmp:
        raw = Path(trace_path) if trace_path is not None else Path(tmp) / "trace.json"
        profiled = profile_steps(step, dev, iters, raw)
        progress("joining counts with timings")
        trace = load_trace(raw)
    report = report_from_trace(trace, ceilings, recording, kind="analyze", workload=workload)
    report.step_time = true_time
    report.profiled_step_time = profiled
    report.extra["backward"] = backward
    return report
