"""Every indexing formula by hand (count/indexing.py's docstring), torch-free: gathers read what they gather plus
the index; scatters read self, source and index and write a copy of self, or in place only what they touch;
accumulating forms add 1 FLOP per source element and read the touched elements; data-dependent outputs need
the recorded output. Element sizes differ (fp16 self, fp32 source, int64 index) so a swapped tensor shows."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.indexing import indexed_shape
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

S = T((7, 5, 3), "float16")  # 105 elements, 210 bytes
I4 = T((4,), "int64")  # 32 bytes


def test_gathers():
    out = 4 * 5 * 3 * 2
    assert cost("aten::index_select", S, 0, I4) == (0, out + 32 + out)
    assert cost("aten::index_select", S, -2, I4) == (0, 7 * 4 * 3 * 2 * 2 + 32)
    assert cost("aten::index_select", S, 1, I4, outputs=[T((7, 4, 3), "float32")]) == (0, 168 + 32 + 336)
    assert cost("aten::index_select", S, kwargs={"dim": 2, "index": I4}) == (0, 7 * 5 * 4 * 2 * 2 + 32)
    idx = T((7, 2, 3), "int64")
    assert cost("aten::gather", S, 1, idx) == (0, 42 * 2 + 42 * 8 + 42 * 2)
    assert cost("aten::gather", S, 1, idx, outputs=[T((7, 2, 3), "float32")]) == (0, 84 + 336 + 168)
    assert cost("aten::take", S, I4) == (0, 8 + 32 + 8)
    assert cost("aten::take_along_dim", S, idx) == (0, 84 + 336 + 84)


def test_scatters():
    idx = T((2, 5, 3), "int64")  # 30 elements, 240 bytes
    src = T((2, 5, 3), "float32")
    assert cost("aten::scatter", S, 0, idx, src) == (0, 210 + 240 + 30 * 4 + 210)
    assert cost("aten::scatter_add", S, 0, idx, src) == (30, 210 + 240 + 120 + 210)
    assert cost("aten::scatter_reduce", S, 0, idx, src, "sum") == (30, 210 + 240 + 120 + 210)
    assert cost("aten::scatter_", S, 0, idx, src) == (0, 240 + 120 + 30 * 2)
    assert cost("aten::scatter_add_", S, 0, idx, src) == (30, 240 + 120 + 60 + 60)
    assert cost("aten::scatter_reduce_", S, 0, idx, src, "amax") == (30, 240 + 120 + 60 + 60)
    assert cost("aten::scatter", S, 0, idx, 1.5) == (0, 210 + 240 + 210)  # a value, no source
    one = T((), "float32")
    assert cost("aten::scatter_", S, 0, idx, one) == (0, 240 + 4 + 60)  # a 0-d source is read once
    assert cost("aten::scatter", S, 0, idx, src, outputs=[T((7, 5, 3), "float32")])[1] == 210 + 240 + 120 + 420


def test_advanced_index_shapes_follow_numpy_rules():
    x = T((2, 3, 5, 7), "float32")
    i, j = T((4,), "int64"), T((4,), "int64")
    assert indexed_shape(x, [i]) == (4, 3, 5, 7)
    assert indexed_shape(x, [None, i]) == (2, 4, 5, 7)
    assert indexed_shape(x, [None, i, j]) == (2, 4, 7)
    assert indexed_shape(x, [i, None, j]) == (4, 3, 7)  # not adjacent: the index dims go first
    assert indexed_shape(x, [None, i, None, j]) == (4, 2, 5)
    assert indexed_shape(x, [T((2, 1), "int64"), T((1, 6), "int64")]) == (2, 6, 5, 7)
    with pytest.raises(ValueError):
        indexed_shape(x, [T((4,), "bool")])
    with pytest.raises(ValueError):
        indexed_shape(x, [None, 3])


def test_index_and_index_put():
    x = T((7, 5), "float16")
    i = T((3,), "int64")  # 24 bytes
    assert cost("aten::index", x, [i]) == (0, 30 + 24 + 30)
    assert cost("aten::index", x, i) == (0, 30 + 24 + 30)
    assert cost("aten::_unsafe_index", x, [None, i]) == (0, 42 + 24 + 42)
    assert cost("aten::index", x, [T((7,), "bool")], outputs=[T((4, 5), "float16")]) == (0, 40 + 7 + 40)
    assert not count_op("aten::index", (x, [T((7,), "bool")])).modeled
    assert not count_op("aten::index", (x, [])).modeled
    v = T((3, 5), "float32")  # 60 bytes
    assert cost("aten::index_put", x, [i], v) == (0, 70 + 24 + 60 + 70)
    assert cost("aten::index_put", x, [i], v, True) == (15, 70 + 24 + 60 + 30 + 70)
    assert cost("aten::index_put", x, [i], v, kwargs={"accumulate": True})[0] == 15
    assert cost("aten::index_put_", x, [i], v) == (0, 24 + 60 + 30)
    assert cost("aten::_index_put_impl_", x, [i], v, True) == (15, 24 + 60 + 30 + 30)
    assert cost("aten::index_put", x, [i], v, outputs=[T((7, 5), "float32")])[1] == 70 + 24 + 60 + 140
    scalar_value = T((), "float32")
    assert cost("aten::index_put_", x, [i], scalar_value) == (0, 24 + 4 + 30)  # broadcast value read once
    mask = T((7, 5), "bool")
    assert cost("aten::index_put_", x, [mask], T((6,), "float16")) == (0, 35 + 12 + 12)  # mask: values' count


def test_index_add_copy_fill():
    x = T((7, 5), "float16")
    i = T((3,), "int64")
    src = T((3, 5), "float32")
    assert cost("aten::index_add", x, 0, i, src) == (15, 70 + 24 + 60 + 30 + 70)
    assert cost("aten::index_add_", x, 0, i, src) == (15, 24 + 60 + 30 + 30)
    assert cost("aten::index_reduce_", x, 0, i, src, "prod") == (15, 24 + 60 + 30 + 30)
    assert cost("aten::index_copy", x, 0, i, src) == (0, 70 + 24 + 60 + 70)
    assert cost("aten::index_copy_", x, 0, i, src) == (0, 24 + 60 + 30)
    assert cost("aten::index_copy", x, 0, i, src, outputs=[T((7, 5), "float32")])[1] == 70 + 24 + 60 + 140
    assert cost("aten::index_fill_", x, 0, i, 0.0) == (0, 24 + 3 * 5 * 2)
    assert cost("aten::index_fill_", x, 1, i, 0.0) == (0, 24 + 3 * 7 * 2)
    assert cost("aten::index_fill_", x, -1, i, 0.0) == (0, 24 + 3 * 7 * 2)
    assert cost("aten::index_fill", x, 1, i, 0.0) == (0, 70 + 24 + 70)
    assert cost("aten::index_fill", x, 1, i, 0.0, outputs=[T((7, 5), "float32")]) == (0, 70 + 24 + 140)


def test_masked_and_data_dependent():
    x = T((7, 5), "float16")
    mask = T((7, 5), "bool")
    src = T((40,), "float32")
    assert cost("aten::masked_scatter_", x, mask, src) == (0, 35 + 35 * 4 + 35 * 2)
    assert cost("aten::masked_scatter_", x, mask, T((20,), "float32")) == (0, 35 + 20 * 4 + 20 * 2)
    assert cost("aten::masked_scatter", x, mask, src) == (0, 70 + 35 + 140 + 70)
    assert cost("aten::masked_scatter", x, mask, src, outputs=[T((7, 5), "float32")]) == (0, 70 + 35 + 140 + 140)
    for name in ("aten::masked_select", "aten::nonzero", "aten::unique", "aten::argwhere"):
        assert not count_op(name, (x, mask)).modeled
    assert cost("aten::masked_select", x, mask, outputs=[T((9,), "float16")]) == (35, 70 + 35 + 18)
    assert cost("aten::nonzero", x, outputs=[T((9, 2), "int64")]) == (35, 70 + 144)
    assert cost("aten::where", mask, x, x) == (35, 35 + 70 + 70 + 70)
    assert cost("aten::where", mask, outputs=[T((9, 2), "int64")]) == (35, 35 + 144)
    assert not count_op("aten::where", (mask,)).modeled


def test_view_backward_scatter_and_item():
    g = T((3, 5), "float16")
    assert cost("aten::slice_backward", g, [7, 5], 0, 2, 5, 1) == (0, 30 + 70)
    assert cost("aten::select_backward", g, (7, 3, 5), 1, 0) == (0, 30 + 210)
    assert cost("aten::slice_backward", g, [7, 5], 0, 2, 5, 1, outputs=[T((7, 5), "float32")]) == (0, 30 + 140)
    assert not count_op("aten::slice_backward", (g, None)).modeled
    x = T((7, 5), "float16")
    assert cost("aten::slice_scatter", x, g, 0, 2, 5, 1) == (0, 70 + 30 + 70)
    assert cost("aten::select_scatter", x, g, 0, 1, outputs=[T((7, 5), "float32")]) == (0, 70 + 30 + 140)
    assert cost("aten::_local_scalar_dense", T((), "float64")) == (0, 8)
    assert count_op("aten::item", (T((1,), "float16"),)).bytes == 2
    assert "device sync" in count_op("aten::item", (T((1,), "float16"),)).note
