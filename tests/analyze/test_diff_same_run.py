"""`roofline diff` of a run's report against `roofline trace` of the trace.json.gz that run wrote: one run read two
ways, not two workloads. The first session's sweep found it read as "different workloads (s.py vs trace.json.gz)",
on "different devices (AMD EPYC; CPU)", with a 100% slowdown where a live report held one step's medians and the
trace every profiled step."""

from __future__ import annotations

import warnings

import pytest
import torch

from roofline.analyze.diff import diff_reports, same_run
from roofline.analyze.pipeline import report_from_trace
from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.kineto import load_trace
from roofline.render.diff import diff_payload, render_diff_console
from roofline.render.trace_augment import write_augmented_trace
from roofline.report import Environment, Finding, OpRecord, Report


def test_a_runs_report_and_trace_of_its_trace_file_are_one_run(tmp_path, cpu_ceilings):
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU())
    x = torch.randn(8, 64)
    raw = tmp_path / "raw.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as p:
            model(x)
        p.export_chrome_trace(str(raw))
    run = report_from_trace(load_trace(str(raw)), cpu_ceilings, kind="profile", workload="s.py",
                            environment=Environment(device_name="AMD EPYC", timestamp="2026-12-02T01:32:36+00:00"))
    write_augmented_trace(raw, run, tmp_path / "trace.json.gz")
    read = analyze_trace_file(tmp_path / "trace.json.gz")
    written = dict(read.extra["written_by_roofline"])
    written.pop("trace_name", None)  # Kineto's traceName: the file it wrote first, where this torch records one
    assert written == {"workload": "s.py", "report_kind": "profile", "captured_at": "2026-12-02T01:32:36+00:00"}
    assert same_run(run, read) == "B" and same_run(read, run) == "A"

    d = diff_reports(run, read)
    assert d.warnings == []
    assert d.notes == ["A and B are one run of s.py read two ways (A: `roofline profile`, B: `roofline trace` of its "
                       "trace.json.gz), compared per step: what differs is what each reading counts, not the code or "
                       "the device"]
    assert d.total.delta_s == pytest.approx(0.0, abs=1e-9) and d.total.noise_s == 0.0
    assert all(r.status == "same" for r in d.ops) and d.op_key == "name @ module"
    text = render_diff_console(d)
    assert "different workloads" not in text and "different devices" not in text and "note: A and B are one run" in text

    other = Report(kind="profile", workload="t.py", environment=run.environment, ops=run.ops)
    assert same_run(other, read) == ""
    assert any("different workloads" in w for w in diff_reports(other, read).warnings)


def test_one_step_of_medians_against_every_step_is_compared_per_step_and_by_name():
    """`roofline analyze` keeps one step's medians with module paths; `roofline trace` of its trace keeps both
    profiled steps and (without with_modules) no module paths."""
    live = Report(kind="analyze", workload="llama-tiny", steps=1,
                  environment=Environment(timestamp="2026-12-02T01:33:00+00:00"),
                  ops=[OpRecord(name="aten::mm", module="layers.0.wq", time_s=3e-3, flops=4e9, bytes=1e6,
                                bound="compute"),
                       OpRecord(name="aten::mm", module="layers.1.wq", time_s=1e-3, flops=4e9, bytes=1e6,
                                bound="compute"),
                       OpRecord(name="aten::add", module="layers.0", time_s=1e-4, flops=1e3, bytes=8e3,
                                bound="memory")],
                  findings=[Finding(rule="unfused-chain", category="fusion", title="chain in layers.*", locations=["layers.*"])])
    live.summary.total_time_s = 4.1e-3
    traced = Report(kind="trace", workload="trace.json.gz", steps=2,
                    extra={"written_by_roofline": {"workload": "llama-tiny", "captured_at": "2026-12-02T01:33:00+00:00"}},
                    ops=[OpRecord(name="aten::mm", time_s=2e-3, flops=4e9, bytes=1e6, bound="compute", step=s)
                         for s in (0, 0, 1, 1)] + [OpRecord(name="aten::add", time_s=1.2e-4, flops=1e3, bytes=8e3,
                                                      bound="memory", step=s) for s in (0, 1)],
                    findings=[Finding(rule="unfused-chain", category="fusion", title="chain in (top level)",
                                      locations=["(top level)"])])
    traced.summary.total_time_s = 8.24e-3
    d = diff_reports(live, traced)
    assert d.op_key == "name" and d.modules == []
    assert {r.key: (r.a.time_s, r.b.time_s, r.b.flops, r.b.calls) for r in d.ops} == {
        "aten::mm": (pytest.approx(4e-3), pytest.approx(4e-3), 8e9, 2), "aten::add": (1e-4, 1.2e-4, 1e3, 1)}
    assert (d.total.a_total_s, d.total.b_total_s) == (pytest.approx(4.1e-3), pytest.approx(4.12e-3))
    assert d.total.quantity == "total device time per step (Summary.total_time_s / steps its ops cover)"
    assert (d.a_flops, d.b_flops) == (8e9 + 1e3, 8e9 + 1e3)
    assert d.findings_appeared == [] and d.findings_gone == []
    assert d.notes == ["A and B are one run of llama-tiny read two ways (A: `roofline analyze`, B: `roofline trace` "
                       "of its trace.json.gz), compared per step (A's ops cover 1 step(s), B's 2), ops and findings "
                       "by name (one side has no module paths): what differs is what each reading counts, not the "
                       "code or the device"]
    payload = diff_payload(d)
    assert payload["op_key"] == "name" and payload["notes"] == d.notes
    assert "Modules" not in render_diff_console(d)


def test_a_collective_without_a_recorded_size_diffs_as_unknown_bytes():
    """HTA's trace_diff pair: c10d::allreduce_ with no message size showed "0 B → 0 B" in the diff."""
    def allreduce(nbytes):
        return OpRecord(name="c10d::allreduce_", time_s=1e-3, bytes=nbytes, bound="communication", modeled=False)

    d = diff_reports(Report(ops=[allreduce(0.0), allreduce(0.0)]), Report(ops=[allreduce(0.0), allreduce(4096.0)]))
    (row,) = d.ops
    assert (row.a.unsized, row.b.unsized, row.b.bytes) == (2, 1, 4096.0)
    line = next(line for line in render_diff_console(d).splitlines() if line.startswith("c10d::allreduce_"))
    assert "?→>=4.1e+03" in line
    assert diff_payload(d)["ops"][0]["a"]["unsized"] == 2


def test_two_trace_readings_are_never_one_run_of_each_other():
    """Only a run's own report against `roofline trace` of its file is one run: a trace report whose written_by_roofline
    names the other side is still a trace, and two trace readings are compared as two reports."""
    stamp = "2026-12-02T01:32:36+00:00"
    written = {"workload": "s.py", "report_kind": "profile", "captured_at": stamp}
    a, b = (Report(kind="trace", workload="s.py", environment=Environment(timestamp=stamp),
                   extra={"written_by_roofline": written}) for _ in range(2))
    assert same_run(a, b) == "" and same_run(b, a) == ""
    live = Report(kind="profile", workload="s.py", environment=Environment(timestamp=stamp))
    assert same_run(live, b) == "B" and same_run(b, live) == "A"


def test_a_trace_named_by_its_file_path_is_one_run_with_the_report_that_read_that_file():
    """Without a capture time: the profiler's trace name against the path the run's report recorded, equal strings
    that are not one object (each read from its own JSON)."""
    path = "/".join(["", "tmp", "run", "trace.json"])
    read = Report(kind="trace", workload="s.py", extra={"written_by_roofline": {"workload": "s.py",
                                                                                "trace_name": "".join(path)}})
    run = Report(kind="profile", workload="s.py", extra={"trace": {"path": "/".join(path.split("/"))}})
    assert same_run(run, read) == "B"
    run.extra["trace"]["path"] = "/tmp/other/trace.json"
    assert same_run(run, read) == ""
