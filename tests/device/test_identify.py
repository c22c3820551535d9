"""Device identification from a trace's own evidence, and datasheet lookup by the names traces use."""

from __future__ import annotations

import pytest

from roofline.analyze.kernel_names import is_tf32_kernel
from roofline.device.datasheet import DATASHEET, datasheet_key, lookup_datasheet
from roofline.device.identify import identify_device


@pytest.mark.parametrize("name, memory, key", [
    ("Tesla V100-SXM2-16GB", None, "V100 SXM2 16GB"),
    ("Tesla V100-SXM2-32GB", 34e9, "V100 SXM2 32GB"),
    ("Tesla V100-PCIE-32GB", None, "V100 PCIe 32GB"),
    ("NVIDIA A100-SXM4-80GB", None, "A100 80GB"),
    ("NVIDIA A100-PG509-200", 42.3e9, "A100 40GB"),
    ("NVIDIA A100 80GB PCIe", None, "A100 80GB PCIe"),
    ("NVIDIA A10G", None, "A10G"),
    ("NVIDIA A10", None, "A10"),
    ("NVIDIA L4", None, "L4"),
    ("NVIDIA L40S", None, "L40S"),
    ("Tesla T4", None, "T4"),
    ("NVIDIA GeForce RTX 3090", None, "RTX 3090"),
    ("NVIDIA GeForce RTX 4090", None, "RTX 4090"),
    ("NVIDIA H100 80GB HBM3", None, "H100 SXM"),
    ("NVIDIA H100 PCIe", None, "H100 PCIe"),
    ("NVIDIA H100 NVL", None, "H100 NVL"),
    ("NVIDIA H200", None, "H200"),
    ("NVIDIA GH200 480GB", 102e9, "GH200 96GB"),
    ("NVIDIA GH200 144G HBM3e", None, "GH200 144GB"),
    ("NVIDIA B200", None, "B200"),
    ("NVIDIA GB200", None, "GB200"),
    ("AMD Instinct MI210", None, "MI210"),
    ("AMD Instinct MI250X", None, "MI250X GCD"),
    ("AMD Instinct MI250", None, "MI250 GCD"),
    ("AMD Instinct MI300X", None, "MI300X"),
    ("AMD Instinct MI325X", None, "MI325X"),
    ("AMD Instinct MI355X", None, "MI355X"),
    ("AMD Radeon Graphics", None, None),
    ("ARTEMIS", None, None),
])
def test_datasheet_matches_trace_spellings(name, memory, key):
    assert datasheet_key(name, memory) == key


def test_every_datasheet_figure_is_dense_and_sourced():
    for key, entry in DATASHEET.items():
        assert entry.source and entry.memory_bandwidth_bytes_per_s > 1e11, key
        peaks = entry.peak_flops_per_s
        if key in ("P40", "P4"):  # GP102/GP104: FP16 at 1/64 rate, no float16 roof (falls back to float32's)
            assert "float16" not in peaks and peaks["int8"] > peaks["float32"], key
        else:
            assert peaks["float32"] < peaks["float16"], key
    assert lookup_datasheet("NVIDIA H100 80GB HBM3").peak_flops_per_s["bfloat16"] == pytest.approx(989.4e12)


def test_device_properties_name_wins():
    props = {"deviceProperties": [{"name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16.9e9,
                                   "computeMajor": 7, "computeMinor": 0}]}
    ident = identify_device(props, ["ampere_sgemm_128x64_nn"])
    assert (ident.vendor, ident.datasheet_key, ident.assumed) == ("nvidia", "V100 SXM2 16GB", False)
    assert "deviceProperties" in ident.how


def test_rocm_generic_name_is_resolved_from_compute_units():
    props = {"deviceProperties": [{"name": "AMD Radeon Graphics", "totalGlobalMem": 68.7e9, "warpSize": 64,
                                   "computeMajor": 9, "computeMinor": 0, "numSms": 110}]}
    ident = identify_device(props, ["Cijk_Alik_Bljk_SB_MT64x16x32"])
    assert (ident.vendor, ident.datasheet_key) == ("amd", "MI250X GCD")


@pytest.mark.parametrize("kernels, arch, key", [
    (["void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"], "Ampere", "A100 40GB"),
    (["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"], "Hopper", "H100 SXM"),
    (["nvjet_hsh_128x256_64x4_1x2_h_bz_coopA_NTN", "ampere_sgemm_32x32"], "Hopper", "H100 SXM"),
    (["sm100_xmma_gemm_bf16bf16_bf16f32"], "Blackwell", "B200"),
    (["volta_sgemm_128x64_nn"], "Volta", "V100 SXM2 16GB"),
    (["sm86_xmma_gemm_f16f16_f16f32"], "Ampere", None),
])
def test_nvidia_architecture_from_kernel_names(kernels, arch, key):
    ident = identify_device({}, kernels, ["cudaLaunchKernel"])
    assert (ident.vendor, ident.arch, ident.datasheet_key) == ("nvidia", arch, key)
    assert ident.assumed == (key is not None) and "kernel names" in ident.how


def test_amd_from_tensile_kernels_and_unknown_devices():
    amd = identify_device({}, ["Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_gfx942"], ["hipLaunchKernel"])
    assert (amd.vendor, amd.datasheet_key) == ("amd", "MI300X")
    mtia = identify_device({"logical_server_subtype": "T17_ARTEMIS_2304GB"}, [], [], {"mtia_runtime"})
    assert (mtia.kind, mtia.vendor, mtia.datasheet_key) == ("accelerator", "meta", None)
    cpu = identify_device({"host_name": "box"}, [], [])
    assert (cpu.kind, cpu.host_name) == ("cpu", "box")
    anon = identify_device({}, ["void at::native::vectorized_elementwise_kernel<4>"], ["cudaLaunchKernel"])
    assert (anon.kind, anon.vendor, anon.datasheet_key) == ("gpu", "nvidia", None)


@pytest.mark.parametrize("name, tf32", [
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>", True),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16", True),
    ("ampere_sgemm_128x64_nn", False),
    ("volta_sgemm_32x128_tn", False),
    ("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", False),
])
def test_tf32_is_judged_per_kernel(name, tf32):
    assert is_tf32_kernel(name) is tf32
