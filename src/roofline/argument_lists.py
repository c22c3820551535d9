"""Ops' argument lists (shapes, dtypes, strides of inputs and outputs), shared between ops that have equal ones.

Analysis hands identical calls the same list objects (its counter builds them once per distinct call), and what
reads a report relies on that: the doctor's op table and evidence answer a question once per list object. JSON keeps
no identity, so a decoded report has its own lists on every op; sharing equal ones again gives it the layout a report
fresh from analysis has (and a fraction of the memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

import msgspec

FIELDS = ("input_shapes", "input_dtypes", "input_strides", "output_shapes", "output_dtypes")
_ALL_LISTS = attrgetter(*FIELDS)


def share_equal_argument_lists(ops: Sequence[object]) -> None:
    """Give each op whose five argument lists all equal an earlier op's that op's list objects, in place.

    The lists are read-only to every consumer (within a report fresh from analysis they already are shared). Ops
    are compared by their lists' JSON text: one C call per op, a fifth of the time tuples of tuples take."""
    encode = msgspec.json.Encoder().encode
    owners: dict[bytes, object] = {}
    for op, owner in zip(ops, map(owners.setdefault, map(encode, map(_ALL_LISTS, ops)), ops)):
        if owner is not op:
            (op.input_shapes, op.input_dtypes, op.input_strides, op.output_shapes,
             op.output_dtypes) = _ALL_LISTS(owner)
