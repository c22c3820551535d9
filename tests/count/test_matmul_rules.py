"""Every matmul-family formula by hand, torch-free: 2*m*n*k on shapes whose dims are distinct primes (so a swapped
dim changes the figure), operands read once at their own size, the result written once; in-place forms write
self; with recorded outputs the written bytes are theirs."""

from __future__ import annotations

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T
from rules_helpers import cost

M, K, N, B = 3, 5, 7, 11
F32 = 4


def test_mm_addmm_int_mm():
    a, b = T((M, K), "float32"), T((K, N), "float32")
    assert cost("aten::mm", a, b) == (2 * M * N * K, (M * K + K * N + M * N) * F32)
    assert cost("aten::mm", a, b, outputs=[T((M, N), "float16")]) == (2 * M * N * K, (M * K + K * N) * F32 + M * N * 2)
    bias = T((N,), "float32")
    assert cost("aten::addmm", bias, a, b) == (2 * M * N * K, (N + M * K + K * N + M * N) * F32)
    assert cost("aten::_addmm_activation", bias, a, b) == (2 * M * N * K, (N + M * K + K * N + M * N) * F32)
    full = T((M, N), "float32")
    assert cost("aten::addmm_", full, a, b) == (2 * M * N * K, (2 * M * N + M * K + K * N) * F32)
    assert count_op("aten::mm", (a, T((N, K), "float32"))).modeled is False  # inner dims differ
    i8a, i8b = T((M, K), "int8"), T((K, N), "int8")
    assert cost("aten::_int_mm", i8a, i8b) == (2 * M * N * K, M * K + K * N + M * N * 4)


def test_batched_products():
    a, b = T((B, M, K), "float32"), T((B, K, N), "float32")
    reads = (B * M * K + B * K * N) * F32
    assert cost("aten::bmm", a, b) == (2 * B * M * N * K, reads + B * M * N * F32)
    bias = T((N,), "float32")
    assert cost("aten::baddbmm", bias, a, b) == (2 * B * M * N * K, reads + N * F32 + B * M * N * F32)
    full = T((B, M, N), "float32")
    assert cost("aten::baddbmm_", full, a, b) == (2 * B * M * N * K, reads + 2 * B * M * N * F32)
    assert cost("aten::addbmm", T((M, N), "float32"), a, b) == (2 * B * M * N * K, reads + 2 * M * N * F32)
    assert count_op("aten::bmm", (a, T((B + 1, K, N), "float32"))).modeled is False
    assert count_op("aten::bmm", (a, T((B, K + 1, N), "float32"))).modeled is False


def test_vector_products():
    a, v = T((M, K), "float32"), T((K,), "float32")
    assert cost("aten::mv", a, v) == (2 * M * K, (M * K + K + M) * F32)
    assert cost("aten::addmv", T((M,), "float32"), a, v) == (2 * M * K, (M + M * K + K + M) * F32)
    x, y = T((K,), "float32"), T((K,), "float32")
    for name in ("aten::dot", "aten::vdot", "aten::inner"):
        assert cost(name, x, y) == (2 * K, (2 * K + 1) * F32)
    assert cost("aten::inner", a, y)[0] == 2 * M * K  # a matrix and a vector: K products per row of self
    # two matrices: every row of self against every row of other (torch.inner((M,K),(N,K)) is (M,N)), as
    # FlopCounterMode counts the same call
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    assert cost("aten::inner", a, T((N, K), "float32")) == (2 * M * N * K, (M * K + N * K + M * N) * F32)
    with FlopCounterMode(display=False) as fc:
        torch.inner(torch.ones(M, K), torch.ones(N, K))
    assert fc.get_total_flops() == 2 * M * N * K
    assert cost("aten::inner", T((), "float32"), a) == (M * K, (1 + 2 * M * K) * F32)  # a scalar: a plain product
    u, w = T((M,), "float32"), T((N,), "float32")
    assert cost("aten::outer", u, w) == (M * N, (M + N + M * N) * F32)
    assert cost("aten::ger", u, w) == (M * N, (M + N + M * N) * F32)
    assert cost("aten::addr", T((M, N), "float32"), u, w) == (2 * M * N, (M * N + M + N + M * N) * F32)


def test_scaled_and_grouped_mm():
    a, b = T((M, K), "float8_e4m3fn"), T((K, N), "float8_e4m3fn")
    sa, sb = T((), "float32"), T((), "float32")
    flops, nbytes = cost("aten::_scaled_mm", a, b, sa, sb, None, None, "bfloat16")
    assert (flops, nbytes) == (2 * M * N * K, M * K + K * N + 4 + 4 + M * N * 2)
    bias, sr = T((N,), "bfloat16"), T((), "float32")
    assert cost("aten::_scaled_mm", a, b, sa, sb, bias, sr)[1] == M * K + K * N + 4 + 4 + 2 * N + 4 + M * N
    G = 2
    tokens, experts = T((M, K), "bfloat16"), T((G, K, N), "bfloat16")
    offs = T((G,), "int32")
    assert cost("aten::_grouped_mm", tokens, experts, offs) == (2 * M * K * N, (M * K + G * K * N + M * N) * 2 + G * 4)
    rows, w = T((G, M, K), "bfloat16"), T((K, N), "bfloat16")
    assert cost("aten::_grouped_mm", rows, w) == (2 * M * K * N, (G * M * K + K * N + M * N) * 2)
    x, dy = T((M, K), "bfloat16"), T((K, N), "bfloat16")
    assert cost("aten::_grouped_mm", x, dy, offs) == (2 * M * K * N, (M * K + K * N + G * M * N) * 2 + G * 4)
    assert cost("aten::_grouped_mm", x, dy) == (2 * M * K * N, (M * K + K * N + M * N) * 2)
    assert cost("aten::_scaled_grouped_mm", x, dy, sa, sb, offs)[1] == (M * K + K * N + G * M * N) * 2 + 8 + G * 4
    ba, bb = T((G, M, K), "bfloat16"), T((G, K, N), "bfloat16")
    assert cost("aten::_grouped_mm", ba, bb) == (2 * G * M * K * N, (G * M * K + G * K * N + G * M * N) * 2)
    assert cost("aten::_grouped_mm", ba, bb, None, None, "float32")[1] == (G * M * K + G * K * N) * 2 + G * M * N * 4
    assert cost("aten::_scaled_grouped_mm", ba, bb, sa, sb, None, None, None, "float32")[1] == \
        (G * M * K + G * K * N) * 2 + 8 + G * M * N * 4


@pytest.mark.parametrize("a, b, out, macs", [
    ((K,), (K,), (), K),
    ((M, K), (K,), (M,), M * K),
    ((K,), (K, N), (N,), K * N),
    ((M, K), (K, N), (M, N), M * K * N),
    ((B, M, K), (K, N), (B, M, N), B * M * K * N),
    ((2, 1, M, K), (B, K, N), (2, B, M, N), 2 * B * M * K * N),
])
def test_matmul_composite_follows_torch_matmul_shapes(a, b, out, macs):
    x, y = T(a, "float32"), T(b, "float32")
    n_out = 1
    for d in out:
        n_out *= d
    assert cost("aten::matmul", x, y) == (2 * macs, (x.numel + y.numel + n_out) * F32)


def test_matmul_composite_refuses_bad_shapes():
    assert not count_op("aten::matmul", (T((), "float32"), T((K,), "float32"))).modeled
    assert not count_op("aten::matmul", (T((M, K), "float32"), T((N, K), "float32"))).modeled


def test_linear_and_einsum():
    x, w, bias = T((B, M, K), "float32"), T((N, K), "float32"), T((N,), "float32")
    assert cost("aten::linear", x, w, bias) == (2 * B * M * K * N, (B * M * K + N * K + N + B * M * N) * F32)
    assert cost("aten::linear", x, w) == (2 * B * M * K * N, (B * M * K + N * K + B * M * N) * F32)
    assert cost("aten::linear", x, T((K,), "float32")) == (2 * B * M * K, (B * M * K + K + B * M) * F32)
    a, b = T((B, M, K), "float32"), T((B, K, N), "float32")
    assert cost("aten::einsum", "bmk,bkn->bmn", [a, b]) == (2 * B * M * K * N, (a.numel + b.numel + B * M * N) * F32)
    assert cost("aten::einsum", "bmk, bkn", [a, b]) == (2 * B * M * K * N, (a.numel + b.numel + M * N) * F32)
    # implicit output: the letters seen once, sorted (m, n); b and k appear twice and are summed
    u, v = T((M,), "float32"), T((N,), "float32")
    assert cost("aten::einsum", "i,j->ij", [u, v]) == (M * N, (M + N + M * N) * F32)
    assert cost("aten::einsum", "i->i", [u])[0] == M
    three = [T((M, K), "float32"), T((K,), "float32"), T((M,), "float32")]
    assert cost("aten::einsum", "ik,k,i->ik", three)[0] == 2 * M * K
    for bad in (("...k,kn->...n", [a, b]), ("bmk,bkn->bmn", [a]), ("bmk,bk->bm", [a, b]), (None, [a, b]),
                ("bmkx,bkn->bmn", [a, b]),  # more letters than dims
                ("bmk,bkn->bmn", a)):
        assert not count_op("aten::einsum", bad).modeled
    broadcast = [T((1, K), "float32"), T((M, K), "float32")]
    assert cost("aten::einsum", "ik,ik->ik", broadcast)[0] == M * K


def test_sparse_products_count_stored_elements_not_the_dense_shape():
    nnz = 13
    sparse = T((M, K), "float32", None, nnz)
    assert sparse.nbytes == nnz * (F32 + 8 * 2)  # each value and its two int64 indices
    dense, bias = T((K, N), "float32"), T((M, N), "float32")
    stored = nnz * (F32 + 16)
    assert cost("aten::_sparse_addmm", bias, sparse, dense) == (2 * nnz * N, (M * N + K * N + M * N) * F32 + stored)
    assert cost("aten::addmm", bias, sparse, dense) == (2 * nnz * N, (M * N + K * N + M * N) * F32 + stored)
    assert cost("aten::mm", sparse, dense) == (2 * nnz * N, (K * N + M * N) * F32 + stored)  # a CSR operand's @
    assert cost("aten::_sparse_mm", sparse, dense) == (2 * nnz * N, (K * N + M * N) * F32 + stored)
    assert cost("aten::mm", dense.with_shape((M, M)), T((M, K), "float32", None, nnz)) == (  # dense @ sparse: 2*m*nnz
        2 * M * nnz, (M * M + M * K) * F32 + stored)
    assert cost("aten::mv", sparse, T((K,), "float32")) == (2 * nnz, (K + M) * F32 + stored)
    assert cost("aten::bmm", T((B, M, K), "float32", None, nnz), T((B, K, N), "float32")) == (
        2 * nnz * N, (B * K * N + B * M * N) * F32 + nnz * (F32 + 24))
    weight = T((N, K), "float32", None, nnz)  # linear(x, W sparse) = x @ W^T: 2*rows*nnz
    assert cost("aten::linear", T((M, K), "float32"), weight)[0] == 2 * M * nnz


def test_a_sparse_product_from_a_trace_is_unmodelled_and_kept_whole_never_counted_dense():
    """A trace records no nonzero count: the product's work is unknown. Counting it as the dense product (the old
    count) over-counted the sweep's 64x64 matrix of 100 stored elements 40 times."""
    sparse, dense, bias = T((M, K), "float32", None, strided=False), T((K, N), "float32"), T((M, N), "float32")
    for name, args in [("aten::_sparse_addmm", (bias, sparse, dense)), ("aten::addmm", (bias, sparse, dense)),
                       ("aten::mm", (sparse, dense)), ("aten::_sparse_mm", (sparse, dense)),
                       ("aten::matmul", (sparse, dense)), ("aten::mm", (dense.with_shape((M, M)), sparse)),
                       ("aten::_sparse_addmm", (bias, T((M, K), "float32"), dense))]:  # its schema says sparse
        got = count_op(name, args)
        assert (got.modeled, got.keep_whole, got.flops) == (False, True, 0.0), name
        assert got.note.startswith("sparse operand: the trace records no nonzero count"), name
    assert "would be 210 FLOPs" in count_op("aten::mm", (sparse, dense)).note  # 2*3*5*7, the dense count
    both = count_op("aten::mm", (sparse, T((K, N), "float32", None, strided=False)))
    assert (both.modeled, both.keep_whole) == (False, True) and "sparse @ sparse" in both.note
    assert count_op("aten::bmm", (T((B, M, K), "float32", None, strided=False), T((B, K, N), "float32"))).keep_whole
    assert count_op("aten::addmv", (None, sparse, T((K,), "float32"))).keep_whole
    assert count_op("aten::linear", (T((M, K), "float32"), T((N, K), "float32", None, strided=False))).keep_whole
    dense_mm = count_op("aten::mm", (T((M, K), "float32"), dense))
    assert dense_mm.modeled and not dense_mm.keep_whole
    assert count_op("no::formula", ()).keep_whole is False  # kept whole only where a formula says so


def test_a_sparse_tensor_meta_carries_its_stored_elements():
    torch = pytest.importorskip("torch")
    indices = torch.tensor([[0, 1, 2], [4, 0, 3]])
    coo = torch.sparse_coo_tensor(indices, torch.ones(3), (M, K)).coalesce()
    assert T.from_tensor(coo) == T((M, K), "float32", None, 3, strided=False)
    assert T.from_tensor(coo.to_sparse_csr()).nnz == 3
    assert T.from_tensor(torch.ones(M, K)).nnz is None and not T.from_tensor(torch.ones(M, K)).is_sparse


def test_other_formulas_refuse_flops_on_a_sparse_operand_seen_live():
    """An elementwise formula counts the dense shape (4,096 FLOPs for a 64x64 COO matrix of 97 stored elements
    added to itself): on a sparse operand whose stored elements are known (analyze) its FLOPs are refused, with
    the reason; zero-FLOP copies keep their bytes (charged by the stored elements); metadata calls cost nothing."""
    sparse = T((64, 64), "float32", None, 97, strided=False)
    for name, args in [("aten::add", (sparse, sparse)), ("aten::mul", (sparse, 2.0)), ("aten::relu", (sparse,))]:
        got = count_op(name, args)
        assert (got.modeled, got.keep_whole, got.flops) == (False, True, 0.0), name
        assert got.note == "sparse operand: the formula counts the dense shape's FLOPs, not the stored elements'"
    assert cost("aten::clone", sparse, outputs=[sparse]) == (0, 2 * 97 * (F32 + 16))
    assert cost("aten::add", T((64, 64), "float32"), T((64, 64), "float32"))[0] == 64 * 64  # dense: unchanged
    for name in ("aten::_nnz", "aten::sparse_dim", "aten::dense_dim", "aten::is_coalesced", "aten::_indices"):
        assert cost(name, sparse) == (0, 0)


def test_complex_products_count_real_flops():
    """A complex multiply-add is 8 real FLOPs: 4x a real product's count, as linalg's and elementwise's complex
    counts are in real FLOPs (a complex64 matmul was counted as a float32 one of the same shape, 4x low)."""
    C8 = 8
    a, b = T((M, K), "complex64"), T((K, N), "complex64")
    assert cost("aten::mm", a, b) == (8 * M * N * K, (M * K + K * N + M * N) * C8)
    bias = T((N,), "complex64")
    assert cost("aten::addmm", bias, a, b)[0] == 8 * M * N * K
    assert cost("aten::addmm_", T((M, N), "complex64"), a, b)[0] == 8 * M * N * K
    ba, bb = T((B, M, K), "complex128"), T((B, K, N), "complex128")
    assert cost("aten::bmm", ba, bb)[0] == 8 * B * M * N * K
    assert cost("aten::baddbmm_", T((B, M, N), "complex128"), ba, bb)[0] == 8 * B * M * N * K
    assert cost("aten::matmul", ba, bb)[0] == 8 * B * M * N * K
    assert cost("aten::linear", a, T((N, K), "complex64"))[0] == 8 * M * N * K
    assert cost("aten::outer", T((M,), "complex64"), T((N,), "complex64"))[0] == 6 * M * N
    assert cost("aten::mm", T((M, K), "float32"), T((K, N), "float32"))[0] == 2 * M * N * K


def test_trilinear_of_nn_bilinear_forward_and_backward():
    """Sweep 8: nn.Bilinear's _trilinear had no formula. Its forward and the three gradients' calls, with the
    arguments torch 2.14 passes (N=4, I=16, J=12, O=8)."""
    x1, x2, w, g = T((4, 16), "float32"), T((4, 12), "float32"), T((8, 16, 12), "float32"), T((4, 8), "float32")
    nbytes = (64 + 48 + 1536) * 4
    assert cost("aten::_trilinear", x1, w, x2, [1, 3], [0], [1, 2], [2, 3]) == \
        (2 * 4 * 8 * 16 * 12 + 2 * 4 * 8 * 12, nbytes + 32 * 4)
    assert cost("aten::_trilinear", g, w, x2, [2, 3], [0], [1, 2], [1, 3])[0] == \
        2 * 4 * 8 * 16 * 12 + 2 * 4 * 16 * 12  # grad x1: (4, 16)
    assert cost("aten::_trilinear", x1, g, x2, [1, 3], [2, 3], [1, 2], [0])[0] == \
        2 * 4 * 8 * 16 + 2 * 4 * 8 * 16 * 12  # grad W: (8, 16, 12)
    assert cost("aten::_trilinear", x1, w, g, [1, 3], [0], [2, 3], [1, 2])[0] == \
        2 * 4 * 8 * 16 * 12 + 2 * 4 * 8 * 12  # grad x2: (4, 12)
    assert cost("aten::bilinear", x1, x2, w, T((8,), "float32"))[0] == 2 * 4 * 8 * 16 * 12 + 2 * 4 * 8 * 12
