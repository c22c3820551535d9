"""End to end on the CPU: a 2-process gloo DDP job profiled with `roofline profile --nproc 2`, merged into a
2-rank report; rank 1 sleeps each step and is found as the straggler, with the sleep named."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.report import Report

SCRIPT = Path(__file__).with_name("ddp_tiny.py")


@pytest.mark.slow
def test_ddp_job_profiled_merged_and_straggler_named(tmp_path, cpu_ceilings):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "roofline", "profile", "--nproc", "2", "--wait", "1", "--timed", "1", "--warmup",
           "1", "--active", "2", "-o", str(run_dir), str(SCRIPT), "--slow-rank", "1", "--sleep", "0.05"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Setting OMP_NUM_THREADS" not in done.stderr  # torchrun's banner: the job is given its thread count

    for rank in (0, 1):
        rank_report = Report.load(run_dir / f"rank{rank}" / "report.json")
        assert (rank_report.environment.rank, rank_report.environment.world_size) == (rank, 2)
        assert rank_report.environment.backend == "gloo"
        assert (run_dir / f"rank{rank}" / "trace.json.gz").is_file()

    merged = Report.load(run_dir / "report.json")
    assert (run_dir / "report.html").is_file()
    assert [r.rank for r in merged.ranks] == [0, 1]
    assert merged.environment.world_size == 2 and merged.environment.backend == "gloo"
    slow = merged.ranks[1]
    assert slow.straggler and not merged.ranks[0].straggler
    assert "sleep" in slow.slowest_op and "ddp_tiny.py" in slow.slowest_op
    assert merged.ranks[0].communication_time_s > 0
    assert merged.ranks[0].exposed_communication_s > merged.ranks[1].exposed_communication_s
    (collective,) = [c for c in merged.distributed.collectives if c.kind == "all_reduce"]
    assert collective.bytes == (32 * 64 + 64 + 64 * 4 + 4) * 4 and collective.busbw_bytes_per_s > 0
    (finding,) = [f for f in merged.findings if f.rule == "straggler"]
    assert "rank 1" in finding.title and "sleep" in finding.title
    # printed: rank 0's report (the only rank that prints), then the merged run's ranks and findings, as `merge` does
    assert done.stdout.count("roofline profile: ddp_tiny.py") == 1 and "Doctor:" in done.stdout
    merged_part = done.stdout[done.stdout.rindex("rank(s), gloo backend"):]
    assert "straggler: rank 1" in merged_part and finding.title.split(":")[0] in merged_part
    assert " ".join(merged_part.split()).endswith(f"{run_dir / 'report.html'}")

    again = subprocess.run([sys.executable, "-m", "roofline", "merge", str(run_dir), "-o", str(tmp_path / "m"),
                            "--no-png", "--no-html"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "straggler: rank 1" in again.stdout

    traces = [str(run_dir / f"rank{r}" / "trace.json.gz") for r in (0, 1)]
    from roofline.distributed.merge import merge_trace_files

    from_traces = merge_trace_files(traces, ceilings_file=str(run_dir / "ceilings.json"))
    assert [r.rank for r in from_traces.ranks] == [0, 1] and from_traces.ranks[1].straggler


def test_each_rank_gets_a_share_of_the_cores_unless_the_user_chose(monkeypatch):
    from roofline.distributed.launch import rank_threads_env

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    env, said = rank_threads_env(3)
    assert env["OMP_NUM_THREADS"] == "2" and said.startswith("OMP_NUM_THREADS=2 per rank: 8 cores over 3 ranks")
    assert rank_threads_env(16)[0]["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    env, said = rank_threads_env(3)
    assert env["OMP_NUM_THREADS"] == "5" and said == "OMP_NUM_THREADS=5 per rank, as set"


def test_nproc_needs_a_script(tmp_path):
    from roofline.cli import main

    assert main(["profile", "--nproc", "2", "--model", "llama-tiny", "-o", str(tmp_path)]) == 2


def test_merge_of_an_empty_directory_is_one_clear_error(tmp_path, capsys):
    from roofline.cli import main

    assert main(["merge", str(tmp_path)]) == 2
    assert "no rank{r}/report.json" in capsys.readouterr().err


def test_merge_of_a_folder_of_profiler_traces_says_to_trace_them(tmp_path, capsys):
    """tensorboard_trace_handler writes one folder of rank traces; `roofline merge` of it said only to re-profile."""
    from roofline.cli import main

    for rank in (0, 1):
        (tmp_path / f"rank{rank}.1796318098288353085.pt.trace.json").write_text('{"traceEvents": []}')
    assert main(["merge", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds 2 torch.profiler traces" in err and f"roofline trace {tmp_path}/*.pt.trace.json" in err
