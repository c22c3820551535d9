"""The shared-memory roof (device/shared_memory.py): its bytes formula, the reasons it is absent (a CPU, a torch
without NVRTC), old ceilings files without it, its line on the roofline PNG, and on a GPU a plausible figure."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from roofline.device import shared_memory as sm
from roofline.device.ceilings import load_ceilings
from roofline.render.console import render_ceilings
from roofline.report import Ceilings, OpRecord, Report

REPO = Path(__file__).resolve().parents[2]


def test_bytes_are_every_threads_16_byte_loads():
    # The H200 launch: 132 SMs x 8 blocks, 256 threads, 4096 trips of 8 loads.
    assert sm.shared_bytes(1056, 256, 4096 * 8) == 1056 * 256 * 32768 * 16 == 141_733_920_768
    assert sm.shared_bytes(1, 32, 1) == 512  # one warp's load: 512 contiguous bytes
    assert "float4 buf[1024]" in sm.SOURCE and "& 1023" in sm.SOURCE


def test_on_a_cpu_the_roof_is_absent_with_the_reason():
    result = sm.measure_shared_memory_bandwidth(torch.device("cpu"))
    assert result.bytes_per_s is None
    assert result.method.startswith("not measured") and "CUDA" in result.method


def test_a_torch_without_nvrtc_says_so(monkeypatch):
    for name in ("compile_kernel", "_compile_kernel"):
        monkeypatch.delattr(torch.cuda, name, raising=False)
    reason = sm.not_measured(torch.device("cuda"))
    assert reason is not None and reason.bytes_per_s is None
    assert "_compile_kernel" in reason.method and torch.__version__ in reason.method


def test_old_ceilings_files_load_without_the_shared_memory_roof():
    c = load_ceilings(REPO / "benchmarks" / "results" / "ceilings_h200.json")
    assert c.shared_memory_bandwidth_bytes_per_s is None and c.shared_memory_method == ""
    assert "shared memory bandwidth (all SMs)" in render_ceilings(c) and "not measured" in render_ceilings(c)


def test_a_measured_roof_is_printed_and_drawn():
    from roofline.render.png import draw_roofline

    c = Ceilings(device="cuda", device_name="NVIDIA H200", memory_bandwidth_bytes_per_s=4.6e12,
                 peak_flops_per_s={"float16": 7e14}, cache_bandwidth_bytes_per_s=7.5e12, cache_bytes=60 * 2**20,
                 shared_memory_bandwidth_bytes_per_s=3.1e13, shared_memory_method="CUDA C kernel built with NVRTC")
    text = render_ceilings(c)
    assert "31.0 TB/s" in text or "31 TB/s" in text
    assert "Shared memory: CUDA C kernel built with NVRTC" in text
    op = OpRecord(name="aten::add", dtype="float16", flops=1e6, bytes=6e6, time_s=2e-6, arithmetic_intensity=1 / 6,
                  achieved_flops_per_s=5e11, bound="memory")
    fig = draw_roofline(Report(ceilings=c, ops=[op]))
    try:
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    assert any(label.startswith("shared-memory roof 31") for label in labels), labels


@pytest.mark.cuda
def test_h200_class_gpu_figure_is_plausible():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    result = sm.measure_shared_memory_bandwidth(torch.device("cuda"), quick=True)
    if sm.compiler() is None:
        assert result.bytes_per_s is None
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    # 128 B per clock per SM: between a 1.0 GHz floor and a 2.2 GHz clock no Hopper reaches (H200: ~33.5 TB/s).
    assert 0.5 * sms * 128 * 1.0e9 < result.bytes_per_s < sms * 128 * 2.2e9, result


def _nvrtc_ptx(source: str) -> str:
    """PTX for sm_90 from the NVRTC library torch's CUDA wheels ship (skips where there is none)."""
    import ctypes
    import glob
    import site

    libs = [p for d in site.getsitepackages() for p in glob.glob(f"{d}/nvidia/*/lib/libnvrtc.so*")
            if "builtins" not in p and ".alt." not in p]
    if not libs:
        pytest.skip("no NVRTC library here")
    lib = ctypes.CDLL(sorted(libs)[0])
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None, None) == 0
    opts = (ctypes.c_char_p * 1)(b"--gpu-architecture=compute_90")
    assert lib.nvrtcCompileProgram(prog, 1, opts) == 0
    size = ctypes.c_size_t()
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, buf)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.value.decode()


def test_the_kernel_reads_shared_memory_in_16_byte_loads_and_no_global_memory():
    ptx = _nvrtc_ptx(sm.SOURCE)
    assert ptx.count("ld.shared.v4.f32") >= sm.UNROLL
    assert "ld.global" not in ptx and ptx.count("st.global") == 1


def test_cached_ceilings_without_the_shared_roof_gain_it_alone(tmp_path, monkeypatch):
    import json

    import msgspec

    from roofline.device import ceilings as ceilings_module
    from roofline.device.cache import cache_path
    from roofline.device.ceilings import get_ceilings
    from roofline.device.resolve import resolve_device

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    name = ceilings_module.device_name(resolve_device("cpu"))
    old = Ceilings(device="cpu", device_name=name, memory_bandwidth_bytes_per_s=1e10, peak_flops_per_s={"float32": 1e11},
                   cache_bandwidth_bytes_per_s=3e10, cache_bytes=2**25, source="measured (quick)", method="old")
    data = msgspec.to_builtins(old)
    for key in ("shared_memory_bandwidth_bytes_per_s", "shared_memory_method"):
        data.pop(key)
    path = cache_path(name, quick=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    monkeypatch.setattr(ceilings_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured everything again"))
    got = get_ceilings("cpu", quick=True)
    assert got.shared_memory_bandwidth_bytes_per_s is None and "this device is cpu" in got.shared_memory_method
    assert load_ceilings(path).shared_memory_method == got.shared_memory_method  # saved: not asked again
    monkeypatch.setattr(ceilings_module, "measure_shared_memory_bandwidth",
                        lambda *a, **k: sm.SharedMemoryResult(3.1e13, "stub kernel"))
    path.write_text(json.dumps(data))
    got = get_ceilings("cpu", quick=True)
    assert got.shared_memory_bandwidth_bytes_per_s == 3.1e13
    assert got.shared_memory_method.startswith("stub kernel (measured ") and got.memory_bandwidth_bytes_per_s == 1e10
