"""Dense factorizations and solves (Cholesky, triangular solves, LU, inverse, determinants; QR, least squares,
symmetric and general eigendecompositions, SVD) and Euclidean distances.

FLOPs, LAPACK's counts for real matrices (x4 complex), per matrix of a batch (an op's leading dims), from LAPACK
Working Note 41 (Blackford and Dongarra, "Installation Guide for LAPACK", its table of operation counts) and Golub
and Van Loan, "Matrix Computations" (3rd ed.; the section given below). Cholesky of n x n n^3/3; a triangular solve
with k right-hand sides n^2 k (trsm); cholesky_solve two of them, 2 n^2 k; LU (getrf) of m x n, m >= n,
m n^2 - n^3/3 (2n^3/3 square); lu_solve its two triangular solves, 2 n^2 k; linalg_solve an LU and its two solves,
2n^3/3 + 2 n^2 k; an inverse 2 n^3; det and slogdet their LU, 2n^3/3 (the diagonal's product, n, not counted).
QR of m x n by Householder reflections, k = min(m, n) (LAWN 41): geqrf 2 max(m,n) k^2 - 2k^3/3; forming the
m x p Q from k reflectors (orgqr, householder_product) 4mpk - 2(m + p)k^2 + 4k^3/3: linalg_qr's 'reduced' Q
(p = k) 2mk^2 - 2k^3/3, its 'complete' Q (p = m) 4m^2 k - 4mk^2 + 4k^3/3, 'r' none; applying the reflectors to a
matrix with c columns (ormqr) 4mck - 2ck^2. Least squares (lstsq by the QR drivers gelsy and gels, CPU's and
CUDA's defaults): one QR, Q^T applied to the c right-hand sides and a triangular solve, 2 max(m,n) k^2 - 2k^3/3 +
4mck - 2ck^2 + k^2 c; its SVD drivers (gelsd, gelss) and pinv are left without a formula. A trace records no
string argument: there a QR is taken as mode 'reduced' and lstsq as a QR driver (the defaults), said in the note.
The eigen- and singular-value decompositions iterate a data-dependent number of times: their counts are the
textbook ones, which assume the usual iterations (about two QR sweeps per eigenvalue), not the ones that ran.
Symmetric (Hermitian) eigh (Golub and Van Loan §8.3.5, the symmetric QR algorithm): values only 4n^3/3 (the
tridiagonal reduction; the tridiagonal QR iteration is O(n^2)), values and vectors 9n^3. General eig (§7.5.6, the
Francis QR algorithm): values only 10n^3; values and vectors the Schur form T and Q, 25n^3, plus the eigenvectors
of T (n^3/3) and their transformation by Q (n^3): 25n^3 + 4n^3/3. SVD of m x n, m >= n (else its transpose;
§5.4.5, Figure 5.4.1, the Golub-Reinsch algorithm): values only 4mn^2 - 4n^3/3; with the thin U (m x n) and V
(full_matrices=False) 14mn^2 + 8n^3; with the full U (m x m) and V 4m^2 n + 8mn^2 + 9n^3. torch's CPU drivers
(syevd, gesdd: divide and conquer) and cuSOLVER's differ from these in lower-order terms and constants; these are
the standard counts.
The Euclidean distance of (m, d) and (n, d) points (cdist's p=2 path, _euclidean_dist): one product 2 m n d, the
squared norms 2(m + n)d, and 3 per distance (add the norms, clamp, root); cdist's direct path (_cdist_forward, any
p) 3 per point pair per coordinate (difference, power, sum), and pdist's the same over the n(n-1)/2 pairs of its n
points; pdist's backward 4 per pair per coordinate (the difference, its scaling by the pair's gradient over its
distance, and the two accumulations into the pair's rows).
Bytes: the inputs read once and the outputs written once (from a trace, which records no outputs, their shapes
as the op's schema gives them).

In a trace, cholesky_solve runs as _cholesky_solve_helper, linalg_cholesky as linalg_cholesky_ex, cdist and
_euclidean_dist as their pieces, linalg_eigh and linalg_eigvalsh as _linalg_eigh, linalg_eigvals as
_linalg_eigvals, linalg_svd, svd and linalg_svdvals as _linalg_svd, linalg_det and linalg_slogdet as _linalg_det
and _linalg_slogdet (composites: their children are the rows); the analyze counting pass records the outer op
alone, which the formula stands for. _linalg_det and _linalg_slogdet are rows themselves: their formula counts the
linalg_lu_factor_ex below them. A trace does not record linalg_qr's mode (a string):
there 'reduced', the default, is assumed and said in the row's note.
"""

from __future__ import annotations

from math import prod

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register


def _complex(x: TensorMeta) -> int:
    return 4 if x.dtype.startswith("complex") else 1


def _batch(x: TensorMeta) -> int:
    return prod(x.shape[:-2])


def _cost(flops: float, call: Call, inputs: list[TensorMeta], outputs: list[TensorMeta], note: str = "") -> OpCost:
    written = nbytes(call.outputs) if call.outputs is not None else nbytes(outputs)
    return OpCost(float(flops), float(nbytes(inputs) + written), True, note=note)


_REAL = {"complex64": "float32", "complex128": "float64", "complex32": "float16"}
_COMPLEX = {"float32": "complex64", "float64": "complex128", "float16": "complex32"}


def _real_dtype(dtype: str) -> str:
    """The dtype of a complex matrix's eigen- or singular values (float32 for complex64); a real one's own."""
    return _REAL.get(dtype, dtype)


def _complex_dtype(dtype: str) -> str:
    """The dtype of a real matrix's general eigenvalues and vectors (complex64 for float32)."""
    return dtype if dtype.startswith("complex") else _COMPLEX.get(dtype, "complex64")


@register("aten::linalg_cholesky_ex")
def cholesky(call: Call) -> OpCost:
    """(A, upper, check_errors) -> (L, info): n^3/3 per matrix."""
    a = call.tensor(0, "self")
    n = a.shape[-1]
    return _cost(_batch(a) * n ** 3 / 3 * _complex(a), call, [a], [a])


register("aten::linalg_cholesky", composite=True)(cholesky)


def _solve_sides(b: TensorMeta, left: bool) -> tuple[int, int]:
    """(n, k): the triangular matrix's order and the right-hand sides of a solve with ``b``."""
    return (b.shape[-2], b.shape[-1]) if left else (b.shape[-1], b.shape[-2])


@register("aten::linalg_solve_triangular", "aten::triangular_solve")
def solve_triangular(call: Call) -> OpCost:
    """linalg_solve_triangular(A, B, *, upper, left=True, unitriangular); triangular_solve(B, A, upper, ...)
    (the old argument order): n^2 k per matrix."""
    if call.name == "aten::triangular_solve":
        b, a, left = call.tensor(0, "self"), call.tensor(1, "A"), True
    else:
        a, b, left = call.tensor(0, "self"), call.tensor(1, "B"), bool(call.arg(3, "left", True))
    n, k = _solve_sides(b, left)
    batch = max(_batch(a), _batch(b))
    return _cost(batch * n * n * k * _complex(b), call, [a, b], [b])


@register("aten::_cholesky_solve_helper")
def cholesky_solve_helper(call: Call) -> OpCost:
    """(B, L, upper): two triangular solves, 2 n^2 k per matrix."""
    b, chol = call.tensor(0, "self"), call.tensor(1, "A")
    n, k = b.shape[-2], b.shape[-1]
    return _cost(max(_batch(b), _batch(chol)) * 2 * n * n * k * _complex(b), call, [b, chol], [b])


register("aten::cholesky_solve", composite=True)(cholesky_solve_helper)


@register("aten::linalg_lu_factor_ex", "aten::linalg_lu")
def lu_factor(call: Call) -> OpCost:
    """(A, pivot, check_errors): 2n^3/3 per n x n matrix (m x n: m n^2 - n^3/3 for m >= n); the factors written
    (and the int32 pivots)."""
    a = call.tensor(0, "self")
    m, n = a.shape[-2], a.shape[-1]
    small, big = min(m, n), max(m, n)
    return _cost(_batch(a) * (big * small ** 2 - small ** 3 / 3) * _complex(a), call, [a], [a])


def _qr_sizes(a: TensorMeta) -> tuple[int, int, int]:
    """(m, s, b): rows, min(m, n), max(m, n)."""
    m, n = a.shape[-2], a.shape[-1]
    return m, min(m, n), max(m, n)


@register("aten::ormqr")
def ormqr(call: Call) -> OpCost:
    """(A (m x s reflectors), tau, C, left=True, transpose=False): the reflectors applied to C's k columns (left)
    or rows (right)."""
    a, tau, c = call.tensor(0, "self"), call.tensor(1, "input2"), call.tensor(2, "input3")
    left = bool(call.arg(3, "left", True))
    m, k, s = (c.shape[-2], c.shape[-1], tau.shape[-1]) if left else (c.shape[-1], c.shape[-2], tau.shape[-1])
    return _cost(max(_batch(a), _batch(c)) * (4 * m * k * s - 2 * k * s * s) * _complex(c), call, [a, tau, c], [c])


_SVD_DRIVERS = ("gelsd", "gelss")


@register("aten::linalg_lstsq")
def linalg_lstsq(call: Call) -> OpCost:
    """(A (m x n), B (m x k), rcond, *, driver) -> (solution, residuals, rank, singular_values): by QR (gelsy,
    gels); the SVD drivers are left without a formula."""
    a, b = call.tensor(0, "self"), call.tensor(1, "b")
    driver = call.arg(3, "driver")
    if isinstance(driver, str) and driver.strip("'\"") in _SVD_DRIVERS:
        raise ValueError(f"lstsq's driver {driver} is an SVD (iterative): no formula")
    m, s, _ = _qr_sizes(a)
    vector = b.ndim == a.ndim - 1
    k = 1 if vector else b.shape[-1]
    flops = _geqrf_flops(m, a.shape[-1]) + 4 * m * k * s - 2 * k * s * s + s * s * k
    solution = TensorMeta((b.shape[:-1] if vector else b.shape[:-2]) + (a.shape[-1],) + (() if vector else (k,)),
                          b.dtype)
    batch = max(_batch(a), prod(b.shape[:-1]) if vector else _batch(b))
    return _cost(batch * flops * _complex(a), call, [a, b], [solution])


@register("aten::_linalg_solve_ex")
def linalg_solve(call: Call) -> OpCost:
    """(A, B, left=True, check_errors): an LU and its two triangular solves."""
    a, b = call.tensor(0, "A"), call.tensor(1, "B")
    left = bool(call.arg(2, "left", True))
    vector = b.ndim == a.ndim - 1  # a batch of vectors: k = 1
    n = a.shape[-1]
    k = 1 if vector else _solve_sides(b, left)[1]
    batch = max(_batch(a), prod(b.shape[:-1]) if vector else _batch(b))
    flops = batch * (2 * n ** 3 / 3 + 2 * n * n * k) * _complex(a)
    return _cost(flops, call, [a, b], [a, b])


register("aten::linalg_solve", "aten::linalg_solve_ex", composite=True)(linalg_solve)


@register("aten::linalg_inv_ex")
def linalg_inv(call: Call) -> OpCost:
    """(A, check_errors): 2 n^3 per matrix."""
    a = call.tensor(0, "A")
    return _cost(_batch(a) * 2 * a.shape[-1] ** 3 * _complex(a), call, [a], [a])


register("aten::linalg_inv", "aten::inverse", composite=True)(linalg_inv)


@register("aten::_linalg_det", "aten::_linalg_slogdet")
def linalg_det(call: Call) -> OpCost:
    """(A) -> (det or (sign, logabsdet), LU, pivots): the LU's 2n^3/3 per matrix; the factors written too."""
    a = call.tensor(0, "A")
    n = a.shape[-1]
    lead = tuple(a.shape[:-2])
    scalars = [TensorMeta(lead, a.dtype)] * (2 if call.name == "aten::_linalg_slogdet" else 1)
    pivots = TensorMeta(lead + (n,), "int32")
    return _cost(_batch(a) * 2 * n ** 3 / 3 * _complex(a), call, [a], scalars + [a, pivots])


register("aten::linalg_det", "aten::det", "aten::linalg_slogdet", "aten::slogdet", "aten::logdet",
         composite=True)(linalg_det)


@register("aten::linalg_lu_solve")
def lu_solve(call: Call) -> OpCost:
    """(LU, pivots, B, left=True, adjoint=False): the LU's two triangular solves, 2 n^2 k per matrix."""
    lu, pivots, b = call.tensor(0, "LU"), call.tensor(1, "pivots"), call.tensor(2, "B")
    n, k = _solve_sides(b, bool(call.arg(3, "left", True)))
    batch = max(_batch(lu), _batch(b))
    return _cost(batch * 2 * n * n * k * _complex(b), call, [lu, pivots, b], [b])


def _eigh(call: Call, vectors: bool) -> OpCost:
    a = call.tensor(0, "A")
    n = a.shape[-1]
    values = TensorMeta(tuple(a.shape[:-1]), _real_dtype(a.dtype))
    flops = _batch(a) * (9 * n ** 3 if vectors else 4 * n ** 3 / 3) * _complex(a)
    return _cost(flops, call, [a], [values, a] if vectors else [values])


@register("aten::_linalg_eigh")
def linalg_eigh(call: Call) -> OpCost:
    """(A, UPLO, compute_v=True) -> (eigenvalues (..., n), real; eigenvectors (..., n, n), empty without
    compute_v): 9n^3 per matrix with the vectors, 4n^3/3 without."""
    return _eigh(call, bool(call.arg(2, "compute_v", True)))


register("aten::linalg_eigh", composite=True)(lambda call: _eigh(call, True))
register("aten::linalg_eigvalsh", composite=True)(lambda call: _eigh(call, False))


def _eig(call: Call, vectors: bool) -> OpCost:
    a = call.tensor(0, "self")
    n = a.shape[-1]
    values = TensorMeta(tuple(a.shape[:-1]), _complex_dtype(a.dtype))
    flops = _batch(a) * ((25 * n ** 3 + 4 * n ** 3 / 3) if vectors else 10 * n ** 3) * _complex(a)
    return _cost(flops, call, [a], [values, values.with_shape(a.shape)] if vectors else [values])


@register("aten::linalg_eig")
def linalg_eig(call: Call) -> OpCost:
    """(A) -> (eigenvalues (..., n), eigenvectors (..., n, n)), complex: 25n^3 + 4n^3/3 per matrix. Its out=
    overload (a trace's child of the same name) passes the two outputs as arguments: not read."""
    return _eig(call, True)


@register("aten::_linalg_eigvals")
def linalg_eigvals(call: Call) -> OpCost:
    """(A) -> eigenvalues (..., n), complex: 10n^3 per matrix."""
    return _eig(call, False)


register("aten::linalg_eigvals", composite=True)(linalg_eigvals)


def _svd(call: Call, full_matrices: bool, compute_uv: bool) -> OpCost:
    a = call.tensor(0, "A")
    m, n = a.shape[-2], a.shape[-1]
    big, small = max(m, n), min(m, n)
    if not compute_uv:
        per = 4 * big * small ** 2 - 4 * small ** 3 / 3
    elif full_matrices:
        per = 4 * big ** 2 * small + 8 * big * small ** 2 + 9 * small ** 3
    else:
        per = 14 * big * small ** 2 + 8 * small ** 3
    lead = tuple(a.shape[:-2])
    outputs = [TensorMeta(lead + (small,), _real_dtype(a.dtype))]
    if compute_uv:
        u_cols, vh_rows = (m, n) if full_matrices else (small, small)
        outputs += [a.with_shape(lead + (m, u_cols)), a.with_shape(lead + (vh_rows, n))]
    return _cost(_batch(a) * per * _complex(a), call, [a], outputs)


@register("aten::_linalg_svd")
def linalg_svd(call: Call) -> OpCost:
    """(A, full_matrices=False, compute_uv=True, driver) -> (U, S, Vh): Golub-Reinsch's counts (module
    docstring) for the factors asked for."""
    return _svd(call, bool(call.arg(1, "full_matrices", False)), bool(call.arg(2, "compute_uv", True)))


register("aten::linalg_svd", composite=True)(
    lambda call: _svd(call, bool(call.arg(1, "full_matrices", True)), True))  # linalg_svd's default: full
register("aten::svd", composite=True)(  # (A, some=True, compute_uv=True)
    lambda call: _svd(call, not call.arg(1, "some", True), bool(call.arg(2, "compute_uv", True))))
register("aten::linalg_svdvals", composite=True)(lambda call: _svd(call, False, False))


def _geqrf_flops(m: int, n: int) -> float:
    k = min(m, n)
    return 2 * max(m, n) * k * k - 2 * k ** 3 / 3


def _orgqr_flops(m: int, p: int, k: int) -> float:
    """Q's first p columns (m x p) from k Householder reflectors (LAWN 41's xORGQR)."""
    return 4 * m * p * k - 2 * (m + p) * k * k + 4 * k ** 3 / 3


QR_MODE_NOTE = "linalg_qr's mode is not recorded in a trace: 'reduced' (the default) assumed"


@register("aten::linalg_qr")
def linalg_qr(call: Call) -> OpCost:
    """(A, mode='reduced') -> (Q, R): geqrf, then Q formed ('reduced': m x k, 'complete': m x m, 'r': none)."""
    a = call.tensor(0, "A")
    mode = call.arg(1, "mode")
    note = ""
    if mode not in ("reduced", "complete", "r"):
        mode, note = "reduced", QR_MODE_NOTE
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    lead = tuple(a.shape[:-2])
    q_cols = {"reduced": k, "complete": m, "r": 0}[mode]
    flops = _geqrf_flops(m, n) + (_orgqr_flops(m, q_cols, k) if q_cols else 0.0)
    r = a.with_shape(lead + (m if mode == "complete" else k, n))
    outputs = [a.with_shape(lead + (m, q_cols)), r] if q_cols else [r]
    return _cost(_batch(a) * flops * _complex(a), call, [a], outputs, note)


@register("aten::geqrf")
def geqrf(call: Call) -> OpCost:
    """(A) -> (a: R and the reflectors, m x n; tau (..., k)). A trace's child of the same name, its out= overload,
    passes the outputs as arguments: not read."""
    a = call.tensor(0, "self")
    m, n = a.shape[-2], a.shape[-1]
    tau = a.with_shape(tuple(a.shape[:-2]) + (min(m, n),))
    return _cost(_batch(a) * _geqrf_flops(m, n) * _complex(a), call, [a], [a, tau])


@register("aten::linalg_householder_product")
def householder_product(call: Call) -> OpCost:
    """(A (m x n), tau (k)) -> Q's first n columns, m x n (orgqr)."""
    a, tau = call.tensor(0, "input"), call.tensor(1, "tau")
    m, n = a.shape[-2], a.shape[-1]
    return _cost(_batch(a) * _orgqr_flops(m, n, tau.shape[-1]) * _complex(a), call, [a, tau], [a])


register("aten::orgqr", composite=True)(householder_product)


def _points(call: Call) -> tuple[TensorMeta, TensorMeta, int, int, int, int]:
    x1, x2 = call.tensor(0, "x1"), call.tensor(1, "x2")
    return x1, x2, max(prod(x1.shape[:-2]), prod(x2.shape[:-2])), x1.shape[-2], x2.shape[-2], x1.shape[-1]


@register("aten::_euclidean_dist", composite=True)
def euclidean_dist(call: Call) -> OpCost:
    """(x1 (m, d), x2 (n, d)) -> (m, n)."""
    x1, x2, batch, m, n, d = _points(call)
    out = TensorMeta(tuple(x1.shape[:-2]) + (m, n), x1.dtype)
    return _cost(batch * (2 * m * n * d + 2 * (m + n) * d + 3 * m * n), call, [x1, x2], [out])


@register("aten::_cdist_forward")
def cdist_forward(call: Call) -> OpCost:
    """(x1, x2, p, compute_mode) -> (m, n)."""
    x1, x2, batch, m, n, d = _points(call)
    out = TensorMeta(tuple(x1.shape[:-2]) + (m, n), x1.dtype)
    return _cost(batch * 3 * m * n * d, call, [x1, x2], [out])


@register("aten::_pdist_forward")
def pdist_forward(call: Call) -> OpCost:
    """(self (n, d), p) -> (n(n-1)/2,); pdist a composite (-> _pdist_forward)."""
    x = call.tensor(0, "self")
    n, d = x.shape[-2], x.shape[-1]
    pairs = n * (n - 1) // 2
    return _cost(3 * pairs * d, call, [x], [TensorMeta((pairs,), x.dtype)])


register("aten::pdist", composite=True)(pdist_forward)


@register("aten::_pdist_backward")
def pdist_backward(call: Call) -> OpCost:
    """(grad (pairs,), self (n, d), p, pdist (pairs,)) -> grad_input (n, d)."""
    grad, x, dist = call.tensor(0, "grad"), call.tensor(1, "self"), call.maybe_tensor(3, "pdist")
    return _cost(4 * grad.numel * x.shape[-1], call, [grad, x, dist], [x])


@register("aten::_linalg_check_errors")
def check_errors(call: Call) -> OpCost:
    """(info, api_name, is_matrix): the factorization's int32 status read (a host read of a device tensor)."""
    return OpCost(0.0, float(call.tensor(0, "info").nbytes), True)
