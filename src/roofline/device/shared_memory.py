"""The shared-memory roof of a CUDA GPU: aggregate bandwidth of 128-bit loads from shared memory over all SMs.

Triton cannot address shared memory itself, so a small CUDA C kernel is compiled at run time with the NVRTC that
torch bundles (``torch.cuda._compile_kernel``, torch 2.8 and later; absent, the roof is reported as not measured,
with that reason). Each block fills a 16 KiB buffer once, then every thread reads it in 16-byte (float4) loads,
a warp's 32 loads covering 512 contiguous bytes (each quarter-warp's 128 bytes hit the 32 banks once: no bank
conflict), adds what it read into registers and writes one float at the end, so no global traffic competes.
Bytes = blocks x threads x loads per thread x 16; the fastest of the timed launches (CUDA events) counts, as for
the other GPU roofs' repeats. Hopper's theoretical figure is SMs x 128 B/clock x the SM clock (H200: 132 x 128 B
x 1.98 GHz = 33.5 TB/s).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from roofline.device.measure import Progress, _noop, time_fn

BUFFER_FLOAT4 = 1024  # 16 KiB per block: 8 blocks of 256 threads fit on any SM since Volta
THREADS = 256
BLOCKS_PER_SM = 8
UNROLL = 8  # loads per trip of the kernel's loop (its "#pragma unroll")
BYTES_PER_LOAD = 16

SOURCE = r"""
extern "C" __global__ void shared_read(float* out, int trips) {
    __shared__ float4 buf[%(n)d];
    for (int i = threadIdx.x; i < %(n)d; i += blockDim.x)
        buf[i] = make_float4((float)i, (float)(i + 1), (float)(i + 2), (float)(i + 3));
    __syncthreads();
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    int base = threadIdx.x;
    for (int t = 0; t < trips; ++t) {
        #pragma unroll
        for (int j = 0; j < %(unroll)d; ++j) {
            float4 v = buf[(base + j * 128) & %(mask)d];
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
        base = (base + 32) & %(mask)d;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}
""" % {"n": BUFFER_FLOAT4, "unroll": UNROLL, "mask": BUFFER_FLOAT4 - 1}


@dataclass
class SharedMemoryResult:
    """``bytes_per_s`` None: not measured, and ``method`` says why."""

    bytes_per_s: float | None
    method: str


def shared_bytes(blocks: int, threads: int, loads_per_thread: int) -> int:
    """Bytes the kernel reads from shared memory: every thread's 16-byte loads, over all blocks."""
    return blocks * threads * loads_per_thread * BYTES_PER_LOAD


def compiler():
    """torch's NVRTC wrapper, or None where this torch has none."""
    return getattr(torch.cuda, "compile_kernel", None) or getattr(torch.cuda, "_compile_kernel", None)


def not_measured(device: torch.device) -> SharedMemoryResult | None:
    """Why the shared-memory roof cannot be measured here (None: it can)."""
    if device.type != "cuda":
        return SharedMemoryResult(None, "not measured: shared memory is a CUDA GPU's (this device is "
                                        f"{device.type})")
    if compiler() is None:
        return SharedMemoryResult(None, f"not measured: torch {torch.__version__} has no torch.cuda._compile_kernel "
                                        "(NVRTC, torch 2.8+) to build the CUDA C kernel (Triton cannot address shared "
                                        "memory)")
    return None


def measure_shared_memory_bandwidth(device: torch.device, *, quick: bool = False,
                                    progress: Progress = _noop) -> SharedMemoryResult:
    reason = not_measured(device)
    if reason is not None:
        return reason
    progress("shared-memory bandwidth: compiling the CUDA C kernel (NVRTC)")
    try:
        kernel = compiler()(SOURCE, "shared_read")
    except Exception as exc:  # noqa: BLE001 - no NVRTC library, a driver too old: the roof is absent, with why
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return SharedMemoryResult(None, f"not measured: NVRTC could not build the kernel ({type(exc).__name__}: {first})")
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    blocks = sms * BLOCKS_PER_SM
    trips = 512 if quick else 4096
    out = torch.empty(blocks * THREADS, device=device)
    progress(f"shared-memory bandwidth: {blocks} blocks x {THREADS} threads x {trips * UNROLL} loads")

    def launch() -> None:
        kernel(grid=(blocks, 1, 1), block=(THREADS, 1, 1), args=[out, trips])

    repeats = 5 if quick else 10
    seconds = min(time_fn(launch, device, warmup=2, repeats=repeats))
    moved = shared_bytes(blocks, THREADS, trips * UNROLL)
    method = (f"CUDA C kernel built with torch's NVRTC: {blocks} blocks ({BLOCKS_PER_SM} per SM) x {THREADS} threads, "
              f"each block fills a {BUFFER_FLOAT4 * 16 // 1024} KiB shared buffer once, then every thread makes "
              f"{trips * UNROLL} conflict-free 16-byte (float4) loads from it, summed in registers and written once; "
              f"bytes = blocks x threads x loads x 16 = {moved / 1e9:.3g} GB per launch; CUDA events, fastest of "
              f"{repeats} launches after 2 warm-up launches")
    return SharedMemoryResult(moved / seconds, method)
