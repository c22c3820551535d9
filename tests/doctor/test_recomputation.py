import pytest

from doctor_cases import linear, op, report
from roofline.doctor import diagnose


def test_no_kv_cache_within_one_step_is_found():
    ops = [linear([1, t, 64], time=t * 1e-5) for t in range(5, 13)]
    findings = diagnose(report(ops), rules=["recomputation"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["rows_longest_run"] == list(range(5, 13))
    expected = sum(t * 1e-5 * (1 - 1 / t) for t in range(6, 13))
    assert f.estimated_savings_s == pytest.approx(expected)
    assert "KV cache" in f.fix or "cache" in f.fix


def test_no_kv_cache_across_steps_is_found():
    ops = [linear([2, 4 + s, 64], step=s) for s in range(6)]
    findings = diagnose(report(ops, steps=6), rules=["recomputation"])
    assert len(findings) == 1 and findings[0].evidence["calls"] == 6


def test_attention_recomputation_is_counted_too():
    ops = []
    for t in range(4, 10):
        ops.append(linear([1, t, 64]))
        ops.append(op("aten::scaled_dot_product_attention",
                      [([1, 4, t, 16], "float32"), ([1, 4, t, 16], "float32"), ([1, 4, t, 16], "float32")],
                      out=[1, 4, t, 16], module="layers.0.attn"))
    assert diagnose(report(ops), rules=["recomputation"])[0].evidence["call_sites"] == 2


def test_kv_cache_decode_is_silent():
    ops = [linear([1, 5, 64])] + [linear([1, 1, 64]) for _ in range(8)]
    for t in range(6, 14):  # attention over a growing cache: one query, more keys; not recomputation
        ops.append(op("aten::scaled_dot_product_attention",
                      [([1, 4, 1, 16], "float32"), ([1, 4, t, 16], "float32"), ([1, 4, t, 16], "float32")],
                      out=[1, 4, 1, 16], module="layers.0.attn"))
    assert diagnose(report(ops), rules=["recomputation"]) == []


def test_training_steps_of_one_shape_are_silent():
    ops = [linear([8, 128, 64], step=s) for s in range(5)]
    assert diagnose(report(ops, steps=5), rules=["recomputation"]) == []
