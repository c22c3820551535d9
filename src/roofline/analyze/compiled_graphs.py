"""The work of the ops torch.compile fused, given to the compiled graph's row, on a CPU with a counting pass.

On a CPU, a ``## Call CompiledFxGraph`` event runs Inductor's C++ kernels with no event of their own: the counting
pass (run eagerly) recorded the ops they fused, the timed trace has no event for them, and the graph's row held
their time unmodelled while they sat in the table at 0 s (a compiled MLP: 40% of the step unmodelled, its gelu and
layer norm "launch-bound at 0 ns"). Each such recorded op is given to the graph call that ran it, found by the
recorded ops around it that did get events (Inductor's extern calls, addmm/mm, run inside the graph call): the
graph whose span meets the stretch between their events, when exactly one does. The graph's row then carries their
FLOPs (exact: fusion changes no arithmetic) and their bytes as each op moves them unfused, an upper bound (which
intermediates a fused kernel keeps in registers is not recorded), and the fused rows keep their names and shapes
with no work of their own, so totals count it once. On a GPU the graph's kernels are events of their own (Inductor's
``triton_*`` ops, counted by name, and its extern products, an ``aten::mm`` for a Linear's addmm): the recorded ops
the graph replaced keep their rows with no work, which they counted a second time before (a compiled MLP on the H200:
6.47 GFLOP for its 4.31).

Under CUDA graph trees (torch.compile mode="reduce-overhead") a GPU graph's kernels run inside a CUDA graph replay:
no Triton kernel row counts anything, and the replay's row (labelled by capture/cuda_graphs.py) holds their time. The
recorded ops the graph call ran then give their work to that replay's row, as on a CPU to the graph's row (FLOPs
exact, bytes unfused: an upper bound), in place of what the replay's capture recorded (only the ops Inductor's code
dispatched: its extern matmuls, not its Triton kernels), so the work is counted once, on the replay.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from roofline.analyze.join import COMPILED_GRAPH
from roofline.capture.trace_model import Trace
from roofline.count.registry import OpCost
from roofline.report import OpRecord


FUSED_GRAPH_COST = OpCost(0.0, 0.0, True, note="the FLOPs and bytes of the recorded ops Inductor fused into it, "
                                                "bytes as each moves them unfused (an upper bound)")


@dataclass
class FusedGraphs:
    graphs: dict[int, list[int]] = field(default_factory=dict)  # graph row -> the recorded ops' rows fused into it
    ops: set[int] = field(default_factory=set)
    on_device: bool = False  # a GPU's graphs: their own kernel rows count the work
    replays: dict[int, list[int]] = field(default_factory=dict)  # a GPU graph's replay row -> the rows it took


def fuse_into_compiled_graphs(trace: Trace, ops: list[OpRecord], own_rows: list[tuple[int, int]],
                              rep_events: dict[int, int], recorded: int, step: int | None,
                              replay_rows: list[tuple[int, int]] = ()) -> FusedGraphs:
    """Move the work of recorded ops with no event (rows below ``recorded``; ``rep_events``: recorded row -> its
    event) into the row of the CPU compiled graph that ran them (``own_rows``: (row, event) of the rows of an event's
    own time), or on a GPU drop it (the graph's kernels of profiled ``step`` count it), unless the graph call
    replayed a CUDA graph (``replay_rows``: (row, event) of the replay rows): that replay's row takes it. Returns
    what moved where."""
    fused = FusedGraphs(on_device=trace.has_gpu)
    if trace.has_gpu:  # the graph call's own rows are not rows there: its events, keyed -1 - event
        graphs = [(-1 - op.index, op.ts_us, op.ts_us + op.dur_us) for op in trace.ops
                  if op.is_annotation and op.step == step and op.name.startswith(COMPILED_GRAPH)]
    else:
        graphs = [(row, trace.ops[event].ts_us, trace.ops[event].ts_us + trace.ops[event].dur_us)
                  for row, event in own_rows
                  if trace.ops[event].is_annotation and trace.ops[event].name.startswith(COMPILED_GRAPH)]
    if not graphs:
        return fused
    timed = sorted(rep_events)
    for i in range(recorded):
        op = ops[i]
        if i in rep_events or not op.modeled or not (op.flops or op.bytes):
            continue
        at = bisect.bisect_left(timed, i)
        after = trace.ops[rep_events[timed[at - 1]]].ts_us if at > 0 else float("-inf")
        before = trace.ops[rep_events[timed[at]]].ts_us if at < len(timed) else float("inf")
        holding = [row for row, start, end in graphs if start <= before and end >= after]
        if len(holding) == 1:
            fused.graphs.setdefault(holding[0], []).append(i)
            fused.ops.add(i)
    if trace.has_gpu:
        spans = {row: (start, end) for row, start, end in graphs}
        kept: set[int] = set()
        for key, members in fused.graphs.items():
            start, end = spans[key]
            inside = [row for row, event in replay_rows if start <= trace.ops[event].ts_us <= end]
            if len(inside) == 1:  # its kernels ran in that replay: no kernel row of theirs counts the work
                fused.replays[inside[0]] = members
                _take_work(ops[inside[0]], members, ops)
            elif inside:  # replays, but which ran what is unknown: the recorded rows keep their work
                kept.update(members)
        fused.ops -= kept
        for i in fused.ops:
            ops[i].flops = ops[i].bytes = 0.0
        fused.graphs = {}  # no row of theirs carries the work: the kernels' rows (or a replay's) do
        return fused
    for row, members in fused.graphs.items():
        _take_work(ops[row], members, ops)
        for i in members:
            ops[i].flops = ops[i].bytes = 0.0
    return fused


def _take_work(row: OpRecord, members: list[int], ops: list[OpRecord]) -> None:
    """``row`` carries the summed FLOPs and bytes of ``members`` (replacing its own), in the dtype of most of them."""
    row.flops = sum(ops[i].flops for i in members)
    row.bytes = sum(ops[i].bytes for i in members)
    row.modeled = True
    by_flops: dict[str, float] = defaultdict(float)
    for i in members:
        by_flops[ops[i].dtype] += ops[i].flops or ops[i].bytes
    row.dtype = max(by_flops, key=by_flops.__getitem__)


def fused_note(fused: FusedGraphs, ops: list[OpRecord]) -> str:
    """What the compiled graphs' rows now count, and how."""
    kinds = Counter(ops[i].name.removeprefix("aten::") for i in fused.ops)
    listed = ", ".join(f"{name} x{n}" for name, n in kinds.most_common(6)) + (", ..." if len(kinds) > 6 else "")
    if fused.on_device:
        replayed = sum(len(members) for members in fused.replays.values())
        line = (f"{len(fused.ops)} recorded op(s) ran inside a torch.compile graph call with no event of their own "
                f"({listed}): Inductor's kernels and extern calls, rows of their own, count that work, so these rows "
                "show 0 s and no work")
        if replayed:
            line += (f"; {replayed} of them ran in {len(fused.replays)} CUDA graph replay(s) (CUDA graph trees, "
                     "mode='reduce-overhead'), where no kernel row counts anything: each replay's row carries their "
                     "FLOPs (exact) and their bytes as if unfused (an upper bound), in place of what its capture "
                     "recorded (only the ops Inductor's code dispatched)")
        return line
    return (f"{len(fused.ops)} op(s) ran fused inside {len(fused.graphs)} torch.compile graph call(s) on the CPU "
            f"({listed}): Inductor's C++ kernels have no events, so each {COMPILED_GRAPH} row carries their FLOPs "
            "(exact) and their bytes as if unfused (an upper bound: its intensity is a lower bound), and their own "
            "rows show 0 s and no work")
