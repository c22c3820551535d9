"""The interface other layers code against: names, metas, registry queries, robustness on garbage."""

from __future__ import annotations

import os

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.count import (
    OpCost,
    TensorMeta,
    count_op,
    is_composite_op,
    is_view_op,
    normalize_op_name,
    registered_ops,
    to_meta,
)


def test_normalize_op_name_forms():
    assert normalize_op_name("aten.mm.default") == "aten::mm"
    assert normalize_op_name("aten::mm") == "aten::mm"
    assert normalize_op_name("aten::add.Tensor") == "aten::add"
    assert normalize_op_name(torch.ops.aten.mm.default) == "aten::mm"
    assert normalize_op_name(torch.ops.aten.add_.Tensor) == "aten::add_"
    assert normalize_op_name(torch.ops.aten.mm) == "aten::mm"
    assert normalize_op_name("AddBackward0") == "AddBackward0"


def test_tensor_meta_from_tensor_and_properties():
    t = torch.empty(4, 6, dtype=torch.bfloat16).t()
    meta = TensorMeta.from_tensor(t)
    assert meta == TensorMeta((6, 4), "bfloat16", (1, 6))
    assert (meta.numel, meta.itemsize, meta.nbytes, meta.is_contiguous) == (24, 2, 48, False)
    assert TensorMeta((3, 1, 5), "bool", (5, 99, 1)).is_contiguous


def test_to_meta_recurses_and_keeps_the_rest():
    x = torch.zeros(2, 3)
    converted = to_meta((x, [x, 1.5], None, "s", torch.float16))
    assert converted[0] == TensorMeta((2, 3), "float32", (3, 1))
    assert converted[1] == [converted[0], 1.5]
    assert converted[2:] == (None, "s", torch.float16)


def test_registry_queries():
    ops = registered_ops()
    assert {"aten::mm", "aten::convolution", "aten::_softmax", "aten::view"} <= ops
    assert is_view_op("aten.view.default") and is_view_op("aten::transpose") and not is_view_op("aten::add")
    assert is_composite_op("aten::linear") and not is_composite_op("aten::addmm")


def test_unknown_op_is_unmodeled_never_zero():
    cost = count_op("aten::definitely_not_an_op", [TensorMeta((4,), "float32")])
    assert cost.modeled is False and "no formula" in cost.note


def test_bad_arguments_are_unmodeled_not_raised():
    cost = count_op("aten::mm", [TensorMeta((4, 5), "float32"), TensorMeta((6, 7), "float32")])
    assert cost.modeled is False and cost.note


def test_dtype_objects_from_live_recordings_are_understood():
    cost = count_op("aten::_to_copy", [TensorMeta((16,), "float32")], {"dtype": torch.float16})
    assert cost.bytes == 16 * 4 + 16 * 2


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=4))
def _fuzz(n: int) -> int:
    """Fewer examples in mutation runs (benchmarks/mutation.py sets ROOFLINE_FUZZ_EXAMPLES), where each mutant
    reruns this file."""
    return min(n, int(os.environ.get("ROOFLINE_FUZZ_EXAMPLES", n)))


_metas = st.builds(TensorMeta, st.lists(st.integers(0, 6), max_size=4).map(tuple),
                   st.sampled_from(["float32", "float16", "int64", "bool", "weird"]))
_values = st.recursive(st.one_of(_scalars, _metas), lambda inner: st.lists(inner, max_size=3), max_leaves=8)


@settings(max_examples=_fuzz(300), deadline=None)
@given(name=st.sampled_from(sorted(registered_ops())), args=st.lists(_values, max_size=8),
       outputs=st.one_of(st.none(), st.lists(_values, max_size=3)))
def test_count_op_never_raises_on_garbage(name, args, outputs):
    cost = count_op(name, args, None, outputs)
    assert isinstance(cost, OpCost)
    assert cost.modeled or cost.note


@settings(max_examples=_fuzz(50), deadline=None)
@given(name=st.one_of(st.text(max_size=20), st.integers()), args=st.one_of(st.none(), st.lists(_values, max_size=3)))
def test_count_op_never_raises_on_garbage_names(name, args):
    assert isinstance(count_op(name, args), OpCost)


_trace_entries = st.one_of(st.none(), st.text(max_size=6), st.integers(), st.lists(st.integers(-2, 9), max_size=4),
                           st.lists(st.lists(st.integers(0, 5), max_size=3), max_size=3))


@settings(max_examples=_fuzz(200), deadline=None)
@given(dims=st.lists(_trace_entries, max_size=6),
       types=st.lists(st.one_of(st.sampled_from(["float", "c10::Half", "long int", "TensorList", "Scalar",
                                                 "ScalarList", "", "bool"]), st.text(max_size=5)), max_size=6),
       concrete=st.lists(st.one_of(st.text(max_size=8), st.sampled_from(["[1, 2]", "0.", "True", "-3", ""])),
                         max_size=6))
def test_args_from_trace_never_raises_and_feeds_count_op(dims, types, concrete):
    from roofline.count import args_from_trace

    args = args_from_trace(dims, types, dims, concrete)
    assert len(args) == max(len(dims), len(types), len(concrete))
    assert isinstance(count_op("aten::add", args), OpCost)


def test_parse_of_concrete_inputs():
    from roofline.count import args_from_trace

    args = args_from_trace([[], [], [], [], [], []], ["Scalar", "ScalarList", "Scalar", "Scalar", "", "Scalar"],
                           None, ["5", "[2, 256, 32000]", "0.125", "False", "", "-100."])
    assert args == [5, [2, 256, 32000], 0.125, False, None, -100.0]
    tensors = args_from_trace([[2, 3], [[4], [5]]], ["c10::BFloat16", "TensorList"], [[3, 1], [[1], [1]]], ["", ""])
    assert tensors[0] == TensorMeta((2, 3), "bfloat16", (3, 1))
    assert [m.shape for m in tensors[1]] == [(4,), (5,)]
