"""What shows that a trace's ops drove a GPU whose own activity was not recorded.

A trace profiled without ``ProfilerActivity.CUDA`` (or with its kernels stripped) holds the host's ops and nothing
else, like a CPU run's; but its op times are launch times, not the work: an ``addmm`` of 20 GFLOP "taking" 46 us.
The host side still shows the device: calls that launch device work or copy to it (cudaLaunchKernel, hipMemcpyAsync,
when the runtime was recorded), NCCL or RCCL collectives (a GPU-only backend), ``record_stream`` (a tensor tied to a
device stream). Allocations on a device are the caller's to judge (analyze/unused_gpu.py): a harness may know them to
be its own.
"""

from __future__ import annotations

import re

from roofline.capture.trace_model import Trace, op_columns

# Runtime/driver calls that put work on a device: a model on the GPU makes them, one on the CPU never does (the
# profiling harness's own cudaDeviceSynchronize at each step boundary is no such call).
DEVICE_WORK_CALL = re.compile(r"launch|memcpy|memset", re.I)
# Host ops that exist only for a GPU: NCCL/RCCL collectives (torch names them nccl:all_reduce ...) and
# Tensor.record_stream, which ties a tensor to a device stream.
_GPU_ONLY_OP = re.compile(r"^(nccl|rccl):|^aten::record_stream$", re.I)
_GPU_BACKENDS = {"nccl", "rccl"}


def unrecorded_device_use(trace: Trace) -> str:
    """What in ``trace`` shows its ops drove a GPU though no device activity was recorded ("" when nothing does,
    or when kernels were recorded)."""
    if trace.kernels:
        return ""
    launches = sorted({launch.name for launch in trace.launches if DEVICE_WORK_CALL.search(launch.name)})
    if launches:
        return "device launch/copy calls on the host (" + ", ".join(launches[:3]) + ")"
    backend = trace.metadata.get("distributedInfo")
    backend = str(backend.get("backend") or "").lower() if isinstance(backend, dict) else ""
    if backend in _GPU_BACKENDS:
        return f"the process group's backend is {backend} (GPU-only)"
    if trace.ops:
        hits = op_columns(trace).named(_GPU_ONLY_OP.search)
        if hits.any():
            names = sorted({trace.ops[i].name for i in hits.nonzero()[0][:50]})
            return "host ops that only a GPU runs (" + ", ".join(names[:3]) + ")"
    return ""
