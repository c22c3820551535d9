"""The report's ops and device events as columns, built once and shared by every rule of one diagnose().

A 127,620-op report holds a few hundred distinct calls: ops that share their name, dtype and argument lists. A
rule's question about an op's kind, dtypes, shapes or strides has one answer per call, so rules ask it once per call
(``OpTable.calls``) and find the ops through ``OpTable.call``, instead of walking every op's attributes again in each
rule. Ops are first grouped by their argument lists' identities (a report shares equal lists, argument_lists.py),
and only those groups' values are compared, so a call is the same whether its ops' lists are shared or not (a report
loaded from JSON, a hand-built one).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np

from roofline.count.families import op_kind
from roofline.report import KernelRecord, OpRecord

T = TypeVar("T")

_NO_STEP = np.iinfo(np.int64).min  # an op without a step, among the step numbers


def _nested_value(lists: Sequence[Any]) -> tuple:
    """A list of per-argument lists as a hashable value (an entry that is not a list is kept as it is)."""
    return tuple(tuple(x) if isinstance(x, (list, tuple)) else x for x in lists)


def call_key(op: OpRecord) -> tuple:
    """What a rule may ask once per call is made of: name, dtype, argument lists and outputs (by value), and
    whether the op moved nothing though counted (unfused_chain treats such a ``to`` or ``contiguous`` as a view)."""
    return (op.name, op.dtype, _nested_value(op.input_shapes), tuple(op.input_dtypes),
            _nested_value(op.input_strides), _nested_value(op.output_shapes), tuple(op.output_dtypes), op.modeled,
            not op.bytes)


class OpTable:
    """Columns of ``report.ops`` (same positions), and the distinct calls among them.

    ``call[i]``: index of op i's call in ``calls`` (the first op making it), also as ``call_array``;
    ``call_kind[c]``: op_kind of call c; ``step[i]``: op i's step; ``run``: the positions in the order the ops ran
    (step, then recorded index when any op has one, else position: evidence.ordered_ops' order).
    """

    def __init__(self, ops: Sequence[OpRecord]):
        self.ops = ops
        n = len(ops)
        self.call: list[int] = _calls_by_value(ops, _calls_by_identity(ops))
        self.call_array = np.array(self.call, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
        self.calls: list[OpRecord] = [ops[i] for i in _first_of_each(self.call_array).tolist()]
        self.call_kind = [op_kind(op.name) for op in self.calls]
        self.step = [op.step for op in ops]
        self.run = _run_order(ops, self.step)
        self.in_run_order = isinstance(self.run, range)
        self._columns: dict[str, np.ndarray] = {}

    @property
    def kind(self) -> list[str]:
        """op_kind of each op."""
        call_kind = self.call_kind
        return [call_kind[c] for c in self.call]

    def per_call(self, answer: Callable[[OpRecord], T]) -> list[T]:
        """``answer`` for each call, asked of the call's first op."""
        return [answer(op) for op in self.calls]

    def positions(self, selected: Sequence[object]) -> list[int]:
        """The positions (ascending, report order) of the ops whose call's entry in ``selected`` is true."""
        hits = np.array([bool(x) for x in selected], dtype=bool)
        if not hits.any():
            return []
        return np.flatnonzero(hits[self.call_array]).tolist()

    def run_of(self, selected: Sequence[object]) -> list[int]:
        """``positions(selected)`` in the order the ops ran."""
        if self.in_run_order:
            return self.positions(selected)
        call = self.call
        return [i for i in self.run if selected[call[i]]]

    def ops_at(self, positions: Sequence[int]) -> list[OpRecord]:
        ops = self.ops
        return [ops[i] for i in positions]

    def step_groups(self, positions: np.ndarray) -> tuple[list[int | None], np.ndarray, np.ndarray]:
        """The steps of the ops at ``positions`` (ascending) in the order they first appear there, and those
        positions sorted by step (in that order), stably, with each one's step index: (steps, group, by_group)."""
        if not len(positions):
            return [], np.zeros(0, dtype=np.int64), positions
        values = self._step_keys()[positions]
        unique, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        appearance = np.argsort(first, kind="stable")
        rank = np.empty_like(appearance)
        rank[appearance] = np.arange(len(appearance))
        group = rank[inverse.reshape(-1)]
        steps = [None if v == _NO_STEP else int(v) for v in unique[appearance].tolist()]
        order = np.argsort(group, kind="stable")
        return steps, group[order], positions[order]

    def run_skipping(self, skipped: Sequence[object]) -> Sequence[int]:
        """``run`` without the ops whose call's entry in ``skipped`` is true, except where the step changes (a
        walk over ``run`` that resets at each new step sees the same resets)."""
        if not any(skipped) or not self.run:
            return self.run
        run = np.arange(len(self.run)) if self.in_run_order else np.asarray(self.run, dtype=np.int64)
        steps = self._step_keys()[run]
        kept = ~np.array([bool(x) for x in skipped], dtype=bool)[self.call_array[run]]
        kept[0] = True
        kept[1:] |= steps[1:] != steps[:-1]
        return run[kept].tolist()

    def _step_keys(self) -> np.ndarray:
        found = self._columns.get("step keys")
        if found is None:
            steps = self.step
            keys = [_NO_STEP if s is None else s for s in steps] if None in steps else steps
            found = self._columns["step keys"] = np.array(keys, dtype=np.int64)
        return found

    def has_kernels(self) -> np.ndarray:
        """Whether each op launched device work (recorded kernels)."""
        found = self._columns.get("has kernels")
        if found is None:
            found = self._columns["has kernels"] = np.fromiter(map(bool, map(attrgetter("kernels"), self.ops)),
                                                              dtype=bool, count=len(self.ops))
        return found

    def floats(self, field: str) -> np.ndarray:
        """A float field of every op (NaN where it is None), read once per table."""
        return self.float_fields(field)[0]

    def float_fields(self, *fields: str) -> list[np.ndarray]:
        """``floats`` of each field, those not read yet read together (``float_columns``)."""
        missing = [field for field in fields if field not in self._columns]
        if missing:
            self._columns.update(zip(missing, float_columns(self.ops, missing)))
        return [self._columns[field] for field in fields]


def float_column(records: Sequence[Any], field: str) -> np.ndarray:
    """``field`` of every record as float64, NaN where it is None (``float_columns``)."""
    return float_columns(records, [field])[0]


def float_columns(records: Sequence[Any], fields: Sequence[str]) -> list[np.ndarray]:
    """Each of ``fields`` of every record as float64, NaN where it is None. Read straight into one array (np.fromiter:
    ~40% faster than a list first on a 127,620-op report), all the fields of a record at once: reading three
    columns in one pass over the records is ~40% faster again than three passes, as each record is fetched from
    memory once. A None makes np.fromiter refuse, and the columns are then read again through lists, which numpy
    turns into NaN."""
    n = len(records)
    try:
        if len(fields) == 1:
            return [np.fromiter(map(attrgetter(fields[0]), records), dtype=np.float64, count=n)]
        rows = np.fromiter(itertools.chain.from_iterable(map(attrgetter(*fields), records)), dtype=np.float64,
                           count=n * len(fields)).reshape(n, len(fields))
        return [np.ascontiguousarray(rows[:, k]) for k in range(len(fields))]
    except TypeError:
        return [np.array(list(map(attrgetter(field), records)), dtype=np.float64) for field in fields]


def _calls_by_identity(ops: Sequence[OpRecord]) -> list[int]:
    """Each op's group among ops of one name, dtype, argument list objects, outputs and ``call_key``'s moved-nothing
    flag, groups numbered in order of their first op. Ops of one call may fall in several groups where their lists
    are not shared. One comprehension reading each op's fields once: CPython 3.11 specialises its attribute loads,
    ~40% cheaper on a 127,620-op report than a column per field through attrgetter and zip."""
    index: dict[tuple, int] = {}
    number = index.setdefault
    if any(op.output_shapes or op.output_dtypes for op in ops):
        return [number((op.name, op.dtype, id(op.input_shapes), id(op.input_dtypes), id(op.input_strides),
                        _outputs(op), op.modeled, not op.bytes), len(index)) for op in ops]
    return [number((op.name, op.dtype, id(op.input_shapes), id(op.input_dtypes), id(op.input_strides), op.modeled,
                    not op.bytes), len(index)) for op in ops]


def _calls_by_value(ops: Sequence[OpRecord], group: list[int]) -> list[int]:
    """Each op's call: its group's, groups (numbered in order of their first op) with equal ``call_key`` made one."""
    firsts = _first_of_each(np.array(group, dtype=np.int64)).tolist() if group else []
    index: dict[tuple, int] = {}
    call_of_group = [index.setdefault(call_key(ops[i]), len(index)) for i in firsts]
    return group if len(index) == len(firsts) else list(map(call_of_group.__getitem__, group))


def _first_of_each(numbers: np.ndarray) -> np.ndarray:
    """The position of each number's first appearance, in order, for numbers given in order of first appearance
    (0, 1, 0, 2...): where the running maximum grows."""
    if not len(numbers):
        return numbers
    running = np.maximum.accumulate(numbers)
    return np.flatnonzero(np.concatenate(([True], running[1:] != running[:-1])))


def _outputs(op: OpRecord) -> tuple:
    outs = op.output_shapes
    return (tuple(map(tuple, outs)) if outs else (), tuple(op.output_dtypes) if op.output_dtypes else ())


def _run_order(ops: Sequence[OpRecord], steps: list[int | None]) -> Sequence[int]:
    """Positions sorted by (step, None first as -1; recorded index when any op has one, else position), stably;
    ``range(len(ops))`` when the ops already are in that order (reports are usually built in run order)."""
    n = len(ops)
    indexes = [op.index for op in ops]
    indexed = any(indexes)
    step_keys = [-1 if s is None else s for s in steps] if None in steps else steps
    try:
        step_arr = np.array(step_keys, dtype=np.int64)
        here = np.array(indexes, dtype=np.int64) if indexed else np.arange(n, dtype=np.int64)
    except OverflowError:
        order = sorted(range(n), key=lambda p: (step_keys[p], indexes[p] if indexed else p))
        return range(n) if order == list(range(n)) else order
    if n < 2:
        return range(n)
    d_step, d_here = np.diff(step_arr), np.diff(here)
    if not np.any((d_step < 0) | ((d_step == 0) & (d_here < 0))):
        return range(n)
    return np.lexsort((here, step_arr)).tolist()


class KernelTable:
    """``report.kernels``' start and duration as arrays (same positions)."""

    __slots__ = ("kernels", "start_s", "dur_s")

    def __init__(self, kernels: Sequence[KernelRecord]):
        self.kernels = kernels
        self.start_s, self.dur_s = float_columns(kernels, ["start_s", "dur_s"])
