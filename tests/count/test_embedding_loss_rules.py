"""Embedding lookups and losses by hand (count/embedding.py, count/loss.py docstrings), torch-free: lookups read
the gathered rows only, bags add 1 (2 with per-sample weights) per gathered element, backwards write the whole
table; nll gathers one log-probability per target, cross-entropy adds log_softmax's 5 per element, pointwise
losses their per-element figures, reduced to one element unless reduction is none (0)."""

from __future__ import annotations

import pytest

from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

TABLE = T((50, 6), "float16")  # rows of 12 bytes


def test_lookups_and_dense_backward():
    idx = T((3, 4), "int64")  # 12 indices, 96 bytes
    assert cost("aten::embedding", TABLE, idx) == (0, 144 + 96 + 144)
    assert cost("aten::embedding", TABLE, idx, outputs=[T((3, 4, 6), "float32")]) == (0, 144 + 96 + 288)
    g = T((3, 4, 6), "float32")
    assert cost("aten::embedding_dense_backward", g, idx, 50, -1, False) == (72, 288 + 96 + 50 * 6 * 4)
    assert cost("aten::embedding_backward", g, idx, 50, -1, False, False) == (72, 288 + 96 + 1200)
    assert cost("aten::embedding_dense_backward", g, idx, 50, outputs=[TABLE]) == (72, 288 + 96 + 600)
    flat = T((12, 6), "float32")
    one = T((12,), "int64")
    assert cost("aten::embedding_dense_backward", flat, one, 50)[1] == 288 + 96 + 1200
    wide = T((12, 2, 3), "float32")
    assert cost("aten::embedding_dense_backward", wide, one, 50)[1] == 288 + 96 + 1200  # rows of 2x3
    same = T((12,), "float32")
    assert cost("aten::embedding_dense_backward", same, one, 50)[1] == 48 + 96 + 50 * 12 * 4  # row: the last dim


def test_sparse_backward_wraps_the_gradient_or_copies_the_rows_it_keeps():
    # nn.Embedding(sparse=True): the gradient is a sparse tensor whose values are grad's rows and whose indices are
    # the lookup's; only a padding_idx makes it copy the rows it keeps
    g, idx = T((3, 4, 6), "float32"), T((3, 4), "int64")
    assert cost("aten::embedding_sparse_backward", g, idx, 50, -1, False) == (0, 0)
    assert cost("aten::embedding_sparse_backward", g, idx, 50, 0, False) == (0, 2 * (288 + 96))


def test_bags():
    idx = T((10,), "int64")
    offsets = T((4,), "int64")
    name = "aten::_embedding_bag"
    assert cost(name, TABLE, idx, offsets, False, 0) == (60, 120 + 80 + 32 + 4 * 12)
    assert cost(name, TABLE, idx, offsets, False, 0, False, None, True) == (60, 120 + 80 + 32 + 3 * 12)
    psw = T((10,), "float16")
    assert cost(name, TABLE, idx, offsets, False, 0, False, psw) == (120, 120 + 80 + 32 + 20 + 48)
    assert cost("aten::embedding_bag", TABLE, T((4, 5), "int64"), None) == (120, 240 + 160 + 48)
    assert cost("aten::_embedding_bag_forward_only", TABLE, idx) == (60, 120 + 80 + 12)
    assert cost(name, TABLE, idx, offsets, outputs=[T((4, 6), "float32")]) == (60, 120 + 80 + 32 + 96)
    g = T((4, 6), "float16")
    back = "aten::_embedding_bag_backward"
    args = [g, idx, offsets, T((10,), "int64"), T((4,), "int64"), T((4, 6), "int64"), 50, False, 0, False, None]
    assert cost(back, *args) == (60, 120 + 80 + 600)
    with_psw = list(args)
    with_psw[10] = psw
    assert cost(back, *with_psw) == (120, 120 + 80 + 20 + 600)
    dense = [g, idx, T((10,), "int64"), T((4,), "int64"), T((4, 6), "int64"), 50, False, 0, None]
    assert cost("aten::_embedding_bag_dense_backward", *dense) == (60, 120 + 80 + 600)
    assert cost("aten::_embedding_bag_dense_backward", *dense, outputs=[T((50, 6), "float32")]) == \
        (60, 120 + 80 + 1200)
    psw_back = "aten::_embedding_bag_per_sample_weights_backward"
    o2b = T((10,), "int64")
    assert cost(psw_back, g, TABLE, idx, offsets, o2b, 0) == (120, 2 * 120 + 80 + 80 + 20)
    assert cost(psw_back, g, TABLE, idx, offsets, None, 0, outputs=[T((10,), "float32")]) == (120, 240 + 80 + 40)


def test_nll_and_cross_entropy():
    logp = T((8, 5), "float32")
    target = T((8,), "int64")  # 64 bytes
    w = T((5,), "float16")
    assert cost("aten::nll_loss_forward", logp, target, None, 1, -100) == (8, 64 + 32 + 2 * 4)
    assert cost("aten::nll_loss_forward", logp, target, w, 1, -100) == (8, 64 + 32 + 16 + 8)
    assert cost("aten::nll_loss_forward", logp, target, None, 0, -100) == (8, 64 + 32 + 9 * 4)
    assert cost("aten::nll_loss_forward", logp, target) == (8, 64 + 32 + 8)  # reduction mean by default
    assert cost("aten::nll_loss", logp, target, None, 2) == (8, 104)
    assert cost("aten::nll_loss2d_forward", logp, target, None, 1, outputs=[T((), "float32")]) == (8, 64 + 32 + 4)
    g, total = T((), "float32"), T((), "float32")
    assert cost("aten::nll_loss_backward", g, logp, target, None, 1, -100, total) == (8, 4 + 64 + 4 + 160)
    assert cost("aten::nll_loss_backward", g, logp, target, w, 1, -100, total) == (8, 72 + 16 + 160)
    assert cost("aten::nll_loss_backward", g, logp, target, None, 1, -100, total, outputs=[T((8, 5), "float16")]) == \
        (8, 72 + 80)
    assert cost("aten::cross_entropy_loss", logp, target) == (5 * 40 + 8, 2 * 160 + 64 + 32 + 8)
    assert cost("aten::cross_entropy_loss", logp, target, None, 0) == (5 * 40 + 8, 320 + 64 + 32 + 36)
    probs = T((8, 5), "float32")
    assert cost("aten::cross_entropy_loss", logp, probs) == (7 * 40, 320 + 160 + 4)
    assert cost("aten::cross_entropy_loss", logp, T((8, 5), "int32"))[0] == 5 * 40 + 40  # class-index targets


@pytest.mark.parametrize("name, per", [("aten::mse_loss", 3), ("aten::l1_loss", 3), ("aten::smooth_l1_loss", 3),
                                       ("aten::huber_loss", 3), ("aten::binary_cross_entropy_with_logits", 8),
                                       ("aten::binary_cross_entropy", 10), ("aten::soft_margin_loss", 8)])
def test_pointwise_losses(name, per):
    x, y = T((4, 5), "float16"), T((4, 5), "float16")
    assert cost(name, x, y, 1) == (per * 20, 80 + 2)
    assert cost(name, x, y) == (per * 20, 80 + 2)
    assert cost(name, x, y, 0) == (per * 20, 80 + 40)
    assert cost(name, x, y, 0, outputs=[T((4, 5), "float32")]) == (per * 20, 160)


@pytest.mark.parametrize("name, per", [("aten::mse_loss_backward", 3), ("aten::l1_loss_backward", 3),
                                       ("aten::huber_loss_backward", 3), ("aten::binary_cross_entropy_backward", 5),
                                       ("aten::soft_margin_loss_backward", 5)])
def test_pointwise_loss_backwards(name, per):
    g, x, y = T((), "float16"), T((4, 5), "float16"), T((4, 5), "float16")
    assert cost(name, g, x, y, 1) == (per * 20, 2 + 80 + 40)
    assert cost(name, g, x, y, 1, outputs=[T((4, 5), "float32")]) == (per * 20, 82 + 80)


def test_multi_margin_loss_and_its_backward():
    """Sweep 8 (metric_losses): multi_margin_loss and its backward had no formula."""
    x, target = T((64, 16), "float32"), T((64,), "int64")
    assert cost("aten::multi_margin_loss", x, target, 1, 1.0, None, 1) == (4 * 1024, 4096 + 512 + 4)
    assert cost("aten::multi_margin_loss", x, target, 1, 1.0, None, 0)[1] == 4096 + 512 + 64 * 4
    assert cost("aten::multi_margin_loss_backward", T((), "float32"), x, target, 1, 1.0, None, 1) == \
        (4 * 1024, 4 + 4096 + 512 + 4096)


def test_embedding_renorm_counts_the_distinct_rows_live_and_every_index_from_a_trace():
    """Sweep 8 (an Embedding with max_norm): embedding_renorm_ had no formula and was 41% of the step."""
    import torch

    from roofline.count import count_op
    from roofline.count.live import read_live_facts

    table, ids = T((1000, 32), "float32"), T((16, 32), "int64")
    from_trace = count_op("aten::embedding_renorm_", (table, ids, 1.0, 2.0))
    assert from_trace.modeled and "upper bound" in from_trace.note
    assert (from_trace.flops, from_trace.bytes) == (3 * 512 * 32, 512 * 8 + 2 * 512 * 32 * 4)
    live_ids = torch.tensor([[1, 2, 2, 3], [3, 3, 1, 7]])
    args, kwargs = [table, T((2, 4), "int64"), 1.0, 2.0], {}
    read_live_facts("aten::embedding_renorm_", (torch.zeros(1000, 32), live_ids, 1.0, 2.0), {}, args, kwargs)
    live = count_op("aten::embedding_renorm_", tuple(args), kwargs)
    assert (live.flops, live.bytes, live.note) == (3 * 4 * 32, 8 * 8 + 2 * 4 * 32 * 4, "")  # rows 1, 2, 3, 7
    assert count_op("aten::embedding_renorm_", (T((10, 4), "float32"), T((64,), "int64"), 1.0, 2.0)).flops == 3 * 10 * 4


def test_ctc_loss_walks_its_alignment_grid():
    # 10 steps, batch 4, 6 classes (960 bytes); targets of at most 3 labels: 2 * 3 + 1 = 7 states a step, 280 in all
    log_probs, padded, flat = T((10, 4, 6), "float32"), T((4, 3), "int64"), T((12,), "int64")
    forward = (16 * 280, 960 + 96 + 280 * 4 + 4 * 4)  # the gathered log-probs (all 240 < 280), log_alpha and nll
    assert cost("aten::_ctc_loss", log_probs, padded, [10] * 4, [3] * 4, 0, False) == forward
    assert cost("aten::_ctc_loss", log_probs, flat, [10] * 4, [3, 2, 3, 3], 0, False) == forward
    assert cost("aten::ctc_loss", log_probs, padded, [10] * 4, [3] * 4, 0, 1, False) == forward
    # a trace records the composite's output, the reduced loss: _ctc_loss's log_alpha and nll are written all the same
    from roofline.count import count_op

    reduced = count_op("aten::ctc_loss", (log_probs, padded, [10] * 4, [3] * 4, 0, 1, False), outputs=[T((), "float32")])
    assert (reduced.flops, reduced.bytes) == forward
    grad, nll, alpha = T((4,), "float32"), T((4,), "float32"), T((4, 10, 7), "float32")
    assert cost("aten::_ctc_loss_backward", grad, log_probs, padded, [10] * 4, [3] * 4, nll, alpha, 0, False) == (
        22 * 280 + 4 * 240, 16 + 960 + 96 + 16 + 1120 + 1120 + 960)  # log_beta written, the gradient written
