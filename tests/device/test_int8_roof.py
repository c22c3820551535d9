"""The int8 compute roof: measured with torch._int_mm where torch runs it on the device, left out with the reason
where it does not, completed alone on ceilings cached before it existed, and used for int8 and uint8 products."""

import json
from pathlib import Path

import msgspec
import pytest
import torch

from roofline.analyze.integer_roofs import integer_roof_notes
from roofline.cli import main
from roofline.device import cache_path, get_ceilings, load_ceilings, lookup_datasheet, resolve_device
from roofline.device import ceilings as ceilings_module
from roofline.device import measure
from roofline.device.measure import FlopsResult, int8_unavailable_reason, measure_peak_flops
from roofline.errors import RooflineError
from roofline.report import Ceilings, OpRecord

REPO = Path(__file__).resolve().parents[2]


def _refuse(*_a, **_k):
    raise RuntimeError("_int_mm_out_cpu not implemented for this build\nsecond line")


@pytest.fixture
def small_products(monkeypatch):
    monkeypatch.setattr(measure, "_matmul_sizes", lambda device, quick: [64, 128])


def test_cpu_int8_roof_is_measured_with_int_mm_and_judges_int8_and_uint8_products(small_products):
    if not hasattr(torch, "_int_mm"):
        pytest.skip("this torch has no torch._int_mm")
    r = measure_peak_flops("cpu", "int8", quick=True)
    assert r.dtype == "int8" and r.best_flops_per_s > 0 and sorted(r.by_size_flops_per_s) == [64, 128]
    assert r.best_flops_per_s == max(r.by_size_flops_per_s.values())
    assert r.method.startswith("torch._int_mm (int8 x int8 -> int32) on random int8 square matrices of sizes [64, 128]")
    assert "2*N^3 operations per product (integer multiply-accumulates counted as 2" in r.method
    c = Ceilings(device="cpu", memory_bandwidth_bytes_per_s=1e10,
                 peak_flops_per_s={"float32": r.best_flops_per_s * 3, "int8": r.best_flops_per_s}, source="measured")
    assert c.peak_for("int8") == c.peak_for("uint8") == r.best_flops_per_s != c.peak_for("float32")
    ops = [OpRecord(name="quantized::linear", dtype="uint8", flops=2e9, bytes=1e6, time_s=1e-3)]
    notes, roofs = integer_roof_notes(ops, lambda i: ("cpu", c), lambda i: "quantized::linear", 1e-3)
    assert roofs == {0: "int8"} and f"judged against the int8 roof ({r.best_flops_per_s / 1e12:.3g} TOP/s)" in notes[0]


def test_measured_cpu_ceilings_carry_the_int8_roof_or_say_why_not(cpu_ceilings):
    reason = int8_unavailable_reason(resolve_device("cpu"))
    if reason is None:
        assert cpu_ceilings.peak_flops_per_s["int8"] > 0 and "int8" in cpu_ceilings.method
    else:
        assert "int8" not in cpu_ceilings.peak_flops_per_s and f"int8: not measured: {reason}" in cpu_ceilings.method


def test_when_int_mm_raises_no_int8_roof_is_invented_and_the_reason_is_recorded(monkeypatch, capsys):
    monkeypatch.setattr(torch, "_int_mm", _refuse, raising=False)
    dev = resolve_device("cpu")
    reason = int8_unavailable_reason(dev)
    assert reason == "torch._int_mm raised RuntimeError: _int_mm_out_cpu not implemented for this build"
    with pytest.raises(RooflineError, match="dtype int8 is not available on cpu: torch._int_mm raised RuntimeError"):
        measure_peak_flops(dev, "int8", quick=True)
    old = Ceilings(device="cpu", memory_bandwidth_bytes_per_s=1e10, peak_flops_per_s={"float32": 1e11},
                   source="measured (quick)", method="bandwidth: old")
    assert ceilings_module.lacks_int8_roof(old)
    got = ceilings_module.add_int8_roof(old, dev, quick=True)
    assert got.peak_flops_per_s == {"float32": 1e11} and got.peak_for("int8") == 1e11
    assert f"; int8: not measured: {reason}; integer products are judged against the float32 roof" in got.method
    assert not ceilings_module.lacks_int8_roof(got)  # recorded once, not tried on every run
    assert main(["ceilings", "--device", "cpu", "--dtypes", "float32,int8"]) == 2  # asked for, refused before measuring
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dtype int8 is not available on cpu: torch._int_mm raised RuntimeError" in err
    monkeypatch.delattr(torch, "_int_mm")
    assert int8_unavailable_reason(dev) == f"torch {torch.__version__} has no torch._int_mm"


def test_cached_ceilings_without_int8_gain_it_measured_alone_once(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    dev = resolve_device("cpu")
    old = Ceilings(device="cpu", device_name=ceilings_module.device_name(dev), memory_bandwidth_bytes_per_s=1e10,
                   peak_flops_per_s={"float32": 1e11, "float64": 5e10}, launch_overhead_s=1e-5,
                   cache_bandwidth_bytes_per_s=3e10, cache_bytes=2**25, shared_memory_method="not a GPU",
                   source="measured (quick)", method="old")
    path = cache_path(old.device_name, quick=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(msgspec.to_builtins(old)))
    calls = []

    def stub(device, dtype, **_k):
        calls.append(dtype)
        return FlopsResult("int8", 2.5e11, {1024: 2.5e11}, "stub int8 method")

    monkeypatch.setattr(ceilings_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured everything again"))
    monkeypatch.setattr(ceilings_module, "int8_unavailable_reason", lambda device: None)
    monkeypatch.setattr(ceilings_module, "measure_peak_flops", stub)
    got = get_ceilings("cpu", quick=True)
    assert got.peak_flops_per_s == {"float32": 1e11, "float64": 5e10, "int8": 2.5e11} and calls == ["int8"]
    assert "; int8 (measured " in got.method and got.method.endswith("which predate it): stub int8 method")
    assert load_ceilings(path).peak_flops_per_s["int8"] == 2.5e11
    get_ceilings("cpu", quick=True)
    assert calls == ["int8"]  # saved: the next run reads it


def test_committed_ceilings_without_int8_still_load_and_fall_back_to_float32():
    c = load_ceilings(REPO / "benchmarks" / "results" / "ceilings_h200.json")
    assert "int8" not in c.peak_flops_per_s and c.peak_for("int8") == c.peak_flops_per_s["float32"] > 0


def test_hopper_sxm_datasheets_carry_the_dense_int8_tensor_core_peak():
    for name in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"):
        assert lookup_datasheet(name).peak_flops_per_s["int8"] == pytest.approx(1978.9e12)  # 3,958 sparse / 2
    assert "int8" not in lookup_datasheet("NVIDIA H100 PCIe").peak_flops_per_s


@pytest.mark.cuda
def test_gpu_int8_roof_is_measured_and_below_the_datasheet_peak():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    dev = resolve_device("cuda")
    assert int8_unavailable_reason(dev) is None  # torch has had CUDA _int_mm since 2.1
    r = measure_peak_flops(dev, "int8", quick=True)
    assert "CUDA events" in r.method and r.best_flops_per_s > measure_peak_flops(dev, "float32", quick=True).best_flops_per_s
    sheet = lookup_datasheet(torch.cuda.get_device_name(dev))
    if sheet is not None and "int8" in sheet.peak_flops_per_s:
        assert r.best_flops_per_s < 1.05 * sheet.peak_flops_per_s["int8"]
