"""The model-on-cpu rule: a step that ran no GPU kernel where a GPU is present (report.extra['unused_gpu'])."""

from pathlib import Path

import pytest

from doctor_cases import op, report
from roofline.doctor import diagnose

RULE = "model-on-cpu"
H200_ROOFS = {"memory_bandwidth_bytes_per_s": 4e12, "peak_flops_per_s": {"float32": 5e13, "bfloat16": 1e15},
              "launch_overhead_s": 4e-6, "source": "measured"}
UNUSED = {"name": "NVIDIA H200", "how": "the run's device was cuda", "roofs": H200_ROOFS}


def _ops():
    big = op("aten::mm", [([4096, 4096], "float32"), ([4096, 4096], "float32")], time=0.5, flops=2 * 4096**3,
             nbytes=3 * 4096 * 4096 * 4, source="train.py:18")
    half = op("aten::mm", [([64, 64], "bfloat16")], time=1e-3, flops=1e12, nbytes=1e6, source="train.py:19")
    tiny = op("aten::add", [([16], "float32")], time=3e-6, flops=16, nbytes=192, source="train.py:20")
    view = op("aten::select", [([16, 4], "float32")], time=2e-3, source="train.py:21")
    return big, half, tiny, view


def test_the_saving_is_each_ops_cpu_time_less_its_time_at_the_gpus_roofs_or_one_launch():
    big, half, tiny, view = _ops()
    findings = diagnose(report([big, half, tiny, view], extra={"unused_gpu": UNUSED}), rules=[RULE])
    assert len(findings) == 1
    f = findings[0]
    at_roof = max(big.flops / 5e13, big.bytes / 4e12)  # compute-bound on the fp32 roof: 2.7 ms
    # bf16 at its own roof (1 ms) ; the 3 us add under one 4 us launch saves nothing; the view keeps its 2 ms
    assert f.estimated_savings_s == pytest.approx((0.5 - at_roof) + (1e-3 - 1e-3))
    assert f.evidence["ops"] == 4 and f.evidence["ops_with_work"] == 3
    assert f.evidence["cpu_time_s"] == pytest.approx(0.5 + 1e-3 + 3e-6 + 2e-3)
    assert f.title.startswith("the model ran on the CPU though NVIDIA H200 is present: no GPU kernel ran")
    assert "unless that is deliberate, move the model and its inputs with .to('cuda')" in f.title
    assert "model.to('cuda')" in f.fix and "if the CPU is not deliberate" in f.fix
    assert f.severity == "critical" and f.locations[0] == "train.py:18 (model)"
    assert "(measured) and one launch (4 us)" in f.savings_method and "an upper bound" in f.savings_method


def test_tiny_ops_are_still_named_as_a_warning_and_unknown_gpu_roofs_estimate_nothing():
    _, _, tiny, view = _ops()
    f = diagnose(report([tiny, view], extra={"unused_gpu": UNUSED}), rules=[RULE])[0]
    assert f.estimated_savings_s == 0.0 and f.severity == "warning"  # it may be the single biggest change
    bare = diagnose(report([tiny], extra={"unused_gpu": {**UNUSED, "roofs": None}}), rules=[RULE])[0]
    assert bare.estimated_savings_s == 0.0 and bare.savings_method == "not estimated: no roofs are known for the NVIDIA H200"


def test_silent_without_the_evidence():
    assert diagnose(report(list(_ops())), rules=[RULE]) == []
    assert diagnose(report([], extra={"unused_gpu": UNUSED}), rules=[RULE]) == []


def test_on_a_real_cpu_trace_naming_the_h200_it_ranks_first():
    from roofline.analyze.trace_file import analyze_trace_file

    trace = Path(__file__).resolve().parents[1] / "data" / "cpu_on_gpu" / "train_cpu_h200props.json.gz"
    r = analyze_trace_file(trace)
    findings = diagnose(r)
    assert findings[0].rule == RULE and findings[0].evidence["gpu"] == "NVIDIA H200"
    # its matmuls took milliseconds on the CPU: most of the op time is saved at the H200's datasheet roofs
    assert findings[0].estimated_savings_s > 0.5 * r.summary.total_time_s
