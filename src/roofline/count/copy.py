"""Copies and casts: copy_, _to_copy/to, clone, contiguous, cat/stack, repeat, padding, flip/roll/tril/triu,
and the *_copy forms of views.

FLOPs: 0 (a cast's conversion is not counted as arithmetic).
Bytes: the source read once at its own dtype, the destination written once at its dtype (copy_ between
dtypes reads src at src's dtype and writes self at self's). ``contiguous`` on an already contiguous tensor
and ``to`` that changes nothing move 0 bytes (they return their input). cat/stack read every input and
write the joined output. Padding reads the input and writes the padded output. Packing a padded batch of
sequences (pack_padded_sequence) reads and writes the kept elements; unpacking writes the padded output.
"""

from __future__ import annotations

from math import prod
from typing import Any

from roofline.count.meta import TensorMeta, dtype_name, itemsize_of, unknown_dtype_note
from roofline.count.registry import Call, OpCost, nbytes, register
from roofline.count.shapes import broadcast_shapes

# torch 2.1 and older (2.0: the HTA traces of 2023) record every TensorList argument as [] (2.4 and later record
# each tensor's shape, up to PROFILER_LIST_LIMIT of them: a longer list is [] too, sweep 7's bidirectional GRU
# stacking its 60 steps' outputs): a cat or stack of one is left unmodelled with this reason, which the report's
# notes repeat (analyze/pipeline.py), unless the ops below it show its output (analyze/stacked_lists.py).
LIST_NOT_RECORDED = "the tensor list's shapes were not recorded"
PROFILER_LIST_LIMIT = 30  # torch 2.14: a list of 30 tensors recorded, of 31 not


def _copy_cost(source: TensorMeta, written: int) -> OpCost:
    return OpCost(0.0, float(source.nbytes + written), True)


@register("aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize")
def copy_(call: Call) -> OpCost:
    """copy_(self, src): reads src (its own, maybe broadcast, size), writes self. _copy_from(self, dst)."""
    if call.name == "aten::copy_":
        dst, src = call.tensor(0, "self"), call.tensor(1, "src")
    else:
        src, dst = call.tensor(0, "self"), call.tensor(1, "dst")
    return _copy_cost(src, dst.nbytes)


@register("aten::_to_copy")
def to_copy(call: Call) -> OpCost:
    """(self, dtype, layout, device, pin_memory, non_blocking, memory_format): written at dtype."""
    self_ = call.tensor(0, "self")
    dtype = dtype_name(call.arg(1, "dtype")) or self_.dtype
    written = nbytes(call.outputs) if call.outputs is not None else self_.numel * itemsize_of(dtype)
    return _copy_cost(self_, written)


def _to_target_dtype(call: Call, self_: TensorMeta) -> tuple[str | None, bool]:
    """The dtype a ``to`` overload asks for, and whether copy=True was passed."""
    args = call.args
    other = call.maybe_tensor(1, "other")
    if other is not None:
        return other.dtype, bool(call.arg(3, "copy", False))
    second = call.arg(1)
    if isinstance(second, str) and dtype_name(second) is None:  # to.device(self, device, dtype, ...)
        return dtype_name(call.arg(2, "dtype")), bool(call.arg(4, "copy", False))
    dtype = dtype_name(call.arg(1, "dtype"))
    copy_index = 6 if len(args) >= 7 else 3
    return dtype, bool(call.arg(copy_index, "copy", False))


@register("aten::to", composite=True)
def to(call: Call) -> OpCost:
    """Composite (-> _to_copy when something changes, else returns self: 0 bytes). Device moves are not
    visible in a trace's arguments; recorded outputs settle it."""
    self_ = call.tensor(0, "self")
    if call.outputs is not None:
        return _copy_cost(self_, nbytes(call.outputs))
    dtype, force_copy = _to_target_dtype(call, self_)
    if (dtype is None or dtype == self_.dtype) and not force_copy:
        return OpCost(0.0, 0.0, True, note="to: nothing to convert, returns self (a device move would copy)")
    return _copy_cost(self_, self_.numel * itemsize_of(dtype or self_.dtype))


@register("aten::clone", "aten::lift_fresh_copy", "aten::_pin_memory", "aten::pin_memory", "aten::flip",
          "aten::roll", "aten::tril", "aten::triu", "aten::rot90", "aten::fliplr", "aten::flipud",
          "aten::t_copy", "aten::transpose_copy", "aten::permute_copy", "aten::view_copy", "aten::alias_copy",
          "aten::detach_copy", "aten::unsqueeze_copy", "aten::squeeze_copy", "aten::_reshape_copy",
          "aten::_unsafe_view_copy", "aten::reshape_copy", "aten::_to_dense", "aten::to_dense",
          "aten::resolve_conj_copy", "aten::_neg_view_copy", "aten::_conj_copy", "aten::view_as_real_copy",
          "aten::view_as_complex_copy", "aten::tril_", "aten::triu_", "aten::to_mkldnn")
def same_size_copy(call: Call) -> OpCost:
    """Reads the input, writes a new tensor of the same number of elements (tril_/triu_ in place)."""
    self_ = call.tensor(0, "self")
    written = nbytes(call.outputs) if call.outputs is not None and not call.inplace else self_.nbytes
    return _copy_cost(self_, written)


@register("aten::type_as", composite=True)
def type_as(call: Call) -> OpCost:
    """(self, other): composite, to(other's dtype): returns self (0 bytes) when the dtypes agree, else a cast."""
    self_, other = call.tensor(0, "self"), call.tensor(1, "other")
    if other.dtype == self_.dtype:
        return OpCost(0.0, 0.0, True, note="type_as: the same dtype, returns self")
    return _copy_cost(self_, self_.numel * other.itemsize)


@register("aten::diag_embed")
def diag_embed(call: Call) -> OpCost:
    """(self, offset=0, dim1=-2, dim2=-1): self's last dim n placed on a diagonal of new (n + |offset|)^2
    matrices, which are written whole (zeros off the diagonal)."""
    self_ = call.tensor(0, "self")
    side = self_.shape[-1] + abs(int(call.arg(1, "offset", 0)))
    written = nbytes(call.outputs) if call.outputs is not None else prod(self_.shape[:-1]) * side * side * \
        self_.itemsize
    return _copy_cost(self_, written)


@register("aten::diag")
def diag(call: Call) -> OpCost:
    """(self, diagonal=0): a vector made the diagonal of a square matrix written whole, or a matrix's diagonal
    copied out."""
    self_ = call.tensor(0, "self")
    k = abs(int(call.arg(1, "diagonal", 0)))
    if call.outputs is not None:
        return _copy_cost(self_, nbytes(call.outputs))
    if self_.ndim == 1:
        return _copy_cost(self_, (self_.numel + k) ** 2 * self_.itemsize)
    rows, cols = self_.shape
    length = max(0, min(rows, cols - k) if int(call.arg(1, "diagonal", 0)) >= 0 else min(rows - k, cols))
    return OpCost(0.0, float(2 * length * self_.itemsize), True)


@register("aten::contiguous", composite=True)
def contiguous(call: Call) -> OpCost:
    """Composite: returns self (0 bytes) when already contiguous, else clone()."""
    self_ = call.tensor(0, "self")
    if self_.is_contiguous:
        return OpCost(0.0, 0.0, True, note="already contiguous: returns self")
    return _copy_cost(self_, self_.nbytes)


def _joined_shape(tensors: list[TensorMeta], dim: int, stack: bool) -> tuple[int, ...]:
    shaped = [t for t in tensors if not (t.ndim == 1 and t.numel == 0)] or tensors
    first = shaped[0].shape
    if stack:
        d = dim % (len(first) + 1)
        return first[:d] + (len(tensors),) + first[d:]
    d = dim % len(first)
    return first[:d] + (sum(t.shape[d] for t in shaped),) + first[d + 1:]


@register("aten::cat", "aten::concat", "aten::concatenate", "aten::_cat", "aten::stack", "aten::hstack",
          "aten::vstack", "aten::dstack", "aten::column_stack", "aten::_stack")
def cat(call: Call) -> OpCost:
    """(tensors, dim): every input read, the joined output written. A list whose shapes the profiler did not record
    (clip_grad_norm_'s stack of per-parameter norms) with a known output is a copy of the output: the inputs hold
    exactly its elements, so as many bytes are read as written."""
    tensors = call.arg(0, "tensors")
    if not isinstance(tensors, (list, tuple)) or not tensors or \
            not all(isinstance(t, TensorMeta) for t in tensors):
        outputs = [t for t in call.outputs or () if isinstance(t, TensorMeta)]
        if not outputs:
            raise ValueError(f"{LIST_NOT_RECORDED}, nor the output's")
        written = nbytes(outputs)
        return OpCost(0.0, float(2 * written), True,
                      note=f"tensor list's shapes not recorded: counted as a copy of the output's {written} bytes "
                           "(read = written)")
    note = unknown_dtype_note(tensors)
    read = nbytes(tensors)
    if call.outputs is not None:
        written = nbytes(call.outputs)
    else:
        stack = call.name in ("aten::stack", "aten::_stack")
        dim = call.arg(1, "dim", 0)
        if call.name in ("aten::hstack", "aten::vstack", "aten::dstack", "aten::column_stack"):
            written = read
        else:
            written = prod(_joined_shape(list(tensors), int(dim), stack)) * tensors[0].itemsize
    return OpCost(0.0, float(read + written), True, note=note)


@register("aten::_nested_tensor_from_tensor_list", "aten::nested_tensor")
def nested_from_list(call: Call) -> OpCost:
    """(list, dtype, ...): the components copied into one nested tensor's buffer: every input read, as many
    elements written."""
    tensors = call.arg(0, "list")
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, TensorMeta) for t in tensors):
        raise ValueError(LIST_NOT_RECORDED)
    read = nbytes(tensors)
    written = nbytes(call.outputs) if call.outputs is not None else read
    return OpCost(0.0, float(read + written), True, note=unknown_dtype_note(list(tensors)))


@register("aten::repeat")
def repeat(call: Call) -> OpCost:
    """(self, repeats): the output is self tiled; self read once."""
    self_ = call.tensor(0, "self")
    if call.outputs is not None:
        return _copy_cost(self_, nbytes(call.outputs))
    repeats = call.arg(1, "repeats")
    if not isinstance(repeats, (list, tuple)):
        raise ValueError("repeats not recorded")
    return _copy_cost(self_, self_.numel * prod(int(r) for r in repeats) * self_.itemsize)


@register("aten::tile", composite=True)
def tile(call: Call) -> OpCost:
    return repeat(call)


@register("aten::expand_copy")
def expand_copy(call: Call) -> OpCost:
    """expand_copy(self, size): the expanded tensor materialized; self read once."""
    self_ = call.tensor(0, "self")
    if call.outputs is not None:
        return _copy_cost(self_, nbytes(call.outputs))
    size = call.arg(1, "size")
    if not isinstance(size, (list, tuple)):
        raise ValueError("size not recorded")
    shape = tuple(s if int(t) == -1 else int(t) for s, t in zip((1,) * (len(size) - self_.ndim) + self_.shape, size))
    return _copy_cost(self_, prod(broadcast_shapes([self_.shape, shape])) * self_.itemsize)


@register("aten::repeat_interleave")
def repeat_interleave(call: Call) -> OpCost:
    """(self, repeats: int | Tensor, dim, output_size): output_size or an int repeat gives the size."""
    self_ = call.tensor(0, "self")
    if call.outputs is not None:
        return _copy_cost(self_, nbytes(call.outputs))
    repeats = call.arg(1, "repeats")
    output_size = call.arg(3, "output_size")
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        return _copy_cost(self_, self_.nbytes * repeats)
    if isinstance(output_size, int):
        return _copy_cost(self_, output_size * self_.itemsize * max(self_.numel // max(self_.shape[0], 1), 1))
    raise ValueError("repeat_interleave output size depends on the data")


def _padded_shape(shape: tuple[int, ...], pad: Any) -> tuple[int, ...]:
    if not isinstance(pad, (list, tuple)) or len(pad) % 2:
        raise ValueError("pad not recorded")
    out = list(shape)
    for i in range(len(pad) // 2):
        out[len(out) - 1 - i] += int(pad[2 * i]) + int(pad[2 * i + 1])
    return tuple(out)


@register("aten::constant_pad_nd", "aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d",
          "aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d", "aten::_pad_circular",
          "aten::_pad_enum")
def pad_nd(call: Call) -> OpCost:
    """(self, pad, ...): input read once, padded output written once."""
    self_ = call.tensor(0, "self")
    if call.outputs is not None:
        return _copy_cost(self_, nbytes(call.outputs))
    return _copy_cost(self_, prod(_padded_shape(self_.shape, call.arg(1, "pad"))) * self_.itemsize)


@register("aten::reflection_pad1d_backward", "aten::reflection_pad2d_backward", "aten::reflection_pad3d_backward",
          "aten::replication_pad1d_backward", "aten::replication_pad2d_backward",
          "aten::replication_pad3d_backward")
def pad_backward(call: Call) -> OpCost:
    """(grad_output, self, padding): every grad_output element added into the input's gradient (1 FLOP each: the
    border's fold onto the edge), grad_output read, the gradient (self's size) written; self is not read."""
    grad, self_ = call.tensor(0, "grad_output"), call.tensor(1, "self")
    written = nbytes(call.outputs) if call.outputs is not None else self_.nbytes
    return OpCost(float(grad.numel), float(grad.nbytes + written), True)


@register("aten::pixel_shuffle", "aten::pixel_unshuffle", "aten::channel_shuffle", "aten::native_channel_shuffle")
def pixel_shuffle(call: Call) -> OpCost:
    """(self, factor or groups): a permuting copy, the output as large as the input."""
    self_ = call.tensor(0, "self")
    return _copy_cost(self_, nbytes(call.outputs) if call.outputs is not None else self_.nbytes)


@register("aten::pad", composite=True)
def pad(call: Call) -> OpCost:
    """Composite (-> constant_pad_nd / reflection / replication)."""
    return pad_nd(call)


@register("aten::_nested_tensor_from_mask", "aten::to_padded_tensor", "aten::_nested_from_padded",
          "aten::_nested_from_padded_and_nested_example")
def nested_repack(call: Call) -> OpCost:
    """Padded <-> nested (ragged) copies: the kept elements read (the padded side at most), the result
    written, the mask read. Without recorded outputs the result is taken as large as the input."""
    source = call.tensor(0, "t")
    mask = call.maybe_tensor(1, "mask")
    outputs = call.outputs if call.outputs is not None else [source]
    moved = min(source.nbytes, nbytes(outputs)) + nbytes(outputs)
    return OpCost(0.0, float(moved + (mask.nbytes if mask is not None else 0)), True)


def _time_major(shape: tuple[int, ...], batch_first: bool) -> tuple[int, ...]:
    return (shape[1], shape[0], *shape[2:]) if batch_first else shape


@register("aten::_pack_padded_sequence")
def pack_padded_sequence(call: Call) -> OpCost:
    """(input (T, B, *) or (B, T, *), lengths (B,), batch_first) -> (data (N, *), batch_sizes): the N kept
    elements (N = sum(lengths)) read and written packed, lengths read, batch sizes written. N is in the outputs
    only (the lengths' values decide it): without them (a trace, unless its children show them:
    analyze/packed_sequences.py) it is not counted."""
    input_, lengths = call.tensor(0, "input"), call.tensor(1, "lengths")
    if not call.outputs:
        raise ValueError("the packed size depends on the lengths' values, which a trace does not record")
    data = call.outputs[0]
    steps = _time_major(input_.shape, bool(call.arg(2, "batch_first", False)))[0]
    batch_sizes = call.outputs[1] if len(call.outputs) > 1 else TensorMeta((steps,), "int64")
    return OpCost(0.0, float(data.nbytes + lengths.nbytes + data.nbytes + batch_sizes.nbytes), True)


@register("aten::_pad_packed_sequence")
def pad_packed_sequence(call: Call) -> OpCost:
    """(data (N, *), batch_sizes (T,), batch_first, padding_value, total_length) -> (padded (T', B, *) or
    (B, T', *), lengths (B,)): data and batch sizes read, the padded output written once (padding included),
    lengths written. B is batch_sizes[0], a value: known from the outputs only."""
    data, batch_sizes = call.tensor(0, "data"), call.tensor(1, "batch_sizes")
    if not call.outputs:
        raise ValueError("the padded batch size is batch_sizes[0], a value a trace does not record")
    padded = call.outputs[0]
    lengths = call.outputs[1] if len(call.outputs) > 1 else TensorMeta((padded.shape[1],), "int64")
    return OpCost(0.0, float(data.nbytes + batch_sizes.nbytes + padded.nbytes + lengths.nbytes), True)


@register("aten::_pack_padded_sequence_backward")
def pack_padded_sequence_backward(call: Call) -> OpCost:
    """(grad (N, *), input_size, batch_sizes, batch_first): the packed gradient and batch sizes read, the padded
    gradient of input_size written once (zeros where padding)."""
    grad, batch_sizes = call.tensor(0, "grad"), call.tensor(2, "batch_sizes")
    size = call.arg(1, "input_size")
    if not isinstance(size, (list, tuple)):
        raise ValueError("input_size not recorded")
    written = nbytes(call.outputs) if call.outputs else prod(int(s) for s in size) * grad.itemsize
    return OpCost(0.0, float(grad.nbytes + batch_sizes.nbytes + written), True)


@register("aten::_nested_tensor_from_mask_left_aligned")
def nested_mask_check(call: Call) -> OpCost:
    """Whether a padding mask is left-aligned: the mask read, a bool returned."""
    return OpCost(0.0, float(call.tensor(1, "mask").nbytes), True)


# FSDP2's (torch.distributed.fsdp.fully_shard) copies around its collectives, custom ops of the fsdp namespace
# (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py). Copies: 0 FLOPs, what they read and write.
def _tensor_list(call: Call, index: int, name: str) -> list[TensorMeta]:
    value = call.arg(index, name)
    metas = [m for m in value if isinstance(m, TensorMeta)] if isinstance(value, (list, tuple)) else []
    if not metas:
        raise ValueError(f"{name} not recorded")
    return metas


@register("fsdp::all_gather_copy_in")
def fsdp_all_gather_copy_in(call: Call) -> OpCost:
    """(all_gather_inputs: Tensor[], all_gather_output, inp_split_sizes, all_gather_input_numel, rank): this
    rank's shards read and written into its slice of the all-gather buffer (the buffer's other slices untouched)."""
    inputs = _tensor_list(call, 0, "all_gather_inputs")
    return OpCost(0.0, float(2 * nbytes(inputs)), True, note=unknown_dtype_note(inputs))


@register("fsdp::split_with_sizes_copy")
def fsdp_split_with_sizes_copy(call: Call) -> OpCost:
    """(all_gather_output, all_gather_input_split_sizes, dim, *, out: Tensor[]): the gathered buffer read once,
    copied out into the unsharded parameters."""
    source = call.tensor(0, "all_gather_output")
    out = call.arg(3, "out")
    written = nbytes(m for m in out if isinstance(m, TensorMeta)) if isinstance(out, (list, tuple)) else 0
    return _copy_cost(source, written or source.nbytes)


@register("fsdp::chunk_cat")
def fsdp_chunk_cat(call: Call) -> OpCost:
    """(tensors: Tensor[], dim, num_chunks, out): the gradients read, written chunk-interleaved (padded to whole
    chunks) into the reduce-scatter input ``out``."""
    tensors = _tensor_list(call, 0, "tensors")
    out = call.maybe_tensor(3, "out")
    return OpCost(0.0, float(nbytes(tensors) + (out.nbytes if out is not None else nbytes(tensors))), True,
                  note=unknown_dtype_note(tensors))
