import pytest

from doctor_cases import contiguous_strides, op, report
from roofline.doctor import diagnose

B, H, T, D = 2, 4, 8, 16
# attention output [B, H, T, D] transposed to [B, T, H, D]: a permuted, non-contiguous view
TRANSPOSED = ([B, T, H, D], "float32", [H * T * D, D, T * D, 1])


def test_copy_of_a_transposed_attention_output_is_found():
    ops = [op("aten::clone", [TRANSPOSED], out=[B, T, H, D], module="layers.0.attn", source="model.py:55",
              time=7e-6) for _ in range(3)]
    findings = diagnose(report(ops), rules=["layout-copy"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["count"] == 3
    assert f.estimated_savings_s == pytest.approx(21e-6)
    assert f.locations[0].startswith("model.py:55")


def test_reshape_and_the_clone_it_runs_as_count_once():
    ops = [op("aten::reshape", [TRANSPOSED], out=[B, T, H * D], time=8e-6),
           op("aten::clone", [TRANSPOSED], out=[B, T, H, D], time=7e-6),
           op("aten::_unsafe_view", [([B, T, H, D], "float32")], out=[B, T, H * D], time=0)]
    findings = diagnose(report(ops), rules=["layout-copy"])
    assert findings[0].evidence["count"] == 1


def test_copies_that_are_not_layout_fixes_are_silent():
    contiguous = ([B, T, H * D], "float32")
    cache_slice = ([B, H, T, D], "float32", [H * 64 * D, 64 * D, D, 1])
    broadcast = ([B, T, H, D], "float32", [0, 0, 0, 1])
    ops = [
        op("aten::clone", [contiguous], out=[B, T, H * D]),
        op("aten::copy_", [cache_slice, ([B, H, T, D], "float32", [H * T * D, D, H * D, 1])]),
        op("aten::_to_copy", [TRANSPOSED], out=[B, T, H, D], out_dtype="float16"),
        op("aten::clone", [broadcast], out=[B, T, H, D]),
    ]
    assert diagnose(report(ops), rules=["layout-copy"]) == []


def test_bmm_on_an_operand_blas_cannot_read_in_place_is_found():
    bad = ([B * H, T, D], "float32", [1, B * H * D, B * H])
    good = ([B * H, D, T], "float32", contiguous_strides([B * H, D, T]))
    findings = diagnose(report([op("aten::bmm", [bad, good], out=[B * H, T, T], time=1e-5)]), rules=["layout-copy"])
    assert len(findings) == 1 and "BLAS" in findings[0].title
    transposed_ok = ([B * H, T, D], "float32", [T * D, 1, T])
    assert diagnose(report([op("aten::bmm", [transposed_ok, good], out=[B * H, T, T])]), rules=["layout-copy"]) == []


def test_a_copy_made_once_while_its_module_runs_many_times_is_silent():
    """A prefill's one layout copy, then cached decode steps whose [B, 1, H, D] outputs need no copy."""
    ops = [op("aten::clone", [TRANSPOSED], out=[B, T, H, D], module="layers.0.attn", source="model.py:55")]
    ops += [op("aten::mm", [([B, H * D], "float32"), ([H * D, H * D], "float32")], module="layers.0.attn.wo",
               source="model.py:56") for _ in range(8)]
    assert diagnose(report(ops), rules=["layout-copy"]) == []
    every_call = ops + [op("aten::clone", [TRANSPOSED], out=[B, T, H, D], module="layers.0.attn",
                           source="model.py:55") for _ in range(7)]
    assert len(diagnose(report(every_call), rules=["layout-copy"])) == 1
