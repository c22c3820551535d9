"""Edges of attribution and the join, on small hand-written traces: the first event of a trace (index 0) is a
target like any other, sub-microsecond kernels of an annotation still count, recorded ops without an event are
counted exactly."""

from __future__ import annotations

import json

import pytest

from roofline.analyze.attribution import attribute
from roofline.analyze.join import RecordedIndex, children_index, choose_with_recording, roots_by_step
from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

CEIL = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.8e12,
                peak_flops_per_s={"float32": 67e12}, launch_overhead_s=5e-6)


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _trace(tmp_path, events):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return load_trace(path)


def _linear_then_relu(tmp_path):
    """No ProfilerStep: aten::linear (index 0) holds aten::addmm; then aten::relu; one kernel each."""
    dims = {"Input Dims": [[8, 16], [16, 16]], "Input type": ["float", "float"]}
    return _trace(tmp_path, [
        _x("cpu_op", "aten::linear", 0, 30, **{"External id": 1}),
        _x("cpu_op", "aten::addmm", 2, 20, **{"External id": 2}, **dims),
        _x("cuda_runtime", "cudaLaunchKernel", 4, 2, correlation=21, **{"External id": 2}),
        _x("cpu_op", "aten::relu", 40, 10, **{"External id": 3, "Input Dims": [[8, 16]], "Input type": ["float"]}),
        _x("cuda_runtime", "cudaLaunchKernel", 42, 2, correlation=22, **{"External id": 3}),
        _x("kernel", "gemm", 10, 6, pid=0, tid=7, correlation=21, device=0, stream=7),
        _x("kernel", "relu_kernel", 50, 2, pid=0, tid=7, correlation=22, device=0, stream=7),
    ])


def test_the_first_event_of_a_trace_is_a_target(tmp_path):
    trace = _trace(tmp_path, [
        _x("cpu_op", "aten::add", 0, 10, **{"External id": 1}),
        _x("cuda_runtime", "cudaLaunchKernel", 2, 2, correlation=11, **{"External id": 1}),
        _x("kernel", "add_kernel", 5, 3, pid=0, tid=7, correlation=11, device=0, stream=7),
        _x("kernel", "by_external_id", 9, 3, pid=0, tid=7, device=0, stream=7, **{"External id": 1}),
    ])
    stats = attribute(trace)
    assert trace.ops[0].name == "aten::add"
    assert [k.op for k in trace.kernels] == [0, 0]
    assert stats.by_correlation == 1 and stats.by_external_id == 1 and stats.share == 1.0
    report = report_from_trace(trace, CEIL)
    assert [k.op_index for k in report.kernels] == [0, 0]
    assert report.ops[0].time_s == pytest.approx(6e-6)


def test_recorded_ops_without_an_event_are_counted_exactly(tmp_path):
    trace = _linear_then_relu(tmp_path)
    attribute(trace)
    index = RecordedIndex.build(trace, ["aten::addmm", "aten::relu", "aten::relu", "aten::softmax"])
    assert index.holds_named == {0}  # linear (index 0) holds a recorded name
    roots = roots_by_step(trace)[None]
    chosen, missing = choose_with_recording(trace, roots, children_index(trace), index, lambda op: True)
    assert missing == 2  # the second relu and the softmax found no event
    assert sorted(c.recorded for c in chosen if c.recorded is not None) == [0, 1]


def test_an_op_run_in_place_in_one_run_and_out_of_place_in_the_other_is_one_op(tmp_path):
    # the autograd engine accumulated a gradient with add under the counting pass and with add_ in the timed run
    # (sweep 3, Mamba's selective scan): unpaired, both were counted, 60 accumulations a step twice
    dims = {"Input Dims": [[2, 64], [2, 64], []], "Input type": ["float", "float", "Scalar"]}
    trace = _trace(tmp_path, [
        _x("cpu_op", "aten::add_", 0, 10, **{"External id": 1}, **dims),
        _x("cpu_op", "aten::mul", 20, 10, **{"External id": 2}, **dims),
        _x("cpu_op", "aten::add_", 40, 10, **{"External id": 3}, **dims),
    ])
    attribute(trace)
    index = RecordedIndex.build(trace, ["aten::add", "aten::mul", "aten::add"], phases=["forward"] * 3)
    chosen, missing = choose_with_recording(trace, roots_by_step(trace)[None], children_index(trace), index,
                                            lambda op: True)
    assert missing == 0
    assert [(trace.ops[c.event].name, c.recorded) for c in chosen] == [("aten::add_", 0), ("aten::mul", 1),
                                                                       ("aten::add_", 2)]


def test_an_op_the_recorder_sees_under_another_name_is_paired_with_the_timed_one(tmp_path):
    # a Python dispatch mode makes every tensor "subclass-like", so index's backward runs index_put (functional)
    # under the counting pass and _index_put_impl_ in the timed run, reshape's alias view and _reshape_alias
    # (sweep 4, timm's Swin): unpaired, the recorded op had no time and the timed one's was lost
    trace = _trace(tmp_path, [
        _x("cpu_op", "aten::_reshape_alias", 0, 5, **{"External id": 1, "Input Dims": [[256, 2], [], []]}),
        _x("cpu_op", "aten::_index_put_impl_", 10, 40, **{"External id": 2,
                                                          "Input Dims": [[49, 2], [], [256, 2], [], []]}),
    ])
    attribute(trace)
    index = RecordedIndex.build(trace, ["aten::view", "aten::index_put"], phases=["forward"] * 2,
                                shapes=[((256, 2),), ((49, 2), (256,), (256, 2))])
    chosen, missing = choose_with_recording(trace, roots_by_step(trace)[None], children_index(trace), index,
                                            lambda op: True, shapes_of=lambda op: tuple(map(tuple, op.input_dims)))
    assert missing == 0
    assert [(trace.ops[c.event].name, c.recorded) for c in chosen] == [("aten::_reshape_alias", 0),
                                                                       ("aten::_index_put_impl_", 1)]


def test_a_gathered_table_s_gradient_has_its_time(cpu_ceilings):
    """A learned table gathered by a fixed index (Swin's relative position bias), trained: the index_put of its
    backward carries its FLOPs and its measured time, and every recorded op found its event."""
    import torch

    from roofline.analyze.live import analyze_model

    class RelativeBias(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Parameter(torch.randn(49, 2))
            self.register_buffer("index", torch.randint(0, 49, (256,)))

        def forward(self, x):
            return x + self.table[self.index].reshape(16, 16, 2).permute(2, 0, 1)

    report = analyze_model(RelativeBias(), (torch.randn(2, 16, 16),), device="cpu", ceilings=cpu_ceilings,
                           backward=True, warmup=1, iters=1)
    (put,) = [op for op in report.ops if op.name == "aten::index_put"]
    assert put.phase == "backward" and put.flops == 512 and put.time_s > 0
    assert not [n for n in report.summary.notes if "found no event" in n]


def test_sub_microsecond_kernels_of_an_annotation_count(tmp_path):
    trace = _trace(tmp_path, [
        _x("user_annotation", "triton_poi_fused_add_0", 0, 10, **{"External id": 1}),
        _x("cuda_runtime", "cuLaunchKernel", 2, 1, correlation=31, **{"External id": 1}),
        _x("kernel", "triton_poi_fused_add_0", 4, 0.5, pid=0, tid=7, correlation=31, device=0, stream=7),
    ])
    report = report_from_trace(trace, CEIL)
    assert [op.name for op in report.ops] == ["triton_poi_fused_add_0"]
    assert report.ops[0].time_s == pytest.approx(0.5e-6)


def test_nested_ops_in_a_trace_without_steps_share_out_the_kernels(tmp_path):
    report = report_from_trace(_linear_then_relu(tmp_path), CEIL)
    assert sum(op.time_s for op in report.ops) == pytest.approx(8e-6)
    assert {op.name: op.time_s for op in report.ops}["aten::relu"] == pytest.approx(2e-6)


def test_an_unmodeled_op_with_children_keeps_its_own_sub_microsecond_kernel(tmp_path):
    trace = _trace(tmp_path, [
        _x("cpu_op", "aten::no_formula_for_this", 0, 30, **{"External id": 1}),
        _x("cuda_runtime", "cudaLaunchKernel", 2, 1, correlation=41, **{"External id": 1}),
        _x("cpu_op", "aten::relu", 10, 10, **{"External id": 2, "Input Dims": [[8, 16]], "Input type": ["float"]}),
        _x("cuda_runtime", "cudaLaunchKernel", 12, 1, correlation=42, **{"External id": 2}),
        _x("kernel", "own_kernel", 5, 0.5, pid=0, tid=7, correlation=41, device=0, stream=7),
        _x("kernel", "relu_kernel", 15, 2, pid=0, tid=7, correlation=42, device=0, stream=7),
    ])
    report = report_from_trace(trace, CEIL)
    times = {op.name: op.time_s for op in report.ops}
    assert times == pytest.approx({"aten::no_formula_for_this": 0.5e-6, "aten::relu": 2e-6})


def test_an_empty_report_has_no_unmodeled_share():
    from roofline.analyze.roofline import summarize

    assert summarize([]).unmodeled_time_share == 0.0


def test_a_cpu_op_without_a_formula_keeps_its_own_time_beside_its_children(tmp_path):
    """CPU trace: an op without a formula (found with quantized::linear_dynamic, which a trace now counts from its
    output allocation; here a packed embedding bag) runs its work itself beside two small children; its 90 us
    outside them were lost (the report showed 0% unmodelled). A composite op with a formula (aten::linear over
    aten::addmm) keeps its own 4 us too, a row with no FLOPs or bytes beside its counted child (its dispatch): on a
    CPU that is host time the step spent in it."""
    f = {"Input Dims": [[8, 16]], "Input type": ["float"]}
    trace = _trace(tmp_path, [
        _x("cpu_op", "quantized::embedding_bag_byte_rowwise_offsets", 0, 100, **f),
        _x("cpu_op", "aten::empty", 5, 4, **{"Input Dims": [[]], "Input type": [""]}),
        _x("cpu_op", "aten::empty_like", 50, 6, **f),
        _x("cpu_op", "aten::linear", 200, 30, **{"Input Dims": [[8, 16], [16, 16], [16]],
                                                "Input type": ["float", "float", "float"]}),
        _x("cpu_op", "aten::addmm", 202, 26, **{"Input Dims": [[16], [8, 16], [16, 16]],
                                               "Input type": ["float", "float", "float"]}),
    ])
    cpu = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=3e10,
                   peak_flops_per_s={"float32": 2e11}, launch_overhead_s=4e-6)
    report = report_from_trace(trace, cpu)
    times = {(op.name, op.modeled): op.time_s for op in report.ops}
    assert times[("quantized::embedding_bag_byte_rowwise_offsets", False)] == pytest.approx(90e-6)
    assert times[("aten::linear", True)] == pytest.approx(4e-6)
    assert times[("aten::addmm", True)] == pytest.approx(26e-6)
    assert ("aten::linear", False) not in times
    assert report.summary.total_time_s == pytest.approx(130e-6)  # both top-level events, whole
    assert report.summary.unmodeled_time_share == pytest.approx(90 / 130)


def test_a_compiled_graph_on_a_cpu_keeps_its_inductor_kernels_time(tmp_path):
    """torch.compile on a CPU: Inductor's C++ kernels have no events; their time is the graph call's own (here 70 of
    100 us beside an extern addmm), and it was lost: a compiled BERT's report summed only the extern calls."""
    addmm = {"Input Dims": [[16], [8, 16], [16, 16]], "Input type": ["float", "float", "float"]}
    trace = _trace(tmp_path, [
        _x("cpu_op", "TorchDynamo Cache Lookup", 0, 5),  # guard evaluation: host work, no shapes recorded
        _x("user_annotation", "## Call CompiledFxGraph fabc123", 10, 100),
        _x("cpu_op", "aten::addmm", 20, 30, **addmm),
        _x("user_annotation", "my_block", 200, 50),
        _x("cpu_op", "aten::addmm", 210, 30, **addmm),
    ])
    cpu = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=3e10,
                   peak_flops_per_s={"float32": 2e11}, launch_overhead_s=4e-6)
    report = report_from_trace(trace, cpu)
    rows = sorted((op.name, op.modeled, round(op.time_s * 1e6)) for op in report.ops)
    assert rows == [("## Call CompiledFxGraph fabc123", False, 70), ("TorchDynamo Cache Lookup", True, 5),
                    ("aten::addmm", True, 30), ("aten::addmm", True, 30)], "a user's annotation keeps no own time"


def test_a_vmapped_op_in_a_trace_is_counted_at_its_batch_shapes(tmp_path):
    # torch.func.vmap records each op at the per-sample shapes with the batched run nested inside it; the outer
    # event was counted, one sample's FLOPs (sweep 3: jacrev in a forward, 0.70x what analyze counts)
    import torch

    w = torch.randn(32, 4)
    x = torch.randn(8, 4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.func.vmap(lambda xi: (w @ xi).tanh())(x)
    path = tmp_path / "vmap.json"
    prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(path), CEIL)
    flops = {op.name: op.flops * op.count for op in report.ops if op.flops}
    assert flops.get("aten::mv") is None and flops["aten::mm"] == 2 * 8 * 32 * 4  # the batching rule's mm, not mv
    assert flops["aten::tanh"] == 4 * 8 * 32  # 4 FLOPs an element (count/elementwise.py), all 8 samples


def test_a_vmapped_op_in_a_live_analyze_takes_its_batched_run_time_and_flops(cpu_ceilings, one_thread):
    # the join with the counting pass took vmap's outer per-sample mm for a recorded one: the bmm's time went to a
    # row of the other vmap's mm, the bmm kept 0 s, and the per-sample mm of [8, 16] @ [16, 32] was counted besides
    # the batch's [32, 16] @ [16, 32] (mm 1.25x FlopCounterMode's)
    import torch

    from roofline.analyze.live import analyze_model

    class Model(torch.nn.Module):
        def forward(self, a, b, x, w):  # vmap's mm runs bmm; a matmul by a shared weight runs one mm of the batch
            return torch.func.vmap(torch.mm)(a, b).sum() + torch.func.vmap(lambda xi: xi @ w)(x).sum()

    inputs = (torch.randn(4, 64, 16), torch.randn(4, 16, 32), torch.randn(4, 8, 16), torch.randn(16, 32))
    report = analyze_model(Model(), inputs, device="cpu", ceilings=cpu_ceilings, warmup=1, iters=1)
    products = sorted((op.name, op.input_shapes, op.flops) for op in report.ops if op.flops and "mm" in op.name)
    assert products == [("aten::bmm", [[4, 64, 16], [4, 16, 32]], 2 * 4 * 64 * 16 * 32),
                        ("aten::mm", [[32, 16], [16, 32]], 2 * 32 * 16 * 32)]
    assert all(op.time_s > 0 for op in report.ops if op.flops and "mm" in op.name)


def _bf16_autocast_report(tmp_path, run):
    """The report of a CPU profiler trace of ``run()`` under bf16 autocast."""
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            run()
    path = tmp_path / "autocast.json"
    prof.export_chrome_trace(str(path))
    return report_from_trace(load_trace(path), CEIL)


def test_an_autocast_op_is_not_mistaken_for_a_vmapped_one(tmp_path):
    # autocast records conv2d inside conv2d at the same shapes, like vmap's re-dispatch, and oneDNN's contiguous
    # copy of the weight (copy_(w, w)) below outweighs input + weight: the convolution was judged batched, its
    # mkldnn_convolution child counted instead and the copy left as a row of its own (sweep 4, timm's ConvNeXt
    # downsampling under bf16 autocast)
    import torch

    conv = torch.nn.Conv2d(80, 160, 2, stride=2)
    x = torch.randn(8, 80, 8, 8).to(memory_format=torch.channels_last)
    report = _bf16_autocast_report(tmp_path, lambda: conv(x))
    assert [(op.name, op.flops) for op in report.ops if op.flops] == [("aten::convolution", 2 * 8 * 160 * 16 * 320)]
    assert not [op for op in report.ops if op.name in ("aten::copy_", "aten::mkldnn_convolution")]


def test_recorded_ops_that_do_no_work_are_told_apart_from_missing_work(cpu_ceilings):
    """GroupNorm's saved statistics are detached under the counting pass's recorder and not in the timed run: a
    diffusers UNet's note said '112 recorded op(s) found no event' for 100 detaches and 12 views, the same words
    as for work whose time was lost. It now says they do no work, and names ops with work."""
    import torch

    from roofline.analyze.live import analyze_model
    from roofline.analyze.pipeline import _no_event_note
    from roofline.report import OpRecord

    model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3), torch.nn.GroupNorm(2, 8))
    report = analyze_model(model, (torch.randn(2, 4, 8, 8),), device="cpu", ceilings=cpu_ceilings, backward=True,
                           warmup=1, iters=1)
    notes = [n for n in report.summary.notes if "found no event" in n]
    assert notes == ["4 recorded op(s) that do no work (views, detach) found no event in the timed trace"]
    detach = OpRecord(name="aten::detach", flops=0.0, bytes=0.0, modeled=True)
    put = OpRecord(name="aten::index_put", flops=512.0, bytes=4096.0, modeled=True)
    assert _no_event_note([detach, put, put]) == ("2 recorded op(s) found no event in the timed trace (time counted "
                                                  "as 0): index_put x2; and 1 that do no work (views, detach)")


def test_an_autocast_cat_of_a_tensor_list_is_one_row(tmp_path):
    # autocast records cat inside cat with the same tensor-list input, whose recorded dims are a list of shapes: the
    # join's vmap check hashed them and raised (TypeError: unhashable type: 'list'; gpu_sweep batch 2, a UNet up
    # block's skip concat under bf16 autocast), and, once hashable, read the list as 0 elements, so that the cast
    # of the fp32 operand below outweighed it and the cat was judged batched: its cast became a row of its own
    import torch

    up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
    x, skip = torch.randn(2, 8, 4, 4), torch.randn(2, 4, 8, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.cat([up(x), skip], dim=1)
    path = tmp_path / "cat.json"
    prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(path), CEIL)
    names = [op.name for op in report.ops]
    assert names.count("aten::cat") == 1 and names.count("aten::_to_copy") == 3  # conv_transpose2d's own casts


def test_an_autocast_linear_s_bias_copy_is_not_taken_for_a_batched_run(tmp_path):
    # CPU addmm under bf16 autocast copies its bias, broadcast to the result's shape, into the result before the
    # GEMM (copy_ of [32, 256] below addmm of [256] + [32, 64] @ [64, 256]), under autocast's linear-in-linear: the
    # addmm was judged vmapped, its FLOPs dropped and the copy counted instead (a training step under CPU autocast
    # counted 0.69x FlopCounterMode's FLOPs, sweep 6)
    import torch

    lin, x = torch.nn.Linear(64, 256), torch.randn(32, 64)
    report = _bf16_autocast_report(tmp_path, lambda: lin(x))
    assert [(op.name, op.flops) for op in report.ops if op.flops] == [("aten::addmm", 2 * 32 * 64 * 256)]
    assert "aten::copy_" not in [op.name for op in report.ops]


def test_a_scripted_module_s_backward_node_is_an_autograd_frame(tmp_path):
    # TorchScript's backward runs in a node named "torch::jit::(anonymous namespace)::DifferentiableGraphBackward":
    # not taken for an autograd frame, its own host time was a row of unmodelled work (4% of a scripted MLP's
    # forward + backward, sweep 6)
    import torch

    net = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)))
    x = torch.randn(8, 16)
    for _ in range(3):  # the profiling executor differentiates the graph after its first runs
        net(x).mean().backward()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        net(x).mean().backward()
    path = tmp_path / "scripted.json"
    prof.export_chrome_trace(str(path))
    names = {e["name"] for e in json.loads(path.read_text())["traceEvents"]}
    assert any(n.endswith("DifferentiableGraphBackward") for n in names)
    report = report_from_trace(load_trace(path), CEIL)
    assert [op.name for op in report.ops if not op.modeled] == []
    assert sum(op.flops for op in report.ops if op.name == "aten::mm") == 2 * 8 * 32 * 4 + 2 * 8 * 16 * 32 + 2 * 8 * 32 * 4


def test_recorded_ops_fused_into_a_compiled_graph_are_said_to_be_in_its_time():
    """A compiled model's counting pass records gelu and layer norm, which Inductor fused into its own kernels: no
    event of their own in the timed trace, their time in the graph call's own row. The note said only "no event"."""
    from roofline.analyze.pipeline import _no_event_note
    from roofline.report import OpRecord

    unmatched = [OpRecord("aten::gelu", flops=8.0, bytes=16.0), OpRecord("aten::native_layer_norm", bytes=32.0),
                 OpRecord("aten::detach")]
    plain = _no_event_note(unmatched)
    assert plain.startswith("2 recorded op(s) found no event") and "gelu x1" in plain and "compiled" not in plain
    compiled = _no_event_note(unmatched, compiled_graph_s=77.5e-6)
    assert compiled.startswith(plain) and "torch.compile" in compiled and "## Call CompiledFxGraph" in compiled
    assert "77.5 us" in compiled
