"""benchmarks/ete_offline.py re-predicts a saved ete run's reports with the run's own host costs: each host model's
ratio to the run's true time, the reports' own unprofiled step against it, and a clear error for a folder that is
not an ete run (a synthetic run: the real ones need a GPU)."""

from __future__ import annotations

import json
import tarfile

import msgspec
import pytest

from benchmark_scripts import load_benchmark
from roofline.report import Ceilings, HostCosts, OpRecord, Report, Timing

GPU = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13}, launch_overhead_s=5e-6)
US = 1e-6


@pytest.fixture(scope="module")
def offline():
    return load_benchmark("ete_offline")


def _run(tmp_path, measured_us: list[float], whatif: list[dict] | None = None):
    costs = HostCosts(device="cuda", device_name="GPU X", dispatch_s={"mul": 5e-6}, profiler_per_top_level_s=3e-6,
                      profiler_per_nested_event_s=1e-6, profiler_per_runtime_call_s=2e-6, profiler_model="m",
                      profiler_references={f"r{i}": [1e-5, 2e-5, 2, 1, 1, 0.0] for i in range(5)})
    staging = tmp_path / "staging" / "reports"
    staging.mkdir(parents=True)
    for r, m in enumerate(measured_us, 1):
        ops = [OpRecord(name="aten::mul", dtype="float32", flops=64.0, bytes=768.0, time_s=10 * US, cpu_time_s=30 * US,
                        host_gap_s=10 * US, profiled_events=2, profiled_top_level=1, runtime_calls=4, start_s=0.0,
                        input_shapes=[[8, 8], [8, 8]], output_shapes=[[8, 8]]) for _ in range(2)]
        for name in ("tiny_forward", "source_tiny_fp32-to-bf16"):
            Report(ceilings=GPU, ops=ops, step_time=Timing.from_samples([m * US], "m")).save(
                staging / f"{name}.round{r}.report.json")
    out = tmp_path / "run"
    out.mkdir()
    with tarfile.open(out / "reports.tgz", "w:gz") as tar:
        tar.add(staging, arcname="reports")
    (out / "ete.json").write_text(json.dumps({
        "device": "GPU X", "host_costs": {}, "host_costs_full": msgspec.to_builtins(costs),
        "workloads": [{"workload": "tiny forward", "true_s": 60 * US, "ratio": 1.1}], "whatif": whatif or []}))
    return out


def test_each_host_model_is_re_predicted_from_every_round_against_the_runs_true_time(offline, tmp_path):
    res = offline.repredict(_run(tmp_path, [60, 66, 54]), ["profiled", "calibrated"])
    row = res["rows"][0]
    # profiled: 2 x (40 - 12) = 56 us of host, the last op's 10 us of device after it: 66 us, every round
    assert row["profiled"] == pytest.approx(66 / 60)
    # calibrated: each round replays at its own measured step, the median of 60, 66 and 54 us
    assert row["calibrated"] == pytest.approx(1.0, rel=1e-3) and row["measured_ratio"] == pytest.approx(1.0)
    text = offline.render(res)
    assert "| tiny forward | 1.10 | 1.00 | 1.10 (host) | 1.00 (host) |" in text
    assert "calibrated: 1 of 1 workloads within 0.85-1.15" in text


def test_a_run_whose_reports_came_back_in_xz_parts_is_re_predicted_the_same(offline, tmp_path):
    from ete_common import pack_reports

    out = _run(tmp_path, [60, 66, 54])
    (out / "reports.tgz").unlink()
    files = sorted((tmp_path / "staging" / "reports").glob("*.json"))
    parts, left = pack_reports(files, out, limit=len(files[0].read_bytes()) * 1.5)
    assert len(parts) > 1 and not left
    assert offline.repredict(out, ["calibrated"])["rows"][0]["calibrated"] == pytest.approx(1.0, rel=1e-3)


def test_a_folder_that_is_not_an_ete_run_is_one_line_and_exit_2(offline, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["ete_offline.py", str(tmp_path)])
    assert offline.main() == 2
    assert "has no ete.json with its reports" in capsys.readouterr().err


def test_a_whatif_is_also_compared_as_a_change_and_with_its_source_timed_in_the_same_repeat(offline, tmp_path):
    # the source's timings of 60, 66 and 60 us, its target's back to back: half of each
    pair = {"pair": "tiny fp32 -> bf16", "scenario": {"dtype": "float32 -> bfloat16"}, "true_s": 30 * US,
            "ratio": 2.2, "source_true_s": 60 * US, "source_true_repeats_s": [60 * US, 66 * US, 60 * US],
            "true_repeats_s": [30 * US, 33 * US, 30 * US]}
    res = offline.repredict(_run(tmp_path, [54, 54, 54], [pair]), ["calibrated"])
    row = res["pairs"][0]
    # 64 elements stay at their measured 10 us in bfloat16: the projection is the unchanged step, replayed at the
    # report's 54 us; against the target's 30 us: 1.8; as a change, 1.0 predicted against 0.5 measured
    assert row["calibrated"] == pytest.approx(1.8, rel=1e-3)
    assert row["measured_change"] == pytest.approx(0.5) and row["calibrated_change"] == pytest.approx(2.0, rel=1e-3)
    # recalibrated to the source's timing in each repeat, the projection is that timing: 2.0 of the target's
    assert row["timed_source"] == pytest.approx(2.0, rel=1e-3)
    assert "| tiny fp32 -> bf16 | 2.20 | 1.80 | 0.90 | 0.50 (±0.00) | 2.00 | — | — | 2.00 |" in offline.render(res)


def test_the_per_round_diagnosis_sets_each_projection_beside_the_source_report(tmp_path, capsys, monkeypatch):
    diagnosis = load_benchmark("ete_whatif_diagnosis")
    pair = {"pair": "tiny fp32 -> bf16", "scenario": {"dtype": "float32 -> bfloat16"}, "true_s": 30 * US,
            "true_spread_s": 3 * US, "source_true_s": 60 * US, "true_repeats_s": [30 * US, 33 * US, 27 * US]}
    out = _run(tmp_path, [54, 60, 66], [pair])
    text = json.loads((out / "ete.json").read_text())
    (out / "ete.json").write_text(json.dumps(dict(text, repeats=1, rounds=3)))
    lines = diagnosis.per_round(out)
    assert lines[1].startswith("-- tiny fp32 -> bf16: target true 0.03 (IQR 0.00), source true 0.06; target repeats "
                               "by round [[0.03], [0.03], [0.03]]")
    # round 2 replays at its own 60 us and the projection keeps it (the 64-element muls keep their time)
    assert "r2 source: unprofiled 0.06 replay 0.06" in lines[3] and "projected 0.06" in lines[3]
    monkeypatch.setattr("sys.argv", ["ete_whatif_diagnosis.py", str(tmp_path)])
    assert diagnosis.main() == 2 and "has no ete.json" in capsys.readouterr().err
