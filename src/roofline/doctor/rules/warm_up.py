"""Warm-up inside the profiled window: a one-time start-up cost, named so nobody chases it as a per-step one.

Evidence: report.extra['warmup'] (analyze/warmup.py): runtime calls that carried CUDA's context creation,
profiled steps that are the first iterations, and torch.compile's compilation stages. The saving is not per step:
the fix is to profile steps after the first (a profiler schedule with wait/warmup). In a trace without steps, ops
whose first call took many times their later calls ("first-calls"): set-up on first use; their saving is that
excess, the time a profile after a warm-up step no longer holds.
"""

from __future__ import annotations

from roofline.analyze.warmup import SLOW_LAUNCH_FACTOR, SLOW_LAUNCH_IDLE_SHARE, SLOW_LAUNCH_MIN_US
from roofline.doctor.evidence import device_runtime, is_cpu_report, severity_for
from roofline.doctor.registry import register
from roofline.report import Finding, Report
from roofline.time_text import fmt_time

RULE = "warm-up"
FIX = ("profile steady-state steps: torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, "
       "active=3)) and call prof.step() each iteration, or run one warm-up iteration before profiling")


@register(RULE, "the GPU runtime's lazy initialisation, torch.compile's compilation or only the first iterations inside the "
                "profiled window")
def check(report: Report) -> list[Finding]:
    warmup = report.extra.get("warmup") or []
    return (_compilation(warmup) + _start_up(report, warmup) + _first_calls(report, warmup)
            + _first_launches(report, warmup) + _single_pass(warmup))


def _single_pass(warmup: list[dict]) -> list[Finding]:
    found = next((e for e in warmup if e.get("kind") == "single-pass"), None)
    if found is None:
        return []
    return [Finding(
        rule=RULE, category="profiling",
        title=f"{found['share']:.0%} of the trace's time is in ops that ran once with their shapes (the slowest, "
              f"{found['slowest']}, {fmt_time(found['slowest_s'])}, {found['slowest_share']:.0%}): one pass, whose "
              "first calls' set-up cannot be told from their steady state",
        evidence={"rows": found["rows"], "of_rows": found["of_rows"], "share": found["share"],
                  "slowest": found["slowest"], "slowest_s": found["slowest_s"]},
        estimated_savings_s=0.0,
        savings_method="not estimated: no later call of these ops to compare their first with",
        fix=FIRST_CALLS_FIX, severity="info")]


FIRST_LAUNCH_FIX = ("profile after a warm-up iteration: torch.profiler.profile(schedule=torch.profiler.schedule("
                    "wait=1, warmup=1, active=3)) and prof.step() each iteration; or load every kernel at start-up "
                    "instead of at its first launch: CUDA_MODULE_LOADING=EAGER in the environment (CUDA 12.2+ loads "
                    "lazily by default)")


def slow_launches_record(warmup: list[dict]) -> dict | None:
    """The slow-launches record of report.extra["warmup"] (analyze/warmup.py), or None."""
    return next((e for e in warmup if e.get("kind") == "slow-launches"), None)


def slow_launch_method(found: dict, which: str) -> str:
    """How a slow-launches finding's saving was obtained (analyze/warmup.py's thresholds); ``which``: its launches."""
    return (f"each such launch call's time above the trace's median kernel launch ({fmt_time(found['median_launch_s'])}"
            f"), counted while the device was idle: launches of {fmt_time(SLOW_LAUNCH_MIN_US / 1e6)} or more and "
            f"{SLOW_LAUNCH_FACTOR:g}x the median, the device idle for at least {SLOW_LAUNCH_IDLE_SHARE:.0%} of each, "
            f"of an op and kernel {which}")


def launch_place(entry: dict) -> str:
    """'hipLaunchKernel in aten::add_, ProfilerStep#1' for one listed launch."""
    where = f"{entry['call']} in {entry['op']}" if entry.get("op") else entry["call"]
    return where + (f", ProfilerStep#{entry['number']}" if entry.get("number") is not None else "")


def _first_launches(report: Report, warmup: list[dict]) -> list[Finding]:
    found = slow_launches_record(warmup)
    if found is None or not found.get("calls"):
        return []
    listed = [e for e in found["launches"] if not e["recurring"]]
    longest, excess, calls = listed[0], found["excess_s"], found["calls"]
    what = "a kernel launch call" if calls == 1 else f"{calls} kernel launch calls"
    return [Finding(
        rule=RULE, category="profiling",
        title=f"{what} stalled the host {fmt_time(excess)} while the {device_runtime(report)} device sat idle "
              f"({fmt_time(longest['dur_s'])} in {launch_place(longest)}): a kernel's first launch loading its code, "
              "inside the profiled window",
        evidence={"calls": calls, "excess_s": excess, "median_launch_s": found["median_launch_s"],
                  "longest_s": longest["dur_s"], "call": longest["call"], "op": longest["op"],
                  "kernel": longest["kernel"][:200], "step": longest.get("number")},
        locations=list(dict.fromkeys(e["op"] for e in listed if e["op"]))[:5],
        estimated_savings_s=excess,
        savings_method=slow_launch_method(found, "that stalled once; time a profile after a warm-up iteration no "
                                                 "longer holds"),
        fix=FIRST_LAUNCH_FIX, severity=severity_for(report, excess))]


FIRST_CALLS_NAMED = 3
FIRST_CALLS_FIX = ("profile with a warm-up step: torch.profiler.profile(schedule=torch.profiler.schedule(wait=0, "
                   "warmup=1, active=3)) and call prof.step() each iteration, or run the model once before profiling")


def _first_calls(report: Report, warmup: list[dict]) -> list[Finding]:
    entries = [e for e in warmup if e.get("kind") == "first-calls"]
    if not entries:
        return []
    ops = sorted((op for e in entries for op in e["ops"]), key=lambda op: -op["excess_s"])
    excess, calls = sum(e["excess_s"] for e in entries), sum(e["calls"] for e in entries)
    factor = max(e["factor"] for e in entries)
    names = list(dict.fromkeys(op["name"] for op in ops))
    more = calls - sum(op["name"] in names[:FIRST_CALLS_NAMED] for op in ops)
    named = ", ".join(names[:FIRST_CALLS_NAMED]) + (f" and {more} more op(s)" if more > 0 else "")
    clock = "host time" if is_cpu_report(report) else "time as the report gives it (its kernels' device time)"
    return [Finding(
        rule=RULE, category="profiling",
        title=f"the first calls of {named} took {fmt_time(excess)} more than their later calls: set-up inside the "
              "profiled window, not the steady state",
        evidence={"calls": calls, "excess_s": excess, "factor": factor, "ops": names[:FIRST_CALLS_NAMED],
                  "largest_first_call_s": ops[0]["first_s"], "its_later_median_s": ops[0]["later_median_s"]},
        estimated_savings_s=excess,
        savings_method=(f"each op's first call's {clock} less the median of its later calls (same op name, "
                        f"input shapes and arguments; a first call at least {factor:g}x that median, in a trace "
                        f"without steps), summed over {calls} op(s): time a profile after a warm-up step no longer holds"),
        fix=FIRST_CALLS_FIX, severity=severity_for(report, excess))]


def _compilation(warmup: list[dict]) -> list[Finding]:
    compiled = [e for e in warmup if e.get("kind") == "torch-compile"]
    if not compiled:
        return []
    total, events = sum(e["dur_s"] for e in compiled), sum(e["events"] for e in compiled)
    return [Finding(
        rule=RULE, category="profiling",
        title=f"the profile includes torch.compile's compilation ({total:.3g} s in {events} '(dynamo_timed)' "
              "stage(s)): a one-time cost, not a per-step one; those stages show as unmodelled ops",
        evidence={"time_s": total, "events": events},
        estimated_savings_s=0.0, savings_method="none per step: compilation happens once per input signature",
        fix=FIX, severity="info")]


def _start_up(report: Report, warmup: list[dict]) -> list[Finding]:
    events = [e for e in warmup if e.get("kind") == "cuda-lazy-init"]
    firsts = [e for e in warmup if e.get("kind") == "first-iteration"]
    steps = (report.extra.get("trace") or {}).get("steps") or 0
    if not events and firsts and len(firsts) >= steps:
        numbers = ", ".join(f"#{e['number']}" for e in firsts)
        return [Finding(
            rule=RULE, category="profiling",
            title=f"only the first iteration(s) were profiled (ProfilerStep{numbers}): compilation, autotuning and "
                  "allocator growth happen there, so times may not be the steady state's",
            evidence={"steps": [e["number"] for e in firsts]},
            estimated_savings_s=0.0, savings_method="none per step: warm-up happens once; it is left out of "
                                                     "input-idle",
            fix=FIX, severity="info")]
    if not events:
        return []
    total = sum(e["dur_s"] for e in events)
    calls = sorted({e["call"] for e in events})
    return [Finding(
        rule=RULE, category="profiling",
        title=f"the profile includes {device_runtime(report)}'s lazy initialisation ({total:.3g} s in "
              f"{', '.join(calls)}): a one-time "
              "start-up cost, not a per-step one",
        evidence={"calls": calls, "time_s": total, "events": len(events)},
        estimated_savings_s=0.0,
        savings_method="none per step: the context is created once per process; it is left out of input-idle",
        fix=FIX,
        severity="info",
    )]

