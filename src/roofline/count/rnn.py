"""Recurrent layers: the whole-RNN kernels (_cudnn_rnn, miopen_rnn, mkldnn_rnn_layer, _lstm_mps), the
lstm/gru/rnn_tanh/rnn_relu entry points, the cells, the fused cell kernels (_thnn_fused_lstm_cell,
_thnn_fused_gru_cell) and their backwards.

FLOPs, for every token (time step x batch element; packed sequences count their real tokens) and every
layer and direction:
- the gate products: 2 FLOPs per element of each 2-D weight (W_ih: gates*hidden x input, W_hh: gates*hidden
  x hidden, and the LSTM projection W_hr when proj_size > 0), as matmul.py counts a product;
- the pointwise cell per hidden unit, with elementwise.py's costs (add 1, sigmoid/tanh 4): adding the two
  products and both biases (3 a gate row), the activations and the state update. LSTM 4 gates: 12 + 3
  sigmoid + 2 tanh + 4 (c = f*c + i*g, h = o*tanh(c)) = 36; GRU 3 gates: 9 + 2 sigmoid + tanh + 5
  (r*h_n, (1-z)*n + z*h) = 26; RNN: 3 + tanh 4 = 7, or 3 + relu 1 = 4.
- backward: twice the forward products (the input and the weight gradients, as matmul backward), plus the
  pointwise cell once more.
NB: torch's FlopCounterMode counts none of these ops (a GRU that CPU runs as separate addmm/sigmoid ops is
counted there op by op). Dropout between layers is not counted.
Bytes: each input, state and weight read once, each output (and the workspace/reserve a training forward
returns) written once. The recurrence re-reads W_hh every time step; on a device whose cache holds it that
is not memory traffic, so it is not counted (the minimum, as everywhere here).
"""

from __future__ import annotations

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, flatten_metas, nbytes, register

# cuDNN's mode numbers, used by _cudnn_rnn, miopen_rnn and mkldnn_rnn_layer.
RNN_RELU, RNN_TANH, LSTM, GRU = 0, 1, 2, 3
GATES = {RNN_RELU: 1, RNN_TANH: 1, LSTM: 4, GRU: 3}
CELL_FLOPS_PER_HIDDEN = {RNN_RELU: 4, RNN_TANH: 7, LSTM: 36, GRU: 26}
_MODE_OF_NAME = {"lstm": LSTM, "gru": GRU, "rnn_tanh": RNN_TANH, "rnn_relu": RNN_RELU}


def _tokens(x: TensorMeta) -> int:
    """Time steps x batch of an RNN input: (T, B, I), (B, T, I), unbatched (T, I) or packed (tokens, I)."""
    return x.numel // x.shape[-1] if x.ndim and x.shape[-1] else 0


def _products(weights: list[TensorMeta]) -> int:
    return sum(w.numel for w in weights if w.ndim == 2)


def _hidden_rows(weights: list[TensorMeta], mode: int) -> int:
    """Hidden units summed over layers and directions: each W_hh has gates*hidden rows."""
    hh = [w for w in weights if w.ndim == 2][1::2] if mode in GATES else []
    return sum(w.shape[0] for w in hh) // GATES.get(mode, 1)


def _rnn_flops(tokens: int, weights: list[TensorMeta], mode: int, backward: bool) -> float:
    products = 2.0 * tokens * _products(weights)
    cell = float(tokens * _hidden_rows(_no_projections(weights, mode), mode) * CELL_FLOPS_PER_HIDDEN[mode])
    return 2 * products + cell if backward else products + cell


def rnn_forward_flops(tokens: int, weights: list[TensorMeta], mode: int) -> float:
    """Forward FLOPs of ``tokens`` tokens through the (W_ih, W_hh) pairs ``weights`` (every layer and direction)."""
    return _rnn_flops(tokens, weights, mode, False)


def _no_projections(weights: list[TensorMeta], mode: int) -> list[TensorMeta]:
    """The W_ih, W_hh pairs, without LSTM projections (W_hr has fewer rows than gates x hidden)."""
    mats = [w for w in weights if w.ndim == 2]
    if mode != LSTM or not mats:
        return mats
    gate_rows = mats[0].shape[0]
    return [w for w in mats if w.shape[0] == gate_rows]


def _cost(call: Call, flops: float, note: str = "") -> OpCost:
    reads = call.input_metas()
    written = nbytes(call.outputs) if call.outputs is not None else 0
    if call.outputs is None:
        note = "; ".join(filter(None, [note, "outputs not recorded: bytes count the inputs only"]))
    return OpCost(flops, float(nbytes(reads) + written), True, note=note)


def stack_weights(input_size: int, hidden: int, proj: int, layers: int, directions: int,
                  mode: int) -> list[TensorMeta]:
    """The 2-D weights of a whole RNN stack from its hyperparameters (the profiler often drops long lists)."""
    gate_rows = GATES[mode] * hidden
    out_size = proj or hidden
    weights = []
    for layer in range(layers):
        width = input_size if layer == 0 else out_size * directions
        for _ in range(directions):
            weights += [TensorMeta((gate_rows, width), "float32"), TensorMeta((gate_rows, out_size), "float32")]
            if proj:
                weights.append(TensorMeta((proj, hidden), "float32"))
    return weights


# name -> index of mode, hidden_size, proj_size (None: no projections), num_layers, bidirectional
_STACK_ARGS = {
    "aten::_cudnn_rnn": (6, 7, 8, 9, 13),
    "aten::miopen_rnn": (5, 6, None, 7, 11),
    "aten::_cudnn_rnn_backward": (10, 11, 12, 13, 17),
    "aten::miopen_rnn_backward": (10, 11, None, 12, 16),
}


@register(*_STACK_ARGS)
def cudnn_rnn(call: Call) -> OpCost:
    """(input, weight[], weight_stride0, [weight_buf,] hx, cx, mode, hidden_size, ...): the whole stack, its
    weights' shapes from the hyperparameters. The weight list is views into weight_buf: read once, as the
    buffer when it is there."""
    mode_i, hidden_i, proj_i, layers_i, bidir_i = _STACK_ARGS[call.name]
    x = call.tensor(0, "input")
    mode = int(call.arg(mode_i, "mode"))
    hidden = int(call.arg(hidden_i, "hidden_size"))
    proj = int(call.arg(proj_i, "proj_size", 0)) if proj_i is not None else 0
    directions = 2 if call.arg(bidir_i, "bidirectional") else 1
    weights = stack_weights(x.shape[-1], hidden, proj, int(call.arg(layers_i, "num_layers", 1)), directions, mode)
    backward = call.name.endswith("_backward")
    has_buffer = call.name.startswith("aten::_cudnn") or backward
    buffer = call.maybe_tensor(3, "weight_buf") if has_buffer else None
    weight_list = flatten_metas(call.arg(1, "weight")) if buffer is None else []
    state_start = 4 if has_buffer else 3
    reads = [x, buffer, *weight_list] + [m for m in flatten_metas(call.args[state_start:]) if m is not x]
    if call.outputs is not None:
        written = nbytes(call.outputs)
    elif backward:
        written = x.nbytes + sum(w.numel for w in weights) * x.itemsize
    else:
        written = _tokens(x) * (proj or hidden) * directions * x.itemsize + 2 * nbytes([call.maybe_tensor(state_start)])
    return OpCost(_rnn_flops(_tokens(x), weights, mode, backward), float(nbytes(reads) + written), True)


@register("aten::mkldnn_rnn_layer")
def mkldnn_rnn_layer(call: Call) -> OpCost:
    """One layer, one direction: (input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode, ...)."""
    weights = [call.tensor(1, "weight0"), call.tensor(2, "weight1")]
    mode, note = _layer_mode(call.arg(9, "mode"), weights[1])
    return _cost(call, _rnn_flops(_tokens(call.tensor(0, "input")), weights, mode, False), note)


@register("aten::mkldnn_rnn_layer_backward")
def mkldnn_rnn_layer_backward(call: Call) -> OpCost:
    weights = [call.tensor(1, "weight1"), call.tensor(2, "weight2")]
    mode, note = _layer_mode(call.arg(14, "mode"), weights[1])
    return _cost(call, _rnn_flops(_tokens(call.tensor(0, "input")), weights, mode, True), note)


_MODE_OF_GATES = {GATES[LSTM]: LSTM, GATES[GRU]: GRU}


def _layer_mode(recorded, w_hh: TensorMeta) -> tuple[int, str]:
    """The recorded mode, else (torch 2.0 records no scalar argument: no "Concrete Inputs") the one that the
    recurrent weight's gates x hidden rows over its hidden columns give: 4 an LSTM, 3 a GRU."""
    if recorded is not None:
        return int(recorded), ""
    gates = w_hh.shape[0] // w_hh.shape[1] if w_hh.ndim == 2 and w_hh.shape[1] else 0
    if gates not in _MODE_OF_GATES or gates * w_hh.shape[1] != w_hh.shape[0]:
        raise ValueError("the RNN mode was not recorded and the weights' shapes do not give it")
    mode = _MODE_OF_GATES[gates]
    name = next(k for k, v in _MODE_OF_NAME.items() if v == mode)
    return mode, f"mode not recorded: {name} from the recurrent weight's {gates} x hidden rows"


@register("aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu", "aten::_lstm_mps", composite=True)
def rnn_entry(call: Call) -> OpCost:
    """Composite (-> _cudnn_rnn, mkldnn_rnn_layer, or cell ops). Overloads: (input, hx, params, ...) and the
    packed (data, batch_sizes, hx, params, ...)."""
    mode = _MODE_OF_NAME.get(call.name.split("::")[-1], LSTM)
    packed = isinstance(call.arg(1), TensorMeta) and isinstance(call.arg(3), (list, tuple))
    params = call.arg(3 if packed else 2, "params")
    if not isinstance(params, (list, tuple)) or not params:
        raise ValueError("the RNN's parameter list was not recorded")
    return _cost(call, _rnn_flops(_tokens(call.tensor(0, "input")), flatten_metas(params), mode, False))


@register("aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell", composite=True)
def cell_entry(call: Call) -> OpCost:
    """Composite (-> two linears and a fused or pointwise cell): (input, hx, w_ih, w_hh, b_ih, b_hh)."""
    mode = _MODE_OF_NAME[call.name.split("::")[-1].removesuffix("_cell")]
    weights = [call.tensor(2, "w_ih"), call.tensor(3, "w_hh")]
    return _cost(call, _rnn_flops(_tokens(call.tensor(0, "input")), weights, mode, False))


def _fused_cell(call: Call, mode: int) -> OpCost:
    """Pointwise part only (the gate products ran as separate matmuls): gates tensor (batch, gates*hidden)."""
    gates = call.tensor(0, "input_gates")
    hidden_units = gates.numel // GATES[mode]
    return _cost(call, float(hidden_units * CELL_FLOPS_PER_HIDDEN[mode]))


@register("aten::_thnn_fused_lstm_cell")
def fused_lstm_cell(call: Call) -> OpCost:
    return _fused_cell(call, LSTM)


@register("aten::_thnn_fused_gru_cell")
def fused_gru_cell(call: Call) -> OpCost:
    return _fused_cell(call, GRU)


@register("aten::_thnn_fused_lstm_cell_backward_impl", "aten::_thnn_fused_lstm_cell_backward")
def fused_lstm_cell_backward(call: Call) -> OpCost:
    """(grad_hy, grad_cy, cx, cy, workspace, has_bias): workspace is (batch, 4*hidden)."""
    workspace = call.tensor(4, "workspace")
    return _cost(call, float(workspace.numel // GATES[LSTM] * CELL_FLOPS_PER_HIDDEN[LSTM]))


@register("aten::_thnn_fused_gru_cell_backward")
def fused_gru_cell_backward(call: Call) -> OpCost:
    """(grad_hy, workspace, has_bias): workspace is (batch, 5*hidden)."""
    workspace = call.tensor(1, "workspace")
    return _cost(call, float(workspace.numel // 5 * CELL_FLOPS_PER_HIDDEN[GRU]))


@register("aten::_thnn_differentiable_lstm_cell_backward", "aten::_thnn_differentiable_gru_cell_backward",
          composite=True)
def differentiable_cell_backward(call: Call) -> OpCost:
    """Composite (double backward through a fused cell, in pointwise ops): (.., input_gates, hidden_gates, ..)."""
    lstm = "lstm" in call.name
    gates = call.tensor(2 if lstm else 1, "input_gates")
    mode = LSTM if lstm else GRU
    return _cost(call, float(gates.numel // GATES[mode] * CELL_FLOPS_PER_HIDDEN[mode]))
