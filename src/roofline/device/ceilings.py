"""Ceilings for a device: measured once, cached per device and torch version (device/cache.py), beside the
datasheet entry."""

from __future__ import annotations

import datetime as _dt
import os

import torch

from roofline.device.cache import (  # noqa: F401 - the cache half, re-exported for callers of this module
    _slug,
    cache_dir,
    cache_path,
    ceilings_for_device_name,
    load_ceilings,
    save_ceilings,
)
from roofline.device.datasheet import lookup_datasheet
from roofline.device.measure import (
    Progress,
    _noop,
    measure_launch_overhead,
    measure_peak_bandwidth,
    measure_peak_flops,
    supported_dtypes,
)
from roofline.device.resolve import device_name, resolve_device
from roofline.report import Ceilings


def measure_ceilings(
    device: str | torch.device | None = None, *, quick: bool = False, progress: Progress = _noop
) -> Ceilings:
    """Measure the device's roofs, recording when, with how many threads and under what load (the 1/5/15-minute
    load average before measuring: a loaded machine measures low roofs, which later runs see as ops above them)."""
    dev = resolve_device(device)
    name = device_name(dev)
    load = _load_average()
    bw = measure_peak_bandwidth(dev, quick=quick, progress=progress)
    flops = {d: measure_peak_flops(dev, d, quick=quick, progress=progress) for d in supported_dtypes(dev)}
    launch = measure_launch_overhead(dev, quick=quick, progress=progress)
    method = "; ".join(
        [f"bandwidth: {bw.method}"]
        + [f"{d}: {r.method}" for d, r in flops.items()]
        + [f"launch: {launch.method}"]
    )
    return Ceilings(
        device=str(dev),
        device_name=name,
        memory_bandwidth_bytes_per_s=bw.best_bytes_per_s,
        peak_flops_per_s={d: r.best_flops_per_s for d, r in flops.items()},
        launch_overhead_s=launch.eager_s,
        launch_overhead_graph_s=launch.graph_s,
        datasheet=lookup_datasheet(name) if dev.type == "cuda" else None,
        bandwidth_by_kernel_bytes_per_s=bw.by_kernel_bytes_per_s,
        source="measured" + (" (quick)" if quick else ""),
        method=method,
        torch_version=str(torch.__version__),
        measured_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        threads=torch.get_num_threads() if dev.type == "cpu" else None,
        load_average=load,
    )


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
        if cached is not None:
            return cached
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
