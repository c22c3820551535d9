"""The undersized-memory-bound rule on reports shaped like the H200's batch-1 decode (issue 19)."""

import pytest

from doctor_cases import ceilings, linear, op, report
from roofline.doctor import diagnose

H200 = dict(device="cuda", device_name="NVIDIA H200", bandwidth=4.6e12, launch=5e-6)
RULE = "undersized-memory-bound"


def _decode_products(bytes_per_s: float, layers: int = 22) -> list:
    """A 1.1B decoder's per-layer matrix-vector products at batch 1 (2-23 MB of fp16 weight each)."""
    ops = []
    for i in range(layers):
        for name, n, k in (("wq", 2048, 2048), ("wk", 256, 2048), ("wv", 256, 2048), ("wo", 2048, 2048),
                           ("w1", 5632, 2048), ("w3", 5632, 2048), ("w2", 2048, 5632)):
            o = linear([1, 1, k], features=k, out_features=n, dtype="float16", module=f"layers.{i}.{name}")
            o.time_s = o.bytes / bytes_per_s
            ops.append(o)
    return ops


def test_decode_products_at_half_the_roof_are_named_with_the_fix():
    ops = _decode_products(2.36e12)
    findings = diagnose(report(ops, ceil=ceilings(**H200)), rules=[RULE])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["ops"] == len(ops) == f.evidence["matmul_ops"]
    assert f.evidence["share_of_roof"] == pytest.approx(2.36 / 4.6)
    spent = sum(o.time_s for o in ops)
    assert f.estimated_savings_s == pytest.approx(spent - sum(o.bytes for o in ops) / 4.6e12)
    assert "split-K" in f.fix and "CUDA graph" in f.fix and "fuse" in f.fix
    assert f.locations and "layers" in f.locations[0]


def test_products_near_the_roof_big_matrices_tiny_ops_and_cpu_reports_are_silent():
    near_roof = _decode_products(4.2e12)
    assert diagnose(report(near_roof, ceil=ceilings(**H200)), rules=[RULE]) == []
    # A 234 MB gate/up product (Llama-3-8B) at half the roof is slow, but not because it is small.
    big = [linear([1, 1, 4096], features=4096, out_features=28672, dtype="float16", module=f"layers.{i}.w13")
           for i in range(8)]
    for o in big:
        o.time_s = o.bytes / 2.3e12
    assert diagnose(report(big, ceil=ceilings(**H200)), rules=[RULE]) == []
    tiny = [op("aten::add", [([4096], "float16"), ([4096], "float16")], out=[4096], time=4e-6, nbytes=24576)
            for _ in range(50)]
    assert diagnose(report(tiny, ceil=ceilings(**H200)), rules=[RULE]) == []
    slow = _decode_products(2.36e12)
    assert diagnose(report(slow, ceil=ceilings(device="cpu", bandwidth=4.6e12)), rules=[RULE]) == []


def test_a_few_slow_products_among_long_work_are_not_worth_a_finding():
    ops = _decode_products(2.36e12, layers=1)[:3]
    ops.append(op("aten::mm", [([8192, 8192], "float16"), ([8192, 8192], "float16")], out=[8192, 8192],
                  time=2e-3, flops=2 * 8192**3, bound="compute"))
    assert diagnose(report(ops, ceil=ceilings(**H200)), rules=[RULE]) == []


def _products(nbytes: float, seconds: float, n: int = 8) -> list:
    return [op("aten::mm", [([1, 2048], "float16"), ([2048, 2048], "float16")], out=[1, 2048], time=seconds,
               nbytes=nbytes, module=f"layers.{i}.wo") for i in range(n)]


def test_thresholds_at_their_boundaries():
    """Each of the rule's three limits, just inside and just outside (H200: 4.6 TB/s, so the small-op limit is
    SMALL_ROOF_S x 4.6 TB/s = 92 MB and the slow limit SLOW_SHARE x 4.6 TB/s = 2.76 TB/s)."""
    from roofline.doctor.rules.undersized_memory_bound import MIN_BYTES, SLOW_SHARE, SMALL_ROOF_S

    bw = H200["bandwidth"]
    slow = SLOW_SHARE * bw

    def fires(nbytes: float, rate: float) -> bool:
        return bool(diagnose(report(_products(nbytes, nbytes / rate), ceil=ceilings(**H200)), rules=[RULE]))

    mb8 = 8e6
    assert fires(mb8, slow * 0.99) and not fires(mb8, slow * 1.01)  # running just under / over 60% of the roof
    assert fires(MIN_BYTES, slow / 2) and not fires(MIN_BYTES - 1, slow / 2)  # below 256 KiB: launch-overhead's
    small = SMALL_ROOF_S * bw
    assert fires(small * 0.999, slow / 2) and not fires(small, slow / 2)  # 20 us at the roof: not small any more


def test_copies_between_host_and_device_are_not_undersized_hbm_ops():
    """`.to('cuda')` / `.cpu()` of 2 MB tensors run at PCIe speed (bad_syncs_fwd_fp32 on the H200: 40 such
    _to_copy ops at 2% of the HBM roof); their kernels are host<->device memcpys, not HBM-bound work. The same
    ops with a device kernel are still found: the test fails if the rule stops firing at all."""

    def copies(kernel: str) -> list:
        return [op("aten::_to_copy", [([512, 1024], "float32")], out=[512, 1024], nbytes=2 * 2**21, time=2.1e-5,
                   kernels=[kernel], module=f"m.{i}") for i in range(8)]

    for memcpy in ("Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)", "CopyHostToDevice"):
        assert diagnose(report(copies(memcpy), ceil=ceilings(**H200)), rules=[RULE]) == []
    on_device = diagnose(report(copies("void at::native::elementwise_kernel<128, 4>"), ceil=ceilings(**H200)),
                         rules=[RULE])
    assert len(on_device) == 1 and on_device[0].evidence["ops"] == 8
