"""On an Intel XPU the doctor's advice names the XPU's own API and runtime, never CUDA's: the first session's sweep
found "CUDA graph", ".to('cuda')" and "CUDA's lazy initialisation" in findings of XPU reports."""

from __future__ import annotations

import pytest

from doctor_cases import ceilings, linear, report
from roofline.analyze.unused_gpu import record_unused_gpu
from roofline.doctor import diagnose

INTEL = {"kind": "gpu", "vendor": "intel", "name": "Intel(R) Data Center GPU Max 1550"}


def _xpu(ops, **kw):
    r = report(ops, ceil=ceilings(device="xpu", device_name=INTEL["name"], bandwidth=3.2e12, launch=5e-6), **kw)
    r.extra["device"] = dict(INTEL)
    return r


def _decode_products(bytes_per_s: float) -> list:
    ops = []
    for i in range(8):
        for name, n, k in (("wq", 2048, 2048), ("w1", 5632, 2048), ("w2", 2048, 5632)):
            o = linear([1, 1, k], features=k, out_features=n, dtype="float16", module=f"layers.{i}.{name}")
            o.time_s = o.bytes / bytes_per_s
            ops.append(o)
    return ops


def test_undersized_kernels_on_an_xpu_are_fused_not_graphed():
    (finding,) = diagnose(_xpu(_decode_products(1.2e12)), rules=["undersized-memory-bound"])
    assert "every Xe core" in finding.fix and "(torch.compile); batching more rows" in finding.fix
    assert "CUDA" not in finding.fix and " SM " not in finding.fix
    cuda = report(_decode_products(1.2e12), ceil=ceilings(device="cuda", device_name="NVIDIA H200", bandwidth=3.2e12,
                                                          launch=5e-6))
    (on_cuda,) = diagnose(cuda, rules=["undersized-memory-bound"])
    assert "every SM " in on_cuda.fix and "capture the step in a CUDA graph" in on_cuda.fix


def test_lazy_initialisation_on_an_xpu_is_the_xpu_runtimes():
    r = _xpu(_decode_products(3e12))
    r.extra["warmup"] = [{"kind": "cuda-lazy-init", "call": "urDeviceGetInfo", "step": 0, "start_s": 0.0,
                          "dur_s": 0.25}]
    (finding,) = diagnose(r, rules=["warm-up"])
    assert finding.title.startswith("the profile includes the XPU runtime's lazy initialisation (0.25 s in "
                                    "urDeviceGetInfo)")
    r.extra["device"] = {"kind": "gpu", "vendor": "amd", "name": "AMD Instinct MI250X"}
    assert diagnose(r, rules=["warm-up"])[0].title.startswith("the profile includes HIP's lazy initialisation")


def test_a_cpu_run_beside_an_unused_xpu_is_told_to_move_to_the_xpu():
    ops = _decode_products(20e9)
    r = report(ops, ceil=ceilings(device="cpu", device_name="Intel Xeon", bandwidth=100e9, launch=2e-6))
    record_unused_gpu(r, INTEL["name"], "the trace's deviceProperties name it", None, "xpu")
    (finding,) = diagnose(r, rules=["model-on-cpu"])
    assert finding.fix == ("if the CPU is not deliberate, move the model and its inputs to the GPU: model.to('xpu') "
                           "once, and each batch with x.to('xpu', non_blocking=True) (a DataLoader with "
                           "pin_memory=True); torch.autocast('xpu') for mixed precision")
    assert finding.title.endswith("inputs with .to('xpu')") and "cuda" not in finding.title
    assert any("inputs with .to('xpu') (doctor rule model-on-cpu)" in n for n in r.summary.notes)


@pytest.mark.parametrize("name", ["xpu_linear.json", "xpu_linear_pvc_props.json"])
def test_no_finding_of_an_xpu_trace_speaks_cuda(name):
    from pathlib import Path

    from roofline.analyze.trace_file import analyze_trace_file

    r = analyze_trace_file(Path(__file__).resolve().parents[1] / "data" / "devtraces" / name)
    findings = diagnose(r)
    assert findings and {f.rule for f in findings} >= {"host-to-device-copy"}
    for f in findings:
        assert "cuda" not in f"{f.title} {f.fix} {f.savings_method}".lower(), f.rule
