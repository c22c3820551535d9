"""Every copy/cast formula by hand (count/copy.py's docstring): source read at its dtype, destination written at
its dtype, no-op forms 0 bytes, joined and tiled and padded outputs sized from the arguments. torch-free."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

X = T((3, 5), "float16")  # 30 bytes
Y = T((3, 5), "float32")  # 60 bytes


def test_copies_and_casts():
    assert cost("aten::copy_", Y, X) == (0, 30 + 60)
    assert cost("aten::copy_", Y, T((5,), "float16")) == (0, 10 + 60)  # a broadcast source read at its size
    assert cost("aten::_copy_from", X, Y) == (0, 30 + 60)
    assert cost("aten::_copy_from_and_resize", Y, X) == (0, 60 + 30)
    assert cost("aten::_to_copy", X, "float32") == (0, 30 + 60)
    assert cost("aten::_to_copy", X) == (0, 60)
    assert cost("aten::_to_copy", X, kwargs={"dtype": "torch.float64"}) == (0, 30 + 120)
    assert cost("aten::_to_copy", X, outputs=[T((3, 5), "int8")]) == (0, 45)


@pytest.mark.parametrize("args, kwargs, nbytes", [
    ((X, "float32"), None, 90),  # to.dtype
    ((X, "float16"), None, 0),  # nothing changes
    ((X, "float16", False, True), None, 60),  # to.dtype with copy=True
    ((X, "cuda", "float32"), None, 90),  # to.device(self, device, dtype)
    ((X, "cuda", None), None, 0),
    ((X, "cuda", "float16", False, True), None, 60),
    ((X, Y), None, 90),  # to.other
    ((X, T((1,), "float16"), False, True), None, 60),
    ((X, None, None, "cuda", None, False, True), None, 60),  # to.dtype_layout, copy at index 6
    ((X, None, None, "cuda", None, False, False), None, 0),
    ((X,), {"dtype": "torch.float32"}, 90),
    ((X,), {"copy": True}, 60),
])
def test_to_overloads(args, kwargs, nbytes):
    assert cost("aten::to", *args, kwargs=kwargs) == (0, nbytes)


def test_same_size_copies_and_contiguous():
    for name in ("aten::clone", "aten::flip", "aten::tril", "aten::t_copy", "aten::view_copy"):
        assert cost(name, X) == (0, 60), name
    assert cost("aten::clone", X, outputs=[Y]) == (0, 90)
    assert cost("aten::tril_", X, outputs=[Y]) == (0, 60)  # in place: self written whatever the output says
    assert cost("aten::contiguous", X) == (0, 0)
    transposed = T((5, 3), "float16", strides=(1, 5))
    assert cost("aten::contiguous", transposed) == (0, 60)


def test_cat_and_stack():
    a, b = T((2, 5), "float16"), T((4, 5), "float16")
    assert cost("aten::cat", [a, b], 0) == (0, 20 + 40 + 60)
    assert cost("aten::cat", [a, b]) == (0, 120)
    c = T((2, 3), "float16")
    assert cost("aten::cat", [a, c], 1) == (0, 20 + 12 + 32)
    assert cost("aten::cat", [a, c], -1) == (0, 64)
    empty = T((0,), "float16")
    assert cost("aten::cat", [empty, a, b], 0) == (0, 60 + 60)  # the legacy empty 1-D tensor is skipped
    assert cost("aten::stack", [a, a, a], 0) == (0, 60 + 60)
    assert cost("aten::stack", [a, a], 2) == (0, 40 + 40)
    assert cost("aten::stack", [a, a], -1) == (0, 80)
    assert cost("aten::hstack", [a, a]) == (0, 80)
    assert cost("aten::cat", [a, b], 0, outputs=[T((6, 5), "float32")]) == (0, 60 + 120)
    assert not count_op("aten::cat", ([],)).modeled
    assert not count_op("aten::cat", ([a, 3],)).modeled
    unknown = count_op("aten::cat", ([T((2, 5), "unknown"), a], 0))
    assert unknown.bytes == 40 + 20 + 80 and unknown.note == "tensor-list dtype not recorded: 4 bytes an element assumed"


def test_cat_of_an_unrecorded_tensor_list_is_a_copy_of_its_recorded_output():
    """clip_grad_norm_'s torch.stack of 91 per-parameter norms, its TensorList recorded without shapes: with the
    output's shape known, the inputs hold exactly its elements (read = written); without, unmodelled with why."""
    for name in ("aten::cat", "aten::stack"):
        for unrecorded in (None, [], [None, None]):
            counted = count_op(name, (unrecorded, 0), outputs=[T((91,), "float32")])
            assert (counted.modeled, counted.flops, counted.bytes) == (True, 0.0, 2 * 91 * 4)
            assert counted.note == ("tensor list's shapes not recorded: counted as a copy of the output's 364 bytes "
                                    "(read = written)")
            bare = count_op(name, (unrecorded, 0))
            assert not bare.modeled and bare.bytes == 0
            assert bare.note.endswith("the tensor list's shapes were not recorded, nor the output's)")


def test_repeat_expand_interleave():
    assert cost("aten::repeat", X, [2, 3]) == (0, 30 + 180)
    assert cost("aten::repeat", X, [2, 1, 3]) == (0, 30 + 180)
    assert cost("aten::tile", X, [2, 2]) == (0, 30 + 120)
    assert cost("aten::repeat", X, [2, 3], outputs=[T((6, 15), "float32")]) == (0, 30 + 360)
    assert not count_op("aten::repeat", (X, None)).modeled
    col = T((3, 1), "float16")
    assert cost("aten::expand_copy", col, [3, 4]) == (0, 6 + 24)
    assert cost("aten::expand_copy", col, [2, -1, 4]) == (0, 6 + 48)
    assert cost("aten::expand_copy", col, [5, 2, -1, 4]) == (0, 6 + 5 * 2 * 3 * 4 * 2)
    assert cost("aten::expand_copy", col, [3, 4], outputs=[T((3, 4), "float32")]) == (0, 6 + 48)
    assert not count_op("aten::expand_copy", (col, 3)).modeled
    assert cost("aten::repeat_interleave", X, 3) == (0, 30 + 90)
    assert cost("aten::repeat_interleave", X, T((3,), "int64"), 0, 7) == (0, 30 + 7 * 2 * 5)
    assert cost("aten::repeat_interleave", T((3,), "float16"), T((3,), "int64"), 0, 7) == (0, 6 + 7 * 2)
    assert cost("aten::repeat_interleave", X, outputs=[T((9, 5), "float16")]) == (0, 30 + 90)
    assert not count_op("aten::repeat_interleave", (X, T((3,), "int64"))).modeled
    assert not count_op("aten::repeat_interleave", (X, True)).modeled


def test_padding():
    img = T((2, 3, 4), "float32")  # 96 bytes
    assert cost("aten::constant_pad_nd", img, [1, 2], 0.0) == (0, 96 + 2 * 3 * 7 * 4)
    assert cost("aten::constant_pad_nd", img, [1, 2, 0, 1]) == (0, 96 + 2 * 4 * 7 * 4)
    assert cost("aten::reflection_pad2d", img, [1, 1, 1, 1]) == (0, 96 + 2 * 5 * 6 * 4)
    assert cost("aten::pad", img, [0, 0, 2, 0]) == (0, 96 + 2 * 5 * 4 * 4)
    assert cost("aten::constant_pad_nd", img, [1, 2], outputs=[T((2, 3, 7), "float16")]) == (0, 96 + 84)
    assert not count_op("aten::constant_pad_nd", (img, [1, 2, 3])).modeled
    assert not count_op("aten::constant_pad_nd", (img, None)).modeled



def test_padding_backward_and_pixel_shuffles():
    """Sweep 7 (an ESPCN-like upscaler): the pads' backward and pixel (un)shuffle had no formula (11% unmodelled)."""
    img, grad = T((2, 3, 4, 4), "float32"), T((2, 3, 6, 6), "float32")  # 384 and 864 bytes
    assert cost("aten::replication_pad2d_backward", grad, img, [1, 1, 1, 1]) == (216, 864 + 384)
    assert cost("aten::reflection_pad1d_backward", T((2, 3, 8), "float32"), T((2, 3, 6), "float32"), [1, 1]) == \
        (48, 192 + 144)
    shuffled = T((2, 48, 8, 8), "float32")  # 24,576 bytes, 4x upscaled to (2, 3, 32, 32)
    assert cost("aten::pixel_shuffle", shuffled, 4) == (0, 2 * 24576)
    assert cost("aten::pixel_unshuffle", T((2, 3, 32, 32), "float32"), 2) == (0, 2 * 24576)
    assert cost("aten::native_channel_shuffle", shuffled, 4) == (0, 2 * 24576)

def test_nested_repacks():
    padded = T((2, 5, 4), "float32")  # 160 bytes
    mask = T((2, 5), "bool")
    assert cost("aten::_nested_tensor_from_mask", padded, mask) == (0, 160 + 160 + 10)
    assert cost("aten::_nested_tensor_from_mask", padded, mask, outputs=[T((7, 4), "float32")]) == (0, 112 + 112 + 10)
    assert cost("aten::to_padded_tensor", T((7, 4), "float32"), outputs=[padded]) == (0, 112 + 160)
    assert cost("aten::_nested_tensor_from_mask_left_aligned", padded, mask) == (0, 10)


def test_packed_sequences_move_the_kept_elements_and_the_padded_output():
    """pack_padded_sequence of a (3, 10, 8) fp32 batch of lengths 9, 7, 3 (N = 19 kept rows, 9 steps)."""
    padded, lengths = T((3, 10, 8), "float32"), T((3,), "int64")
    data, batch_sizes = T((19, 8), "float32"), T((9,), "int64")
    assert cost("aten::_pack_padded_sequence", padded, lengths, True, outputs=[data, batch_sizes]) == (
        0, 19 * 8 * 4 * 2 + 3 * 8 + 9 * 8)  # the kept rows read and written packed
    assert cost("aten::_pad_packed_sequence", T((19, 16), "float32"), batch_sizes, True, 0.0, -1,
                outputs=[T((3, 9, 16), "float32"), lengths]) == (0, 19 * 16 * 4 + 9 * 8 + 3 * 9 * 16 * 4 + 3 * 8)
    assert cost("aten::_pack_padded_sequence_backward", data, [3, 10, 8], batch_sizes, True) == (
        0, 19 * 8 * 4 + 9 * 8 + 3 * 10 * 8 * 4)  # the padded gradient written whole, zeros included
    for name, args in [("aten::_pack_padded_sequence", (padded, lengths, True)),
                       ("aten::_pad_packed_sequence", (data, batch_sizes, True, 0.0, -1))]:
        alone = count_op(name, args)  # a trace: the sizes are values it does not record
        assert not alone.modeled and "does not record" in alone.note


def test_fsdp2_copies_around_its_collectives_are_counted():
    # shapes from a 2-rank fully_shard trace (sweep 3): a Linear(32, 64)'s weight and bias shards
    shards = [T((1024,), "float32"), T((32,), "float32")]
    copy_in = count_op("fsdp::all_gather_copy_in", [shards, T((2112,), "float32"), [1024, 32], 1056, 0])
    assert copy_in.modeled and (copy_in.flops, copy_in.bytes) == (0.0, 2 * 1056 * 4)
    outs = [T((2, 1024), "float32"), T((2, 32), "float32")]
    split = count_op("fsdp::split_with_sizes_copy", [T((2, 1056), "float32"), [1024, 32], 1, outs])
    assert split.modeled and split.bytes == 2 * 2112 * 4
    grads = [T((4, 64), "float32"), T((4,), "float32")]
    cat = count_op("fsdp::chunk_cat", [grads, 0, 2, T((2, 130), "float32")])
    assert cat.modeled and cat.bytes == (260 + 260) * 4


def test_diagonals_type_as_and_mkldnn_layouts():
    """Sweep 8: diag_embed (lstsq's and slogdet's backward), type_as (Longformer) and to_mkldnn (a frozen,
    optimized TorchScript model) had no formula."""
    v, m = T((3, 8), "float32"), T((6, 6), "float32")
    assert cost("aten::diag_embed", v) == (0, 96 + 3 * 8 * 8 * 4)
    assert cost("aten::diag_embed", v, 1)[1] == 96 + 3 * 9 * 9 * 4
    assert cost("aten::diag", T((8,), "float32")) == (0, 32 + 8 * 8 * 4)
    assert cost("aten::diag", m) == (0, 2 * 6 * 4)
    assert cost("aten::diag", m, 2) == (0, 2 * 4 * 4)
    assert cost("aten::diag", m, -1) == (0, 2 * 5 * 4)
    assert cost("aten::type_as", m, T((2,), "float32")) == (0, 0)
    assert cost("aten::type_as", m, T((2,), "bfloat16")) == (0, 144 + 72)
    assert cost("aten::to_mkldnn", T((4, 3, 32, 32), "float32"), None) == (0, 2 * 4 * 3 * 32 * 32 * 4)
