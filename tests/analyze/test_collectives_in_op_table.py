"""Collectives in the op table: communication, not unmodelled (second model sweep: a 2-rank gloo DDP run showed
c10d::allreduce_ as 43.7% unmodelled while its distributed section timed it as communication). Their row keeps its
time and shows its message; the summary's unmodelled share leaves them out, alike in console, HTML and JSON."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import torch.distributed as dist

from roofline.analyze.communication import message_unrecorded
from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.render.console import render_report
from roofline.render.html import render_html
from roofline.report import Report


@pytest.fixture
def ddp_trace(tmp_path):
    if not (dist.is_available() and dist.is_gloo_available()) or dist.is_initialized():
        pytest.skip("gloo not available, or a process group already exists")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 8))
        x = torch.randn(4, 16)
        model(x).sum().backward()
        path = tmp_path / "ddp.json"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as p:
                model(x).sum().backward()
            p.export_chrome_trace(str(path))
        return path
    finally:
        dist.destroy_process_group()


def test_ddp_allreduce_is_communication_in_every_view(ddp_trace, cpu_ceilings):
    report = report_from_trace(load_trace(str(ddp_trace)), cpu_ceilings)
    rows = [op for op in report.ops if op.name == "c10d::allreduce_"]
    assert len(rows) == 1 and rows[0].bound == "communication" and rows[0].time_s > 0
    assert rows[0].bytes == (16 * 8 + 8) * 4  # the gradient bucket: weight and bias, float32
    s = report.summary
    assert s.time_by_bound_s["communication"] >= rows[0].time_s
    unmodeled = sum(op.time_s for op in report.ops if op.bound == "unmodeled")
    assert s.unmodeled_time_share == pytest.approx(unmodeled / s.total_time_s)
    assert s.total_bytes == sum(op.bytes for op in report.ops if op.bound != "communication")
    assert not any(n.startswith("c10d::") for n in s.notes if "unmodelled" in n)

    text = render_report(report)
    assert any(line.split("│")[1].strip() == "communication" for line in text.splitlines() if line.count("│") == 4)
    assert "allreduce_" in text and "unmodeled" not in next(line for line in text.splitlines()
                                                            if "allreduce_" in line)
    html = render_html(report)
    assert ".badge.b-communication" in html and '"communication"' in html
    back = Report.from_dict(json.loads(report.to_json()))
    assert [(op.bound, op.bytes) for op in back.ops if op.name == "c10d::allreduce_"] == [("communication", 544)]
    assert [o["flops"] for o in json.loads(report.to_json())["ops"] if o["name"] == "c10d::allreduce_"] == [None]
    assert back.summary.share_by_bound["communication"] == pytest.approx(s.share_by_bound["communication"])


def test_without_shapes_the_message_comes_from_record_param_comms(tmp_path, cpu_ceilings):
    """Traces recorded without record_shapes (HTA's NCCL samples) size a collective only in its
    record_param_comms child's args: the all-reduce's input, the all-gather's gathered output."""
    def x(name, ts, dur, **args):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    def comms(collective, n_in, n_out, dtype):
        return {"Collective name": collective, "In msg nelems": n_in, "Out msg nelems": n_out, "Group size": 2,
                "dtype": dtype}

    path = tmp_path / "nccl.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [
        x("c10d::allreduce_", 0, 100), x("record_param_comms", 1, 98, **comms("allreduce", 2049000, 2049000, "Float")),
        x("c10d::_allgather_base_", 200, 50),
        x("record_param_comms", 201, 48, **comms("_allgather_base", 1024, 2048, "BFloat16")),
    ]}))
    report = report_from_trace(load_trace(str(path)), cpu_ceilings)
    assert [(op.name, op.bound, op.bytes) for op in report.ops] == [
        ("c10d::allreduce_", "communication", 2049000 * 4), ("c10d::_allgather_base_", "communication", 2048 * 2)]
    assert report.summary.unmodeled_time_share == 0.0


def test_a_collective_without_a_recorded_size_shows_unknown_bytes_not_zero(tmp_path, cpu_ceilings):
    """HTA's trace_diff and df_index_resolver traces record c10d::allreduce_ with an empty TensorList and a
    record_param_comms child with no 'In msg nelems': the message is unknown. Its row says so ("?" in console and
    HTML, null in JSON) and a note counts such calls; a barrier, which sends nothing, is not among them."""
    def x(name, ts, dur, **args):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    path = tmp_path / "unsized.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [
        x("c10d::allreduce_", 0, 100, **{"Input Dims": [[], [], [], []],
                                         "Input type": ["TensorList", "", "Scalar", "Scalar"]}),
        x("record_param_comms", 1, 98),
        x("c10d::allreduce_", 200, 100),
        x("c10d::barrier", 400, 50),
        x("c10d::allreduce_", 500, 100),
        x("record_param_comms", 501, 98, **{"Collective name": "allreduce", "In msg nelems": 256,
                                             "Out msg nelems": 256, "dtype": "Float"}),
    ]}))
    report = report_from_trace(load_trace(str(path)), cpu_ceilings)
    assert [(op.name, op.bound, op.bytes) for op in report.ops] == [
        ("c10d::allreduce_", "communication", 0.0), ("c10d::allreduce_", "communication", 0.0),
        ("c10d::barrier", "communication", 0.0), ("c10d::allreduce_", "communication", 1024.0)]
    notes = [n for n in report.summary.notes if "no message size" in n]
    assert notes == ["2 collective call(s) with no message size (c10d::allreduce_ x2, 57.1% of the time): the trace "
                     "recorded neither their tensors' shapes nor their collective args' 'In msg nelems', so their "
                     "bytes are unknown (shown as ?), not 0; their time still counts as communication"]

    text = render_report(report, top=10)
    rows = [line.split("│") for line in text.splitlines() if line.startswith("│ c10d::")]
    header = next(line.split("┃") for line in text.splitlines() if line.startswith("┃ op "))
    col = [h.strip() for h in header].index("bytes")
    assert sorted(r[col].strip() for r in rows) == ["-", "1 KiB", "?", "?"]

    html = render_html(report)
    assert '"no_size":[1,1,0,0]' in html
    ops = json.loads(report.to_json())["ops"]
    assert [o["bytes"] for o in ops] == [None, None, 0.0, 1024.0]  # a barrier sends nothing: 0, known


def test_a_backends_annotation_sizes_the_collective_its_c10d_op_left_unsized(tmp_path, cpu_ceilings):
    """HTA's trace_filter and trace_diff ranks: c10d::allreduce_ records an empty TensorList, but the
    nccl:all_reduce annotation below it records the tensor ([[19618307]] float); an nccl:all_to_all with no c10d
    op above it is a row of its own (it launched the NCCL kernel) with its tensor. An all-gather's annotation records
    only the local shard: its gathered size stays unknown without the collective args' group size."""
    events = []

    def event(name, ts, dur, cat="cpu_op", **args):
        events.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args})

    def nccl_kernel(ts, ext):
        event("cudaLaunchKernel", ts, 5, "cuda_runtime", **{"External id": ext, "correlation": ext})
        events.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                       "pid": 0, "tid": 20, "ts": ts + 10, "dur": 50,
                       "args": {"External id": ext, "device": 0, "stream": 20, "correlation": ext}})

    event("c10d::allreduce_", 0, 100, **{"External id": 1, "Input Dims": [[], [], [], []],
                                         "Input type": ["TensorList", "", "Scalar", "Scalar"]})
    event("record_param_comms", 1, 98, **{"External id": 5, "Input Dims": [[], [], []]})  # no sizes: torch 2.0's
    event("nccl:all_reduce", 2, 90, "user_annotation", **{"External id": 2, "Input Dims": [[1000]],
                                                           "Input type": ["float"]})
    nccl_kernel(5, 2)
    event("nccl:all_to_all", 200, 100, "user_annotation", **{"External id": 3, "Input Dims": [[8, 1024, 16]],
                                                              "Input type": ["float"]})
    nccl_kernel(205, 3)
    event("nccl:_all_gather_base", 400, 100, "user_annotation", **{"External id": 4, "Input Dims": [[64]],
                                                                    "Input type": ["c10::BFloat16"]})
    nccl_kernel(405, 4)
    path = tmp_path / "annotated.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, "deviceProperties": [
        {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}]}))
    report = report_from_trace(load_trace(str(path)), cpu_ceilings)
    assert [(op.name, op.bound, op.bytes) for op in report.ops] == [
        ("c10d::allreduce_", "communication", 4000.0), ("nccl:all_to_all", "communication", 8 * 1024 * 16 * 4.0),
        ("nccl:_all_gather_base", "communication", 0.0)]
    unsized = [n for n in report.summary.notes if "no message size" in n]
    assert [n.split(":")[0] for n in unsized] == ["1 collective call(s) with no message size (nccl"]
    # the reason is the shard, not missing shapes: the annotation did record a tensor
    assert "holds the local shard" in unsized[0] and "recorded neither" not in unsized[0]
    assert "'Out msg nelems'" in unsized[0] and "'In msg nelems'" not in unsized[0]
    # report.json: the unsized all-gather's bytes are null (unknown), not 0, whether written whole or in chunks,
    # and read back as unknown again; a barrier's 0 stays (it sends nothing)
    written = [json.loads(report.json_bytes()), json.loads(b"".join(report.json_chunks(records_per_chunk=1)))]
    for data in written:
        assert [o["bytes"] for o in data["ops"]] == [4000.0, 8 * 1024 * 16 * 4.0, None]
    back = Report.from_json(report.json_bytes())
    assert back.ops[2].bytes == 0.0 and message_unrecorded(back.ops[2])
    assert render_report(back, top=10) == render_report(report, top=10)


def _row(name: str, bound: str, nbytes: float, time_s: float = 1e-3):
    from roofline.report import OpRecord

    return OpRecord(name=name, dtype="float32", flops=0.0, bytes=nbytes, time_s=time_s, bound=bound)


def test_only_a_communication_row_of_no_bytes_has_its_message_unrecorded_also_read_back_from_json():
    import msgspec

    from roofline.analyze.communication import message_unrecorded
    from roofline.report import OpRecord

    assert message_unrecorded(_row("c10d::allreduce_", "communication", 0.0))
    assert not message_unrecorded(_row("c10d::allreduce_", "communication", 512.0))
    assert not message_unrecorded(_row("c10d::barrier", "communication", 0.0))  # sends nothing by design
    # a row of no bytes under any other bound (a view, an unmodelled op) is not a collective
    assert not any(message_unrecorded(_row("aten::view", b, 0.0))
                   for b in ("compute", "memory", "unmodeled", "launch", "host", "device", "serial", "a", "z"))
    # a report read back from its JSON holds its own copy of the string, not the interned literal
    back = msgspec.json.decode(msgspec.json.encode(_row("c10d::allreduce_", "communication", 0.0)), type=OpRecord)
    assert message_unrecorded(back)


def test_the_unsized_note_lists_the_four_most_called_collectives_with_their_share():
    from roofline.analyze.pipeline import _unsized_collectives_note

    names = ["c10d::allreduce_"] * 5 + ["c10d::allgather_"] * 4 + ["c10d::broadcast_"] * 3 + \
        ["c10d::reduce_scatter_"] * 2 + ["c10d::alltoall_"]
    ops = [_row(n, "communication", 0.0) for n in names] + [_row("aten::mm", "compute", 1e6, 5e-3)]
    (note,) = _unsized_collectives_note(ops, 20e-3)
    assert note.startswith("15 collective call(s) with no message size (c10d::allreduce_ x5, c10d::allgather_ x4, "
                           "c10d::broadcast_ x3, c10d::reduce_scatter_ x2, 75.0% of the time): ")
    assert _unsized_collectives_note(ops[-1:], 20e-3) == []
    assert "% of the time" not in _unsized_collectives_note(ops, 0.0)[0]
