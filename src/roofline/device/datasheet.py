"""Vendor datasheet peaks for common GPUs: dense figures only, never the with-sparsity ones.

Each entry names its source. These are leads, shown beside measured ceilings ("measured vs spec") and used
for traces from a GPU that was never measured here. Tensor-core figures are for dense matrices; fp16/bf16 are
with fp32 accumulate where the vendor lists both.
"""

from __future__ import annotations

import re

from roofline.report import DatasheetEntry

TB = 1e12
TF = 1e12

_HOPPER_SXM = {"float32": 67 * TF, "tfloat32": 494.7 * TF, "float16": 989.4 * TF, "bfloat16": 989.4 * TF,
               "float8_e4m3fn": 1978.9 * TF}
_A100 = {"float32": 19.5 * TF, "tfloat32": 156 * TF, "float16": 312 * TF, "bfloat16": 312 * TF}

DATASHEET: dict[str, DatasheetEntry] = {
    "A100 40GB": DatasheetEntry(
        "NVIDIA A100 40GB (SXM4)", 1555e9, dict(_A100),
        "NVIDIA A100 Tensor Core GPU datasheet (2021), dense figures (the '*' sparsity figures are 2x)", 40e9),
    "A100 80GB": DatasheetEntry(
        "NVIDIA A100 80GB (SXM4)", 2039e9, dict(_A100),
        "NVIDIA A100 Tensor Core GPU datasheet (2021), dense figures; PCIe 80GB lists 1935 GB/s", 80e9),
    "H100 SXM": DatasheetEntry(
        "NVIDIA H100 SXM5 80GB", 3.35 * TB, dict(_HOPPER_SXM),
        "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM column, dense (sparsity figures halved)", 80e9),
    "H100 PCIe": DatasheetEntry(
        "NVIDIA H100 PCIe 80GB", 2.0 * TB,
        {"float32": 51 * TF, "tfloat32": 378 * TF, "float16": 756 * TF, "bfloat16": 756 * TF,
         "float8_e4m3fn": 1513 * TF},
        "NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe column, dense (sparsity figures halved)", 80e9),
    "H200": DatasheetEntry(
        "NVIDIA H200 SXM 141GB", 4.8 * TB, dict(_HOPPER_SXM),
        "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM column, dense (sparsity figures halved)", 141e9),
    "L4": DatasheetEntry(
        "NVIDIA L4", 300e9,
        {"float32": 30.3 * TF, "tfloat32": 60 * TF, "float16": 121 * TF, "bfloat16": 121 * TF,
         "float8_e4m3fn": 242.5 * TF},
        "NVIDIA L4 Tensor Core GPU datasheet (2023), dense (sparsity figures halved)", 24e9),
    "A10G": DatasheetEntry(
        "NVIDIA A10G", 600e9,
        {"float32": 31.2 * TF, "tfloat32": 62.5 * TF, "float16": 125 * TF, "bfloat16": 125 * TF},
        "NVIDIA A10 Tensor Core GPU datasheet (2021), dense; A10G is AWS's A10 variant (600 GB/s GDDR6), "
        "NVIDIA publishes no separate A10G sheet", 24e9),
    "RTX 4090": DatasheetEntry(
        "NVIDIA GeForce RTX 4090", 1008e9,
        {"float32": 82.6 * TF, "tfloat32": 82.6 * TF, "float16": 165.2 * TF, "bfloat16": 165.2 * TF},
        "NVIDIA Ada Lovelace architecture whitepaper (2022), RTX 4090, dense tensor figures with FP32 accumulate",
        24e9),
}

_MATCHERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"H200", re.I), "H200"),
    (re.compile(r"H100.*PCI", re.I), "H100 PCIe"),
    (re.compile(r"H100", re.I), "H100 SXM"),
    (re.compile(r"A100.*80\s*GB", re.I), "A100 80GB"),
    (re.compile(r"A100", re.I), "A100 40GB"),
    (re.compile(r"A10G", re.I), "A10G"),
    (re.compile(r"\bL4\b", re.I), "L4"),
    (re.compile(r"4090", re.I), "RTX 4090"),
]


def lookup_datasheet(device_name: str | None) -> DatasheetEntry | None:
    """The datasheet entry for a device name as torch or a trace spells it ('NVIDIA H200'), or None."""
    if not device_name:
        return None
    for pattern, key in _MATCHERS:
        if pattern.search(device_name):
            return DATASHEET[key]
    return None
