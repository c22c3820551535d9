"""Which trace events are communication: c10d / backend ops on the host, NCCL kernels on the device.

One table for the analysis of a trace (analyze/trace_file.py), the doctor and distributed/.
"""

from __future__ import annotations

_COMM_OP_PREFIXES = ("c10d::", "c10d_functional::", "_c10d_functional::", "nccl:", "gloo:", "mpi:", "ucc:",
                     "record_param_comms", "ProcessGroupNCCL", "ProcessGroupGloo")


def is_communication_kernel(name: str) -> bool:
    return "nccl" in name.lower()


def is_communication_op(name: str) -> bool:
    return name.startswith(_COMM_OP_PREFIXES)
