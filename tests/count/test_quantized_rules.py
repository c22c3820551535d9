"""Quantized ops (count/quantized.py's docstring) by hand, then live: a model quantized with torch.ao counts the
float model's products exactly (FlopCounterMode's count of the float model) through its prepacked weights."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.meta import PackedWeights, TensorMeta as T
from rules_helpers import cost


def test_linear_static_dynamic_and_fp16_weights():
    x = T((4, 6, 32), "quint8")  # 768 bytes
    packed = PackedWeights(T((16, 32), "qint8"), T((16,), "float32"))  # 512 + 64 bytes
    # static: int8 out (4*6*16 = 384 bytes)
    assert cost("quantized::linear", x, packed, 0.1, 3) == (2 * 24 * 32 * 16, 768 + 512 + 64 + 384)
    xf = T((4, 6, 32), "float32")
    assert cost("quantized::linear_dynamic", xf, packed, True) == (2 * 24 * 32 * 16, 3072 + 576 + 384 * 4)
    # fp16 weights: unpack() gives them as float32, the kernel reads float16
    fp16 = PackedWeights(T((16, 32), "float32"), None)
    assert cost("quantized::linear_dynamic_fp16", xf, fp16)[1] == 3072 + 1024 + 384 * 4
    assert not count_op("quantized::linear", [x, None, 0.1, 3]).modeled, "a trace records no packed weight"


def test_conv_geometry_from_the_packed_weight():
    x = T((2, 8, 9, 9), "quint8")  # 1296 bytes
    packed = PackedWeights(T((6, 4, 3, 3), "qint8"), T((6,), "float32"), stride=(2, 2), padding=(1, 1),
                           dilation=(1, 1), output_padding=(0, 0), groups=2)
    # (9 + 2 - 2 - 1) // 2 + 1 = 5 per side; 2 * batch * prod(weight) * 25
    flops, moved = cost("quantized::conv2d", x, packed, 0.1, 0)
    assert (flops, moved) == (2 * 2 * 216 * 25, 1296 + 216 + 24 + 2 * 6 * 25)
    assert cost("quantized::conv2d_relu", x, packed, 0.1, 0, outputs=[T((2, 6, 5, 5), "quint8")]) == (flops, moved)
    added = T((2, 6, 5, 5), "quint8")
    assert cost("quantized::conv2d_add_relu", x, added, packed, 0.1, 0, 0.1, 0) == (flops, moved + 300)


def test_quantize_dequantize_elementwise_and_rnn():
    x = T((10, 20), "float32")
    assert cost("aten::quantize_per_tensor", x, 0.1, 3, "torch.quint8") == (4 * 200, 800 + 200)
    assert cost("aten::quantize_per_tensor_dynamic", x, "torch.quint8", False)[0] == 6 * 200
    assert cost("aten::dequantize", T((10, 20), "quint8")) == (2 * 200, 200 + 800)
    a, b = T((1, 8, 4, 4), "quint8"), T((1, 8, 1, 1), "quint8")
    assert cost("quantized::mul", a, b, 0.1, 0) == (128, 128 + 8 + 128)
    assert cost("quantized::add_relu", a, a, 0.1, 0) == (2 * 128, 3 * 128)
    assert cost("quantized::hardswish", a, 0.1, 0)[0] == 3 * 128
    assert cost("quantized::cat", [a, a], 1, 0.1, 0) == (256, 512)
    # a 2-layer unidirectional LSTM, batch-first (4, 20, 16), hidden 32: the float stack's count, int8 weights
    lstm_in, h = T((4, 20, 16), "float32"), T((2, 4, 32), "float32")
    flops = 2 * 80 * (128 * 16 + 128 * 32 + 128 * 32 + 128 * 32) + 80 * 2 * 32 * 36
    weights = 128 * 16 + 3 * 128 * 32
    assert cost("aten::quantized_lstm", lstm_in, [h, h], [], True, 2, 0.0, False, False, True) == \
        (flops, 5120 + 2048 + weights + 4 * 20 * 32 * 4 + 2048)
    assert cost("aten::quantized_lstm", lstm_in, [h, h], [], True, 2, 0.0, False, False, True,
                kwargs={"dtype": "torch.float16"})[1] == 5120 + 2048 + 2 * weights + 4 * 20 * 32 * 4 + 2048


@pytest.mark.filterwarnings("ignore")  # torch.ao's deprecation notices (torchao is not a dependency)
def test_quantized_models_count_the_float_models_products(one_thread):
    """FX int8 (conv + linear, static) and dynamic int8 (linear + LSTM): the quantized:: kernels' FLOPs are the float
    model's FlopCounterMode count (its conv/linear products) and the LSTM's float count."""
    torch = pytest.importorskip("torch")
    from torch.ao.quantization import get_default_qconfig_mapping, quantize_dynamic
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    from roofline.count import normalize_op_name, to_meta

    class Counting(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.flops, self.unmodeled = {}, []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            c = count_op(func, to_meta(args), to_meta(kwargs), to_meta(list(out) if isinstance(out, tuple) else [out]))
            name = normalize_op_name(func)
            self.flops[name] = self.flops.get(name, 0) + c.flops
            if not c.modeled:
                self.unmodeled.append(name)
            return out

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, groups=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 8, 3, padding=1, groups=4), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 8 * 8, 10)).eval()
    x = torch.randn(2, 3, 16, 16)
    with FlopCounterMode(display=False) as fcm:
        model(x)
    prepared = prepare_fx(model, get_default_qconfig_mapping("x86"), (x,))
    prepared(x)
    quantized = convert_fx(prepared)
    with torch.no_grad(), Counting() as counting:
        quantized(x)
    assert counting.unmodeled == []
    products = sum(v for k, v in counting.flops.items() if k.startswith(("quantized::conv", "quantized::linear")))
    assert products == fcm.get_total_flops()

    lstm = torch.nn.Sequential(torch.nn.LSTM(16, 32, 2, batch_first=True)).eval()  # a child: quantize_dynamic swaps it
    seq = torch.randn(4, 20, 16)
    with torch.no_grad(), Counting() as float_count:
        lstm(seq)
    dynamic = quantize_dynamic(lstm, {torch.nn.LSTM}, dtype=torch.qint8)
    with torch.no_grad(), Counting() as int8_count:
        dynamic(seq)
    assert int8_count.unmodeled == []
    assert int8_count.flops["aten::quantized_lstm"] == sum(float_count.flops.values())
