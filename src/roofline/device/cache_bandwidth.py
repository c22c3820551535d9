"""The cache roof: bandwidth of the last-level cache (a GPU's L2, a CPU's largest cache level), measured.

An op whose data was just written by the previous kernel and fits in the cache can run faster than DRAM allows
(on an H200, in-place relu_ on 25 MB ran at 114% of the DRAM roof). The hierarchical roofline judges such an op
against this second, higher roof (analyze/roofline.py states when).

Method: the kernels of the DRAM measurement (copy, and an in-place multiply that reads and writes one buffer),
on buffers whose whole footprint is at most half the cache, so they stay resident between calls, each call
repeated back to back after a warm-up call that loads the cache; the best kernel and size is the roof.
On a GPU a kernel this short is comparable to the gap between two kernels (about 1 us even in a CUDA graph),
which an op's own kernel time in a trace does not include: the calls are captured in one CUDA graph and the
time per call is taken at two sizes; the slope (extra bytes over extra time) removes the fixed per-call cost.
The slope is used only when the larger size took longer and the slope is at most twice the best per-call rate
(a larger one would be noise in a small time difference); otherwise bytes over time per call, which includes
the gap (a lower bound), is kept, and the method says which. On a CPU, per-call timing has no launch gap to
remove: the fastest call of each size, over two interleaved rounds, counts (a neighbour's load only slows a sample).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from roofline.device.measure import Progress, _noop, best_time_fn, capture_graph, time_fn
from roofline.device.resolve import last_level_cache_bytes, resolve_device

# Footprint of the largest buffer set as a share of the cache: half leaves room for whatever else is resident
# (an H200's L2 gave DRAM speed at 48 MiB of its 60 MiB, full speed at 32 MiB).
CACHE_FILL = 0.5
# Footprints tried, as fractions of CACHE_FILL x the cache: the slope is taken between the first and the last.
_FRACTIONS = (0.25, 0.5, 1.0)
_GRAPH_CALLS = 40
_GPU_REPLAYS = 7
# A slope more than this many times the kernel's best per-call rate is taken for noise, not kept.
_SLOPE_CAP = 2.0
_CPU_BUDGET_S = 0.025
# CPU rounds over all sizes and kernels, keeping each one's fastest: a neighbour's burst slows one round, not both.
_CPU_ROUNDS = 2
_CPU_MAX_FOOTPRINT = 64 * 2**20


@dataclass
class CacheBandwidthResult:
    best_bytes_per_s: float
    cache_bytes: int
    by_kernel_bytes_per_s: dict[str, float] = field(default_factory=dict)
    method: str = ""


def _kernels(footprint: int, device: torch.device) -> dict[str, tuple[Callable[[], object], int]]:
    """name -> (call, bytes moved per call) for kernels whose buffers together take ``footprint`` bytes."""
    half = max(footprint // 8, 1024)
    src = torch.rand(half, device=device)
    dst = torch.empty_like(src)
    inplace = torch.rand(2 * half, device=device) + 0.5
    return {
        "copy": (lambda: dst.copy_(src), 2 * 4 * half),
        "inplace": (lambda: inplace.mul_(1.0), 2 * 4 * 2 * half),
    }


def _gpu_seconds_per_call(fn: Callable[[], object], device: torch.device) -> float:
    """Median seconds per call over replays of one CUDA graph of _GRAPH_CALLS back-to-back calls."""

    def calls() -> None:
        for _ in range(_GRAPH_CALLS):
            fn()

    graph = capture_graph(calls, device)
    samples = time_fn(graph.replay, device, warmup=2, repeats=_GPU_REPLAYS)
    return statistics.median(samples) / _GRAPH_CALLS


def measure_cache_bandwidth(
    device: str | torch.device | None = None, *, quick: bool = False, progress: Progress = _noop
) -> CacheBandwidthResult:
    """Best bandwidth of copy and in-place multiply on buffers that stay in the last-level cache."""
    dev = resolve_device(device)
    cache = last_level_cache_bytes(dev)
    largest = int(cache * CACHE_FILL)
    if dev.type == "cpu":
        largest = min(largest, _CPU_MAX_FOOTPRINT)
    sizes = [max(int(largest * f), 64 * 1024) for f in _FRACTIONS]
    if quick:
        sizes = [sizes[0], sizes[-1]]
    rates: dict[str, float] = {}
    times: dict[str, dict[int, tuple[float, int]]] = {}
    rounds = 1 if dev.type == "cuda" else _CPU_ROUNDS
    for r in range(rounds):
        for size in sizes:
            progress(f"cache bandwidth: {size / 2**20:.1f} MiB footprint" + (f", round {r + 1}/{rounds}" if rounds > 1 else ""))
            for name, (fn, moved) in _kernels(size, dev).items():
                if dev.type == "cuda":
                    t = _gpu_seconds_per_call(fn, dev)
                else:
                    t = best_time_fn(fn, budget_s=_CPU_BUDGET_S / (2 if quick else 1), min_repeats=5, max_repeats=200)
                t = min(t, times.get(name, {}).get(size, (t, 0))[0])
                times.setdefault(name, {})[size] = (t, moved)
                rates[f"{name}@{size / 2**20:.3g}MiB"] = moved / t
    slopes: dict[str, float] = {}
    if dev.type == "cuda":
        for name, by_size in times.items():
            (t0, b0), (t1, b1) = by_size[sizes[0]], by_size[sizes[-1]]
            per_call_best = max(b / t for t, b in by_size.values())
            if t1 > t0 and b1 > b0 and (b1 - b0) / (t1 - t0) <= _SLOPE_CAP * per_call_best:
                slopes[name] = (b1 - b0) / (t1 - t0)
        rates.update({f"{name} (slope)": rate for name, rate in slopes.items()})
    per_call = max(v for k, v in rates.items() if "(slope)" not in k)
    best = max(rates.values())
    mib = ", ".join(f"{s / 2**20:.3g}" for s in sizes)
    if dev.type == "cuda":
        rate = (f"rate = slope between the smallest and largest footprint (extra bytes / extra time: the fixed "
                f"per-kernel gap removed; kept only when at most {_SLOPE_CAP:g}x the per-call rate)" if slopes else
                "no usable slope: rate = bytes / time per call, gap included (a lower bound)")
        how = (f"{_GRAPH_CALLS} calls captured in one CUDA graph, CUDA events, median of {_GPU_REPLAYS} replays; {rate}; "
               f"best per-call rate, gap included: {per_call / 1e9:,.0f} GB/s")
    else:
        how = (f"fastest of repeated calls ({_CPU_BUDGET_S:g} s of samples per size and kernel) after warm-up, best of "
               f"{rounds} interleaved rounds, {torch.get_num_threads()} threads, synchronised perf_counter")
    method = (f"copy and in-place multiply on fp32 buffers whose footprint is {mib} MiB (at most {CACHE_FILL:g} of the "
              f"{cache / 2**20:.3g} MiB last-level cache{' reported by the device' if dev.type == 'cuda' else ' the OS reports'}"
              f"{'' if dev.type == 'cuda' else f', and {_CPU_MAX_FOOTPRINT // 2**20} MiB'}), resident between calls "
              f"(a warm-up call loads them); copy counts read+write bytes, in-place multiply reads and writes its buffer; "
              f"{how}; the best kernel and size is the cache roof")
    return CacheBandwidthResult(best, cache, rates, method)
