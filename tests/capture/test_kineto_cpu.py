"""load_trace on CPU-only traces exported by this venv's torch.profiler (what the live CPU analyze path reads)."""

from __future__ import annotations

import gzip
import json
import warnings

import pytest
import torch

from roofline.analyze.attribution import attribute
from roofline.capture.kineto import load_trace


class _Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _export(path, steps: int = 3, backward: bool = True, **options) -> None:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _profile_steps(path, steps, backward, options)
    finally:
        torch.set_num_threads(previous)  # a later test in this process may need torch's pool (a parallel cat)


def _profile_steps(path, steps: int, backward: bool, options: dict) -> None:
    torch.manual_seed(0)
    model = _Tiny()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 16)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=steps - 1, repeat=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=lambda p: p.export_chrome_trace(str(path)), **options)
    with profiler as prof:
        for _ in range(steps):
            loss = model(x).sum()
            if backward:
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            prof.step()


@pytest.fixture(scope="module")
def full_cpu_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("cpu") / "cpu_trace.json"
    _export(path, record_shapes=True, with_stack=True, with_modules=True, profile_memory=True)
    return path


def test_cpu_trace_parses_with_steps_shapes_and_no_gpu(full_cpu_trace):
    trace = load_trace(full_cpu_trace)
    stats = attribute(trace)
    assert not trace.has_gpu and trace.kernels == []
    assert any("no GPU kernels" in w for w in trace.warnings)
    assert len(trace.steps) == 2
    assert trace.has_shapes
    addmm = [op for op in trace.ops if op.name == "aten::addmm"]
    assert len(addmm) == 4
    assert [8, 16] in addmm[0].input_dims or [8, 32] in addmm[0].input_dims
    assert stats.total_kernel_us == 0 and stats.share is None
    assert [s.kernels for s in stats.steps] == [0, 0]


def test_cpu_trace_modules_sources_backward_optimizer(full_cpu_trace):
    trace = load_trace(full_cpu_trace)
    addmm = [op for op in trace.ops if op.name == "aten::addmm"]
    assert all(op.module and op.module.split(".")[-1].startswith("Linear_") for op in addmm)
    assert all(op.source and op.source.split(":")[0].endswith("test_kineto_cpu.py") for op in addmm)
    backward = [op for op in trace.ops if op.is_backward]
    assert any(op.name in ("aten::mm", "aten::t", "aten::sum") for op in backward)
    assert not any(op.is_backward for op in addmm)
    assert any(op.is_optimizer for op in trace.ops)


def test_cpu_trace_memory_events(full_cpu_trace):
    trace = load_trace(full_cpu_trace)
    assert trace.memory, "profile_memory=True records [memory] events"
    assert all(m.device_type == 0 for m in trace.memory)
    assert sum(m.op >= 0 for m in trace.memory) > 0.8 * len(trace.memory)


def test_cpu_trace_without_shapes_or_schedule_warns(tmp_path, one_thread):
    path = tmp_path / "plain.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        _Tiny()(torch.randn(2, 16))
    prof.export_chrome_trace(str(path))
    trace = load_trace(path)
    assert trace.ops and not trace.has_shapes
    assert all(op.input_dims is None and op.module is None for op in trace.ops)
    assert any("record_shapes" in w for w in trace.warnings)
    assert any("ProfilerStep" in w for w in trace.warnings)
    assert all(op.step is None for op in trace.ops)


def test_gzipped_and_plain_give_the_same_trace(full_cpu_trace, tmp_path):
    gz = tmp_path / "cpu_trace.json.gz"
    gz.write_bytes(gzip.compress(full_cpu_trace.read_bytes()))
    a, b = load_trace(full_cpu_trace), load_trace(gz)
    assert [(op.name, op.ts_us, op.parent, op.module) for op in a.ops] == [
        (op.name, op.ts_us, op.parent, op.module) for op in b.ops
    ]


def test_small_blocks_stream_the_same_events(full_cpu_trace):
    from roofline.capture.event_stream import EventStream
    from roofline.capture.kineto import _Event

    whole = [e.name for chunk in EventStream(full_cpu_trace, _Event) for e in chunk]
    small = [e.name for chunk in EventStream(full_cpu_trace, _Event, block_bytes=512) for e in chunk]
    expected = [e.get("name", "") for e in json.loads(full_cpu_trace.read_text())["traceEvents"]]
    assert whole == small == expected


def test_a_gzipped_trace_streams_in_blocks_of_its_block_size_the_same_events(full_cpu_trace, tmp_path):
    """Each decompressed block stays near block_bytes however well the trace compresses (a 307 MB trace's .gz
    peaked at 635 MiB when a whole 4 MiB read's ~40 MB output was decoded at once), across gzip members too."""
    from roofline.capture.event_stream import EventStream
    from roofline.capture.kineto import _Event

    raw = full_cpu_trace.read_bytes()
    gz = tmp_path / "two_members.json.gz"
    gz.write_bytes(gzip.compress(raw[: len(raw) // 2]) + gzip.compress(raw[len(raw) // 2:]))
    stream = EventStream(gz, _Event, block_bytes=512)
    blocks = list(stream._blocks())
    assert b"".join(blocks) == raw and max(map(len, blocks)) < 2 * 512 and len(blocks) > len(raw) // 1024
    expected = [e.get("name", "") for e in json.loads(raw)["traceEvents"]]
    read = EventStream(gz, _Event, block_bytes=512)
    assert [e.name for chunk in read for e in chunk] == expected and not read.warnings and not read.cut
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(raw)[: -200])
    short = EventStream(cut, _Event, block_bytes=512)
    names = [e.name for chunk in short for e in chunk]
    assert short.cut and "ends early" in " ".join(short.warnings) and names == expected[: len(names)]


def test_an_event_far_longer_than_a_block_is_decoded_a_bounded_number_of_times(tmp_path, monkeypatch):
    """Each try at cutting decodes all the bytes held; one event of many blocks, whose nested objects hold "},"
    everywhere, was tried after every block (a 50 MB event: 46 decodes of up to 50 MB, 2 s). Now each failed try
    waits for twice as much."""
    from roofline.capture import event_stream
    from roofline.capture.kineto import _Event

    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": float(i), "dur": 0.5,
               "args": {}} for i in range(40)]
    # ~8 MB: past the first read (4 MiB), then 16 blocks of 256 KiB
    events.insert(20, {"ph": "X", "cat": "user_annotation", "name": "big", "pid": 1, "tid": 1, "ts": 0.0,
                       "dur": 50.0, "args": {"parts": [{"x": 1}] * 800_000}})
    path = tmp_path / "big_event.json"
    path.write_text(json.dumps({"traceEvents": events}).replace("}, {", "},\n{"))
    decodes = []
    original = event_stream.EventStream._decode_chunk
    monkeypatch.setattr(event_stream.EventStream, "_decode_chunk",
                        lambda self, *a, **k: decodes.append(1) or original(self, *a, **k))
    names = [e.name for chunk in event_stream.EventStream(path, _Event, block_bytes=256 << 10) for e in chunk]
    assert names == [e["name"] for e in events]
    assert len(decodes) < 20, len(decodes)  # 58 before: up to 4 tries after each block


def test_ops_on_two_threads_get_parents_only_within_their_thread(tmp_path):
    def op(name, ts, dur, tid, pid=1):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {}}

    events = [
        op("main_region", 0, 100, tid=1), op("aten::add", 10, 5, tid=1),
        op("worker_region", 5, 50, tid=2), op("aten::mm", 11, 2, tid=2),
        op("aten::mm", 12, 1, tid=1, pid=2),
    ]
    path = tmp_path / "threads.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = load_trace(path)
    by_key = {(o.name, o.tid, o.pid): o for o in trace.ops}
    assert trace.ops[by_key["aten::add", 1, 1].parent].name == "main_region"
    assert trace.ops[by_key["aten::mm", 2, 1].parent].name == "worker_region"
    assert by_key["aten::mm", 1, 2].parent == -1 and by_key["worker_region", 2, 1].parent == -1


def test_a_closure_optimizers_forward_and_backward_keep_their_phases(tmp_path):
    """LBFGS runs the model's forward and backward in its step's closure: those were all labelled optimizer."""
    torch.manual_seed(0)
    model = _Tiny()
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=2)
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    path = tmp_path / "lbfgs.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                    with_stack=True, with_modules=True) as prof:
            optimizer.step(closure)
    prof.export_chrome_trace(str(path))
    trace = load_trace(path)
    phases = {}
    for op in trace.ops:
        if op.name in ("aten::addmm", "aten::mm", "aten::dot"):
            phases.setdefault(op.name, set()).add("optimizer" if op.is_optimizer else
                                                  "backward" if op.is_backward else "forward")
    assert phases == {"aten::addmm": {"forward"}, "aten::mm": {"backward"}, "aten::dot": {"optimizer"}}


class _Checkpointed(torch.nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.block = _Tiny()
        self.reentrant = reentrant

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        return checkpoint(self.block, x, use_reentrant=self.reentrant)


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_recomputation_is_told_from_forward_and_backward(tmp_path, reentrant):
    """From a trace with Python stacks: ops torch.utils.checkpoint reruns inside the backward were backward ops
    (a reentrant checkpoint's inner backward without a module)."""
    torch.manual_seed(0)
    model = _Checkpointed(reentrant)
    x = torch.randn(8, 16, requires_grad=reentrant)
    path = tmp_path / "ckpt.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                    with_stack=True) as prof:
            model(x).sum().backward()
    prof.export_chrome_trace(str(path))
    trace = load_trace(path)
    addmm = [("recompute" if op.is_recompute else "backward" if op.is_backward else "forward", op.module)
             for op in trace.ops if op.name == "aten::addmm"]
    # non-reentrant: fc1's recomputation, then the event of fc2's addmm its early stop aborts (a trace cannot tell
    # that this one did no work; a live analyze can, see tests/analyze/test_checkpoint_recompute.py)
    assert [phase for phase, _ in addmm] == ["forward"] * 2 + ["recompute"] * 2
    assert all(module and module.endswith(("Linear_0", "Linear_1")) for _, module in addmm)
    mm = [op for op in trace.ops if op.name == "aten::mm"]
    assert mm and all(op.is_backward and not op.is_recompute and op.module for op in mm)
