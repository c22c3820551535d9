"""Views and metadata ops: 0 FLOPs, 0 bytes, modeled, is_view=True.

A view (view, transpose, slice, expand, ...) makes a new tensor header over the same storage; metadata ops
(resize_ of an allocation, result_type, detach, lift_fresh) change no element either. No kernel runs.
``reshape`` and ``flatten`` are counted as views and marked composite: when their input cannot be viewed
they call ``clone`` / ``_unsafe_view``, which appear as their own ops (in a trace as children, in a dispatch
recording instead), and carry the copy's cost.
"""

from __future__ import annotations

from roofline.count.registry import Call, OpCost, register, zero_cost

VIEW_NAMES = (
    "view", "_unsafe_view", "_reshape_alias", "view_as", "unflatten",
    "t", "t_", "transpose", "transpose_", "swapaxes", "swapdims", "permute", "movedim", "moveaxis", "numpy_T",
    "mT", "mH", "adjoint", "expand", "expand_as", "broadcast_to", "slice", "select", "narrow", "squeeze",
    "squeeze_", "unsqueeze", "unsqueeze_", "as_strided", "as_strided_", "split", "split_with_sizes",
    "unsafe_split", "unsafe_split_with_sizes", "tensor_split", "hsplit", "vsplit", "chunk", "unsafe_chunk",
    "unbind", "detach", "detach_", "alias", "lift_fresh", "lift", "diagonal", "unfold", "real", "imag",
    "view_as_real", "view_as_complex", "_neg_view", "_conj", "conj", "resolve_conj", "resolve_neg",
    "positive", "_indices", "_values", "indices", "values", "crow_indices", "col_indices", "align_to",
    "refine_names", "rename", "atleast_1d", "atleast_2d", "atleast_3d", "matrix_H", "_nested_view_from_buffer",
    "_nested_view_from_jagged", "_nested_get_values", "_nested_get_offsets", "_nested_get_lengths",
    "_nested_get_jagged_dummy", "_nested_get_ragged_idx", "_nested_get_min_seqlen", "_nested_get_max_seqlen",
    "resize_", "resize_as_", "_resize_output_", "set_", "result_type", "size", "stride", "numel", "dim",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "storage_offset", "is_contiguous",
    "is_same_size", "cudnn_is_acceptable", "_use_cudnn_rnn_flatten_weight", "_use_cudnn_ctc_loss",
    "is_nonzero", "_has_compatible_shallow_copy_type", "_shape_as_tensor", "requires_grad_",
    "retain_grad", "_version", "output_nr", "_fw_primal", "_make_dual", "_unpack_dual", "data", "set_data",
    "record_stream", "is_pinned", "_is_zerotensor", "is_floating_point", "is_complex",
    "can_cast", "promote_types", "_assert_async", "_assert_tensor_metadata", "sym_constrain_range_for_size",
    "_functional_assert_async", "dequantize_self", "_propagate_xla_data", "sym_is_contiguous",
    "_debug_has_internal_overlap", "_has_same_storage_numel", "broadcast_tensors",
    "_nested_tensor_size", "_nested_tensor_strides", "_nested_tensor_storage_offsets",
    "_sparse_coo_tensor_with_dims_and_tensors", "_sparse_coo_tensor_unsafe", "_sparse_csr_tensor_unsafe",
    "_nnz", "sparse_dim", "dense_dim", "is_coalesced", "_coalesced_", "ccol_indices", "row_indices",
    "q_scale", "q_zero_point", "qscheme", "q_per_channel_axis",
)


def _view(call: Call) -> OpCost:
    return zero_cost(view=True)


register(*(f"aten::{name}" for name in VIEW_NAMES), "detach", "detach_", view=True)(_view)

# A view when the strides allow it, else clone + _unsafe_view (their children in a trace carry the copy).
MAYBE_COPYING_VIEWS = ("reshape", "reshape_as", "flatten", "ravel")
register(*(f"aten::{name}" for name in MAYBE_COPYING_VIEWS), view=True, composite=True)(_view)


@register("profiler::_record_function_enter", "profiler::_record_function_enter_new",
          "profiler::_record_function_exit", "profiler::_call_end_callbacks_on_jit_fut")
def profiler_marker(call: Call) -> OpCost:
    """record_function's enter/exit markers: no kernel, no work."""
    return zero_cost("profiler marker")



# torch.compile's runtime, as the profiler names it: guard evaluation and the wrappers around a compiled graph (the
# graph's own kernels are other events). Host work with no kernel: launch-bound, not unmodelled.
DYNAMO_RUNTIME = ("TorchDynamo Cache Lookup", "Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue",
                  "AOTDispatcher Runtime Wrapper Epilogue")


@register(*DYNAMO_RUNTIME)
def dynamo_runtime(call: Call) -> OpCost:
    return zero_cost("torch.compile runtime (guards, wrappers): host time, no kernel")
