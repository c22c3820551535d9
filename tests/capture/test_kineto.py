"""load_trace on the real H200 torch.profiler traces: counts, steps, tree, syncs, backward, modules, sources."""

from __future__ import annotations

import collections
import gzip
import json
from functools import lru_cache
from pathlib import Path

import pytest

from roofline.analyze.attribution import attribute
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import Trace

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
FIXTURES = sorted(p.name for p in H200.glob("*.json.gz"))


@lru_cache(maxsize=None)
def _trace(name: str) -> Trace:
    trace = load_trace(H200 / name)
    attribute(trace)
    return trace


@lru_cache(maxsize=None)
def _plain_counts(name: str) -> collections.Counter:
    events = json.loads(gzip.decompress((H200 / name).read_bytes()))["traceEvents"]
    return collections.Counter(
        "memory" if e.get("name") == "[memory]" else e.get("cat") for e in events if e.get("ph") in ("X", "i")
    )


def test_six_fixtures_present():
    assert len(FIXTURES) == 6


@pytest.mark.parametrize("name", FIXTURES)
def test_counts_match_a_plain_json_load(name):
    trace, plain = _trace(name), _plain_counts(name)
    assert len(trace.ops) == plain["cpu_op"] + plain["user_annotation"]
    assert len(trace.kernels) == plain["kernel"] + plain["gpu_memcpy"] + plain["gpu_memset"]
    assert len(trace.syncs) == plain["cuda_sync"]
    assert len(trace.memory) == plain["memory"]
    assert {k.category for k in trace.kernels} <= {"kernel", "gpu_memcpy", "gpu_memset"}
    # The recording script's own step loop was running when profiling began (see test_stale_frame_*)
    assert [w for w in trace.warnings if not w.startswith("source lines:")] == []


@pytest.mark.parametrize("name", FIXTURES)
def test_metadata_and_device(name):
    trace = _trace(name)
    assert trace.device_name == "NVIDIA H200"
    assert trace.compute_capability == (9, 0)
    assert trace.has_gpu and trace.has_shapes and trace.has_stack and trace.has_modules
    assert trace.metadata["schemaVersion"] == 1
    assert "traceEvents" not in trace.metadata


@pytest.mark.parametrize("name", FIXTURES)
def test_two_profiler_steps(name):
    trace = _trace(name)
    assert [s.number for s in trace.steps] == [1, 2]
    assert trace.steps[0].end_us <= trace.steps[1].ts_us
    aten = [op for op in trace.ops if op.is_aten]
    assert all(op.step in (0, 1) for op in aten)
    per_step = collections.Counter(op.step for op in aten)
    assert per_step[0] == per_step[1]


@pytest.mark.parametrize("name", FIXTURES)
def test_op_tree_nests_within_one_thread(name):
    trace = _trace(name)
    for op in trace.ops:
        assert trace.ops[op.index] is op
        if op.parent >= 0:
            parent = trace.ops[op.parent]
            assert (parent.pid, parent.tid) == (op.pid, op.tid)
            assert parent.ts_us <= op.ts_us and op.end_us <= parent.end_us + 1e-3
            assert op.depth == parent.depth + 1
            assert parent.index < op.index
        else:
            assert op.depth == 0
    assert sum(op.self_kernel_us for op in trace.ops) == pytest.approx(trace.attribution.attributed_us)


def test_bad_syncs_links_item_and_cpu_syncs_to_their_ops():
    trace = _trace("bad_syncs_fwd_fp32.json.gz")
    per_step = collections.Counter()
    targets = collections.Counter()
    for sync in trace.syncs:
        if sync.name != "Stream Sync":
            continue
        op = trace.ops[sync.op]
        targets[op.name] += 1
        per_step[op.step] += 1
    assert per_step == {0: 30, 1: 30}
    assert targets["aten::_local_scalar_dense"] == 20
    assert targets["aten::copy_"] == 40
    item_parents = {trace.ops[trace.ops[s.op].parent].name for s in trace.syncs if trace.ops[s.op].name == "aten::_local_scalar_dense"}
    assert item_parents == {"aten::item"}


def test_backward_and_optimizer_ops_flagged_in_training_trace():
    trace = _trace("llama_tiny_train_fp16_b2_s256.json.gz")
    backward = [op for op in trace.ops if op.is_backward]
    optimizer = [op for op in trace.ops if op.is_optimizer]
    assert len({op.tid for op in backward}) >= 1
    assert any(op.name == "aten::mm" for op in backward)
    assert any(op.name.startswith("aten::_foreach_") for op in optimizer)
    forward_mm = [op for op in trace.ops if op.name == "aten::mm" and not op.is_backward and not op.is_optimizer]
    assert forward_mm
    assert not any(op.is_backward for op in optimizer)
    assert sum(op.total_kernel_us for op in backward if op.parent < 0 or not trace.ops[op.parent].is_backward) > 0
    with_module = [op for op in backward if op.is_aten and op.module]
    assert len(with_module) > 0.5 * sum(op.is_aten for op in backward)


@pytest.mark.parametrize("name", FIXTURES)
def test_module_and_source_extracted(name):
    trace = _trace(name)
    aten = [op for op in trace.ops if op.is_aten and not op.is_backward and not op.is_optimizer]
    assert sum(op.module is not None for op in aten) > 0.9 * len(aten)
    assert sum(op.source is not None for op in aten) > 0.9 * len(aten)
    for op in aten:
        if op.source:
            assert not op.source.startswith(("torch/", "<built-in")), op.source
            file, line = op.source.rsplit(":", 1)
            assert file.endswith(".py") and line.isdigit()


def test_llama_module_path_and_model_source_line():
    trace = _trace("llama_tiny_fwd_fp16_b4_s512.json.gz")
    linears = [op for op in trace.ops if op.name == "aten::linear"]
    assert linears[0].module.startswith("LlamaForCausalLM_0.LlamaModel_0.LlamaDecoderLayer_0.")
    assert linears[0].module.split(".")[-1].startswith("Linear_")
    assert any(op.source.startswith("transformers/models/llama/modeling_llama.py:") for op in linears)


def test_shapes_parsed():
    trace = _trace("bad_syncs_fwd_fp32.json.gz")
    linear = next(op for op in trace.ops if op.name == "aten::linear")
    assert linear.input_dims == [[256, 1024], [1024, 1024], [1024]]
    assert linear.input_types == ["float", "float", "float"]
    assert linear.input_strides == [[1024, 1], [1024, 1], [1]]
    assert linear.concrete_inputs == ["", "", ""]


def test_memory_events_have_ops_and_signs():
    trace = _trace("llama_tiny_train_fp16_b2_s256.json.gz")
    assert any(m.bytes > 0 for m in trace.memory) and any(m.bytes < 0 for m in trace.memory)
    assert sum(m.op >= 0 for m in trace.memory) > 0.9 * len(trace.memory)
    assert max(m.total_allocated for m in trace.memory) > 0
