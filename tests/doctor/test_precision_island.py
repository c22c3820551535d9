import pytest

from doctor_cases import op, report
from roofline.doctor import diagnose

X = [1, 8, 64]
R = [1, 8, 1]


def _norm_in_fp32(m: str, h: str, record_out_dtypes: bool) -> list:
    """Hugging Face's RMSNorm: the variance and the scaling in fp32, then the cast back."""
    return [
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


def _act_in_fp32(m: str, h: str, record_out_dtypes: bool) -> list:
    """An activation computed on an upcast copy of the activation: plain fp32 elementwise work, an island."""
    return [
        op("aten::_to_copy", [(X, h)], out=X, out_dtype="float32" if record_out_dtypes else None,
           module=m, source="model.py:30", time=3e-6),
        op("aten::gelu", [(X, "float32")], out=X, module=m, source="model.py:31", time=8e-6),
        op("aten::mul", [(X, "float32")], out=X, module=m, source="model.py:31", time=4e-6),
        op("aten::_to_copy", [(X, "float32")], out=X, out_dtype=h if record_out_dtypes else None,
           module=m, source="model.py:32", time=3e-6),
    ]


def _in_model_dtype(m: str, h: str, record_out_dtypes: bool) -> list:
    return [
        op("aten::pow", [(X, h)], out=X, module=m, source="model.py:31"),
        op("aten::mean", [(X, h)], out=R, module=m, source="model.py:31"),
        op("aten::add", [(R, h)], out=R, module=m, source="model.py:31"),
        op("aten::rsqrt", [(R, h)], out=R, module=m, source="model.py:31"),
        op("aten::mul", [(X, h), (R, h)], out=X, module=m, source="model.py:31"),
        op("aten::mul", [(X, h), ([64], h)], out=X, module=m, source="model.py:32"),
    ]


def _model(block=_in_model_dtype, *, record_out_dtypes: bool = True, model_dtype: str = "float16",
           fp32_linear: bool = False):
    h = model_dtype
    ops = [op("aten::mm", [([8, 64], h), ([64, 64], h)], out=[8, 64], flops=2 * 8 * 64 * 64, bound="compute",
              module="layers.0.attn.wq")]
    for layer in range(2):
        ops += block(f"layers.{layer}.norm", h, record_out_dtypes)
        w = "float32" if fp32_linear and layer == 1 else h
        ops.append(op("aten::mm", [([8, 64], w), ([64, 64], w)], out=[8, 64], flops=2 * 8 * 64 * 64,
                      bound="compute", module=f"layers.{layer}.mlp", time=2e-5))
    return report(ops)


def test_fp32_activation_in_fp16_model_is_an_island_with_its_casts():
    findings = diagnose(_model(_act_in_fp32), rules=["precision-island"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["model_dtype"] == "float16"
    assert f.evidence["casts_up"] == 2 and f.evidence["casts_down"] == 2
    assert f.evidence["fp32_ops"] == 4 and f.evidence["fp32_op_kinds"] == ["gelu", "mul"]
    assert "layers.*.norm" in f.title and "by design" not in f.title
    assert any(loc.startswith("model.py:30") for loc in f.locations)
    casts = 4 * 3e-6
    fp32 = 2 * (8 + 4) * 1e-6
    assert f.estimated_savings_s == pytest.approx(casts + fp32 / 2)


def test_cast_direction_is_inferred_when_output_dtypes_are_missing():
    findings = diagnose(_model(_act_in_fp32, record_out_dtypes=False), rules=["precision-island"])
    assert findings and findings[0].evidence["casts_up"] == 2 and findings[0].evidence["casts_down"] == 2


def test_a_norm_upcast_to_fp32_is_by_design_told_once_with_no_savings():
    """The variance in fp32 is deliberate: no island to remove, one informational line for its time (45 us of
    137 us here) with its casts, and no estimated savings."""
    findings = diagnose(_model(_norm_in_fp32), rules=["precision-island"])
    assert len(findings) == 1
    (note,) = findings
    assert note.title.startswith("fp32 by design in a float16 model, not an island to remove: mean kept for")
    assert note.severity == "info" and note.estimated_savings_s == 0.0
    assert note.evidence["ops"] == 14 and note.evidence["places"] == ["layers.*.norm"]
    assert note.evidence["time_s"] == pytest.approx(2 * (3 + 4 + 4 + 2 + 2 + 4 + 3) * 1e-6)


def test_an_fp32_matmul_next_to_a_norm_kept_by_design_is_still_an_island():
    findings = diagnose(_model(_norm_in_fp32, fp32_linear=True), rules=["precision-island"])
    (island,) = [f for f in findings if f.title.startswith("fp32 island")]
    assert island.evidence["fp32_op_kinds"] == ["mm"] and "layers.*.mlp" in island.title
    assert island.estimated_savings_s == pytest.approx(2e-5 * (1 - 1e12 / 4e12))  # compute-bound: the roofs' ratio
    assert findings[0] is island  # ranked above the zero-savings note


def test_norm_in_the_model_dtype_is_silent():
    assert diagnose(_model(), rules=["precision-island"]) == []


def test_an_fp32_model_has_no_islands():
    assert diagnose(_model(model_dtype="float32"), rules=["precision-island"]) == []


def test_an_activation_after_a_norm_autocast_keeps_in_fp32_is_the_islands_only_work():
    """Autocast runs group_norm in fp32 (by design) and the SiLU after it then runs in fp32 too: only the SiLU is
    island work, and the casts, which the norm needs anyway, are not counted as saved."""
    h, m = "bfloat16", "up.norm"
    ops = [op("aten::convolution", [(X, h), ([64, 64, 1], h)], out=X, flops=1e6, bound="compute", module="up.conv")]
    for _ in range(2):
        ops += [op("aten::_to_copy", [(X, h)], out=X, out_dtype="float32", module=m, time=3e-6),
                op("aten::native_group_norm", [(X, "float32")], out=X, module=m, time=6e-6),
                op("aten::silu", [(X, "float32")], out=X, module=m, time=4e-6),
                op("aten::_to_copy", [(X, "float32")], out=X, out_dtype=h, module=m, time=3e-6)]
    island, note = diagnose(report(ops), rules=["precision-island"])
    assert island.evidence["fp32_op_kinds"] == ["silu"] and island.evidence["fp32_by_design_kinds"] == [
        "native_group_norm"]
    assert island.title.endswith("x2 in up.norm (native_group_norm kept in fp32 by design)")
    assert island.estimated_savings_s == pytest.approx(2 * 4e-6 / 2)
    assert note.evidence["time_s"] == pytest.approx(2 * (3 + 6 + 3) * 1e-6)


def test_a_losss_backward_is_kept_by_design_with_its_forward():
    """`loss = out.float().square().mean()`: the backward's div and muls hold no reduction of their own, but they
    are the gradient of a forward kept in fp32 by design at the same place."""
    h, big = "float16", [4, 8, 64]
    mm = op("aten::mm", [([8, 64], h), ([64, 64], h)], out=[8, 64], flops=1e6, bound="compute", module="model.fc")
    loss = dict(module="", source="train.py:12")
    ops = [mm,
           op("aten::_to_copy", [(big, h)], out=big, out_dtype="float32", **loss),
           op("aten::pow", [(big, "float32")], out=big, **loss),
           op("aten::mean", [(big, "float32")], out=[], **loss),
           op("aten::fill", [([], h)], out=[], phase="backward", **loss),  # the loss's gradient, in half
           op("aten::div", [(big, "float32")], out=big, phase="backward", **loss),
           op("aten::mul", [(big, "float32"), (big, "float32")], out=big, phase="backward", **loss),
           op("aten::_to_copy", [(big, "float32")], out=big, out_dtype=h, phase="backward", **loss)]
    findings = diagnose(report(ops), rules=["precision-island"])
    assert [f.title.split(":")[0] for f in findings] == ["fp32 by design in a float16 model, not an island to remove"]
    assert findings[0].evidence["ops"] == 6


def test_filling_fp32_parameters_is_no_island_but_arithmetic_after_it_is():
    """A profile of a whole short script holds the model's initialisation: its fp32 parameters filled (normal_,
    fill_, zero_) before the model is cast to half are no fp32 work to remove; an fp32 multiply after a fill is."""
    h = "float16"
    init = [op("aten::normal_", [([64, 64], "float32")], out=[64, 64], module="", source="train.py:10", time=5e-5),
            op("aten::fill_", [([64], "float32")], out=[64], module="", source="train.py:11", time=1e-5),
            op("aten::zero_", [([64], "float32")], out=[64], module="", source="train.py:11", time=1e-5)]
    ops = init + [op("aten::mm", [([8, 64], h), ([64, 64], h)], out=[8, 64], flops=2 * 8 * 64 * 64,
                     bound="compute", module="mlp", time=2e-5)]
    assert not [f for f in diagnose(report(ops)) if f.rule == "precision-island"]
    scaled = init + [op("aten::mul", [([64, 64], "float32")], out=[64, 64], module="", source="train.py:12",
                        time=4e-5)] + ops[3:]
    (found,) = [f for f in diagnose(report(scaled)) if f.rule == "precision-island"]
    assert "mul" in found.evidence["fp32_op_kinds"] and found.estimated_savings_s > 0


def test_autocast_gradient_accumulation_into_fp32_grads_is_no_island():
    """Under autocast with gradient accumulation, each fp32 weight's bf16 gradient is upcast (the backward of
    autocast's cast down) and added to its fp32 .grad: the doctor called that an 'fp32 island in train.py' and
    told the user to drop a .float() they never wrote (sweep 6). An fp32 multiply after the same upcast still is."""
    h, w = "bfloat16", [256, 64]
    mm = op("aten::mm", [([32, 64], h), ([64, 256], h)], out=[32, 256], flops=2 * 32 * 64 * 256, bound="compute",
            module="net.0")
    up = op("aten::_to_copy", [(w, h)], out=w, out_dtype="float32", phase="backward", module="", source="t.py:11")
    accumulate = op("aten::add_", [(w, "float32"), (w, "float32")], out=w, phase="backward", module="",
                    source="t.py:11")
    scale = op("aten::mul", [(w, "float32"), (w, "float32")], out=w, phase="backward", module="", source="t.py:11")
    island = [f for f in diagnose(report([mm, up, accumulate, mm])) if f.rule == "precision-island"]
    assert island == []
    island = [f for f in diagnose(report([mm, up, scale, mm])) if f.rule == "precision-island"]
    assert len(island) == 1 and island[0].evidence["fp32_op_kinds"] == ["mul"]
