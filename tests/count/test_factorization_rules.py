"""Sweep 7 (a Gaussian process's marginal likelihood): Cholesky, its solves, triangular solves and cdist had no
formula and were 26% of the step unmodelled. LAPACK's FLOP counts by hand (count/factorizations.py's docstring).
eigh, eig, svd, qr (and det, lu_solve, geqrf, householder_product) had none either: every caller of them (a matrix
norm, a condition number, a rank, pca_lowrank) showed them unmodelled; the textbook counts now, live and from a
trace alike."""

from __future__ import annotations

import pytest

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


def test_symmetric_and_general_eigendecompositions():
    n3 = 3 * 16 ** 3  # the batch of 3
    values, vectors = 3 * 16 * 4, 3072
    assert cost("aten::_linalg_eigh", A, "L", True) == (9 * n3, 3072 + values + vectors)
    assert cost("aten::_linalg_eigh", A, "L", False) == (4 * n3 / 3, 3072 + values)
    assert cost("aten::linalg_eigh", A) == cost("aten::_linalg_eigh", A, "L", True)
    assert cost("aten::linalg_eigvalsh", A, "U") == cost("aten::_linalg_eigh", A, "L", False)
    hermitian = T((8, 8), "complex64")  # values real (float32), vectors complex
    assert cost("aten::_linalg_eigh", hermitian, "L", True) == (4 * 9 * 8 ** 3, 512 + 8 * 4 + 512)
    complex_values, complex_vectors = 3 * 16 * 8, 3 * 16 * 16 * 8  # a real matrix's eigenpairs are complex64
    assert cost("aten::linalg_eig", A) == (25 * n3 + 4 * n3 / 3, 3072 + complex_values + complex_vectors)
    assert cost("aten::_linalg_eigvals", A) == (10 * n3, 3072 + complex_values)
    assert cost("aten::linalg_eigvals", A) == cost("aten::_linalg_eigvals", A)


def test_singular_value_decompositions_wide_or_tall():
    tall, wide = T((2, 40, 10), "float32"), T((2, 10, 40), "float32")  # 3200 bytes each
    m, n = 40, 10
    s_bytes = 2 * 10 * 4
    assert cost("aten::_linalg_svd", tall, False, False, None) == (2 * (4 * m * n * n - 4 * n ** 3 / 3),
                                                                  3200 + s_bytes)
    thin = 2 * (14 * m * n * n + 8 * n ** 3)
    assert cost("aten::_linalg_svd", tall, False, True, None) == (thin, 3200 + 3200 + s_bytes + 2 * 10 * 10 * 4)
    full = 2 * (4 * m * m * n + 8 * m * n * n + 9 * n ** 3)
    assert cost("aten::_linalg_svd", tall, True, True, None) == (full, 3200 + 2 * 40 * 40 * 4 + s_bytes + 800)
    assert cost("aten::_linalg_svd", wide, True, True, None) == (full, 3200 + 800 + s_bytes + 2 * 40 * 40 * 4)
    assert cost("aten::linalg_svd", tall) == cost("aten::_linalg_svd", tall, True, True, None)  # its default: full
    assert cost("aten::svd", tall) == cost("aten::_linalg_svd", tall, False, True, None)  # some=True: thin
    assert cost("aten::linalg_svdvals", wide) == cost("aten::_linalg_svd", wide, False, False, None)


def test_qr_geqrf_householder_det_and_lu_solve():
    tall = T((2, 40, 10), "float32")
    m, n = 40, 10
    geqrf = 2 * m * n * n - 2 * n ** 3 / 3
    assert cost("aten::geqrf", tall) == (2 * geqrf, 3200 + 3200 + 2 * 10 * 4)
    assert cost("aten::linalg_qr", tall, "r") == (2 * geqrf, 3200 + 2 * 10 * 10 * 4)
    reduced = geqrf + 2 * m * n * n - 2 * n ** 3 / 3
    assert cost("aten::linalg_qr", tall, "reduced") == (2 * reduced, 3200 + 3200 + 800)
    complete = geqrf + 4 * m * m * n - 4 * m * n * n + 4 * n ** 3 / 3
    flops, nbytes = cost("aten::linalg_qr", tall, "complete")
    assert flops == pytest.approx(2 * complete) and nbytes == 3200 + 2 * 40 * 40 * 4 + 3200
    traced = count_op("aten::linalg_qr", (tall, None), None, None)  # a trace: no mode
    assert (traced.flops, traced.modeled) == (2 * reduced, True) and "reduced" in traced.note
    tau = T((2, 10), "float32")
    assert cost("aten::linalg_householder_product", tall, tau) == (2 * (2 * m * n * n - 2 * n ** 3 / 3),
                                                                   3200 + 80 + 3200)
    assert cost("aten::_linalg_det", A) == (3 * 2 * 16 ** 3 / 3, 3072 + 12 + 3072 + 3 * 16 * 4)
    assert cost("aten::_linalg_slogdet", A)[0] == cost("aten::linalg_det", A)[0]
    pivots = T((3, 16), "int32")
    assert cost("aten::linalg_lu_solve", A, pivots, B) == (3 * 2 * 16 * 16 * 4, 3072 + 192 + 768 + 768)
