"""Which Nsight Compute metrics roofline collects, by set, and which MeasuredTraffic field each one fills.

``dram`` is what the H200 byte-model check used (always available); ``memory`` adds the L2 and L1 levels and the
L2 hit rate; ``full`` adds shared-memory bytes, SM and memory throughput, achieved occupancy and tensor-pipe use.
Metrics a device's ncu does not know are dropped before profiling (capture/ncu_run.py asks ncu which it has).
"""

from __future__ import annotations

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
DURATION = "gpu__time_duration.sum"
L2_BYTES = "lts__t_bytes.sum"
L2_HIT = "lts__t_sector_hit_rate.pct"
L1_BYTES = "l1tex__t_bytes.sum"
SHARED_BYTES = "sm__sass_data_bytes_mem_shared.sum"
SM_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_THROUGHPUT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
TENSOR_HMMA = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
TENSOR_GMMA = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"

_DRAM = [DRAM_READ, DRAM_WRITE, DURATION]
_MEMORY = _DRAM + [L2_BYTES, L2_HIT, L1_BYTES]
_FULL = _MEMORY + [SHARED_BYTES, SM_THROUGHPUT, MEMORY_THROUGHPUT, OCCUPANCY, TENSOR_HMMA, TENSOR_GMMA]

METRIC_SETS: dict[str, list[str]] = {"dram": _DRAM, "memory": _MEMORY, "full": _FULL}
DEFAULT_SET = "full"

# Summed over an op's kernels.
SUMMED = {DRAM_READ: "dram_read_bytes", DRAM_WRITE: "dram_write_bytes", L2_BYTES: "l2_bytes", L1_BYTES: "l1_bytes",
          SHARED_BYTES: "shared_bytes", DURATION: "duration_s"}
# Percentages averaged over an op's kernels, weighted by kernel duration.
AVERAGED = {SM_THROUGHPUT: "sm_throughput_pct", MEMORY_THROUGHPUT: "memory_throughput_pct",
            OCCUPANCY: "achieved_occupancy_pct"}
TENSOR_PIPES = (TENSOR_HMMA, TENSOR_GMMA)


def metrics_for(spec: str) -> list[str]:
    """A named set, or a comma-separated list of ncu metric names (the duration and DRAM bytes always included)."""
    from roofline.errors import RooflineError

    spec = spec.strip()
    if spec in METRIC_SETS:
        return list(METRIC_SETS[spec])
    names = [m.strip() for m in spec.split(",") if m.strip()]
    bad = [m for m in names if not all(c.isalnum() or c in "_." for c in m)]
    if not names or bad:
        raise RooflineError(f"--ncu-metrics {spec!r}: expected one of {', '.join(METRIC_SETS)} or a comma-separated "
                            "list of ncu metric names (e.g. dram__bytes_read.sum,lts__t_bytes.sum)")
    return list(dict.fromkeys(_DRAM + names))
