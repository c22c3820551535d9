"""One-time start-up cost inside a profiled window: CUDA's lazy initialisation and the first iterations.

The first CUDA runtime call of a process creates the context (loads the driver and the kernels' modules),
which takes from a hundred milliseconds to tens of seconds; whichever call comes first (cudaGetDeviceCount,
cudaDeviceGetStreamPriorityRange, cudaMalloc, cudaFree(0)...) carries it. A profile that starts before it shows
that time as an idle GPU at the start of the first step, which is not an input-pipeline problem and does not
recur. The first iterations (ProfilerStep#0 and #1) carry the rest of the warm-up: torch.compile's compilation
and guards, cuDNN/cuBLAS autotuning, the caching allocator's growth. Found here, both are named as such (the
``warm-up`` rule) and left out of input-idle.
"""

from __future__ import annotations

from typing import Any

LAZY_INIT_MIN_US = 50_000.0
LAST_WARMUP_STEP = 1
_INIT_CALLS = ("cudaGetDeviceCount", "cudaDeviceGetStreamPriorityRange", "cudaFree", "cudaSetDevice", "cuInit",
               "cudaGetDevice", "cudaDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cudaStreamIsCapturing",
               "cudaMalloc", "hipGetDeviceCount", "hipDeviceGetStreamPriorityRange", "hipMalloc", "hipFree",
               "hipSetDevice", "hipInit")


def warmup_events(trace) -> list[dict[str, Any]]:
    """Runtime calls that carried CUDA's lazy initialisation, on the report's clock (``start_s`` from the step
    start, or the first op when the trace has no steps, as ops' ``start_s``)."""
    found = [{"kind": "first-iteration", "step": i, "number": step.number, "start_s": 0.0,
              "dur_s": step.dur_us / 1e6}
             for i, step in enumerate(trace.steps) if step.number <= LAST_WARMUP_STEP]
    for i, launch in enumerate(trace.launches):
        first = i == 0
        if launch.dur_us < LAZY_INIT_MIN_US or not (first or launch.name.startswith(_INIT_CALLS)):
            continue
        step = trace.step_of(launch.ts_us) if trace.steps else None
        origin = trace.steps[step].ts_us if step is not None else (trace.ops[0].ts_us if trace.ops else launch.ts_us)
        found.append({"kind": "cuda-lazy-init", "call": launch.name, "step": step,
                      "start_s": (launch.ts_us - origin) / 1e6, "dur_s": launch.dur_us / 1e6})
        if len(found) >= 16:
            break
    return found
