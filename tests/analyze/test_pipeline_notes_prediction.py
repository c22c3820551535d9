"""The summary says why the prediction exceeds the measured time: ops whose kernels ran shorter than the launch cost
the estimate gives each launch (llama-tiny's H200 training step: "predicted 141.8%" with nothing saying so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.trace_file import analyze_trace_file

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def test_a_prediction_above_the_measured_time_is_explained_by_the_launch_floor():
    report = analyze_trace_file(H200 / "llama_tiny_train_fp16_b2_s256.json.gz")
    s = report.summary
    assert s.predicted_total_s > s.total_time_s
    (note,) = [n for n in s.notes if n.startswith("the prediction")]
    launch = report.ceilings.launch_overhead_s
    floored = [op for op in report.ops if 0 < op.time_s < op.predicted_time_s == launch]
    assert f"{len(floored)} op(s) ran shorter" in note
    assert f"{s.predicted_total_s / s.total_time_s:.0%}" in note
    assert sum(op.predicted_time_s - op.time_s for op in floored) == pytest.approx(
        s.predicted_total_s - s.total_time_s, rel=0.5)


def test_no_note_when_the_prediction_is_below_the_measured_time():
    report = analyze_trace_file(H200 / "bad_syncs_fwd_fp32.json.gz")
    assert report.summary.predicted_total_s <= report.summary.total_time_s
    assert not [n for n in report.summary.notes if n.startswith("the prediction")]


def test_on_a_cpu_the_floor_is_the_per_op_host_overhead_not_device_kernels(tmp_path):
    """Sweep 8 (RWKV on a CPU): the note spoke of kernels "back to back on the device while the host issued the
    next" where there is no device and no kernel. A CPU trace read with a per-op overhead above its small ops' times
    floors them the same way; the note says what that floor is on a CPU."""
    from roofline.device.cache import save_ceilings
    from roofline.report import Ceilings

    ceilings = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=3e10,
                        peak_flops_per_s={"float32": 3e11}, launch_overhead_s=50e-6, source="measured")
    path = save_ceilings(ceilings, tmp_path / "cpu.json")
    report = analyze_trace_file(Path(__file__).resolve().parents[1] / "data" / "devtraces" /
                                "torch2.7.1_cpu_transformer_eval.json", str(path))
    s = report.summary
    assert s.predicted_total_s > s.total_time_s
    (note,) = [n for n in s.notes if n.startswith("the prediction")]
    assert "per-op host overhead measured on this machine (50 us, a median)" in note
    assert "device" not in note and "kernel" not in note
    floored = [op for op in report.ops if 0 < op.time_s < op.predicted_time_s == 50e-6]
    assert f"{len(floored)} op(s) took less" in note
