import json
import math

import pytest

from roofline.errors import RooflineError
from roofline.report import (
    SCHEMA_VERSION,
    Ceilings,
    DatasheetEntry,
    Finding,
    KernelRecord,
    LiveTensor,
    MemorySummary,
    OpRecord,
    Report,
    Summary,
    SyncSite,
    Timing,
    module_tree,
)

_OPS = [OpRecord(name="aten::mm", module="layers.0.mlp", dtype="bfloat16", flops=2e9, bytes=6e6, time_s=1e-5,
                 bound="compute", source="model.py:12", input_shapes=[[8, 8], [8, 8]], kernels=["gemm"], step=0)]


def full_report() -> Report:
    return Report(
        workload="synthetic",
        ceilings=Ceilings(device="cuda:0", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.5e12,
                          peak_flops_per_s={"bfloat16": 7.7e14, "float32": 5e13}, launch_overhead_s=5e-6,
                          launch_overhead_graph_s=9e-7,
                          datasheet=DatasheetEntry("H200", 4.8e12, {"bfloat16": 9.894e14}, "datasheet")),
        ops=list(_OPS),
        summary=Summary(total_time_s=1e-5, module_tree=module_tree(_OPS)),
        kernels=[KernelRecord("gemm", 0.0, 1e-5, 7, 0, "kernel", 0)],
        findings=[Finding("sync", "a sync", "sync", {"count": 3}, ["model.py:3"], 1e-3, "stall time", "remove it")],
        syncs=[SyncSite("item", "model.py:3", 3, 1e-3, 1.5)],
        memory=MemorySummary(peak_allocated_bytes=1024, counter="allocated",
                             peak_live_tensors=[LiveTensor(512, [128], "float32", "aten::empty", "", None)],
                             timeline=[[0.0, 0.0], [1e-3, 1024.0]]),
        step_time=Timing.from_samples([1e-3, 1.2e-3, 1.1e-3], "events"),
    )


def test_report_round_trips_through_json_unchanged(tmp_path):
    report = full_report()
    path = report.save(tmp_path / "r.json")
    assert Report.load(path) == report
    gz = report.save(tmp_path / "r.json.gz")
    assert Report.load(gz) == report


@pytest.mark.parametrize("per_chunk", [1, 2, 4096])
def test_json_in_chunks_is_the_same_bytes(per_chunk):
    report = full_report()
    report.ops = [OpRecord(name=f"aten::op{i}", time_s=i * 1e-6, efficiency=math.nan if i == 1 else 0.5)
                  for i in range(5)]
    report.kernels = report.kernels * 3
    chunks = list(report.json_chunks(per_chunk))
    assert b"".join(chunks) == report.json_bytes()
    if per_chunk < len(report.ops):
        assert len(chunks) > len(Report.__struct_fields__) + 1  # the op list came in pieces
    assert json.loads(b"".join(chunks))["ops"][1]["efficiency"] is None


@pytest.mark.parametrize("modeled", [True, False])
def test_json_in_chunks_asks_for_late_findings_once_before_them(modeled):
    """The ops and kernels are encoded before the findings are asked for (a doctor running elsewhere sets them),
    an unmodelled op among them or not."""
    report = full_report()
    report.ops[0].modeled = modeled
    expected = report.json_bytes()
    findings, report.findings = report.findings, []
    asked = []

    def settle():
        asked.append(1)
        report.findings = findings

    chunks = report.json_chunks(before_findings=settle)
    head = next(chunks)
    assert asked == []
    assert head + b"".join(chunks) == expected and asked == [1] and findings


def test_stable_field_names_are_present(tmp_path):
    data = json.loads(full_report().to_json())
    assert data["schema_version"] == SCHEMA_VERSION
    for key in ("torch_version", "device_name", "python_version", "command_line", "timestamp"):
        assert key in data["environment"]
    for key in ("device", "memory_bandwidth_bytes_per_s", "peak_flops_per_s", "launch_overhead_s", "datasheet"):
        assert key in data["ceilings"]
    for key in ("name", "module", "dtype", "flops", "bytes", "time_s", "arithmetic_intensity",
                "achieved_flops_per_s", "attainable_flops_per_s", "efficiency", "bound", "source"):
        assert key in data["ops"][0]
    assert {"kind", "location", "count", "stall_s"} <= set(data["syncs"][0])
    assert {"peak_allocated_bytes", "peak_live_tensors"} <= set(data["memory"])


def test_non_finite_numbers_become_null():
    report = Report(ops=[OpRecord(name="x", arithmetic_intensity=math.inf, efficiency=math.nan)])
    data = json.loads(report.to_json())
    assert data["ops"][0]["arithmetic_intensity"] is None and data["ops"][0]["efficiency"] is None


def test_timing_keeps_samples_median_and_spread():
    t = Timing.from_samples([4.0, 1.0, 3.0, 2.0], "x")
    assert t.median_s == 2.5 and t.n == 4 and t.spread_s == pytest.approx(1.5)


@pytest.mark.parametrize(
    "content, message",
    [(b"", "cannot parse"), (b"{not json", "cannot parse"), (b"[1,2]", "not a roofline report"),
     (b'{"schema_version": 99}', "newer"), (b'{"schema_version": 1, "ops": [{"nom": 1}]}', "malformed")],
)
def test_unreadable_reports_raise_one_line_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(RooflineError, match=message) as info:
        Report.load(path)
    assert "\n" not in str(info.value)


def test_missing_report_file_is_a_clear_error(tmp_path):
    with pytest.raises(RooflineError, match="not found"):
        Report.load(tmp_path / "nope.json")


def test_save_is_atomic_and_keeps_the_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    full_report().save(path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(RooflineError, match=r"cannot write .*r\.json: disk full"):  # one line for the user, exit 2
        Report(workload="other").save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_is_report_file_reads_only_the_head_of_reports_and_traces(tmp_path):
    import gzip
    import json

    from roofline.report import Report

    report = Report()
    assert Report.is_report_file(report.save(tmp_path / "r.json"))
    assert Report.is_report_file(report.save(tmp_path / "r.json.gz"))
    (tmp_path / "pretty.json").write_text(report.to_json(indent=2))
    assert Report.is_report_file(tmp_path / "pretty.json")
    trace = {"schemaVersion": 1, "traceEvents": []}
    (tmp_path / "t.json").write_text(json.dumps(trace))
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(json.dumps(trace).encode()))
    assert not Report.is_report_file(tmp_path / "t.json")
    assert not Report.is_report_file(tmp_path / "t.json.gz")
    assert not Report.is_report_file(tmp_path / "missing.json")


def test_committed_reports_written_before_the_cache_roof_load_with_its_defaults():
    """Reports in benchmarks/results predate OpRecord.roof and the ceilings' cache fields: they load as DRAM-judged."""
    from pathlib import Path

    results = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200"
    paths = sorted(results.glob("*/report.json.gz"))
    assert len(paths) >= 5
    for path in paths:
        report = Report.load(path)
        assert report.ops, path
        assert {op.roof for op in report.ops} == {"dram"}, path
        assert report.ceilings.cache_bandwidth_bytes_per_s == 0 and report.ceilings.cache_bytes == 0
        assert report.summary.ops_from_cache == 0


def test_a_schema_1_report_loads_as_schema_2_with_typed_records():
    from roofline.report import DistributedInfo, ProfileInfo, RankRecord

    old = json.loads(full_report().to_json())
    old["schema_version"] = 1
    old["ranks"] = [{"rank": 0, "step_time_s": 0.01, "straggler": False, "slowest_op": None},
                    {"rank": 1, "step_time_s": 0.02, "straggler": True, "slowest_op": "aten::mm at x.py:3"}]
    old["extra"] = {"trace": {"steps": 3},
                    "profile": {"schedule": {"wait": 1, "timed": 3, "warmup": 1, "active": 3}, "steps_seen": 8,
                                "whole_block": False, "device": "cuda:0", "error": None, "step_source": "forward",
                                "syncs_from_trace": [{"kind": "item", "location": "a.py:1", "count": 3,
                                                      "stall_s": 1e-5, "per_step": 1.0}]},
                    "distributed": {"world_size": 2, "backend": "nccl", "steps": 2.0,
                                    "stragglers": [{"rank": 1, "busy_time_s": 0.02, "median_busy_time_s": 0.01,
                                                    "excess_s": 0.01, "slowest_op": None,
                                                    "slowest_op_excess_s": None}],
                                    "collectives": [{"kind": "all_reduce", "bytes": 4096.0, "calls": 2}],
                                    "syncs_near_collectives": [{"rank": 0, "sites": []}]}}
    report = Report.from_dict(old)
    assert report.schema_version == SCHEMA_VERSION == 2
    assert report.ranks[1] == RankRecord(1, step_time_s=0.02, straggler=True, slowest_op="aten::mm at x.py:3")
    assert isinstance(report.profile, ProfileInfo) and report.profile.step_source == "forward"
    assert report.profile.syncs_from_trace == [SyncSite("item", "a.py:1", 3, 1e-5, 1.0)]
    assert isinstance(report.distributed, DistributedInfo) and report.distributed.stragglers[0].rank == 1
    assert report.extra == {"trace": {"steps": 3}}
    again = json.loads(report.to_json())
    assert again["profile"]["step_source"] == "forward" and again["distributed"]["collectives"][0]["calls"] == 2


def test_nulls_where_numbers_go_take_the_default_and_bad_numbers_fail_in_one_line(tmp_path):
    report = Report(ops=[OpRecord(name="x", flops=2.0, bytes=0.0, efficiency=math.nan)],
                    summary=full_report().summary)
    report.ops[0].arithmetic_intensity = math.inf
    back = Report.load(report.save(tmp_path / "r.json"))
    assert back.ops[0].flops == 2.0 and back.ops[0].arithmetic_intensity == 0.0 and back.ops[0].efficiency == 0.0
    data = json.loads(full_report().to_json())
    data["ops"][0]["time_s"] = -1.0
    with pytest.raises(RooflineError, match=r"malformed roofline report: .*ops\[0\]\.time_s"):
        Report.from_dict(data)
    data["ops"][0]["time_s"] = "fast"
    with pytest.raises(RooflineError, match=r'malformed roofline report: ops\[0\]\.time_s is "fast", expected a number$'):
        Report.from_dict(data)


def test_module_tree_is_built_with_the_summary_and_filled_on_load_for_older_reports():
    """Summary.module_tree holds time, FLOPs, bytes and calls per module prefix (what the HTML tree shows); a file
    written before it was a field, schema 1 or 2, gets the same tree when it loads."""
    from roofline.analyze.roofline import summarize

    modules = ["layers.0.mlp", "layers.0.attn", "layers.1.mlp", "", "layers.0.mlp", "head"]
    ops = [OpRecord(name=f"aten::op{i}", module=m, flops=1e6 * (i + 1), bytes=1e3 * (i + 1), time_s=1e-6 * (i + 1),
                    count=i + 1, index=i) for i, m in enumerate(modules)]
    summary = summarize(ops)
    tree = summary.module_tree

    def node(path: str):
        found = tree
        for part in path.split("."):
            (found,) = [c for c in found.children if c.name == part]
        return found

    assert tree.name == "(model)" and tree.n == sum(op.count for op in ops)
    assert tree.time_s == pytest.approx(summary.total_time_s) and tree.flops == pytest.approx(summary.total_flops)
    for prefix, time_s in summary.time_by_module_s.items():
        if prefix != "(top level)":
            under = [op for op in ops if f"{op.module}.".startswith(prefix + ".")]
            assert node(prefix).time_s == pytest.approx(time_s)
            assert (node(prefix).bytes, node(prefix).n) == (sum(o.bytes for o in under), sum(o.count for o in under))
    assert [c.name for c in tree.children] == ["layers", "head"]  # by time
    assert [c.name for c in node("layers.0").children] == ["mlp", "attn"]

    written = json.loads(Report(ops=ops, summary=summary).to_json())
    del written["summary"]["module_tree"]
    for version in (1, 2):
        older = dict(written, schema_version=version)
        assert Report.from_json(json.dumps(older).encode()).summary.module_tree == tree
        assert Report.from_dict(json.loads(json.dumps(older))).summary.module_tree == tree


def test_a_trace_or_other_json_is_not_taken_for_an_empty_report(tmp_path):
    import pytest as _pytest

    from roofline.errors import RooflineError
    from roofline.report import Report

    trace = tmp_path / "trace.json"
    trace.write_text('{"traceEvents": [{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2}]}')
    with _pytest.raises(RooflineError, match="is a trace, not a roofline report"):
        Report.load(trace)
    other = tmp_path / "other.json"
    other.write_text('{"ops": []}')
    with _pytest.raises(RooflineError, match="no schema_version field"):
        Report.load(other)
    report = Report(workload="w")
    written = tmp_path / "report.json"
    report.save(written)
    assert Report.load(written).workload == "w"


def test_complex_ops_take_their_real_parts_roof():
    """Complex work is counted in real FLOPs, so a complex128 op is judged against the float64 roof (it fell back
    to float32's, 30x higher here) and complex64 against float32's."""
    from roofline.report import Ceilings
    c = Ceilings(device="cpu", memory_bandwidth_bytes_per_s=20e9,
                 peak_flops_per_s={"float32": 300e9, "float64": 10e9, "float16": 600e9})
    assert (c.peak_for("complex128"), c.peak_for("complex64"), c.peak_for("complex32")) == (10e9, 300e9, 600e9)
    assert Ceilings(device="cpu", memory_bandwidth_bytes_per_s=20e9,
                    peak_flops_per_s={"float32": 300e9}).peak_for("complex128") == 300e9
