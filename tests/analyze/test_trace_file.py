"""analyze_trace_file: roofs from the trace's own device, never this machine's for a trace from elsewhere; cut
traces refused unless --partial; Kineto's INFO trailer read as metadata; a device with no roofs still reported."""

from __future__ import annotations

import gzip
import json

import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.cli import main
from roofline.errors import RooflineError


def _x(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _trace(device: dict | None, *, kernels: bool = True, host: str | None = None) -> dict:
    events = [
        _x("user_annotation", "ProfilerStep#1", 0.0, 100.0),
        _x("cpu_op", "aten::add", 5.0, 40.0, **{"External id": 2, "Input Dims": [[256, 256], [256, 256], []],
                                                 "Input type": ["float", "float", "Scalar"]}),
    ]
    if kernels:
        events += [
            _x("cuda_runtime", "cudaLaunchKernel", 12.0, 3.0, correlation=7, **{"External id": 2}),
            _x("kernel", "void at::native::vectorized_elementwise_kernel<4>", 20.0, 9.5, pid=0, tid=7,
               correlation=7, device=0, stream=7, **{"External id": 2}),
        ]
    data = {"schemaVersion": 1, "traceEvents": events}
    if device is not None:
        data["deviceProperties"] = [device] if device else []
    if host:
        data["host_name"] = host
    return data


def _write(tmp_path, data: dict, trailer: str = "", name: str = "t.json") -> str:
    text = json.dumps(data)
    if trailer:
        text = text[:-1] + trailer + "}"
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_kineto_info_trailer_is_metadata_not_corruption(tmp_path):
    info = ", ".join(json.dumps(f"INFO:2024 CuptiActivityProfiler.cpp:{i}] [Profiler = P{i}] Not running")
                     for i in range(40))
    path = _write(tmp_path, _trace({"name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}),
                  trailer=f', "INFO": [{info}], "traceName": "x.json"')
    report = analyze_trace_file(path)
    assert not any("ends early" in n or "PARTIAL" in n for n in report.summary.notes)
    assert report.extra["device"]["datasheet"] == "H100 SXM"


def test_cut_trace_is_refused_unless_partial(tmp_path, capsys):
    raw = json.dumps(_trace({"name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0})).encode()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(raw)[:-30])
    with pytest.raises(RooflineError, match="cut short.*--partial"):
        analyze_trace_file(path)
    assert main(["trace", str(path), "-o", str(tmp_path / "refused")]) == 2
    assert "\n" not in capsys.readouterr().err.strip()
    report = analyze_trace_file(path, partial=True)
    assert report.extra["partial"] and report.summary.notes[0].startswith("PARTIAL")
    assert main(["trace", str(path), "--partial", "-o", str(tmp_path / "out"), "--no-html"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PARTIAL REPORT") and "192 MiB" not in out


def test_cpu_trace_from_elsewhere_is_never_judged_against_this_machine(tmp_path, monkeypatch):
    import roofline.device.ceilings as ceilings_module

    def refuse(*args, **kwargs):
        raise AssertionError("measured this machine for a trace recorded elsewhere")

    monkeypatch.setattr(ceilings_module, "get_ceilings", refuse)
    report = analyze_trace_file(_write(tmp_path, _trace(None, kernels=False, host="some-other-box")))
    assert report.ceilings.source == "none" and report.ceilings.memory_bandwidth_bytes_per_s == 0
    assert {op.bound for op in report.ops} <= {"unknown", "unmodeled", "launch"}
    warnings = [n for n in report.summary.notes if n.startswith("warning:")]
    assert len(warnings) == 1 and "some-other-box" in warnings[0] and "--ceilings FILE" in warnings[0]


def test_cpu_trace_from_this_host_uses_its_cached_ceilings_only(tmp_path, cpu_ceilings):
    from roofline.device.host import host_name

    report = analyze_trace_file(_write(tmp_path, _trace(None, kernels=False, host=host_name())))
    assert report.ceilings.memory_bandwidth_bytes_per_s > 0 and "this host" in report.ceilings.method


def test_unknown_accelerator_gets_a_report_without_roofs(tmp_path):
    report = analyze_trace_file(_write(tmp_path, _trace({"name": "ARTEMIS", "id": 17})))
    assert report.extra["device"]["vendor"] == "meta" and report.ceilings.source == "none"
    assert report.ops and report.summary.total_time_s > 0
    assert all(op.bound in ("unknown", "launch", "unmodeled") for op in report.ops)
    assert sum(1 for n in report.summary.notes if n.startswith("warning:")) == 1


def test_gpu_named_only_by_kernels_uses_the_assumed_datasheet(tmp_path):
    data = _trace(None)
    data["traceEvents"][-1]["name"] = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x3_nn_align4>"
    report = analyze_trace_file(_write(tmp_path, data))
    assert report.ceilings.source == "datasheet (assumed part)"
    assert "A100" in report.ceilings.method and "--ceilings" in report.ceilings.method
