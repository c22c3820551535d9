"""Events whose fields have another type than Kineto's usual are read, not dropped: ROCm's Kineto writes a runtime
call's stream as text ("0x0"), which dropped every hipLaunchKernel of an AMD trace as "malformed"; any other field
of an unexpected type is read as the number its text spells, or without it, and a warning says which."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import SHARED
from kineto_events import write_trace, x

from roofline.capture.kineto import load_trace

PUBLIC = SHARED / "fixtures" / "public-traces"


def _trace(tmp_path, events):
    return load_trace(write_trace(tmp_path, events))


def test_rocm_runtime_calls_with_a_text_stream_are_launches(tmp_path):
    trace = _trace(tmp_path, [
        x("cpu_op", "aten::add_", 0.0, 20.0, **{"External id": 5}),
        x("cuda_runtime", "hipLaunchKernel", 2.0, 15.0, correlation=9, stream="0x0", **{"External id": 5}),
        x("cuda_sync", "Stream Sync", 30.0, 2.0, stream="0x1f", correlation=10),
        x("kernel", "add_kernel", 18.0, 1.0, pid=0, tid=2, correlation=9, stream=0, device=0),
    ])
    assert [launch.name for launch in trace.launches] == ["hipLaunchKernel"]
    assert trace.launches[0].op == 0
    assert [s.stream for s in trace.syncs] == [0x1F]
    assert trace.skipped_events == 0
    assert not [w for w in trace.warnings if "unexpected type" in w]


def test_other_mistyped_fields_are_read_as_numbers_or_left_out_and_named(tmp_path):
    trace = _trace(tmp_path, [
        x("cpu_op", "aten::mul", 0.0, 20.0, **{"External id": "7"}),
        x("cuda_runtime", "cudaLaunchKernel", 2.0, 5.0, correlation="12", **{"External id": 7}),
        x("cuda_runtime", "cudaLaunchKernel", 9.0, 5.0, correlation=13, device="gpu0", **{"External id": 7}),
        x("kernel", "mul_kernel", 8.0, 1.0, pid=0, tid=2, correlation=12, device=0),
        x("kernel", "mul_kernel", 15.0, 1.0, pid=0, tid=2, correlation=13, device=0),
    ])
    assert trace.ops[0].external_id == 7
    assert [(launch.correlation, launch.external_id) for launch in trace.launches] == [(12, 7), (13, 7)]
    assert trace.skipped_events == 0
    (warning,) = [w for w in trace.warnings if "unexpected type" in w]
    assert "args.External id (1)" in warning and "args.correlation (1)" in warning and "args.device (1)" in warning


def test_an_event_that_is_not_an_object_is_still_skipped(tmp_path):
    trace = _trace(tmp_path, [x("cpu_op", "aten::mul", 0.0, 20.0), ["not", "an", "event"], 42])
    assert [op.name for op in trace.ops] == ["aten::mul"]
    assert trace.skipped_events == 2


def test_the_public_rocm_trace_keeps_its_kernel_launches():
    path = PUBLIC / "hta" / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    if not path.exists():
        pytest.skip("../shared is not here")
    in_file = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    trace = load_trace(path)
    names = [launch.name for launch in trace.launches]
    for name in ("hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyWithStream"):
        assert names.count(name) == sum(e.get("name") == name for e in in_file) > 0
    assert trace.skipped_events == 0
    assert max(launch.dur_us for launch in trace.launches) == pytest.approx(6543.109)


def test_an_event_with_more_bad_arguments_than_are_repaired_is_skipped_and_not_counted_as_read(tmp_path):
    bad = {name: "n/a" for name in ("External id", "correlation", "device", "bytes", "Addr", "Total Allocated",
                                    "Total Reserved", "Device Type", "Device Id", "Sequence number")}
    trace = _trace(tmp_path, [x("cpu_op", "aten::mul", 0.0, 20.0), x("cpu_op", "aten::add", 30.0, 5.0, **bad)])
    assert [op.name for op in trace.ops] == ["aten::mul"]
    assert trace.skipped_events == 1
    assert not [w for w in trace.warnings if "unexpected type" in w]
