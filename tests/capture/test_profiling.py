"""ProfilingContext on CPU: schedule, true vs profiled step time, syncs, memory, whole-block and decorator use."""

from __future__ import annotations

import pytest
import torch

from roofline.api import ProfilingContext
from roofline.render.chrome_trace import normalize_chrome_trace, read_chrome_trace, validate_chrome_trace
from roofline.report import Ceilings

CPU = Ceilings(device="cpu", device_name="test cpu", memory_bandwidth_bytes_per_s=2e10,
               peak_flops_per_s={"float32": 1e11}, launch_overhead_s=5e-6)


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def _step(model: torch.nn.Module) -> float:
    out = model(torch.randn(8, 32))
    return out.mean().item()  # the sync the report must find


def _item_line() -> int:
    return _step.__code__.co_firstlineno + 2


def test_scheduled_steps_give_true_and_profiled_time_syncs_and_memory(model: torch.nn.Module) -> None:
    with ProfilingContext(wait=1, timed=2, warmup=1, active=2, ceilings=CPU, workload="mlp") as prof:
        for _ in range(8):
            _step(model)
            prof.step()
    report = prof.report()
    assert report.kind == "profile" and report.workload == "mlp" and report.steps == 2
    assert report.step_time is not None and report.step_time.n == 2 and report.step_time.median_s > 0
    assert report.profiled_step_time is not None and report.profiled_step_time.n == 2
    assert "without the profiler" in report.step_time.method
    (site,) = report.syncs
    assert site.kind == "item" and site.location.endswith(f"test_profiling.py:{_item_line()}")
    assert site.count == 1 and site.per_step == 1.0, "counted in the one warmup step"
    assert "syncs: counted live over 1 step(s) (the warmup steps, so the kept profile is free of the detector's " \
           "cost)" in report.summary.notes
    assert {op.name for op in report.ops} >= {"aten::addmm", "aten::relu"}
    assert {op.step for op in report.ops} == {0, 1}
    assert report.memory.peak_allocated_bytes > 0 and report.memory.counter
    assert report.memory.peak_live_tensors
    assert validate_chrome_trace(normalize_chrome_trace(read_chrome_trace(prof.trace_path))) == []


def test_a_loop_that_ends_before_the_schedule_keeps_only_its_finished_steps(model: torch.nn.Module) -> None:
    """5 step() calls where the schedule needs 6 (wait 1 + timed 2 + warmup 1 + active 2): one active step is
    finished; what runs after the last step() (here a 256x256 product) is part of no step and stays out."""
    with ProfilingContext(wait=1, timed=2, warmup=1, active=2, ceilings=CPU) as prof:
        for _ in range(5):
            _step(model)
            prof.step()
        torch.randn(256, 256) @ torch.randn(256, 256)
    report = prof.report()
    assert report.steps == 1 and {op.step for op in report.ops} == {0}
    assert "aten::mm" not in {op.name for op in report.ops}
    assert report.summary.total_flops == 2 * 8 * (32 * 64 + 64 * 8) + 8 * 64 + 8 * 8  # addmm x2, relu, mean
    assert any("1 of the 2 active steps" in n and "ended after 5 steps" in n for n in report.summary.notes), \
        report.summary.notes


def test_without_step_calls_the_whole_block_is_one_step(model: torch.nn.Module) -> None:
    with ProfilingContext(ceilings=CPU) as prof:
        for _ in range(3):
            _step(model)
    report = prof.report()
    assert report.steps == 1 and report.step_time is None
    assert report.profiled_step_time.n == 1
    assert sum(1 for op in report.ops if op.name == "aten::addmm") == 6
    assert report.syncs[0].count == 3 and report.syncs[0].per_step == 3
    assert any(n.startswith("true step time not measured: the whole block was profiled as one step")
               for n in report.summary.notes)
    # the block is the one step, by design: no advice to mark ProfilerStep#N spans with a schedule (sweep 5)
    assert not any("ProfilerStep#N" in n for n in report.summary.notes), report.summary.notes


def test_decorator_makes_each_call_a_step_and_closes_after_the_window(model: torch.nn.Module) -> None:
    profiler = ProfilingContext(wait=1, timed=1, warmup=0, active=1, ceilings=CPU)

    @profiler
    def train_step() -> float:
        return _step(model)

    for _ in range(5):
        train_step()
    assert profiler.finished and profiler.steps_done == 3
    report = train_step.profiler.report()
    assert report.steps == 1 and report.step_time.n == 1


def test_patches_restored_and_outputs_kept_when_user_code_raises(model: torch.nn.Module) -> None:
    item = vars(torch.Tensor).get("item")
    with pytest.raises(RuntimeError, match="user bug"):
        with ProfilingContext(ceilings=CPU) as prof:
            _step(model)
            raise RuntimeError("user bug")
    assert vars(torch.Tensor).get("item") is item
    report = prof.report()
    assert "user bug" in report.profile.error and report.ops


def test_without_the_whole_block_fallback_nothing_runs_before_the_true_steps(model: torch.nn.Module) -> None:
    prof = ProfilingContext(wait=0, timed=1, warmup=0, active=1, ceilings=CPU, whole_block=False)
    with prof:
        _step(model)
        assert prof._profiler is None and prof.syncs is None, "the true step runs with nothing attached"
        prof.step()
        _step(model)
        prof.step()
    report = prof.report()
    assert report.step_time.n == 1 and report.profiled_step_time.n == 1 and report.syncs[0].count == 1


def test_without_the_fallback_a_block_without_steps_is_a_clear_error(model: torch.nn.Module) -> None:
    with ProfilingContext(ceilings=CPU, whole_block=False) as prof:
        _step(model)
    with pytest.raises(Exception, match="call step"):
        prof.report()


def test_a_context_runs_once() -> None:
    prof = ProfilingContext(ceilings=CPU)
    with prof:
        pass
    with pytest.raises(Exception, match="runs once"):
        prof.__enter__()


def test_bad_schedule_is_refused() -> None:
    with pytest.raises(Exception, match="active >= 1"):
        ProfilingContext(active=0)


@pytest.mark.cuda
def test_cuda_profile_memory_matches_max_memory_allocated_and_finds_syncs() -> None:
    from roofline.models import get_workload

    workload = get_workload("bad-syncs", device="cuda")
    with torch.no_grad(), ProfilingContext(wait=1, timed=2, warmup=1, active=2, ceilings=CPU) as prof:
        for _ in range(prof.total_steps):
            workload.model(*workload.inputs)
            prof.step()
    report = prof.report()
    memory = report.memory
    assert abs(memory.peak_allocated_bytes - memory.reference_peak_bytes) <= 0.05 * memory.reference_peak_bytes
    per_kind = {s.kind: s.per_step for s in report.syncs}
    assert per_kind.get("item") == 10 and per_kind.get("cpu") == 10, report.syncs
    assert report.kernels and report.step_time.n == 2


def test_a_step_that_ends_during_cuda_graph_capture_is_not_counted_and_makes_no_sync(
        model: torch.nn.Module, monkeypatch: pytest.MonkeyPatch) -> None:
    syncs: list[int] = []
    capturing = [False]
    with ProfilingContext(wait=0, timed=1, warmup=0, active=1, ceilings=CPU) as prof:
        monkeypatch.setattr(prof, "_synchronize", lambda: syncs.append(prof.steps_done))
        monkeypatch.setattr(prof, "_capturing", lambda: capturing[0])
        capturing[0] = True  # a graph capture: the module's step boundary comes, nothing ran
        _step(model)
        prof.step()
        assert prof.steps_done == 0 and syncs == []
        capturing[0] = False
        total = prof.total_steps
        for _ in range(total):
            _step(model)
            prof.step()
    assert prof.steps_done == total and syncs.count(0) == 1 and len(syncs) == 2 * total


@pytest.mark.cuda
def test_profiling_a_loop_that_captures_a_cuda_graph() -> None:
    lin = torch.nn.Linear(256, 256, device="cuda")
    x = torch.randn(32, 256, device="cuda")
    with torch.no_grad(), ProfilingContext(wait=0, timed=1, warmup=0, active=1, ceilings=CPU) as prof:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            lin(x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = lin(x)
            prof.step()  # inside the capture: would sync and end the capture with an error
        total = prof.total_steps
        for _ in range(total):
            graph.replay()
            prof.step()
    assert prof.steps_done == total and y.shape == (32, 256)
    assert prof.report().kernels
