"""ONNX nodes counted through the aten formulas (count/onnx_ops.py): values per mapped family."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from roofline.count.onnx_ops import count_onnx_node, modelled_op_types


def test_conv_is_aten_convolution_and_groups_come_from_the_weight():
    x, w, b, y = T((1, 8, 16, 16), "float32"), T((8, 1, 3, 3), "float32"), T((8,), "float32"), T((1, 8, 16, 16), "float32")
    cost, aten = count_onnx_node("Conv", [x, w, b], [y], {})  # depthwise: no group attribute, 8 in / 1 per group
    assert aten == "aten::convolution"
    assert cost.flops == 2 * 1 * (8 * 1 * 3 * 3) * 256
    assert cost.bytes == x.nbytes + w.nbytes + b.nbytes + y.nbytes
    assert cost.flops == count_op("aten::convolution", [x, w, b, 1, 1, 1, False, None, 8], None, [y]).flops


def test_fused_nchwc_conv_adds_its_residual_and_activation_and_reads_each_input_once():
    x, w, s, y = T((1, 4, 8, 8), "float32"), T((4, 4, 1, 1), "float32"), T((1, 4, 8, 8), "float32"), T((1, 4, 8, 8), "float32")
    cost, aten = count_onnx_node("Conv", [x, w, None, s], [y], {"activation": "Relu"}, "com.microsoft.nchwc")
    assert cost.flops == 2 * 16 * 64 + 256 + 256  # conv + residual add + relu, one FLOP per element each
    assert cost.bytes == x.nbytes + w.nbytes + s.nbytes + y.nbytes
    assert aten == "aten::convolution + aten::add + aten::relu"


def test_a_nchwc_conv_with_a_fused_hardswish_is_modelled():
    """ORT fuses MobileNetV3's Conv + HardSwish into one NCHWc Conv (seen on an exported torchvision model)."""
    x, w, y = T((1, 4, 8, 8), "float32"), T((4, 4, 1, 1), "float32"), T((1, 4, 8, 8), "float32")
    cost, aten = count_onnx_node("Conv", [x, w, None], [y], {"activation": "HardSwish"}, "com.microsoft.nchwc")
    assert (aten, cost.modeled) == ("aten::convolution + aten::hardswish", True)
    assert cost.flops == 2 * 16 * 64 + 3 * 256  # conv + hardswish's 3 FLOPs per element


@pytest.mark.parametrize("b_shape,attrs", [((16, 32), {}), ((32, 16), {"transB": 1}), ((32, 16), {})])
def test_gemm_transposes_from_attributes_or_shapes(b_shape, attrs):
    a, b, c, y = T((4, 16), "float32"), T(b_shape, "float32"), T((32,), "float32"), T((4, 32), "float32")
    cost, aten = count_onnx_node("Gemm", [a, b, c], [y], attrs)
    assert (aten, cost.flops) == ("aten::addmm", 2 * 4 * 16 * 32)
    assert cost.bytes == a.nbytes + b.nbytes + c.nbytes + y.nbytes


def test_a_prepacked_weight_the_profile_leaves_out_is_inferred():
    a, c, y = T((1, 512), "float32"), T((1000,), "float32"), T((1, 1000), "float32")
    cost, _ = count_onnx_node("Gemm", [a, c], [y], {})
    assert cost.flops == 2 * 512 * 1000
    assert cost.bytes == a.nbytes + 512 * 1000 * 4 + c.nbytes + y.nbytes
    m, _ = count_onnx_node("MatMul", [T((1, 8, 64), "float32")], [T((1, 8, 256), "float32")], {})
    assert m.flops == 2 * 8 * 64 * 256


def test_views_move_nothing_copies_read_and_write():
    x = T((2, 3, 4), "float32")
    view, _ = count_onnx_node("Reshape", [x, T((2,), "int64")], [T((6, 4), "float32")])
    assert (view.flops, view.bytes, view.is_view) == (0, 0, True)
    tr, _ = count_onnx_node("Transpose", [x], [T((4, 3, 2), "float32")], {"perm": [2, 1, 0]})
    assert (tr.flops, tr.bytes) == (0, 2 * x.nbytes)
    cast, aten = count_onnx_node("Cast", [x], [T((2, 3, 4), "float16")], {"to": 10})
    assert (cast.bytes, aten) == (x.nbytes + x.numel * 2, "aten::_to_copy")


def test_norms_softmax_and_attention_use_the_aten_values():
    x = T((2, 16, 64), "float32")
    g, b = T((64,), "float32"), T((64,), "float32")
    ln, aten = count_onnx_node("LayerNormalization", [x, g, b], [x], {"axis": -1})
    assert aten == "aten::native_layer_norm" and ln.flops == 7 * x.numel
    skip, _ = count_onnx_node("SkipLayerNormalization", [x, x, g, b], [x], {})
    assert skip.flops == ln.flops + x.numel  # the residual add, fused
    assert skip.bytes == 2 * x.nbytes + g.nbytes + b.nbytes + x.nbytes
    sm, _ = count_onnx_node("Softmax", [x], [x], {"axis": -1})
    assert sm.flops == 5 * x.numel
    w, bias = T((64, 192), "float32"), T((192,), "float32")
    att, aten = count_onnx_node("Attention", [x, w, bias], [x], {"num_heads": 4})
    sdpa = count_op("aten::scaled_dot_product_attention", [T((2, 4, 16, 16), "float32")] * 3).flops
    assert att.flops == 2 * 32 * 64 * 192 + sdpa
    assert aten == "aten::addmm + aten::scaled_dot_product_attention"
    att1, _ = count_onnx_node("Attention", [x, w, bias], [x], {})  # heads unknown: the same FLOPs
    assert att1.flops == att.flops


def test_batch_norm_in_inference_and_embedding_gather():
    x, p = T((1, 8, 4, 4), "float32"), T((8,), "float32")
    bn, aten = count_onnx_node("BatchNormalization", [x, p, p, p, p], [x], {"epsilon": 1e-5})
    assert (aten, bn.flops) == ("aten::native_batch_norm", 4 * x.numel)
    table, ids = T((1000, 64), "float32"), T((1, 7), "int64")
    g, aten = count_onnx_node("Gather", [table, ids], [T((1, 7, 64), "float32")], {})
    assert aten == "aten::embedding" and g.bytes == 2 * 7 * 64 * 4 + ids.nbytes


def test_an_op_without_a_formula_is_unmodelled_never_zero():
    cost, aten = count_onnx_node("NonMaxSuppression", [T((1, 10, 4), "float32")], [T((3, 3), "int64")])
    assert not cost.modeled and aten == "" and "NonMaxSuppression" in cost.note
    bad, _ = count_onnx_node("Conv", [None, None], [T((1, 1, 1, 1), "float32")])
    assert not bad.modeled


def test_every_family_the_brief_names_is_mapped():
    wanted = {"Conv", "Gemm", "MatMul", "Relu", "Add", "BatchNormalization", "LayerNormalization", "Softmax",
              "Attention", "MultiHeadAttention", "SkipLayerNormalization", "FusedConv", "FusedGemm", "FusedMatMul",
              "Transpose", "Reshape", "Cast", "Gelu", "BiasGelu", "EmbedLayerNormalization", "ReorderInput"}
    assert wanted <= modelled_op_types()


def _f32(*shape):
    return T(shape, "float32")


def test_onnx_type_strings():
    from roofline.count.onnx_ops import onnx_dtype

    assert onnx_dtype("tensor(float)") == "float32" and onnx_dtype(" Tensor(int64) ") == "int64"


def test_embed_layer_norm_is_two_lookups_an_add_and_a_layer_norm():
    ids = T((2, 3), "int64")  # 48 bytes; 6 tokens x hidden 4 = 24 elements
    ins = [ids, None, _f32(10, 4), _f32(6, 4), None, _f32(4), _f32(4)]
    cost, aten = count_onnx_node("EmbedLayerNormalization", ins, [_f32(2, 3, 4)], {}, "com.microsoft")
    assert aten == "aten::embedding + aten::embedding + aten::add + aten::native_layer_norm"
    assert cost.flops == 24 + (5 + 2) * 24  # the add, the layer norm with weight and bias
    assert cost.bytes == 48 + 16 + 16 + 96  # ids, gamma, beta read once; the output written once


def test_global_pools_map_to_the_average_or_the_max():
    x, out = _f32(1, 4, 8, 8), _f32(1, 4, 1, 1)
    assert count_onnx_node("GlobalAveragePool", [x], [out], {}) == \
        (count_op("aten::_adaptive_avg_pool2d", [x, [1, 1]], None, [out]), "aten::_adaptive_avg_pool2d")
    cost, aten = count_onnx_node("GlobalMaxPool", [x], [out], {})
    assert aten == "aten::amax" and (cost.flops, cost.bytes) == (256, 1024 + 16)


def test_matmul_transposes_and_vectors():
    # transA: (3, 4) read as (4, 3) times (3, 5): 2*4*3*5; bytes the operands as stored and the output
    assert count_onnx_node("FusedMatMul", [_f32(3, 4), _f32(3, 5)], [_f32(4, 5)], {"transA": 1},
                           "com.microsoft")[0].flops == 120
    cost, _ = count_onnx_node("FusedMatMul", [_f32(3, 4), _f32(5, 3)], [_f32(4, 5)], {"transA": 1, "transB": 1},
                              "com.microsoft")
    assert (cost.flops, cost.bytes) == (120, 48 + 60 + 80)
    # a transB the profile does not show: (3, 4) x (5, 4) -> (3, 5)
    assert count_onnx_node("MatMul", [_f32(3, 4), _f32(5, 4)], [_f32(3, 5)], {})[0].flops == 120
    cost, _ = count_onnx_node("MatMul", [_f32(3, 4), _f32(4)], [_f32(3)], {})  # matrix x vector
    assert (cost.flops, cost.bytes) == (24, 48 + 16 + 12)


def test_a_copy_to_the_same_dtype_is_a_clone_however_the_name_was_built():
    same = "".join(["float", "32"])  # equal to "float32", not the same object
    cost, aten = count_onnx_node("Cast", [_f32(4, 4)], [T((4, 4), same)], {})
    assert (cost.bytes, aten) == (64 + 64, "aten::clone")
    assert count_onnx_node("Cast", [_f32(4, 4)], [T((4, 4), "float16")], {})[1] == "aten::_to_copy"


def test_a_slice_reads_only_what_it_keeps_and_an_expand_its_source_once():
    assert count_onnx_node("Slice", [_f32(4, 4)], [_f32(2, 4)], {})[0].bytes == 32 + 32
    assert count_onnx_node("Expand", [_f32(1, 4)], [_f32(3, 4)], {})[0].bytes == 16 + 48


def test_pools_without_strides_or_pads_take_the_onnx_defaults():
    x = _f32(1, 2, 6, 6)
    cost, aten = count_onnx_node("MaxPool", [x], [_f32(1, 2, 5, 5)], {"kernel_shape": [2, 2]})
    assert aten == "aten::max_pool2d_with_indices" and cost.flops == 2 * 5 * 5 * 4  # stride 1, no padding


def test_layer_normalization_over_the_scale_dims():
    x, g = _f32(2, 3, 4), _f32(4)  # normalised over the last dim: mean and rstd (2, 3, 1) in float32
    cost, aten = count_onnx_node("LayerNormalization", [x, g, g], [], {})
    assert aten == "aten::native_layer_norm" and (cost.flops, cost.bytes) == ((5 + 2) * 24, 96 + 32 + 96 + 2 * 24)


def test_bias_softmax_is_a_broadcast_add_and_a_softmax_reading_each_input_once():
    """ORT's CUDA provider fuses BERT's softmax(scores + mask) into BiasSoftmax (seen on the H200's bert-base)."""
    x, bias, y = T((1, 12, 128, 128), "float32"), T((1, 1, 128, 128), "float32"), T((1, 12, 128, 128), "float32")
    cost, aten = count_onnx_node("BiasSoftmax", [x, bias], [y], {"axis": 3, "is_inner_broadcast": 0}, "com.microsoft")
    add = count_op("aten::add", [x, bias], None, [x]).flops
    softmax = count_op("aten::_softmax", [x, 3, False], None, [x]).flops
    assert (aten, cost.modeled) == ("aten::add + aten::_softmax", True)
    assert cost.flops == add + softmax and add == x.numel
    assert cost.bytes == x.nbytes + bias.nbytes + y.nbytes
