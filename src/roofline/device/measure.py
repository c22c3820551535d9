"""Measuring the device's real ceilings: memory bandwidth, FLOP/s per dtype, launch overhead.

Method (stated in every result): buffers well past the last-level cache but bounded by the memory the machine has
free, random data (never zeros), warm-up before timing, device events on CUDA (a synchronised perf_counter on
CPU). Bandwidth counts the minimum bytes each kernel must move (a copy reads and writes its buffer; a sum reads
it; a fill writes it); the best kernel is the memory roof, since the roof is what the hardware can reach.

On a CPU every figure is the best of many repeats, interleaved in rounds: a shared machine's other work only ever
slows a sample down, so the fastest sample is the stable estimate of what the hardware reaches (a median moves
with the neighbours' load). On a GPU, which nothing else shares, the median of repeats is kept, except for matrix
products: tensor-core throughput follows the clock, which drops under sustained load (power), and one product run
after idle time (an op in a profiled step) reaches the top clock, so the fastest repeat is the roof (an 8192^3 bf16
product in a profiled step ran 2.0% above the median of back-to-back repeats on the H200).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from roofline.device.memory_limit import cgroup_headroom_bytes
from roofline.device.resolve import compute_capability, last_level_cache_bytes, resolve_device
from roofline.errors import RooflineError

Progress = Callable[[str], None]

# A product slower than this ends the size sweep: larger ones would only take longer (CPU half precision
# without matrix units runs at a few GFLOP/s), and the best rate has already been seen.
_SLOW_PRODUCT_S = 0.3

# The CPU sweep stops before a size whose one product is predicted (from the best rate so far) to take longer.
_CPU_NEXT_PRODUCT_S = 0.5

# CPU buffers: at most this much in all, and at most 1/8 of the memory the OS calls available, whatever cache size a
# VM reports (some report hundreds of MiB of L3, which a "16x the cache" rule turned into 15 GB of buffers).
_CPU_BUFFER_CAP_BYTES = 2 * 2**30
_CPU_BUFFER_TARGET_BYTES = 256 * 2**20
_CPU_BUFFER_QUICK_BYTES = 128 * 2**20
# Seconds of timed samples per figure on a CPU (each matmul size, each bandwidth round): enough repeats that the
# best one is reached on a busy 2-core machine, while a full measurement stays well under 30 s.
_CPU_FLOPS_BUDGET_S = 0.3
_CPU_BANDWIDTH_ROUNDS = 2

FLOAT_DTYPES = ("float32", "tfloat32", "float16", "bfloat16", "float8_e4m3fn", "float64")
# Integer products, measured with torch._int_mm (int8 x int8 -> int32) where torch has it for the device; each
# multiply-accumulate counts 2 operations, as the counters count them (count/quantized.py, count/onnx_quant.py).
INT_DTYPES = ("int8",)


@dataclass
class BandwidthResult:
    best_bytes_per_s: float
    by_kernel_bytes_per_s: dict[str, float]
    buffer_bytes: int
    method: str


@dataclass
class FlopsResult:
    dtype: str
    best_flops_per_s: float
    by_size_flops_per_s: dict[int, float] = field(default_factory=dict)
    method: str = ""


@dataclass
class LaunchResult:
    eager_s: float
    graph_s: float | None
    method: str


def _noop(_: str) -> None:
    pass


def time_fn(fn: Callable[[], object], device: torch.device, *, warmup: int = 3, repeats: int = 10) -> list[float]:
    """Seconds per call of fn, one sample per call, after warm-up."""
    for _ in range(warmup):
        fn()
    samples: list[float] = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return samples


def available_memory_bytes() -> int | None:
    """What this process can allocate without swapping or being killed (``memory_available``), None if unknown."""
    return memory_available()[0]


def memory_available() -> tuple[int | None, bool]:
    """(the host's MemAvailable capped by what a container's or job's memory limit still allows (device/
    memory_limit.py), or None where neither is known; whether that limit is what sets it)."""
    host = _host_available_bytes()
    limited = cgroup_headroom_bytes()
    if limited is None or (host is not None and host <= limited):
        return host, False
    return limited, True


def _host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo, else the free pages sysconf reports, None where the OS gives neither."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def cpu_buffer_budget_bytes() -> int:
    """Bytes the CPU bandwidth test may allocate in all (its two buffers together)."""
    available = available_memory_bytes()
    cap = _CPU_BUFFER_CAP_BYTES
    if available is not None:
        cap = min(cap, available // 8)
    return max(cap, 2 * 4 * 2**20)


def _bandwidth_buffer_elems(device: torch.device, quick: bool) -> int:
    """fp32 elements in each of the two buffers."""
    if device.type == "cuda":
        llc = last_level_cache_bytes(device)
        free, _ = torch.cuda.mem_get_info(device)
        target = max(64 * llc, 4 * 2**30)
        nbytes = min(target, free // 4)
    else:
        target = _CPU_BUFFER_QUICK_BYTES if quick else _CPU_BUFFER_TARGET_BYTES
        nbytes = min(target, cpu_buffer_budget_bytes() // 2)
    return max(nbytes // 4, 2**20)


def best_time_fn(fn: Callable[[], object], *, budget_s: float, min_repeats: int = 3, max_repeats: int = 50) -> float:
    """Fastest of repeated CPU calls of fn, taken until budget_s of samples (at least min_repeats, one warm-up)."""
    fn()
    best = float("inf")
    spent = 0.0
    n = 0
    while n < min_repeats or (spent < budget_s and n < max_repeats):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        n += 1
    return best


def measure_peak_bandwidth(
    device: str | torch.device | None = None, *, quick: bool = False, progress: Progress = _noop
) -> BandwidthResult:
    """Best of copy, read-only (sum) and write-only (fill) over a buffer many times the last-level cache."""
    dev = resolve_device(device)
    n = _bandwidth_buffer_elems(dev, quick)
    src = torch.rand(n, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    nbytes = n * 4
    repeats = 5 if quick else (20 if dev.type == "cuda" else 8)
    kernels: dict[str, tuple[Callable[[], object], int]] = {
        "copy": (lambda: dst.copy_(src), 2 * nbytes),
        "read": (lambda: torch.sum(src), nbytes),
        "write": (lambda: dst.fill_(1.5), nbytes),
        "write-bytes": (lambda: dst.view(torch.uint8).fill_(7), nbytes),
        "zero": (lambda: dst.zero_(), nbytes),
    }
    triton_note = ""
    if dev.type == "cuda":
        try:
            from roofline.device.stream_kernels import check_stream_kernels, triton_stream_kernels

            check_stream_kernels(dev)
            kernels.update(triton_stream_kernels(src, dst))
            triton_note = "; Triton streaming write/read/copy kernels tried too"
        except Exception as exc:  # noqa: BLE001 - Triton is an optional extra candidate
            triton_note = f"; Triton kernels unavailable ({type(exc).__name__}), torch kernels only"
    rates: dict[str, float] = {}
    if dev.type == "cuda":
        for name, (fn, moved) in kernels.items():
            progress(f"bandwidth: {name} over {nbytes / 2**20:.0f} MiB")
            rates[name] = moved / statistics.median(time_fn(fn, dev, warmup=2, repeats=repeats))
        statistic = f"median of {repeats} after warm-up"
    else:
        rounds = 2 if quick else _CPU_BANDWIDTH_ROUNDS
        for r in range(rounds):
            progress(f"bandwidth: round {r + 1}/{rounds} over 2 x {nbytes / 2**20:.0f} MiB")
            for name, (fn, moved) in kernels.items():
                rates[name] = max(rates.get(name, 0.0), moved / min(time_fn(fn, dev, warmup=1, repeats=2)))
        statistic = f"best of {rounds} interleaved rounds of 2 after warm-up, {torch.get_num_threads()} threads"
    timer = "CUDA events" if dev.type == "cuda" else "synchronised perf_counter"
    method = (
        f"two fp32 buffers of {nbytes / 2**20:.0f} MiB ({nbytes / last_level_cache_bytes(dev):.0f}x the reported "
        f"last-level cache{'' if dev.type == 'cuda' else '; at most 1/8 of available memory and 2 GiB in all'}), "
        f"random data; copy counts read+write bytes, sum read bytes, fill (fp32 and bytewise) and zero_ written "
        f"bytes; {timer}, {statistic}; the best kernel is the memory roof{triton_note}"
    )
    best = max(rates.values())
    return BandwidthResult(best, rates, nbytes, method)


def _matmul_sizes(device: torch.device, quick: bool) -> list[int]:
    if device.type == "cuda":
        return [4096, 8192] if quick else [4096, 8192, 12288]
    # 1024 even when quick: on a loaded CPU small products mostly measure threads waiting for a core (a 256^3
    # product ran at 1 GFLOP/s, a 1024^3 one at 30, on a 2-core machine at load average 5).
    return [256, 512, 1024]


def supported_dtypes(device: torch.device) -> list[str]:
    # float64: scientific and physics models run in it, and its rate is no fixed fraction of float32's (about half
    # on a CPU's vector units, a 64th on consumer GPUs, tensor cores on datacenter ones): measured, not assumed.
    if device.type == "cpu":
        return ["float32", "bfloat16", "float16", "float64"]
    names = ["float32", "tfloat32", "float16", "bfloat16"]
    cc = compute_capability(device)
    if cc is not None and cc >= (8, 9) and hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm"):
        names.append("float8_e4m3fn")
    return names + ["float64"]


def measurable_dtype(device: torch.device, dtype: str) -> str:
    """The dtype's name ("torch." dropped), or a RooflineError saying why its roof cannot be measured here."""
    dtype = str(dtype).replace("torch.", "")
    if dtype not in FLOAT_DTYPES + INT_DTYPES:
        raise RooflineError(f"unknown dtype {dtype!r}: use one of {', '.join(FLOAT_DTYPES + INT_DTYPES)}")
    if dtype == "int8":
        reason = int8_unavailable_reason(device)
        if reason:
            raise RooflineError(f"dtype int8 is not available on {device}: {reason}")
    elif dtype not in supported_dtypes(device):
        available = supported_dtypes(device) + ([] if int8_unavailable_reason(device) else ["int8"])
        raise RooflineError(f"dtype {dtype} is not available on {device} (available: {', '.join(available)})")
    return dtype


def measure_peak_flops(
    device: str | torch.device | None = None,
    dtype: str = "float32",
    *,
    quick: bool = False,
    progress: Progress = _noop,
) -> FlopsResult:
    """Best sustained dense matmul rate over a small sweep of large square shapes, on random data."""
    dev = resolve_device(device)
    dtype = measurable_dtype(dev, dtype)
    rates: dict[int, float] = {}
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32 if dev.type == "cuda" else None
    try:
        if dev.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tfloat32"
        if dev.type == "cuda":
            for size in _matmul_sizes(dev, quick):
                progress(f"matmul {dtype} {size}^3")
                fn = _matmul_fn(dev, dtype, size)
                probe = min(time_fn(fn, dev, warmup=1, repeats=1))
                slow = probe > _SLOW_PRODUCT_S
                repeats = 3 if quick or slow else 10
                t = min(time_fn(fn, dev, warmup=0 if slow else 2, repeats=repeats))
                rates[size] = 2 * size**3 / t
                del fn
                if slow:
                    break
        else:
            rates = _cpu_matmul_rates(dev, dtype, quick, progress)
    finally:
        if prev_tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    timer = "CUDA events" if dev.type == "cuda" else "synchronised perf_counter"
    op = {"float8_e4m3fn": "torch._scaled_mm (per-tensor scales)",
          "int8": "torch._int_mm (int8 x int8 -> int32)"}.get(dtype, "torch.mm")
    counted = ("2*N^3 operations per product (integer multiply-accumulates counted as 2, as FLOPs are)"
               if dtype in INT_DTYPES else "2*N^3 FLOP per product")
    tf32 = {"float32": ", TF32 off", "tfloat32": ", TF32 on (fp32 tensors)"}.get(dtype, "") if dev.type == "cuda" else ""
    statistic = (
        "fastest of repeats after warm-up (the clock drops under sustained load)" if dev.type == "cuda"
        else f"best of repeats ({_CPU_FLOPS_BUDGET_S if not quick else _CPU_FLOPS_BUDGET_S / 4:g} s of samples per size) "
             f"after warm-up, {torch.get_num_threads()} threads"
    )
    method = (
        f"{op} on random {dtype} square matrices of sizes {sorted(rates)}{tf32}; {counted}; {timer}, "
        f"{statistic}; best size kept"
    )
    return FlopsResult(dtype, max(rates.values()), rates, method)


def _cpu_matmul_rates(dev: torch.device, dtype: str, quick: bool, progress: Progress) -> dict[int, float]:
    """Best rate per size, growing the size while the next product is predicted (8x the last) to stay fast. The
    two smallest sizes are always measured: on a loaded machine the smallest product alone can come out slow
    (its threads wait for a core), which must not end the sweep."""
    budget = _CPU_FLOPS_BUDGET_S / 4 if quick else _CPU_FLOPS_BUDGET_S
    rates: dict[int, float] = {}
    for size in _matmul_sizes(dev, quick):
        if len(rates) >= 2 and 2 * size**3 / max(rates.values()) > _CPU_NEXT_PRODUCT_S:
            break
        progress(f"matmul {dtype} {size}^3")
        fn = _matmul_fn(dev, dtype, size)
        rates[size] = 2 * size**3 / best_time_fn(fn, budget_s=budget)
        del fn
    return rates


def int8_unavailable_reason(device: torch.device) -> str | None:
    """Why the int8 roof cannot be measured here (None: it can): this torch has no ``torch._int_mm``, or a small
    product of the shapes every backend accepts (CUDA needs M > 16 and K, N multiples of 8) raises."""
    if not hasattr(torch, "_int_mm"):
        return f"torch {torch.__version__} has no torch._int_mm"
    a = torch.ones(32, 32, device=device, dtype=torch.int8)
    try:
        out = torch._int_mm(a, a)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    except Exception as exc:  # noqa: BLE001 - any refusal by the backend means no int8 roof, said why
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"torch._int_mm raised {type(exc).__name__}" + (f": {first_line}" if first_line else "")
    if int(out[0, 0]) != 32:
        return f"torch._int_mm gave {int(out[0, 0])} for a 32-long dot product of ones (expected 32)"
    return None


def _matmul_fn(device: torch.device, dtype: str, size: int) -> Callable[[], object]:
    gen = torch.Generator(device=device).manual_seed(size)
    if dtype == "int8":
        a = torch.randint(-128, 128, (size, size), device=device, generator=gen, dtype=torch.int8)
        b = torch.randint(-128, 128, (size, size), device=device, generator=gen, dtype=torch.int8)
        return lambda: torch._int_mm(a, b)
    if dtype == "float8_e4m3fn":
        a = torch.randn(size, size, device=device, generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(size, size, device=device, generator=gen).to(torch.float8_e4m3fn).t()
        scale = torch.ones((), device=device, dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
    tdtype = torch.float32 if dtype == "tfloat32" else getattr(torch, dtype)
    a = torch.randn(size, size, device=device, generator=gen, dtype=torch.float32).to(tdtype)
    b = torch.randn(size, size, device=device, generator=gen, dtype=torch.float32).to(tdtype)
    out = torch.empty(size, size, device=device, dtype=tdtype)
    return lambda: torch.mm(a, b, out=out)


def measure_launch_overhead(
    device: str | torch.device | None = None, *, quick: bool = False, progress: Progress = _noop
) -> LaunchResult:
    """Cost of one tiny op (x.add_(1) on 16 floats) launched from a Python loop, and inside a CUDA graph replay."""
    dev = resolve_device(device)
    x = torch.rand(16, device=dev)
    n = 200 if quick else 2000
    progress(f"launch overhead: {n} tiny ops")

    def loop() -> None:
        for _ in range(n):
            x.add_(1)

    samples = time_fn(loop, dev, warmup=1, repeats=3 if quick else 7)
    eager = (statistics.median(samples) if dev.type == "cuda" else min(samples)) / n
    graph_s: float | None = None
    if dev.type == "cuda":
        graph = capture_graph(loop, dev)
        graph_s = statistics.median(time_fn(graph.replay, dev, warmup=2, repeats=5 if quick else 10)) / n
    timer = "CUDA events" if dev.type == "cuda" else "synchronised perf_counter"
    method = f"x.add_(1) on 16 floats, {n} per timed loop from Python; {timer}, {'median' if dev.type == 'cuda' else 'best'} per op"
    if graph_s is not None:
        method += f"; graph: the same {n} ops captured in one CUDA graph and replayed"
    return LaunchResult(eager, graph_s, method)


def capture_graph(fn: Callable[[], object], device: torch.device) -> "torch.cuda.CUDAGraph":
    """fn captured in one CUDA graph, after the warm-up call on a side stream that capture requires."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph
