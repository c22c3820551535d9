"""ProfileReport: what `roofline profile` prints and writes. A renderer: it reads a Report and formats it.

``ProfileReport(report, trace=...).generate(out_dir)`` writes ``report.json`` first (so a failure later loses
nothing already measured), then ``trace.json.gz`` (the profiler's trace made valid Trace Event Format, or a
view built from the Report when there is no trace), and prints the console report: what only a profile has (true
vs profiled step time, memory, syncs), then what every report command prints, by the same renderers (the
roofline's op table and notes, the doctor's findings). The trace is passed in (``ProfilingContext.trace_path``):
a Report never carries the path of a run's temporary files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from roofline.render.chrome_trace import (
    chrome_trace_from_report,
    normalize_chrome_trace,
    read_chrome_trace,
)
from roofline.render.findings import FINDINGS_SHOWN
from roofline.render.units import fmt_bytes, fmt_time
from roofline.report import ProfileInfo, Report, Timing

TOP = 15  # as `roofline analyze` and `trace`
LIVE_TENSORS = 10  # the largest allocations listed at the memory peak


class ProfileReport:
    """``top``: ops per table (``--top``); ``findings``: the doctor's findings printed (``--findings``, 0: all)."""

    def __init__(self, report: Report, trace: str | os.PathLike[str] | dict | None = None, *, top: int = TOP,
                 findings: int = FINDINGS_SHOWN) -> None:
        self.report = report
        self.trace = trace
        self.top, self.findings = top, findings
        self.problems: list[str] = []  # why an output was not written, after generate()

    def generate(self, out_dir: str | os.PathLike[str], console: Any = None) -> dict[str, Path]:
        """Write report.json, trace.json.gz (with each op's roofline figures in its args; a trace over
        AUGMENT_LIMIT_BYTES of JSON is copied as it is, and ``problems`` says so), roofline.png and report.html into
        ``out_dir``, and print the text report.

        ``console``: a rich Console, a text stream, or False for no printing (default: stdout).
        """
        from roofline.render.outputs import (AUGMENT_LIMIT_BYTES, RawTraceRenderer, TraceRenderer, report_renderers,
                                             too_big_to_augment, write_outputs)

        source = self.trace
        large = isinstance(source, (str, os.PathLike)) and too_big_to_augment(source)
        renderers = report_renderers(raw_trace={} if large else self._chrome_trace())
        if large:
            renderers = [RawTraceRenderer(source) if isinstance(r, TraceRenderer) else r for r in renderers]
        paths, self.problems = write_outputs(self.report, out_dir, renderers)
        if large:
            self.problems.append(f"trace.json.gz is the profiler's own trace, copied without roofline's per-op figures: "
                                 f"it is over {AUGMENT_LIMIT_BYTES >> 20} MiB of JSON (report.json carries them)")
        keys = {"report.json": "report", "trace.json.gz": "trace", "roofline.png": "roofline", "report.html": "html"}
        written = {keys[p.name]: p for p in paths}
        if console is not False:
            self.print(console)
        return written

    def _chrome_trace(self) -> dict:
        source = self.trace
        if isinstance(source, (str, os.PathLike)) and Path(source).exists():
            source = read_chrome_trace(source)
        if isinstance(source, dict):
            return normalize_chrome_trace(source)
        return chrome_trace_from_report(self.report)

    def print(self, console: Any = None) -> None:
        text = self.text()
        if console is None:
            sys.stdout.write(text)
        elif hasattr(console, "print") and not hasattr(console, "write"):
            console.print(text, markup=False, highlight=False, end="")
        else:
            console.write(text)

    def text(self) -> str:
        """The whole console report: the profile's own sections, the roofline report, the findings."""
        from roofline.render.console import ConsoleRenderer
        from roofline.render.findings import FindingsRenderer

        return (self.profile_text() + "\n" + ConsoleRenderer(self.top).render(self.report)
                + FindingsRenderer(self.findings).render(self.report))

    def profile_text(self) -> str:
        """What only a profile has: true vs profiled step time, host time per op (beside the device's), memory and
        syncs. The roofs, the op table, the notes and the findings are the other report commands' renderers'."""
        from roofline.render.console import fit

        return fit("\n".join(self._sections()) + "\n")

    def _sections(self) -> list[str]:
        r = self.report
        head = f"roofline profile: {r.workload or 'script'} on {r.ceilings.device_name or r.ceilings.device}"
        # Without a GPU an op's device time is its host time: the op table of the roofline report has it.
        has_gpu = bool(r.extra.get("trace", {}).get("has_gpu", True))
        cpu_table = [*_host_time_table(r.profile, self.top), ""] if has_gpu and self.top else []
        return [
            head,
            "=" * len(head),
            *_step_times(r),
            "",
            *cpu_table,
            *_memory(r),
            "",
            *_syncs(r),
        ]


def _timing_text(t: Timing | None) -> str:
    if t is None or t.n == 0:
        return "not measured"
    noisy = "  (noisy: spread > 10% of median)" if t.median_s and t.spread_s / t.median_s > 0.10 else ""
    return f"{fmt_time(t.median_s)} median of {t.n}, IQR {fmt_time(t.spread_s)}{noisy}"


def _step_times(r: Report) -> list[str]:
    lines = ["Step time",
             f"  true (no profiler):  {_timing_text(r.step_time)}",
             f"  under the profiler:  {_timing_text(r.profiled_step_time)}"]
    if r.step_time and r.profiled_step_time and r.step_time.n and r.profiled_step_time.n and r.step_time.median_s:
        lines.append(_profiler_cost_line(r.step_time, r.profiled_step_time))
    method = (r.step_time or r.profiled_step_time).method if (r.step_time or r.profiled_step_time) else ""
    if method:
        lines.append(f"  how: {method}")
    return lines


def _profiler_cost_line(true: Timing, profiled: Timing) -> str:
    """What the profiler added to the step; a difference within the two timings' spread, or a step that ran
    faster under the profiler (it only adds work), is reported as noise, not as a negative cost."""
    change = profiled.median_s / true.median_s - 1
    spread = max(true.spread_s, profiled.spread_s)
    if profiled.median_s < true.median_s or abs(profiled.median_s - true.median_s) <= spread:
        return (f"  the profiler's cost is within these timings' noise (under it the step took {change:+.0%}, "
                f"spread {fmt_time(spread)})")
    return f"  the profiler added {change:+.0%} to the step"


def _host_time_table(profile: ProfileInfo | None, top: int) -> list[str]:
    """The profile's ops by host time (``ProfileInfo.host_time_by_op``, worked out by the analysis)."""
    lines = [f"Top {top} ops by CPU time (host duration of each op in the profiler trace)"]
    rows = profile.host_time_by_op[:top] if profile is not None else []
    if not rows:
        return lines + ["  (none recorded)" if profile is not None else "  (not in this report: no profile)"]
    total = profile.host_time_total_s or 1.0
    lines.append(f"  {'op':<40} {'calls':>6} {'time':>10} {'share':>6}")
    lines += [f"  {row.name[:40]:<40} {row.calls:>6} {fmt_time(row.cpu_time_s):>10} {row.cpu_time_s / total:>6.1%}"
              for row in rows]
    return lines


def _memory(r: Report) -> list[str]:
    m = r.memory
    measured = m.peak_allocated_bytes > 0 or bool(m.timeline)
    lines = [f"Memory peak: {fmt_bytes(m.peak_allocated_bytes)} ({m.counter or 'counter not stated'})" if measured
             else f"Memory peak: not measured ({m.counter or 'no memory counter in this report'})"]
    if m.peak_reserved_bytes is not None:
        lines.append(f"  reserved by the caching allocator at most: {fmt_bytes(m.peak_reserved_bytes)}")
    if m.reference_peak_bytes is not None:
        lines.append(f"  reference: {fmt_bytes(m.reference_peak_bytes)} ({m.reference_counter})")
    if m.peak_live_tensors:
        lines.append("  largest allocations live at the peak:")
        for t in m.peak_live_tensors[:LIVE_TENSORS]:
            shape = f" {t.dtype}{list(t.shape)}" if t.shape else ""
            where = " ".join(x for x in (t.module, t.source and f"at {t.source}") if x)
            lines.append(f"    {fmt_bytes(t.bytes):>10}{shape}  {t.op}  {where}".rstrip())
    return lines


def _syncs(r: Report) -> list[str]:
    if not r.syncs:
        return ["Host-device syncs: none found"]
    lines = [f"Host-device syncs: {sum(s.count for s in r.syncs)} at {len(r.syncs)} site(s)",
             f"  {'kind':<24} {'per step':>8} {'count':>6} {'stall':>10}  where"]
    for s in r.syncs:
        per_step = f"{s.per_step:.3g}" if s.per_step is not None else "-"
        lines.append(f"  {s.kind:<24} {per_step:>8} {s.count:>6} {fmt_time(s.stall_s):>10}  {s.location}")
    return lines
