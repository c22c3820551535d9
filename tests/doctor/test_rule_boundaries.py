"""Each doctor rule's thresholds, tested on both sides of the boundary: one step short of firing is silent."""

from __future__ import annotations

import pytest

from doctor_cases import ceilings, linear, op, report
from roofline.doctor import diagnose
from roofline.doctor.rules import half_alignment, launch_overhead, recomputation, unfused_chain
from roofline.report import KernelRecord

GPU = ceilings(device="cuda", bandwidth=4.8e12, peaks={"float16": 989e12, "float32": 67e12})


def _half_mm(k: int, n: int):
    return op("aten::mm", [([64, k], "float16"), ([k, n], "float16")], out=[64, n], flops=2 * 64 * k * n,
              bound="compute", time=1e-4, kernels=["gemm"])


@pytest.mark.parametrize("k,n,fires", [(72, 72, False), (8, 520, False), (64, 4104, False), (72, 71, True),
                                       (68, 64, True), (4, 8, True)])
def test_half_alignment_asks_for_multiples_of_8_exactly(k, n, fires):
    assert half_alignment.ALIGN == 8
    findings = diagnose(report([_half_mm(k, n)], ceil=GPU), rules=["half-matmul-alignment"])
    assert bool(findings) is fires


@pytest.mark.parametrize("calls,fires", [(2, False), (3, True)])
def test_recomputation_needs_a_growing_run_of_three(calls, fires):
    assert recomputation.MIN_RUN == 3
    ops = [linear([1, t, 64]) for t in range(5, 5 + calls)]
    findings = diagnose(report(ops), rules=["recomputation"])
    assert bool(findings) is fires
    if fires:
        assert findings[0].evidence["rows_longest_run"] == [5, 6, 7]


def test_recomputation_run_broken_by_an_uneven_step_is_silent():
    ops = [linear([1, t, 64]) for t in (5, 6, 8)]
    assert diagnose(report(ops), rules=["recomputation"]) == []


def _timeline(n: int, gap: float, dur: float = 2e-6) -> list[KernelRecord]:
    kernels, t = [], 0.0
    for _ in range(n):
        kernels.append(KernelRecord(name="void elementwise_kernel", start_s=t, dur_s=dur))
        t += dur + gap
    return kernels


def _gpu_stretch(n: int, gap: float, dur: float = 2e-6, launch: float = 5e-6):
    r = report([], ceil=ceilings(device="cuda", launch=launch), kernels=_timeline(n, gap, dur))
    return diagnose(r, rules=["launch-overhead"])


def test_launch_stretch_needs_the_gap_at_least_as_long_as_the_kernel():
    """A kernel counts as starved only when the idle gap before it is at least its own duration: with 1.9 us
    gaps behind 2 us kernels the device is 49% idle, yet the kernels are not waiting on launches."""
    assert _gpu_stretch(30, gap=1.9e-6) == []
    found = _gpu_stretch(30, gap=2.1e-6)
    assert len(found) == 1 and found[0].evidence["kernels"] == 29


def test_launch_stretch_needs_kernels_shorter_than_the_launch_overhead():
    assert _gpu_stretch(30, gap=6e-6, dur=5e-6, launch=5e-6) == []
    assert len(_gpu_stretch(30, gap=6e-6, dur=4.9e-6, launch=5e-6)) == 1


def test_launch_stretch_needs_ten_starved_kernels():
    assert launch_overhead.MIN_STRETCH_KERNELS == 10
    assert _gpu_stretch(10, gap=10e-6) == []  # the first kernel has no gap before it: 9 starved
    assert len(_gpu_stretch(11, gap=10e-6)) == 1


def _tiny_cpu_ops(n: int):
    return [op("aten::add", [([16], "float32"), ([16], "float32")], out=[16], time=4e-6, nbytes=192,
               bound="launch") for _ in range(n)]


def test_cpu_launch_bound_needs_ten_ops():
    assert launch_overhead.MIN_LAUNCH_BOUND_OPS == 10
    assert diagnose(report(_tiny_cpu_ops(9)), rules=["launch-overhead"]) == []
    assert len(diagnose(report(_tiny_cpu_ops(10)), rules=["launch-overhead"])) == 1


def test_cpu_launch_bound_needs_five_percent_of_the_time():
    big = op("aten::mm", [([512, 512], "float32"), ([512, 512], "float32")], out=[512, 512], bound="compute",
             flops=2 * 512**3)
    spent = 20 * 4e-6
    big.time_s = spent / 0.05 - spent + 1e-9  # the tiny ops just under 5%
    assert diagnose(report(_tiny_cpu_ops(20) + [big]), rules=["launch-overhead"]) == []
    big.time_s = spent / 0.05 - spent - 1e-9
    assert len(diagnose(report(_tiny_cpu_ops(20) + [big]), rules=["launch-overhead"])) == 1


X = [4, 64, 256]


@pytest.mark.parametrize("length,fires", [(2, False), (3, True)])
def test_unfused_chain_needs_three_memory_bound_ops(length, fires):
    assert unfused_chain.MIN_CHAIN == 3
    chain = [op("aten::mul", [(X, "float32"), (X, "float32")], out=X, module="norm", time=2e-5)
             for _ in range(length)]
    assert bool(diagnose(report(chain), rules=["unfused-chain"])) is fires


@pytest.mark.parametrize("share,fires", [(0.099, False), (0.101, True)])
def test_input_idle_needs_a_tenth_of_the_step(share, fires):
    from roofline.doctor.rules import host_input
    from test_host_input import _idle_report

    assert host_input.MIN_IDLE_SHARE == 0.1
    findings = diagnose(_idle_report(first_launch_at=share * 2e-3), rules=["input-idle"])
    assert bool(findings) is fires


def _collectives(*, bytes_: float = 4096.0, calls: int = 40, per_step_s: float = 0.002):
    from roofline.report import CollectiveRecord, DistributedInfo, RankRecord, Report

    report = Report(ranks=[RankRecord(0, step_time_s=0.01), RankRecord(1, step_time_s=0.01)])
    report.distributed = DistributedInfo(world_size=2, steps=3, collectives=[
        CollectiveRecord(kind="all_reduce", bytes=bytes_, calls_per_step=calls, time_s=50e-6,
                         total_time_per_step_s=per_step_s, algbw_bytes_per_s=1e8, example="ncclDevKernel_AllReduce")])
    return diagnose(report, rules=["tiny-collectives"])


def test_tiny_collectives_thresholds():
    from roofline.doctor.rules import tiny_collectives as rule

    assert (rule.TINY_BYTES, rule.MIN_CALLS_PER_STEP, rule.MIN_SHARE) == (1 << 20, 8, 0.02)
    assert _collectives(bytes_=(1 << 20) - 1)
    assert _collectives(bytes_=1 << 20) == []
    assert _collectives(calls=8)
    assert _collectives(calls=7) == []
    assert _collectives(per_step_s=0.0201 * 0.01)
    assert _collectives(per_step_s=0.0199 * 0.01) == []


def test_half_alignment_savings_are_the_time_above_the_padded_roofline_time():
    k, n = 60, 70  # padded to 64 x 72
    mm = _half_mm(k, n)
    mm.bytes = 2.0 * (64 * k + k * n + 64 * n)
    (finding,) = diagnose(report([mm], ceil=GPU), rules=["half-matmul-alignment"])
    grow = (64 * 72) / (k * n)
    padded = max(mm.flops * grow / 989e12, mm.bytes * grow / 4.8e12)
    assert finding.estimated_savings_s == pytest.approx(mm.time_s - padded)
    assert finding.evidence["dims_k_n"] == [(60, 70)]


def _exposed(exposed_s: float):
    from roofline.report import DistributedInfo, RankRecord, Report

    rows = [RankRecord(r, step_time_s=1.0, exposed_communication_s=exposed_s, communication_time_s=exposed_s,
                       hidden_communication_share=0.0) for r in (0, 1)]
    report = Report(ranks=rows)
    report.distributed = DistributedInfo(world_size=2, steps=2)
    return diagnose(report, rules=["exposed-communication"])


def test_exposed_communication_fires_from_five_percent_of_the_step():
    from roofline.doctor.rules import exposed_communication as rule

    assert rule.MIN_SHARE == 0.05
    (finding,) = _exposed(0.05)
    assert "(5% of the step)" in finding.title
    assert _exposed(0.0499) == []


@pytest.mark.parametrize("saving,severity", [(0.0019, "info"), (0.0021, "warning"), (0.019, "warning"),
                                             (0.021, "critical")])
def test_severity_follows_the_share_of_time_every_view_shows(saving, severity):
    """A GPU busy 10 ms of a 100 ms step: a saving's severity is its share of the 100 ms (the "of time" column),
    not of the 10 ms of op time, which made a 0.4% saving critical."""
    from roofline.doctor.evidence import severity_for
    from roofline.report import Report, Summary

    r = Report(summary=Summary(total_time_s=0.01, wall_time_s=0.1))
    assert r.summary.reference_time_s == 0.1
    assert severity_for(r, saving) == severity
