"""Every recurrent formula by hand (count/rnn.py's docstring): 2 FLOPs per weight element per token for the gate
products, the pointwise cell per hidden unit (LSTM 36, GRU 26, tanh 7, relu 4), backward twice the products plus
the cell; the cuDNN stack's weights rebuilt from its hyperparameters. Input 5, hidden 3, 7 steps x batch 2."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from roofline.count.rnn import GRU, LSTM, RNN_RELU, RNN_TANH, stack_weights

X = T((7, 2, 5), "float32")  # 14 tokens, 280 bytes
H0 = T((1, 2, 3), "float32")  # 24 bytes


def f32(*shape):
    return T(shape, "float32")


def lstm_params(width=5):
    return [f32(12, width), f32(12, 3), f32(12), f32(12)]


LSTM_FWD = 2 * 14 * (60 + 36) + 14 * 3 * 36  # 4200
LSTM_BWD = 2 * 2 * 14 * 96 + 14 * 3 * 36


@pytest.mark.parametrize("name, gates, cell", [("aten::lstm", 4, 36), ("aten::gru", 3, 26),
                                               ("aten::rnn_tanh", 1, 7), ("aten::rnn_relu", 1, 4)])
def test_entry_points_by_mode(name, gates, cell):
    params = [f32(3 * gates, 5), f32(3 * gates, 3), f32(3 * gates), f32(3 * gates)]
    c = count_op(name, [X, [H0], params, True, 1, 0.0, False, False, False])
    assert c.flops == 2 * 14 * gates * 3 * 8 + 14 * 3 * cell
    assert c.bytes == 280 + 24 + (gates * 3 * 10) * 4 and "bytes count the inputs only" in c.note


def test_lstm_layers_packed_and_projections():
    two = lstm_params() + lstm_params(3)
    assert count_op("aten::lstm", [X, [H0, H0], two, True, 2, 0.0, False, False, False]).flops == \
        2 * 14 * (60 + 36 + 36 + 36) + 14 * 6 * 36
    data, sizes = f32(14, 5), T((7,), "int64")
    assert count_op("aten::lstm", [data, sizes, [H0, H0], lstm_params(), True, 1, 0.0, False, False]).flops == LSTM_FWD
    proj = [f32(12, 5), f32(12, 2), f32(12), f32(12), f32(2, 3)]
    assert count_op("aten::lstm", [X, [H0], proj, True, 1, 0.0, False, False, False]).flops == \
        2 * 14 * (60 + 24 + 6) + 14 * 3 * 36
    assert not count_op("aten::lstm", [X, [H0], [], True]).modeled
    assert count_op("aten::lstm", [X, [H0], lstm_params()], None, [f32(7, 2, 3)]).bytes == 280 + 24 + 480 + 168


def test_stack_weights_from_hyperparameters():
    w = stack_weights(5, 3, 0, 2, 2, LSTM)
    assert [t.shape for t in w] == [(12, 5), (12, 3)] * 2 + [(12, 6), (12, 3)] * 2
    p = stack_weights(5, 3, 2, 1, 1, LSTM)
    assert [t.shape for t in p] == [(12, 5), (12, 2), (2, 3)]
    assert [t.shape for t in stack_weights(5, 3, 0, 1, 1, GRU)] == [(9, 5), (9, 3)]
    assert [t.shape for t in stack_weights(5, 3, 0, 1, 1, RNN_TANH)] == [(3, 5), (3, 3)]
    assert [t.shape for t in stack_weights(5, 3, 0, 1, 1, RNN_RELU)] == [(3, 5), (3, 3)]


def test_cudnn_and_miopen_stacks():
    buf = f32(100)
    args = [X, lstm_params(), 4, buf, H0, H0, LSTM, 3, 0, 1, False, 0.0, False, False, None, None]
    c = count_op("aten::_cudnn_rnn", args)
    assert c.flops == LSTM_FWD
    assert c.bytes == 280 + 400 + 24 + 24 + 14 * 3 * 4 + 2 * 24  # the buffer read, not the views into it
    no_buf = list(args)
    no_buf[3] = None
    assert count_op("aten::_cudnn_rnn", no_buf).bytes == 280 + 480 + 48 + 168 + 48
    bidir = list(args)
    bidir[9], bidir[13] = 2, True
    c = count_op("aten::_cudnn_rnn", bidir)
    assert c.flops == 2 * 14 * (2 * 96 + 2 * (72 + 36)) + 14 * 12 * 36
    assert c.bytes == 280 + 400 + 48 + 14 * 3 * 2 * 4 + 48
    proj = list(args)
    proj[8] = 2
    assert count_op("aten::_cudnn_rnn", proj).flops == 2 * 14 * (60 + 24 + 6) + 14 * 3 * 36
    assert count_op("aten::_cudnn_rnn", args, None, [f32(7, 2, 3)]).bytes == 280 + 400 + 48 + 168
    # one step, input width = hidden: h0 and c0 have the input's shape and dtype, and are read all the same
    x1, state = f32(1, 2, 3), [f32(1, 2, 3), f32(1, 2, 3)]
    one = [x1, lstm_params(3), 4, buf, *state, LSTM, 3, 0, 1, False, 0.0, False, False, None, None]
    assert count_op("aten::_cudnn_rnn", one, None, [x1]).bytes == 24 + 400 + 24 + 24 + 24
    # two projected layers (hidden 5, proj 4): the cell counts W_hh rows only, never W_hr's
    deep = list(args)
    deep[7], deep[8], deep[9] = 5, 4, 2
    assert count_op("aten::_cudnn_rnn", deep).flops == 2 * 14 * (100 + 80 + 20 + 80 + 80 + 20) + 14 * 10 * 36
    mi = [X, lstm_params(), 4, H0, H0, GRU, 3, 1, False, 0.0, False, False, None, None]
    c = count_op("aten::miopen_rnn", mi)
    assert c.flops == 2 * 14 * (5 * 9 + 3 * 9) + 14 * 3 * 26
    assert c.bytes == 280 + 480 + 48 + 168 + 48
    back = [X, lstm_params(), 4, buf, H0, H0, f32(7, 2, 3), None, None, None, LSTM, 3, 0, 1, False, 0.0, True,
            False, None, None]
    c = count_op("aten::_cudnn_rnn_backward", back)
    assert c.flops == LSTM_BWD and c.bytes == 280 + 400 + 48 + 168 + 280 + 96 * 4
    miback = [X, lstm_params(), 4, H0, H0, None, None, None, None, None, RNN_TANH, 3, 1, False, 0.0, True, False]
    assert count_op("aten::miopen_rnn_backward", miback).flops == 2 * 2 * 14 * 24 + 14 * 3 * 7


def test_mkldnn_layers_cells_and_fused_cells():
    layer = [X, f32(12, 5), f32(12, 3), f32(12), f32(12), H0, H0, False, None, LSTM]
    assert count_op("aten::mkldnn_rnn_layer", layer).flops == LSTM_FWD
    back = [X, f32(12, 5), f32(12, 3)] + [None] * 11 + [LSTM]
    assert count_op("aten::mkldnn_rnn_layer_backward", back).flops == LSTM_BWD
    x = f32(2, 5)
    h = f32(2, 3)
    c = count_op("aten::lstm_cell", [x, [h, h], f32(12, 5), f32(12, 3), f32(12), f32(12)])
    assert c.flops == 2 * 2 * 96 + 2 * 3 * 36 and c.bytes == (10 + 12 + 60 + 36 + 24) * 4
    assert count_op("aten::gru_cell", [x, h, f32(9, 5), f32(9, 3)]).flops == 2 * 2 * 72 + 2 * 3 * 26
    assert count_op("aten::rnn_relu_cell", [x, h, f32(3, 5), f32(3, 3)]).flops == 2 * 2 * 24 + 2 * 3 * 4
    assert count_op("aten::_thnn_fused_lstm_cell", [f32(2, 12), f32(2, 12), h]).flops == 6 * 36
    assert count_op("aten::_thnn_fused_gru_cell", [f32(2, 9), f32(2, 9), h]).flops == 6 * 26
    assert count_op("aten::_thnn_fused_lstm_cell_backward_impl", [h, h, h, h, f32(2, 12), True]).flops == 6 * 36
    assert count_op("aten::_thnn_fused_lstm_cell_backward", [h, h, h, h, f32(2, 12), True]).flops == 6 * 36
    assert count_op("aten::_thnn_fused_gru_cell_backward", [h, f32(2, 15), True]).flops == 6 * 26
    assert count_op("aten::_thnn_differentiable_lstm_cell_backward", [h, h, f32(2, 12), f32(2, 12)]).flops == 6 * 36
    assert count_op("aten::_thnn_differentiable_gru_cell_backward", [h, f32(2, 9), f32(2, 9)]).flops == 6 * 26


def test_an_rnn_layers_unrecorded_mode_comes_from_its_recurrent_weight_or_not_at_all():
    from roofline.count.meta import TensorMeta
    from roofline.count.rnn import GRU, LSTM, _layer_mode

    assert _layer_mode(None, TensorMeta((512, 128), "float32")) == (
        LSTM, "mode not recorded: lstm from the recurrent weight's 4 x hidden rows")
    assert _layer_mode(None, TensorMeta((384, 128), "float32"))[0] == GRU
    assert _layer_mode(2, TensorMeta((384, 128), "float32")) == (2, "")  # recorded: taken as it is
    with pytest.raises(ValueError, match="mode was not recorded"):
        _layer_mode(None, TensorMeta((500, 128), "float32"))
