"""One-time start-up cost inside a profiled window: CUDA's lazy initialisation and the first iterations.

The first CUDA runtime call of a process creates the context (loads the driver and the kernels' modules),
which takes from a hundred milliseconds to tens of seconds; whichever call comes first (cudaGetDeviceCount,
cudaDeviceGetStreamPriorityRange, cudaMalloc, cudaFree(0)...) carries it. A profile that starts before it shows
that time as an idle GPU at the start of the first step, which is not an input-pipeline problem and does not
recur. The first iterations (ProfilerStep#0 and #1) carry the rest of the warm-up: torch.compile's compilation
and guards, cuDNN/cuBLAS autotuning, the caching allocator's growth. Found here, both are named as such (the
``warm-up`` rule) and left out of input-idle. torch.compile's compilation, when the profile holds it, is named
too: Dynamo times each stage in an event named "<stage> (dynamo_timed)"; the outermost ones summed are the
compilation's host time, which the report otherwise shows as unmodelled ops (they have no formula: they are not
ops of the model).

A kernel launch call that takes milliseconds while the device sits idle is the host stalled in the launch itself:
most often a kernel's first launch loading its code (CUDA's lazy module loading; HIP's code objects), named too
(``slow_launches``).

A trace without step annotations cannot tell its first iteration from the others; there, an op's first call
that took many times its later calls (same name, same input shapes) is taken as set-up inside the profiled window
(lazy initialisation on first use: a fast path's kernels chosen, a buffer allocated, a module loaded), named as
such (``first_call_outliers``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from roofline.intervals import Coverage
from roofline.capture.trace_model import op_columns

LAZY_INIT_MIN_US = 50_000.0
LAST_WARMUP_STEP = 1
_INIT_CALLS = ("cudaGetDeviceCount", "cudaDeviceGetStreamPriorityRange", "cudaFree", "cudaSetDevice", "cuInit",
               "cudaGetDevice", "cudaDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cudaStreamIsCapturing",
               "cudaMalloc", "hipGetDeviceCount", "hipDeviceGetStreamPriorityRange", "hipMalloc", "hipFree",
               "hipSetDevice", "hipInit")


SLOW_LAUNCH_MIN_US = 1_000.0
SLOW_LAUNCH_FACTOR = 100.0
SLOW_LAUNCH_IDLE_SHARE = 0.5
SLOW_LAUNCHES_LISTED = 16
_KERNEL_LAUNCH = re.compile(r"LaunchKernel|cuLaunch|ModuleLaunch|LaunchCooperative")

COMPILE_SUFFIX = " (dynamo_timed)"
FIRST_CALL_FACTOR = 10.0
FIRST_CALLS_LISTED = 16


def warmup_events(trace) -> list[dict[str, Any]]:
    """Runtime calls that carried CUDA's lazy initialisation, on the report's clock (``start_s`` from the step
    start, or the first op when the trace has no steps, as ops' ``start_s``)."""
    found = [{"kind": "first-iteration", "step": i, "number": step.number, "start_s": 0.0,
              "dur_s": step.dur_us / 1e6}
             for i, step in enumerate(trace.steps) if step.number <= LAST_WARMUP_STEP]
    compiled = compile_time(trace)
    if compiled is not None:
        found.append(compiled)
    initialised: set[int] = set()
    launches = trace.launches
    for i in _first_and_init_calls(launches):
        launch = launches[i]
        if launch.dur_us < LAZY_INIT_MIN_US:
            continue
        step, origin = _step_and_origin(trace, launch.ts_us)
        found.append({"kind": "cuda-lazy-init", "call": launch.name, "step": step,
                      "start_s": (launch.ts_us - origin) / 1e6, "dur_s": launch.dur_us / 1e6})
        initialised.add(i)
        if len(found) >= 16:
            break
    slow = slow_launches(trace, initialised)
    if slow is not None:
        found.append(slow)
    return found


def _first_and_init_calls(launches: list) -> list[int]:
    """Positions of the first runtime call and of every later one that initialises the runtime (_INIT_CALLS), by
    name: a 1 M-event trace holds 55,000 launches, a handful of them such calls."""
    init_names = {name for name in {launch.name for launch in launches} if name.startswith(_INIT_CALLS)}
    return [i for i, launch in enumerate(launches) if i == 0 or launch.name in init_names]


def _step_and_origin(trace, ts_us: float) -> tuple[int | None, float]:
    """The step holding ``ts_us`` and the report's clock's origin there: the step's start, else the first op's."""
    step = trace.step_of(ts_us) if trace.steps else None
    origin = trace.steps[step].ts_us if step is not None else (trace.ops[0].ts_us if trace.ops else ts_us)
    return step, origin


def slow_launches(trace, skipped: set[int] = frozenset()) -> dict[str, Any] | None:
    """Kernel launch calls that took at least SLOW_LAUNCH_MIN_US and SLOW_LAUNCH_FACTOR times the trace's median
    launch while the device sat idle for most of the call (SLOW_LAUNCH_IDLE_SHARE): the host stalled in the
    launch itself, most often a kernel's first launch loading its code (CUDA's lazy module loading, the default
    from CUDA 12.2; HIP loads code objects on first use too). A launch that blocks while the device is busy is
    a full launch queue (the device is the bottleneck) and is left out. ``skipped``: positions in
    trace.launches already named as the runtime's initialisation. A launch of an op and kernel that stalled more
    than once is ``recurring``: no first use, a stall every time (the driver held by another thread's call, the
    host thread descheduled). The record: how many of each, their time above the median launch where the device
    was idle (``excess_s``, ``recurring_excess_s``), and the SLOW_LAUNCHES_LISTED longest of each."""
    launches = trace.launches
    names = {launch.name for launch in launches}
    kernel_launch = {name for name in names if _KERNEL_LAUNCH.search(name)}
    positions = [i for i, launch in enumerate(launches) if launch.name in kernel_launch]
    if len(positions) < 2:
        return None
    durations = np.fromiter((launches[i].dur_us for i in positions), dtype=np.float64, count=len(positions))
    median = float(np.median(durations))
    cutoff = max(SLOW_LAUNCH_MIN_US, SLOW_LAUNCH_FACTOR * median)
    # an op's launches only: the report's time is its ops' (a launch outside every op is in no row nor step)
    candidates = [i for i, dur in zip(positions, durations.tolist())
                  if dur >= cutoff and i not in skipped and 0 <= launches[i].op < len(trace.ops)]
    if not candidates:
        return None
    busy = Coverage([(k.ts_us, k.ts_us + k.dur_us) for k in trace.kernels])
    starts = [launches[i].ts_us for i in candidates]
    idle = busy.uncovered(starts, [start + launches[i].dur_us for start, i in zip(starts, candidates)]).tolist()
    kernel_of = {k.correlation: k.name for k in trace.kernels if k.correlation is not None}
    listed = []
    for i, start, idle_us in zip(candidates, starts, idle):
        launch = launches[i]
        if idle_us < SLOW_LAUNCH_IDLE_SHARE * launch.dur_us:
            continue
        step, origin = _step_and_origin(trace, start)
        listed.append({"call": launch.name, "op": trace.ops[launch.op].name,
                       "kernel": kernel_of.get(launch.correlation, ""), "step": step,
                       "number": trace.steps[step].number if step is not None else None,
                       "start_s": (start - origin) / 1e6, "dur_s": launch.dur_us / 1e6,
                       "excess_s": min(launch.dur_us - median, idle_us) / 1e6})
    if not listed:
        return None
    repeats = Counter((e["op"], e["kernel"]) for e in listed)
    for e in listed:
        e["recurring"] = repeats[(e["op"], e["kernel"])] > 1
    listed.sort(key=lambda e: -e["excess_s"])
    first = [e for e in listed if not e["recurring"]]
    again = [e for e in listed if e["recurring"]]
    return {"kind": "slow-launches", "median_launch_s": median / 1e6,
            "calls": len(first), "excess_s": sum(e["excess_s"] for e in first),
            "recurring_calls": len(again), "recurring_excess_s": sum(e["excess_s"] for e in again),
            "launches": first[:SLOW_LAUNCHES_LISTED] + again[:SLOW_LAUNCHES_LISTED]}


def _is_compile_stage(name: str) -> bool:
    return name.endswith(COMPILE_SUFFIX)


def compile_time(trace) -> dict[str, Any] | None:
    """torch.compile's compilation in the trace: the outermost "(dynamo_timed)" events (those inside another one
    are part of it), their count and summed duration; None when there are none."""
    ops = trace.ops
    named = np.flatnonzero(op_columns(trace).named(_is_compile_stage)).tolist() if ops else []
    stages = sorted((ops[i] for i in named), key=lambda op: op.ts_us)
    total_us, count, end_us = 0.0, 0, float("-inf")
    for op in stages:
        if op.ts_us + op.dur_us <= end_us:
            continue
        total_us += op.dur_us - max(0.0, end_us - op.ts_us)
        end_us = max(end_us, op.ts_us + op.dur_us)
        count += 1
    if not count:
        return None
    return {"kind": "torch-compile", "events": count, "dur_s": total_us / 1e6}


def first_call_outliers(times_s: np.ndarray, starts_s: np.ndarray, groups: np.ndarray) -> list[tuple[int, float, int]]:
    """The rows whose op's first call (earliest start among the rows of its group, ``groups[i]``: an op's name,
    input shapes and whether the row is its own time or the whole op) took at least FIRST_CALL_FACTOR times the
    median of its later calls (at least one, with a median above zero): (row, that median, how many later calls).
    A row of group -1 is compared with none. Two sorts of the rows (by group and start, then the later calls by
    group and time), no per-row Python: a million-event trace without steps has some 130,000 rows."""
    rows = np.flatnonzero(groups >= 0)
    if len(rows) < 2:
        return []
    rows = rows[np.lexsort((starts_s[rows], groups[rows]))]  # stable: rows that start together, by row
    group = groups[rows]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = group[1:] != group[:-1]
    later = rows[~first]
    later = later[np.lexsort((times_s[later], groups[later]))]
    later_group, later_time = groups[later], times_s[later]
    firsts = rows[first]
    lo = np.searchsorted(later_group, groups[firsts], side="left")
    count = np.searchsorted(later_group, groups[firsts], side="right") - lo
    has_later = count > 0
    firsts, lo, count = firsts[has_later], lo[has_later], count[has_later]
    median = (later_time[lo + (count - 1) // 2] + later_time[lo + count // 2]) / 2
    hit = (median > 0) & (times_s[firsts] >= FIRST_CALL_FACTOR * median)
    return list(zip(firsts[hit].tolist(), median[hit].tolist(), count[hit].tolist()))


SINGLE_PASS_SHARE = 0.5


def single_pass_entry(times_s: np.ndarray, groups: np.ndarray, names: Sequence[str]) -> dict[str, Any] | None:
    """report.extra["warmup"]'s "single-pass" record of a trace without steps, or None: where most of the time
    (SINGLE_PASS_SHARE) is in rows whose op ran once with its shapes (``groups`` as ``first_call_outliers``'s), no
    later call tells a first call's set-up from its steady state (torch 2.4.1's one forward of a small CNN: a first
    convolution of 60.8 ms, 82% of the trace, and no finding). The record: the rows, that share, the slowest such
    row."""
    total = float(times_s.sum())
    if len(groups) < 2 or total <= 0:
        return None
    counts = np.bincount(groups[groups >= 0], minlength=1)
    once = (groups < 0) | (counts[np.maximum(groups, 0)] < 2)
    share = float(times_s[once].sum()) / total
    if share < SINGLE_PASS_SHARE:
        return None
    slowest = int(np.flatnonzero(once)[np.argmax(times_s[once])])
    return {"kind": "single-pass", "rows": int(once.sum()), "of_rows": len(groups), "share": share,
            "slowest": names[slowest], "slowest_s": float(times_s[slowest]),
            "slowest_share": float(times_s[slowest]) / total}


def first_calls_entry(outliers: list[tuple[Any, Any, bool, int, float, int]]) -> dict[str, Any]:
    """report.extra["warmup"]'s record of ``first_call_outliers``, given as (the first call's report op, its input
    shapes, whether the row is its own time, its row, its later calls' median, how many later calls): the ops (the
    FIRST_CALLS_LISTED with the most excess, on the report's clock), how many there are, and their excess time over
    their later calls' median, summed."""
    listed = sorted(({"name": op.name, "shapes": shapes, "own_time": own_time, "row": row, "start_s": op.start_s,
                      "first_s": op.time_s, "later_median_s": median, "later_calls": later,
                      "excess_s": op.time_s - median}
                     for op, shapes, own_time, row, median, later in outliers), key=lambda e: -e["excess_s"])
    return {"kind": "first-calls", "calls": len(listed), "factor": FIRST_CALL_FACTOR,
            "excess_s": sum(e["excess_s"] for e in listed), "ops": listed[:FIRST_CALLS_LISTED]}
