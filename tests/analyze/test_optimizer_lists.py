"""Optimizer _foreach_* ops in traces that recorded no list shapes: the step's parameters (from AccumulateGrad
events) stand in, only where nothing makes that ambiguous (analyze/optimizer_lists.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline.analyze.optimizer_lists import _repeats
from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings


REPO = Path(__file__).resolve().parents[2]
CEIL = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12, "float16": 989e12}, launch_overhead_s=5e-6)
PARAMS = [[256, 128], [128]]


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _trace(tmp_path, *, groups=1, optimizers=1, dtypes=("float", "float"), kernel_us=4, first=(), gradient=(),
           micro_batches=1, params=PARAMS, other_thread=False):
    """One ProfilerStep: a backward recording ``params`` (``micro_batches``: that many forwards and backwards,
    gradient accumulation), then optimizer step(s) of foreach ops with empty lists (``first``: (name, kernel_us) ops
    each step runs before them, 0: no kernel; ``gradient``: (name, lists) ops with empty lists between the backward,
    on the autograd thread, and the step, as clip_grad_norm_ runs them; ``other_thread``: another thread, as a
    DataLoader's pin-memory thread, copies during each backward)."""
    events = [_x("user_annotation", "ProfilerStep#1", 0, 10_000)]
    ts = 10
    for batch in range(micro_batches):
        if batch:  # the next micro-batch's forward, on the main thread
            events.append(_x("cpu_op", "aten::mul", ts, 5, **{"Input Dims": [[2], [2]],
                                                               "Input type": ["float", "float"]}))
            ts += 10
        for i, (shape, dtype) in enumerate(zip(params, dtypes)):
            tid = 2 if gradient else 1
            if other_thread and i:
                events.append(_x("cpu_op", "aten::copy_", ts - 3, 2, tid=3,
                                 **{"Input Dims": [[2], [2], []], "Input type": ["float", "float", "Scalar"]}))
            if gradient:
                events.append(_x("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                                 ts - 1, 7, tid=tid))
            events.append(_x("cpu_op", "torch::autograd::AccumulateGrad", ts, 5, tid=tid,
                             **{"Input Dims": [shape], "Input type": [dtype], "External id": 100 + 10 * batch + i}))
            ts += 10
    ts, ext, corr = ts + 10, 1, 1
    for name, lists in gradient:
        _op_events(events, name, lists, kernel_us, ts, ext, corr)
        ts, ext, corr = ts + 30, ext + 1, corr + 1
    ts = max(ts, 100)
    for _ in range(optimizers):
        span = _x("user_annotation", "Optimizer.step#AdamW.step", ts, 4000)
        events.append(span)
        ts += 1
        ops = [(name, 1 if "foreach" in name else 0, us) for name, us in first]
        ops += [(name, lists, kernel_us) for _ in range(groups)
                for name, lists in (("aten::_foreach_mul_", 1), ("aten::_foreach_addcmul_", 3))]
        for name, lists, us in ops:
            _op_events(events, name, lists, us, ts, ext, corr)
            ts, ext, corr = ts + 30, ext + 1, corr + 1
        ts += 100
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return report_from_trace(load_trace(path), CEIL)


def _op_events(events, name, lists, kernel_us, ts, ext, corr):
    """An op taking ``lists`` tensor lists the trace left empty (none: a [2] tensor), and its kernel if any."""
    dims, types = ([[]] * lists, ["TensorList"] * lists) if lists else ([[2]], ["float"])
    events.append(_x("cpu_op", name, ts, 20, **{
        "External id": ext, "Input Dims": dims + [[]], "Input type": types + ["Scalar"],
        "Concrete Inputs": [""] * len(dims) + ["0.5"]}))
    if kernel_us:
        events.append(_x("cuda_runtime", "cudaLaunchKernel", ts + 1, 2, correlation=corr, **{"External id": ext}))
        events.append(_x("kernel", "multi_tensor_apply_kernel", ts + 5, kernel_us, pid=0, tid=7, correlation=corr,
                         device=0, stream=7))


def test_the_steps_parameters_stand_in_for_unrecorded_lists(tmp_path):
    report = _trace(tmp_path)
    elements = sum(math.prod(s) for s in PARAMS)
    mul, addcmul = report.ops
    assert mul.modeled and addcmul.modeled and report.summary.unmodeled_time_share == 0
    assert mul.flops == elements and mul.bytes == 2 * 4 * elements  # read and write the list once
    assert addcmul.flops == 2 * elements and addcmul.bytes == 4 * 4 * elements  # three lists read, one written
    assert mul.input_shapes == PARAMS


@pytest.mark.parametrize("kwargs, why", [({"groups": 2}, "2 parameter groups"),
                                         ({"optimizers": 2}, "2 optimizer steps in the profiled step"),
                                         ({"dtypes": ("float", "c10::Half")}, "parameters of several dtypes")])
def test_ambiguous_lists_stay_unmodelled_and_the_report_says_why(tmp_path, kwargs, why):
    report = _trace(tmp_path, **kwargs)
    assert report.ops and not any(op.modeled for op in report.ops), why
    assert all(op.flops == 0 and op.bytes == 0 for op in report.ops)
    for name in ("aten::_foreach_mul_", "aten::_foreach_addcmul_"):
        assert any(n.startswith(f"{name} unmodelled") and f"cannot stand in: {why}" in n
                   for n in report.summary.notes), report.summary.notes


def test_the_gradients_foreach_ops_before_the_step_are_counted_over_the_parameters_too(tmp_path):
    """clip_grad_norm_'s _foreach_norm and _foreach_mul_ (phase gradient) run over the gradients: the parameters'
    shapes stand in for their unrecorded lists as for the optimizer's."""
    report = _trace(tmp_path, gradient=[("aten::_foreach_norm", 1), ("aten::_foreach_mul_", 1)])
    elements = sum(math.prod(s) for s in PARAMS)
    norm, clip, mul, addcmul = report.ops
    assert [op.phase for op in report.ops] == ["gradient", "gradient", "optimizer", "optimizer"]
    assert norm.name == "aten::_foreach_norm" and norm.modeled and norm.input_shapes[0] == PARAMS[0]
    assert clip.modeled and clip.flops == mul.flops == elements and clip.bytes == mul.bytes
    assert report.summary.unmodeled_time_share == 0


@pytest.mark.parametrize("micro_batches", [2, 4])
@pytest.mark.parametrize("gradient", [(), [("aten::_foreach_norm", 1)]])
@pytest.mark.parametrize("params", [PARAMS, PARAMS[:1]])
def test_gradient_accumulation_counts_the_parameters_once(tmp_path, gradient, micro_batches, params):
    """Several micro-batches' backwards record each parameter once each before one optimizer step: its lists hold
    the parameters once (they were counted once per micro-batch, FLOPs and bytes 3x), one parameter as well."""
    one = _trace(tmp_path, gradient=gradient, params=params)
    many = _trace(tmp_path, gradient=gradient, micro_batches=micro_batches, params=params)
    counted = [(op.name, op.flops, op.bytes, op.input_shapes) for op in many.ops if op.name.startswith("aten::_")]
    assert counted == [(op.name, op.flops, op.bytes, op.input_shapes) for op in one.ops]
    assert all(op.modeled for op in many.ops if op.name.startswith("aten::_"))


def test_another_threads_ops_during_the_backward_do_not_split_it(tmp_path):
    """A pin-memory thread copying the next batch while the last backward runs is no forward of the training loop:
    the step's lists are still the backward's two parameters (read as the ops between them: only the first)."""
    plain = _trace(tmp_path, micro_batches=2)
    copying = _trace(tmp_path, micro_batches=2, other_thread=True)
    foreach = [(op.name, op.flops, op.bytes, op.input_shapes) for op in copying.ops if op.name.startswith("aten::_")]
    assert foreach == [(op.name, op.flops, op.bytes, op.input_shapes) for op in plain.ops
                       if op.name.startswith("aten::_")]
    assert foreach[0][3] == PARAMS


def test_a_sub_microsecond_kernel_is_still_a_kernel(tmp_path):
    mul, addcmul = _trace(tmp_path, kernel_us=0.5).ops
    assert mul.modeled and mul.flops == sum(math.prod(s) for s in PARAMS)


def test_only_foreach_optimizer_ops_with_kernels_make_up_the_sequence(tmp_path):
    """Two parameter groups stay ambiguous although each step also runs a kernel-less foreach op (a host-side step
    counter) and a non-foreach op first: neither is part of the repeated sequence."""
    report = _trace(tmp_path, groups=2, first=[("aten::_foreach_add_", 0), ("aten::add_", 4)])
    foreach = [op for op in report.ops if op.name in ("aten::_foreach_mul_", "aten::_foreach_addcmul_")]
    assert len(foreach) == 4 and not any(op.modeled for op in foreach)


def test_repeats_finds_parameter_groups():
    assert _repeats(["mul", "lerp", "mul", "addcmul"]) == 1
    assert _repeats(["mul", "lerp"] * 3) == 3
    assert _repeats([]) == 1


def test_h200_llama_training_trace_counts_its_optimizer():
    """The H200 Llama training trace (foreach AdamW, lists unrecorded): no time unmodelled, every foreach op at a
    plausible share of the DRAM roof (the whole parameter list, not more: an overcount would read above 100%)."""
    from roofline.analyze.trace_file import analyze_trace_file

    report = analyze_trace_file(REPO / "tests" / "data" / "h200" / "llama_tiny_train_fp16_b2_s256.json.gz",
                                str(REPO / "benchmarks" / "results" / "ceilings_h200.json"))
    foreach = [op for op in report.ops if op.name.startswith("aten::_foreach_")]
    assert len(foreach) == 16 and all(op.modeled for op in foreach)
    assert report.summary.unmodeled_time_share == 0
    assert all(0.2 < op.efficiency <= 1.0 for op in foreach)


def _iterations(tmp_path, params_per_iteration, optimizers=("AdamW",)):
    """A trace without ProfilerStep#N marks (profiled without a schedule): per iteration a backward recording
    ``params`` and a step of foreach ops with empty lists, of each optimizer in turn."""
    events, ts, ext = [], 0, 1
    for it, params in enumerate(params_per_iteration):
        events.append(_x("cpu_op", "aten::mul", ts, 5, **{"Input Dims": [[2], [2]], "Input type": ["float", "float"]}))
        for shape in params:
            ts += 10
            events.append(_x("cpu_op", "torch::autograd::AccumulateGrad", ts, 5,
                             **{"Input Dims": [shape], "Input type": ["float"]}))
        ts += 100
        events.append(_x("user_annotation", f"Optimizer.step#{optimizers[it % len(optimizers)]}.step", ts, 500))
        for name, lists in (("aten::_foreach_mul_", 1), ("aten::_foreach_addcmul_", 3)):
            ts += 30
            _op_events(events, name, lists, 4, ts, ext, ext)
            ext += 1
        ts += 1000
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return report_from_trace(load_trace(path), CEIL)


def test_iterations_without_step_marks_take_each_its_own_backwards_parameters(tmp_path):
    """Profiled without a schedule, a training loop's iterations are one 'step' holding several optimizer steps: its
    foreach ops were all unmodelled ('3 optimizer steps in the profiled step'), 22% of a Llama step's device time."""
    report = _iterations(tmp_path, [PARAMS] * 3)
    foreach = [op for op in report.ops if op.name.startswith("aten::_foreach")]
    elements = sum(math.prod(s) for s in PARAMS)
    assert len(foreach) == 6 and all(op.modeled for op in foreach)
    assert [op.flops for op in foreach] == [elements, 2 * elements] * 3


def test_optimizer_steps_over_different_parameters_without_step_marks_stay_unmodelled(tmp_path):
    """Two optimizers taking turns (a GAN's), each after its own backward: which iteration is which is unknown."""
    report = _iterations(tmp_path, [PARAMS, PARAMS[:1], PARAMS, PARAMS[:1]])
    foreach = [op for op in report.ops if op.name.startswith("aten::_foreach")]
    assert len(foreach) == 8 and not any(op.modeled for op in foreach)


def test_steps_of_two_optimizers_without_step_marks_stay_unmodelled_and_the_report_says_why(tmp_path):
    report = _iterations(tmp_path, [PARAMS] * 4, optimizers=("AdamW", "SGD"))
    foreach = [op for op in report.ops if op.name.startswith("aten::_foreach")]
    assert len(foreach) == 8 and not any(op.modeled for op in foreach)
    assert any(n.startswith("aten::_foreach_mul_ unmodelled") and "cannot stand in: optimizer steps of several "
               "optimizers and no ProfilerStep#N marks" in n for n in report.summary.notes), report.summary.notes
