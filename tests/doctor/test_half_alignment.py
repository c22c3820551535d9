from doctor_cases import ceilings, op, report
from roofline.doctor import diagnose


def _lm_head(vocab: int, device: str = "cuda"):
    ops = [op("aten::mm", [([64, 512], "float16"), ([512, vocab], "float16")], out=[64, vocab],
              flops=2 * 64 * 512 * vocab, bound="compute", time=1e-4, kernels=["gemm"])]
    return report(ops, ceil=ceilings(device=device, bandwidth=4.8e12, peaks={"float16": 989e12, "float32": 67e12}))


def test_vocab_not_a_multiple_of_8_is_found():
    findings = diagnose(_lm_head(33278), rules=["half-matmul-alignment"])
    assert len(findings) == 1
    assert findings[0].evidence["dims_k_n"] == [(512, 33278)]
    assert "upper bound" in findings[0].savings_method


def test_aligned_vocab_is_silent():
    assert diagnose(_lm_head(33280), rules=["half-matmul-alignment"]) == []


def test_cpu_report_is_silent():
    r = _lm_head(33278, device="cpu")
    r.ops[0].kernels = []
    assert diagnose(r, rules=["half-matmul-alignment"]) == []
