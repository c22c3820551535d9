"""The Python API, with the names known from the course this tool grew out of."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from roofline.capture.profiling import StepProfiler
from roofline.report import Ceilings, OpRecord, Report


class RooflineAnalyzer:
    """``RooflineAnalyzer(device="cuda").analyze(model, inputs) -> Report``: the per-op roofline of one step."""

    def __init__(self, device: str | torch.device | None = None, *, ceilings: Ceilings | None = None,
                 iters: int = 5, warmup: int = 2, remeasure: bool = False) -> None:
        from roofline.device import get_ceilings, resolve_device

        self.device = resolve_device(device)
        self.ceilings = ceilings or get_ceilings(self.device, remeasure=remeasure)
        self.iters = iters
        self.warmup = warmup

    def analyze(self, model: torch.nn.Module, inputs: Any, *, backward: bool = False,
                loss_fn: Callable[[Any], torch.Tensor] | None = None, name: str = "") -> Report:
        from roofline.analyze.live import analyze_model
        from roofline.doctor import diagnose

        report = analyze_model(model, _as_tuple(inputs), device=self.device, ceilings=self.ceilings,
                               backward=backward, loss_fn=loss_fn, warmup=self.warmup, iters=self.iters,
                               workload=name or type(model).__name__)
        report.findings = diagnose(report)
        return report


class ProfilingContext(StepProfiler):
    """``with ProfilingContext(...) as prof: for ...: train_step(); prof.step()`` then ``prof.report()``.

    Also a decorator: ``@ProfilingContext(wait=1, warmup=1, active=3)`` on a step function makes each call a
    step (``fn.profiler.report()``); the context opens on the first call and closes once the active steps are
    done. The capture is roofline.capture.profiling.StepProfiler's; this class adds the Report and the doctor.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._report: Report | None = None
        self._diagnosed = False

    def report(self, ceilings: Ceilings | None = None) -> Report:
        """The per-op roofline Report of the profiled steps, with syncs, memory and true vs profiled time, and the
        doctor's findings: the public entry point, which runs the doctor once (``build_report`` does not)."""
        report = self.build_report(ceilings)
        if not self._diagnosed:
            from roofline.doctor import diagnose

            report.findings = diagnose(report)
            self._diagnosed = True
        return report

    def build_report(self, ceilings: Ceilings | None = None) -> Report:
        """The Report of the profiled steps, undiagnosed (for callers that run the doctor themselves)."""
        if self._report is None:
            from roofline.analyze.profiled import report_from_profile

            self._report = report_from_profile(self.record(), ceilings)
        return self._report


def _as_tuple(inputs: Any) -> tuple | dict:
    """Positional arguments as a tuple; a dict stays keyword arguments (``model(**inputs)``, Hugging Face style)."""
    return inputs if isinstance(inputs, (tuple, dict)) else (inputs,)


def _counted_ops(model: torch.nn.Module, inputs: Any, backward: bool) -> list[OpRecord]:
    from roofline.analyze.live import make_step
    from roofline.capture.op_recorder import record_ops

    recording = record_ops(make_step(model, _as_tuple(inputs), backward=backward), root=model)
    return [
        OpRecord(name=r.name, module=r.module, dtype=r.dtype, flops=r.cost.flops, bytes=r.cost.bytes,
                 source=r.source, phase=r.phase, modeled=r.cost.modeled, index=i,
                 bound="unmodeled" if not r.cost.modeled else "memory",
                 input_shapes=[list(t.shape) for t in r.input_tensors],
                 output_shapes=[list(t.shape) for t in r.output_tensors])
        for i, r in enumerate(recording.ops)
    ]


def count_flops_per_op(model: torch.nn.Module, inputs: Any, *, backward: bool = False) -> list[OpRecord]:
    """Every aten op of one step, in order, with its FLOPs (``.flops``), module and source line. Not timed."""
    return _counted_ops(model, inputs, backward)


def measure_memory_traffic(model: torch.nn.Module, inputs: Any, *, backward: bool = False) -> dict[str, Any]:
    """Minimum bytes each op must move (each input view read once, each output written once), and the total.

    A model of traffic from shapes, not a hardware counter reading: Nsight Compute's DRAM bytes can be higher
    (re-reads when data outgrows the cache) or lower (data served from cache).
    """
    ops = _counted_ops(model, inputs, backward)
    return {"total_bytes": sum(op.bytes for op in ops), "ops": ops,
            "method": "minimum traffic from shapes: inputs read once, outputs written once, views free"}


def plot_roofline(report: Report, path: str = "roofline.png", **kwargs: Any):
    from roofline.render.png import plot_roofline as _plot

    return _plot(report, path, **kwargs)
