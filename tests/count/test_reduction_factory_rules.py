"""Reductions, scans, sorts and factory ops by hand (count/reduction.py, count/factory.py docstrings), torch-free:
FLOPs per input element by reduction, output shapes from dim/keepdim with their dtypes (int64 indices, bool,
int64 sums of integers), n*log2(n) sorts and n*log2(k) top-k; factories write their output once, from their
size/dtype arguments, never reading a template."""

from __future__ import annotations

from math import log2

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

X = T((4, 6, 5), "float16")  # 120 elements, 240 bytes


@pytest.mark.parametrize("name, per", [("aten::sum", 1), ("aten::mean", 1), ("aten::amax", 1), ("aten::prod", 1),
                                       ("aten::nansum", 1), ("aten::var", 3), ("aten::std", 3),
                                       ("aten::logsumexp", 5), ("aten::special_logsumexp", 5),
                                       ("aten::frobenius_norm", 2)])
def test_reductions_per_input_element_and_output_shape(name, per):
    assert cost(name, X, [1]) == (per * 120, 240 + 4 * 5 * 2)
    assert cost(name, X, [1, 2]) == (per * 120, 240 + 4 * 2)
    assert cost(name, X, [-1], True) == (per * 120, 240 + 24 * 2) if per != 3 else True


def test_distributions_argument_checks_reduce_to_one_bool():
    # torch.distributions' validate_args: _is_all_true(constraint.check(value)) had time and no formula
    mask = T((4, 6, 5), "bool")
    assert cost("aten::_is_all_true", mask) == cost("aten::_is_any_true", mask) == (120, 120 + 1)


def test_reduction_dims_keepdim_and_dtypes():
    assert cost("aten::sum", X) == (120, 240 + 2)  # no dim: one element
    assert cost("aten::sum", X, [0], True) == (120, 240 + 30 * 2)
    assert cost("aten::var", X, [2], 1, True) == (360, 240 + 24 * 2)  # var's keepdim at index 3
    assert cost("aten::norm", X, 2, [0]) == (240, 240 + 60)  # norm's dim at index 2
    assert cost("aten::linalg_vector_norm", X, 2, [0, 1], False) == (240, 240 + 10)
    assert cost("aten::argmax", X, 1) == (120, 240 + 20 * 8)
    assert cost("aten::argmin", X, kwargs={"dim": 1, "keepdim": True}) == (120, 240 + 20 * 8)
    assert cost("aten::count_nonzero", X, [0, 2]) == (120, 240 + 6 * 8)
    assert cost("aten::all", X, 2) == (120, 240 + 24)
    assert cost("aten::any", X) == (120, 240 + 1)
    assert cost("aten::any", X, 2) == (120, 240 + 24)
    ints = T((4, 6, 5), "int32")
    assert cost("aten::sum", ints, [2]) == (120, 480 + 24 * 8)
    assert cost("aten::prod", ints, [2]) == (120, 480 + 24 * 8)
    assert cost("aten::mean", X, [2], False) == (120, 240 + 48)
    assert cost("aten::var_mean", X, [2]) == (360, 240 + 2 * 48)
    assert cost("aten::std_mean", X, [2]) == (360, 240 + 2 * 48)  # dim at index 1, as var_mean
    assert cost("aten::nanmean", X, [1]) == (120, 240 + 40)
    assert cost("aten::aminmax", X) == (120, 240 + 4)
    assert cost("aten::max", X, 1) == (120, 240 + 40 + 20 * 8)  # values and indices
    assert cost("aten::min", X, 1, True) == (120, 240 + 40 + 160)
    assert cost("aten::max", X) == (120, 240 + 2)
    assert cost("aten::sum", X, [1], outputs=[T((4, 5), "float32")]) == (120, 240 + 80)
    assert cost("aten::sum", X, True) == (120, 242)  # a bool is not a dim
    assert cost("aten::sum", X, [1], "yes")[1] == 240 + 40  # a non-bool keepdim reads as False


def test_scans_sorts_and_topk():
    assert cost("aten::cumsum", X, 1) == (120, 480)
    assert cost("aten::cumsum_", X, 1) == (120, 480)
    assert cost("aten::logcumsumexp", X, 1) == (600, 480)
    assert cost("aten::cummax", X, 1) == (120, 480 + 960)
    assert cost("aten::cumprod", X, 1, outputs=[T((4, 6, 5), "float32")]) == (120, 240 + 480)
    assert cost("aten::sort", X) == (pytest.approx(120 * log2(5)), 240 + 240 + 960)
    assert cost("aten::sort", X, 1) == (pytest.approx(120 * log2(6)), 240 + 240 + 960)
    assert cost("aten::sort", X, False)[0] == pytest.approx(120 * log2(5))  # sort.stable: the bool is not a dim
    assert cost("aten::argsort", X, 0) == (pytest.approx(120 * 2), 240 + 960)
    assert cost("aten::sort", T((4, 1), "float16"), 1)[0] == 0
    assert cost("aten::msort", T((), "float32")) == (0, 4 + 4 + 8)
    assert cost("aten::topk", X, 3) == (pytest.approx(120 * log2(3)), 240 + 4 * 6 * 3 * (2 + 8))
    assert cost("aten::topk", X, 1, 1) == (120, 240 + 4 * 5 * 10)  # log2 of k < 2 counts as 1
    assert cost("aten::kthvalue", X, 4, 0) == (240, 240 + 30 * 10)
    assert cost("aten::median", X, 1) == (120, 240 + 20 * 10)
    assert cost("aten::mode", X) == (120, 240 + 24 * 10)
    assert cost("aten::median", T((7,), "float16"), 0)[1] == 14 + 10
    assert cost("aten::topk", X, 2, outputs=[T((4, 6, 2), "float16")]) == (120, 240 + 96)
    assert cost("aten::topk", T((1,), "float16"), 1)[0] == 0
    assert cost("aten::topk", X, 3, "last") == (pytest.approx(120 * log2(3)), 240 + 2 + 8)  # an odd dim: the last


def test_histograms():
    assert cost("aten::histc", X, 10) == (240, 240 + 20)
    assert cost("aten::histc", X) == (240, 240 + 200)
    assert cost("aten::bincount", T((9,), "int64"), None, 4) == (18, 72 + 800)
    assert cost("aten::histogram", X, T((11,), "float32")) == (240, 240 + 44 + 200)
    assert cost("aten::histc", X, 10, outputs=[T((10,), "float32")]) == (240, 280)


def test_factories_write_their_output_only():
    for name in ("aten::empty", "aten::empty_like", "aten::new_empty", "aten::empty_strided"):
        assert cost(name, [3, 4]) == (0, 0)
    assert cost("aten::zeros", [3, 4]) == (0, 48)
    assert cost("aten::ones", [3, 4], "float16") == (0, 24)
    assert cost("aten::rand", 5) == (0, 20)
    assert cost("aten::full", [3, 4], 1.0, "int8") == (0, 12)
    assert cost("aten::full", [3, 4], 1.0) == (0, 48)
    assert cost("aten::randint", 10, [3, 4]) == (0, 96)
    assert cost("aten::randint", 2, 10, [3, 4], "int32") == (0, 48)
    assert cost("aten::randint", 10, [3, 4], "int8") == (0, 12)
    assert cost("aten::zeros", None, outputs=[T((2, 2), "float64")]) == (0, 32)
    assert not count_op("aten::zeros", (None,)).modeled
    assert cost("aten::randperm", 7) == (0, 56)
    assert cost("aten::scalar_tensor", 5) == (0, 4)  # a 0-dim float32 holding 5, not 5 elements
    assert cost("aten::scalar_tensor", -3.4e38, "float16") == (0, 2)
    assert cost("aten::scalar_tensor", 1.5, outputs=[T((), "float64")]) == (0, 8)
    assert cost("aten::randperm", 7, outputs=[T((7,), "int32")]) == (0, 28)
    assert cost("aten::zeros_like", X) == (0, 240)
    assert cost("aten::ones_like", X, "float32") == (0, 480)
    assert cost("aten::full_like", X, 2.0, "int8") == (0, 120)
    assert cost("aten::randint_like", X, 5) == (0, 240)
    assert cost("aten::new_zeros", X, [3, 4]) == (0, 24)
    assert cost("aten::new_ones", X, [3, 4], "float32") == (0, 48)
    assert cost("aten::new_full", X, [3, 4], 1.0, "int64") == (0, 96)
    assert cost("aten::new_full", X, [3, 4], 1.0) == (0, 24)
    assert cost("aten::fill_", X, 1.0) == (0, 240)
    assert cost("aten::fill_", X, T((), "float32")) == (0, 244)
    assert cost("aten::normal_", X) == (0, 240)
    assert cost("aten::bernoulli_", X, 0.5) == (0, 240)
    assert cost("aten::bernoulli_", X, T((4, 6, 5), "float32")) == (0, 240 + 480)
    assert cost("aten::bernoulli", X) == (0, 480)
    assert cost("aten::normal", X, 1.0) == (0, 480)
    assert cost("aten::normal", 0.0, 1.0, [3, 4]) == (0, 48)
    assert cost("aten::normal", 0.0, 1.0, [3, 4], None, "float16") == (0, 24)
    # sampling (generate(do_sample=True)): the probabilities read, num_samples int64 indices per row written
    assert cost("aten::multinomial", T((4, 100), "float32"), 1) == (0, 1600 + 4 * 8)
    assert cost("aten::multinomial", T((100,), "float32"), 3, True) == (0, 400 + 3 * 8)


def test_ranges_eye_and_windows():
    assert cost("aten::arange", 10) == (10, 80)
    assert cost("aten::arange", 10, "float32") == (10, 40)
    assert cost("aten::arange", 2, 10) == (8, 64)
    assert cost("aten::arange", 2, 10, "int32") == (8, 32)
    assert cost("aten::arange", 0, 10, 3) == (4, 32)
    assert cost("aten::arange", 0.0, 1.0, 0.25) == (4, 16)
    assert cost("aten::arange", 0, 10, 3, "float16") == (4, 8)
    assert cost("aten::arange", 5, 2) == (0, 0)
    assert cost("aten::eye", 3) == (9, 36)
    assert cost("aten::eye", 3, 5) == (15, 60)
    assert cost("aten::linspace", 0.0, 1.0, 7) == (7, 28)
    assert cost("aten::linspace", 0.0, 1.0, 7, "float64") == (7, 56)
    assert cost("aten::logspace", 0.0, 1.0, 7, 10.0, "float16") == (7, 14)
    assert cost("aten::tril_indices", 4, 3) == (2 * 9, 2 * 9 * 8)  # rows keep 1, 2, 3, 3
    assert cost("aten::tril_indices", 4, 3, 1) == (2 * 11, 2 * 11 * 8)  # 2, 3, 3, 3
    assert cost("aten::triu_indices", 4, 3) == (2 * 6, 2 * 6 * 8)  # 3, 2, 1, 0
    assert cost("aten::triu_indices", 4, 3, -1) == (2 * 9, 2 * 9 * 8)  # 3, 3, 2, 1
    assert cost("aten::arange", 10, outputs=[T((10,), "float32")]) == (10, 40)
    assert cost("aten::hann_window", 8) == (40, 32)
    assert cost("aten::hamming_window", 8) == (40, 32)
    assert cost("aten::blackman_window", 8) == (72, 32)
    assert cost("aten::bartlett_window", 8) == (16, 32)
    assert cost("aten::kaiser_window", 8) == (96, 32)
    assert cost("aten::hann_window", None, outputs=[T((4,), "float64")]) == (20, 32)
    assert not count_op("aten::hann_window", (None,)).modeled


def test_equal_reads_both_and_compares_each_pair():
    """torch.equal had no formula: nn.TransformerEncoder's nested fast path calls it on the nested sizes of every
    residual add (unmodelled rows). Unequal shapes: answered without a read."""
    assert cost("aten::equal", X, X) == (120, 480)
    assert cost("aten::equal", X, T((4, 6, 4), "float16")) == (0, 0)
    assert count_op("aten::equal", [X, X]).modeled


def test_searchsorted_and_bucketize_binary_searches():
    """Sweep 7 (a ranking loss's histogram): searchsorted and bucketize had no formula (12% of its step unmodelled).
    ceil(log2(n + 1)) compares per value looked up in a sorted row of n."""
    from roofline.count.meta import TensorMeta as M

    rows, values = M((64, 100), "float32"), M((64, 100), "float32")  # 25,600 bytes each; 7 compares per value
    assert cost("aten::searchsorted", rows, values) == (6400 * 7, 25600 * 2 + 6400 * 8)
    assert cost("aten::searchsorted", rows, values, True) == (6400 * 7, 25600 * 2 + 6400 * 4)  # out_int32
    edges = M((17,), "float32")  # 5 compares (log2 18)
    assert cost("aten::bucketize", values, edges) == (6400 * 5, 25600 + 68 + 6400 * 8)
    assert cost("aten::bucketize", 0.5, edges) == (5, 68 + 8)
