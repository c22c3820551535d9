"""load_trace field by field on a small hand-written trace: where each value comes from (args before pid/tid), how
the op tree, steps, modules and source lines are rebuilt, which frames count as user code, and what is skipped.
The real H200 traces cannot pin these: their kernels' tid is their stream, their ops nest the usual way."""

from __future__ import annotations

import json

import pytest

from roofline.capture.kineto import NO_STEPS_WARNING, _classify_frame, load_trace
from roofline.errors import RooflineError


def x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _write(tmp_path, events, **meta):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, **meta, "traceEvents": events}))
    return path


EVENTS = [
    x("user_annotation", "ProfilerStep#3", 0.0, 100.0),
    x("user_annotation", "ProfilerStep#4", 100.0, 50.0),
    x("python_function", "train.py(40): step", 1.0, 98.0),
    x("python_function", "nn.Module: Net_0", 2.0, 90.0),
    x("python_function", "nn.Module: Linear_1", 3.0, 30.0),
    x("python_function", "model.py(12): forward", 3.2, 29.8),
    x("python_function", "site-packages/torch/nn/modules/linear.py(125): forward", 3.5, 20.0),
    # equal start: the longer op is the parent
    x("cpu_op", "aten::linear", 4.0, 20.0, **{"External id": 10, "Sequence number": 7,
                                               "Input Dims": [[4, 8], [16, 8], [16]],
                                               "Input type": ["float", "float", "float"],
                                               "Input Strides": [[8, 1], [8, 1], [1]],
                                               "Concrete Inputs": ["", "", ""]}),
    x("cpu_op", "aten::t", 4.0, 2.0, **{"External id": 11}),
    x("cpu_op", "aten::addmm", 7.0, 10.0, **{"External id": 12, "Sequence number": 8,
                                              "Input Dims": [[16], [4, 8], [8, 16]]}),
    x("cuda_runtime", "cudaLaunchKernel", 8.0, 3.0, correlation=70, **{"External id": 12}),
    x("cpu_op", "aten::relu", 40.0, 5.0, **{"External id": 13}),
    x("cpu_op", "aten::zeros", "60", 1, **{"External id": 14}),  # string and int times are numbers too
    x("cpu_op", "aten::bad", "soon", 1.0),
    x("cpu_op", "aten::negative", 61.0, -1.0),
    x("cpu_op", "aten::empty", 62.0, 1.0),  # read after the two bad events
    x("cpu_op", "AddmmBackward0", 101.0, 10.0, tid=2, **{"Sequence number": 8}),
    x("cpu_op", "aten::mm", 102.0, 4.0, tid=2),
    x("cpu_op", "Optimizer.step#SGD.step", 120.0, 20.0, **{"External id": 20}),
    x("cpu_op", "aten::add_", 121.0, 2.0, **{"External id": 21}),
    x("cpu_op", "aten::after", 200.0, 1.0),  # after the last step
    x("cpu_op", "aten::at_end", 150.0, 1.0),  # starts as the last step ends: outside it
    x("hip_runtime", "hipLaunchKernel", 122.0, 1.0, correlation=71, **{"External id": 21}),
    x("kernel", "gemm", 20.0, 9.5, pid=0, tid=7, correlation=70, device=3, stream=13, **{"External id": 12}),
    x("Kernel", "add_kernel", 130.0, 1.0, pid=5, tid=9, correlation=71),
    x("Memcpy", "Memcpy HtoD", 31.0, 1.0, pid=0, tid=7, correlation=72, bytes=128),
    x("cuda_sync", "Stream Sync", 50.0, 2.0, pid=0, tid=7, correlation=73, stream=5, cuda_sync_kind="Event Sync",
      **{"External id": 13}),
    x("cuda_sync", "Context Sync", 55.0, 1.0, pid=0, tid=8),
    x("my_backend_thing", "other", 1.0, 1.0),
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 41.0,
     "args": {"Bytes": 512, "Addr": 9, "Total Allocated": 1024, "Total Reserved": 2048, "Device Type": 1,
              "Device Id": 3}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 42.0, "args": {}},
]
DEVICE = {"deviceProperties": [{"name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4}]}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return load_trace(_write(tmp_path_factory.mktemp("k"), EVENTS, **DEVICE))


def _op(trace, name):
    (op,) = [o for o in trace.ops if o.name == name]
    return op


def test_ops_in_time_order_longest_first_with_their_fields(trace):
    names = [o.name for o in trace.ops]
    assert names[:4] == ["ProfilerStep#3", "aten::linear", "aten::t", "aten::addmm"]
    assert [o.index for o in trace.ops] == list(range(len(trace.ops)))
    lin = _op(trace, "aten::linear")
    assert (lin.ts_us, lin.dur_us, lin.pid, lin.tid, lin.external_id, lin.sequence_number) == (4.0, 20.0, 1, 1, 10, 7)
    assert lin.input_dims == [[4, 8], [16, 8], [16]] and lin.input_types == ["float"] * 3
    assert lin.input_strides == [[8, 1], [8, 1], [1]] and lin.concrete_inputs == ["", "", ""]
    t = _op(trace, "aten::t")
    assert t.input_dims is None and t.external_id == 11 and t.sequence_number is None
    zeros = _op(trace, "aten::zeros")
    assert (zeros.ts_us, zeros.dur_us) == (60.0, 1.0)
    assert "aten::empty" in names and "aten::bad" not in names and "aten::negative" not in names
    assert trace.skipped_events == 2 + 1  # two bad ts/dur, one [memory] event without Bytes
    assert trace.has_shapes


def test_op_tree_depth_and_flags(trace):
    step, lin, t, addmm = (_op(trace, n) for n in ("ProfilerStep#3", "aten::linear", "aten::t", "aten::addmm"))
    assert step.parent == -1 and step.depth == 0 and step.is_annotation
    assert lin.parent == step.index and lin.depth == 1 and not lin.is_annotation
    assert t.parent == lin.index and t.depth == 2
    assert addmm.parent == lin.index and addmm.depth == 2  # aten::t ended before: a sibling, not the parent
    assert _op(trace, "aten::relu").parent == step.index
    bwd, mm = _op(trace, "AddmmBackward0"), _op(trace, "aten::mm")
    assert bwd.is_backward and mm.is_backward and mm.parent == bwd.index and bwd.parent == -1
    opt, add = _op(trace, "Optimizer.step#SGD.step"), _op(trace, "aten::add_")
    assert opt.is_optimizer and add.is_optimizer and not add.is_backward and add.parent == opt.index
    assert not lin.is_backward and not lin.is_optimizer
    # a step boundary nests under nothing, even inside a span still open
    assert _op(trace, "ProfilerStep#4").parent == -1


def test_steps_hold_the_ops_inside_their_span_only(trace):
    assert [(s.number, s.ts_us, s.dur_us) for s in trace.steps] == [(3, 0.0, 100.0), (4, 100.0, 50.0)]
    assert _op(trace, "aten::relu").step == 0 and _op(trace, "aten::add_").step == 1
    assert _op(trace, "AddmmBackward0").step == 1
    assert _op(trace, "aten::after").step is None and _op(trace, "aten::at_end").step is None


def test_modules_and_source_lines_from_enclosing_frames(trace):
    lin, relu = _op(trace, "aten::linear"), _op(trace, "aten::relu")
    assert lin.module == "Net_0.Linear_1" and lin.source == "model.py:12"  # the torch frame is library code
    assert relu.module == "Net_0" and relu.source == "train.py:40"  # Linear_1 and model.py's frame ended at 33
    assert _op(trace, "aten::after").module is None and _op(trace, "aten::after").source is None
    assert trace.has_stack and trace.has_modules
    # backward ops borrow the module of the forward op with their sequence number; children that of the parent
    bwd, mm = _op(trace, "AddmmBackward0"), _op(trace, "aten::mm")
    assert bwd.module == "Net_0.Linear_1" and bwd.source == "model.py:12"
    assert mm.module == "Net_0.Linear_1"


def test_kernels_take_device_and_stream_from_args_else_pid_and_tid(trace):
    gemm, add, copy = (next(k for k in trace.kernels if k.name == n) for n in ("gemm", "add_kernel", "Memcpy HtoD"))
    assert [k.name for k in trace.kernels] == ["gemm", "Memcpy HtoD", "add_kernel"]
    assert [k.index for k in trace.kernels] == [0, 1, 2]
    assert (gemm.ts_us, gemm.dur_us, gemm.device, gemm.stream, gemm.correlation, gemm.external_id) == \
        (20.0, 9.5, 3, 13, 70, 12)
    assert (gemm.category, gemm.op, gemm.bytes) == ("kernel", -1, None)
    assert (add.device, add.stream, add.category, add.external_id) == (5, 9, "kernel", None)
    assert (copy.category, copy.bytes, copy.stream) == ("gpu_memcpy", 128, 7)
    assert trace.has_gpu


def test_syncs_launches_and_memory(trace):
    event, context = trace.syncs
    assert (event.name, event.ts_us, event.dur_us, event.external_id, event.correlation, event.stream) == \
        ("Event Sync", 50.0, 2.0, 13, 73, 5)
    assert (context.name, context.stream, context.external_id) == ("Context Sync", 8, None)
    cuda, hip = trace.launches
    assert (cuda.name, cuda.ts_us, cuda.dur_us, cuda.correlation, cuda.external_id) == \
        ("cudaLaunchKernel", 8.0, 3.0, 70, 12)
    assert cuda.op == _op(trace, "aten::addmm").index
    assert hip.name == "hipLaunchKernel" and hip.op == _op(trace, "aten::add_").index
    (mem,) = trace.memory
    assert (mem.ts_us, mem.bytes, mem.addr, mem.total_allocated, mem.total_reserved, mem.device_type,
            mem.device_id) == (41.0, 512, 9, 1024, 2048, 1, 3)
    assert mem.op == _op(trace, "aten::relu").index


def test_metadata_warnings_and_categories(trace):
    assert trace.device_name == "AMD Instinct MI300X" and trace.compute_capability == (9, 4)
    assert trace.categories == {"my_backend_thing", "cpu_instant_event", "hip_runtime"}
    assert trace.warnings == ["3 events without a usable ts/dur skipped"]
    assert trace.events_read == len(EVENTS)
    assert trace.has_stack and trace.has_modules


def test_a_cpu_only_trace_warns_about_each_missing_part(tmp_path):
    trace = load_trace(_write(tmp_path, [x("cpu_op", "aten::add", 1.0, 2.0)],
                              deviceProperties=[{"name": 7, "computeMajor": "9"}]))
    assert trace.device_name is None and trace.compute_capability is None
    assert not trace.has_gpu and not trace.has_shapes and not trace.has_stack and not trace.has_modules
    assert trace.steps == [] and trace.ops[0].step is None
    assert trace.warnings == [
        "no GPU kernels (nor other accelerator kernels) in the trace: a CPU-only profile, or the device's activity "
        "was not recorded",
        "no input shapes (record_shapes=False): FLOPs and bytes cannot be counted from this trace",
        NO_STEPS_WARNING,
    ]


@pytest.mark.parametrize("props", [{"name": "NVIDIA H200"}, [1], [], "NVIDIA H200"])
def test_device_properties_not_a_list_of_objects_are_ignored(tmp_path, props):
    trace = load_trace(_write(tmp_path, [x("cpu_op", "aten::add", 1.0, 2.0)], deviceProperties=props))
    assert trace.device_name is None and trace.compute_capability is None


def test_kernels_without_ops_or_launches_warn(tmp_path):
    trace = load_trace(_write(tmp_path, [x("kernel", "k", 1.0, 2.0, pid=0, tid=7), x("bogus", "b", 0, 1)]))
    assert trace.warnings == ["no cpu_op events: kernels cannot be attributed to ops",
                              "no runtime launch events: kernels are attributed by External id only"]


def test_no_events_names_what_was_skipped(tmp_path):
    with pytest.raises(RooflineError, match=r"no profiler events .*\(1 malformed|1 events with no usable ts/dur"):
        load_trace(_write(tmp_path, [x("cpu_op", "aten::add", None, 2.0)]))
    with pytest.raises(RooflineError, match=r"no profiler events \(no cpu_op, kernel or memory events\): the profiler "
                                            r"recorded nothing; record the model's steps inside"):
        load_trace(_write(tmp_path, [x("Trace", "PyTorch Profiler (0)", 1.0, 2.0)]))
    with pytest.raises(RooflineError, match=r"no torch.profiler events .*only events of categories other: is it "
                                            r"another tool's trace"):
        load_trace(_write(tmp_path, [x("other", "a", 1.0, 2.0)]))


@pytest.mark.parametrize("name, expected", [
    ("nn.Module: Block_3", (0, "Block_3")),
    ("train.py(40): step", (1, "train.py:40")),
    ("src/app/model.py(7): forward", (1, "src/app/model.py:7")),
    ("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py(1739): _call_impl", None),
    ("<built-in method add of type object at 0x1>", None),
    ("/x/lib/python3.11/roofline/models/llama.py(20): forward", (1, None)),
    ("/x/lib/python3.11/roofline/analyze/live.py(20): run", None),
    ("/home/u/.venv/bin/roofline(8): <module>", None),
    ("/home/u/bin/tool.py(8): <module>", (1, "/home/u/bin/tool.py:8")),
    ("threading.py(1000): run", None),
    ("runpy.py(88): _run_code", None),
    ("test.py(3): <module>", (1, "test.py:3")),
    ("no frame here", None),
    # a trace recorded on Windows: Python spells its files with backslashes
    (r"C:\Python311\Lib\site-packages\torch\nn\modules\module.py(1739): _call_impl", None),
    (r"C:\Users\me\AppData\Local\Programs\Python\Python311\Lib\threading.py(1000): run", None),
    (r"C:\Users\me\proj\train.py(40): step", (1, "C:/Users/me/proj/train.py:40")),
    (r"C:\Python311\Lib\site-packages\torch\utils\checkpoint.py(300): backward", (4, "")),  # _RECOMPUTES
    # a project's own Lib/ folder is the user's: only a Windows install's Lib/ is the standard library
    ("/home/me/proj/Lib/model.py(7): forward", (1, "/home/me/proj/Lib/model.py:7")),
    ("Lib/model.py(7): forward", (1, "Lib/model.py:7")),
])
def test_which_frames_are_user_code(name, expected):
    got = _classify_frame(name)
    if expected is None or expected[1] is not None:
        assert got == expected
    else:
        assert got is not None and got[0] == 1 and got[1].endswith("roofline/models/llama.py:20")


def test_other_backends_runtime_calls_are_launches_and_odd_values_are_read_or_skipped(tmp_path):
    events = [
        {"ph": "B", "cat": "cpu_op", "name": "aten::begin_only", "pid": 1, "tid": 1, "ts": 1.0},  # skipped, not the end
        x("cpu_op", "aten::add", 0.0, 10.0, **{"External id": 1, "Input Dims": "[[2]]", "Input type": ["float"]}),
        x("xpu_runtime", "urEnqueueKernelLaunch", 1.0, 1.0, correlation=5),
        x("privateuse1_driver", "launch", 2.0, 1.0, correlation=6),
        x("my_runtime_ish", "not a launch", 3.0, 1.0, correlation=7),
        x("cuda_runtime", "cudaLaunchKernel", 4.0, 1.0),  # no correlation: not a launch
        x("cpu_op", "aten::mul", 20, 5, **{"External id": 2, "Input Dims": [[2], [2]],
                                           "Input type": ["float", "float"], "Input Strides": [[1], "bad"]}),
        x("cpu_op", "aten::sub", "30.5", "2", **{"Input Dims": [[3]], "Concrete Inputs": "oops"}),
        x("cpu_op", "aten::bad", [1], 2.0),
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": "x",
         "args": {"Bytes": 4}},
    ]
    trace = load_trace(_write(tmp_path, events))
    assert [l.name for l in trace.launches] == ["urEnqueueKernelLaunch", "launch"]
    assert [l.op for l in trace.launches] == [0, 0]
    add, mul, sub = trace.ops
    assert add.input_dims is None  # Input Dims that is not a list is dropped
    assert mul.input_dims == [[2], [2]] and mul.input_strides == [[1], "bad"] and (mul.ts_us, mul.dur_us) == (20.0, 5.0)
    assert (sub.ts_us, sub.dur_us) == (30.5, 2.0) and sub.concrete_inputs is None
    assert trace.skipped_events == 2 and trace.memory == []
    assert trace.categories == {"my_runtime_ish", "cpu_instant_event"} | {"xpu_runtime", "privateuse1_driver"}


def test_backward_ops_without_a_sequence_number_take_their_parents_module(tmp_path):
    events = [
        x("python_function", "nn.Module: Net_0", 0.0, 50.0),
        x("cpu_op", "aten::linear", 1.0, 10.0, **{"Sequence number": 4}),
        x("cpu_op", "aten::dropout", 12.0, 2.0, **{"Sequence number": 5}),
        x("cpu_op", "aten::mul", 20.0, 2.0, **{"Sequence number": 5}),  # the last op of a shared number owns it
        x("cpu_op", "autograd::engine::evaluate_function: LinearBackward0", 100.0, 10.0, tid=2),
        x("cpu_op", "LinearBackward0", 101.0, 8.0, tid=2, **{"Sequence number": 4}),
        x("cpu_op", "aten::mm", 102.0, 2.0, tid=2),
        x("cpu_op", "MulBackward0", 120.0, 5.0, tid=2, **{"Sequence number": 5}),
        x("cpu_op", "aten::mul", 121.0, 1.0, tid=2, **{"Sequence number": 9}),  # an unknown number: none
        x("cpu_op", "UnknownBackward0", 130.0, 1.0, tid=2, **{"Sequence number": 77}),
    ]
    trace = load_trace(_write(tmp_path, events))
    by = {(op.name, op.tid): op for op in trace.ops}
    assert by[("LinearBackward0", 2)].module == "Net_0" and by[("aten::mm", 2)].module == "Net_0"
    assert by[("autograd::engine::evaluate_function: LinearBackward0", 2)].module is None
    assert by[("MulBackward0", 2)].module == "Net_0"
    assert by[("aten::mul", 2)].module is None and by[("UnknownBackward0", 2)].module is None
    assert all(op.is_backward for op in trace.ops if op.tid == 2)


def test_long_builtin_calls_back_to_back_ops_and_module_only_frames(tmp_path):
    events = [
        x("python_function", "<built-in method sleep of module object at 0x1>", 0.0, 150.0, CallFrom="train.py:9"),
        x("python_function", "<built-in method sleep of module object at 0x2>", 200.0, 100.0),  # exactly 100 us
        x("python_function", "<built-in method sleep of module object at 0x3>", 400.0, 99.0),
        x("python_function", "<built-in method read>", 500.0, 120.0, CallFrom=7),
        x("python_function", "nn.Module: Net_0", 0.0, 1000.0),
        x("cpu_op", "aten::a", 10.0, 10.0),
        x("cpu_op", "aten::b", 20.0, 5.0),  # starts as aten::a ends: a sibling, not a child
        x("cpu_op", "aten::instant", 30.0, 0.0),  # zero duration is a duration
    ]
    trace = load_trace(_write(tmp_path, events))
    sleep = "<built-in method sleep of module object at 0x{}>"
    assert [(h.name, h.ts_us, h.dur_us, h.tid, h.call_from) for h in trace.host_calls] == [
        (sleep.format(1), 0.0, 150.0, 1, "train.py:9"), (sleep.format(2), 200.0, 100.0, 1, None),
        ("<built-in method read>", 500.0, 120.0, 1, None)]  # 99 us is too short; a non-text CallFrom is dropped
    a, b, instant = trace.ops
    assert instant.dur_us == 0.0 and trace.skipped_events == 0
    assert b.parent == -1 and b.depth == 0 and a.parent == -1
    # No user frame, but a call made from user code (CallFrom): the ops inside it are placed at that line
    assert trace.has_modules and trace.has_stack and {op.source for op in trace.ops} == {"train.py:9"}


def test_collective_arguments_on_ops_and_kernels_and_the_first_device_named(tmp_path):
    comm = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 8,
            "dtype": "Float"}
    events = [
        x("cpu_op", "record_param_comms", 0.0, 10.0, **comm),
        x("cpu_op", "c10d::allreduce_", 20.0, 10.0, **{"In msg nelems": 64}),
        x("cpu_op", "aten::add", 40.0, 10.0),
        x("kernel", "ncclDevKernel_AllReduce_Sum_f32", 5.0, 4.0, pid=0, tid=7, **comm),
        x("kernel", "k", 50.0, 1.0, pid=0, tid=7, **{"Out msg nelems": 8}),
        x("kernel", "plain", 60.0, 1.0, pid=0, tid=7, **{"Group size": 8}),
        x("python_function", "m.py(3): f", 0.0, 100.0),
        x("python_function", "m.py(4): g", 0.0, 30.0),
        x("cpu_op", "aten::mul", 30.0, 5.0),  # starts as m.py(4) ends: its source is the outer frame
    ]
    trace = load_trace(_write(tmp_path, events, deviceProperties=[{"name": "GPU zero", "computeMajor": 8,
                                                                   "computeMinor": 0},
                                                                  {"name": "GPU one", "computeMajor": 9,
                                                                   "computeMinor": 0}]))
    rec, c10d, add, mul = (_op(trace, n) for n in ("record_param_comms", "c10d::allreduce_", "aten::add", "aten::mul"))
    assert (rec.comm.collective, rec.comm.in_nelems, rec.comm.out_nelems, rec.comm.group_size, rec.comm.dtype) == \
        ("allreduce", 1024, 1024, 8, "Float")
    assert (c10d.comm.collective, c10d.comm.in_nelems) == (None, 64) and add.comm is None
    nccl, k, plain = trace.kernels
    assert nccl.comm.collective == "allreduce" and k.comm.out_nelems == 8 and plain.comm is None
    assert trace.device_name == "GPU zero" and trace.compute_capability == (8, 0)
    assert mul.source == "m.py:3"


def test_an_op_before_the_first_step_is_in_no_step(tmp_path):
    t = load_trace(_write(tmp_path, [x("user_annotation", "ProfilerStep#1", 10.0, 20.0),
                                     x("cpu_op", "aten::early", 1.0, 2.0), x("cpu_op", "aten::inside", 12.0, 2.0)]))
    steps = {op.name: op.step for op in t.ops}
    assert steps["aten::early"] is None and steps["aten::inside"] == 0


def test_an_argument_nested_past_the_decoders_depth_reads_as_absent():
    from roofline.capture.kineto import _as_list

    assert _as_list(b"[" * 100_000 + b"]" * 100_000) is None  # msgspec raises RecursionError here
    assert _as_list(b"[[1, 2], [3]]") == [[1, 2], [3]]


def test_a_backward_op_takes_its_module_from_its_parent_even_the_first_op_and_a_top_level_one_from_nothing(tmp_path):
    t = load_trace(_write(tmp_path, [
        x("cpu_op", "autograd::engine::evaluate_function: MulBackward0", 0.0, 10.0, tid=2, **{"Sequence number": 5}),
        x("cpu_op", "aten::mul", 1.0, 2.0, tid=2),  # no sequence number: its parent's (op 0) module
        x("cpu_op", "LoneBackward0", 15.0, 1.0, tid=3),  # no parent, no sequence number: no module
        x("python_function", "nn.Module: Lin_0", 20.0, 10.0),
        x("cpu_op", "aten::mul", 21.0, 2.0, **{"Sequence number": 5})]))
    first, child, lone, forward = t.ops
    assert first.index == 0 and child.parent == 0 and forward.module
    assert first.module == child.module == forward.module and lone.module is None
