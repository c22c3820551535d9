"""The counting core by hand: shapes and dtype promotion, TensorMeta, dtype spellings, trace arguments rebuilt
from Kineto's fields, the Call a formula reads, and count_op's normalisation and guards."""

from __future__ import annotations

from collections import OrderedDict

import warnings

import pytest

from roofline.count import count_op
from roofline.count.counting import is_composite_op, is_view_op, normalize_op_name, to_meta
from roofline.count.meta import TensorMeta as T
from roofline.count.meta import canonical_dtype, dtype_itemsize, dtype_name, itemsize_of, unknown_dtype_note
from roofline.count.registry import Call, OpCost, flatten_metas, nbytes
from roofline.count.shapes import acc_dtype, broadcast_shapes, normalize_dims, promote_dtypes, reduced_shape
from roofline.count.trace_args import args_from_trace, parse_scalar


def test_broadcast_and_promotion():
    assert broadcast_shapes([(3, 1, 5), (4, 1), (5,)]) == (3, 4, 5)
    assert broadcast_shapes([(1,), (2, 3)]) == (2, 3)
    assert broadcast_shapes([]) == ()
    with pytest.raises(ValueError):
        broadcast_shapes([(3,), (4,)])
    assert promote_dtypes([]) == "float32"
    assert promote_dtypes([T((2,), "float16"), T((2,), "bfloat16")]) == "float32"
    assert promote_dtypes([T((2,), "float16"), T((2,), "float32")]) == "float32"
    assert promote_dtypes([T((2,), "float16"), T((), "float32")]) == "float16"  # a 0-dim tensor does not win
    assert promote_dtypes([T((), "float16"), T((), "float64")]) == "float64"
    assert promote_dtypes([T((2,), "int32"), T((), "float32")]) == "float32"  # a higher category does
    assert promote_dtypes([T((2,), "int8"), T((2,), "int64")]) == "int64"
    assert promote_dtypes([T((2,), "int32"), T((2,), "int64")]) == "int64"
    assert promote_dtypes([T((2,), "int16"), T((2,), "int32")]) == "int32"
    assert promote_dtypes([T((2,), "float32"), T((2,), "float64")]) == "float64"
    assert promote_dtypes([T((2,), "bool"), T((2,), "uint8")]) == "uint8"
    assert promote_dtypes([T((2,), "float32"), T((2,), "complex64")]) == "complex64"
    assert promote_dtypes([T((2,), "float8_e4m3fn"), T((2,), "bfloat16")]) == "bfloat16"
    assert promote_dtypes([T((2,), "bool"), T((2,), "bool")]) == "bool"


def test_dims_and_reduced_shapes():
    assert normalize_dims(None, 3) is None and normalize_dims(True, 3) is None and normalize_dims([], 3) is None
    assert normalize_dims(-1, 3) == [2] and normalize_dims([2, -3, 0], 3) == [0, 2]
    assert normalize_dims(1, 0) == [] and normalize_dims("x", 3) is None
    assert reduced_shape((4, 6, 5), [1], False) == (4, 5)
    assert reduced_shape((4, 6, 5), [1], True) == (4, 1, 5)
    assert reduced_shape((4, 6, 5), None, True) == (1, 1, 1)
    assert reduced_shape((4, 6, 5), None, False) == ()
    assert acc_dtype("float64") == "float64" and acc_dtype("bfloat16") == "float32" and acc_dtype("int8") == "float32"


def test_tensor_meta():
    t = T((3, 4, 5), "float16", (20, 5, 1))
    assert (t.numel, t.itemsize, t.nbytes, t.ndim) == (60, 2, 120, 3) and t.is_contiguous
    assert not T((3, 4), "float32", (1, 3)).is_contiguous
    assert T((3, 1, 4), "float32", (4, 99, 1)).is_contiguous  # a size-1 dim may carry any stride
    assert not T((3, 2), "float32", (2, 2)).is_contiguous
    assert T((2, 2), "float32").is_contiguous
    assert T((2,), "weird").itemsize == 4 and T((2,), "weird").nbytes == 8
    assert T((), "float64").numel == 1
    w = t.with_shape((60,))
    assert (w.shape, w.dtype, w.strides) == ((60,), "float16", None)
    assert t.with_shape([2, 3], "int8") == T((2, 3), "int8")
    assert unknown_dtype_note([T((1,), "unknown")]) and unknown_dtype_note([T((1,), "float32")]) == ""


@pytest.mark.parametrize("spelling, name", [("torch.float16", "float16"), ("float16", "float16"), (5, "float16"),
                                            ("half", "float16"), ("double", "float64"), ("long", "int64"),
                                            ("cfloat", "complex64"), (None, None), (True, None), (99, None),
                                            ("nonsense", None), (15, "bfloat16"), (11, "bool")])
def test_dtype_name(spelling, name):
    assert dtype_name(spelling) == name


def test_scalar_type_codes_follow_c10():
    """c10::ScalarType's enum order, as traces record a dtype argument."""
    from roofline.count.meta import SCALAR_TYPE_CODES

    assert SCALAR_TYPE_CODES == {
        0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 7: "float64",
        8: "complex32", 9: "complex64", 10: "complex128", 11: "bool", 12: "qint8", 13: "quint8", 14: "qint32",
        15: "bfloat16", 16: "quint4x2", 17: "quint2x4", 23: "float8_e5m2", 24: "float8_e4m3fn",
        25: "float8_e5m2fnuz", 26: "float8_e4m3fnuz", 27: "uint16", 28: "uint32", 29: "uint64"}


def test_item_sizes_match_torch():
    torch = pytest.importorskip("torch")
    from roofline.count.meta import DTYPE_ITEMSIZE

    checked = 0
    for name, size in DTYPE_ITEMSIZE.items():
        dtype = getattr(torch, name, None)
        if isinstance(dtype, torch.dtype):
            assert torch.empty(0, dtype=dtype).element_size() == size, name
            checked += 1
    assert checked >= 25


def test_dtype_spellings_and_sizes():
    assert canonical_dtype("torch.half") == "float16" and canonical_dtype(" C10::BFloat16 ") == "bfloat16"
    assert canonical_dtype("fp32") == "float32" and canonical_dtype("") == "" and canonical_dtype(None) == ""
    assert canonical_dtype("long int") == "int64" and canonical_dtype("unsigned char") == "uint8"
    assert dtype_itemsize("fp16") == 2 and dtype_itemsize("double") == 8 and dtype_itemsize("mystery") == 4
    assert dtype_itemsize(None) == 4 and itemsize_of("int8") == 1 and itemsize_of("x") == 4


def test_tensor_meta_from_live_tensors():
    torch = pytest.importorskip("torch")
    x = torch.empty(3, 4, dtype=torch.float16).t()
    m = T.from_tensor(x)
    assert (m.shape, m.dtype, m.strides) == ((4, 3), "float16", (1, 4))
    with warnings.catch_warnings():  # torch's once-per-process "Sparse CSR tensor support is in beta"
        warnings.simplefilter("ignore")
        sparse = T.from_tensor(torch.eye(3).to_sparse_csr())
    assert sparse.shape == (3, 3) and sparse.strides is None
    nested = torch.nested.nested_tensor([torch.zeros(2, 5), torch.zeros(3, 5)])
    assert T.from_tensor(nested).shape == (5, 5) and T.from_tensor(nested).strides is None
    assert T.from_tensor(torch.nested.nested_tensor([torch.zeros(2, 5)])).shape == (2, 5)  # one component
    assert T.from_tensor(torch.nested.nested_tensor([])).shape == (0,)  # no component: its size list is a float
    ragged = torch.nested.nested_tensor([torch.zeros(2, 5), torch.zeros(3, 4)])
    assert T.from_tensor(ragged).shape == (22,)
    jagged = torch.nested.nested_tensor([torch.zeros(2, 5), torch.zeros(3, 5)], layout=torch.jagged)
    assert T.from_tensor(jagged).shape == (5, 5)  # its values: the components stacked, as the strided layout's
    assert to_meta([x, (1, x), {"a": x}]) == [m, (1, m), {"a": m}]
    assert to_meta("text") == "text" and to_meta(3) == 3


def test_parse_scalar_and_args_from_trace():
    assert parse_scalar("5") == 5 and parse_scalar("0.") == 0.0 and parse_scalar(" -3 ") == -3
    assert parse_scalar("True") is True and parse_scalar("false") is False and parse_scalar("None") is None
    assert parse_scalar("") is None and parse_scalar("[2, 256]") == [2, 256] and parse_scalar("()") == []
    assert parse_scalar("(1.5, 2)") == [1.5, 2] and parse_scalar("cuda:0") == "cuda:0" and parse_scalar(7) == 7
    args = args_from_trace([[2, 3], [], [[4], [5, 6]], [], [3]], ["c10::Half", "Scalar", "TensorList", "Scalar", "float"],
                           [[3, 1], [], [[1], [6, 1]], [], [2]], ["", "0.5", "", "7", ""])
    assert args == [T((2, 3), "float16", (3, 1)), 0.5, [T((4,), "unknown", (1,)), T((5, 6), "unknown", (6, 1))],
                    7, T((3,), "float32", (2,))]
    assert args_from_trace([[]], ["int"], None, ["7"]) == [T((), "int32")]  # "int" is a 0-dim tensor's type
    assert args_from_trace([[2, 3]], ["float"], [[1]], None) == [T((2, 3), "float32")]  # stride length differs
    assert args_from_trace([None], ["float"]) == [None]
    assert args_from_trace([[]], ["TensorList"]) == [None]  # long lists are left empty by the profiler
    assert args_from_trace([[[2], "x"]], ["GenericList"]) == [None]
    assert args_from_trace([[[2]]], ["TensorList"], [[[1, 1]]]) == [[T((2,), "unknown")]]
    assert args_from_trace([[[2, 3]]], ["TensorList"], [[[1]]]) == [[T((2, 3), "unknown")]]  # too few strides
    deep = [1] * 300  # past CPython's cached small ints: lengths are compared by value
    assert args_from_trace([[deep]], ["TensorList"], [[deep]]) == [[T(tuple(deep), "unknown", tuple(deep))]]
    assert args_from_trace(None, None, None, ["", "3"]) == [None, 3]
    assert args_from_trace([[2]], ["long int", "Scalar"], None, ["", "True"]) == [T((2,), "int64"), True]
    assert args_from_trace([[2], []], ["long int", "bool"], None, ["", "True"]) == [T((2,), "int64"), T((), "bool")]
    assert args_from_trace([[2]], [5]) == [None]


def test_call_reads_args_kwargs_and_inputs():
    a, b, c = T((2,), "float32"), T((3,), "float16"), T((4,), "int8")
    call = Call("aten::add_", (a, None, [b]), {"other": c, "out": a, "grad_input": a, "alpha": 2}, None)
    assert call.arg(0) is a and call.arg(1, "x", 5) == 5 and call.arg(7, "alpha") == 2 and call.arg(9, "nope") is None
    assert call.arg(1, "other") is None  # a positional None is not replaced by a keyword
    assert call.tensor(0) is a and call.maybe_tensor(2) is None and call.maybe_tensor(5, "other") is c
    with pytest.raises(ValueError, match="argument 3 \\(self\\) is not a recorded tensor"):
        call.tensor(3, "self")
    assert call.input_metas() == [a, b, c]  # out= and grad_input= are outputs
    assert call.inplace and not Call("aten::__and__", (), None, None).inplace
    assert not Call("aten::add", (), None, None).inplace
    assert Call("aten::x", (), None, None).kwargs == {}
    assert flatten_metas([a, (b, {"k": c}), 3]) == [a, b, c]
    assert nbytes([a, None, b]) == 14


def test_count_op_names_and_guards():
    x = T((2, 3), "float32")
    assert normalize_op_name("aten.mm.default") == "aten::mm" and normalize_op_name("aten::mm.out") == "aten::mm"
    assert normalize_op_name("aten::mm") == "aten::mm" and normalize_op_name("AddBackward0") == "AddBackward0"
    assert normalize_op_name("triton_poi_fused_0") == "triton_poi_fused_0"
    assert count_op("aten.add.Tensor", (x, x)).flops == 6
    assert count_op("aten::add", [x, x], OrderedDict(alpha=1)).flops == 6
    assert count_op("aten::add", (x, x), None, x).bytes == 72  # one output meta
    assert count_op("aten::add", iter([x, x])).flops == 6
    assert count_op("aten::zeros", None, None, [x]).bytes == 24
    nothing = count_op("aten::no_such_op", (x,))
    assert not nothing.modeled and nothing.note == "no formula for aten::no_such_op"
    negative = count_op("aten::add", (T((-2, 3), "float32"), T((-2, 3), "float32")))
    assert not negative.modeled and negative.note == "aten::add: no finite, non-negative count for these arguments"
    huge = count_op("aten::mm", (T((10**200, 2), "float32"), T((2, 10**200), "float32")))
    assert not huge.modeled and huge.note.startswith("aten::mm: could not count (OverflowError")
    assert not count_op("aten::add", (x, T((4,), "float32"))).modeled  # shapes that do not broadcast
    assert is_view_op("aten::view") and is_view_op("aten.transpose.int") and not is_view_op("aten::add")
    assert is_composite_op("aten::linear") and not is_composite_op("aten::addmm")
    assert isinstance(count_op("aten::view", (x, [6])), OpCost) and count_op("aten::view", (x, [6])).is_view


def test_view_kinds_are_every_registered_view_and_the_allocations():
    from roofline.count.families import ALLOCATION, VIEW, _view_kinds

    kinds = _view_kinds()
    assert kinds == VIEW and ALLOCATION <= kinds
    assert {"view", "transpose", "expand", "empty_like"} <= kinds and "add" not in kinds and "copy" not in kinds
