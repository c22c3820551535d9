"""diff_reports' numbers and words: group sums, ordering, the quantity compared, each noise source, the verdict's
reason at each branch, device and workload warnings at their boundary."""

from __future__ import annotations

import pytest

from roofline.analyze.diff import SHARED_TIME_FLOOR, diff_reports, total_verdict
from roofline.report import Ceilings, Environment, Finding, OpRecord, Report, Summary, Timing


def _timing(median: float, spread: float) -> Timing:
    return Timing.from_samples([median - spread, median - spread / 2, median, median + spread / 2, median + spread],
                               "CUDA events")


def test_group_sides_sum_flops_bytes_and_calls_and_rows_sort_by_change():
    a = Report(ops=[OpRecord(name="mm", module="l0", time_s=1e-3, flops=2e9, bytes=3e6, count=2, bound="compute"),
                    OpRecord(name="mm", module="l0", time_s=2e-3, flops=1e9, bytes=1e6, count=1, bound="memory"),
                    OpRecord(name="add", module="", time_s=5e-4, flops=1e3, bytes=7e3, bound="memory")])
    b = Report(ops=[OpRecord(name="mm", module="l0", time_s=1e-3, flops=2e9, bytes=3e6, bound="compute"),
                    OpRecord(name="add", module="", time_s=6e-4, flops=1e3, bytes=7e3, bound="memory")])
    d = diff_reports(a, b, "old", "new")
    assert (d.a_label, d.b_label) == ("old", "new")
    assert [r.key for r in d.ops] == ["mm @ l0", "add @ (top level)"]
    mm = d.ops[0]
    assert (mm.a.time_s, mm.a.flops, mm.a.bytes, mm.a.calls) == (pytest.approx(3e-3), 3e9, 4e6, 3)
    assert mm.a.bound == "memory" and mm.b.bound == "compute" and mm.bound_changed  # bound holding most time
    assert mm.delta_time_pct == pytest.approx(-200 / 3)
    assert d.ops[1].delta_time_s == pytest.approx(1e-4) and d.ops[1].status == "changed"
    assert [r.key for r in d.modules] == ["l0", "(top level)"]
    assert (d.a_flops, d.b_flops, d.a_bytes, d.b_bytes) == (3e9 + 1e3, 2e9 + 1e3, 4e6 + 7e3, 3e6 + 7e3)
    zero = diff_reports(Report(ops=[OpRecord(name="v", time_s=0.0)]), Report(ops=[OpRecord(name="v", time_s=1e-6)]))
    assert zero.ops[0].delta_time_pct is None and zero.ops[0].a.efficiency == 0.0
    ties = diff_reports(Report(ops=[OpRecord(name="b", time_s=1.0), OpRecord(name="a", time_s=1.0)]),
                        Report(ops=[OpRecord(name="b", time_s=2.0), OpRecord(name="a", time_s=2.0)]))
    assert [r.key for r in ties.ops] == ["a @ (top level)", "b @ (top level)"]
    same_time = diff_reports(Report(ops=[OpRecord(name="x", time_s=1.0, bound="memory"),
                                         OpRecord(name="x", time_s=1.0, bound="compute")]), Report())
    assert same_time.ops[0].a.bound == "memory" and same_time.ops[0].status == "removed"


def test_findings_are_keyed_by_rule_and_locations_and_sorted_by_savings():
    def f(rule, where, saving, title="t"):
        return Finding(rule=rule, title=title, category="c", locations=where, estimated_savings_s=saving, fix="do")

    a = [f("sync", ["a.py:1", "b.py:2"], 1e-4)]
    b = [f("sync", ["b.py:2", "a.py:1"], 1e-4, "moved title"), f("fuse", ["m.py:3"], 1e-5),
         f("cast", [], 3e-5, "no place"), f("cast", [], 2e-5, "other")]
    d = diff_reports(Report(findings=a), Report(findings=b))
    assert [(c.rule, c.title) for c in d.findings_appeared] == [("cast", "no place"), ("cast", "other"),
                                                                 ("fuse", "t")]
    assert d.findings_appeared[2].locations == ["m.py:3"] and d.findings_appeared[2].fix == "do"
    assert d.findings_appeared[0].estimated_savings_s == 3e-5
    assert d.findings_gone == []


def test_total_is_device_time_when_both_have_it_else_step_time_medians():
    both = total_verdict(Report(summary=Summary(total_time_s=2e-3)), Report(summary=Summary(total_time_s=3e-3)))
    assert both.quantity.startswith("total device time") and (both.a_total_s, both.b_total_s) == (2e-3, 3e-3)
    assert both.delta_s == pytest.approx(1e-3) and both.delta_pct == pytest.approx(50.0)
    a = Report(summary=Summary(total_time_s=2e-3), step_time=_timing(4e-3, 1e-4))
    b = Report(summary=Summary(total_time_s=0.0), profiled_step_time=_timing(5e-3, 2e-4))
    steps = total_verdict(a, b)
    assert steps.quantity == "step time median"
    assert (steps.a_total_s, steps.b_total_s) == (pytest.approx(4e-3), pytest.approx(5e-3))
    assert total_verdict(Report(), Report()).delta_pct is None


def test_noise_from_each_source():
    sa, sb = _timing(1e-3, 1e-4), _timing(1e-3, 3e-4)
    both = total_verdict(Report(step_time=sa), Report(step_time=sb))
    assert both.noise_s == pytest.approx(sa.spread_s + sb.spread_s) and both.noise_method.startswith("IQR of step_time")
    profiled = total_verdict(Report(profiled_step_time=sa), Report(profiled_step_time=sb))
    assert profiled.noise_s == pytest.approx(sa.spread_s + sb.spread_s)
    assert "profiled_step_time" in profiled.noise_method
    one = total_verdict(Report(step_time=sa), Report())
    assert one.noise_s == pytest.approx(2 * sa.spread_s) and "of A only" in one.noise_method
    other = total_verdict(Report(), Report(profiled_step_time=sb))
    assert other.noise_s == pytest.approx(2 * sb.spread_s) and "of B only" in other.noise_method
    single = Timing.from_samples([1e-3], "CUDA events")
    assert total_verdict(Report(step_time=single), Report(step_time=single)).noise_s == 0.0
    assert total_verdict(Report(), Report()).noise_s == 0.0


def test_verdict_reason_at_each_branch():
    def run(total, spread=1e-5):
        return Report(summary=Summary(total_time_s=total), step_time=_timing(total, spread))

    worse = total_verdict(run(1e-3), run(1.2e-3), 10.0)
    assert worse.failed and worse.reason.startswith("worse by +20.00% (> 10%) and by 0.200 ms (> noise")
    noisy = total_verdict(run(1e-3, 2e-4), run(1.2e-3, 2e-4), 10.0)
    assert not noisy.failed and noisy.reason.startswith("worse by +20.00% but within run-to-run noise (0.200 ms <=")
    within = total_verdict(run(1e-3), run(1.05e-3), 10.0)
    assert not within.failed and within.reason == "change +5.00% is within the 10% threshold"
    exactly = total_verdict(run(1e-3), run(1.1e-3), 10.000001)
    assert not exactly.failed
    better = total_verdict(run(1e-3), run(0.5e-3), 10.0)
    assert not better.failed and better.reason == "change -50.00% is within the 10% threshold"
    empty = total_verdict(Report(), run(1e-3), 10.0)
    assert not empty.failed and empty.reason == "report A has no total time; nothing to compare"
    assert total_verdict(run(1e-3), run(2e-3)).reason == "" and total_verdict(run(1e-3), run(2e-3)).threshold_pct is None


def test_device_warning_only_when_both_named_and_different():
    def on(env_name, ceil_name="", device="cuda"):
        return Report(environment=Environment(device_name=env_name),
                      ceilings=Ceilings(device=device, device_name=ceil_name))

    assert diff_reports(on("H100"), on("H100")).warnings == []
    (w,) = diff_reports(on("H100"), on("H200")).warnings
    assert w.startswith("the runs are on different devices (A: H100; B: H200)")
    assert diff_reports(on("", "H100"), on("", "H200")).warnings[0].startswith("the runs are on different devices "
                                                                              "(A: H100; B: H200)")
    assert diff_reports(on("", "", "cpu"), on("", "", "cuda")).warnings[0].startswith(
        "the runs are on different devices (A: cpu; B: cuda)")
    assert diff_reports(on("", "", ""), on("H200")).warnings == []


def test_workload_warning_at_the_shared_time_floor():
    def run(workload, ops):
        return Report(workload=workload, ops=[OpRecord(name=n, module="m", time_s=t) for n, t in ops])

    # shared share = (0.2 + 0.2) / 2.0 = 0.2 exactly: not below the floor
    at = diff_reports(run("w", [("mm", 0.2), ("a", 0.8)]), run("w", [("mm", 0.2), ("b", 0.8)]))
    assert SHARED_TIME_FLOOR == 0.2 and at.warnings == []
    below = diff_reports(run("w", [("mm", 0.19), ("a", 0.81)]), run("w", [("mm", 0.19), ("b", 0.81)]))
    assert len(below.warnings) == 1 and "only 19% of their time" in below.warnings[0]
    assert "(w vs w)" not in below.warnings[0] and "different workloads:" in below.warnings[0]
    renamed = diff_reports(run("v1", []), run("v2", []))
    assert renamed.warnings == ["A and B are different workloads (v1 vs v2); no ops to compare"]
    unnamed = diff_reports(run("", [("x", 1.0)]), run("v2", [("x", 1.0)]))
    assert unnamed.warnings == []


def test_verdict_threshold_is_strict_and_reasons_carry_the_noise_figure():
    def run(total, spread=0.0, n=0):
        return Report(summary=Summary(total_time_s=total), step_time=Timing(median_s=total, spread_s=spread, n=n))

    # 1.0 -> 1.25 s is +25% exactly (binary-exact): at the threshold is not above it
    at = total_verdict(run(1.0), run(1.25), 25.0)
    assert at.delta_pct == 25.0 and not at.failed and at.reason == "change +25.00% is within the 25% threshold"
    worse = total_verdict(run(1.0, 0.0625, 5), run(1.5, 0.125, 5), 10.0)
    assert worse.noise_s == 0.1875
    assert worse.noise_method == "IQR of step_time of A (62.500 ms, n=5) + B (125.000 ms, n=5)"
    assert worse.reason == "worse by +50.00% (> 10%) and by 500.000 ms (> noise 187.500 ms)"
    noisy = total_verdict(run(1.0, 0.25, 5), run(1.5, 0.5, 5), 10.0)
    assert noisy.reason == "worse by +50.00% but within run-to-run noise (500.000 ms <= 750.000 ms)"


def test_the_bytes_totals_are_memory_traffic_not_collective_messages():
    """As Summary.total_bytes: an all-reduce's 1 MB message and an all-gather whose size went unrecorded (0 for
    unknown) are not memory traffic; their rows keep them, the unsized one counted as such."""
    comm = {"bound": "communication", "modeled": False, "time_s": 1e-3}
    a = Report(ops=[OpRecord(name="mm", time_s=1e-3, flops=2e9, bytes=3e6, bound="compute"),
                    OpRecord(name="c10d::allreduce_", bytes=1e6, **comm), OpRecord(name="c10d::allgather_", **comm)])
    d = diff_reports(a, a)
    assert (d.a_bytes, d.b_bytes) == (3e6, 3e6)
    rows = {r.key: r.a for r in d.ops}
    assert rows["c10d::allreduce_ @ (top level)"].bytes == 1e6
    assert rows["c10d::allgather_ @ (top level)"].unsized == 1


def test_runs_that_profiled_different_numbers_of_steps_compare_per_step():
    """`roofline profile --active 1` against `--active 3` of one script: a profile report's ops sum its profiled
    steps, so the totals said the second run was 3x slower, with 3x the FLOPs, and the step-time spread (per step)
    was weighed against a 3-step total."""
    def run(steps: int, step_s: float) -> Report:
        ops = [OpRecord(name="mm", module="l0", time_s=2e-3 * steps, flops=4e9 * steps, bytes=1e6 * steps, count=steps,
                        bound="compute"),
               OpRecord(name="add", module="l0", time_s=1e-3 * steps, flops=1e6 * steps, bytes=1e7 * steps,
                        count=2 * steps, bound="memory")]
        return Report(kind="profile", ops=ops, steps=steps, step_time=_timing(step_s, 1e-4),
                      summary=Summary(total_time_s=3e-3 * steps))

    d = diff_reports(run(1, 3.1e-3), run(3, 3.1e-3))
    assert d.total.quantity.startswith("total device time per step")
    assert (d.total.a_total_s, d.total.b_total_s) == (pytest.approx(3e-3), pytest.approx(3e-3))
    assert d.total.delta_pct == pytest.approx(0.0)
    assert (d.a_flops, d.b_flops) == (pytest.approx(4.001e9), pytest.approx(4.001e9))
    assert all(r.delta_time_s == pytest.approx(0.0) for r in d.ops + d.modules + d.classes)
    assert {r.key: r.b.calls for r in d.ops} == {"mm @ l0": 1, "add @ l0": 2}
    assert "compared per step: A's ops cover 1 profiled step(s), B's 3" in d.notes[0]
    slower = diff_reports(run(3, 3.1e-3), run(1, 3.1e-3 * 1.5))
    slower_ops = Report(kind="profile", ops=[OpRecord(name="mm", module="l0", time_s=4e-3, flops=4e9, bytes=1e6)],
                        steps=1, summary=Summary(total_time_s=4e-3))
    assert diff_reports(run(3, 3e-3), slower_ops).total.delta_pct == pytest.approx(100 * (4e-3 - 3e-3) / 3e-3)
    assert slower.notes and not diff_reports(run(2, 3e-3), run(2, 3e-3)).notes
