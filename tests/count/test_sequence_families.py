"""Formulas for the fused transformer fast paths, recurrent layers, FFTs, complex elementwise ops and
embedding bags with per-sample weights: each checked against a hand count or against the unfused ops."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
from torch.utils.flop_counter import FlopCounterMode

from count_recording import OpCollector, unmodeled
from roofline.count import TensorMeta, count_op

pytestmark = pytest.mark.usefixtures("one_thread")


def _total(collector: OpCollector) -> float:
    return sum(op.cost().flops for op in collector.ops)


def _matmul_flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_mha_fast_path_counts_at_least_the_unfused_matmuls():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(32, 4, batch_first=True)
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        unfused = _matmul_flops(lambda: mha(x, x, x, need_weights=False))  # training mode: no fast path
        mha.eval()
        with OpCollector() as collector:
            mha(x, x, x, need_weights=False)
    assert [op.name for op in collector.ops] == ["aten::_native_multi_head_attention"]
    assert unmodeled(collector.ops) == {}
    ours = _total(collector)
    projections, attention = 4 * 2 * 20 * 32 * 32, 4 * 2 * 10 * 10 * 32
    assert unfused == projections  # FlopCounterMode leaves the CPU flash-attention kernel at 0
    assert projections + attention <= ours < 1.1 * (projections + attention)


def test_encoder_layer_fast_path_counts_the_feed_forward_and_norms():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        unfused = _matmul_flops(lambda: layer(x))
        layer.eval()
        with OpCollector() as collector:
            layer(x)
    assert [op.name for op in collector.ops] == ["aten::_transformer_encoder_layer_fwd"]
    ours = _total(collector)
    products = 2 * 20 * 32 * 32 * 4 + 2 * 2 * 20 * 32 * 64
    assert unfused == products
    assert products + 4 * 2 * 10 * 10 * 32 < ours < 1.2 * products


def test_nested_encoder_attends_within_each_sequence():
    """A padding mask sends the encoder's fast path a nested batch of the real tokens (lengths 16, 10, 4, 12):
    its scores are the sum of each sequence's s^2 (516), not the 42 tokens stacked into one (1,764; found by the
    second model sweep: 6.62 M FLOPs against a hand count of 5.8 M)."""
    import warnings

    torch.manual_seed(0)
    embed, hidden, lengths = 32, 64, (16, 10, 4, 12)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(embed, 4, hidden, batch_first=True), 1,
                                    enable_nested_tensor=True).eval()
    pad = torch.ones(4, 16, dtype=torch.bool)
    for row, n in enumerate(lengths):
        pad[row, :n] = False
    with torch.no_grad(), warnings.catch_warnings(), OpCollector() as collector:
        warnings.simplefilter("ignore")
        encoder(torch.randn(4, 16, embed), src_key_padding_mask=pad)
    layer = next(op.cost() for op in collector.ops if op.name == "aten::_transformer_encoder_layer_fwd")
    tokens = sum(lengths)
    products = 2 * tokens * embed * embed * 4 + 2 * 2 * tokens * embed * hidden
    attention = 4 * embed * sum(n * n for n in lengths)
    assert products + attention < layer.flops < 1.1 * (products + attention)
    assert layer.flops < products + 4 * embed * tokens * tokens  # the stacked count would exceed this


def _lstm_hand_count(tokens, input_size, hidden, layers, directions):
    products = 0
    for layer in range(layers):
        width = input_size if layer == 0 else hidden * directions
        products += directions * 2 * tokens * 4 * hidden * (width + hidden)
    return products + tokens * layers * directions * hidden * 36


@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_lstm_counts_its_gate_products_and_cells(layers, bidirectional):
    torch.manual_seed(0)
    lstm = nn.LSTM(16, 12, layers, batch_first=True, bidirectional=bidirectional)
    x = torch.randn(3, 7, 16)
    with torch.no_grad(), OpCollector() as collector:
        lstm(x)
    assert unmodeled(collector.ops) == {}
    expected = _lstm_hand_count(21, 16, 12, layers, 2 if bidirectional else 1)
    rnn_ops = [op for op in collector.ops if "rnn" in op.name]
    assert rnn_ops, [op.name for op in collector.ops]
    assert sum(op.cost().flops for op in rnn_ops) == expected


def test_cudnn_rnn_counts_the_stack_from_its_hyperparameters():
    """_cudnn_rnn (the GPU kernel) read from a trace: the weight list is often not recorded."""
    x = TensorMeta((7, 3, 16), "float16")
    args = [x, None, 4, TensorMeta((10,), "float16"), TensorMeta((4, 3, 12), "float16"),
            TensorMeta((4, 3, 12), "float16"), 2, 12, 0, 2, False, 0.0, False, True, [], None]
    cost = count_op("aten::_cudnn_rnn", args)
    assert cost.modeled and cost.flops == _lstm_hand_count(21, 16, 12, 2, 2)
    state = 4 * 3 * 12 * 2
    assert cost.bytes == 7 * 3 * 16 * 2 + 10 * 2 + 2 * state + 21 * 12 * 2 * 2 + 2 * state
    with_list = list(args)
    with_list[1] = [TensorMeta((48, 16), "unknown")] * 4  # views into weight_buf: not read twice
    assert count_op("aten::_cudnn_rnn", with_list).bytes == cost.bytes
    gru = list(args)
    gru[6] = 3
    assert count_op("aten::_cudnn_rnn", gru).flops < cost.flops


def test_gru_and_rnn_and_lstm_training_fully_modeled():
    torch.manual_seed(0)
    x = torch.randn(5, 2, 8)
    for module in (nn.GRU(8, 6, 2), nn.RNN(8, 6, nonlinearity="relu"), nn.LSTM(8, 6, proj_size=4),
                   nn.LSTMCell(8, 6), nn.GRUCell(8, 6)):
        with OpCollector() as collector:
            out = module(x if not isinstance(module, nn.RNNCellBase) else x[0])
            (out[0] if isinstance(out, tuple) else out).sum().backward()
        assert unmodeled(collector.ops) == {}, module


@pytest.mark.parametrize("n", [16, 64, 100])
def test_fft_counts_five_n_log_n(n):
    x = torch.randn(4, n)
    with OpCollector() as collector:
        torch.fft.ifft(torch.fft.fft(x.to(torch.complex64)))
    c2c = [op.cost() for op in collector.ops if op.name == "aten::_fft_c2c"]
    assert len(c2c) == 2 and all(c.flops == pytest.approx(5 * 4 * n * math.log2(n)) for c in c2c)
    assert "5 N log2 N" in c2c[0].note
    with OpCollector() as collector:
        torch.fft.irfft(torch.fft.rfft(x), n=n)
    assert unmodeled(collector.ops) == {}
    for op in collector.ops:
        assert op.cost().flops == pytest.approx(2.5 * 4 * n * math.log2(n)), op.name


def test_fft2_counts_the_product_of_its_sizes_and_infers_outputs_without_them():
    r2c = count_op("aten::_fft_r2c", [TensorMeta((2, 8, 16), "float32"), [1, 2], 0, True])
    assert r2c.flops == pytest.approx(2.5 * 2 * 8 * 16 * 7)
    assert r2c.bytes == 2 * 8 * 16 * 4 + 2 * 8 * 9 * 8


def test_complex_multiply_counts_real_flops():
    a = TensorMeta((10,), "complex64")
    assert count_op("aten::mul", [a, a]).flops == 60
    assert count_op("aten::mul", [a, TensorMeta((10,), "float32")]).flops == 20
    assert count_op("aten::add", [a, a]).flops == 20
    assert count_op("aten::mul", [TensorMeta((10,), "float32")] * 2).flops == 10


def test_embedding_bag_with_per_sample_weights_forward_and_backward():
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(10, 4, mode="sum")
    weights = torch.rand(6, requires_grad=True)
    with OpCollector() as collector:
        bag(torch.tensor([1, 2, 3, 4, 5, 6]), torch.tensor([0, 2]), per_sample_weights=weights).sum().backward()
    assert unmodeled(collector.ops) == {}
    costs = {op.name: op.cost() for op in collector.ops}
    assert costs["aten::_embedding_bag"].flops == 2 * 6 * 4
    assert costs["aten::_embedding_bag_per_sample_weights_backward"].flops == 2 * 6 * 4


def test_grid_sample_and_unfold_fold_forward_and_backward_fully_modeled():
    import torch.nn.functional as F

    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    grid = torch.rand(2, 5, 6, 2, requires_grad=True) * 2 - 1
    with OpCollector() as collector:
        out = F.grid_sample(x, grid, align_corners=False)
        cols = F.unfold(x, 3, padding=1)
        (out.sum() + F.fold(cols, (8, 8), 3, padding=1).sum()).backward()
    assert unmodeled(collector.ops) == {}
    sample = next(op.cost() for op in collector.ops if op.name == "aten::grid_sampler_2d")
    assert sample.flops == 7 * 2 * 3 * 5 * 6 + 4 * 2 * 5 * 6
    inferred = count_op("aten::grid_sampler_2d", [TensorMeta((2, 3, 8, 8), "float32"), TensorMeta((2, 5, 6, 2), "float32"), 0, 0, False])
    assert inferred.bytes == sample.bytes


def test_weight_norm_forward_and_backward_fully_modeled():
    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 8, 3))
    with OpCollector() as collector:
        conv(torch.randn(2, 4, 10)).sum().backward()
    assert unmodeled(collector.ops) == {}
    assert any(op.name == "aten::_weight_norm_interface" for op in collector.ops)


def test_nested_tensor_meta_has_exact_elements():
    nested = torch.nested.nested_tensor([torch.randn(3, 8), torch.randn(5, 8)])
    meta = TensorMeta.from_tensor(nested)
    assert meta.shape == (8, 8) and meta.numel == 64 and meta.nbytes == 256
