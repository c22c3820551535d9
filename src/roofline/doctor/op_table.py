"""The report's ops and device events as columns, built in one pass that every rule of one diagnose() shares.

A 127,620-op report holds a few hundred distinct calls: ops that share their name, dtype and (shared) argument
lists. A rule's question about an op's kind, dtypes, shapes or strides has one answer per call, so rules ask it
once per call (``OpTable.calls``) and find the ops through ``OpTable.call``, instead of walking every op's
attributes again in each rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from roofline.count.families import op_kind
from roofline.report import KernelRecord, OpRecord

T = TypeVar("T")


def call_key(op: OpRecord) -> tuple:
    """What an op's own description is made of: name, dtype, argument lists (by identity: reports share them between
    identical calls, and the table lives only while the report holds them) and outputs (by value)."""
    outs = op.output_shapes
    return (op.name, op.dtype, id(op.input_shapes), id(op.input_dtypes), id(op.input_strides),
            tuple(map(tuple, outs)) if outs else (), tuple(op.output_dtypes) if op.output_dtypes else ())


class OpTable:
    """Columns of ``report.ops`` (same positions), and the distinct calls among them.

    ``kind[i]``: op_kind of op i; ``call[i]``: index of op i's call in ``calls`` (the first op making it);
    ``members[c]``: the positions of call c's ops, ascending; ``run``: the positions in the order the ops ran
    (evidence.ordered_ops' order).
    """

    __slots__ = ("ops", "kind", "call", "calls", "call_kind", "members", "run", "in_run_order")

    def __init__(self, ops: Sequence[OpRecord], run: Sequence[int]):
        self.ops = ops
        index: dict[tuple, int] = {}
        kinds: dict[str, str] = {}
        self.calls: list[OpRecord] = []
        self.call_kind: list[str] = []
        self.members: list[list[int]] = []
        call: list[int] = []
        for pos, op in enumerate(ops):
            key = call_key(op)
            c = index.get(key)
            if c is None:
                c = index[key] = len(self.calls)
                self.calls.append(op)
                kind = kinds.get(op.name)
                if kind is None:
                    kind = kinds[op.name] = op_kind(op.name)
                self.call_kind.append(kind)
                self.members.append([])
            call.append(c)
            self.members[c].append(pos)
        self.call = call
        self.kind = [self.call_kind[c] for c in call]
        self.run = run
        self.in_run_order = all(pos == i for i, pos in enumerate(run))

    def per_call(self, answer: Callable[[OpRecord], T]) -> list[T]:
        """``answer`` for each call, asked of the call's first op."""
        return [answer(op) for op in self.calls]

    def positions(self, selected: Sequence[object]) -> list[int]:
        """The positions (ascending, report order) of the ops whose call's entry in ``selected`` is true."""
        picked = [self.members[c] for c, hit in enumerate(selected) if hit]
        if len(picked) == 1:
            return list(picked[0])
        return sorted(pos for group in picked for pos in group)

    def run_of(self, selected: Sequence[object]) -> list[int]:
        """``positions(selected)`` in the order the ops ran."""
        if self.in_run_order:
            return self.positions(selected)
        call = self.call
        return [i for i in self.run if selected[call[i]]]

    def ops_at(self, positions: Sequence[int]) -> list[OpRecord]:
        ops = self.ops
        return [ops[i] for i in positions]


class KernelTable:
    """``report.kernels``' start and duration as arrays (same positions)."""

    __slots__ = ("kernels", "start_s", "dur_s")

    def __init__(self, kernels: Sequence[KernelRecord]):
        self.kernels = kernels
        n = len(kernels)
        self.start_s = np.fromiter((k.start_s for k in kernels), dtype=np.float64, count=n)
        self.dur_s = np.fromiter((k.dur_s for k in kernels), dtype=np.float64, count=n)
