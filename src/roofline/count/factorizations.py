"""Dense factorizations and solves (Cholesky, triangular solves, LU, QR, least squares, determinants, inverse) and
Euclidean distances.

FLOPs, LAPACK's counts for real matrices (x4 complex), per matrix of a batch: Cholesky of n x n n^3/3; a
triangular solve with k right-hand sides n^2 k (trsm); cholesky_solve two of them, 2 n^2 k; LU (getrf) 2n^3/3;
linalg_solve an LU and its two solves, 2n^3/3 + 2 n^2 k; lu_solve the two solves, 2 n^2 k; an inverse 2 n^3;
det and slogdet an LU, 2n^3/3 (the diagonal's n products or logs not counted). QR of m x n (s = min(m, n),
b = max(m, n)): geqrf 2 b s^2 - 2 s^3/3; forming Q (orgqr, householder_product) from s reflectors with q columns
4 m q s - 2 (m + q) s^2 + 4 s^3/3 (mode 'reduced': q = s; 'complete': q = m; 'r': no Q); applying them to a
matrix with k columns (ormqr) 4 m k s - 2 k s^2. Least squares (lstsq, the QR drivers gelsy and gels, CPU's and
CUDA's defaults) one QR, Q^T applied to the k right-hand sides and a triangular solve: 2 b s^2 - 2 s^3/3 +
4 m k s - 2 k s^2 + s^2 k. Eigen- and singular-value decompositions iterate a data-dependent number of times and
are left without a formula, and so are what is built on them (lstsq's SVD drivers gelsd and gelss, pinv). A trace
records no string argument: there a QR is taken as mode 'reduced' and lstsq as a QR driver (the defaults). The
Euclidean distance
of (m, d) and (n, d) points (cdist's p=2 path, _euclidean_dist): one product 2 m n d, the squared norms 2(m + n)d,
and 3 per distance (add the norms, clamp, root); cdist's direct path (_cdist_forward, any p) 3 per point pair per
coordinate (difference, power, sum), and pdist's the same over the n(n-1)/2 pairs of its n points; pdist's backward
4 per pair per coordinate (the difference, its scaling by the pair's gradient over its distance, and the two
accumulations into the pair's rows).
Bytes: the inputs read once and the outputs written once.

In a trace, cholesky_solve runs as _cholesky_solve_helper, linalg_cholesky as linalg_cholesky_ex, cdist and
_euclidean_dist as their pieces (composites: their children are the rows); the analyze counting pass records the
outer op alone, which the formula stands for.
"""

from __future__ import annotations

from math import prod

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register


def _complex(x: TensorMeta) -> int:
    return 4 if x.dtype.startswith("complex") else 1


def _batch(x: TensorMeta) -> int:
    return prod(x.shape[:-2])


def _cost(flops: float, call: Call, inputs: list[TensorMeta], outputs: list[TensorMeta]) -> OpCost:
    written = nbytes(call.outputs) if call.outputs is not None else nbytes(outputs)
    return OpCost(float(flops), float(nbytes(inputs) + written), True)


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


@register("aten::linalg_lu_solve")
def lu_solve(call: Call) -> OpCost:
    """(LU, pivots, B, *, left=True, adjoint=False): the two triangular solves with the factors, 2 n^2 k."""
    lu, pivots, b = call.tensor(0, "LU"), call.maybe_tensor(1, "pivots"), call.tensor(2, "B")
    n, k = _solve_sides(b, bool(call.arg(3, "left", True)))
    return _cost(max(_batch(lu), _batch(b)) * 2 * n * n * k * _complex(b), call, [lu, pivots, b], [b])


@register("aten::_linalg_det", "aten::_linalg_slogdet")
def determinant(call: Call) -> OpCost:
    """(A) -> (det, LU, pivots) or (sign, logabsdet, LU, pivots): an LU, 2n^3/3 per matrix."""
    a = call.tensor(0, "A")
    n = a.shape[-1]
    return _cost(_batch(a) * 2 * n ** 3 / 3 * _complex(a), call, [a], [a])


register("aten::linalg_det", "aten::det", "aten::linalg_slogdet", "aten::slogdet", "aten::logdet",
         composite=True)(determinant)


def _qr_sizes(a: TensorMeta) -> tuple[int, int, int]:
    """(m, s, b): rows, min(m, n), max(m, n)."""
    m, n = a.shape[-2], a.shape[-1]
    return m, min(m, n), max(m, n)


def _geqrf_flops(a: TensorMeta) -> float:
    _, s, b = _qr_sizes(a)
    return 2 * b * s * s - 2 * s ** 3 / 3


def _orgqr_flops(m: int, q: int, s: int) -> float:
    return 4 * m * q * s - 2 * (m + q) * s * s + 4 * s ** 3 / 3


@register("aten::linalg_qr")
def linalg_qr(call: Call) -> OpCost:
    """(A, mode='reduced') -> (Q, R): geqrf, then Q formed from its reflectors (none for mode 'r')."""
    a = call.tensor(0, "A")
    mode = call.arg(1, "mode", "reduced")
    m, s, _ = _qr_sizes(a)
    flops = _geqrf_flops(a)
    if mode != "r":
        flops += _orgqr_flops(m, m if mode == "complete" else s, s)
    q = TensorMeta(a.shape[:-2] + (m, m if mode == "complete" else s), a.dtype)
    r = TensorMeta(a.shape[:-2] + ((m if mode == "complete" else s), a.shape[-1]), a.dtype)
    return _cost(_batch(a) * flops * _complex(a), call, [a], [r] if mode == "r" else [q, r])


@register("aten::geqrf")
def geqrf(call: Call) -> OpCost:
    """(A) -> (QR, tau): the Householder factorization alone."""
    a = call.tensor(0, "self")
    return _cost(_batch(a) * _geqrf_flops(a) * _complex(a), call, [a], [a])


@register("aten::linalg_householder_product", "aten::orgqr")
def householder_product(call: Call) -> OpCost:
    """(A (m x q), tau (s)) -> Q (m x q): Q formed from s reflectors."""
    a, tau = call.tensor(0, "input"), call.tensor(1, "tau")
    m, q, s = a.shape[-2], a.shape[-1], tau.shape[-1]
    return _cost(_batch(a) * _orgqr_flops(m, q, s) * _complex(a), call, [a, tau], [a])


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
    flops = _geqrf_flops(a) + 4 * m * k * s - 2 * k * s * s + s * s * k
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
