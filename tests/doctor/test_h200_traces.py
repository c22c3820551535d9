"""The doctor on real H200 torch.profiler traces (tests/data/h200), read offline."""

from pathlib import Path

import pytest

from roofline.doctor import diagnose

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _report(name: str):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace
    from roofline.device import ceilings_for_device_name

    path = H200 / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"fixture {path.name} not present")
    trace = load_trace(path)
    return report_from_trace(trace, ceilings_for_device_name(trace.device_name))


def test_bad_syncs_trace_yields_a_sync_finding_with_its_count_per_step():
    findings = [f for f in diagnose(_report("bad_syncs_fwd_fp32")) if f.rule == "host-device-sync"]
    assert findings
    item = [f for f in findings if "item" in f.evidence["sync_kinds"]]
    assert item and item[0].evidence["per_step"] == 10 and item[0].evidence["in_loop"]
    assert all(f.locations for f in findings)


def test_resnet50_fp32_trace_yields_the_tf32_finding():
    findings = [f for f in diagnose(_report("resnet50_fwd_fp32_b32")) if f.rule == "tf32-off"]
    assert len(findings) == 1
    assert findings[0].estimated_savings_s > 0
    assert findings[0].evidence["ops"] > 0


def test_llama_trace_names_the_fp32_norm_and_the_launch_gaps():
    findings = diagnose(_report("llama_tiny_fwd_fp16_b4_s512"))
    rules = {f.rule for f in findings}
    assert {"precision-island", "launch-overhead", "unfused-chain"} <= rules
    assert "tf32-off" in rules  # the rotary embedding's small fp32 bmm
    # HF's RMSNorm variance and rotary cos/sin (its positions x frequencies bmm has K = 1) are fp32 by design: told
    # once, with no savings, and no island to remove
    (precision,) = [f for f in findings if f.rule == "precision-island"]
    assert precision.title.startswith("fp32 by design in a float16 model, not an island to remove: mean")
    assert {"mean", "cos", "sin"} == set(precision.evidence["fp32_by_design_kinds"])
    assert precision.estimated_savings_s == 0.0


def test_compiled_llama_trace_has_no_precision_island_from_triton_kernels():
    rules = {f.rule for f in diagnose(_report("llama_tiny_fwd_fp16_compiled"))}
    assert "precision-island" not in rules
