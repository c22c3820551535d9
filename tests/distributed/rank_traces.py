"""Small GPU rank traces for the merge tests, written as torch.profiler would (gzip JSON)."""

import gzip
import json


def write_rank_trace(path, rank, compute_us, comm_us, *, world=2, sleep_us=0, distributed=True):
    """A GPU rank's trace: a matmul, then an all-reduce; ``sleep_us`` of host sleep before it (a straggler).
    ``distributed=False``: a one-process trace (no distributedInfo, no all-reduce)."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 0, "dur": 4000},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20,
         "args": {"External id": 1, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
         "args": {"correlation": 1, "External id": 1}},
        {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 30, "dur": compute_us,
         "args": {"device": 0, "stream": 7, "correlation": 1, "External id": 1}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 13,
         "ts": 40 + compute_us + sleep_us, "dur": comm_us, "args": {"device": 0, "stream": 13, "correlation": 2}},
    ]
    if sleep_us:
        events.append({"ph": "X", "cat": "python_function", "name": "<built-in function sleep>", "pid": 1, "tid": 1,
                       "ts": 40, "dur": sleep_us, "args": {}})
    if not distributed:
        events = [e for e in events if not e["name"].startswith("nccl")]
    payload = {"traceEvents": events, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
               "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}]}
    if not distributed:
        del payload["distributedInfo"]
    path.write_bytes(gzip.compress(json.dumps(payload).encode()))
    return str(path)
