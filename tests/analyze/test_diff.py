"""diff_reports: per op / module / class deltas, findings that come and go, and the noise-aware CI gate."""

from __future__ import annotations

import pytest

from roofline.analyze.diff import diff_reports, total_verdict
from roofline.report import Finding, OpRecord, Report, Summary, Timing


def report(times: dict[tuple[str, str], float], spread_s: float = 0.0, findings: list[Finding] | None = None, bound: str = "memory") -> Report:
    ops = [OpRecord(name=n, module=m, time_s=t, flops=1e9, bytes=1e8, efficiency=0.5, bound=bound, index=i)
           for i, ((n, m), t) in enumerate(times.items())]
    total = sum(times.values())
    samples = [total - spread_s, total - spread_s / 2, total, total + spread_s / 2, total + spread_s] if spread_s else []
    return Report(
        ops=ops,
        summary=Summary(total_time_s=total),
        step_time=Timing.from_samples(samples, "CUDA events") if samples else None,
        findings=findings or [],
    )


BASE = {("aten::mm", "layers.0.mlp"): 1e-3, ("aten::add", "layers.0.mlp"): 2e-4, ("aten::mm", "layers.1.mlp"): 1e-3}


def test_op_module_and_class_rows():
    b_times = dict(BASE)
    b_times[("aten::mm", "layers.0.mlp")] = 1.5e-3
    del b_times[("aten::add", "layers.0.mlp")]
    b_times[("aten::mul", "layers.0.mlp")] = 1e-4
    a, b = report(BASE), report(b_times)
    b.ops[0].bound = "compute"
    d = diff_reports(a, b)
    top = d.ops[0]
    assert top.key == "aten::mm @ layers.0.mlp"
    assert top.delta_time_s == pytest.approx(5e-4)
    assert top.delta_time_pct == pytest.approx(50.0)
    assert top.bound_changed and top.a.bound == "memory" and top.b.bound == "compute"
    statuses = {r.key: r.status for r in d.ops}
    assert statuses["aten::add @ layers.0.mlp"] == "removed"
    assert statuses["aten::mul @ layers.0.mlp"] == "added"
    assert statuses["aten::mm @ layers.1.mlp"] == "same"
    module = next(r for r in d.modules if r.key == "layers.0.mlp")
    assert module.delta_time_s == pytest.approx(5e-4 - 2e-4 + 1e-4)
    classes = {r.key: r for r in d.classes}
    assert classes["compute"].status == "added"
    assert [r.key for r in d.bound_changes] == ["aten::mm @ layers.0.mlp"]


def test_group_efficiency_is_time_weighted():
    a = report({("aten::mm", "x"): 1e-3})
    a.ops.append(OpRecord(name="aten::mm", module="x", time_s=3e-3, efficiency=0.9, bound="compute"))
    side = diff_reports(a, a).ops[0].a
    assert side.efficiency == pytest.approx((0.5 * 1e-3 + 0.9 * 3e-3) / 4e-3)
    assert side.bound == "compute"
    assert side.calls == 2


def test_findings_appeared_and_gone():
    sync = Finding(rule="host-sync", title="2 syncs", category="sync", locations=["train.py:9"], estimated_savings_s=1e-4)
    fuse = Finding(rule="fusion", title="fuse", category="memory", locations=["model.py:3"], estimated_savings_s=2e-4)
    retitled = Finding(rule="host-sync", title="3 syncs", category="sync", locations=["train.py:9"])
    d = diff_reports(report(BASE, findings=[sync]), report(BASE, findings=[retitled, fuse]))
    assert [f.rule for f in d.findings_appeared] == ["fusion"]
    assert d.findings_gone == []


@pytest.mark.parametrize(
    "scale, spread, pct, failed",
    [
        (0.90, 1e-5, 5.0, False),   # better
        (1.08, 1e-3, 5.0, False),   # 8% worse, but inside the run-to-run spread
        (1.08, 1e-5, 5.0, True),    # 8% worse, far beyond the spread
        (1.03, 1e-5, 5.0, False),   # worse beyond noise but under the threshold
    ],
)
def test_gate(scale, spread, pct, failed):
    a = report(BASE, spread_s=spread)
    b = report({k: v * scale for k, v in BASE.items()}, spread_s=spread)
    verdict = total_verdict(a, b, pct)
    assert verdict.failed is failed
    assert "step_time" in verdict.noise_method
    assert verdict.reason


def test_gate_without_spread_says_so():
    verdict = total_verdict(report(BASE), report({k: 2 * v for k, v in BASE.items()}), 5.0)
    assert verdict.failed and verdict.noise_s == 0.0
    assert "no run-to-run spread" in verdict.noise_method


def test_diff_says_plainly_when_the_workloads_differ():
    from roofline.analyze.diff import diff_reports
    from roofline.report import OpRecord, Report

    def run(workload, names):
        return Report(workload=workload, ops=[OpRecord(name=n, module="m", time_s=1e-3) for n in names])

    same = diff_reports(run("train.py", ["aten::mm", "aten::add"]), run("train.py", ["aten::mm", "aten::add"]))
    assert same.warnings == []
    unrelated = diff_reports(run("train.py", ["aten::mm"]), run("gen.py", ["aten::conv2d"]))
    assert len(unrelated.warnings) == 1 and "different workloads (train.py vs gen.py)" in unrelated.warnings[0]
    assert "unrelated runs" in unrelated.warnings[0]
    renamed = diff_reports(run("v1.py", ["aten::mm"]), run("v2.py", ["aten::mm"]))
    assert "100% of their time is in ops both have" in renamed.warnings[0]
    from roofline.render.diff import render_diff_console

    assert "warning: A and B are different workloads" in render_diff_console(unrelated)


def test_cuda_graph_replays_pair_by_the_order_their_graphs_were_first_replayed():
    """Capture numbers count per process: two runs in one notebook label their graphs #1, #2 and #3, #4. Keyed by
    name their rows never paired; by order of first replay they do, and the diff says so."""
    before = report({("CUDA graph replay #2", ""): 4e-3, ("CUDA graph replay #1", ""): 1e-3, ("aten::mm", ""): 1e-3})
    after = report({("CUDA graph replay #4", ""): 3e-3, ("CUDA graph replay #3", ""): 1e-3, ("aten::mm", ""): 1e-3})
    d = diff_reports(before, after)
    rows = {r.key: r for r in d.ops}
    assert set(rows) == {"CUDA graph replay 1 (by first replay) @ (top level)",
                         "CUDA graph replay 2 (by first replay) @ (top level)", "aten::mm @ (top level)"}
    first = rows["CUDA graph replay 1 (by first replay) @ (top level)"]
    assert first.a.time_s == pytest.approx(4e-3) and first.b.time_s == pytest.approx(3e-3)
    assert any("paired by the order" in n and "#2, #1" in n and "#4, #3" in n for n in d.notes)
    same = diff_reports(before, before)
    assert not any("paired by the order" in n for n in same.notes)


def test_two_traces_of_one_model_are_not_called_different_workloads_for_their_file_names():
    """A trace report's workload is its file's name, and two traces of one model (before.json, after.json) never share
    it: every diff of two traces warned 'A and B are different workloads (before.json vs after.json); 100% of their
    time is in ops both have'."""
    from roofline.analyze.diff import diff_reports
    from roofline.report import OpRecord, Report

    def trace(workload, names):
        return Report(kind="trace", workload=workload,
                      ops=[OpRecord(name=n, module="m", time_s=1e-3) for n in names])

    assert diff_reports(trace("before.json", ["aten::mm"]), trace("after.json.gz", ["aten::mm"])).warnings == []
    # a trace of the model beside an analyze report of it (named after the model) is one workload too
    analyzed = Report(kind="analyze", workload="llama-tiny", ops=[OpRecord(name="aten::mm", module="m", time_s=1e-3)])
    assert diff_reports(analyzed, trace("after.json", ["aten::mm"])).warnings == []
    unrelated = diff_reports(trace("train.json", ["aten::mm"]), trace("gen.json", ["aten::conv2d"]))
    assert "different workloads (train.json vs gen.json): only 0%" in unrelated.warnings[0]
