"""Merging ranks into one Report, the distributed doctor rules, and the launcher's pieces (no processes)."""

import argparse
import json

import pytest
from rank_traces import write_rank_trace as _trace

from roofline.cli.profile import forwarded_profile_args
from roofline.distributed.comm import RankTimeline, Span
from roofline.distributed.launch import torchrun_command
from roofline.distributed.merge import RankInput, merge_ranks, merge_trace_files, write_merged
from roofline.distributed.rank import MULTICAST_OFF, current_rank, multicast_off_env, prepare_rank, stamp_rank
from roofline.doctor import diagnose
from roofline.errors import RooflineError
from roofline.doctor.distributed_evidence import syncs_near_collectives
from roofline.report import (
    CollectiveRecord,
    DistributedInfo,
    Environment,
    OpRecord,
    RankRecord,
    Report,
    Timing,
)


def _rank(rank, *, compute_us, sleep_us=0, comm_us=100):
    """A GPU rank: compute kernels, then an all-reduce that lasts until the slowest rank has arrived."""
    step = 2000
    device = [Span("sm90_gemm", 0, compute_us), Span("ncclDevKernel_AllReduce_Sum_f32_RING_LL", compute_us + sleep_us,
                                                      compute_us + sleep_us + comm_us, communication=True)]
    report = Report(kind="profile", environment=Environment(device_name="NVIDIA H200", rank=rank, world_size=2,
                                                            backend="nccl"),
                    ops=[OpRecord(name="aten::mm", time_s=compute_us / 1e6, source="train.py:10")],
                    step_time=Timing.from_samples([step / 1e6], "test"))
    timeline = RankTimeline(f"rank{rank}", device=device, steps=[Span("ProfilerStep#4", 0, step)])
    if sleep_us:
        timeline.builtin_calls.append(Span("<built-in function sleep>", 0, sleep_us, tid=1))
    return RankInput(rank, report, timeline)


def test_merge_names_the_straggler_and_fills_rank_rows():
    fast = _rank(0, compute_us=500, comm_us=1200)
    slow = _rank(1, compute_us=500, sleep_us=1000, comm_us=200)
    merged = merge_ranks([slow, fast])
    merged.findings = diagnose(merged)
    assert [r.rank for r in merged.ranks] == [0, 1]
    rows = {r.rank: r for r in merged.ranks}
    assert rows[1].straggler and not rows[0].straggler
    assert rows[1].slowest_op.startswith("sleep")
    assert rows[0].exposed_communication_s == pytest.approx(1200e-6)
    assert rows[0].hidden_communication_share == 0.0
    row = json.loads(merged.to_json())["ranks"][0]
    for key in ("step_time_s", "compute_time_s", "communication_time_s", "idle_time_s", "hostname", "device_name"):
        assert key in row
    assert merged.environment.world_size == 2 and merged.environment.backend == "nccl"
    info = merged.distributed
    assert info.stragglers[0].rank == 1
    (collective,) = info.collectives
    assert collective.kind == "all_reduce" and collective.time_s == pytest.approx(200e-6)
    rules = {f.rule: f for f in merged.findings}
    assert "straggler" in rules and "rank 1" in rules["straggler"].title
    assert "sleep" in rules["straggler"].title
    roundtrip = Report.from_dict(json.loads(merged.to_json()))
    assert roundtrip.ranks == merged.ranks and roundtrip.distributed == merged.distributed


def test_write_merged_returns_every_file_it_wrote(tmp_path):
    """`roofline merge` printed only report.json as written, beside the roofline.png and report.html it wrote."""
    merged = merge_ranks([_rank(0, compute_us=500), _rank(1, compute_us=500, sleep_us=1000)])
    written = write_merged(merged, tmp_path / "all")
    assert [p.name for p in written] == ["report.json", "roofline.png", "report.html"]
    assert all(p.is_file() for p in written)
    assert [p.name for p in write_merged(merged, tmp_path / "json", png=False, html=False)] == ["report.json"]


def test_exposed_communication_rule_takes_the_least_exposed_rank():
    merged = merge_ranks([_rank(0, compute_us=500, comm_us=600), _rank(1, compute_us=520, comm_us=580)])
    merged.findings = diagnose(merged)
    (finding,) = [f for f in merged.findings if f.rule == "exposed-communication"]
    assert finding.evidence["exposed_communication_s"] == pytest.approx(580e-6)
    assert not [f for f in merged.findings if f.rule == "straggler"]


def test_tiny_collectives_rule():
    report = Report(ranks=[RankRecord(0, step_time_s=0.01), RankRecord(1, step_time_s=0.01)])
    report.distributed = DistributedInfo(world_size=2, steps=3, collectives=[
        CollectiveRecord(kind="all_reduce", bytes=4096.0, calls_per_step=40, time_s=50e-6, total_time_per_step_s=0.002,
                         algbw_bytes_per_s=1e8, example="ncclDevKernel_AllReduce_Sum_f32_RING_LL")])
    (finding,) = diagnose(report, rules=["tiny-collectives"])
    assert finding.evidence["calls_per_step"] == 40
    assert 0 < finding.estimated_savings_s < 3 * 0.002


def test_host_sync_beside_a_collective_is_found_in_a_single_rank_report():
    ops = [OpRecord(name="aten::mm", step=0, index=0), OpRecord(name="c10d::allreduce_", step=0, index=1),
           OpRecord(name="aten::_local_scalar_dense", step=0, index=2, source="train.py:42", cpu_time_s=1e-3),
           OpRecord(name="aten::mm", step=1, index=3), OpRecord(name="c10d::barrier", step=1, index=4)]
    report = Report(ops=ops, steps=2)
    sites = {s.location: s for s in syncs_near_collectives(report)}
    assert sites["train.py:42"].collectives == ["c10d::allreduce_"]
    assert "c10d::barrier" in sites
    findings = diagnose(report, rules=["collective-host-sync"])
    assert {f.locations[0] for f in findings} == {"train.py:42", "c10d::barrier"}


def test_distributed_rules_stay_quiet_on_a_single_rank_report():
    report = Report(ops=[OpRecord(name="aten::mm", time_s=1e-3)])
    assert diagnose(report, rules=["exposed-communication", "straggler", "tiny-collectives",
                                   "collective-host-sync"]) == []


def test_merge_trace_files_reads_ranks_from_distributed_info(tmp_path, cpu_ceilings, monkeypatch):
    from roofline.capture import kineto
    from roofline.device import save_ceilings

    ceilings = save_ceilings(cpu_ceilings, tmp_path / "ceilings.json")
    paths = [_trace(tmp_path / "b.json.gz", 1, 2000, 100), _trace(tmp_path / "a.json.gz", 0, 500, 1600)]
    reads = []
    load = kineto.load_trace
    monkeypatch.setattr(kineto, "load_trace", lambda path: reads.append(path) or load(path))
    merged = merge_trace_files(paths, ceilings_file=str(ceilings))
    assert sorted(reads) == sorted(paths)  # each rank's trace parsed once, by the one Kineto reader
    assert [r.rank for r in merged.ranks] == [0, 1]
    assert merged.distributed.stragglers[0].rank == 1


def test_traces_of_one_process_are_not_merged_as_ranks(tmp_path, cpu_ceilings):
    from roofline.device import save_ceilings

    ceilings = str(save_ceilings(cpu_ceilings, tmp_path / "ceilings.json"))
    cycles = [_trace(tmp_path / f"cycle{i}.json.gz", 0, 500, 0, distributed=False) for i in (1, 2)]
    with pytest.raises(RooflineError, match="these 2 traces are not ranks of one distributed job"):
        merge_trace_files(cycles, ceilings_file=ceilings)
    with pytest.raises(RooflineError, match="given twice"):
        merge_trace_files([cycles[0], str(tmp_path / "." / "cycle1.json.gz")], ceilings_file=ceilings)
    named = [_trace(tmp_path / f"rank{r}.json.gz", r, 500, 0, distributed=False) for r in (1, 0)]
    assert [r.rank for r in merge_trace_files(named, ceilings_file=ceilings).ranks] == [0, 1]


def test_a_trace_of_no_job_among_a_jobs_ranks_is_refused_naming_it(tmp_path, cpu_ceilings):
    """`roofline trace *.json` in a folder holding a 2-rank job's traces and one single-process trace merged all three
    as 'a 3-rank job', the stray trace a rank of it."""
    from roofline.device import save_ceilings

    ceilings = str(save_ceilings(cpu_ceilings, tmp_path / "ceilings.json"))
    ranks = [_trace(tmp_path / f"r{r}.json.gz", r, 500, 100) for r in (0, 1)]
    stray = _trace(tmp_path / "single.json.gz", 0, 500, 0, distributed=False)
    with pytest.raises(RooflineError, match=r"single.json.gz is not a rank of the job the other traces record "
                                            r"\(nccl, world size 2\)"):
        merge_trace_files(ranks + [stray], ceilings_file=ceilings)


def test_two_profiler_cycles_of_each_rank_are_not_merged_as_twice_the_ranks(tmp_path, cpu_ceilings):
    """tensorboard_trace_handler writes a file per profiler cycle: `roofline trace logdir/*.pt.trace.json` of a 2-rank
    job profiled for two cycles merged its 4 files as 'a 4-rank gloo job'."""
    from roofline.device import save_ceilings

    ceilings = str(save_ceilings(cpu_ceilings, tmp_path / "ceilings.json"))
    cycles = [_trace(tmp_path / f"rank{r}.{cycle}.pt.trace.json.gz", r, 500, 100)
              for r in (0, 1) for cycle in (1, 2)]
    with pytest.raises(RooflineError, match=r"4 traces for a job of 2 ranks: rank 0 is in 2 of them "
                                            r"\(rank0.1.pt.trace.json.gz, rank0.2.pt.trace.json.gz\)"):
        merge_trace_files(cycles, ceilings_file=ceilings)


def test_rank_environment_and_output_dir(tmp_path):
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}
    info = current_rank(env)
    assert (info.rank, info.world_size, info.local_rank) == (1, 2, 1)
    assert current_rank({}) is None
    args = argparse.Namespace(output=str(tmp_path), device="cpu")
    prepare_rank(args, info)
    assert args.output == str(tmp_path / "rank1")
    report = Report()
    stamp_rank(report, info)
    assert (report.environment.rank, report.environment.world_size) == (1, 2)


def test_multicast_stays_off_in_launched_processes():
    env = multicast_off_env({"PATH": "/bin", "NCCL_NVLS_ENABLE": "1"})
    assert all(env[k] == v for k, v in MULTICAST_OFF.items())


def test_profile_options_are_forwarded_to_the_ranks():
    from roofline.cli import build_parser

    args = build_parser().parse_args(["profile", "--nproc", "2", "--timed", "1", "--no-stack", "-o", "out",
                                      "train.py", "--lr", "0.1"])
    words = forwarded_profile_args(args)
    assert words == ["--timed", "1", "--no-stack"] or set(words) >= {"--timed", "1", "--no-stack"}
    assert "--nproc" not in words and "-o" not in words and "train.py" not in words
    cmd = torchrun_command(2, ["profile", *words])
    assert cmd[1:3] == ["-m", "roofline.distributed.torchrun_quiet"] and "--nproc-per-node=2" in cmd


def test_ranks_that_record_only_their_rank_and_world_size_are_merged(tmp_path):
    """distributedInfo with a rank and world size but no backend, and no collective in the window: each trace still
    vouches for being a rank of a 2-rank job, so neither is refused as a stray."""
    paths = []
    for rank in (0, 1):
        events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
                   "dur": 100},
                  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50,
                   "args": {"Input Dims": [[8, 8], [8, 8]], "Input type": ["float", "float"]}}]
        path = tmp_path / f"job_rank{rank}.json"
        path.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2},
                                    "traceEvents": events}))
        paths.append(path)
    assert merge_trace_files(paths).distributed.ranks_merged == [0, 1]
