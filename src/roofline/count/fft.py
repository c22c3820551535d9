"""Fast Fourier transforms: _fft_c2c, _fft_r2c, _fft_c2r (what torch.fft.* and stft dispatch to) and the
composite torch.fft entry points that call them.

FLOPs (the usual radix-2 figure, as FFTW's benchmarks and most papers count it): a complex transform of N
points costs 5 N log2 N real FLOPs; a transform over several dims costs 5 N log2 N with N the product of the
transformed sizes (one 1-D pass per dim), times the number of transforms in the batch. A real-to-complex or
complex-to-real transform costs half of the complex one of the same real length (2.5 N log2 N).
NB: this is a convention, not a kernel's instruction count: non-power-of-two sizes (Bluestein, mixed radix)
do more work, and the normalization scale (norm="ortho"/"forward") is not counted. torch's FlopCounterMode
counts no FFT at all.
Bytes: the input read once and the output written once (complex elements are 2 real ones wide).
"""

from __future__ import annotations

from math import log2, prod

from roofline.count.meta import TensorMeta
from roofline.count.registry import Call, OpCost, nbytes, register
from roofline.count.shapes import complex_of
from roofline.report import REAL_PART_OF

NOTE = "5 N log2 N per complex transform (2.5 N log2 N real-to-complex), the radix-2 convention"


def _dims(call: Call, x: TensorMeta) -> list[int]:
    dims = call.arg(1, "dim")
    if isinstance(dims, int):
        dims = [dims]
    if not dims:
        return list(range(x.ndim))
    return sorted({int(d) % x.ndim for d in dims})


def fft_flops(full_shape: tuple[int, ...], dims: list[int], real: bool) -> float:
    """FLOPs of transforming ``full_shape`` (the complex, full-length signal) over ``dims``."""
    points = prod(full_shape[d] for d in dims)
    if points <= 1:
        return 0.0
    flops = 5.0 * prod(full_shape) * log2(points)
    return flops / 2 if real else flops


def _cost(call: Call, x: TensorMeta, flops: float, fallback: TensorMeta) -> OpCost:
    outputs = call.outputs if call.outputs is not None else [fallback]
    return OpCost(flops, float(x.nbytes + nbytes(outputs)), True, note=NOTE)


@register("aten::_fft_c2c")
def fft_c2c(call: Call) -> OpCost:
    """(self, dim, normalization, forward)."""
    x = call.tensor(0, "self")
    return _cost(call, x, fft_flops(x.shape, _dims(call, x), real=False), x.with_shape(x.shape))


@register("aten::_fft_r2c")
def fft_r2c(call: Call) -> OpCost:
    """(self, dim, normalization, onesided): the last transformed dim keeps n//2+1 bins when onesided."""
    x = call.tensor(0, "self")
    dims = _dims(call, x)
    shape = list(x.shape)
    if call.arg(3, "onesided", True) and dims:
        shape[dims[-1]] = x.shape[dims[-1]] // 2 + 1
    out = TensorMeta(tuple(shape), complex_of(x.dtype))
    return _cost(call, x, fft_flops(x.shape, dims, real=True), out)


@register("aten::_fft_c2r")
def fft_c2r(call: Call) -> OpCost:
    """(self, dim, normalization, last_dim_size): the output's last transformed dim is last_dim_size."""
    x = call.tensor(0, "self")
    dims = _dims(call, x)
    shape = list(x.shape)
    if dims:
        shape[dims[-1]] = int(call.arg(3, "last_dim_size", 2 * (x.shape[dims[-1]] - 1)))
    out = TensorMeta(tuple(shape), REAL_PART_OF.get(x.dtype, "float32"))
    return _cost(call, x, fft_flops(tuple(shape), dims, real=True), out)
