"""warmup_events: the first iterations (ProfilerStep#0 and #1) and the runtime call that carried CUDA's lazy
initialisation (the first call, or a named init call, of at least 50 ms), on the report's clock."""

from __future__ import annotations

from roofline.analyze.warmup import LAZY_INIT_MIN_US, warmup_events
from roofline.capture.trace_model import CpuOp, Launch, Step, Trace


def _trace(steps, launches, first_op_us=5.0) -> Trace:
    return Trace(path="t", steps=steps, launches=launches, ops=[CpuOp(0, "aten::mm", first_op_us, 1.0, 1, 1)])


def test_first_iterations_are_warm_up():
    trace = _trace([Step(0, 0.0, 2e6), Step(1, 2e6, 1e6), Step(2, 3e6, 1e5)], [])
    assert warmup_events(trace) == [
        {"kind": "first-iteration", "step": 0, "number": 0, "start_s": 0.0, "dur_s": 2.0},
        {"kind": "first-iteration", "step": 1, "number": 1, "start_s": 0.0, "dur_s": 1.0},
    ]


def test_lazy_init_is_the_first_call_or_a_named_init_call_of_50_ms_or_more():
    launches = [Launch("cudaLaunchKernel", 100.0, LAZY_INIT_MIN_US, 1, None),  # first call: counts whatever it is
                Launch("cudaLaunchKernel", 2e5, 9e5, 2, None),  # long, but neither first nor an init call
                Launch("cudaMalloc", 3e5, LAZY_INIT_MIN_US - 1, 3, None),  # too short
                Launch("cudaFree", 4e5, 6e4, 4, None)]
    trace = _trace([Step(5, 50.0, 1e6)], launches)
    assert warmup_events(trace) == [
        {"kind": "cuda-lazy-init", "call": "cudaLaunchKernel", "step": 0, "start_s": 50e-6, "dur_s": 0.05},
        {"kind": "cuda-lazy-init", "call": "cudaFree", "step": 0, "start_s": (4e5 - 50.0) / 1e6, "dur_s": 0.06},
    ]
    outside = _trace([Step(5, 1e9, 10.0)], [Launch("cuInit", 100.0, 1e5, 1, None)], first_op_us=40.0)
    assert warmup_events(outside)[0]["step"] is None and warmup_events(outside)[0]["start_s"] == 60e-6
    no_steps = _trace([], [Launch("hipInit", 100.0, 1e5, 1, None)], first_op_us=25.0)
    assert warmup_events(no_steps) == [{"kind": "cuda-lazy-init", "call": "hipInit", "step": None,
                                        "start_s": 75e-6, "dur_s": 0.1}]
    bare = Trace(path="t", launches=[Launch("cudaFree", 100.0, 1e5, 1, None)])
    assert warmup_events(bare)[0]["start_s"] == 0.0


def test_at_most_sixteen_events():
    launches = [Launch("cudaMalloc", i * 1e6, 1e5, i, None) for i in range(30)]
    assert len(warmup_events(_trace([], launches))) == 16
    steps = [Step(0, 0.0, 1.0), Step(1, 1.0, 1.0)]
    assert len(warmup_events(_trace(steps, launches))) == 16


def test_torch_compile_stages_are_summed_outermost_only_and_named_by_the_warm_up_rule():
    """A profile holding torch.compile's first call shows Dynamo's "(dynamo_timed)" stages (67% of a small compiled
    MLP's doctor run, all as unmodelled ops): their outermost spans summed, a nested stage not counted twice."""
    from roofline.doctor.rules.warm_up import check
    from roofline.report import Report

    ops = [CpuOp(0, "compile_file (dynamo_timed)", 100.0, 400.0, 1, 1),
           CpuOp(1, "async_compile.wait (dynamo_timed)", 150.0, 50.0, 1, 1),  # inside compile_file
           CpuOp(2, "build_guards (dynamo_timed)", 450.0, 150.0, 1, 1),  # overlaps its end: 100 us more
           CpuOp(3, "aten::mm", 700.0, 10.0, 1, 1)]
    trace = Trace(path="t", ops=ops)
    assert warmup_events(trace) == [{"kind": "torch-compile", "events": 2, "dur_s": 500e-6}]
    assert warmup_events(Trace(path="t", ops=ops[3:])) == []
    findings = check(Report(kind="trace", extra={"warmup": warmup_events(trace)}))
    assert len(findings) == 1 and "torch.compile's compilation (0.0005 s in 2" in findings[0].title
    assert findings[0].estimated_savings_s == 0.0
