"""Hand-worked byte counts: each input view read once, each output written once, views move nothing."""

from __future__ import annotations

import pytest

from roofline.count import TensorMeta, count_op

MiB = 2**20


def fp32(*shape, strides=None):
    return TensorMeta(tuple(shape), "float32", strides)


def test_square_fp32_add_moves_12_mib():
    cost = count_op("aten::add", [fp32(1024, 1024), fp32(1024, 1024), 1])
    assert cost.bytes == 12 * MiB
    assert cost.flops == 1024 * 1024
    assert cost.modeled and not cost.is_view


def test_same_answer_with_recorded_outputs():
    cost = count_op("aten::add", [fp32(1024, 1024), fp32(1024, 1024)], outputs=[fp32(1024, 1024)])
    assert cost.bytes == 12 * MiB


def test_broadcast_add_reads_the_small_operand_once():
    cost = count_op("aten::add", [fp32(1024, 1024), fp32(1024)])
    assert cost.bytes == 4 * MiB + 4096 + 4 * MiB


def test_scalar_operand_moves_nothing():
    assert count_op("aten::mul", [fp32(256, 256), 0.5]).bytes == 2 * 256 * 256 * 4


def test_inplace_add_reads_both_and_writes_self_once():
    assert count_op("aten::add_", [fp32(1024, 1024), fp32(1024, 1024)]).bytes == 12 * MiB


def test_copy_between_dtypes_reads_src_and_writes_dst_at_their_dtypes():
    dst, src = TensorMeta((1024, 1024), "float16"), fp32(1024, 1024)
    assert count_op("aten::copy_", [dst, src, False]).bytes == 4 * MiB + 2 * MiB


def test_to_copy_casts_to_the_requested_dtype():
    cost = count_op("aten::_to_copy", [fp32(1024, 1024), 5, 0, None, None, False, None])  # 5 = float16 code
    assert cost.bytes == 4 * MiB + 2 * MiB


def test_op_on_a_transposed_view_counts_the_view_not_the_storage():
    """A (64, 1024) slice of a (1024, 1024) storage, transposed: 64*1024 elements read, not 1M."""
    view = fp32(1024, 64, strides=(1, 1024))
    cost = count_op("aten::mul", [view, 2.0])
    assert not view.is_contiguous
    assert cost.bytes == 2 * 1024 * 64 * 4


def test_clone_of_a_transposed_view():
    view = fp32(2048, 512, strides=(1, 2048))
    assert count_op("aten::clone", [view]).bytes == 2 * 2048 * 512 * 4


def test_contiguous_costs_nothing_when_already_contiguous():
    assert count_op("aten::contiguous", [fp32(8, 8)]).bytes == 0
    assert count_op("aten::contiguous", [fp32(8, 16, strides=(1, 8))]).bytes == 2 * 8 * 16 * 4


@pytest.mark.parametrize("name,args", [
    ("aten::view", [fp32(4, 8), [32]]),
    ("aten::t", [fp32(4, 8)]),
    ("aten::transpose", [fp32(4, 8), 0, 1]),
    ("aten::permute", [fp32(2, 3, 4), [2, 0, 1]]),
    ("aten::expand", [fp32(1, 8), [16, 8]]),
    ("aten::slice", [fp32(4, 8), 1, 0, 4, 1]),
    ("aten::select", [fp32(4, 8), 0, 1]),
    ("aten::unsqueeze", [fp32(4, 8), 0]),
    ("aten::_unsafe_view", [fp32(4, 8), [32]]),
    ("aten::as_strided", [fp32(4, 8), [8, 4], [1, 8]]),
    ("aten::split", [fp32(4, 8), 2]),
    ("aten::detach", [fp32(4, 8)]),
    ("aten::alias", [fp32(4, 8)]),
    ("aten::reshape", [fp32(4, 8), [32]]),
    ("aten::_nested_view_from_jagged", [fp32(7, 8), fp32(3), fp32(3, 3)]),  # a jagged tensor over its values
    ("aten::_nested_get_values", [fp32(7, 8)]),
])
def test_views_move_nothing(name, args):
    cost = count_op(name, args)
    assert cost == type(cost)(0.0, 0.0, True, True, "")


def test_native_layer_norm_reads_input_weight_bias_writes_output_mean_rstd():
    """(4096, 1024) fp16 input, fp16 weight and bias, fp32 mean/rstd of one element per row."""
    x = TensorMeta((4096, 1024), "float16")
    w = TensorMeta((1024,), "float16")
    cost = count_op("aten::native_layer_norm", [x, [1024], w, w, 1e-5])
    reads = 4096 * 1024 * 2 + 2 * 1024 * 2
    writes = 4096 * 1024 * 2 + 2 * 4096 * 4
    assert cost.bytes == reads + writes
    assert cost.flops == 7 * 4096 * 1024


def test_layer_norm_composite_counts_only_its_output():
    x, w = fp32(64, 256), fp32(256)
    assert count_op("aten::layer_norm", [x, [256], w, w, 1e-5, True]).bytes == 2 * 64 * 256 * 4 + 2 * 256 * 4


def test_mm_bytes():
    cost = count_op("aten::mm", [TensorMeta((512, 256), "bfloat16"), TensorMeta((256, 128), "bfloat16")])
    assert cost.bytes == (512 * 256 + 256 * 128 + 512 * 128) * 2


def test_embedding_reads_only_gathered_rows_and_indices():
    table, ids = fp32(32000, 512), TensorMeta((2, 16), "int64")
    cost = count_op("aten::embedding", [table, ids, -1, False, False])
    assert cost.bytes == 32 * 512 * 4 + 32 * 8 + 32 * 512 * 4


def test_index_select_and_gather_read_gathered_elements_and_index():
    table, index = fp32(1000, 64), TensorMeta((10,), "int64")
    assert count_op("aten::index_select", [table, 0, index]).bytes == 10 * 64 * 4 * 2 + 80
    idx = TensorMeta((8, 4), "int64")
    assert count_op("aten::gather", [fp32(8, 100), 1, idx]).bytes == 32 * 4 * 2 + 32 * 8


def test_sum_over_last_dim_writes_the_reduced_output():
    cost = count_op("aten::sum", [fp32(128, 256), [-1], False])
    assert cost.bytes == 128 * 256 * 4 + 128 * 4
    assert cost.flops == 128 * 256
    assert count_op("aten::mean", [fp32(128, 256), [-1], True]).bytes == 128 * 256 * 4 + 128 * 4
    assert count_op("aten::sum", [fp32(128, 256)]).bytes == 128 * 256 * 4 + 4


def test_fill_writes_without_reading():
    assert count_op("aten::fill_", [fp32(100, 100), 0.0]).bytes == 100 * 100 * 4
    assert count_op("aten::zero_", [fp32(100, 100)]).bytes == 100 * 100 * 4
    assert count_op("aten::empty", [[100, 100], 6]).bytes == 0


def test_cat_reads_all_and_writes_the_join():
    cost = count_op("aten::cat", [[fp32(2, 3), fp32(2, 5)], 1])
    assert cost.bytes == (6 + 10) * 4 * 2


def test_sdpa_forward_bytes_exclude_the_score_matrix():
    q = TensorMeta((2, 8, 128, 64), "float16")
    cost = count_op("aten::_scaled_dot_product_flash_attention", [q, q, q, 0.0, False])
    assert cost.bytes == 3 * q.nbytes + q.nbytes + 2 * 8 * 128 * 4
