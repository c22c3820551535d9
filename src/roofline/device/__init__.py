"""The device's ceilings: measured (bandwidth, FLOP/s per dtype, launch overhead), cached, and the datasheet.

Names are imported lazily: the cache and the datasheet need no torch, and `roofline trace` must not pay for it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DATASHEET": "roofline.device.datasheet",
    "lookup_datasheet": "roofline.device.datasheet",
    "cache_dir": "roofline.device.cache",
    "cache_path": "roofline.device.cache",
    "ceilings_for_device_name": "roofline.device.cache",
    "load_ceilings": "roofline.device.cache",
    "save_ceilings": "roofline.device.cache",
    "ceilings_for_run": "roofline.device.ceilings",
    "get_ceilings": "roofline.device.ceilings",
    "measure_ceilings": "roofline.device.ceilings",
    "measure_launch_overhead": "roofline.device.measure",
    "measure_peak_bandwidth": "roofline.device.measure",
    "measure_peak_flops": "roofline.device.measure",
    "supported_dtypes": "roofline.device.measure",
    "device_name": "roofline.device.resolve",
    "resolve_device": "roofline.device.resolve",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'roofline.device' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
