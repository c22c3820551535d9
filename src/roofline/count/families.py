"""Which aten ops belong to which family, once for every layer (analysis picks the TF32 roof by it, the doctor's
rules pick their ops by it). Names are op kinds: ``op_kind("aten::addmm_")`` is ``"addmm"``."""

from __future__ import annotations

import functools

from roofline.count.meta import canonical_dtype

# Ops whose host reads a device value (a scalar, a count that sizes the output): on a GPU each one waits for the
# device (the doctor's host syncs; the analysis measures the device's idle time inside them).
HOST_READ = frozenset({"_local_scalar_dense", "item", "nonzero", "masked_select", "unique", "_unique", "_unique2",
                       "unique_consecutive", "is_nonzero", "equal", "tolist", "nonzero_static_sync",
                       "repeat_interleave"})
# (input, weight) matrix products: the doctor reads their operands as such.
MATMUL = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addbmm", "_addmm_activation"})
# Matrix-vector products: cuBLAS too (TF32 applies), but no (K, N) tile to align.
MATVEC = frozenset({"addmv", "mv"})
# Convolutions whose first two inputs are (input, weight).
CONV = frozenset({"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "cudnn_convolution",
                  "mkldnn_convolution", "_slow_conv2d_forward", "conv_transpose2d", "convolution_overrideable"})
# The rest of the convolution family (cuDNN's kernels, so TF32 applies), whose inputs are not (input, weight).
CONV_OTHER = frozenset({"cudnn_convolution_transpose", "conv_transpose1d", "conv_transpose3d",
                        "convolution_backward", "cudnn_convolution_relu", "cudnn_convolution_add_relu"})
ATTENTION = frozenset({"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                       "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                       "_scaled_dot_product_flash_attention_for_cpu", "_efficient_attention_forward",
                       "_flash_attention_forward"})


@functools.lru_cache(maxsize=4096)
def op_kind(name: str) -> str:
    """'aten::add_' / 'aten.add_.Tensor' / 'add' -> 'add'; in-place and overload spellings fold together."""
    base = name.strip()
    for prefix in ("aten::", "aten.", "prims::", "prims."):
        if base.startswith(prefix):
            base = base[len(prefix):]
            break
    base = base.split(".", 1)[0]
    if base.endswith("_") and not base.endswith("__") and len(base) > 1 and base != "copy_":
        base = base[:-1]
    if base == "copy_":
        return "copy"
    return base


def _view_kinds() -> frozenset[str]:
    from roofline.count import counting  # noqa: F401 - importing it registers every formula, views included
    from roofline.count.registry import VIEW_OPS

    return frozenset(op_kind(name) for name in VIEW_OPS) | ALLOCATION


# Allocations move no data either (their memory is written by the op that fills it).
ALLOCATION = frozenset({"empty", "empty_like", "empty_strided"})
# Ops that move no data: the views and metadata queries count registers as such (view=True), and allocations.
VIEW = _view_kinds()


def repeats_read_by_host(input_shapes: list, input_dtypes: list) -> bool:
    """Whether a repeat_interleave's host reads its repeats (their sum sizes the output): a tensor of repeats, a
    second tensor input or its only input integers (``torch.repeat_interleave(repeats)``). By an int (GQA's
    ``k.repeat_interleave(n_rep, dim=1)``) the output's size is known and nothing is read, though the doctor said
    so in every forward and the prediction timed it as a sync (gpu_sweep batch 2)."""
    tensors = [canonical_dtype(input_dtypes[i]) if i < len(input_dtypes) else ""
               for i, shape in enumerate(input_shapes) if shape and isinstance(shape, (list, tuple))]
    return len(tensors) >= 2 or (len(tensors) == 1 and tensors[0].startswith(("int", "uint")))

