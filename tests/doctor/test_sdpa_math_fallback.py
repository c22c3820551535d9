import pytest
import torch
import torch.nn.functional as F

from doctor_cases import ceilings, op, report
from roofline.doctor import diagnose

RULE = "sdpa-math-fallback"
GPU = dict(device="cuda", device_name="NVIDIA H200", bandwidth=4.8e12,
           peaks={"float32": 67e12, "float16": 989e12, "bfloat16": 989e12})


class ForcedMath(torch.nn.Module):
    def forward(self, q, k, v):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


@pytest.fixture(scope="module")
def recorded_math_report():
    """A real recording of SDPA's math backend (fp32, causal, grouped-query), on CPU."""
    from roofline.analyze.live import analyze_model
    from roofline.report import Ceilings

    q, k = torch.randn(1, 4, 32, 16), torch.randn(1, 2, 32, 16)
    cpu = Ceilings(device="cpu", device_name="test cpu", memory_bandwidth_bytes_per_s=1e10,
                   peak_flops_per_s={"float32": 1e11})
    return analyze_model(ForcedMath(), (q, k, k.clone()), device=torch.device("cpu"), ceilings=cpu, warmup=0,
                         iters=1)


def test_recorded_math_fallback_is_found_with_its_reasons(recorded_math_report):
    r = recorded_math_report
    assert diagnose(r, rules=[RULE]) == []  # a CPU report: the rule is for GPUs
    r.ceilings = ceilings(**GPU)
    (finding,) = diagnose(r, rules=[RULE])
    ev = finding.evidence
    assert ev["calls"] == 1 and ev["causal"] and ev["gqa"] and not ev["explicit_mask"]
    assert ev["shapes_heads_sq_sk_d_dtype"] == [[4, 32, 32, 16, "float32"]]
    assert any(r.startswith("float32 inputs") for r in ev["reasons"])
    assert any("grouped-query" in r for r in ev["reasons"])
    assert "autocast" in finding.fix and finding.estimated_savings_s > 0


def _math_pieces(dtype="float16", d=64, s=1024, heads=8, mask=True, time=1e-3):
    bh = heads
    scores = [1, heads, s, s]
    ops = [op("aten::mul", [([1, heads, s, d], dtype)], time=time / 10),
           op("aten::bmm", [([bh, s, d], dtype), ([bh, d, s], dtype)], time=time / 4)]
    if mask:
        ops.append(op("aten::add", [(scores, dtype), ([1, 1, s, s], dtype)], time=time / 10))
    ops += [op("aten::_safe_softmax", [(scores, dtype)], time=time / 4),
            op("aten::bmm", [([bh, s, s], dtype), ([bh, s, d], dtype)], time=time / 4)]
    return ops


def test_half_attention_with_an_explicit_mask_names_the_mask_only():
    (finding,) = diagnose(report(_math_pieces(), ceil=ceilings(**GPU)), rules=[RULE])
    assert finding.evidence["explicit_mask"] and not finding.evidence["causal"]
    assert len(finding.evidence["reasons"]) == 1 and "attn_mask" in finding.evidence["reasons"][0]
    assert "is_causal=True" in finding.fix


def test_math_op_kept_whole_reads_its_inputs():
    whole = op("aten::_scaled_dot_product_attention_math",
               [([2, 8, 512, 320], "bfloat16"), ([2, 8, 512, 320], "bfloat16"), ([2, 8, 512, 320], "bfloat16")],
               time=1e-3)
    (finding,) = diagnose(report([whole], ceil=ceilings(**GPU)), rules=[RULE])
    assert finding.evidence["reasons"] == ["head dim 320 > 256: flash and cuDNN refuse it"]


def test_fused_backends_and_user_softmax_are_silent():
    fused = op("aten::_scaled_dot_product_flash_attention", [([1, 8, 1024, 64], "float16")] * 3, time=1e-4)
    user = [o for o in _math_pieces(mask=False)]
    user[2] = op("aten::_softmax", [([1, 8, 1024, 1024], "float16")])
    assert diagnose(report([fused, *user], ceil=ceilings(**GPU)), rules=[RULE]) == []
