"""Collectives (c10d's ops, and the functional ones torch.compile emits): the message they move, not a roofline.

Their time is the network's (or the backend's) and their work is no FLOP count: the analysis classes them as
communication (analyze/roofline.py, by name: analyze/communication.py), outside the unmodelled share. Their
OpCost is unmodelled, kept whole (its children, ``record_param_comms`` and the backend's calls, are the same
transfer), with ``bytes`` the message: the larger of the first two tensor arguments (an all-gather's output, a
reduce-scatter's input, else the buffer sent), as the distributed section sizes a collective; a functional
all-gather's output is its input times the group size. A trace records no dtype for a tensor list: 4 bytes an
element assumed there (the note says so).
"""

from __future__ import annotations

from roofline.count.meta import unknown_dtype_note
from roofline.count.registry import Call, OpCost, flatten_metas, nbytes, register

COMMUNICATION_NOTE = "communication: a collective's time, not a roofline; bytes are its message"

_C10D = ("allreduce_", "allreduce_coalesced_", "allgather_", "allgather_coalesced_",
         "allgather_into_tensor_coalesced_", "_allgather_base_", "reduce_scatter_", "_reduce_scatter_base_",
         "reduce_scatter_tensor_coalesced_", "broadcast_", "reduce_", "gather_", "scatter_", "alltoall_",
         "alltoall_base_", "send", "recv_", "recv_any_source_", "barrier", "monitored_barrier_")
_FUNCTIONAL = ("all_reduce", "all_reduce_", "all_reduce_coalesced", "all_reduce_coalesced_", "all_gather_into_tensor",
               "all_gather_into_tensor_coalesced", "all_gather_into_tensor_out", "reduce_scatter_tensor",
               "reduce_scatter_tensor_coalesced", "all_to_all_single", "broadcast", "broadcast_", "wait_tensor")


@register(*(f"c10d::{name}" for name in _C10D), *(f"{ns}::{name}" for ns in ("_c10d_functional", "c10d_functional")
                                                  for name in _FUNCTIONAL))
def collective(call: Call) -> OpCost:
    if call.name.endswith(("barrier", "barrier_", "wait_tensor")):
        return OpCost(0.0, 0.0, False, note=COMMUNICATION_NOTE, keep_whole=True)
    first, second = flatten_metas(call.arg(0)), flatten_metas(call.arg(1))
    message = max(nbytes(first), nbytes(second))
    group = call.arg(1)
    if "all_gather_into_tensor" in call.name and isinstance(group, int) and not isinstance(group, bool):
        message = nbytes(first) * group
    listed = first if nbytes(first) >= nbytes(second) else second
    note = "; ".join(filter(None, [COMMUNICATION_NOTE, unknown_dtype_note(listed) if listed else ""]))
    return OpCost(0.0, float(message), False, note=note, keep_whole=True)
