"""Real CPU traces written by torch 2.0.1, 2.1.2, 2.4.1 and 2.7.1 (tests/data/devtraces/torch2.*, recorded by
benchmarks/sweep_oldtorch.py; the sweep is benchmarks/results/sweep_oldtorch_2026-12-02.md): each gives its steps,
its ops with the FLOPs of their recorded shapes, and the time it was recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.kineto import load_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "devtraces"


@pytest.mark.parametrize(("name", "steps", "when"), [
    # torch 2.1: integer Unix microseconds, no baseTimeNanoseconds; schedule's first active step is #1
    ("torch2.1.2_cpu_mlp_train_rank0.pt.trace.json.gz", [(1, 8673.0), (2, 10433.0)], "2026-12-02T04:25:41+00:00"),
    # torch 2.7: fractional microseconds after baseTimeNanoseconds (2026-10-01, not the recording's day)
    ("torch2.7.1_cpu_mlp_train_rank0.pt.trace.json.gz", [(2, 3047.318), (3, 8034.027)], "2026-12-02T04:25:57+00:00"),
])
def test_a_scheduled_training_loop_of_an_older_torch_has_its_steps_flops_and_recording_time(name, steps, when):
    trace = load_trace(DATA / name)
    assert [(s.number, s.dur_us) for s in trace.steps] == steps
    report = analyze_trace_file(DATA / name)
    assert report.steps == 2 and report.ceilings.device == "cpu"
    assert report.environment.timestamp == when
    assert "torch_version" in report.environment.unknown  # neither version writes it
    assert (len(report.ops), sum(op.flops > 0 for op in report.ops)) == (80, 34)
    # 6 of the rows a step are composite ops' own host time beside their counted children (aten::linear's over addmm)
    wrappers = ["aten::linear", "aten::linear", "aten::cross_entropy_loss", "aten::log_softmax", "aten::nll_loss_nd",
                "aten::nll_loss"]
    own = [op for op in report.ops if op.name in wrappers]
    assert [op.name for op in own] == wrappers * 2 and not [op for op in report.ops if not op.modeled]
    assert {(op.flops, op.bytes, op.bound) for op in own} == {(0.0, 0.0, "launch")}
    first = [op for op in report.ops if op.name == "aten::addmm" and op.input_shapes[1] == [64, 256]]
    assert [op.flops for op in first] == [2 * 64 * 256 * 512] * 2  # Linear(256, 512) on a batch of 64, each step


def test_a_torch_24_conv_net_is_counted_from_its_shapes_with_modules_from_its_stack():
    report = analyze_trace_file(DATA / "torch2.4.1_cpu_conv_shapes_stack.json")
    convs = [(op.module, op.flops) for op in report.ops if op.name == "aten::convolution"]
    assert convs == [("Sequential_0.Conv2d_0", 2 * 8 * 16 * 32 * 32 * 3 * 3 * 3),
                     ("Sequential_0.Conv2d_1", 2 * 8 * 32 * 16 * 16 * 16 * 3 * 3)]
    assert report.environment.timestamp == "2026-12-02T04:25:48+00:00"
    # with_stack: the user line that called the model (sweep_oldtorch.py's _record call, as it was when recorded)
    # (shown relative to the project root the session found: "benchmarks/..." or the bare file name)
    assert {op.source.rsplit("/", 1)[-1] for op in report.ops} == {"sweep_oldtorch.py:63"}


def test_the_transformer_fast_path_of_torch_27_is_counted_through_its_fused_layer():
    """eval + no_grad runs aten::_transformer_encoder_layer_fwd: its children (the QKV mm, bmm, ...) are counted."""
    report = analyze_trace_file(DATA / "torch2.7.1_cpu_transformer_eval.json")
    qkv = [op.flops for op in report.ops if op.name == "aten::mm" and op.input_shapes[:2] == [[64, 64], [64, 192]]]
    assert qkv == [2 * 64 * 64 * 192] * 2  # one per layer, 4 x 16 tokens
    assert (len(report.ops), sum(op.flops > 0 for op in report.ops)) == (84, 24)  # 14 of them composites' own time


def test_a_torch_21_stack_of_an_unrecorded_tensor_list_is_counted_from_the_view_below_it():
    """torch 2.1 records a TensorList argument's "Input Dims" as []: the LSTM's stack (a cat then a view) and its
    cat had no shapes to count, 4 unmodelled rows. The view of the cat's output shows the stack's output: each stack
    is one row, a copy of it (analyze/stacked_lists.py); its RNN layers are counted from their shapes."""
    report = analyze_trace_file(DATA / "torch2.1.2_cpu_lstm.json")
    assert not [op.name for op in report.ops if not op.modeled]
    stacks = [op for op in report.ops if op.name == "aten::stack"]
    assert [op.bytes for op in stacks] == [8192.0] * 2  # h_n and c_n: (2 layers, batch 4, 128) float32, read + written
    assert not any(op.name == "aten::cat" for op in report.ops)
    layers = [op.flops for op in report.ops if op.name == "aten::mkldnn_rnn_layer"]
    # 20 time steps x batch 4 x (2 GEMMs of 4 x 128 gates) + the cell's elementwise work, per layer
    assert layers == [16097280.0, 21340160.0]


def test_a_cpu_trace_whose_steps_lie_mostly_outside_its_ops_says_so():
    """torch 2.1.2 MLP steps of 8.7 and 10.4 ms whose ops sum to 2.84 ms (8 ms inside one AccumulateGrad, before its
    aten::detach): the table's total alone reads as the step; torch 2.7.1's steps are 81% ops and get no note."""
    old = analyze_trace_file(DATA / "torch2.1.2_cpu_mlp_train_rank0.pt.trace.json.gz")
    assert old.summary.wall_time_s == pytest.approx(19.106e-3)
    assert old.summary.total_time_s == pytest.approx(2.839e-3)
    assert any(n.startswith("the ops' host time (2.84 ms) is 15% of the 2 profiled step(s)' wall time (19.1 ms)")
               for n in old.summary.notes)
    new = analyze_trace_file(DATA / "torch2.7.1_cpu_mlp_train_rank0.pt.trace.json.gz")
    assert not any("profiled step(s)' wall time" in n for n in new.summary.notes)


def test_two_ranks_of_a_torch_21_gloo_ddp_job_merge_with_their_all_reduce_sized_from_gloos_span():
    """Real DDP over gloo, 2 CPU processes: distributedInfo names the ranks; torch 2.1 records c10d::allreduce_'s
    tensor list as [], so its size comes from the gloo:all_reduce span (every parameter of the MLP, float32)."""
    from roofline.distributed.merge import merge_trace_files

    report = merge_trace_files([DATA / f"torch2.1.2_cpu_ddp_gloo_rank{r}.pt.trace.json.gz" for r in (0, 1)])
    dist = report.distributed
    assert (dist.world_size, dist.backend, dist.ranks_merged, dist.steps) == (2, "gloo", [0, 1], 2.0)
    [allreduce] = dist.collectives
    params = 256 * 512 + 512 + 512 * 10 + 10
    assert (allreduce.kind, allreduce.calls, allreduce.bytes) == ("all_reduce", 2, 4.0 * params)
    assert [(r.rank, r.profiled_steps, r.collectives_per_step) for r in report.ranks] == [(0, 2, 1.0), (1, 2, 1.0)]
    assert any(n.startswith("2 collective call(s) with no message size (c10d::allreduce_ x2")
               for n in report.summary.notes)


def test_traces_that_name_no_backend_merge_without_an_invented_one(tmp_path):
    """Two single-process traces named rank0 and rank1 (tensorboard_trace_handler's worker_name) merge by their
    names; no trace records a backend or a collective, so the note must not call it a gloo job."""
    import shutil

    from roofline.distributed.merge import merge_trace_files

    rank1 = tmp_path / "rank1.pt.trace.json.gz"
    shutil.copy(DATA / "torch2.7.1_cpu_mlp_train_rank0.pt.trace.json.gz", rank1)
    report = merge_trace_files([DATA / "torch2.1.2_cpu_mlp_train_rank0.pt.trace.json.gz", rank1])
    note = next(n for n in report.summary.notes if n.startswith("merged 2 rank(s)"))
    assert note.startswith("merged 2 rank(s) of a 2-rank job whose traces name no backend (gloo assumed for the "
                           "collectives' roofs)")
    assert report.distributed.ranks_merged == [0, 1] and report.distributed.collectives == []


def test_two_runs_whose_files_both_say_rank0_are_not_merged_as_two_ranks():
    """The file name was the only evidence of a job: two files naming rank 0, no distributedInfo, no collective,
    were merged by position and got a straggler finding ("the other ranks wait ... in the next collective")."""
    from roofline.distributed.merge import merge_trace_files
    from roofline.errors import RooflineError

    paths = [DATA / f"torch{v}_cpu_mlp_train_rank0.pt.trace.json.gz" for v in ("2.1.2", "2.7.1")]
    with pytest.raises(RooflineError, match=r"not ranks of one distributed job \(their file names give rank 0 "
                                            r"more than once"):
        merge_trace_files(paths)


def test_a_torch_21_traces_matmul_flops_equal_torchs_own_with_flops_count():
    """with_flops writes no FLOPs into the exported trace; sweep_oldtorch.py saved torch 2.1.2's key_averages()
    figures beside it. roofline's, from the recorded shapes alone, are the same for every op torch counts."""
    import json
    from collections import defaultdict

    report = analyze_trace_file(DATA / "torch2.1.2_cpu_mlp_memory_flops.json")
    torch_flops = json.loads((DATA / "torch2.1.2_cpu_mlp_memory_flops.torch_flops.json").read_text())
    ours: dict[str, float] = defaultdict(float)
    for op in report.ops:
        ours[op.name] += op.flops
    assert torch_flops == {"aten::addmm": 17432576, "aten::mm": 18087936}
    assert {name: ours[name] for name in torch_flops} == torch_flops
    assert report.memory.peak_allocated_bytes == 677936  # from the [memory] events (profile_memory)


def test_a_trace_without_device_activity_repeats_the_errors_the_profiler_logged_in_it():
    """torch 2.7's CUDA wheel on a machine without a usable GPU writes its Kineto error into the header: the one
    clue to why a run meant for a GPU recorded none of its activity."""
    trace = load_trace(DATA / "torch2.7.1_cpu_mlp_train_rank0.pt.trace.json.gz")
    [note] = [w for w in trace.warnings if w.startswith("no GPU kernels")]
    assert note.endswith("not recorded; the profiler logged: gpuGetDeviceCount failed with code 35")
    older = load_trace(DATA / "torch2.1.2_cpu_mlp_train_rank0.pt.trace.json.gz")  # no ERROR in its header
    assert [w for w in older.warnings if w.startswith("no GPU kernels")][0].endswith("was not recorded")


def test_a_torch_20_lstm_without_concrete_inputs_is_counted_from_its_weights():
    """torch 2.0 records no "Concrete Inputs": mkldnn_rnn_layer's mode was None, its count failed, and the report
    fell to its children (aten::empty, aten::add): 0.45 ms of the trace's 46 ms of ops. The mode now comes from the
    recurrent weight (4 x hidden rows: an LSTM), and the layers count as torch 2.1's trace of the same model does."""
    report = analyze_trace_file(DATA / "torch2.0.1_cpu_lstm.json")
    layers = [(op.name, op.flops) for op in report.ops if "mkldnn_rnn_layer" in op.name]
    assert layers == [("aten::mkldnn_rnn_layer", 16097280.0), ("aten::mkldnn_rnn_layer", 21340160.0),
                      ("aten::mkldnn_rnn_layer_backward", 42311680.0),
                      ("aten::mkldnn_rnn_layer_backward", 31825920.0)]
    # of 46.06 ms of top-level ops: the rest is autograd's engine frames' own time
    assert report.summary.total_time_s == pytest.approx(45.935e-3, abs=0.01e-3)



def test_a_long_tensor_list_of_a_new_torch_says_the_profilers_limit(tmp_path):
    """Sweep 7: torch 2.14 records a list of more than 30 tensors as [] too (a bidirectional GRU stacking its 60
    steps' outputs); the note blamed torch 2.1 alone, and said later versions record each tensor's shape."""
    import json

    def x(name, ts, dur, dims, types):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                "args": {"Input Dims": dims, "Input type": types}}
    events = [x("aten::cat", 0, 50, [[], []], ["TensorList", "Scalar"]),
              x("aten::add", 60, 10, [[8, 16], [8, 16]], ["float", "float"])]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    note = next(n for n in analyze_trace_file(path).summary.notes if n.startswith("aten::cat unmodelled"))
    assert "a list of at most 30 tensors, a longer one as []" in note
    assert "torch 2.1 and older record every tensor list as []" in note
    assert "torch 2.4 and later record each tensor's shape" not in note


def test_only_the_rank_named_twice_is_said_to_repeat(tmp_path):
    """Three single-process traces named rank0, rank0 and rank1: the refusal names rank 0 alone as given twice."""
    import shutil

    from roofline.distributed.merge import merge_trace_files
    from roofline.errors import RooflineError

    paths = [DATA / f"torch{v}_cpu_mlp_train_rank0.pt.trace.json.gz" for v in ("2.1.2", "2.7.1")]
    paths.append(tmp_path / "torch2.7.1_cpu_mlp_train_rank1.pt.trace.json.gz")
    shutil.copy(paths[1], paths[2])
    with pytest.raises(RooflineError, match=r"their file names give rank 0 more than once"):
        merge_trace_files(paths)


def test_a_folder_of_profiler_traces_is_pointed_to_roofline_trace(tmp_path):
    import shutil

    from roofline.distributed.merge import merge_run_dir
    from roofline.errors import RooflineError

    shutil.copy(DATA / "torch2.1.2_cpu_ddp_gloo_rank0.pt.trace.json.gz", tmp_path)
    with pytest.raises(RooflineError, match=r"holds 1 torch.profiler traces, not the rank\{r\}/ folders"):
        merge_run_dir(tmp_path)
