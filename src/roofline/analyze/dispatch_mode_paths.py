"""Linear-algebra ops whose path torch chooses otherwise under the counting pass's dispatch mode: the timed event's
count wins.

torch's linalg_eigvalsh and linalg_svdvals (and what calls them: matrix_norm(ord=2 or 'nuc'), cond, matrix_rank)
ask _linalg_eigh / _linalg_svd for values only, and linalg_eigvals calls _linalg_eigvals, unless the input may need
a gradient; torch assumes it may whenever a dispatch mode is active (``_may_require_fw_or_bw_grad``:
``isTensorSubclassLike`` is true under any mode). So the counting pass records ``compute_v`` / ``compute_uv`` True,
or linalg_eig, the vectors' count (9n^3 for an eigh, 4n^3/3 without), where the timed run, under no mode, computed
values only. The timed trace records the flag it ran with and the op it called (linalg_eig's timed twin,
_linalg_eigvals: join.RENAMED_UNDER_RECORDER): a recorded op whose event says otherwise takes the event's count.
"""

from __future__ import annotations

from dataclasses import replace

from roofline.capture.recording import RecordedOp
from roofline.count.registry import OpCost

VECTORS_FLAG = {"aten::_linalg_eigh": 2, "aten::_linalg_svd": 2}  # op -> its compute_v / compute_uv argument
VALUES_ONLY_TWINS = {"aten::_linalg_eigvals": "aten::linalg_eig"}  # timed op -> what the recorder sees instead
RECOUNTED = set(VECTORS_FLAG) | set(VALUES_ONLY_TWINS.values())


def as_timed(rec: RecordedOp, event_name: str, event_args: list, event_cost: OpCost) -> RecordedOp:
    """``rec``, or where the timed event (``event_name``, ``event_args``, counted as ``event_cost``) is its
    values-only twin or ran with another vectors flag, a copy with the event's name, arguments and count. A dispatch
    mode is handed no argument left at its default: a flag missing from ``rec.args`` is True, the default of both."""
    if not event_cost.modeled:
        return rec
    if VALUES_ONLY_TWINS.get(event_name) == rec.name:
        return replace(rec, name=event_name, args=list(event_args), cost=event_cost)
    index = VECTORS_FLAG.get(rec.name)
    if index is None or event_name != rec.name or index >= len(event_args):
        return rec
    ran = event_args[index]
    recorded = rec.args[index] if index < len(rec.args) else True
    if not isinstance(ran, bool) or ran == recorded:
        return rec
    args = list(rec.args) + list(event_args[len(rec.args):])  # the event's own for the defaults left out
    args[index] = ran
    return replace(rec, args=args, cost=event_cost)
