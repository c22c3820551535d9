import pytest

from doctor_cases import op, report
from roofline.doctor import diagnose

X = [1, 8, 64]
R = [1, 8, 1]


def _model(norm_in_fp32: bool, *, record_out_dtypes: bool = True, model_dtype: str = "float16"):
    h = model_dtype
    ops = [op("aten::mm", [([8, 64], h), ([64, 64], h)], out=[8, 64], flops=2 * 8 * 64 * 64, bound="compute",
              module="layers.0.attn.wq")]
    for layer in range(2):
        m = f"layers.{layer}.norm"
        if norm_in_fp32:
            ops += [
                op("aten::_to_copy", [(X, h)], out=X, out_dtype="float32" if record_out_dtypes else None,
                   module=m, source="model.py:30", time=3e-6),
                op("aten::pow", [(X, "float32")], out=X, module=m, source="model.py:31", time=4e-6),
                op("aten::mean", [(X, "float32")], out=R, module=m, source="model.py:31", time=4e-6),
                op("aten::add", [(R, "float32")], out=R, module=m, source="model.py:31", time=2e-6),
                op("aten::rsqrt", [(R, "float32")], out=R, module=m, source="model.py:31", time=2e-6),
                op("aten::mul", [(X, "float32"), (R, "float32")], out=X, module=m, source="model.py:31", time=4e-6),
                op("aten::_to_copy", [(X, "float32")], out=X, out_dtype=h if record_out_dtypes else None,
                   module=m, source="model.py:32", time=3e-6),
                op("aten::mul", [(X, h), ([64], h)], out=X, module=m, source="model.py:32", time=2e-6),
            ]
        else:
            ops += [
                op("aten::pow", [(X, h)], out=X, module=m, source="model.py:31"),
                op("aten::mean", [(X, h)], out=R, module=m, source="model.py:31"),
                op("aten::add", [(R, h)], out=R, module=m, source="model.py:31"),
                op("aten::rsqrt", [(R, h)], out=R, module=m, source="model.py:31"),
                op("aten::mul", [(X, h), (R, h)], out=X, module=m, source="model.py:31"),
                op("aten::mul", [(X, h), ([64], h)], out=X, module=m, source="model.py:32"),
            ]
        ops.append(op("aten::mm", [([8, 64], h), ([64, 64], h)], out=[8, 64], flops=2 * 8 * 64 * 64,
                      bound="compute", module=f"layers.{layer}.mlp"))
    return report(ops)


def test_fp32_norm_in_fp16_model_is_an_island_with_its_casts():
    findings = diagnose(_model(norm_in_fp32=True), rules=["precision-island"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["model_dtype"] == "float16"
    assert f.evidence["casts_up"] == 2 and f.evidence["casts_down"] == 2
    assert f.evidence["fp32_ops"] == 10
    assert "layers.*.norm" in f.title
    assert any(loc.startswith("model.py:30") for loc in f.locations)
    casts = 4 * 3e-6
    fp32 = 2 * (4 + 4 + 2 + 2 + 4) * 1e-6
    assert f.estimated_savings_s == pytest.approx(casts + fp32 / 2)


def test_cast_direction_is_inferred_when_output_dtypes_are_missing():
    findings = diagnose(_model(norm_in_fp32=True, record_out_dtypes=False), rules=["precision-island"])
    assert findings and findings[0].evidence["casts_up"] == 2 and findings[0].evidence["casts_down"] == 2


def test_norm_in_the_model_dtype_is_silent():
    assert diagnose(_model(norm_in_fp32=False), rules=["precision-island"]) == []


def test_an_fp32_model_has_no_islands():
    assert diagnose(_model(norm_in_fp32=False, model_dtype="float32"), rules=["precision-island"]) == []
