"""Datasheet entries for the workstation, data-center and older Tesla GPUs people bring traces from: each spelling
torch.cuda.get_device_name() or a trace gives resolves to its entry, the figures are the cited dense ones (never the
with-sparsity ones), laptop GPUs and Jetson modules get no entry (and the warning says why), and a trace from one of
these GPUs is judged against roofs end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.device.datasheet import DATASHEET, datasheet_key, datasheet_refusal, lookup_datasheet

DEVTRACES = Path(__file__).resolve().parents[1] / "data" / "devtraces"
T = 1e12
GB = 1e9


@pytest.mark.parametrize("name, memory, key", [
    ("NVIDIA A40", 47.7e9, "A40"),
    ("NVIDIA A16", 15.7e9, "A16"),
    ("NVIDIA RTX A6000", 51.0e9, "RTX A6000"),
    ("NVIDIA A2", 15.7e9, "A2"),
    ("NVIDIA L40", 47.8e9, "L40"),
    ("NVIDIA L40S", None, "L40S"),  # the L40 pattern must not take the L40S
    ("NVIDIA H800", 85.0e9, "H800 SXM"),
    ("NVIDIA H800 PCIe", None, "H800 PCIe"),
    ("NVIDIA H20", 102.0e9, "H20"),
    ("NVIDIA H200", None, "H200"),  # nor the H20 pattern the H200
    ("NVIDIA A800-SXM4-80GB", None, "A100 80GB"),  # the A800 is the A100 with NVLink cut
    ("NVIDIA A800 80GB PCIe", None, "A100 80GB PCIe"),
    ("NVIDIA A800 40GB Active", None, "A100 40GB PCIe"),
    ("Tesla P100-SXM2-16GB", None, "P100 SXM2"),
    ("Tesla P100-PCIE-16GB", None, "P100 PCIe 16GB"),
    ("Tesla P100-PCIE-12GB", None, "P100 PCIe 12GB"),
    ("Tesla P100-PCIE", 12.8e9, "P100 PCIe 12GB"),  # the memory picks the variant the name leaves open
    ("Tesla P100-PCIE", 17.1e9, "P100 PCIe 16GB"),
    ("Tesla P40", None, "P40"),
    ("Tesla P4", None, "P4"),
    ("Quadro P4000", None, None),  # \bP4\b: not a Tesla P4
    ("NVIDIA RTX A2000", None, None),  # \bA2\b: not an A2
    ("NVIDIA GeForce RTX 3090 Ti", None, "RTX 3090 Ti"),  # 40 TFLOP/s and 1008 GB/s: its own, not the 3090's
    ("NVIDIA GeForce RTX 4090 D", None, None),  # the China 4090 has 14592 cores, not 16384
])
def test_new_names_resolve_to_their_entries(name, memory, key):
    assert datasheet_key(name, memory) == key


@pytest.mark.parametrize("name", [
    "NVIDIA GeForce RTX 3080 Laptop GPU",
    "NVIDIA GeForce RTX 4090 Laptop GPU",  # would otherwise take the desktop RTX 4090's figures
    "NVIDIA GeForce RTX 3090 Laptop GPU",
    "NVIDIA RTX A5000 Laptop GPU",
    "NVIDIA GeForce RTX 2080 with Max-Q Design",
    "Quadro RTX 5000 with Max-Q Design",
    "NVIDIA GeForce RTX 3070 Ti Mobile",
    "Orin",  # torch's name for a Jetson AGX Orin's GPU
])
def test_laptop_gpus_and_jetson_modules_do_not_take_a_desktop_entry(name):
    assert datasheet_key(name, 16e9) is None and lookup_datasheet(name) is None
    assert datasheet_refusal(name)
    assert datasheet_refusal("NVIDIA GeForce RTX 4090") == "" and datasheet_key("NVIDIA GeForce RTX 4090") == "RTX 4090"


@pytest.mark.parametrize("key, dtype, dense, sparse", [
    ("A40", "float16", 149.7, 299.4),  # A40 datasheet: FP16 Tensor 149.7 | 299.4*
    ("A40", "tfloat32", 74.8, 149.6),
    ("A40", "int8", 299.3, 598.6),
    ("L40", "bfloat16", 181.05, 362.1),  # L40 datasheet: BF16 Tensor 181.05 | 362.1*
    ("L40", "tfloat32", 90.5, 181),
    ("L40", "float8_e4m3fn", 362, 724),
    ("A16", "float16", 17.9, 35.9),  # A16 datasheet, per GPU: FP16 4x 17.9 | 4x 35.9
    ("A16", "tfloat32", 9, 18),
    ("A2", "float16", 18.13, 36.25),
    ("H20", "bfloat16", 148, 296),
    ("RTX A6000", "float16", 154.8, 309.7),  # Microway: 154.8 dense; the datasheet's 309.7 is with sparsity
    ("RTX A6000", "int8", 309.7, 619.4),
    ("H800 SXM", "bfloat16", 989.4, 1978.9),
])
def test_tensor_figures_are_the_dense_ones(key, dtype, dense, sparse):
    peak = DATASHEET[key].peak_flops_per_s[dtype]
    assert peak == pytest.approx(dense * T) and peak < sparse * T


@pytest.mark.parametrize("key, bandwidth_gb, memory_gb, fp32", [
    ("A40", 696, 48, 37.4), ("A16", 200, 16, 4.5), ("L40", 864, 48, 90.5), ("H20", 4000, 96, 44), ("RTX A6000", 768, 48, 38.7),
    ("H800 PCIe", 2000, 80, 51), ("P100 SXM2", 732, 16, 10.6), ("P100 PCIe 12GB", 549, 12, 9.3),
    ("P40", 346, 24, 12), ("P4", 192, 8, 5.5),
])
def test_memory_and_fp32_figures(key, bandwidth_gb, memory_gb, fp32):
    entry = DATASHEET[key]
    assert entry.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth_gb * GB)
    assert entry.memory_bytes == pytest.approx(memory_gb * GB)
    assert entry.peak_flops_per_s["float32"] == pytest.approx(fp32 * T)


def test_pascal_entries_list_fp16_only_where_it_is_fast():
    assert DATASHEET["P100 PCIe 16GB"].peak_flops_per_s["float16"] == pytest.approx(18.7 * T)
    assert "tfloat32" not in DATASHEET["P100 SXM2"].peak_flops_per_s
    assert "bfloat16" not in DATASHEET["P100 SXM2"].peak_flops_per_s
    assert DATASHEET["P40"].peak_flops_per_s == {"float32": pytest.approx(12 * T), "int8": pytest.approx(47 * T)}


def _renamed(tmp_path: Path, name: str) -> Path:
    trace = json.loads((DEVTRACES / "device_rtx_a6000.json").read_text())
    trace["deviceProperties"][0]["name"] = name
    path = tmp_path / "renamed.json"
    path.write_text(json.dumps(trace))
    return path


def test_a_trace_from_a_newly_listed_gpu_is_judged_against_its_datasheet(tmp_path):
    report = analyze_trace_file(_renamed(tmp_path, "NVIDIA A40"))
    c = report.ceilings
    assert c.has_roofs() and c.source == "datasheet" and c.datasheet.name == "NVIDIA A40"
    assert c.memory_bandwidth_bytes_per_s == pytest.approx(696e9)
    assert c.peak_flops_per_s["float16"] == pytest.approx(149.7e12)
    assert all(op.bound in ("compute", "memory", "launch") for op in report.ops if op.time_s > 0)


def test_a_laptop_trace_gets_no_roofs_and_the_warning_says_why(tmp_path):
    report = analyze_trace_file(_renamed(tmp_path, "NVIDIA GeForce RTX 4090 Laptop GPU"))
    assert not report.ceilings.has_roofs() and report.ceilings.source == "none"
    assert "laptop GPU runs at the clocks its maker's power limit sets" in report.ceilings.method


def test_a_pascal_trace_names_its_architecture_and_takes_its_variant_from_the_memory():
    from roofline.device.identify import identify_device

    props = {"deviceProperties": [{"id": 0, "name": "Tesla P100-PCIE-12GB", "totalGlobalMem": 12.8e9,
                                   "computeMajor": 6, "computeMinor": 0}]}
    ident = identify_device(props, ["volta_sgemm_128x64_nn"])  # an older library kernel does not override the name
    assert (ident.vendor, ident.arch, ident.datasheet_key) == ("nvidia", "Pascal", "P100 PCIe 12GB")


def test_a_laptop_gpu_named_with_device_is_refused_with_the_reason():
    from roofline.analyze.onnx_session import analyze_onnx_profile
    from roofline.errors import RooflineError

    with pytest.raises(RooflineError, match="no datasheet on purpose: a laptop GPU"):
        analyze_onnx_profile("unused.json", "unused.onnx", device="NVIDIA GeForce RTX 4090 Laptop GPU")


@pytest.mark.parametrize("name", ["Quadro RTX 6000", "NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX A6000 Laptop GPU"])
def test_other_6000s_do_not_take_the_rtx_a6000(name):
    assert lookup_datasheet(name) is None or lookup_datasheet(name).name != "NVIDIA RTX A6000"


def test_h20_has_no_unsourced_fp8_roof():
    assert "float8_e4m3fn" not in DATASHEET["H20"].peak_flops_per_s
