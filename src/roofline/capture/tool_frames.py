"""Host time spent in the profiler's own code: roofline's capture (its step and phase hooks, the syncs it makes to
time a step) and torch.profiler's (stop_trace synchronises the device). What happens there is no work of the
user's code, so its syncs and its host time at a step's start are not the user's to fix.

A trace with Python stacks tells it: a point of a thread's time belongs to the tool when the innermost frame
around it that is either the tool's or the model's (a user file's line, an nn.Module, a recorded call site) is
the tool's. roofline's capture also wraps the user's whole script (script_runner) and calls user code from its
hooks, so "under a tool frame" alone would claim everything.
"""

from __future__ import annotations

import bisect
import re
from typing import Iterable

# A Python frame's name as torch.profiler writes it ("roofline/capture/profiling.py(184): _sync"), the file
# relative to its sys.path entry or absolute. Not capture/cuda_graphs.py: its frame around a CUDA graph's replay
# holds the user's replay (the launch), which is the user's work, not the tool's.
TOOL_FRAME = re.compile(r"^(?:.*/)?(?:roofline/capture/(?!cuda_graphs\.py)[^/]+\.py|torch/profiler/[^/]+\.py|"
                        r"torch/autograd/profiler\.py)\(\d+\): ")


def is_tool_frame(name: str) -> bool:
    return TOOL_FRAME.match(name) is not None


def tool_spans(frames: Iterable[tuple[float, float, bool]]) -> list[tuple[float, float]]:
    """The time spans of one thread owned by the tool, in order and merged, from its frames ``(start, end,
    is_tool)``: the tool's frames and the model's (frames of neither kind are left out by the caller). A frame's
    time belongs to the innermost frame around it."""
    spans: list[tuple[float, float]] = []

    def own(start: float, end: float) -> None:
        if end <= start:
            return
        if spans and spans[-1][1] >= start:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))

    stack: list[tuple[float, bool]] = []  # (end, is_tool) of the open frames, innermost last
    position = float("-inf")
    for start, end, is_tool in sorted(frames, key=lambda f: (f[0], -f[1])):
        while stack and stack[-1][0] <= start:
            closed_end, closed_tool = stack.pop()
            if closed_tool:
                own(position, closed_end)
            position = max(position, closed_end)
        if stack and stack[-1][1]:
            own(position, start)
        position = start
        stack.append((min(end, stack[-1][0]) if stack else end, is_tool))
    while stack:
        closed_end, closed_tool = stack.pop()
        if closed_tool:
            own(position, closed_end)
        position = max(position, closed_end)
    return spans


def in_spans(spans: list[tuple[float, float]], starts: list[float], ts: float) -> bool:
    """Whether ``ts`` lies in one of ``spans`` (sorted, disjoint; ``starts``: their starts)."""
    i = bisect.bisect_right(starts, ts) - 1
    return i >= 0 and ts < spans[i][1]


def overlap(spans: list[tuple[float, float]], start: float, end: float) -> float:
    """How much of [start, end) ``spans`` (sorted, disjoint) cover."""
    return sum(max(0.0, min(e, end) - max(s, start)) for s, e in spans if s < end and e > start)


# A step's leading spans are the ones the input-idle rule reads; a profiler hook on every module call makes many.
MAX_SPANS_PER_STEP = 32


def profiler_time_by_step(trace) -> list[dict]:
    """``trace.tool_spans`` on the report's clock, as warmup_events spells its spans: ``start_s`` from the step's
    start (from the first op when the trace has no steps), ``step`` its index, the first MAX_SPANS_PER_STEP of each
    step. A span is cut at step bounds (roofline's step hook opens the next step inside its own frame); the parts
    outside every step are left out of a trace with steps."""
    found: list[dict] = []
    per_step: dict = {}

    def add(step, origin: float, start: float, end: float) -> None:
        if end > start and per_step.get(step, 0) < MAX_SPANS_PER_STEP:
            per_step[step] = per_step.get(step, 0) + 1
            found.append({"step": step, "start_s": (start - origin) / 1e6, "dur_s": (end - start) / 1e6})

    if not trace.steps:
        origin = trace.ops[0].ts_us if trace.ops else 0.0
        for start, end in trace.tool_spans:
            add(None, origin, start, end)
        return found
    starts = [step.ts_us for step in trace.steps]
    for start, end in trace.tool_spans:
        first = max(bisect.bisect_right(starts, start) - 1, 0)
        for i in range(first, bisect.bisect_left(starts, end)):
            step = trace.steps[i]
            add(i, step.ts_us, max(start, step.ts_us), min(end, step.end_us))
    return found
