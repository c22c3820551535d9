"""`roofline trace --ncu FILE` and `roofline analyze --ncu` on a machine without ncu or a GPU (one line, exit 2);
the ncu runner's plumbing against a stand-in ncu that answers as the real one does."""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import sys

import pytest
from ncu_cases import DATA, H200, REPO

from roofline.errors import RooflineError

NCU = DATA / "ncu_h200"


def _cli(capsys, *argv):
    """The CLI in this process (no interpreter start-up per case): its exit code and what it printed."""
    from types import SimpleNamespace

    from roofline.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def _one_error_line(proc, match):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roofline: error:") and match in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def _fake_ncu(tmp_path, known=("dram__bytes_read", "dram__bytes_write", "gpu__time_duration", "lts__t_bytes"),
              fail_with_many=False, to_stderr=False):
    """An executable that answers --query-metrics with ``known`` and a profiling run with the add fixture's CSV
    (failing, as ncu does on an unknown metric, when asked for more than three metrics and ``fail_with_many``)."""
    csv_text = gzip.decompress((NCU / "add.csv.gz").read_bytes()).decode()
    (tmp_path / "add.csv").write_text(csv_text)
    script = tmp_path / "ncu"
    script.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
open({str(tmp_path / 'calls.txt')!r}, 'a').write(' '.join(args) + '\\n')
if '--query-metrics' in args:
    print('Device NVIDIA H200 (GH100)')
    for name in {list(known)!r}:
        print(name + '    some description')
    sys.exit(0)
metrics = args[args.index('--metrics') + 1].split(',')
if {fail_with_many!r} and len(metrics) > 3:
    print('==ERROR== Failed to profile: unknown metric', file=sys.stderr)
    sys.exit(1)
(sys.stderr if {to_stderr!r} else sys.stdout).write(open({str(tmp_path / 'add.csv')!r}).read())
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_analyze_ncu_without_ncu_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("ROOFLINE_NCU", raising=False)
    monkeypatch.setattr("roofline.capture.ncu_run._SEARCH", ())
    proc = _cli(capsys, "analyze", "--model", "matmul", "--ncu", "-o", tmp_path / "o")
    _one_error_line(proc, "needs Nsight Compute")


def test_analyze_ncu_without_a_gpu_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ROOFLINE_NCU", str(_fake_ncu(tmp_path)))
    proc = _cli(capsys, "analyze", "--model", "matmul", "--device", "cpu", "--ncu", "-o", tmp_path / "o")
    _one_error_line(proc, "needs an NVIDIA GPU")
    assert not (tmp_path / "o").exists()


def test_ncu_options_without_ncu_and_bad_metric_sets_are_refused(tmp_path, monkeypatch, capsys):
    proc = _cli(capsys, "analyze", "--model", "matmul", "--ncu-max-kernels", "5", "-o", tmp_path / "o")
    _one_error_line(proc, "need --ncu")
    monkeypatch.setenv("ROOFLINE_NCU", str(_fake_ncu(tmp_path)))
    proc = _cli(capsys, "analyze", "--model", "matmul", "--ncu", "--ncu-metrics", "dram;rm -rf", "-o", tmp_path / "o")
    _one_error_line(proc, "--ncu-metrics")


def test_trace_with_an_ncu_csv_puts_measured_bytes_in_the_report(tmp_path, capsys):
    out = tmp_path / "out"
    proc = _cli(capsys, "trace", str(H200 / "llama_tiny_fwd_fp16_b4_s512.json.gz"), "--ncu",
                str(NCU / "hf_llama_tiny_fwd_fp16_b4_s512.csv.gz"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Nsight Compute: 342 of 343 kernels joined" in " ".join(proc.stdout.split())
    report = json.loads((out / "report.json").read_text())
    assert report["ncu"]["kernels"] == 343 and report["ncu"]["joined_share"] >= 0.98
    assert sum(op["measured"] is not None for op in report["ops"]) >= 340
    html = (out / "report.html").read_text()
    assert '"joined_share":' in html and html.count("data:image/png;base64,") == 2
    assert (out / "memory.png").read_bytes()[:4] == b"\x89PNG"


def test_trace_with_a_missing_ncu_csv_is_one_line_and_exit_2(tmp_path, capsys):
    proc = _cli(capsys, "trace", str(H200 / "llama_tiny_fwd_fp16_b4_s512.json.gz"), "--ncu", str(tmp_path / "nope.csv"),
                "-o", str(tmp_path / "out"))
    _one_error_line(proc, "ncu CSV file not found")


def test_the_runner_keeps_only_metrics_this_ncu_lists_and_runs_one_step_without_clock_control(tmp_path, monkeypatch):
    from roofline.capture.ncu_csv import parse_ncu_csv
    from roofline.capture.ncu_metrics import METRIC_SETS
    from roofline.capture.ncu_run import profile_step

    monkeypatch.setenv("ROOFLINE_NCU", str(_fake_ncu(tmp_path)))
    run = profile_step({"model": "matmul"}, METRIC_SETS["full"], max_kernels=7)
    assert run.metrics == ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
                           "lts__t_bytes.sum"]
    assert any("does not list" in note and "lts__t_sector_hit_rate.pct" in note for note in run.notes)
    call = (tmp_path / "calls.txt").read_text().splitlines()[-1]
    assert "--clock-control none" in call and "--profile-from-start off" in call and "--launch-count 7" in call
    assert call.endswith(".json") and "roofline.cli._ncu_step" in call
    assert parse_ncu_csv(run.csv_text)[0].metrics["dram__bytes_read.sum"] == 1073775616


def test_a_failed_ncu_run_is_retried_with_dram_bytes_alone(tmp_path, monkeypatch):
    from roofline.capture.ncu_metrics import METRIC_SETS
    from roofline.capture.ncu_run import profile_step

    fake = _fake_ncu(tmp_path, known=("dram__bytes_read", "dram__bytes_write", "gpu__time_duration", "lts__t_bytes",
                                      "lts__t_sector_hit_rate"), fail_with_many=True)
    monkeypatch.setenv("ROOFLINE_NCU", str(fake))
    run = profile_step({"model": "matmul"}, METRIC_SETS["memory"], fallback=METRIC_SETS["dram"])
    assert run.metrics == METRIC_SETS["dram"]
    assert any("retried" in note for note in run.notes)
    with pytest.raises(RooflineError, match="unknown metric"):
        profile_step({"model": "matmul"}, METRIC_SETS["memory"])


def test_the_gpu_script_writes_its_summary_when_every_run_fails(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), PATH="/nonexistent")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "ncu_gpu.py"), str(tmp_path), "--budget", "200"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 1, proc.stderr
    summary = json.loads((tmp_path / "ncu_summary.json").read_text())
    assert summary["ok"] is False
    assert summary["runs"]["llama_tiny_ncu"]["rc"] == 2
    assert "needs Nsight Compute" in summary["runs"]["llama_tiny_ncu"]["error"]
    assert summary["checks"]["llama_tiny_ncu.checked"] is False


def test_the_profiled_child_runs_warm_up_then_exactly_one_step_inside_the_profiler_range(monkeypatch):
    import torch

    from roofline.cli import _ncu_step

    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: events.append("sync"))
    monkeypatch.setattr(torch.cuda.profiler, "start", lambda: events.append("start"))
    monkeypatch.setattr(torch.cuda.profiler, "stop", lambda: events.append("stop"))
    import roofline.analyze.live as live

    real = live.make_step

    def counting(*args, **kwargs):
        step = real(*args, **kwargs)

        def wrapped():
            events.append("step")
            return step()
        return wrapped

    monkeypatch.setattr(live, "make_step", counting)
    _ncu_step.run_step({"model": "matmul", "seq": 64, "device": "cpu", "warmup": 2})
    assert events == ["step", "step", "sync", "start", "step", "sync", "stop"]


def test_the_child_reports_a_bad_workload_in_one_line(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"model": "no-such-model", "device": "cpu"}))
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-m", "roofline.cli._ncu_step", str(spec)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("roofline: error:") and "no-such-model" in proc.stderr


def test_analyze_joins_what_the_runner_returns_and_says_how(monkeypatch):
    import argparse

    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.capture import ncu_run
    from roofline.cli import analyze

    csv_text = gzip.decompress((NCU / "hf_llama_tiny_fwd_fp16_b4_s512.csv.gz").read_bytes()).decode()
    seen = {}

    def fake_profile_step(spec, metrics, **kwargs):
        seen.update(spec=spec, metrics=metrics, **kwargs)
        return ncu_run.NcuRun(csv_text, metrics, ["ncu", "--clock-control", "none", "--metrics", "m", "--csv", "py"],
                              ["a note"])

    monkeypatch.setattr(ncu_run, "profile_step", fake_profile_step)
    report = analyze_trace_file(H200 / "llama_tiny_fwd_fp16_b4_s512.json.gz")
    args = argparse.Namespace(target=None, model="llama-tiny", batch=4, seq=512, dtype="fp16", backward=False,
                              warmup=0, ncu_max_kernels=9)
    text = analyze._ncu_join(report, args, "cuda:0", ["dram__bytes_read.sum"])
    assert text == csv_text
    assert seen["spec"] == {"target": None, "model": "llama-tiny", "batch": 4, "seq": 512, "dtype": "float16",
                            "device": "cuda:0", "backward": False, "warmup": 1}
    assert seen["max_kernels"] == 9 and seen["fallback"] == ["dram__bytes_read.sum", "dram__bytes_write.sum",
                                                            "gpu__time_duration.sum"]
    assert report.ncu.joined_share >= 0.98 and "a note" in report.ncu.notes
    assert report.ncu.method.endswith("ncu --clock-control none --metrics m --csv")


def test_a_table_that_arrives_on_stderr_is_found_too(tmp_path, monkeypatch):
    from roofline.capture.ncu_csv import parse_ncu_csv
    from roofline.capture.ncu_metrics import METRIC_SETS
    from roofline.capture.ncu_run import profile_step

    monkeypatch.setenv("ROOFLINE_NCU", str(_fake_ncu(tmp_path, to_stderr=True)))
    run = profile_step({"model": "matmul"}, METRIC_SETS["dram"])
    assert parse_ncu_csv(run.csv_text)[0].metrics["dram__bytes_write.sum"] == 519497216
