"""The device's ceilings: measured (bandwidth, FLOP/s per dtype, launch overhead), cached, and the datasheet."""

from roofline.device.ceilings import (
    cache_path,
    ceilings_for_device_name,
    get_ceilings,
    load_ceilings,
    measure_ceilings,
    save_ceilings,
)
from roofline.device.datasheet import DATASHEET, lookup_datasheet
from roofline.device.measure import (
    measure_launch_overhead,
    measure_peak_bandwidth,
    measure_peak_flops,
    supported_dtypes,
)
from roofline.device.resolve import device_name, resolve_device

__all__ = [
    "DATASHEET",
    "cache_path",
    "ceilings_for_device_name",
    "device_name",
    "get_ceilings",
    "load_ceilings",
    "lookup_datasheet",
    "measure_ceilings",
    "measure_launch_overhead",
    "measure_peak_bandwidth",
    "measure_peak_flops",
    "resolve_device",
    "save_ceilings",
    "supported_dtypes",
]
