"""Ops whose input shapes changed between the counting pass and the timed steps of a live run, and steps whose
work changed.

A live run counts one call of the step and times later calls. Where the model's inputs or state change from call to
call (a decode step's growing key/value cache, a buffer a forward appends to), the join still pairs the k-th op of
a name with the k-th recorded one, so the timed op carried the count of shapes it never ran (a cache of 57
positions counted, 58-60 timed). The profiler records every op's input shapes: where a timed event's disagree with
its recorded op's, the op is counted again from the timed events, and the report says so.

The two sides spell shapes differently, so a difference is only one where each holds a shape the other lacks: the
profiler lists a Python scalar as ``[]`` where the recorder saw a 0-dim tensor (or none), and leaves a tensor list's
shapes out where the recorder sees each tensor (index's indices).
"""

from __future__ import annotations

from collections.abc import Sequence


def shapes_conflict(recorded: Sequence[tuple], timed: Sequence[tuple]) -> bool:
    """Whether the input shapes of a recorded op and of its timed event describe different calls: after dropping
    0-dim shapes, neither side's shapes are a subsequence of the other's."""
    a = [shape for shape in recorded if shape]
    b = [shape for shape in timed if shape]
    return not (_subsequence(a, b) or _subsequence(b, a))


def recorded_dims(input_dims: Sequence | None) -> tuple[tuple, ...]:
    """A trace event's input shapes as its profiler recorded them (a tensor list's members in its place), not as a
    formula's reading of the event rebuilds them: index's index tensors from the calls below it, which on a boolean
    mask is nonzero's data-dependent result."""
    shapes: list[tuple] = []
    for dims in input_dims or ():
        if isinstance(dims, (list, tuple)) and dims and all(isinstance(d, (list, tuple)) for d in dims):
            shapes.extend(tuple(member) for member in dims)
        elif isinstance(dims, (list, tuple)):
            shapes.append(tuple(dims))
    return tuple(shapes)


def _subsequence(short: list[tuple], long: list[tuple]) -> bool:
    rest = iter(long)
    return all(any(shape == other for other in rest) for shape in short)


def median_event(events: list[int], cost_of) -> int:
    """Of one op's timed events (one a profiled step), the one whose count (FLOPs, then bytes) is the median's (the
    lower one for an even number): the op's time is the median over the same steps, so for a cache that grows a
    position a step, count and time then come from the middle step."""
    ranked = sorted(events, key=lambda event: (cost_of(event).flops, cost_of(event).bytes))
    return ranked[(len(ranked) - 1) // 2]


def shape_change_note(recounted: list[str], kept: list[str]) -> str | None:
    """What the report says of the ops counted again (``recounted``, by name) and of those whose timed shapes no
    formula could count from the trace (``kept``: their counting pass's count stands)."""
    if not recounted and not kept:
        return None
    names = sorted(set(recounted) | set(kept), key=lambda name: -(recounted + kept).count(name))
    listed = ", ".join(f"{name.removeprefix('aten::')} x{(recounted + kept).count(name)}" for name in names[:5])
    text = (f"{len(recounted) + len(kept)} op(s) ran at other input shapes in the timed steps than in the counting "
            f"pass ({listed}{', ...' if len(names) > 5 else ''}): the model's inputs or state changed between calls "
            "(a growing cache)")
    if recounted:
        text += (f"; {len(recounted)} counted again from the shapes the profiler recorded (the median step's, whose "
                 "time the op's row holds)")
    if kept:
        text += f"; {len(kept)} that no formula counts from a trace keep the counting pass's count"
    return text


def varying_steps_note(ops_per_step: list[int]) -> list[str]:
    """A note where the profiled steps chose different numbers of ops (a deterministic step chooses the same in
    each): the step's work changes from call to call (sampling generate stops at a random length), so the counting
    pass's call and the timed ones are not the same work."""
    if len(set(ops_per_step)) < 2:
        return []
    return [f"the profiled steps ran different numbers of ops ({', '.join(map(str, ops_per_step))}): the model's "
            "work changes from call to call (sampling, an early stop, data-dependent branches), so each op's count is "
            "of the counting pass's call and its time a median over steps that did not all run it; the table is no "
            "single step's"]
