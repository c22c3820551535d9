import json

import msgspec
import pytest

from roofline.cli import main
from roofline.device import (
    cache_path,
    get_ceilings,
    load_ceilings,
    lookup_datasheet,
    measure_peak_flops,
    resolve_device,
)
from roofline.device.ceilings import ceilings_for_device_name
from roofline.errors import RooflineError


def test_cpu_ceilings_are_positive_and_plausible(cpu_ceilings):
    c = cpu_ceilings
    assert c.device == "cpu"
    # A CPU of this decade streams between ~1 GB/s and ~2 TB/s and multiplies fp32 at 1 GFLOP/s..100 TFLOP/s.
    assert 1e9 < c.memory_bandwidth_bytes_per_s < 2e12
    assert {"copy", "read", "write", "write-bytes", "zero"} <= set(c.bandwidth_by_kernel_bytes_per_s)
    assert c.memory_bandwidth_bytes_per_s == max(c.bandwidth_by_kernel_bytes_per_s.values())
    assert 1e9 < c.peak_flops_per_s["float32"] < 1e14
    assert 1e8 < c.peak_flops_per_s["float64"] < 1e14  # measured too: no fixed fraction of float32's
    assert 1e-8 < c.launch_overhead_s < 1e-3
    # Unit-free relations, far tighter than the absolute ranges: every CPU's fp32 ridge lies between a few tenths
    # and a few hundred FLOP/B; one memory system serves copy, read and fill at rates within 10x of each other; a
    # launch overhead lasts as long as moving 100 B..10 MB. A slip of 1e3 (us vs ms, GB vs MB) breaks each.
    assert 0.3 < c.ridge_point("float32") < 300
    rates = c.bandwidth_by_kernel_bytes_per_s
    assert max(rates["copy"], rates["read"], rates["write"]) / min(rates["copy"], rates["read"], rates["write"]) < 10
    assert 1e2 < c.launch_overhead_s * c.memory_bandwidth_bytes_per_s < 1e7
    assert c.launch_overhead_graph_s is None
    assert "best of" in c.method and "random" in c.method and f"{c.threads} threads" in c.method
    assert c.threads >= 1 and len(c.load_average) == 3


@pytest.mark.parametrize("available_gib", [1, 6, 24, 512])
@pytest.mark.parametrize("reported_llc_mib", [1, 32, 480, 4096])
def test_cpu_bandwidth_buffers_are_bounded_by_available_memory_not_the_reported_cache(
        monkeypatch, available_gib, reported_llc_mib):
    import torch

    from roofline.device import measure

    monkeypatch.setattr(measure, "available_memory_bytes", lambda: available_gib * 2**30)
    monkeypatch.setattr(measure, "last_level_cache_bytes", lambda dev: reported_llc_mib * 2**20)
    for quick in (False, True):
        both_buffers = 2 * 4 * measure._bandwidth_buffer_elems(torch.device("cpu"), quick)
        assert both_buffers <= min(2 * 2**30, available_gib * 2**30 // 8)


def test_ceilings_round_trip_through_the_cache(cpu_ceilings):
    again = get_ceilings("cpu", quick=True)
    assert again == cpu_ceilings
    path = cache_path(cpu_ceilings.device_name, quick=True)
    assert path.exists()
    assert load_ceilings(path) == cpu_ceilings


def test_remeasure_replaces_the_cache_entry(cpu_ceilings):
    fresh = get_ceilings("cpu", quick=True, remeasure=True)
    assert fresh.measured_at >= cpu_ceilings.measured_at
    assert load_ceilings(cache_path(fresh.device_name, quick=True)) == fresh


def test_datasheet_has_dense_figures_with_sources():
    h200 = lookup_datasheet("NVIDIA H200")
    assert h200.memory_bandwidth_bytes_per_s == 4.8e12
    assert h200.peak_flops_per_s["bfloat16"] == pytest.approx(989.4e12)  # dense, not the 1979 sparse figure
    for name in ("A100-SXM4-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe",
                 "NVIDIA L4", "NVIDIA A10G", "NVIDIA GeForce RTX 4090"):
        entry = lookup_datasheet(name)
        assert entry is not None and entry.source, name
    assert lookup_datasheet("NVIDIA H100 PCIe").memory_bandwidth_bytes_per_s == 2.0e12
    assert lookup_datasheet("Some Unknown GPU") is None


def test_trace_gpu_ceilings_fall_back_to_datasheet():
    c = ceilings_for_device_name("NVIDIA H200")
    assert c.source == "datasheet" and c.memory_bandwidth_bytes_per_s == 4.8e12


@pytest.mark.parametrize("spec", ["tpu", "cuda:x", "gpu0"])
def test_unknown_device_is_a_clear_error(spec):
    with pytest.raises(RooflineError, match="unknown device"):
        resolve_device(spec)


def test_missing_dtype_is_a_clear_error():
    with pytest.raises(RooflineError, match="not available on cpu"):
        measure_peak_flops("cpu", "float8_e4m3fn")
    with pytest.raises(RooflineError, match="unknown dtype"):
        measure_peak_flops("cpu", "float13")


def test_cli_ceilings_prints_table_and_writes_json(tmp_path, capsys, cpu_ceilings):
    out = tmp_path / "c.json"
    assert main(["ceilings", "--device", "cpu", "--quick", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "memory bandwidth" in text and "peak float32" in text
    data = json.loads(out.read_text())
    for key in ("device", "memory_bandwidth_bytes_per_s", "peak_flops_per_s", "launch_overhead_s", "datasheet"):
        assert key in data


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ceilings", "--device", "tpu"], "unknown device"),
        (["ceilings", "--device", "cuda"], "CUDA is not available"),
        (["ceilings", "--device", "cpu", "--dtypes", "float8_e4m3fn"], "not available on cpu"),
        (["ceilings", "--device", "cpu", "--dtypes", "float13"], "unknown dtype"),
        (["view", "/nonexistent/report.json", "-o", "/tmp/x.html"], "not found"),
    ],
)
def test_cli_errors_are_one_line_exit_2(argv, message, capsys):
    """Unknown device, CUDA absent, a dtype the device lacks, an unreadable report: one line, exit 2."""
    import torch

    if torch.cuda.is_available() and "CUDA" in message:
        pytest.skip("CUDA present")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_unreadable_report_file_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "report.json"
    bad.write_text("{truncated")
    assert main(["view", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "cannot parse" in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_ceilings_dtypes_filter(capsys, cpu_ceilings):
    assert main(["ceilings", "--device", "cpu", "--quick", "--dtypes", "float32"]) == 0
    out = capsys.readouterr().out
    assert "peak float32" in out and "peak bfloat16" not in out


def test_cli_ceilings_dtypes_take_the_short_spellings_dtype_takes(capsys, cpu_ceilings):
    assert main(["ceilings", "--device", "cpu", "--quick", "--dtypes", "fp16,bf16"]) == 0
    out = capsys.readouterr().out
    assert "peak float16" in out and "peak bfloat16" in out and "peak float32" not in out


def test_a_dtype_the_cpu_lacks_lists_int8_among_those_it_has(capsys):
    from roofline.device.measure import int8_unavailable_reason

    assert main(["ceilings", "--device", "cpu", "--dtypes", "float8_e4m3fn"]) == 2
    available = capsys.readouterr().err.split("(available: ")[1]
    assert ("int8" in available) is (int8_unavailable_reason(resolve_device("cpu")) is None)


def test_cpu_ceilings_carry_a_measured_cache_roof_above_dram(cpu_ceilings):
    from roofline.device.resolve import last_level_cache_bytes

    c = cpu_ceilings
    assert c.cache_bytes == last_level_cache_bytes(resolve_device("cpu")) > 0
    # Never below the DRAM roof (a busy machine's low figure is replaced, and the method says so), and within what
    # one memory system can do (a unit slip of 1e3 breaks the upper bound).
    assert c.memory_bandwidth_bytes_per_s <= c.cache_bandwidth_bytes_per_s < 1000 * c.memory_bandwidth_bytes_per_s
    assert "cache: copy and in-place multiply" in c.method and "last-level cache" in c.method
    if c.cache_bandwidth_bytes_per_s == c.memory_bandwidth_bytes_per_s:
        assert "the DRAM roof is kept as the cache roof" in c.method


def test_a_cache_figure_below_dram_is_replaced_by_the_dram_roof_and_said():
    from roofline.device.cache_bandwidth import CacheBandwidthResult
    from roofline.device.ceilings import _cache_not_below_dram

    low = CacheBandwidthResult(2e9, 2**25, {"copy@4MiB": 2e9}, "m")
    _cache_not_below_dram(low, 1.1e10)
    assert low.best_bytes_per_s == 1.1e10 and "below the DRAM roof" in low.method
    high = CacheBandwidthResult(3e11, 2**25, {}, "m")
    _cache_not_below_dram(high, 1.1e10)
    assert high.best_bytes_per_s == 3e11 and high.method == "m"


def test_cached_ceilings_without_a_cache_roof_gain_one_measured_alone(monkeypatch, tmp_path):
    """A cache entry written before the cache roof existed is completed by measuring that roof only, then saved."""
    from roofline.device import ceilings as ceilings_module
    from roofline.device.cache_bandwidth import CacheBandwidthResult
    from roofline.report import Ceilings

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    dev = resolve_device("cpu")
    old = Ceilings(device="cpu", device_name=ceilings_module.device_name(dev), memory_bandwidth_bytes_per_s=1e10,
                   peak_flops_per_s={"float32": 1e11}, launch_overhead_s=1e-5, source="measured (quick)",
                   method="bandwidth: old")
    path = cache_path(old.device_name, quick=True)
    data = msgspec.to_builtins(old)
    for key in ("cache_bandwidth_bytes_per_s", "cache_bytes"):
        data.pop(key)
    path.write_text(json.dumps(data))
    monkeypatch.setattr(ceilings_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured everything again"))
    monkeypatch.setattr(ceilings_module, "measure_cache_bandwidth",
                        lambda *a, **k: CacheBandwidthResult(3e11, 2**25, {"copy@4MiB": 3e11}, "stub method"))
    got = get_ceilings("cpu", quick=True)
    assert (got.cache_bandwidth_bytes_per_s, got.cache_bytes) == (3e11, 2**25)
    assert got.memory_bandwidth_bytes_per_s == 1e10 and "after the other roofs" in got.method
    assert load_ceilings(path).cache_bandwidth_bytes_per_s == 3e11


def test_cached_ceilings_without_a_float64_roof_gain_one_measured_alone(monkeypatch, tmp_path):
    """Ceilings cached before float64 was measured judged a float64 model against float32's roof: the entry is
    completed by measuring float64 only (the other roofs kept), then saved, so it happens once."""
    from roofline.device import ceilings as ceilings_module
    from roofline.device.measure import FlopsResult
    from roofline.report import Ceilings

    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    dev = resolve_device("cpu")
    old = Ceilings(device="cpu", device_name=ceilings_module.device_name(dev), memory_bandwidth_bytes_per_s=1e10,
                   peak_flops_per_s={"float32": 1e11, "int8": 4e11}, launch_overhead_s=1e-5,
                   source="measured (quick)", method="bandwidth: old", cache_bandwidth_bytes_per_s=3e10,
                   cache_bytes=2**25, shared_memory_method="not measured: a CPU")
    path = cache_path(old.device_name, quick=True)
    path.write_text(json.dumps(msgspec.to_builtins(old)))
    asked = []

    def measured(device, dtype, **kwargs):
        asked.append(dtype)
        return FlopsResult(dtype, 5e10, {1024: 5e10}, "stub float64 method")

    monkeypatch.setattr(ceilings_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured everything again"))
    monkeypatch.setattr(ceilings_module, "measure_peak_flops", measured)
    got = get_ceilings("cpu", quick=True)
    assert asked == ["float64"]
    assert got.peak_flops_per_s == {"float32": 1e11, "int8": 4e11, "float64": 5e10}
    assert "float64 (measured" in got.method and "stub float64 method" in got.method
    assert load_ceilings(path).peak_flops_per_s["float64"] == 5e10
    assert get_ceilings("cpu", quick=True).peak_flops_per_s["float64"] == 5e10 and asked == ["float64"]


def test_a_ceilings_file_without_the_cache_fields_still_loads(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"device": "cuda", "memory_bandwidth_bytes_per_s": 4e12,
                                "peak_flops_per_s": {"float32": 5e13}}))
    c = load_ceilings(path)
    assert c.cache_bandwidth_bytes_per_s == 0 and c.cache_bytes == 0


def test_datasheet_ceilings_carry_sourced_l2_sizes_and_no_cache_bandwidth():
    h100 = ceilings_for_device_name("NVIDIA H100 80GB HBM3")
    assert h100.cache_bytes == 50 * 2**20 and h100.cache_bandwidth_bytes_per_s == 0
    assert "whitepaper" in h100.method
    assert ceilings_for_device_name("NVIDIA L4").cache_bytes == 0  # no source given: no size claimed


@pytest.mark.cuda
def test_gpu_cache_roof_is_measured_above_the_dram_roof():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from roofline.device.cache_bandwidth import measure_cache_bandwidth
    from roofline.device.measure import measure_peak_bandwidth

    dev = resolve_device("cuda")
    cache = measure_cache_bandwidth(dev, quick=True)
    dram = measure_peak_bandwidth(dev, quick=True)
    assert cache.cache_bytes > 0 and "CUDA graph" in cache.method
    assert dram.best_bytes_per_s < cache.best_bytes_per_s < 20 * dram.best_bytes_per_s
