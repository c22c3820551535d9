"""Ceilings for a device: measured once, cached per device and torch version (device/cache.py), beside the
datasheet entry."""

from __future__ import annotations

import datetime as _dt
import os
import time

import torch

from roofline.device.cache import (  # noqa: F401 - the cache half, re-exported for callers of this module
    _slug,
    cache_dir,
    cache_path,
    ceilings_for_device_name,
    check_cache_writable,
    load_ceilings,
    remeasure_command,
    save_ceilings,
)
from roofline.device.cache_bandwidth import CacheBandwidthResult, measure_cache_bandwidth
from roofline.device.shared_memory import measure_shared_memory_bandwidth
from roofline.device.datasheet import lookup_datasheet
from roofline.device.measure import (
    BandwidthResult,
    FlopsResult,
    Progress,
    _noop,
    measure_launch_overhead,
    measure_peak_bandwidth,
    int8_unavailable_reason,
    measure_peak_flops,
    supported_dtypes,
)
from roofline.device.resolve import device_name, resolve_device
from roofline.errors import RooflineError
from roofline.report import Ceilings

# A CPU is measured in passes spread over the whole measurement, keeping each figure's best: a neighbour busy for a
# few seconds slows one pass, not all of them. Another pass starts only while the measurement is predicted to end
# within the time budget, so a loaded machine gets fewer passes, never a longer wait.
CPU_PASSES = 3
# How the ceilings' method starts the entry for an int8 roof that could not be measured (and that a cached entry
# without int8 was already tried: lacks_int8_roof).
INT8_NOT_MEASURED = "int8: not measured"
CPU_TIME_BUDGET_S = 20.0


def measure_ceilings(
    device: str | torch.device | None = None, *, quick: bool = False, progress: Progress = _noop
) -> Ceilings:
    """Measure the device's roofs, recording when, with how many threads and under what load (the 1/5/15-minute
    load average before measuring: a loaded machine measures low roofs, which later runs see as ops above them)."""
    dev = resolve_device(device)
    name = device_name(dev)
    load = _load_average()
    passes = CPU_PASSES if dev.type == "cpu" and not quick else 1
    bw: BandwidthResult | None = None
    cache: CacheBandwidthResult | None = None
    flops: dict[str, FlopsResult] = {}
    int8_absent = int8_unavailable_reason(dev)
    began = time.perf_counter()
    done = 0
    while done < passes:
        if done and (time.perf_counter() - began) * (done + 1) / done > CPU_TIME_BUDGET_S:
            break

        def step(msg: str, n: int = done) -> None:
            progress(f"pass {n + 1}/{passes}: {msg}" if passes > 1 else msg)

        bw = _best_bandwidth(bw, measure_peak_bandwidth(dev, quick=quick, progress=step))
        cache = _best_cache(cache, measure_cache_bandwidth(dev, quick=quick, progress=step))
        for d in supported_dtypes(dev):
            flops[d] = _best_flops(flops.get(d), measure_peak_flops(dev, d, quick=quick, progress=step))
        if int8_absent is None:
            int8 = _measure_int8(dev, quick, step)
            if isinstance(int8, str):
                int8_absent = int8
                flops.pop("int8", None)
            else:
                flops["int8"] = _best_flops(flops.get("int8"), int8)
        done += 1
    assert bw is not None and cache is not None
    passes = done
    if passes > 1:
        for r in [bw, cache, *flops.values()]:
            r.method += f"; best of {passes} passes spread over the whole measurement"
    _cache_not_below_dram(cache, bw.best_bytes_per_s)
    launch = measure_launch_overhead(dev, quick=quick, progress=progress)
    shared = measure_shared_memory_bandwidth(dev, quick=quick, progress=progress)
    method = "; ".join(
        [f"bandwidth: {bw.method}"]
        + [f"{d}: {r.method}" for d, r in flops.items()]
        + ([_int8_absent_method(int8_absent)] if int8_absent else [])
        + [f"launch: {launch.method}", f"cache: {cache.method}"]
    )
    cores = os.cpu_count() or 1
    source = "measured" + (" (quick)" if quick else "")
    if dev.type == "cpu" and load and load[0] > 0.5 * cores:
        again = remeasure_command(Ceilings(device=str(dev), source=source))
        method = (f"measured on a busy machine (load average {load[0]:g} on {cores} cores): the roofs may come out "
                  f"low; re-measure when it is quiet ({again}). " + method)
    return Ceilings(
        device=str(dev),
        device_name=name,
        memory_bandwidth_bytes_per_s=bw.best_bytes_per_s,
        peak_flops_per_s={d: r.best_flops_per_s for d, r in flops.items()},
        launch_overhead_s=launch.eager_s,
        launch_overhead_graph_s=launch.graph_s,
        datasheet=lookup_datasheet(name) if dev.type == "cuda" else None,
        bandwidth_by_kernel_bytes_per_s=bw.by_kernel_bytes_per_s,
        source=source,
        method=method,
        torch_version=str(torch.__version__),
        measured_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        threads=torch.get_num_threads() if dev.type == "cpu" else None,
        load_average=load,
        cache_bandwidth_bytes_per_s=cache.best_bytes_per_s,
        cache_bytes=cache.cache_bytes,
        shared_memory_bandwidth_bytes_per_s=shared.bytes_per_s,
        shared_memory_method=shared.method,
    )


def add_cache_roof(ceilings: Ceilings, device: torch.device, *, quick: bool = False,
                   progress: Progress = _noop) -> Ceilings:
    """Ceilings cached before the cache roof existed, completed by measuring that roof alone (about a second),
    rather than all of them again; the method says it was measured later."""
    cache = measure_cache_bandwidth(device, quick=quick, progress=progress)
    _cache_not_below_dram(cache, ceilings.memory_bandwidth_bytes_per_s)
    ceilings.cache_bandwidth_bytes_per_s = cache.best_bytes_per_s
    ceilings.cache_bytes = cache.cache_bytes
    when = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    ceilings.method += f"; cache (measured {when}, after the other roofs, which predate it): {cache.method}"
    return ceilings


def add_shared_memory_roof(ceilings: Ceilings, device: torch.device, *, quick: bool = False,
                           progress: Progress = _noop) -> Ceilings:
    """Ceilings cached before the shared-memory roof existed, completed with it alone (a second on a GPU; on a CPU
    only the reason it is absent is recorded, so this runs once)."""
    shared = measure_shared_memory_bandwidth(device, quick=quick, progress=progress)
    ceilings.shared_memory_bandwidth_bytes_per_s = shared.bytes_per_s
    when = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    ceilings.shared_memory_method = (shared.method if shared.bytes_per_s is None else
                                     f"{shared.method} (measured {when}, after the other roofs)")
    return ceilings


def _measure_int8(device: torch.device, quick: bool, progress: Progress) -> FlopsResult | str:
    """The int8 roof's measurement, or why torch._int_mm failed during it."""
    try:
        return measure_peak_flops(device, "int8", quick=quick, progress=progress)
    except (RooflineError, RuntimeError) as exc:
        return f"torch._int_mm failed while measuring: {exc}".splitlines()[0]


def _int8_absent_method(reason: str) -> str:
    return (f"{INT8_NOT_MEASURED}: {reason}; integer products are judged against the float32 roof "
            "(Ceilings.peak_for's fallback)")


def lacks_int8_roof(ceilings: Ceilings) -> bool:
    """Measured ceilings cached before the int8 roof existed: neither an int8 figure nor the reason for none."""
    return (ceilings.source.startswith("measured") and "int8" not in ceilings.peak_flops_per_s
            and INT8_NOT_MEASURED not in ceilings.method)


def add_int8_roof(ceilings: Ceilings, device: torch.device, *, quick: bool = False,
                  progress: Progress = _noop) -> Ceilings:
    """Ceilings cached before the int8 roof existed, completed by measuring that roof alone (a second or two), or
    by recording why it cannot be measured here, so this runs once; the method says it was measured later."""
    r = int8_unavailable_reason(device) or _measure_int8(device, quick, progress)
    if isinstance(r, str):
        ceilings.method += f"; {_int8_absent_method(r)}"
        return ceilings
    return _with_late_roof(ceilings, r)


def _with_late_roof(ceilings: Ceilings, r: FlopsResult) -> Ceilings:
    """Cached ceilings with one dtype's roof measured after the others, said so in their method."""
    ceilings.peak_flops_per_s[r.dtype] = r.best_flops_per_s
    when = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    ceilings.method += f"; {r.dtype} (measured {when}, after the other roofs, which predate it): {r.method}"
    return ceilings


def lacks_float64_roof(ceilings: Ceilings) -> bool:
    """Measured ceilings cached before the float64 roof was measured (2026-12-03)."""
    return ceilings.source.startswith("measured") and "float64" not in ceilings.peak_flops_per_s


def add_float64_roof(ceilings: Ceilings, device: torch.device, *, quick: bool = False,
                     progress: Progress = _noop) -> Ceilings:
    """Ceilings cached before the float64 roof was measured, completed by measuring it alone (under a second on a
    CPU); the method says it was measured later."""
    return _with_late_roof(ceilings, measure_peak_flops(device, "float64", quick=quick, progress=progress))


def _best_bandwidth(a: BandwidthResult | None, b: BandwidthResult) -> BandwidthResult:
    if a is None:
        return b
    kernels = {k: max(a.by_kernel_bytes_per_s.get(k, 0.0), v) for k, v in b.by_kernel_bytes_per_s.items()}
    return BandwidthResult(max(kernels.values()), kernels, b.buffer_bytes, b.method)


def _best_cache(a: CacheBandwidthResult | None, b: CacheBandwidthResult) -> CacheBandwidthResult:
    if a is None:
        return b
    kernels = {k: max(a.by_kernel_bytes_per_s.get(k, 0.0), v) for k, v in b.by_kernel_bytes_per_s.items()}
    return CacheBandwidthResult(max(a.best_bytes_per_s, b.best_bytes_per_s), b.cache_bytes, kernels, b.method)


def _cache_not_below_dram(cache: CacheBandwidthResult, dram_bytes_per_s: float) -> None:
    """Data in the cache is never slower to reach than data in DRAM: a cache figure below the DRAM roof (short
    calls on a busy machine wait for a core) is replaced by the DRAM roof, and the method says so."""
    if cache.best_bytes_per_s < dram_bytes_per_s:
        cache.method += (f"; measured {cache.best_bytes_per_s / 1e9:,.1f} GB/s, below the DRAM roof (short calls on a "
                         "busy machine wait for a core): the DRAM roof is kept as the cache roof")
        cache.best_bytes_per_s = dram_bytes_per_s


def _best_flops(a: FlopsResult | None, b: FlopsResult) -> FlopsResult:
    if a is None:
        return b
    sizes = dict(a.by_size_flops_per_s)
    for size, rate in b.by_size_flops_per_s.items():
        sizes[size] = max(sizes.get(size, 0.0), rate)
    return FlopsResult(b.dtype, max(sizes.values()), sizes, b.method)


def _load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return []


def get_ceilings(
    device: str | torch.device | None = None,
    *,
    remeasure: bool = False,
    quick: bool = False,
    progress: Progress = _noop,
) -> Ceilings:
    """The device's ceilings from the cache, measuring (and caching) them when absent or when asked."""
    dev = resolve_device(device)
    path = cache_path(device_name(dev), quick=quick)
    if not remeasure:
        cached = load_ceilings(path, missing_ok=True)
        if cached is not None and cached.cache_bandwidth_bytes_per_s <= 0 and cached.source.startswith("measured"):
            cached = add_cache_roof(cached, dev, quick=quick, progress=progress)
            save_ceilings(cached, path)
        if cached is not None and not cached.shared_memory_method and cached.source.startswith("measured"):
            cached = add_shared_memory_roof(cached, dev, quick=quick, progress=progress)
            save_ceilings(cached, path)
        if cached is not None and lacks_int8_roof(cached):
            cached = add_int8_roof(cached, dev, quick=quick, progress=progress)
            save_ceilings(cached, path)
        if cached is not None and lacks_float64_roof(cached):
            cached = add_float64_roof(cached, dev, quick=quick, progress=progress)
            save_ceilings(cached, path)
        if cached is not None:
            return cached
    check_cache_writable(path)
    ceilings = measure_ceilings(dev, quick=quick, progress=progress)
    save_ceilings(ceilings, path)
    return ceilings


def ceilings_for_run(
    device: str | torch.device | None, ceilings_file: str | None = None, *, progress: Progress = _noop
) -> Ceilings:
    """What every run on this machine measures against: a --ceilings FILE when given, else the device's one set of
    cached ceilings (measured in full on first use, the same for analyze, profile, doctor and lab)."""
    if ceilings_file:
        return load_ceilings(ceilings_file)
    return get_ceilings(device, progress=progress)
