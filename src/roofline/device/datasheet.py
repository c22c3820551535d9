"""Vendor datasheet peaks for the GPUs people bring traces from: dense figures only, never the with-sparsity ones.

Each entry names its source. These are leads, shown beside measured ceilings ("measured vs spec") and used for
traces from a device that was never measured here. Tensor-core figures are for dense matrices (the sparsity
figures that vendors print beside them are halved); fp16/bf16 are with fp32 accumulate where the vendor lists
both. For AMD CDNA parts, ``float32`` is the matrix-core (MFMA) fp32 figure, which fp32 GEMMs use; MI250/MI250X
figures are per GCD (one graphics compute die: what the trace, torch and ROCm call one device).

``lookup_datasheet`` tolerates the spellings traces use ("Tesla V100-SXM2-16GB", "NVIDIA A100-SXM4-80GB",
"NVIDIA A100-PG509-200", "AMD Instinct MI250X", "NVIDIA GH200 480GB") and takes the device memory, when
known, to pick between variants the name leaves open (A100 40 vs 80 GB, Tesla P100 12 vs 16 GB).

Laptop GPUs ("NVIDIA GeForce RTX 3080 Laptop GPU", "... with Max-Q Design", "... Mobile") and Jetson modules ("Orin")
get no entry: their clocks are set by the laptop maker's power limit or the module's power mode, so no one datasheet
figure fits them, and the desktop card of the same number is faster. ``datasheet_refusal`` says so for the warning.
The "RTX PRO 6000 Blackwell Max-Q Workstation Edition" is a desktop card (300 W), not a laptop part: it is not refused
as one, but gets no entry either (no figures for its clocks were found).

Pascal parts without fast fp16 (Tesla P40/P4: FP16 at 1/64 of the FP32 rate) list no float16 roof: fp16 work falls
back to the float32 one, the rate PyTorch's fp16 GEMMs reach there (they compute in FP32).
"""

from __future__ import annotations

import re

from roofline.report import Ceilings, DatasheetEntry

GB = 1e9
TB = 1e12
TF = 1e12


def _nv(fp32: float, tf32: float | None, half: float, bf16: bool = True, fp8: float | None = None,
        int8: float | None = None) -> dict[str, float]:
    peaks = {"float32": fp32 * TF, "float16": half * TF}
    if tf32:
        peaks["tfloat32"] = tf32 * TF
    if bf16:
        peaks["bfloat16"] = half * TF
    if fp8:
        peaks["float8_e4m3fn"] = fp8 * TF
        peaks["float8_e5m2"] = fp8 * TF
    if int8:
        peaks["int8"] = int8 * TF  # the INT8 Tensor Core row, in TOPS: multiply-accumulates counted as 2, as FLOPs
    return peaks


_V100_SHEET = "NVIDIA Tesla V100 GPU datasheet (2020), {col} column; fp16 is the Tensor Core figure"
_A100_SHEET = "NVIDIA A100 Tensor Core GPU datasheet (2021), {col} column, dense (the '*' sparsity figures are 2x)"
_H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet (2023), {col} column, dense (sparsity figures halved)"
_H200_SHEET = "NVIDIA H200 Tensor Core GPU datasheet (2024), {col} column, dense (sparsity figures halved)"
_H800_NOTE = ("NVIDIA H100 datasheet (2023), {col} column, dense: the H800 is the H100's GH100 with NVLink cut to 400 "
              "GB/s and FP64 to 1 TFLOPS, its tensor-core and memory figures unchanged (philisun.com 'NVIDIA H800 vs "
              "H100'; aiwiki.ai/wiki/nvidia_h800)")
_P100_SHEET = ("NVIDIA Tesla P100 datasheet (2016), {col} (bandwidths as NVIDIA gave them for the 16 and 12 GB PCIe "
               "cards, techworm.net; TechPowerUp: 732.2 GB/s); FP16 is GP100's double-rate half precision, no Tensor "
               "Cores")
_P4_SHEET = ("NVIDIA Tesla P4/P40 launch specifications (2016, servethehome.com's copy of NVIDIA's table), {col}; INT8 "
             "is the DP4A rate (multiply-accumulates counted as 2); no float16 roof: FP16 runs at 1/64 of FP32 on "
             "GP102/GP104 (TechPowerUp)")
# GeForce Ampere and Ada run FP16/BF16 tensor math with FP32 accumulate (what PyTorch's GEMMs use) at half the
# FP16-accumulate rate that headline figures give: the GA102 whitepaper's RTX 3090 column (71 against 142 TFLOPS) and
# the Ada whitepaper's RTX 4090 column (165.2 against 330.3), the entries above. The new GeForce entries come from Tom's
# Hardware's RTX 4080 review spec table (tomshardware.com/reviews/nvidia-geforce-rtx-4080-review), which prints NVIDIA's
# figures; its 'TFLOPS FP16' row is the FP16-accumulate figure, dense for Ampere and with sparsity for Ada: its RTX 4090
# reads 661 (the whitepaper's 660.6 with sparsity), its RTX 3090 Ti 160 (hmc-tech.com's 159.99 dense). Bandwidth is its
# bus width x VRAM speed rows.
_TOMS_4080 = ("Tom's Hardware RTX 4080 review spec table (NVIDIA's figures): {fp32} TFLOPS FP32, 'TFLOPS FP16' {fp16} "
              "({fp16_kind}), {bus}-bit at {gbps} Gbps = {bw:g} GB/s; dense FP16/BF16 with FP32 accumulate = {half:g} "
              "({derivation}, the GeForce rate the whitepaper columns of the RTX 3090/4090 entries give)")
# INT8 Tensor Core: 3,958 TOPS with sparsity on the H100 SXM and H200 SXM datasheets, 1,979 dense.
_HOPPER_SXM = _nv(67, 494.7, 989.4, fp8=1978.9, int8=1978.9)
_HOPPER_NVL = _nv(60, 417.5, 835.5, fp8=1670.5)
_A100 = _nv(19.5, 156, 312)
_MI300 = {"float32": 163.4 * TF, "tfloat32": 653.7 * TF, "float16": 1307.4 * TF, "bfloat16": 1307.4 * TF,
          "float8_e4m3fnuz": 2614.9 * TF, "float8_e4m3fn": 2614.9 * TF}


def _entry(name: str, bandwidth: float, peaks: dict[str, float], source: str, memory_gb: float) -> DatasheetEntry:
    return DatasheetEntry(name, bandwidth, peaks, source, memory_gb * GB)


DATASHEET: dict[str, DatasheetEntry] = {
    "V100 SXM2 16GB": _entry("NVIDIA Tesla V100 SXM2 16GB", 900 * GB, _nv(15.7, None, 125, bf16=False),
                             _V100_SHEET.format(col="SXM2"), 16),
    "V100 SXM2 32GB": _entry("NVIDIA Tesla V100 SXM2 32GB", 900 * GB, _nv(15.7, None, 125, bf16=False),
                             _V100_SHEET.format(col="SXM2"), 32),
    "V100 PCIe 16GB": _entry("NVIDIA Tesla V100 PCIe 16GB", 900 * GB, _nv(14, None, 112, bf16=False),
                             _V100_SHEET.format(col="PCIe"), 16),
    "V100 PCIe 32GB": _entry("NVIDIA Tesla V100 PCIe 32GB", 900 * GB, _nv(14, None, 112, bf16=False),
                             _V100_SHEET.format(col="PCIe"), 32),
    "V100S PCIe": _entry("NVIDIA Tesla V100S PCIe 32GB", 1134 * GB, _nv(16.4, None, 130, bf16=False),
                         _V100_SHEET.format(col="V100S PCIe"), 32),
    "P100 SXM2": _entry("NVIDIA Tesla P100 SXM2 16GB", 732 * GB, _nv(10.6, None, 21.2, bf16=False),
                        _P100_SHEET.format(col="SXM2 (NVLink): 10.6 FP32, 21.2 FP16 TFLOPS, 732 GB/s"), 16),
    "P100 PCIe 16GB": _entry("NVIDIA Tesla P100 PCIe 16GB", 732 * GB, _nv(9.3, None, 18.7, bf16=False),
                             _P100_SHEET.format(col="PCIe 16 GB: 9.3 FP32, 18.7 FP16 TFLOPS, 732 GB/s"), 16),
    "P100 PCIe 12GB": _entry("NVIDIA Tesla P100 PCIe 12GB", 549 * GB, _nv(9.3, None, 18.7, bf16=False),
                             _P100_SHEET.format(col="PCIe 12 GB: 9.3 FP32, 18.7 FP16 TFLOPS, 549 GB/s"), 12),
    "P40": _entry("NVIDIA Tesla P40", 346 * GB, {"float32": 12 * TF, "int8": 47 * TF},
                  _P4_SHEET.format(col="P40: 12 TFLOPS FP32, 47 INT8 TOPS, 346 GB/s"), 24),
    "P4": _entry("NVIDIA Tesla P4", 192 * GB, {"float32": 5.5 * TF, "int8": 22 * TF},
                 _P4_SHEET.format(col="P4: 5.5 TFLOPS FP32, 22 INT8 TOPS, 192 GB/s"), 8),
    "T4": _entry("NVIDIA T4", 320 * GB, _nv(8.1, None, 65, bf16=False),
                 "NVIDIA T4 Tensor Core GPU datasheet (2019); fp16 is the mixed-precision Tensor Core figure", 16),
    "A100 40GB": _entry("NVIDIA A100 40GB (SXM4)", 1555 * GB, dict(_A100), _A100_SHEET.format(col="40GB SXM"), 40),
    "A100 40GB PCIe": _entry("NVIDIA A100 40GB PCIe", 1555 * GB, dict(_A100), _A100_SHEET.format(col="40GB PCIe"), 40),
    "A100 80GB": _entry("NVIDIA A100 80GB (SXM4)", 2039 * GB, dict(_A100), _A100_SHEET.format(col="80GB SXM"), 80),
    "A100 80GB PCIe": _entry("NVIDIA A100 80GB PCIe", 1935 * GB, dict(_A100), _A100_SHEET.format(col="80GB PCIe"), 80),
    "A10": _entry("NVIDIA A10", 600 * GB, _nv(31.2, 62.5, 125),
                  "NVIDIA A10 Tensor Core GPU datasheet (2021), dense (sparsity figures halved)", 24),
    "A10G": _entry("NVIDIA A10G", 600 * GB, _nv(31.2, 62.5, 125),
                   "NVIDIA A10 Tensor Core GPU datasheet (2021), dense; A10G is AWS's A10 variant (600 GB/s GDDR6), "
                   "NVIDIA publishes no separate A10G sheet", 24),
    "L4": _entry("NVIDIA L4", 300 * GB, _nv(30.3, 60, 121, fp8=242.5),
                 "NVIDIA L4 Tensor Core GPU datasheet (2023), dense (sparsity figures halved)", 24),
    "L40S": _entry("NVIDIA L40S", 864 * GB, _nv(91.6, 183, 362.05, fp8=733),
                   "NVIDIA L40S GPU datasheet (2023), dense (the '*' sparsity figures halved)", 48),
    "A40": _entry("NVIDIA A40", 696 * GB, _nv(37.4, 74.8, 149.7, int8=299.3),
                  "NVIDIA A40 datasheet (2021), dense (the '*' sparsity figures halved); FP16 Tensor 149.7 and BF16 "
                  "with FP32 accumulate 149.7 TFLOPS, INT8 299.3 TOPS", 48),
    "A16": _entry("NVIDIA A16 (one of its 4 GPUs)", 200 * GB, _nv(4.5, 9, 17.9, int8=35.9),
                  "NVIDIA A16 datasheet (2021): the per-GPU figure of its '4x' rows (the board holds 4 GPUs, each a "
                  "device of its own: 4x 200 GB/s, 4x 4.5 FP32, 4x 9 TF32, 4x 17.9 FP16, 4x 35.9 INT8), dense; BF16 "
                  "is not listed there and is taken at the FP16 rate, as hmc-tech.com's A16 entry gives it", 16),
    "A2": _entry("NVIDIA A2", 200.1 * GB, _nv(4.53, 9.06, 18.13, int8=36.25),
                 "hmc-tech.com GPU database, NVIDIA A2: dense Tensor figures (FP16 and BF16 18.13 TFLOPS with FP32 "
                 "accumulate, TF32 9.06, INT8 36.25 TOPS), FP32 4.53; bandwidth 200.1 GB/s from TechPowerUp's GPU "
                 "database (128-bit GDDR6 at 12.5 Gbps)", 16),
    "RTX A6000": _entry("NVIDIA RTX A6000", 768 * GB, _nv(38.7, 77.4, 154.8, int8=309.7),
                        "NVIDIA RTX A6000 datasheet (pny.com): 768 GB/s, 38.7 TFLOPS FP32; dense Tensor figures from "
                        "Microway's 'In-Depth Comparison of NVIDIA Ampere GPU Accelerators' (FP16/BF16 154.8 TFLOPS, "
                        "INT8 309.7 TOPS; 309.7 TFLOPS with sparsity on the datasheet); TF32 154.8 / 2, the rate "
                        "GA102's professional cards run TF32 at (the A40 datasheet: 74.8 against 149.7)", 48),
    "L40": _entry("NVIDIA L40", 864 * GB, _nv(90.5, 90.5, 181.05, fp8=362, int8=362),
                  "NVIDIA L40 datasheet (2022), L40 column of the L40/L40S table, dense (the '*' sparsity figures "
                  "halved)", 48),
    "RTX 3090": _entry("NVIDIA GeForce RTX 3090", 936 * GB, _nv(35.6, 35.6, 71),
                       "NVIDIA Ampere GA102 GPU architecture whitepaper (2020), RTX 3090 column, dense Tensor figures "
                       "with FP32 accumulate", 24),
    "RTX 4090": _entry("NVIDIA GeForce RTX 4090", 1008 * GB, _nv(82.6, 82.6, 165.2, fp8=330.3),
                       "NVIDIA Ada Lovelace architecture whitepaper (2022), RTX 4090, dense Tensor figures with FP32 "
                       "accumulate", 24),
    "RTX 3090 Ti": _entry("NVIDIA GeForce RTX 3090 Ti", 1008 * GB, _nv(40, 40, 80),
                          "hmc-tech.com GPU database (page 'NVIDIA GeForce RTX 4090 D vs NVIDIA GeForce RTX 3090 Ti'): "
                          "40 TFLOPS FP32, dense Tensor FP16 and BF16 with FP32 accumulate 80 TFLOPS (159.99 with "
                          "FP16 accumulate), TF32 40; bandwidth from Tom's Hardware's RTX 4080 review spec table "
                          "(384-bit GDDR6X at 21 Gbps = 1008 GB/s)", 24),
    "RTX 3080 Ti": _entry("NVIDIA GeForce RTX 3080 Ti", 912 * GB, _nv(34.1, None, 68),
                          _TOMS_4080.format(fp32=34.1, fp16=136, fp16_kind="dense, FP16 accumulate", bus=384,
                                            gbps=19, bw=912, half=68, derivation="136 / 2"), 12),
    "RTX 3080": _entry("NVIDIA GeForce RTX 3080 (10 GB)", 760 * GB, _nv(29.8, None, 59.5),
                       _TOMS_4080.format(fp32=29.8, fp16=119, fp16_kind="dense, FP16 accumulate", bus=320, gbps=19,
                                         bw=760, half=59.5, derivation="119 / 2"), 10),
    "RTX 4080": _entry("NVIDIA GeForce RTX 4080", 716.8 * GB, _nv(48.7, None, 97.5),
                       _TOMS_4080.format(fp32=48.7, fp16=390, fp16_kind="with sparsity, FP16 accumulate", bus=256,
                                         gbps=22.4, bw=716.8, half=97.5, derivation="390 / 2 for sparsity / 2"), 16),
    "RTX A4000": _entry("NVIDIA RTX A4000", 448 * GB, _nv(19.2, None, 76.7),
                        "NVIDIA RTX A4000 datasheet (as reproduced on ecer.com): 448 GB/s, 19.2 TFLOPS FP32, 'Tensor "
                        "performance 153.4 TFLOPS', the row whose RTX A6000 value (309.7) is the with-sparsity figure "
                        "(see the RTX A6000 entry): dense FP16/BF16 153.4 / 2 = 76.7, at the FP32-accumulate rate as "
                        "on the A40 datasheet (BF16 with FP32 accumulate = FP16); no TF32 roof: no figure found", 16),
    "RTX PRO 6000 Blackwell": _entry(
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1792 * GB,
        _nv(125.95, 251.9, 503.8, fp8=1010, int8=1010),
        "hmc-tech.com GPU database (page 'NVIDIA RTX PRO 6000 Blackwell vs AMD Radeon Pro Duo Polaris', the 600 W "
        "card at 2617 MHz): FP32 125.95 TFLOPS, dense Tensor FP16 and BF16 503.8 TFLOPS with FP32 accumulate (the same "
        "as with FP16 accumulate on this professional card), TF32 251.9, FP8 with FP32 accumulate 1.01 PFLOPS, INT8 "
        "1.01 POPS (sparse figures halved there); bandwidth 1792 GB/s (28 Gbps GDDR7 on 512 bits, as NVIDIA's "
        "announcement gave it, gpu.name after VideoCardz); NVIDIA itself lists 'up to 125 TFLOPS' FP32", 96),
    "H100 SXM": _entry("NVIDIA H100 SXM5 80GB", 3.35 * TB, dict(_HOPPER_SXM), _H100_SHEET.format(col="SXM"), 80),
    "H100 PCIe": _entry("NVIDIA H100 PCIe 80GB", 2.0 * TB, _nv(51, 378, 756, fp8=1513),
                        _H100_SHEET.format(col="PCIe"), 80),
    "H100 NVL": _entry("NVIDIA H100 NVL 94GB", 3.9 * TB, dict(_HOPPER_NVL), _H100_SHEET.format(col="H100 NVL"), 94),
    "H800 SXM": _entry("NVIDIA H800 SXM5 80GB", 3.35 * TB, dict(_HOPPER_SXM), _H800_NOTE.format(col="SXM"), 80),
    "H800 PCIe": _entry("NVIDIA H800 PCIe 80GB", 2.0 * TB, _nv(51, 378, 756, fp8=1513), _H800_NOTE.format(col="PCIe"),
                        80),
    "H20": _entry("NVIDIA H20 96GB", 4.0 * TB, _nv(44, 74, 148, int8=296),
                  "NVIDIA H20 figures as published for the China market (NVIDIA posts no public datasheet): 44 TFLOPS "
                  "FP32, 74 TF32, 148 FP16/BF16, 296 INT8 TOPS dense, 96 GB HBM3 at 4.0 TB/s (zangshuxian.com, "
                  "willitrunai.com/gpus/h20-96gb); no FP8 roof: no source found gives its dense FP8 figure", 96),
    "H200": _entry("NVIDIA H200 SXM 141GB", 4.8 * TB, dict(_HOPPER_SXM), _H200_SHEET.format(col="SXM"), 141),
    "H200 NVL": _entry("NVIDIA H200 NVL 141GB", 4.8 * TB, dict(_HOPPER_NVL), _H200_SHEET.format(col="NVL"), 141),
    "GH200 96GB": _entry("NVIDIA GH200 Grace Hopper (H100 96GB HBM3)", 4.0 * TB, dict(_HOPPER_SXM),
                         "NVIDIA GH200 Grace Hopper Superchip datasheet (2023), HBM3 96GB variant, GPU figures dense",
                         96),
    "GH200 144GB": _entry("NVIDIA GH200 Grace Hopper (H200 144GB HBM3e)", 4.9 * TB, dict(_HOPPER_SXM),
                          "NVIDIA GH200 Grace Hopper Superchip datasheet (2024), HBM3e 144GB variant, GPU figures "
                          "dense", 144),
    "B200": _entry("NVIDIA B200 (HGX B200)", 8.0 * TB, _nv(75, 1125, 2250, fp8=4500),
                   "NVIDIA HGX B200 datasheet (2024), 8-GPU figures divided by 8, dense (sparsity figures halved)",
                   180),
    "GB200": _entry("NVIDIA B200 in GB200 (per GPU)", 8.0 * TB, _nv(90, 1250, 2500, fp8=5000),
                    "NVIDIA GB200 NVL72 datasheet (2024), per-superchip figures divided by its 2 GPUs, dense "
                    "(sparsity figures halved)", 186),
    "MI210": _entry("AMD Instinct MI210", 1.6 * TB,
                    {"float32": 45.3 * TF, "float16": 181.0 * TF, "bfloat16": 181.0 * TF},
                    "AMD Instinct MI210 accelerator datasheet (2022); float32 is the FP32 matrix figure", 64),
    "MI250 GCD": _entry("AMD Instinct MI250 (one GCD)", 1.6 * TB,
                        {"float32": 45.25 * TF, "float16": 181.05 * TF, "bfloat16": 181.05 * TF},
                        "AMD Instinct MI250 accelerator datasheet (2021), OAM figures halved per GCD (3.2 TB/s, 90.5 "
                        "FP32-matrix and 362.1 FP16 TFLOPS per OAM)", 64),
    "MI250X GCD": _entry("AMD Instinct MI250X (one GCD)", 1.6 * TB,
                         {"float32": 47.85 * TF, "float16": 191.5 * TF, "bfloat16": 191.5 * TF},
                         "AMD Instinct MI250X accelerator datasheet (2021), OAM figures halved per GCD (3.2 TB/s, "
                         "95.7 FP32-matrix and 383 FP16 TFLOPS per OAM)", 64),
    "MI300X": _entry("AMD Instinct MI300X", 5.3 * TB, dict(_MI300),
                     "AMD Instinct MI300X accelerator datasheet (2023), dense (sparsity figures halved)", 192),
    "MI325X": _entry("AMD Instinct MI325X", 6.0 * TB, dict(_MI300),
                     "AMD Instinct MI325X accelerator datasheet (2024), dense (sparsity figures halved)", 256),
    "MI355X": _entry("AMD Instinct MI355X", 8.0 * TB,
                     {"float32": 157.3 * TF, "float16": 2516.6 * TF, "bfloat16": 2516.6 * TF,
                      "float8_e4m3fn": 5033.2 * TF},
                     "AMD Instinct MI355X accelerator datasheet (2025), dense (sparsity figures halved); CDNA 4 lists "
                     "no TF32", 288),
}

_GB_IN_NAME = re.compile(r"(\d+)\s*G(?:B|iB)?\b", re.I)


def _size_gb(name: str, memory_bytes: float | None) -> float | None:
    """Device memory in GB: from the trace's totalGlobalMem when known, else a '80GB' in the name."""
    if memory_bytes:
        return memory_bytes / GB
    match = _GB_IN_NAME.search(name)
    return float(match.group(1)) if match else None


def _v100(name: str, gb: float | None) -> str:
    if re.search(r"V100S", name, re.I):
        return "V100S PCIe"
    size = "32GB" if gb and gb > 20 else "16GB"
    return f"V100 {'PCIe' if re.search('PCI', name, re.I) else 'SXM2'} {size}"


def _a100(name: str, gb: float | None) -> str:
    big = bool(gb and gb > 48)
    pcie = bool(re.search(r"PCI|Active", name, re.I))  # the A800 40GB Active is a PCIe workstation card
    return ("A100 80GB" if big else "A100 40GB") + (" PCIe" if pcie else "")


def _gh200(name: str, gb: float | None) -> str:
    return "GH200 144GB" if gb and gb > 110 and not re.search(r"\b96\s*GB", name, re.I) else "GH200 96GB"


def _p100(name: str, gb: float | None) -> str:
    if not re.search("PCI", name, re.I):
        return "P100 SXM2"
    return "P100 PCIe 12GB" if gb and gb < 14 else "P100 PCIe 16GB"


def _rtx3080(name: str, gb: float | None) -> str | None:
    """torch names the 10 and 12 GB RTX 3080 alike; the 12 GB card (8960 cores, 912 GB/s) has no entry, so a device
    with more than 11 GB gets none rather than the 10 GB card's figures."""
    return None if gb and gb > 11 else "RTX 3080"


_MATCHERS: list[tuple[re.Pattern[str], object]] = [
    (re.compile(r"GH200", re.I), _gh200),
    (re.compile(r"GB200|GB300", re.I), "GB200"),
    (re.compile(r"\bB200|\bB100", re.I), "B200"),
    (re.compile(r"H200.*NVL", re.I), "H200 NVL"),
    (re.compile(r"H200", re.I), "H200"),
    (re.compile(r"H100.*NVL", re.I), "H100 NVL"),
    (re.compile(r"H100.*PCI", re.I), "H100 PCIe"),
    (re.compile(r"H100", re.I), "H100 SXM"),
    (re.compile(r"H800.*PCI", re.I), "H800 PCIe"),
    (re.compile(r"H800", re.I), "H800 SXM"),
    (re.compile(r"\bH20\b", re.I), "H20"),
    # the A800 is the A100 with NVLink cut to 400 GB/s: same tensor, memory and bandwidth figures (hmc-tech.com)
    (re.compile(r"A100|A800", re.I), _a100),
    (re.compile(r"A10G", re.I), "A10G"),
    (re.compile(r"\bA10\b", re.I), "A10"),
    (re.compile(r"\bA40\b", re.I), "A40"),
    (re.compile(r"\bA6000\b", re.I), "RTX A6000"),  # not the Quadro RTX 6000 (Turing), nor the RTX 6000 Ada
    (re.compile(r"\bA16\b", re.I), "A16"),
    (re.compile(r"\bA2\b", re.I), "A2"),
    (re.compile(r"L40S", re.I), "L40S"),
    (re.compile(r"\bL40\b", re.I), "L40"),
    (re.compile(r"\bL4\b", re.I), "L4"),
    (re.compile(r"\bT4\b", re.I), "T4"),
    (re.compile(r"\b3090\b(?!\s*Ti)", re.I), "RTX 3090"),
    (re.compile(r"\b3090\s*Ti\b", re.I), "RTX 3090 Ti"),
    (re.compile(r"\b4090\b(?!\s*D\b)", re.I), "RTX 4090"),
    (re.compile(r"\b3080\s*Ti\b", re.I), "RTX 3080 Ti"),
    (re.compile(r"\b3080\b(?!\s*Ti)", re.I), _rtx3080),
    (re.compile(r"\b4080\b(?!\s*(?:SUPER|Ti)\b)", re.I), "RTX 4080"),  # the 4080 SUPER has 10240 cores, not 9728
    (re.compile(r"\bRTX\s*A4000\b", re.I), "RTX A4000"),  # not the Quadro RTX 4000 (Turing), nor the RTX 4000 Ada
    # only the 600 W Workstation Edition: the Max-Q Workstation (300 W) and Server Editions run other clocks
    (re.compile(r"RTX\s*PRO\s*6000\s*Blackwell(?!.*(?:Max-?Q|Server))", re.I), "RTX PRO 6000 Blackwell"),
    (re.compile(r"V100", re.I), _v100),
    (re.compile(r"P100", re.I), _p100),
    (re.compile(r"\bP40\b", re.I), "P40"),
    (re.compile(r"\bP4\b", re.I), "P4"),
    (re.compile(r"MI355", re.I), "MI355X"),
    (re.compile(r"MI325", re.I), "MI325X"),
    (re.compile(r"MI300X", re.I), "MI300X"),
    (re.compile(r"MI250X", re.I), "MI250X GCD"),
    (re.compile(r"MI250", re.I), "MI250 GCD"),
    (re.compile(r"MI210", re.I), "MI210"),
]

# Parts whose clocks, and so peaks, no datasheet fixes: a laptop GPU runs at what its maker's power limit allows (one
# laptop GPU name covers parts of several power limits, all below the desktop card's), a Jetson module at its power
# mode.
_NO_SHEET = [
    (re.compile(r"Laptop|Max-?Q(?!\s*Workstation)|Mobile|Notebook", re.I),
     "a laptop GPU runs at the clocks its maker's power limit sets: they differ from one laptop to the next and are "
     "below the desktop card's, whose datasheet figures would overstate its roofs"),
    (re.compile(r"\bOrin\b|Xavier|Jetson|Tegra", re.I),
     "a Jetson module's GPU and memory clocks are set by its power mode (nvpmodel): no one datasheet figure fits "
     "it"),
]


def datasheet_refusal(device_name: str | None) -> str:
    """Why a device gets no datasheet entry on purpose (a laptop GPU, a Jetson module), or "" when it is not one."""
    for pattern, why in _NO_SHEET:
        if device_name and pattern.search(device_name):
            return why
    return ""


def datasheet_key(device_name: str | None, memory_bytes: float | None = None) -> str | None:
    """The DATASHEET key for a device name as torch or a trace spells it, or None (laptop GPUs and Jetson modules
    always: ``datasheet_refusal`` says why)."""
    if not device_name or datasheet_refusal(device_name):
        return None
    gb = _size_gb(device_name, memory_bytes)
    for pattern, key in _MATCHERS:
        if pattern.search(device_name):
            return key(device_name, gb) if callable(key) else key
    return None


def lookup_datasheet(device_name: str | None, memory_bytes: float | None = None) -> DatasheetEntry | None:
    """The datasheet entry for a device name ('NVIDIA H200', 'Tesla V100-SXM2-16GB'), or None."""
    key = datasheet_key(device_name, memory_bytes)
    return DATASHEET[key] if key else None


_V100_L2 = "NVIDIA Tesla V100 GPU Architecture whitepaper (2017): 6144 KB L2"
_A100_L2 = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 40 MB L2"
_H100_L2 = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 50 MB L2 on H100 SXM5 and PCIe"
_H200_L2 = ("L2_cache_size that torch.cuda.get_device_properties reported on an H200 SXM "
            "(benchmarks/results/h200/issue15/issue15_roofs.json): 60 MiB")

# Last-level (L2) cache sizes, by DATASHEET key, where a source gives them: the cache roof's rule (analyze/roofline.py)
# needs the size to tell an op served from cache from a counting error in a trace judged by datasheet figures.
L2_CACHE_BYTES: dict[str, tuple[int, str]] = {
    **{k: (6 * 2**20, _V100_L2) for k in ("V100 SXM2 16GB", "V100 SXM2 32GB", "V100 PCIe 16GB", "V100 PCIe 32GB")},
    **{k: (40 * 2**20, _A100_L2) for k in ("A100 40GB", "A100 40GB PCIe", "A100 80GB", "A100 80GB PCIe")},
    **{k: (50 * 2**20, _H100_L2) for k in ("H100 SXM", "H100 PCIe")},
    "H200": (60 * 2**20, _H200_L2),
}


def datasheet_cache_bytes(entry: DatasheetEntry | None) -> tuple[int, str]:
    """(L2 bytes, source) for a datasheet entry, (0, "") when no source gives its size."""
    if entry is None:
        return 0, ""
    for key, sheet in DATASHEET.items():
        if sheet is entry or sheet.name == entry.name:
            return L2_CACHE_BYTES.get(key, (0, ""))
    return 0, ""


def with_datasheet_cache(ceilings: Ceilings) -> Ceilings:
    """Datasheet ceilings given the L2 size where a source gives it (no cache bandwidth: datasheets give none), the
    method saying so; ops served from that cache are then marked as such, not as above the roof."""
    size, source = datasheet_cache_bytes(ceilings.datasheet)
    if size and not ceilings.cache_bytes:
        ceilings.cache_bytes = size
        ceilings.method += (f"; cache: L2 size {size / 2**20:g} MiB ({source}); no cache bandwidth known (datasheets "
                            "give none): ops that fit in it and beat the DRAM roof are marked as served from cache")
    return ceilings


# Snapdragon SoCs (the phones Qualcomm AI Hub profiles on): one DRAM shared by the CPU, the Adreno GPU and the
# Hexagon NPU (HTP), so each unit's memory roof is the SoC's LPDDR5X bandwidth: the memory clock Qualcomm gives
# x 2 transfers per clock x 8 bytes (the 64-bit, 4 x 16-bit channel interface). Qualcomm publishes no TOPS or
# FLOP/s figure for these HTPs (nor for their CPU and GPU in a form a roof can use), so no compute roof is listed:
# layers get bound "unknown" until a ceilings file with peak_flops_per_s is passed (--ceilings FILE).
_LPDDR5X = "{mhz} MHz LPDDR5X x 2 transfers/clock x 8 bytes (64-bit interface) = {gbs:g} GB/s; clock: {src}"
_NO_PEAK = "; no compute peak published for the HTP (pass --ceilings FILE with peak_flops_per_s to add one)"


def _soc(name: str, mhz: int, clock_source: str, extra: str = "") -> DatasheetEntry:
    bandwidth = mhz * 1e6 * 2 * 8
    return DatasheetEntry(name, bandwidth, {}, _LPDDR5X.format(mhz=mhz, gbs=bandwidth / GB, src=clock_source)
                          + extra + _NO_PEAK)


SOC_DATASHEET: dict[str, DatasheetEntry] = {
    "Snapdragon 8 Gen 2": _soc("Qualcomm Snapdragon 8 Gen 2 (SM8550)", 4200,
                               "Qualcomm's Snapdragon 8 Gen 3 launch (Oct 2023) compared 'up to 4800MHz, compared to "
                               "4200MHz for the Snapdragon 8 Gen 2' (droidholic.com/snapdragon-8-gen-3-launched)"),
    "Snapdragon 8 Gen 3": _soc("Qualcomm Snapdragon 8 Gen 3 (SM8650)", 4800,
                               "Qualcomm Snapdragon 8 Gen 3 specification sheet: LPDDR5X up to 4800 MHz (as reported "
                               "at launch, droidholic.com/snapdragon-8-gen-3-launched)",
                               "; the course quotes about 77 GB/s"),
    "Snapdragon 8 Elite": _soc("Qualcomm Snapdragon 8 Elite (SM8750)", 5300,
                               "Qualcomm Snapdragon 8 Elite announcement (Oct 2024): LPDDR5X at 5300 MHz (10,600 MT/s, "
                               "84.8 GB/s: geektopia.es 2024-10-22; 'dual-channel LPDDR5X-5300': hi-tech.ua)"),
}

_SOC_MATCHERS = [
    (re.compile(r"8\s*Gen\s*2|SM8550|QCS8550|Galaxy S23", re.I), "Snapdragon 8 Gen 2"),
    (re.compile(r"8\s*Gen\s*3|SM8650|Galaxy S24", re.I), "Snapdragon 8 Gen 3"),
    (re.compile(r"8\s*Elite|SM8750|Galaxy S25", re.I), "Snapdragon 8 Elite"),
]


def lookup_soc(device_name: str | None) -> DatasheetEntry | None:
    """The Snapdragon SoC entry for a chip or AI Hub device name ('Snapdragon 8 Gen 3', 'Samsung Galaxy S24
    (Family)': AI Hub's Galaxy S23/S24/S25 are the Snapdragon variants), or None."""
    for pattern, key in _SOC_MATCHERS:
        if device_name and pattern.search(device_name):
            return SOC_DATASHEET[key]
    return None
