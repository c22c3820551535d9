"""Sweep 7 (a Gaussian process's marginal likelihood): Cholesky, its solves, triangular solves and cdist had no
formula and were 26% of the step unmodelled. LAPACK's FLOP counts by hand (count/factorizations.py's docstring)."""

from __future__ import annotations

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

A = T((3, 16, 16), "float32")  # a batch of 3: 3072 bytes
B = T((3, 16, 4), "float32")  # 768 bytes


def test_cholesky_and_its_solves():
    assert cost("aten::linalg_cholesky_ex", A, False, False) == (3 * 16 ** 3 / 3, 2 * 3072)
    assert cost("aten::linalg_cholesky", A) == (3 * 16 ** 3 / 3, 2 * 3072)
    assert cost("aten::_cholesky_solve_helper", B, A, False) == (3 * 2 * 16 * 16 * 4, 768 + 3072 + 768)
    assert cost("aten::cholesky_solve", B, A) == (3 * 2 * 16 * 16 * 4, 768 + 3072 + 768)
    assert cost("aten::linalg_cholesky_ex", T((8, 8), "complex64"))[0] == 4 * 8 ** 3 / 3


def test_triangular_solves_left_and_right():
    assert cost("aten::linalg_solve_triangular", A, B, False, True, False) == (3 * 16 * 16 * 4, 3072 + 768 + 768)
    right = T((3, 4, 16), "float32")  # X A = B: k = 4 rows, n = 16
    assert cost("aten::linalg_solve_triangular", A, right, kwargs={"upper": True, "left": False})[0] == 3 * 16 * 16 * 4
    assert cost("aten::triangular_solve", B, A, True)[0] == 3 * 16 * 16 * 4
    # one matrix against a batch of right-hand sides
    assert cost("aten::linalg_solve_triangular", T((16, 16), "float32"), B, False)[0] == 3 * 16 * 16 * 4


def test_lu_solve_and_inverse():
    assert cost("aten::linalg_lu_factor_ex", A, True, False)[0] == 3 * (16 ** 3 - 16 ** 3 / 3)
    assert cost("aten::_linalg_solve_ex", A, B, True, False)[0] == 3 * (2 * 16 ** 3 / 3 + 2 * 16 * 16 * 4)
    vectors = T((3, 16), "float32")
    assert cost("aten::linalg_solve", A, vectors)[0] == 3 * (2 * 16 ** 3 / 3 + 2 * 16 * 16)
    assert cost("aten::linalg_inv_ex", A, False) == (3 * 2 * 16 ** 3, 2 * 3072)
    assert cost("aten::inverse", A)[0] == 3 * 2 * 16 ** 3


def test_euclidean_distances():
    x1, x2 = T((256, 8), "float32"), T((100, 8), "float32")
    out = 256 * 100 * 4
    assert cost("aten::_euclidean_dist", x1, x2) == (2 * 256 * 100 * 8 + 2 * 356 * 8 + 3 * 256 * 100,
                                                      8192 + 3200 + out)
    assert cost("aten::_cdist_forward", x1, x2, 1.0, None) == (3 * 256 * 100 * 8, 8192 + 3200 + out)


def test_eigen_and_singular_value_decompositions_stay_unmodelled():
    assert not count_op("aten::_linalg_eigh", (A, "L", True)).modeled
    assert not count_op("aten::_linalg_svd", (A, False, True, None)).modeled
