"""benchmarks/gpu_sweep.py: its CPU path runs a case through profile, trace and doctor and records the checks."""

import json
import tarfile

import pytest

from benchmark_scripts import load_benchmark


def test_bad_numbers_names_each_path_once_with_its_count():
    bench = load_benchmark("gpu_sweep")
    tree = {"ops": [{"time_s": -1.0}, {"time_s": 2.0}, {"time_s": float("nan")}], "a": {"b": float("inf"), "ok": True}}
    found = bench.bad_numbers(tree)
    assert found == {".ops[].time_s": {"count": 2, "example": "-1.0"}, ".a.b": {"count": 1, "example": "inf"}}


def test_checks_flag_an_op_over_its_roof_only_when_not_marked():
    bench = load_benchmark("gpu_sweep")
    report = {"environment": {"device_name": "NVIDIA H200"}, "summary": {"kernel_time_attributed_share": 0.9},
              "ops": [{"name": "mm", "efficiency": 1.2, "above_roof": True, "time_s": 1.0},
                      {"name": "add", "efficiency": 1.1, "time_s": 1.0},
                      {"name": "weird", "efficiency": 0.0, "modeled": False, "time_s": 3.0},
                      {"name": "odd", "efficiency": 0.0, "modeled": False, "time_s": 4.0}]}
    checks = bench.report_checks(report, "cuda", "NVIDIA H200")
    assert checks["over_roof_unflagged"] == ["add"] and checks["above_roof_flagged"] == 1
    assert checks["unmodelled_top"] == [["odd", 4.0], ["weird", 3.0]]
    assert checks["device_ok"] and checks["attributed_share"] == 0.9
    assert bench.report_checks({"environment": {"device_name": "AMD EPYC"}}, "cuda", "NVIDIA H200")["device_ok"] is False


def test_every_case_script_compiles_and_names_are_unique():
    cases = load_benchmark("gpu_sweep_cases").CASES
    assert len({c.name for c in cases}) == len(cases) >= 20
    for case in cases:
        compile(case.script(), case.name, "exec")


@pytest.mark.slow
def test_cpu_sweep_of_one_case_and_one_gpu_only(tmp_path, capsys, cpu_ceilings):
    from roofline.device import save_ceilings

    bench = load_benchmark("gpu_sweep")
    save_ceilings(cpu_ceilings, tmp_path / "ceilings.json")
    out = tmp_path / "out"
    argv = [str(out), "--device", "cpu", "--cases", "fused_adamw,cuda_graph_replay", "--quick", "--ceilings",
            str(tmp_path / "ceilings.json")]
    assert bench.main(argv) == 0
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["gpu"] == "cpu" and sweep["torch_version"] and "--device cpu" in sweep["command"]
    ran, skipped = sweep["cases"]
    assert skipped == {"case": "cuda_graph_replay", "doc": skipped["doc"], "skipped": "GPU only: CUDA graphs"}
    assert ran["profile"]["rc"] == 0 and ran["trace"]["rc"] == 0 and ran["doctor"]["rc"] == 0, ran["broken"]
    assert ran["broken"] == [] and ran["checks"]["bad_numbers"] == {}
    assert ran["checks"]["ops"] > 0 and ran["checks"]["unmodelled_ops"] == 0
    assert ran["trace_agrees"] is True and ran["compared"] == "op_time_s"
    assert isinstance(ran["doctor_findings"], list)
    assert sorted(p.name for p in out.iterdir()) == ["cases.tgz", "sweep.json", "sweep.md"]
    with tarfile.open(out / "cases.tgz") as tar:
        files = sorted(m.name for m in tar.getmembers() if m.isfile())
    assert files == ["cases/fused_adamw/profile/report.json.gz", "scripts/cuda_graph_replay.py", "scripts/fused_adamw.py"]
    assert capsys.readouterr().out.rstrip().endswith("| cuda_graph_replay | skipped: GPU only: CUDA graphs | | | | | | | | |")


def test_a_case_breaks_on_a_hang_an_exit_a_traceback_or_a_disagreeing_trace():
    bench = load_benchmark("gpu_sweep")
    ok = {"rc": 0, "timed_out": False, "traceback": False}
    checks = bench.report_checks({"environment": {"device_name": "NVIDIA H200"}, "ops": []}, "cuda", "NVIDIA H200")
    row = {"profile": ok, "trace": ok, "doctor": ok, "checks": checks, "trace_agrees": True, "trace_ratio": 1.0}
    assert bench.failed(row) == []
    assert bench.failed({**row, "trace": {"rc": None, "timed_out": True, "traceback": False}}) == ["trace hung"]
    assert bench.failed({**row, "doctor": {**ok, "traceback": True}}) == ["doctor traceback"]
    assert bench.failed({**row, "trace_agrees": False, "trace_ratio": 0.9}) == ["trace/profile 0.9"]
    assert bench.failed({"profile": ok}) == ["no report.json"]
    assert bench.failed({"profile": {**ok, "rc": 2}}) == ["profile exit 2"]


def test_batch_selects_only_its_cases_and_an_empty_batch_is_exit_2(tmp_path, capsys):
    bench = load_benchmark("gpu_sweep")
    cases = load_benchmark("gpu_sweep_cases").CASES
    assert [sum(c.batch == b for c in cases) for b in (1, 2, 3)] == [21, 14, 19]
    assert bench.main([str(tmp_path), "--device", "cpu", "--batch", "9"]) == 2
    assert "no case in batch 9; batches: [1, 2, 3]" in capsys.readouterr().err
    assert bench.main([str(tmp_path), "--device", "cpu", "--batch", "1", "--cases", "int8_int_mm"]) == 2
