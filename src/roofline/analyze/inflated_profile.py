"""A note when the ops of a CPU run's profiled steps add up to many times the step timed without the profiler.

Sweep 7 (a DLRM analysed on a 2-core machine another process was using): the step took 661 us without the
profiler, its profiled ops 41 ms (62x: each embedding_bag and bmm 5-7 ms, their worker threads waiting for a core),
and the report showed 41 ms of memory-bound ops at 0.0% of their roof without a word. The profiler's own cost on
that sweep's other 16 reports kept the ops' sum within 0.5-1.2x the true step; 5x is far outside it. On a CPU an
op's time is its host time, so their sum cannot exceed the profiled step; a GPU's kernels can overlap, and its
reports are left alone.
"""

from __future__ import annotations

from roofline.report import Report
from roofline.time_text import fmt_time

INFLATION = 5.0
INFLATED_NOTE = "the profiled steps' ops add up to"


def note_inflated_profile(report: Report) -> None:
    true = report.step_time
    if true is None or not true.n or not true.median_s:
        return
    per_step = report.summary.total_time_s / max(report.steps or 1, 1)
    ratio = per_step / true.median_s
    if ratio >= INFLATION:
        report.summary.notes.append(
            f"{INFLATED_NOTE} {ratio:.0f}x the step timed without the profiler ({fmt_time(per_step)} against "
            f"{fmt_time(true.median_s)}): something slowed the profiled pass (another process on these cores, a "
            "stall), so the op times, shares and % of roof overstate the step's; rerun on a quiet machine")
