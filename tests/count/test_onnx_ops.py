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
    packed, _ = count_onnx_node("Attention", [x, bias], [x], {"num_heads": 4})  # weight prepacked (CLIP, ORT 1.32)
    assert (packed.flops, packed.bytes) == (att.flops, att.bytes)


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


def _t(*shape, dtype="float32"):
    return T(tuple(shape), dtype)


def test_onnx_lstm_gru_rnn_count_gate_products_and_cells_like_the_aten_rnns():
    x = _t(12, 2, 32)  # 24 tokens
    w, r, b = _t(2, 128, 32), _t(2, 128, 32), _t(2, 256)
    y = _t(12, 2, 2, 32)
    cost, aten = count_onnx_node("LSTM", [x, w, r, b], [y], {"direction": b"bidirectional"})
    # per token and direction: 2 * (128*32 + 128*32) products + 36 FLOPs per hidden unit (count/rnn.py)
    assert (aten, cost.flops) == ("aten::lstm", 24 * 2 * (2 * (128 * 32 + 128 * 32) + 36 * 32))
    assert cost.bytes == x.nbytes + w.nbytes + r.nbytes + b.nbytes + y.nbytes
    gru, _ = count_onnx_node("GRU", [x, _t(1, 96, 32), _t(1, 96, 32)], [_t(12, 1, 2, 32)], {})
    assert gru.flops == 24 * (2 * 2 * 96 * 32 + 26 * 32)
    rnn, aten = count_onnx_node("RNN", [x, _t(1, 32, 32), _t(1, 32, 32)], [_t(12, 1, 2, 32)],
                                {"activations": [b"Relu"]})
    assert (aten, rnn.flops) == ("aten::rnn_relu", 24 * (2 * 2 * 32 * 32 + 4 * 32))


@pytest.mark.parametrize("mode,aten,per_out", [(b"nearest", "aten::upsample_nearest2d", 0),
                                               (b"linear", "aten::upsample_bilinear2d", 7),
                                               (b"cubic", "aten::upsample_bicubic2d", 31)])
def test_resize_is_the_aten_upsample_of_its_mode(mode, aten, per_out):
    x, y = _t(1, 8, 16, 16), _t(1, 8, 32, 32)
    cost, name = count_onnx_node("Resize", [x, None, _t(4)], [y], {"mode": mode})
    assert (name, cost.flops, cost.bytes) == (aten, per_out * y.numel, x.nbytes + y.nbytes)
    up, _ = count_onnx_node("Upsample", [x, _t(4)], [y], {"mode": mode})
    assert up.flops == cost.flops
    if mode == b"linear":  # opset 7's Upsample spelled it bilinear
        assert count_onnx_node("Upsample", [x], [y], {"mode": b"bilinear"})[0].flops == cost.flops


def test_float_ops_mapped_to_their_aten_formulas():
    x = _t(2, 8, 16)
    inorm, aten = count_onnx_node("InstanceNormalization", [_t(1, 8, 4, 4), _t(8), _t(8)], [_t(1, 8, 4, 4)], {})
    assert (aten, inorm.flops) == ("aten::native_group_norm", (5 + 2) * 128)  # 5 + affine 2 per element
    assert inorm.bytes == 2 * 128 * 4 + 2 * 8 * 4
    gn, _ = count_onnx_node("GroupNormalization", [_t(1, 8, 4, 4), _t(8), _t(8)], [_t(1, 8, 4, 4)], {"num_groups": 2})
    assert gn.flops == inorm.flops
    ein, aten = count_onnx_node("Einsum", [x, x], [_t(2, 8, 8)], {"equation": b"bci,bdi->bcd"})
    assert (aten, ein.flops) == ("aten::einsum", 2 * 2 * 8 * 8 * 16)
    assert ein.bytes == 2 * x.nbytes + 2 * 64 * 4
    cs, aten = count_onnx_node("CumSum", [x, _t(dtype="int64")], [x], {})
    assert (aten, cs.flops) == ("aten::cumsum", x.numel)
    tri, aten = count_onnx_node("Trilu", [x], [x], {"upper": 0})
    assert (aten, tri.flops, tri.bytes) == ("aten::tril", 0, 2 * x.nbytes)
    top, aten = count_onnx_node("TopK", [x, _t(1, dtype="int64")], [_t(2, 8, 3), _t(2, 8, 3, dtype="int64")], {})
    assert aten == "aten::topk"
    assert top.flops == count_op("aten::topk", [x, 3, 2], None, [_t(2, 8, 3), _t(2, 8, 3, dtype="int64")]).flops > 0
    grid = _t(1, 4, 4, 2)
    gs, aten = count_onnx_node("GridSample", [_t(1, 8, 8, 8), grid], [_t(1, 8, 4, 4)], {"mode": b"bilinear"})
    assert gs.flops == count_op("aten::grid_sampler_2d", [_t(1, 8, 8, 8), grid, 0, 0, False], None,
                                [_t(1, 8, 4, 4)]).flops
    idx, upd = _t(2, 8, 2, dtype="int64"), _t(2, 8, 2)
    sc, aten = count_onnx_node("ScatterElements", [x, idx, upd], [x], {"axis": 2})
    assert (aten, sc.bytes) == ("aten::scatter", x.nbytes + idx.nbytes + upd.nbytes + x.nbytes)
    nd, _ = count_onnx_node("ScatterND", [x, _t(3, 2, dtype="int64"), _t(3, 16)], [x], {"reduction": b"add"})
    assert (nd.flops, nd.bytes) == (48, 2 * x.nbytes + 48 + 3 * 16 * 4)


def test_detection_ops_nms_and_roi_align():
    boxes, scores, sel = _t(1, 64, 4), _t(1, 3, 64), _t(10, 3, dtype="int64")
    nms, _ = count_onnx_node("NonMaxSuppression", [boxes, scores], [sel], {})
    assert nms.flops == 3 * (13 * 64 * 63 / 2 + 3 * 64 + 64 * 6)  # per class: every pair's IoU, areas, sort
    assert "upper bound" in nms.note
    thresholded, _ = count_onnx_node("NonMaxSuppression", [boxes, scores, _t(1, dtype="int64"), _t(1), _t(1)],
                                     [sel], {})
    assert thresholded.flops == nms.flops + 3 * 64  # the score threshold: one compare per box and class
    x, rois, bi, y = _t(1, 8, 16, 16), _t(5, 4), _t(5, dtype="int64"), _t(5, 8, 7, 7)
    roi, _ = count_onnx_node("RoiAlign", [x, rois, bi], [y], {"sampling_ratio": 2})
    assert roi.flops == y.numel * 4 * 8
    assert roi.bytes == min(x.nbytes * 5, y.numel * 4 * 4 * 4) + rois.nbytes + bi.nbytes + y.nbytes


def test_data_dependent_ops_and_control_flow():
    x, idx = _t(1, 100), _t(2, 37, dtype="int64")
    nz, aten = count_onnx_node("NonZero", [x], [idx], {})
    assert (aten, nz.flops, nz.bytes) == ("aten::nonzero", 100, x.nbytes + idx.nbytes)
    g, _ = count_onnx_node("GatherND", [_t(100, 4), _t(37, 1, dtype="int64")], [_t(37, 4)], {})
    assert g.bytes == 2 * 37 * 4 * 4 + 37 * 8
    branch, aten = count_onnx_node("If", [_t(dtype="bool")], [x], {})
    assert (branch.modeled, aten) == (False, "") and "counted twice" in branch.note
    assert "If" not in modelled_op_types()


def test_transformer_contrib_ops():
    x, bias = _t(2, 16, 64), _t(64)
    fg, aten = count_onnx_node("FastGelu", [x, bias], [x], {})
    assert (aten, fg.flops) == ("aten::add + aten::gelu", x.numel + count_op("aten::gelu", [x], None, [x]).flops)
    split, _ = count_onnx_node("BiasSplitGelu", [_t(2, 16, 128), _t(128)], [x], {})
    assert split.flops == 2 * x.numel + count_op("aten::gelu", [x], None, [x]).flops + x.numel
    ba, _ = count_onnx_node("BiasAdd", [x, bias, x], [x], {})
    assert (ba.flops, ba.bytes) == (2 * x.numel, 3 * x.nbytes + bias.nbytes)
    rot, _ = count_onnx_node("RotaryEmbedding", [x, _t(2, 16, dtype="int64"), _t(32, 8), _t(32, 8)], [x], {})
    assert rot.flops == 3 * x.numel
    assert rot.bytes == 2 * x.nbytes + 32 * 8 + 2 * 16 * 8 * 4  # ids, two caches' 16 rows used
    q, kv = _t(1, 4, 64), _t(1, 4, 32)
    past, present = _t(1, 2, 10, 16), _t(1, 2, 14, 16)
    gqa, aten = count_onnx_node("GroupQueryAttention", [q, kv, kv, past, past], [q, present, present],
                                {"num_heads": 4, "kv_num_heads": 2})
    sdpa = count_op("aten::scaled_dot_product_attention", [_t(1, 4, 4, 16), _t(1, 4, 14, 16), _t(1, 4, 14, 16)])
    assert (aten, gqa.flops) == ("aten::scaled_dot_product_attention", sdpa.flops)
    assert gqa.bytes == q.nbytes + 2 * kv.nbytes + 2 * past.nbytes + q.nbytes + 2 * present.nbytes


def test_conv_transpose_with_groups_and_output_padding():
    x, w, y = _t(1, 8, 8, 8), _t(8, 4, 3, 3), _t(1, 8, 16, 16)
    cost, aten = count_onnx_node("ConvTranspose", [x, w], [y], {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1],
                                                                "output_padding": [1, 1]})
    assert (aten, cost.flops) == ("aten::convolution", 2 * 1 * (8 * 4 * 3 * 3) * 64)  # input's spatial size
    assert cost.bytes == x.nbytes + w.nbytes + y.nbytes


def test_every_new_op_type_is_listed_as_modelled():
    wanted = {"LSTM", "GRU", "RNN", "Resize", "Upsample", "Einsum", "TopK", "NonMaxSuppression", "RoiAlign",
              "ScatterND", "ScatterElements", "CumSum", "GridSample", "InstanceNormalization", "GroupNormalization",
              "Trilu", "OneHot", "FastGelu", "QuickGelu", "BiasAdd", "BiasSplitGelu", "GroupQueryAttention",
              "RotaryEmbedding", "SkipSimplifiedLayerNormalization", "MatMulNBits", "GatherBlockQuantized",
              "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
              "QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool", "QLinearSigmoid", "MatMulInteger",
              "ConvInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QGemm", "QAttention", "QOrderedMatMul",
              "NonZero", "GatherND", "NhwcMaxPool"}
    assert wanted - modelled_op_types() == set()


# quantized ops (count/onnx_quant.py): integer MACs as FLOPs like the float op's; bytes at the real dtypes

def test_quantize_and_dequantize_linear_are_elementwise_at_their_real_dtypes():
    x, s, zp, y = _t(1, 8, 4, 4), _t(), _t(dtype="uint8"), _t(1, 8, 4, 4, dtype="uint8")
    q, aten = count_onnx_node("QuantizeLinear", [x, s, zp], [y], {})
    assert (aten, q.flops, q.bytes) == ("aten::quantize_per_tensor", 4 * 128, 128 * 4 + 4 + 1 + 128)
    d, aten = count_onnx_node("DequantizeLinear", [y, s, zp], [x], {})
    assert (aten, d.flops, d.bytes) == ("aten::dequantize", 2 * 128, 128 + 4 + 1 + 128 * 4)
    dyn, _ = count_onnx_node("DynamicQuantizeLinear", [x], [y, s, zp], {})
    assert (dyn.flops, dyn.bytes) == (6 * 128, 128 * 4 + 128 + 4 + 1)


def test_qlinear_conv_counts_the_convolution_on_int8_operands():
    from roofline.count.onnx_quant import compute_dtype

    x, w, b = _t(1, 8, 16, 16, dtype="uint8"), _t(16, 8, 3, 3, dtype="int8"), _t(16, dtype="int32")
    s, zpu, ws, wzp = _t(), _t(dtype="uint8"), _t(16), _t(16, dtype="int8")
    y = _t(1, 16, 16, 16, dtype="uint8")
    ins = [x, s, zpu, w, ws, wzp, s, zpu, b]
    cost, aten = count_onnx_node("QLinearConv", ins, [y], {"pads": [1, 1, 1, 1]})
    assert (aten, cost.flops) == ("aten::convolution", 2 * (16 * 8 * 9) * 256)  # = the float conv's FLOPs
    assert cost.bytes == 2048 + 1152 + 64 + (4 + 64 + 4) + (1 + 16 + 1) + 4096  # x, w, int32 bias, scales, zps, y
    assert compute_dtype("QLinearConv", ins) == "uint8"
    nhwc, _ = count_onnx_node("QLinearConv", [_t(1, 16, 16, 8, dtype="uint8")] + ins[1:],
                              [_t(1, 16, 16, 16, dtype="uint8")], {"channels_last": 1, "pads": [1, 1, 1, 1]})
    assert nhwc.flops == cost.flops


def test_integer_matmuls():
    a, b = _t(4, 32, dtype="uint8"), _t(32, 16, dtype="int8")
    s, zp = _t(), _t(dtype="uint8")
    y8, y32, yf = _t(4, 16, dtype="uint8"), _t(4, 16, dtype="int32"), _t(4, 16)
    products = 2 * 4 * 32 * 16
    qmm, _ = count_onnx_node("QLinearMatMul", [a, s, zp, b, s, _t(dtype="int8"), s, zp], [y8], {})
    assert (qmm.flops, qmm.bytes) == (products, 128 + 512 + 3 * 4 + 3 * 1 + 64)
    mmi, _ = count_onnx_node("MatMulInteger", [a, b, zp], [y32], {})
    assert (mmi.flops, mmi.bytes) == (products, 128 + 512 + 1 + 256)
    af, bias = _t(4, 32), _t(16)
    dqm, _ = count_onnx_node("DynamicQuantizeMatMul", [af, b, _t(16), _t(16, dtype="int8"), bias], [yf], {})
    assert dqm.flops == 6 * 128 + products + 2 * 64 + 64
    itf, _ = count_onnx_node("MatMulIntegerToFloat", [a, b, s, _t(16), zp, _t(16, dtype="int8"), bias], [yf], {})
    assert itf.flops == products + 64 + 64
    qg, _ = count_onnx_node("QGemm", [a, s, zp, _t(16, 32, dtype="int8"), s, _t(dtype="int8"), _t(16, dtype="int32")],
                            [y8], {"transB": 1})
    assert qg.flops == products  # aten::addmm counts the products only


def test_qlinear_elementwise_and_pooling():
    a, s, zp = _t(1, 8, 4, 4, dtype="uint8"), _t(), _t(dtype="uint8")
    add, aten = count_onnx_node("QLinearAdd", [a, s, zp, a, s, zp, s, zp], [a], {})
    assert (aten, add.flops, add.bytes) == ("aten::add", 128, 3 * 128 + 3 * 5)
    pool, _ = count_onnx_node("QLinearGlobalAveragePool", [a, s, zp, s, zp], [_t(1, 8, 1, 1, dtype="uint8")], {})
    assert pool.flops == count_op("aten::_adaptive_avg_pool2d", [_t(1, 8, 4, 4), [1, 1]], None,
                                  [_t(1, 8, 1, 1)]).flops
    nhwc, aten = count_onnx_node("NhwcMaxPool", [_t(1, 8, 8, 4, dtype="uint8")], [_t(1, 4, 4, 4, dtype="uint8")],
                                 {"kernel_shape": [2, 2], "strides": [2, 2]})
    assert (aten, nhwc.flops, nhwc.bytes) == ("aten::max_pool2d_with_indices", 4 * 64, 256 + 64)
    sig, aten = count_onnx_node("QLinearSigmoid", [a, s, zp, s, zp], [a], {})
    assert (aten, sig.flops) == ("aten::sigmoid", 4 * 128)


def test_int4_weight_only_matmul_nbits_and_gather_block_quantized():
    a, y = _t(1, 16, 64), _t(1, 16, 128)
    packed, scales = _t(128, 2, 16, dtype="uint8"), _t(128, 2)  # N=128, K=64 in blocks of 32, 4 bits
    cost, _ = count_onnx_node("MatMulNBits", [a, packed, scales], [y], {"K": 64, "N": 128, "bits": 4,
                                                                         "block_size": 32})
    assert cost.flops == 2 * 16 * 64 * 128 + 2 * 64 * 128
    assert cost.bytes == a.nbytes + 128 * 32 + scales.nbytes + y.nbytes  # the weight at half a byte an element
    table, ids = _t(200, 32, dtype="uint8"), _t(1, 10, dtype="int64")
    g, _ = count_onnx_node("GatherBlockQuantized", [table, ids, _t(200, 2)], [_t(1, 10, 64)], {})
    assert g.flops == 2 * 640
    assert g.bytes == ids.nbytes + 10 / 200 * (200 * 32 + 200 * 2 * 4) + 640 * 4


def test_qattention_is_attention_on_the_quantized_input_and_weight():
    x, w, bias = _t(2, 16, 64, dtype="uint8"), _t(64, 192, dtype="int8"), _t(192)
    s, zp, mask = _t(), _t(dtype="uint8"), _t(2, dtype="int32")
    y = _t(2, 16, 64)
    q, aten = count_onnx_node("QAttention", [x, w, bias, s, s, mask, zp, _t(dtype="int8")], [y], {"num_heads": 4})
    sdpa = count_op("aten::scaled_dot_product_attention", [_t(2, 4, 16, 16, dtype="uint8")] * 3).flops
    assert (aten, q.flops) == ("aten::addmm + aten::scaled_dot_product_attention", 2 * 32 * 64 * 192 + sdpa)
    assert q.bytes == x.nbytes + w.nbytes + bias.nbytes + 2 * 4 + mask.nbytes + 2 + y.nbytes
    om, _ = count_onnx_node("QOrderedMatMul", [_t(4, 32, dtype="int8"), _t(), _t(32, 16, dtype="int8"), _t(), _t()],
                            [_t(4, 16, dtype="int8")], {})
    assert (om.flops, om.bytes) == (2 * 4 * 32 * 16, 128 + 512 + 3 * 4 + 64)


def test_qembed_layer_norm_adds_the_tables_dequantisation_to_embed_layer_norm():
    ids = _t(1, 16, dtype="int32")
    tables = [_t(200, 64, dtype="uint8"), _t(64, 64, dtype="uint8"), _t(2, 64, dtype="uint8")]
    gamma, beta = _t(64, dtype="uint8"), _t(64, dtype="uint8")
    y, mask = _t(1, 16, 64), _t(1, dtype="int32")
    float_tables = [_t(200, 64), _t(64, 64), _t(2, 64)]
    plain, _ = count_onnx_node("EmbedLayerNormalization", [ids, ids, *float_tables, _t(64), _t(64)], [y, mask], {})
    scales = [_t() for _ in range(5)]
    q, aten = count_onnx_node("QEmbedLayerNormalization", [ids, ids, *tables, gamma, beta, None, *scales], [y, mask], {})
    assert q.flops == plain.flops + 2 * 3 * y.numel
    assert q.bytes == 2 * ids.nbytes + sum(t.nbytes for t in tables) + 128 + 5 * 4 + y.nbytes + mask.nbytes
    assert aten.endswith("aten::dequantize")


def test_one_hot_writes_its_output():
    ids, depth, values, y = _t(4, 8, dtype="int64"), _t(1, dtype="int64"), _t(2), _t(4, 8, 10)
    cost, _ = count_onnx_node("OneHot", [ids, depth, values], [y], {"axis": -1})
    assert (cost.flops, cost.bytes) == (0, ids.nbytes + 8 + 8 + y.nbytes)


def test_dynamic_quantize_lstm_is_the_lstm_with_transposed_int8_weights():
    x, y = _t(12, 2, 32), _t(12, 1, 2, 32)
    lstm, _ = count_onnx_node("LSTM", [x, _t(1, 128, 32), _t(1, 128, 32)], [y], {})
    w, r = _t(1, 32, 128, dtype="int8"), _t(1, 32, 128, dtype="int8")
    scales = [_t(1), _t(1, dtype="int8"), _t(1), _t(1, dtype="int8")]
    q, aten = count_onnx_node("DynamicQuantizeLSTM", [x, w, r, None, None, None, None, None, *scales], [y], {})
    assert (aten, q.flops) == ("aten::lstm", lstm.flops)
    assert q.bytes == x.nbytes + w.nbytes + r.nbytes + 2 * 4 + 2 * 1 + y.nbytes
