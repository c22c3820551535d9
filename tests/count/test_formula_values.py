"""Formula VALUES, family by family, against an independent figure: FlopCounterMode where it counts (matmul,
conv, attention), the family's hand-derived per-element rule elsewhere; bytes against the minimum-traffic rule
(each input read once at its own size, each output written once) computed here from the tensors torch really
returns, never from count_op. Shapes are drawn by hypothesis; each call is counted twice: with the recorded
outputs (live path) and without (trace path, the formula infers the output)."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

import roofline.count as count_pkg
from roofline.count import count_op, normalize_op_name, to_meta
from roofline.count.registry import FORMULAS

aten = torch.ops.aten
# ROOFLINE_HYPOTHESIS_EXAMPLES: fewer shapes for the mutation runs (each mutant reruns this file)
FAST = settings(max_examples=int(os.environ.get("ROOFLINE_HYPOTHESIS_EXAMPLES", "20")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
dims = st.integers(1, 9)


def _flat(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _flat(item)]
    return []


def _min_traffic(args, outputs) -> int:
    seen, total = set(), 0
    for t in _flat(args):
        if t.dim() == 0 or id(t) in seen:
            continue
        seen.add(id(t))
        total += t.numel() * t.element_size()
    return total + sum(t.numel() * t.element_size() for t in _flat(outputs))


def _count_both(op, args, outputs):
    name = normalize_op_name(op)
    live = count_op(name, to_meta(args), None, to_meta(_flat(outputs)))
    trace = count_op(name, to_meta(args))
    return live, trace


def _check(op, *args, flops_per_out=None, flops_per_in=None, flops=None, counter=False):
    """Run ``op`` for real, and compare both countings with the independent figures."""
    if counter:
        with FlopCounterMode(display=False) as fc:
            out = op(*args)
        flops = fc.get_total_flops()
    else:
        out = op(*args)
    outs = _flat(out)
    if flops_per_out is not None:
        flops = flops_per_out * outs[0].numel()
    if flops_per_in is not None:
        flops = flops_per_in * args[0].numel()
    expected_bytes = _min_traffic(args, out)
    for cost in _count_both(op, args, out):
        assert cost.modeled
        assert cost.flops == flops, (op, cost)
        assert cost.bytes == expected_bytes, (op, cost)


@FAST
@given(m=dims, k=dims, n=dims, b=st.integers(1, 4))
def test_matmul_family(m, k, n, b):
    r = torch.randn
    _check(aten.mm.default, r(m, k), r(k, n), counter=True)
    _check(aten.addmm.default, r(n), r(m, k), r(k, n), counter=True)
    _check(aten.bmm.default, r(b, m, k), r(b, k, n), counter=True)
    _check(aten.baddbmm.default, r(b, m, n), r(b, m, k), r(b, k, n), counter=True)
    assert count_op("aten::mm", to_meta((r(m, k), r(k, n)))).flops == 2 * m * k * n


@FAST
@given(n=st.integers(1, 3), cin=st.integers(1, 4), cout=st.integers(1, 4), h=st.integers(5, 12),
       kh=st.integers(1, 3), stride=st.integers(1, 2), pad=st.integers(0, 1), groups=st.sampled_from([1, 2]))
def test_convolution_family(n, cin, cout, h, kh, stride, pad, groups):
    x = torch.randn(n, cin * groups, h, h + 1)
    w = torch.randn(cout * groups, cin, kh, kh)
    bias = torch.randn(cout * groups)
    args = (x, w, bias, [stride, stride], [pad, pad], [1, 1], False, [0, 0], groups)
    _check(aten.convolution.default, *args, counter=True)
    out = aten.convolution.default(*args)
    expected = 2 * n * w.numel() * out.shape[2] * out.shape[3]
    assert count_op("aten::convolution", to_meta(args)).flops == expected
    # transposed: output (i - 1) * s - 2 * p + (k - 1) + output_padding + 1, FLOPs over the input's spatial size
    out_pad = min(stride - 1, 1)
    wt = torch.randn(cin * groups, cout, kh, kh)
    targs = (torch.randn(n, cin * groups, h, h), wt, None, [stride, stride], [pad, pad], [1, 1], True,
             [out_pad, out_pad], groups)
    _check(aten.convolution.default, *targs, counter=True)
    for padding in (0, 2):
        targs = targs[:4] + ([padding, padding],) + targs[5:]
        tout = aten.convolution.default(*targs)
        assert tout.shape[2] == (h - 1) * stride - 2 * padding + kh + out_pad
        assert count_op("aten::convolution", to_meta(targs)).bytes == _min_traffic(targs, tout)
    # conv2d (the composite a trace shows) infers the same output and so the same bytes
    conv2d = count_op("aten::conv2d", to_meta((x, w, bias, [stride, stride], [pad, pad], [1, 1], groups)))
    assert conv2d.bytes == _min_traffic(args, out)


@FAST
@given(b=st.integers(1, 2), h=st.integers(1, 3), sq=st.integers(1, 12), sk=st.integers(1, 12),
       d=st.sampled_from([8, 16]))
def test_attention_family(b, h, sq, sk, d):
    q, k, v = (torch.empty(b, h, s, d, device="meta", dtype=torch.float16) for s in (sq, sk, sk))
    with FlopCounterMode(display=False) as fc:
        out = aten._scaled_dot_product_flash_attention.default(q, k, v, 0.0, False)
    live, trace = _count_both(aten._scaled_dot_product_flash_attention.default, (q, k, v, 0.0, False), out)
    assert live.flops == trace.flops == fc.get_total_flops() == 4 * b * h * sq * sk * d
    lse = b * h * sq * 4
    assert trace.bytes == 2 * (b * h * (sq + 2 * sk) * d) + 2 * b * h * sq * d + lse


def test_causal_fraction_by_hand():
    from roofline.count.attention import causal_fraction

    # top-left: query row i keeps keys 0..i; bottom-right: shifted by seq_k - seq_q
    assert causal_fraction(8, 8) == causal_fraction(8, 8, bottom_right=True) == 36 / 64
    assert causal_fraction(4, 16) == (1 + 2 + 3 + 4) / 64
    assert causal_fraction(4, 16, bottom_right=True) == (13 + 14 + 15 + 16) / 64
    assert causal_fraction(16, 4) == (1 + 2 + 3 + 4 * 13) / 64
    assert causal_fraction(0, 4) == 0.0


shapes = st.lists(st.integers(1, 7), min_size=1, max_size=4)


@FAST
@given(shape=shapes)
def test_elementwise_family(shape):
    x, y = torch.randn(*shape), torch.randn(*shape)
    row = torch.randn(shape[-1])
    for op in (aten.add.Tensor, aten.mul.Tensor, aten.sub.Tensor, aten.div.Tensor, aten.maximum.default):
        _check(op, x, y, flops_per_out=1)
        _check(op, x, row, flops_per_out=1)  # broadcast operand read at its own size
    for op, per in ((aten.relu.default, 1), (aten.neg.default, 1), (aten.exp.default, 4), (aten.tanh.default, 4),
                    (aten.sigmoid.default, 4), (aten.silu.default, 5), (aten.gelu.default, 8)):
        _check(op, x, flops_per_out=per)
    _check(aten.addcmul.default, x, y, row, flops_per_out=2)
    _check(aten.lerp.Tensor, x, y, row, flops_per_out=3)
    _check(aten.lt.Tensor, x, y, flops_per_out=1)  # bool output: 1 byte per element


@FAST
@given(shape=st.lists(st.integers(1, 7), min_size=2, max_size=4))
def test_softmax_family(shape):
    x = torch.randn(*shape)
    for op in (aten._softmax.default, aten._log_softmax.default):
        _check(op, x, -1, False, flops_per_in=5)
    y = aten._softmax.default(x, -1, False)
    _check(aten._softmax_backward_data.default, torch.randn_like(y), y, -1, torch.float32, flops_per_in=4)
    entry = count_op("aten::softmax", to_meta((x, -1)))
    assert entry.flops == 5 * x.numel() and entry.bytes == 2 * x.numel() * 4
    mask = torch.zeros(*shape, dtype=torch.bool)
    masked = count_op("aten::_masked_softmax", to_meta((x, mask, -1)))
    assert masked.flops == 5 * x.numel() and masked.bytes == x.numel() * (4 + 1 + 4)
    half = x.to(device="meta", dtype=torch.float16)
    upcast = aten._softmax.default(half, -1, True)  # half_to_float: a float16 read, a float32 write
    for cost in _count_both(aten._softmax.default, (half, -1, True), upcast):
        assert cost.bytes == half.numel() * (2 + 4)
    same = count_op("aten::_softmax", to_meta((half, -1, False)))
    assert same.bytes == half.numel() * (2 + 2)


@FAST
@given(shape=st.lists(st.integers(1, 7), min_size=2, max_size=4), keep=st.booleans())
def test_reduction_family(shape, keep):
    x = torch.randn(*shape)
    for op in (aten.sum.dim_IntList, aten.mean.dim, aten.amax.default):
        _check(op, x, [-1], keep, flops_per_in=1)
    _check(aten.var.dim, x, [-1], True, keep, flops_per_in=3)


@FAST
@given(rows=st.integers(1, 8), d=st.integers(2, 16))
def test_norm_family(rows, d):
    x, w, b = torch.randn(rows, d), torch.randn(d), torch.randn(d)
    out = aten.native_layer_norm.default(x, [d], w, b, 1e-5)
    live, trace = _count_both(aten.native_layer_norm.default, (x, [d], w, b, 1e-5), out)
    for cost in (live, trace):
        assert cost.flops == 7 * x.numel()
        assert cost.bytes == _min_traffic((x, w, b), out)  # output + float32 mean and rstd per row
    rms = count_op("aten::_fused_rms_norm", to_meta((x, [d], w, 1e-5))) if "aten::_fused_rms_norm" in FORMULAS \
        else count_op("aten::rms_norm", to_meta((x, [d], w, 1e-5)))
    assert rms.flops == 4 * x.numel()


@FAST
@given(n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(4, 10), k=st.integers(1, 3))
def test_pooling_family(n, c, h, k):
    x = torch.randn(n, c, h, h)
    out, idx = aten.max_pool2d_with_indices.default(x, [k, k], [k, k])
    live, trace = _count_both(aten.max_pool2d_with_indices.default, (x, [k, k], [k, k]), (out, idx))
    for cost in (live, trace):
        assert cost.flops == out.numel() * k * k
        assert cost.bytes == _min_traffic((x,), (out, idx))
    _check(aten.avg_pool2d.default, x, [k, k], [k, k], flops_per_out=k * k)


@FAST
@given(shape=shapes)
def test_copy_family(shape):
    x = torch.randn(*shape)
    _check(aten.clone.default, x, flops=0)
    half = aten._to_copy.default(x, dtype=torch.float16)
    cast = count_op("aten::_to_copy", to_meta((x,)), to_meta({"dtype": torch.float16}), to_meta([half]))
    assert cast.flops == 0 and cast.bytes == x.numel() * (4 + 2)
    _check(aten.cat.default, [x, x + 1], 0, flops=0)
    other = torch.empty(1, dtype=torch.float16)
    to_other = count_op("aten::to", to_meta((x, other, False, False, None)))
    assert to_other.flops == 0 and to_other.bytes == x.numel() * (4 + 2)
    assert count_op("aten::to", to_meta((x, torch.empty(1), False, False, None))).bytes == 0  # nothing changes
    for repeats in (1, 3):
        out = aten.repeat_interleave.self_int(x, repeats, 0)
        cost = count_op("aten::repeat_interleave", to_meta((x, repeats, 0, None)))
        assert cost.bytes == x.numel() * 4 + out.numel() * 4
    dst = torch.empty(*shape, dtype=torch.float16)
    cost = count_op("aten::copy_", to_meta((dst, x)))
    assert cost.flops == 0 and cost.bytes == x.numel() * (4 + 2)


@FAST
@given(vocab=st.integers(2, 50), d=st.integers(1, 16), n=st.integers(1, 20))
def test_indexing_and_embedding_families(vocab, d, n):
    table = torch.randn(vocab, d)
    idx = torch.randint(0, vocab, (n,))
    # a lookup reads the rows it gathers, never the whole table
    for cost in _count_both(aten.embedding.default, (table, idx), aten.embedding.default(table, idx)):
        assert cost.flops == 0 and cost.bytes == n * d * 4 + n * 8 + n * d * 4
    for cost in _count_both(aten.index_select.default, (table, 0, idx), aten.index_select.default(table, 0, idx)):
        assert cost.flops == 0 and cost.bytes == n * d * 4 + n * 8 + n * d * 4


@FAST
@given(n=st.integers(1, 16), c=st.integers(2, 12))
def test_loss_family(n, c):
    x = torch.randn(n, c)
    target = torch.randint(0, c, (n,))
    cost = count_op("aten::nll_loss_forward", to_meta((x, target, None, 1, -100)))
    assert cost.flops == n
    assert cost.bytes == n * 4 + n * 8 + 4 + 4  # gathered log-probs, target; loss and total_weight written
    y = torch.randn(n, c)
    _check(aten.mse_loss.default, x, y, 1, flops_per_in=3)


@FAST
@given(shape=shapes)
def test_factory_and_view_families(shape):
    x = torch.randn(*shape)
    assert count_op("aten::empty", to_meta((list(shape),))).bytes == 0
    zeros = count_op("aten::zeros", to_meta((list(shape),)), None, to_meta([torch.zeros(*shape)]))
    assert zeros.flops == 0 and zeros.bytes == x.numel() * 4
    fill = count_op("aten::fill_", to_meta((x, 1.0)))
    assert fill.bytes == x.numel() * 4  # written, not read
    for name in ("aten::view", "aten::t", "aten::expand", "aten::permute", "aten::slice"):
        cost = count_op(name, to_meta((x,)))
        assert cost.flops == 0 and cost.bytes == 0 and cost.is_view


@FAST
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=4))
def test_foreach_family(sizes):
    a = [torch.randn(s) for s in sizes]
    b = [torch.randn(s) for s in sizes]
    numel = sum(sizes)
    halves = [t.half() for t in b]
    assert count_op("aten::_foreach_copy_", to_meta((a, halves))).bytes == numel * (4 + 2)
    cost = count_op("aten::_foreach_add_", to_meta((a, b)))
    assert cost.flops == numel and cost.bytes == 3 * numel * 4  # read both lists, write self's
    cost = count_op("aten::_foreach_mul", to_meta((a, b)))
    assert cost.flops == numel and cost.bytes == 3 * numel * 4


def test_less_common_ops_by_hand_in_both_paths():
    """Ops whose trace-path branch (no recorded outputs) infers shapes from arguments: pow's exponent, dropout's
    mask, max of two tensors vs over a dim, embedding_bag's bags, arange's length, new_zeros' dtype."""
    x = torch.randn(4, 6)
    _check(aten.pow.Tensor_Scalar, x, 2, flops_per_out=1)
    _check(aten.pow.Tensor_Scalar, x, 2.5, flops_per_out=4)
    _check(aten.pow.Tensor_Scalar, x, -4, flops_per_out=4)
    assert count_op("aten::pow", to_meta((x, True))).flops == 4 * x.numel()  # a bool exponent is no integer
    _check(aten.native_dropout.default, x, 0.5, True, flops_per_in=2)  # output + bool mask written
    assert count_op("aten::native_dropout", to_meta((x, 0.5, False))).flops == 0
    _check(aten.maximum.default, x, x.flip(0), flops_per_out=1)
    _check(aten.max.other, x, x.flip(0), flops_per_out=1)
    _check(aten.max.dim, x, 1, False, flops_per_in=1)
    table = torch.randn(10, 3)
    bags2d = torch.randint(0, 10, (4, 5))
    cost = count_op("aten::embedding_bag", to_meta((table, bags2d, None, False, 0)))
    assert cost.flops == 20 * 3 and cost.bytes == 20 * 3 * 4 + bags2d.numel() * 8 + 4 * 3 * 4
    flat_idx, offsets = torch.randint(0, 10, (7,)), torch.tensor([0, 2, 5])
    cost = count_op("aten::embedding_bag", to_meta((table, flat_idx, offsets, False, 0)))
    assert cost.bytes == 7 * 3 * 4 + 7 * 8 + 3 * 8 + 3 * 3 * 4
    last = count_op("aten::embedding_bag", to_meta((table, flat_idx, offsets, False, 0, False, None, True)))
    assert last.bytes == 7 * 3 * 4 + 7 * 8 + 3 * 8 + 2 * 3 * 4
    for args in ((10,), (2, 10), (1, 10, 3), (0.0, 1.0, 0.25), (5, 2, -1), (7.0,)):
        out = torch.arange(*args)
        assert count_op("aten::arange", list(args)).bytes == out.numel() * out.element_size(), args
    made = torch.empty(3, dtype=torch.float16).new_zeros((2, 5))
    assert count_op("aten::new_zeros", to_meta((torch.empty(3, dtype=torch.float16), [2, 5]))).bytes == made.numel() * 2
    assert count_op("aten::new_zeros", to_meta((x, [2, 5], torch.int8))).bytes == 10


def test_foreach_variants_and_index_writes_by_hand():
    a = [torch.randn(5), torch.randn(2, 3)]
    b = [torch.randn(5), torch.randn(2, 3)]
    n = 11
    assert count_op("aten::_foreach_copy_", to_meta((a, b))).bytes == 2 * n * 4
    zero = count_op("aten::_foreach_zero_", to_meta((a,)))
    assert zero.flops == 0 and zero.bytes == n * 4
    assert count_op("aten::_foreach_pow", to_meta((a, 2))).flops == n
    assert count_op("aten::_foreach_pow", to_meta((a, 2.5))).flops == 4 * n
    assert count_op("aten::_foreach_pow", to_meta((a, b))).flops == 4 * n
    x, idx = torch.randn(6, 4), torch.tensor([0, 2, 5])
    out = torch.take(x, idx)
    for cost in _count_both(aten.take.default, (x, idx), out):
        assert cost.bytes == 2 * out.numel() * 4 + idx.numel() * 8
    fill = count_op("aten::index_fill_", to_meta((x, 0, idx, 1.0)))
    assert fill.flops == 0 and fill.bytes == idx.numel() * 8 + 3 * 4 * 4  # three rows of four written
    fill_cols = count_op("aten::index_fill_", to_meta((x, 1, idx, 1.0)))
    assert fill_cols.bytes == idx.numel() * 8 + 3 * 6 * 4


def test_loss_matmul_norm_pooling_variants_by_hand():
    """The rarer overloads of each family, each against its docstring's rule worked out by hand."""
    from roofline.count.meta import TensorMeta

    x, target = torch.randn(6, 5), torch.randint(0, 5, (6,))
    none = count_op("aten::nll_loss_forward", to_meta((x, target, None, 0, -100)))
    assert none.bytes == 6 * 8 + 6 * 4 + (6 + 1) * 4  # target, gathered log-probs; 6 losses + total_weight
    ce = count_op("aten::cross_entropy_loss", to_meta((x, target, None, 1, -100, 0.0)))
    assert ce.flops == 5 * 30 + 6 and ce.bytes == 2 * 30 * 4 + 6 * 8 + 6 * 4 + 2 * 4
    y = torch.randn(6, 5)
    back = count_op("aten::mse_loss_backward", to_meta((torch.tensor(1.0), x, y, 1)))
    assert back.flops == 3 * 30 and back.bytes == 4 + 30 * 4 * 2 + 30 * 4
    a, v, b = torch.randn(7, 3), torch.randn(3), torch.randn(7)
    _check(aten.mv.default, a, v, flops=2 * 7 * 3)
    _check(aten.addmv.default, b, a, v, flops=2 * 7 * 3)
    _check(aten.dot.default, v, v.flip(0), flops=2 * 3)
    _check(aten.outer.default, b, v, flops=7 * 3)
    _check(aten.addr.default, torch.randn(7, 3), b, v, flops=2 * 7 * 3)
    fa, fb = TensorMeta((16, 32), "float8_e4m3fn"), TensorMeta((32, 8), "float8_e4m3fn")
    scale = TensorMeta((), "float32")
    scaled = count_op("aten::_scaled_mm", [fa, fb, scale, scale, None, None, "bfloat16"])
    assert scaled.flops == 2 * 16 * 8 * 32 and scaled.bytes == 16 * 32 + 32 * 8 + 2 * 4 + 16 * 8 * 2
    ai, bi = torch.randint(-5, 5, (32, 16), dtype=torch.int8), torch.randint(-5, 5, (16, 8), dtype=torch.int8)
    assert count_op("aten::_int_mm", to_meta((ai, bi))).flops == 2 * 32 * 16 * 8
    assert count_op("aten::_int_mm", to_meta((ai, bi))).bytes == 32 * 16 + 16 * 8 + 32 * 8 * 4
    m1, m2 = torch.randn(4, 5), torch.randn(5, 6)
    assert count_op("aten::einsum", ["ij,jk->ik", to_meta([m1, m2])]).flops == 2 * 4 * 5 * 6
    assert count_op("aten::einsum", ["ij,ij->ij", to_meta([m1, m1])]).flops == 4 * 5  # no index contracted
    assert [TensorMeta((2,), d).nbytes for d in ("complex128", "complex64", "complex32", "float8_e5m2fnuz")] == \
        [32, 16, 8, 2]
    assert TensorMeta((4, 1, 3), "float32", (3, 99, 1)).is_contiguous
    assert not TensorMeta((4, 1, 3), "float32", (1, 1, 4)).is_contiguous
    xs, w = torch.randn(6, 8), torch.randn(8)
    for weight, per in ((w, 4), (None, 3)):
        rms = count_op("aten::rms_norm", to_meta((xs, [8], weight, 1e-6)))
        assert rms.modeled and rms.flops == per * 48
        assert rms.bytes == 48 * 4 * 2 + (32 if weight is not None else 0)
        fused = count_op("aten::_fused_rms_norm", to_meta((xs, [8], weight, 1e-6)))
        assert fused.modeled and fused.flops == per * 48
        assert fused.bytes == 48 * 4 * 2 + (32 if weight is not None else 0) + 6 * 4  # + float32 rstd per row
    mean, rstd = torch.randn(6, 1), torch.randn(6, 1)
    grad = count_op("aten::native_layer_norm_backward",
                    to_meta((xs, xs, [8], mean, rstd, w, w, [True, True, True])))
    assert grad.flops == (8 + 2 + 1) * 48
    only_input = count_op("aten::native_layer_norm_backward",
                          to_meta((xs, xs, [8], mean, rstd, w, w, [True, False, False])))
    assert only_input.flops == 8 * 48
    img = torch.randn(1, 2, 4, 4)
    for name, per in (("aten::upsample_nearest2d", 0), ("aten::upsample_bilinear2d", 7)):
        up = count_op(name, to_meta((img, [8, 8], False)))
        assert up.flops == per * 2 * 64 and up.bytes == (32 + 2 * 64) * 4
    for size in (5, 6, 7):
        odd = torch.randn(1, 1, size, size)
        for pad in (0, 1):
            args = (odd, [3, 3], [2, 2], [pad, pad], [1, 1], True)  # ceil_mode: a last, partial window
            pooled = aten.max_pool2d_with_indices.default(*args)
            cost = count_op("aten::max_pool2d_with_indices", to_meta(args))
            assert cost.bytes == _min_traffic((odd,), pooled), (size, pad)
    out, idx = aten.max_pool2d_with_indices.default(img, [2], [2])  # one value stands for every spatial dim
    cost = count_op("aten::max_pool2d_with_indices", to_meta((img, [2], [2])))
    assert cost.flops == out.numel() * 4 and cost.bytes == _min_traffic((img,), (out, idx))


@FAST
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), k=st.integers(1, 3), dim=st.integers(-3, 2))
def test_sort_and_topk_by_hand(shape, k, dim):
    from math import log2

    x = torch.randn(*shape)
    dim = dim % x.dim()
    n = shape[dim]
    values, indices = torch.sort(x, dim)
    for cost in _count_both(aten.sort.default, (x, dim, False), (values, indices)):
        assert cost.flops == (x.numel() * log2(n) if n > 1 else 0)
        assert cost.bytes == x.numel() * (4 + 4 + 8)
    if k <= n:
        out = torch.topk(x, k, dim)
        for cost in _count_both(aten.topk.default, (x, k, dim), tuple(out)):
            assert cost.bytes == _min_traffic((x,), tuple(out))
            assert cost.flops == (x.numel() * max(log2(max(k, 2)), 1.0) if n > 1 else 0)
    last = count_op("aten::sort", to_meta((x,)))  # dim defaults to the last
    assert last.flops == (x.numel() * log2(shape[-1]) if shape[-1] > 1 else 0)


def test_promotion_broadcast_registry_and_trace_args_by_hand():
    from roofline.count.meta import TensorMeta
    from roofline.count.registry import VIEW_OPS, Call
    from roofline.count.shapes import broadcast_shapes, promote_dtypes
    from roofline.count.trace_args import args_from_trace

    assert broadcast_shapes([(3, 1, 5), (4, 1), (1,)]) == (3, 4, 5)
    assert broadcast_shapes([(2, 1), (1, 7)]) == (2, 7)
    t = lambda shape, dtype: TensorMeta(shape, dtype)  # noqa: E731
    assert promote_dtypes([t((4,), "int32"), t((4,), "int64")]) == "int64"
    assert promote_dtypes([t((4,), "float16"), t((), "float32")]) == "float16"  # a 0-dim tensor does not win
    assert promote_dtypes([t((4,), "int64"), t((4,), "float16")]) == "float16"
    assert promote_dtypes([t((4,), "bool"), t((4,), "uint8")]) == "uint8"
    assert promote_dtypes([t((4,), "float16"), t((4,), "bfloat16")]) == "float32"
    assert promote_dtypes([t((), "int64"), t((), "float64")]) == "float64"
    assert "aten::view" in VIEW_OPS and "aten::mm" not in VIEW_OPS
    assert Call("aten::add_", [], None, None).inplace and not Call("aten::add", [], None, None).inplace
    assert not Call("aten::__iand__", [], None, None).inplace
    assert not Call("triton_poi_fused_add_0", [], None, None).inplace  # a name without "::"
    assert promote_dtypes([t((4,), "float16"), t((4,), "float32")]) == "float32"
    assert promote_dtypes([t((4,), "float64"), t((4,), "float32")]) == "float64"
    assert promote_dtypes([t((4,), "int64"), t((4,), "int8")]) == "int64"
    args = args_from_trace([[2, 3], [2, 3]], ["float", "c10::Half"], [[3, 1], [1]])
    assert args[0].strides == (3, 1) and args[1].dtype == "float16" and args[1].strides is None
    assert args_from_trace([[2, 3]], ["float"], [[3, 1, 1]])[0].strides is None  # a stride per dim, or none
    assert args_from_trace([[2, 3], [4]], ["float", "float"], [[3, 1]])[1].strides is None
    listed = args_from_trace([[2, 3], [[4], [5, 6]], []], ["float", "TensorList", "Scalar"],
                             [[3, 1], [[1], [6, 1, 1]], []], ["", "", "2.5"])
    assert [m.shape for m in listed[1]] == [(4,), (5, 6)]
    assert [m.strides for m in listed[1]] == [(1,), None] and listed[2] == 2.5
    assert args_from_trace([[2], []], ["float", "Scalar"], None, ["", "3"])[1] == 3
    assert "aten::reshape" in VIEW_OPS and count_op("aten::flatten", to_meta((torch.randn(2, 3),))).is_view
    marker = count_op("profiler::_record_function_enter_new", ["my_block", None])
    assert marker.modeled and marker.flops == 0 and marker.bytes == 0


def test_fused_adamw_reads_params_grads_and_states():
    params = [torch.randn(5), torch.randn(3, 2)]
    grads, m, v = ([torch.randn_like(p) for p in params] for _ in range(3))
    steps = [torch.tensor(1.0) for _ in params]
    cost = count_op("aten::_fused_adamw_", to_meta((params, grads, m, v, [], steps)))
    n = 11
    assert cost.flops == 14 * n
    assert cost.bytes == (2 * n + n + 2 * 2 * n) * 4  # params and both moments read + written, grads read


def test_inductor_kernel_names_get_the_table_figure():
    from roofline.count import inductor
    from roofline.count.meta import TensorMeta

    assert inductor._EXTRA_FLOPS["softmax"] == 5
    assert inductor.fused_op_names("add_mean_mul_pow_rsqrt") == ["add", "mean", "mul", "pow", "rsqrt"]
    a, b, out = TensorMeta((64, 32), "float16"), TensorMeta((32, 16), "float16"), TensorMeta((64, 16), "float16")
    tem = count_op("triton_tem_fused_mm_0", [a, b, out])
    assert tem.flops == 2 * 64 * 16 * 32 and tem.bytes == (64 * 32 + 32 * 16 + 64 * 16) * 2
    x, w, y = TensorMeta((8, 256), "float32"), TensorMeta((256,), "float32"), TensorMeta((8, 256), "float32")
    red = count_op("triton_red_fused_add_mean_mul_pow_rsqrt_0", [x, w, y])
    assert red.flops == 5 * 8 * 256  # add, mean, mul, pow (a square in an RMS norm: 1), rsqrt
    assert red.bytes == (2 * 8 * 256 + 256) * 4
    poi = count_op("triton_poi_fused_add_mul_3", [x, y])
    assert poi.flops == 2 * 8 * 256


# The fast-path, recurrent and FFT families are checked against hand counts in test_sequence_families.py.
import test_collective_rules as collective_rules  # noqa: E402
import test_factorization_rules as factorization_rules  # noqa: E402
import test_matrix_exp_jvp_rules as linalg_rules  # noqa: E402
import test_quantized_rules as quantized_rules  # noqa: E402
import test_sequence_families as sequence_families  # noqa: E402 (a module, so its tests are not collected twice)
import test_vision_ops_rules as vision_ops_rules  # noqa: E402

FAMILY_TESTS = {
    "matmul": test_matmul_family, "conv": test_convolution_family, "attention": test_attention_family,
    "attention:causal": test_causal_fraction_by_hand,
    "elementwise": test_elementwise_family, "softmax": test_softmax_family, "reduction": test_reduction_family,
    "norm": test_norm_family, "pooling": test_pooling_family, "copy": test_copy_family,
    "indexing": test_indexing_and_embedding_families, "embedding": test_indexing_and_embedding_families,
    "loss": test_loss_family, "factory": test_factory_and_view_families, "views": test_factory_and_view_families,
    "foreach": test_foreach_family, "foreach:fused": test_fused_adamw_reads_params_grads_and_states,
    "elementwise:trace": test_less_common_ops_by_hand_in_both_paths,
    "indexing:writes": test_foreach_variants_and_index_writes_by_hand,
    "loss:variants": test_loss_matmul_norm_pooling_variants_by_hand,
    "fft": sequence_families.test_fft_counts_five_n_log_n,
    "linalg": linalg_rules.test_matrix_exp_counts_two_n_cubed_per_product,
    "factorizations": factorization_rules.test_cholesky_and_its_solves,
    "vision_ops": vision_ops_rules.test_roi_align_samples_per_bin_and_gathered_bytes,
    "quantized": quantized_rules.test_linear_static_dynamic_and_fp16_weights,
    "collectives": collective_rules.test_a_collective_costs_its_message_and_is_kept_whole,
    "rnn": sequence_families.test_lstm_counts_its_gate_products_and_cells,
    "transformer": sequence_families.test_mha_fast_path_counts_at_least_the_unfused_matmuls,
    "reduction:sort": test_sort_and_topk_by_hand, "shapes": test_promotion_broadcast_registry_and_trace_args_by_hand, "inductor": test_inductor_kernel_names_get_the_table_figure,
}


def test_every_formula_family_has_a_value_test():
    families = set()
    for info in pkgutil.iter_modules(count_pkg.__path__):
        module = importlib.import_module(f"roofline.count.{info.name}")
        if any(inspect.getmodule(f) is module for f in FORMULAS.values()) or info.name == "inductor":
            families.add(info.name)
    assert families <= set(FAMILY_TESTS), sorted(families - set(FAMILY_TESTS))


# Ops whose bytes follow a documented narrower rule than "every tensor argument read, every output written":
# gathers read only the rows they gather, factories never read their template, backward kernels read only the
# saved tensors the gradients asked for need (max-pool backward takes `self` for its shape only).
NARROWER_RULE_FAMILIES = {"embedding", "factory", "foreach", "views"}
NARROWER_RULE_OPS = {"aten::native_layer_norm_backward", "aten::max_pool2d_with_indices_backward",
                     "aten::convolution_backward"}


class _TrafficRecorder(torch.utils._python_dispatch.TorchDispatchMode):
    """Every aten op with its metas and, measured on the real tensors, every argument's and output's bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        read = sum(t.numel() * t.element_size() for t in _flat(list(args)) + _flat(list(kwargs.values())))
        out = func(*args, **kwargs)
        written = sum(t.numel() * t.element_size() for t in _flat(out))
        self.ops.append((normalize_op_name(func), to_meta(args), to_meta(kwargs), to_meta(_flat(out)),
                         read + written))
        return out


def test_bytes_follow_the_minimum_traffic_rule_on_real_model_steps(one_thread):
    from test_model_coverage import TinyLlama

    torch.manual_seed(0)
    llama = TinyLlama()
    optimizer = torch.optim.AdamW(llama.parameters(), foreach=True)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, groups=2), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 4), torch.nn.Softmax(-1))
    with _TrafficRecorder() as recorder:
        llama(torch.randint(0, 64, (2, 8))).float().mean().backward()
        optimizer.step()
        net(torch.randn(2, 3, 12, 12)).sum().backward()
    checked: set[str] = set()
    for name, args, kwargs, outputs, expected in recorder.ops:
        formula = FORMULAS.get(name)
        if formula is None or name in NARROWER_RULE_OPS:
            continue
        if inspect.getmodule(formula).__name__.rsplit(".", 1)[-1] in NARROWER_RULE_FAMILIES:
            continue
        assert count_op(name, args, kwargs, outputs).bytes == expected, name
        checked.add(name)
    assert len(checked) >= 30, sorted(checked)
