"""Ops that nested (jagged) tensors and torch.compile's runtime bring (found running such models through analyze):
linear_backward (a nested tensor's linear runs it), the nested constructor, nested/sparse metadata, Dynamo's
guard and wrapper events."""

from __future__ import annotations

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost


def test_linear_backward_counts_each_gradient_asked_for():
    x, grad, w = T((14, 16), "float32"), T((14, 8), "float32"), T((8, 16), "float32")  # 896, 448, 512 bytes
    product = 2 * 14 * 16 * 8
    assert cost("aten::linear_backward", x, grad, w, [True, True, True]) == \
        (2 * product + 112, 448 + 512 + 896 + 896 + 512 + 32)
    assert cost("aten::linear_backward", x, grad, w, [False, True, False]) == (product, 448 + 896 + 512)
    assert cost("aten::linear_backward", x, grad, w, [True, False, False],
                outputs=[T((14, 16), "bfloat16")]) == (product, 448 + 512 + 448)


def test_nested_constructor_copies_its_components():
    parts = [T((5, 16), "float32"), T((9, 16), "float32")]
    assert cost("aten::_nested_tensor_from_tensor_list", parts) == (0, 2 * 14 * 16 * 4)
    assert cost("aten::_nested_tensor_from_tensor_list", parts, outputs=[T((14, 16), "float16")]) == \
        (0, 14 * 16 * 4 + 14 * 16 * 2)


def test_metadata_and_compile_runtime_are_modelled_as_free():
    for name in ("aten::sym_is_contiguous", "aten::_nested_tensor_size", "aten::_sparse_coo_tensor_with_dims_and_tensors",
                 "TorchDynamo Cache Lookup", "Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue"):
        c = count_op(name, [T((14, 16), "float32")])
        assert c.modeled and (c.flops, c.bytes) == (0, 0), name
