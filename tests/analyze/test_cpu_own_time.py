"""On a CPU trace the op table's total is host time: an op that gives way to its children (a composite aten op, one
with no formula) keeps its own time outside them as a row, so the table sums to the top-level ops' host time. A
composite op's or a wrapper's own time has no FLOPs or bytes (its dispatch: bound 'launch'); that of an op without
a formula whose children only view or allocate is unmodelled (work it runs itself). Left out, torch 2.7.1's
TransformerEncoder fast path lost 1.0 of its 2.6 ms (aten::_native_multi_head_attention runs its own C++ between
its mm, bmm and softmax). The autograd engine's frames and user annotations are not ops: their own time
(bookkeeping, Python) stays outside the table, as the note on host time outside ops says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analyze.join import children_index, roots_by_step
from roofline.analyze.pipeline import report_from_trace
from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import Trace, is_autograd_frame
from roofline.report import Ceilings

DATA = Path(__file__).resolve().parents[1] / "data" / "devtraces"
CPU = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=3e10,
               peak_flops_per_s={"float32": 2e11}, launch_overhead_s=4e-6)
GPU = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
               peak_flops_per_s={"float32": 67e12}, launch_overhead_s=5e-6)


def _in_report(trace: Trace, step: int | None) -> bool:
    """Whether events of ``step`` are in a report: with ProfilerStep annotations, only those of a step."""
    return step is not None or not trace.steps


def _top_level_us(trace: Trace) -> float:
    return sum(trace.ops[i].dur_us for step, roots in roots_by_step(trace).items() if _in_report(trace, step)
               for i in roots)


def _outside_ops_us(trace: Trace) -> float:
    """Own host time (outside their children) of the events that are not ops: engine frames and annotations (the
    steps' own annotations aside: their events are the top-level ones)."""
    children = children_index(trace)
    return sum(op.dur_us - sum(trace.ops[k].dur_us for k in children.get(op.index, [])) for op in trace.ops
               if (op.is_annotation or is_autograd_frame(op.name)) and _in_report(trace, op.step)
               and not op.name.startswith("ProfilerStep#"))


def _x(cat, name, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _shapes(*dims):
    return {"Input Dims": [list(d) for d in dims], "Input type": ["float"] * len(dims)}


def _load(tmp_path, events) -> Trace:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return load_trace(path)


def test_ops_that_give_way_to_their_children_keep_their_own_host_time(tmp_path):
    """batch_norm -> _batch_norm_impl_index (both composite) -> native_batch_norm; an aten op without a formula over
    an allocation (its work is its own: unmodelled); one over an add (a wrapper: its dispatch); an engine frame over
    a backward mm; a user annotation over an add."""
    x = (8, 16, 4, 4)
    trace = _load(tmp_path, [
        _x("cpu_op", "aten::batch_norm", 0, 50, **_shapes(x, (16,), (16,))),
        _x("cpu_op", "aten::_batch_norm_impl_index", 5, 40, **_shapes(x, (16,), (16,))),
        _x("cpu_op", "aten::native_batch_norm", 10, 30, **_shapes(x, (16,), (16,), (16,), (16,))),
        _x("cpu_op", "aten::no_formula_for_this", 100, 40, **_shapes((8, 16))),
        _x("cpu_op", "aten::empty", 110, 10, **{"Input Dims": [[]], "Input type": [""]}),
        _x("cpu_op", "aten::a_wrapper_without_a_formula", 150, 20, **_shapes((8, 16))),
        _x("cpu_op", "aten::add", 155, 10, **_shapes((8, 16), (8, 16))),
        _x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 200, 40),
        _x("cpu_op", "MmBackward0", 205, 30),
        _x("cpu_op", "aten::mm", 210, 20, **_shapes((8, 16), (16, 16))),
        _x("user_annotation", "my_block", 300, 50),
        _x("cpu_op", "aten::add", 310, 10, **_shapes((8, 16), (8, 16))),
    ])
    report = report_from_trace(trace, CPU)
    rows = sorted((op.name, op.modeled, round(op.time_s * 1e6)) for op in report.ops)
    assert rows == [("aten::_batch_norm_impl_index", True, 10), ("aten::a_wrapper_without_a_formula", True, 10),
                    ("aten::add", True, 10), ("aten::add", True, 10), ("aten::batch_norm", True, 10),
                    ("aten::empty", True, 10), ("aten::mm", True, 20), ("aten::native_batch_norm", True, 30),
                    ("aten::no_formula_for_this", False, 30)]
    wrappers = [op for op in report.ops if op.name in ("aten::batch_norm", "aten::_batch_norm_impl_index",
                                                       "aten::a_wrapper_without_a_formula")]
    assert [(op.flops, op.bytes, op.bound) for op in wrappers] == [(0.0, 0.0, "launch")] * 3
    # 200 us of top-level events less the frames' 20 us and the annotation's 40 us of their own
    assert report.summary.total_time_s == pytest.approx(140e-6)
    assert report.summary.total_time_s * 1e6 == pytest.approx(_top_level_us(trace) - _outside_ops_us(trace))
    assert ("4 row(s) hold host time an op spent outside its children, which are rows of their own "
            "(aten::no_formula_for_this x1, aten::batch_norm x1, aten::_batch_norm_impl_index x1, "
            "aten::a_wrapper_without_a_formula x1: 42.9% of the op time)") in " ".join(report.summary.notes)
    assert report.summary.unmodeled_time_share == pytest.approx(30 / 140)


def test_where_of_a_mask_gives_way_to_its_nonzero(tmp_path):
    """Sweep 7 (a hand-written MoE's torch.where(chosen == e)): where(cond) runs as nonzero_numpy, which runs as
    nonzero and an unbind. A trace has no output of nonzero to size it, so its row is unmodelled; the two wrappers'
    own time is their dispatch into it (bound 'launch'), not work of their own left unmodelled."""
    mask = {"Input Dims": [[128, 2]], "Input type": ["c10::bool"]}
    trace = _load(tmp_path, [
        _x("cpu_op", "aten::where", 0, 40, **mask),
        _x("cpu_op", "aten::nonzero_numpy", 5, 30, **mask),
        _x("cpu_op", "aten::nonzero", 8, 15, **mask),
        _x("cpu_op", "aten::unbind", 25, 8, **{"Input Dims": [[56, 2], []], "Input type": ["long int", "Scalar"]}),
    ])
    rows = sorted((op.name, op.modeled, op.bound, round(op.time_s * 1e6)) for op in report_from_trace(trace, CPU).ops)
    assert rows == [("aten::nonzero", False, "unmodeled", 15), ("aten::nonzero_numpy", True, "launch", 7),
                    ("aten::unbind", True, "launch", 8), ("aten::where", True, "launch", 10)]


def test_a_gpu_trace_keeps_only_the_kernels_an_op_launched_itself(tmp_path):
    """On a GPU an op's time is its kernels': a wrapper that launched none adds no row (host time is not op time)."""
    from roofline.analyze.attribution import attribute

    dims = _shapes((16,), (8, 16), (16, 16))
    events = [
        _x("cpu_op", "aten::linear", 0, 30, **{"External id": 1}, **_shapes((8, 16), (16, 16), (16,))),
        _x("cpu_op", "aten::addmm", 2, 20, **{"External id": 2}, **dims),
        _x("cuda_runtime", "cudaLaunchKernel", 4, 2, correlation=21, **{"External id": 2}),
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 6,
         "args": {"correlation": 21, "device": 0, "stream": 7}},
    ]
    trace = _load(tmp_path, events)
    attribute(trace)
    report = report_from_trace(trace, GPU)
    assert [(op.name, op.time_s) for op in report.ops] == [("aten::addmm", pytest.approx(6e-6))]


@pytest.mark.parametrize("name", ["torch2.7.1_cpu_transformer_eval.json", "torch2.4.1_cpu_conv_shapes_stack.json",
                                  "torch2.1.2_cpu_lstm.json", "torch2.1.2_cpu_mlp_memory_flops.json",
                                  "torch2.7.1_cpu_mlp_train_rank0.pt.trace.json.gz"])
def test_a_real_cpu_traces_table_sums_to_its_top_level_ops_host_time(name):
    """The table's total is the top-level events' host time, less the own time of the engine's frames and the
    annotations (none in the forward-only traces)."""
    trace = load_trace(DATA / name)
    report = analyze_trace_file(DATA / name)
    assert report.summary.total_time_s * 1e6 == pytest.approx(_top_level_us(trace) - _outside_ops_us(trace))


def test_the_fused_attention_of_torch_27s_transformer_fast_path_keeps_its_own_time():
    """aten::_native_multi_head_attention gives way to its mm, bmm and softmax; the time between them is its own."""
    trace = load_trace(DATA / "torch2.7.1_cpu_transformer_eval.json")
    children = children_index(trace)
    own = [op.dur_us - sum(trace.ops[k].dur_us for k in children[op.index]) for op in trace.ops
           if op.name == "aten::_native_multi_head_attention"]
    report = analyze_trace_file(DATA / "torch2.7.1_cpu_transformer_eval.json")
    rows = [op for op in report.ops if op.name == "aten::_native_multi_head_attention"]
    assert [op.time_s * 1e6 for op in rows] == pytest.approx(own) and len(own) == 2
    # the first call's own time, 23x the second's, is set-up on first use, not dispatch (test_first_calls.py)
    assert [(op.modeled, op.flops, op.bytes, op.bound) for op in rows] == [(False, 0.0, 0.0, "unmodeled"),
                                                                          (True, 0.0, 0.0, "launch")]
    assert report.summary.total_time_s * 1e6 == pytest.approx(_top_level_us(trace))


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_a_training_step_recorded_here_sums_to_its_ops_host_time(tmp_path):
    """A fresh trace of this torch: a TransformerEncoder's forward, backward and SGD step, two profiled steps."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    src = torch.randn(2, 8, 32)
    path = tmp_path / "train.json"

    def step():
        opt.zero_grad()
        model(src).sum().backward()
        opt.step()

    step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=schedule(wait=0, warmup=1, active=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(3):
            step()
            prof.step()
    trace = load_trace(path)
    report = analyze_trace_file(path)
    assert len(trace.steps) == 2 and any(op.name == "aten::linear" and op.bound == "launch" for op in report.ops)
    assert report.summary.total_time_s * 1e6 == pytest.approx(_top_level_us(trace) - _outside_ops_us(trace))


def test_an_ops_own_time_over_uncounted_children_stays_unmodelled(tmp_path):
    """Children the trace cannot count (no shapes recorded, an A100 run's CUPTI-range trace in the public corpus)
    tell nothing about whether the op's own time is dispatch: its row is unmodelled, never a 'launch' row (which
    made 64% of that trace's host time look like per-op overhead)."""
    events = [_x("cpu_op", "aten::cudnn_convolution", 0, 100), _x("cpu_op", "aten::empty", 5, 10),
              _x("cpu_op", "aten::resize_", 20, 10)]
    report = report_from_trace(_load(tmp_path, events), CPU)
    own = [op for op in report.ops if op.name == "aten::cudnn_convolution"]
    assert len(own) == 1 and not own[0].modeled and own[0].bound == "unmodeled"
    assert own[0].time_s == pytest.approx(80e-6)
    assert not [op for op in report.ops if op.bound == "launch"]


def _addmm_recording():
    from roofline.capture.recording import OpRecording, RecordedOp, Tf32Flags
    from roofline.count import count_op
    from roofline.count.meta import TensorMeta as T

    args = [T((16,), "float32"), T((4, 8), "float32"), T((8, 16), "float32")]
    out = [T((4, 16), "float32")]
    return OpRecording([RecordedOp("aten::addmm", args, out, count_op("aten::addmm", args, None, out), "float32",
                                   "fc", "forward", "m.py:1")], Tf32Flags())


def test_a_live_join_keeps_the_own_time_of_an_op_the_counting_pass_did_not_see(tmp_path):
    """The counting pass records below autograd (aten::addmm, not aten::linear): the linear above the recorded
    addmm is no op of the recording, and its host time outside the addmm was lost. It is a row of its own as on
    the trace path (its dispatch: 'launch'), from the last profiled step, beside the addmm's median over them."""
    events = []
    for s, (linear, addmm) in enumerate([(20, 10), (30, 14), (26, 16)]):
        o = 100 * s
        events += [_x("user_annotation", f"ProfilerStep#{s + 1}", o, 100),
                   _x("cpu_op", "aten::linear", o + 5, linear, **_shapes((4, 8), (16, 8), (16,))),
                   _x("cpu_op", "aten::addmm", o + 7, addmm, **_shapes((16,), (4, 8), (8, 16)))]
    trace = _load(tmp_path, events)
    report = report_from_trace(trace, CPU, _addmm_recording())
    assert [(op.name, round(op.time_s * 1e6)) for op in report.ops] == [("aten::addmm", 14), ("aten::linear", 10)]
    gemm, own = report.ops
    assert gemm.flops == 2 * 4 * 8 * 16 and gemm.module == "fc"
    assert (own.flops, own.bytes, own.modeled, own.bound) == (0.0, 0.0, True, "launch")
    assert (own.module, own.source) == ("fc", "m.py:1")  # the recorded op's below it: the trace names none
    assert "1 row(s) hold host time an op spent outside its children" in " ".join(report.summary.notes)


def test_a_live_join_on_a_gpu_keeps_only_device_time(tmp_path):
    """On a GPU the table is kernel time: the linear's host time outside its addmm adds no row."""
    from roofline.analyze.attribution import attribute

    events = [_x("user_annotation", "ProfilerStep#1", 0, 100),
              _x("cpu_op", "aten::linear", 5, 30, **{"External id": 1}, **_shapes((4, 8), (16, 8), (16,))),
              _x("cpu_op", "aten::addmm", 7, 20, **{"External id": 2}, **_shapes((16,), (4, 8), (8, 16))),
              _x("cuda_runtime", "cudaLaunchKernel", 9, 2, correlation=21, **{"External id": 2}),
              {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 12, "dur": 6,
               "args": {"correlation": 21, "device": 0, "stream": 7}}]
    trace = _load(tmp_path, events)
    attribute(trace)
    report = report_from_trace(trace, GPU, _addmm_recording())
    assert [(op.name, op.time_s) for op in report.ops] == [("aten::addmm", pytest.approx(6e-6))]


@pytest.mark.filterwarnings("ignore:Warning. Profiler clears events")
def test_roofline_analyze_of_a_training_step_sums_to_its_ops_host_time(tmp_path, cpu_ceilings, one_thread):
    """`roofline analyze` (a counting pass joined to the trace) of a TransformerEncoder's forward and backward: with
    one profiled step the table holds the step's top-level ops' host time, as the trace path's does, less the
    engine's frames' own time; the composite ops' own time (linear, matmul, dropout, reshape over the recorded
    addmm, bmm, ...) adds no FLOPs to the recording's."""
    import torch

    from roofline.analyze.live import analyze_model

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    path = tmp_path / "trace.json"
    report = analyze_model(model, (torch.randn(2, 8, 32),), device="cpu", ceilings=cpu_ceilings, backward=True,
                           warmup=1, iters=1, trace_path=path)
    trace = load_trace(path)
    assert len(trace.steps) == 1
    assert report.summary.total_time_s * 1e6 == pytest.approx(_top_level_us(trace) - _outside_ops_us(trace))
    linears = [op for op in report.ops if op.name == "aten::linear"]
    assert linears and all((op.flops, op.bytes, op.bound) == (0.0, 0.0, "launch") for op in linears)
    assert all(op.module.startswith("layers.0.") for op in linears)
    recorded = [op for op in report.ops if op.name in ("aten::addmm", "aten::mm", "aten::bmm")]
    assert recorded and all(op.flops > 0 for op in recorded)
