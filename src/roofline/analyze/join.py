"""Choosing which trace events are the ops of a report, and joining them with the counting pass.

A torch.profiler trace nests ops: ``aten::linear`` holds ``aten::t`` and ``aten::addmm``; ``aten::_to_copy``
holds ``aten::copy_``. Counting each level would count the same work twice, so a report takes, on every path
from a root to a leaf, exactly one event:

- with a counting pass (live runs): the outermost event whose name the dispatch-level recorder saw, matched to
  the recorded op by name and occurrence order (both passes run the same step, so the k-th ``aten::addmm`` of
  the timed step is the k-th of the counted one);
- autograd engine frames (``AddBackward0``, ``autograd::engine::evaluate_function: ...``) are never ops: like
  annotations, their children are; a node with no children (AddBackward0 passes its gradient through) is
  dropped, its host time being the engine's bookkeeping;
- without one (trace files): the outermost event that has a formula, except composite ops that show their
  children (their work is their children's), else a leaf. Annotations with kernels of their own (Triton kernels
  under a compiled graph) become ops named after the annotation.

Each chosen event's time is inclusive: every kernel launched in its subtree on a GPU; its host duration on CPU.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from roofline.capture.trace_model import CpuOp, Trace, is_autograd_frame
from roofline.count.counting import is_composite_op


@dataclass
class Chosen:
    event: int
    recorded: int | None = None
    self_only: bool = False


def children_index(trace: Trace) -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for op in trace.ops:
        if op.parent >= 0:
            children[op.parent].append(op.index)
    return children


def roots_by_step(trace: Trace) -> dict[int | None, list[int]]:
    """Top-level events of each step, in time order: the children of its ProfilerStep annotation and any other
    root inside it (one pass over the trace, whatever the number of steps)."""
    roots: dict[int | None, list[int]] = defaultdict(list)
    ops = trace.ops
    for op in ops:
        if op.parent >= 0:
            parent = ops[op.parent]
            if not (parent.is_annotation and parent.name.startswith("ProfilerStep#")):
                continue
        if op.name.startswith("ProfilerStep#"):
            continue
        roots[op.step].append(op.index)
    for idx in roots.values():
        idx.sort(key=lambda i: ops[i].ts_us)
    return roots


def choose_without_recording(trace: Trace, roots: Iterable[int], children: dict[int, list[int]],
                             is_modeled) -> list[Chosen]:
    chosen: list[Chosen] = []
    stack = list(reversed(list(roots)))
    while stack:
        idx = stack.pop()
        op = trace.ops[idx]
        kids = children.get(idx, [])
        if op.is_annotation or is_autograd_frame(op.name):
            if op.self_kernel_us > 0:
                chosen.append(Chosen(idx, self_only=True))
            stack.extend(reversed(kids))
            continue
        if is_modeled(op) and not (kids and is_composite_op(op.name)):
            chosen.append(Chosen(idx))
        elif kids:
            if op.self_kernel_us > 0:
                chosen.append(Chosen(idx, self_only=True))
            stack.extend(reversed(kids))
        else:
            chosen.append(Chosen(idx))
    return chosen


@dataclass
class RecordedIndex:
    """What matching needs of a recording, built once per trace (not once per profiled step)."""

    names: set[str]
    holds_named: set[int]
    by_name: dict[str, list[int]]

    @classmethod
    def build(cls, trace: Trace, recorded_names: list[str]) -> "RecordedIndex":
        names = set(recorded_names)
        by_name: dict[str, list[int]] = defaultdict(list)
        for rec_idx, name in enumerate(recorded_names):
            by_name[name].append(rec_idx)
        return cls(names, _ancestors_of_named(trace, names), dict(by_name))


def choose_with_recording(trace: Trace, roots: Iterable[int], children: dict[int, list[int]],
                          index: RecordedIndex, is_modeled) -> tuple[list[Chosen], int]:
    """Match recorded ops to trace events; events outside every match fall back to the trace-only rule.

    Returns the chosen events and how many recorded ops found no event.
    """
    names, holds_named, by_name = index.names, index.holds_named, index.by_name
    candidates: list[int] = []
    leftovers: list[int] = []
    stack = list(reversed(list(roots)))
    while stack:
        idx = stack.pop()
        op = trace.ops[idx]
        if not op.is_annotation and op.name in names:
            candidates.append(idx)
            continue
        if idx in holds_named:
            if op.self_kernel_us > 0:
                leftovers.append(idx)
            stack.extend(reversed(children.get(idx, [])))
        else:
            leftovers.append(idx)
    candidates.sort(key=lambda i: trace.ops[i].ts_us)
    seen: dict[str, int] = defaultdict(int)
    chosen: list[Chosen] = []
    for idx in candidates:
        name = trace.ops[idx].name
        k = seen[name]
        seen[name] += 1
        recs = by_name.get(name, [])
        chosen.append(Chosen(idx, recs[k] if k < len(recs) else None))
    missing = sum(max(0, len(recs) - seen.get(name, 0)) for name, recs in by_name.items())
    for idx in leftovers:
        if idx in holds_named:
            chosen.append(Chosen(idx, self_only=True))
        else:
            chosen.extend(choose_without_recording(trace, [idx], children, is_modeled))
    return chosen, missing


def _ancestors_of_named(trace: Trace, names: set[str]) -> set[int]:
    """Indices of events with a recorded-name event somewhere below them (one upward walk per such event)."""
    marked: set[int] = set()
    for op in trace.ops:
        if op.is_annotation or op.name not in names:
            continue
        parent = op.parent
        while parent >= 0 and parent not in marked:
            marked.add(parent)
            parent = trace.ops[parent].parent
    return marked


def subtree(idx: int, children: dict[int, list[int]]) -> list[int]:
    out = [idx]
    stack = list(children.get(idx, []))
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(children.get(i, []))
    return out


def op_phase(op: CpuOp) -> str:
    if op.is_optimizer:
        return "optimizer"
    if op.is_backward:
        return "backward"
    return "forward"
