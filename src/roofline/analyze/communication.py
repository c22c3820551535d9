"""Which trace events are communication: c10d / backend ops on the host, NCCL kernels on the device.

One table for the analysis of a trace (analyze/trace_file.py), the doctor and distributed/.
"""

from __future__ import annotations

from roofline.report import collective_size_unknown

_COMM_OP_PREFIXES = ("c10d::", "c10d_functional::", "_c10d_functional::", "nccl:", "gloo:", "mpi:", "ucc:",
                     "record_param_comms", "ProcessGroupNCCL", "ProcessGroupGloo")


MESSAGE_UNRECORDED = ("message size not recorded in the trace (neither its tensors' shapes nor its collective args' "
                      "'In msg nelems'): its bytes are unknown, not 0")

# An all-gather sized only by its backend's annotation (nccl:all_gather, nccl:_all_gather_base): the annotation
# records the tensor the backend was handed, the local shard; the gathered message is the shard times the group's
# size, which only the collective args give (analyze/pipeline.py _annotated_message).
SHARD_ONLY = ("message size not known from the trace: its only size record is its backend's all-gather annotation, "
              "which holds the local shard, and the gathered size needs the group's size, which only the collective "
              "args ('Out msg nelems') give; its bytes are unknown, not 0")


def message_unrecorded(op) -> bool:
    """A collective row (an OpRecord) whose bytes are 0 for want of a record, not because it sends nothing."""
    return collective_size_unknown(op.name, op.bound, op.bytes)


# The backends' own annotations of a collective (ProcessGroupNCCL's "nccl:all_reduce" ...): they record the tensor
# the backend was handed.
BACKEND_PREFIXES = ("nccl:", "gloo:", "mpi:", "ucc:")


def is_communication_kernel(name: str) -> bool:
    return "nccl" in name.lower()


def is_communication_op(name: str) -> bool:
    return name.startswith(_COMM_OP_PREFIXES)


def recorded_message_bytes(comm) -> float | None:
    """A collective's message as its ``record_param_comms`` args give it (CommArgs): the gathered output of an
    all-gather, else the input, in elements of the recorded dtype ("Float", "BFloat16", ...); None if not given."""
    from roofline.count.meta import dtype_itemsize

    if comm is None:
        return None
    gathers = "gather" in str(comm.collective or "").lower().replace("_", "")
    for value in ((comm.out_nelems, comm.in_nelems) if gathers else (comm.in_nelems, comm.out_nelems)):
        try:
            elements = int(value)
        except (TypeError, ValueError):
            continue
        if elements >= 0:
            return float(elements * dtype_itemsize(str(comm.dtype) if comm.dtype else None))
    return None
