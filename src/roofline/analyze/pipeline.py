"""Building a Report from a trace: the core path, for trace files users bring and for live runs alike.

A live run (analyze/live.py) exports its torch.profiler trace and comes here too, with the op recording that a
live run can afford. Nothing here imports torch, so `roofline trace` stays light on big traces.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Any, Callable, Iterator

import numpy as np

from roofline.analyze.join import (
    COMPILED_GRAPH,
    Chosen,
    RecordedIndex,
    children_index,
    choose_with_recording,
    op_phase,
    choose_without_recording,
    roots_by_step,
    subtree,
)
from roofline.analyze.host_events import fill_host_counts, host_gaps_us
from roofline.analyze.host_span_idle import fill_device_idle
from roofline.analyze.communication import (BACKEND_PREFIXES, MESSAGE_UNRECORDED, SHARD_ONLY, is_communication_op,
                                            message_unrecorded, recorded_message_bytes)
from roofline.analyze.kernel_classes import kernel_classes
from roofline.analyze.kernel_names import any_tf32
from roofline.analyze.optimizer_lists import LIST_OP_PREFIXES, OptimizerLists, with_lists
from roofline.analyze.dispatch_mode_paths import RECOUNTED, as_timed
from roofline.analyze.shape_changes import (median_event, recorded_dims, shape_change_note, shapes_conflict,
                                           varying_steps_note)
from roofline.analyze.stacked_lists import CAT_OPS, STACK_OPS, catted_output, list_unrecorded, stacked_output
from roofline.analyze.index_lists import INDEX_OPS, index_args_from_children, indices_unrecorded
from roofline.analyze.nested_operands import NESTED_BUFFER_OPS, args_with_nested_buffer
from roofline.analyze.compiled_graphs import (FUSED_GRAPH_COST, FusedGraphs, fuse_into_compiled_graphs,
                                              fused_note)
from roofline.analyze.packed_sequences import NEEDS_CHILDREN, outputs_from_children
from roofline.analyze.resized_outputs import RESIZED_OUTPUT_OPS, resized_output
from roofline.analyze.quantized_outputs import QUANTIZED_LINEARS, linear_outputs_from_children
from roofline.analyze.recorded_products import MATRIX_EXP_OPS, products_below
from roofline.analyze.sparse_operands import (DENSE_SPARSE_ADDS, dense_sparse_add_cost, reads_sparse_metadata,
                                              sparse_values_dims)
from roofline.analyze.roofline import place_op, summarize
from roofline.analyze.fallback_roofs import fallback_roof_notes
from roofline.analyze.integer_roofs import integer_roof_notes
from roofline.analyze.stale import stale_ceilings_note, thread_count_note
from roofline.analyze.varlen_notes import varlen_attention_notes
from roofline.capture.tool_frames import profiler_time_by_step
from roofline.capture.trace_syncs import int_or_none, left_out_note
from roofline.analyze.warmup import (FIRST_CALL_FACTOR, first_call_outliers, first_calls_entry, single_pass_entry,
                                     warmup_events)
from roofline.capture.recording import OpRecording, RecordedOp, Tf32Flags, op_dtype
from roofline.analyze.graph_replays import (GRAPH_REPLAY_NOTE, graph_summaries,  # noqa: F401 - re-exported
                                            leave_to_recording, replay_cost, replay_notes)
from roofline.capture.recording import CapturedGraph
from roofline.capture.trace_model import DIRECT_LAUNCH_OP, CpuOp, Trace, is_graph_replay, op_columns
from roofline.count import families
from roofline.count.counting import count_op, is_composite_op, is_view_op
from roofline.count.collectives import COMMUNICATION_NOTE
from roofline.count.copy import LIST_NOT_RECORDED, PROFILER_LIST_LIMIT
from roofline.count.indexing import DATA_DEPENDENT_OPS
from roofline.count.linalg import PRODUCTS_KWARG
from roofline.count.meta import SPARSE_NOT_COUNTED, TensorMeta, itemsize_of
from roofline.count.registry import LIVE_FACTS, OpCost, flatten_metas, nbytes, unmodeled
from roofline.count.trace_args import LIST_TYPES, args_from_trace
from roofline.count.views import DYNAMO_RUNTIME
from roofline.analyze.environment import trace_environment
from roofline.forked import Forked, Ready, Streamed, can_fork, meanwhile, release_free_memory
from roofline.report import Ceilings, Environment, KernelRecord, MemorySummary, OpRecord, Report, Summary, SyncSite
from roofline.time_text import fmt_time

_MATMUL_FAMILY = families.MATMUL | families.MATVEC  # cuBLAS: TF32 as torch.backends.cuda.matmul allows
_CONV_FAMILY = families.CONV | families.CONV_OTHER  # cuDNN: TF32 as torch.backends.cudnn allows
# Sync events from which their sites are worth a forked child (3-8 us each): the fork costs this process a
# copy-on-write fault on every page it touches next (~50,000 faults, 0.1-0.2 s, on the 1 M-event trace).
SIDE_FORK_MIN_SYNCS = 50_000


@dataclass(slots=True)
class _Counted:
    """One trace event's counts and the shape fields derived from its arguments, shared by identical events."""

    cost: OpCost
    dtype: str
    input_shapes: list[list[int]]
    input_dtypes: list[str]
    input_strides: list[list[int]]
    non_strided: bool = False  # an operand of another layout: sparse or mkldnn (analyze/sparse_operands.py)


_NOT_COUNTED = _Counted(OpCost(0.0, 0.0, False, note="kernels launched outside any counted aten op"), "", [], [], [])
_ABORTED = OpCost(0.0, 0.0, True, note="aborted by non-reentrant checkpointing to end its rerun: recorded, never run")
_DISPATCH_ONLY = _Counted(OpCost(0.0, 0.0, True, note="its host time outside its children: its work is theirs"),
                          "", [], [], [])
_OWN_WORK_NOT_COUNTED = _Counted(OpCost(0.0, 0.0, False, note="its host time outside its children: work it runs "
                                                                "itself, which no formula counts from the trace"),
                                 "", [], [], [])
FIRST_CALL_SETUP = OpCost(0.0, 0.0, False, note="its host time outside its children on its first call, many times "
                                                "its later calls': set-up on first use, not dispatch (warm-up)")


class _TraceCounter:
    """FLOPs and bytes of trace events from their recorded shapes. The reader shares identical argument lists
    between events, so events with the same name and the same list objects are counted once; each event of
    ``trace`` is looked at once (the join asks for an event's count, then the op built from it, then its notes:
    2.3 asks per op on the 1 M-event trace)."""

    def __init__(self, lists: OptimizerLists | None = None, trace: Trace | None = None,
                 children: dict[int, list[int]] | None = None,
                 graphs: dict[int, CapturedGraph] | None = None) -> None:
        self._of_event: list[_Counted | None] = [None] * len(trace.ops) if trace is not None else []
        self._cache: dict[tuple, _Counted] = {}
        # keys every event of which is counted as ``_cache`` holds, whatever its children or place in the trace
        self._plain: dict[tuple, _Counted] = {}
        self._by_event: dict[int, _Counted | None] = {}
        self._sparse_checked: dict[int, _Counted] = {}
        self._lists_missing: dict[tuple, bool] = {}
        self._with_params: dict[tuple, _Counted] = {}
        self._lists = lists
        self._trace, self._children = trace, children
        self._graphs = graphs  # the CUDA graphs roofline saw captured during the run (None: a trace file)

    def __call__(self, op: CpuOp) -> _Counted:
        index = op.index
        if 0 <= index < len(self._of_event) and self._trace.ops[index] is op:
            counted = self._of_event[index]
            if counted is None:
                counted = self._of_event[index] = self._count(op)
            return counted
        return self._count(op)

    def _count(self, op: CpuOp) -> _Counted:
        counted = self._count_event(op)
        # a rerun's last op that launched a kernel did run: its hook saved an output (relu, softmax) and raised after
        # the kernel, or the checkpoint does not stop early (early_stop=False)
        if op.is_aborted and not op.total_kernel_us > 0:
            return replace(counted, cost=_ABORTED)
        return counted

    def _count_event(self, op: CpuOp) -> _Counted:
        name = op.name
        key = (name, id(op.input_dims), id(op.input_types), id(op.input_strides), id(op.concrete_inputs))
        plain = self._plain.get(key)
        if plain is not None:
            return plain
        if self._lists is not None and name.startswith(LIST_OP_PREFIXES):
            if op.index in self._by_event:
                counted = self._by_event[op.index]
            else:
                counted = self._by_event[op.index] = self._optimizer_op(op, key)
            if counted is not None:
                return counted
        if (name in NEEDS_CHILDREN or name in QUANTIZED_LINEARS or name in RESIZED_OUTPUT_OPS
                or ((name in STACK_OPS or name in CAT_OPS) and list_unrecorded(op))) \
                and self._trace is not None and op.input_dims is not None:
            return self._with_outputs_from_children(op)
        if name in MATRIX_EXP_OPS and self._trace is not None and op.input_dims is not None:
            return self._with_recorded_products(op)
        if name in INDEX_OPS and self._trace is not None and indices_unrecorded(op):
            return self._with_index_lists(op, key)
        if name.startswith(("c10d::", *BACKEND_PREFIXES)):
            return self._collective(op, key)
        if self._children and self._children.get(op.index) and _first_operand_unrecorded(op) \
                and not is_view_op(name):  # a view is free whatever it views
            return self._on_nested_buffer(op) if name in NESTED_BUFFER_OPS else _UNRECORDED
        hit = self._cache.get(key)
        if hit is None:
            if is_graph_replay(name):
                cost, dtype = replay_cost(name, self._graphs)
                hit = _Counted(cost, dtype, [], [], [])
            elif name == DIRECT_LAUNCH_OP:
                hit = _Counted(OpCost(0.0, 0.0, False, note=DIRECT_LAUNCH_NOTE, keep_whole=True), "", [], [], [])
            elif op.input_dims is None and name not in DYNAMO_RUNTIME:  # those take no arguments
                hit = _Counted(OpCost(0.0, 0.0, False, note="trace has no shapes for this op"), "", [], [], [])
            else:
                hit = _counted(name, _trace_args(op))
            self._cache[key] = hit
        if hit.non_strided and hit.cost.modeled and not hit.cost.is_view and self._trace is not None:
            return self._unless_sparse(op, hit)
        if not (self._lists is not None and name.startswith(LIST_OP_PREFIXES)) \
                and not (_first_operand_unrecorded(op) and not is_view_op(name)):
            self._plain[key] = hit  # no branch above depends on this event rather than its key
        return hit

    def _collective(self, op: CpuOp, key: tuple) -> _Counted:
        """A c10d collective (or a backend's annotation of one, "nccl:all_reduce", where no c10d op encloses it):
        its formula's message (count/collectives.py) from its recorded tensors, else the one its own or its
        ``record_param_comms`` child's collective args give (traces without shapes carry those), else the tensor
        its backend's annotation recorded (a c10d op's TensorList often records no shape; the annotation below
        it does)."""
        backend = op.name.startswith(BACKEND_PREFIXES)
        hit = self._cache.get(key) if op.input_dims is not None and not backend else None
        if hit is None and op.input_dims is not None and not backend:
            hit = self._cache[key] = _counted(op.name, _trace_args(op))
        if hit is not None and hit.cost.bytes:
            return hit
        below = [self._trace.ops[k] for k in (self._children or {}).get(op.index, []) if self._trace is not None]
        message = next((b for b in map(recorded_message_bytes, [op.comm] + [c.comm for c in below])
                        if b is not None), None)
        how = "its collective args"
        if message is None:  # the annotation sits below record_param_comms, or directly below the c10d op
            inside = [op] + ([self._trace.ops[k] for k in subtree(op.index, self._children or {})[1:]]
                             if self._trace is not None else [])
            message = next((b for b in map(_annotated_message, inside) if b is not None), None)
            how = "the tensor its backend's annotation recorded"
        if message is None:
            why = SHARD_ONLY if any(map(_shard_annotation, inside)) else MESSAGE_UNRECORDED
            return hit or _Counted(OpCost(0.0, 0.0, False, note=f"{COMMUNICATION_NOTE}; {why}",
                                          keep_whole=True), "", [], [], [])
        cost = OpCost(0.0, message, False, note=f"{COMMUNICATION_NOTE} (from {how})", keep_whole=True)
        return _Counted(cost, hit.dtype if hit else "", *((hit.input_shapes, hit.input_dtypes, hit.input_strides)
                                                          if hit else ([], [], [])))

    def _unless_sparse(self, op: CpuOp, hit: _Counted) -> _Counted:
        """``hit``, or, for an op on a sparse tensor (not an mkldnn one), an unmodelled row kept whole: its formula
        charged the dense shape (analyze/sparse_operands.py)."""
        found = self._sparse_checked.get(op.index)
        if found is None:
            found = hit
            if reads_sparse_metadata(self._trace, op.index, self._children or {}):
                found = _Counted(self._dense_sparse_add(op, hit) or unmodeled(SPARSE_NOT_COUNTED, keep_whole=True),
                                 hit.dtype, hit.input_shapes, hit.input_dtypes, hit.input_strides, True)
            self._sparse_checked[op.index] = found
        return found

    def _dense_sparse_add(self, op: CpuOp, hit: _Counted) -> OpCost | None:
        """dense.add_(sparse)'s count from its values' shape below it (analyze/sparse_operands.py), else None."""
        shapes, strides = hit.input_shapes, hit.input_strides
        if op.name not in DENSE_SPARSE_ADDS or len(shapes) < 2 or len(strides) < 2 or not strides[0] \
                or strides[1] or shapes[0] != shapes[1]:
            return None
        values = sparse_values_dims(self._trace, op.index, self._children or {}, list(shapes[0]))
        if values is None:
            return None
        flops, moved = dense_sparse_add_cost(values, list(shapes[0]), itemsize_of(hit.dtype), op.name.endswith("_"))
        return OpCost(flops, moved, True, note=f"a sparse operand of {values[0]} stored rows (its values "
                                                f"{list(values)}, from the conversion below the op)")

    def _on_nested_buffer(self, op: CpuOp) -> _Counted:
        """An op on a nested operand, counted on the buffer its allocations show (analyze/nested_operands.py), else
        unmodelled and left to its children."""
        args = args_with_nested_buffer(self._trace, op, self._children or {}, _trace_args(op))
        return _UNRECORDED if args is None else _counted(op.name, args)

    def _with_outputs_from_children(self, op: CpuOp) -> _Counted:
        """A packed-sequence op, a quantized linear, a data-dependent op or a stack or cat of a list the trace did
        not record, counted with the outputs its children show (analyze/packed_sequences.py,
        analyze/quantized_outputs.py, analyze/resized_outputs.py, analyze/stacked_lists.py)."""
        args = _trace_args(op)
        found = (linear_outputs_from_children if op.name in QUANTIZED_LINEARS
                 else resized_output if op.name in RESIZED_OUTPUT_OPS
                 else stacked_output if op.name in STACK_OPS else catted_output if op.name in CAT_OPS
                 else outputs_from_children)
        outputs = found(self._trace, op, self._children or {}, args)
        key = (op.name, id(op.input_dims), id(op.input_types), id(op.input_strides), id(op.concrete_inputs),
               tuple(outputs) if outputs else None)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = _counted(op.name, args, outputs)
        return hit

    def _with_recorded_products(self, op: CpuOp) -> _Counted:
        """matrix_exp, counted with the matrix products recorded below it (analyze/recorded_products.py)."""
        args = _trace_args(op)
        square = args[0] if args and isinstance(args[0], TensorMeta) and args[0].ndim >= 2 else None
        products = None if square is None else products_below(self._trace, op, self._children or {},
                                                               square.shape[-1])
        return _counted(op.name, args, kwargs=None if products is None else {PRODUCTS_KWARG: products})

    def _with_index_lists(self, op: CpuOp, key: tuple) -> _Counted:
        """An advanced index whose index tensors the trace left out, counted with those its calls show
        (analyze/index_lists.py); else as recorded (unmodelled, its reason in its note)."""
        args = _trace_args(op)
        found = index_args_from_children(self._trace, op, self._children or {}, args)
        masks = [] if found is None else [self(mask) for mask in found.masks]
        if found is None or not all(mask.cost.modeled for mask in masks):
            hit = self._cache.get(key)
            if hit is None:
                hit = self._cache[key] = _counted(op.name, args)
            return hit
        counted = _counted(op.name, found.args, found.outputs)
        if masks and counted.cost.modeled:  # x[mask]: the row counts the mask's nonzero below it too
            counted.cost = OpCost(counted.cost.flops + sum(m.cost.flops for m in masks),
                                  counted.cost.bytes + sum(m.cost.bytes for m in masks), True,
                                  note="a boolean-mask index: its nonzero's work included")
        return counted

    def _optimizer_op(self, op: CpuOp, key: tuple) -> _Counted | None:
        """A foreach op of the optimizer or of the work on the gradients whose lists the trace left empty, counted
        over the step's parameters (analyze/optimizer_lists.py); None when its own recorded shapes suffice or
        nothing stands in for them.
        Counted once per call and parameter list (every profiled step repeats them)."""
        missing = self._lists_missing.get(key)
        if missing is None:
            args = _trace_args(op)
            missing = self._lists_missing[key] = any(a is None and t in LIST_TYPES
                                                     for a, t in zip(args, op.input_types or ()))
        if not missing:
            return None
        params, why = self._lists.for_op(op)
        if params is None:
            if not why:
                return None
            note = f"{LIST_NOT_RECORDED}, and the step's parameters cannot stand in: {why}"
            return _Counted(OpCost(0.0, 0.0, False, note=note), "", [], [], [])
        full = (*key, tuple(params))
        hit = self._with_params.get(full)
        if hit is None:
            args = with_lists(_trace_args(op), op.input_types, params)
            cost = count_op(op.name, args, None, None)
            if cost.modeled:
                cost.note = "; ".join(filter(None, [cost.note, f"tensor lists not recorded: the step's {len(params)} "
                                                                  "parameters (from AccumulateGrad events) stand in"]))
            hit = self._with_params[full] = _Counted(cost, op_dtype(args, []), *_shape_fields(flatten_metas(args)))
        return hit


def _annotation(op: CpuOp) -> tuple[bool, float] | None:
    """(is it an all-gather's, the bytes of the tensor it recorded) of a backend's annotation of a collective
    ("nccl:all_reduce", "gloo:broadcast") that recorded one; None for any other op. The tensor is the buffer sent,
    reduced or scattered, except an all-gather's: that is the local shard, and the gathered size needs the group's,
    which only the collective args give."""
    if not op.name.startswith(BACKEND_PREFIXES) or op.input_dims is None:
        return None
    size = nbytes(flatten_metas(_trace_args(op)))
    return ("gather" in op.name.replace("_", "").lower(), float(size)) if size > 0 else None


def _annotated_message(op: CpuOp) -> float | None:
    found = _annotation(op)
    return found[1] if found is not None and not found[0] else None


def _shard_annotation(op: CpuOp) -> bool:
    found = _annotation(op)
    return found is not None and found[0]


def _trace_args(op: CpuOp) -> list:
    return args_from_trace(op.input_dims, op.input_types, op.input_strides, op.concrete_inputs)


def _counted(name: str, args: list, outputs: list | None = None, kwargs: dict | None = None) -> _Counted:
    """An op counted by its formula from the arguments its trace event recorded (and its outputs, or a fact, where
    its children show them)."""
    metas = flatten_metas(args)
    return _Counted(count_op(name, args, kwargs, outputs), op_dtype(args, []), *_shape_fields(metas),
                    any(not m.strided for m in metas))


DIRECT_LAUNCH_NOTE = ("a kernel launched under no torch op (a @triton.jit or CUDA kernel called straight from "
                      "Python): its time is measured and placed at the module and line that launched it (where the "
                      "trace has Python stacks), but the trace holds no shapes for it, so its FLOPs and bytes are "
                      "unknown; wrap it in a torch.library.custom_op to give it a name of its own in the table")
UNRECORDED_OPERAND = ("first operand not recorded (a nested or other tensor subclass: the trace gives neither its "
                      "shape nor its dtype); its children counted instead")
_UNRECORDED = _Counted(OpCost(0.0, 0.0, False, note=UNRECORDED_OPERAND), "", [], [], [])


def _first_operand_unrecorded(op: CpuOp) -> bool:
    """An op whose first argument, a tensor in every aten schema that has one there, has neither a type nor a
    shape: a nested tensor or another tensor subclass (a None optional first argument would read the same; no
    counted op takes one). Counted without it, an element-wise op was counted on its scalar alone (1 FLOP for the
    544-element scale of a nested SDPA's query); unmodelled, its children (the op on the nested buffer) are. Only
    an op with children is judged so: a leaf has nothing better to count."""
    types, dims = op.input_types, op.input_dims
    return bool(types) and types[0] == "" and bool(dims) and dims[0] == []


def _ensure_attributed(trace: Trace) -> None:
    if trace.attribution is None:
        from roofline.analyze.attribution import attribute

        attribute(trace)


def _event_time_us(trace: Trace, idx: int, self_only: bool, children: dict[int, list[int]]) -> float:
    op = trace.ops[idx]
    if trace.has_gpu:
        return op.self_kernel_us if self_only else op.total_kernel_us
    if self_only:
        return max(0.0, op.dur_us - sum(trace.ops[c].dur_us for c in children.get(idx, [])))
    return op.dur_us


def _kernel_names(trace: Trace, events: list[int]) -> list[str]:
    """The names of the kernels the events launched, in the order the kernels ran (their index: by start), not
    the events' order (a subtree is walked last child first: slice_backward's copy came before its fill)."""
    ops, kernels = trace.ops, trace.kernels
    return [kernels[k].name for k in sorted(k for i in events for k in ops[i].kernel_ids)]


def _roof_dtype(dtype: str, name: str, kernels: list[str], tf32: "Tf32Flags", on_gpu: bool) -> str:
    """fp32 matmuls and convolutions that ran on TF32 tensor cores are judged against the TF32 roof: from their
    kernels' names when the trace has kernels, else from the flags of the live run (cuBLAS's for matmuls,
    cuDNN's for convolutions). A CUDA graph replay's row (its captured work summed) is judged against TF32 where its
    kernels include a TF32 product: the compute it holds is theirs."""
    if dtype != "float32":
        return dtype
    if is_graph_replay(name):  # its products ran inside the graph: their kernels' names tell TF32, as for an mm
        return "tfloat32" if any_tf32(kernels) else dtype
    kind = families.op_kind(name)
    if kind in _MATMUL_FAMILY:
        allowed = tf32.matmul
    elif kind in _CONV_FAMILY:
        allowed = tf32.cudnn
    else:
        return dtype
    if any_tf32(kernels) or (on_gpu and allowed and not kernels):
        return "tfloat32"
    return dtype


def _step_list(trace: Trace) -> list[int | None]:
    return list(range(len(trace.steps))) if trace.steps else [None]


def report_from_trace(
    trace: Trace,
    ceilings: Ceilings,
    recording: OpRecording | None = None,
    *,
    kind: str = "trace",
    workload: str = "",
    reference_peak_bytes: int | None = None,
    environment: Environment | None = None,
    placed: Callable[[Report], None] | None = None,
    ceilings_by_device: dict[int, Ceilings] | None = None,
    graphs: dict[int, CapturedGraph] | None = None,
) -> Report:
    """The per-op roofline Report of a trace.

    ``graphs``: the CUDA graphs roofline saw captured while it recorded the run (capture/cuda_graphs.py), by capture
    number: each labelled replay's row carries its graph's captured work (analyze/graph_replays.py). None for a
    trace file (no run seen): replay rows stay unmodelled, with a note saying why.

    ``ceilings_by_device``: for one process driving GPUs of different models, each GPU's roofs by device id; an
    op is placed against those of the GPU its kernels ran on (most of their time), others against ``ceilings``.

    ``placed``: called with the report as soon as its ops are final (placed on the roofline) and summed up
    (``summary``'s totals and shares), before the rest of it (notes, kernel classes, memory, syncs, extra) is: a
    command can start work on them meanwhile (report.html's op table, roofline.png's calls).

    ``environment``: where the run happened, for a trace recorded by this process (``Environment.capture()``);
    by default what the trace's own metadata says (analyze/environment.py), never this machine.

    Without a recording, ops of every profiled step are kept (``op.step``) and totals cover all steps. With a
    recording of one step, each recorded op gets the median of its time over the profiled steps; the rows beyond
    the recording (events it did not see, and on a CPU an op's host time outside the recorded ops below it) are
    the last step's.
    ``reference_peak_bytes``: the allocator's own peak over the run, set beside the trace's memory summary.
    The Report is undiagnosed: the entry point that asked for it runs the doctor, once.
    """
    _ensure_attributed(trace)
    steps = _step_list(trace)
    choose_elsewhere = recording is None and _choose_elsewhere(trace, steps)
    # Many sync sites are worked out by a forked child while the ops are built here; fewer (and the memory
    # summary, on columns: capture/trace_memory.py) by the child that chooses the rows, once it has sent them
    # (``_emit_choices``), else here and now, before the ops. Either way what the trace's reading freed goes back to
    # the OS first (a fork does it): kept, the ops' build did not reuse it all, and the 1 M-event trace's peak was
    # 12 MB higher.
    side: Forked | Ready | _SideFromStream | None = None
    if len(trace.syncs) >= SIDE_FORK_MIN_SYNCS:
        side = meanwhile(_syncs_and_memory, trace, reference_peak_bytes)
    elif not choose_elsewhere:
        side = Ready(_syncs_and_memory(trace, reference_peak_bytes))
        release_free_memory()
    children = children_index(trace)
    counter = _TraceCounter(OptimizerLists(trace), trace, children, graphs)

    def is_row(op: CpuOp) -> bool:
        return _counts_for_its_children(counter(op))

    roots = roots_by_step(trace)
    if steps == [None]:
        roots = {None: sorted((i for idx in roots.values() for i in idx), key=lambda i: trace.ops[i].ts_us)}
    ops: list[OpRecord] = []
    event_to_report: dict[int, int] = {}
    own_time_rows: dict[int, OpCost] = {}  # row -> its cost, for rows of an event's own time (Chosen.self_only)
    missing = 0
    fused = FusedGraphs()
    left_to_recording: list[int] = []
    changed: dict[int, str] = {}  # recorded ops counted again at their timed shapes (analyze/shape_changes.py)
    ops_per_step: list[int] = []  # ops each profiled step chose (varying_steps_note)
    if recording is not None:
        per_rec_times: dict[int, list[float]] = defaultdict(list)
        per_rec_cpu: dict[int, list[float]] = defaultdict(list)
        rep_events: dict[int, int] = {}
        extras: list[Chosen] = []
        recorded = RecordedIndex.build(trace, [r.name for r in recording.ops], [r.phase for r in recording.ops],
                                       [_shape_key(r.input_tensors) for r in recording.ops])

        def shapes_of(op: CpuOp) -> tuple:
            return tuple(map(tuple, counter(op).input_shapes))

        per_rec_gap: dict[int, list[float]] = defaultdict(list)
        per_rec_events: dict[int, list[int]] = defaultdict(list)
        for pos, step in enumerate(steps):
            chosen, missing = choose_with_recording(trace, roots.get(step, []), children, recorded, is_row,
                                                    shapes_of=shapes_of)
            last = pos == len(steps) - 1
            ops_per_step.append(len(chosen))
            gaps = host_gaps_us(trace, [c.event for c in chosen], step)
            for c in chosen:
                if c.recorded is not None:
                    per_rec_times[c.recorded].append(_event_time_us(trace, c.event, False, children))
                    per_rec_cpu[c.recorded].append(trace.ops[c.event].dur_us)
                    per_rec_gap[c.recorded].append(gaps[c.event])
                    per_rec_events[c.recorded].append(c.event)
                    if last:
                        rep_events[c.recorded] = c.event
                elif last:
                    extras.append(c)
        rep_step = steps[-1]
        changed = _recount_changed_shapes(trace, recording, recorded, per_rec_events, counter)
        for i, rec in enumerate(recording.ops):
            times = per_rec_times.get(i, [])
            event = rep_events.get(i)
            if event is not None and rec.name in RECOUNTED and i not in changed:  # another path under the recorder
                ev = trace.ops[event]
                rec = recording.ops[i] = as_timed(rec, ev.name, _trace_args(ev), counter(ev).cost)
            ops.append(_op_from_recording(trace, rec, i, times, per_rec_cpu.get(i, []), event, rep_step,
                                          children, recording.tf32))
            ops[-1].host_gap_s = statistics.median(per_rec_gap[i]) / 1e6 if per_rec_gap.get(i) else 0.0
            if event is not None:
                event_to_report[event] = len(ops) - 1
        first_extra = len(ops)
        _append_ops(trace, extras, counter, children, rep_step, recording.tf32, gaps, ops, event_to_report,
                    own_time_rows)
        _place_own_time_rows(trace, extras, first_extra, ops, rep_events, recording, children)
        replay_rows = [(row, c.event) for row, c in enumerate(extras, first_extra)
                       if is_graph_replay(trace.ops[c.event].name)]
        fused = fuse_into_compiled_graphs(trace, ops, [(row, c.event) for row, c in enumerate(extras, first_extra)
                                                      if c.self_only], rep_events, len(recording.ops), rep_step,
                                          replay_rows)
        left_to_recording = leave_to_recording(ops, [row for row, _ in replay_rows if row not in fused.replays],
                                               graphs)
        for row in fused.graphs:
            own_time_rows[row] = FUSED_GRAPH_COST
        # Only where the counting pass saw checkpointing rerun a forward: elsewhere an op it missed is one the
        # autograd engine ran below its dispatch mode (an LSTM's per-step gradient sums), counted from the trace.
        checkpointed = any(rec.phase == "recompute" for rec in recording.ops)
        unseen = _uncount_unseen(ops[first_extra:], recorded.names) if checkpointed else []
        timeline_steps = [rep_step]
    else:
        unseen = []
        names: dict[str, tuple[bool, bool]] = {}
        no_tf32 = Tf32Flags()
        done = 0
        if choose_elsewhere:
            sent = iter(Streamed(_emit_choices, trace, steps, roots, children, is_row,
                                 None if side else (reference_peak_bytes,)))
            if side is None:
                side = _SideFromStream(sent, trace, reference_peak_bytes)
            for events, own_time, gaps, kernel_names in itertools.islice(sent, len(steps)):
                # each event as its op's own int (the rows' index keeps it), not one more object per row
                chosen = [Chosen(trace.ops[event].index, self_only=own)
                          for event, own in zip(np.frombuffer(events, np.int64).tolist(),
                                                np.frombuffer(own_time, bool).tolist())]
                _append_ops(trace, chosen, counter, children, steps[done], no_tf32,
                            dict(zip((c.event for c in chosen), np.frombuffer(gaps, np.float64).tolist())), ops,
                            event_to_report, own_time_rows, kernel_names)
                done += 1
        for step in steps[done:]:  # all of them, unless a child chose them (it stopped early: the rest)
            chosen, gaps, _ = _choices_of_step(trace, step, roots, children, is_row, names)
            _append_ops(trace, chosen, counter, children, step, no_tf32, gaps, ops, event_to_report, own_time_rows)
        timeline_steps = steps
    first_calls = _first_calls(trace, ops, event_to_report, own_time_rows) if steps == [None] else []
    costs = _CountedCosts(trace, event_to_report, ops, counter, recording, own_time_rows)
    kept_whole = _kept_whole_notes(costs, ops)
    shard_only = {i for i, _, cost in costs.unmodelled(lambda op: is_communication_op(op.name))
                  if SHARD_ONLY in cost.note}
    # (name, OpCost.note) of each modelled op whose count reads live values (registry.LIVE_FACTS): varlen attention's
    varlen = varlen_attention_notes([(op.name, cost.note) for _, op, cost in costs.reading_live_values()])
    # The op tree's index and the counting caches (``costs`` holds the counter) are done with: freed (and handed
    # back to the OS) before the host counts, the kernel timeline and the memory replay, which on a million-event
    # trace would otherwise stack on top of them (the command's peak RSS; 28 MB while ``costs`` kept them).
    del children, counter, is_row, roots, costs
    release_free_memory()
    fill_host_counts(trace, event_to_report, ops)
    release_free_memory()  # its columns too
    for i, op in enumerate(ops):
        op.index = i

    kernels, idle_before = _timeline(trace, timeline_steps, event_to_report, ops)
    fill_device_idle(trace, event_to_report, ops, kernels)
    on_device = _op_devices(kernels) if ceilings_by_device else {}
    peaks: dict[int | None, dict[str, float]] = {}
    for i, op in enumerate(ops):
        device = on_device.get(i)
        roofs = ceilings_by_device.get(device, ceilings) if device is not None else ceilings
        place_op(op, roofs, idle_before_s=idle_before.get(i), peaks=peaks.setdefault(device, {}),
                 launches=not (trace.has_gpu and not op.kernels and op.time_s == 0))

    one_step = recording is not None
    idle_by_device = idle_by_device_s(trace, steps, one_step)
    share, kernel_total, idle = _kernel_stats(trace, steps, idle_by_device, one_step)
    timing = (
        "device time: sum of the {} kernels each op launched (Kineto/{}, kernel -> op by correlation id)".format(
            *_device_api(trace))
        if trace.has_gpu
        else "host time: each op's CPU duration in the torch.profiler trace (inclusive of the aten calls inside it)"
    )
    if recording is not None:
        timing += f"; median over {len(steps)} profiled step(s), counted in a separate pass"
    elif len(steps) > 1:
        timing += f"; totals cover all {len(steps)} profiled steps"
    summary = summarize(ops, timing_method=timing, kernel_share=share, kernel_total_s=kernel_total, idle_s=idle)
    env = environment or trace_environment(trace, ceilings.device_name)
    report = Report(
        kind=kind,
        workload=workload,
        environment=env,
        ceilings=ceilings,
        ops=ops,
        kernels=kernels,
        summary=summary,
        steps=1 if recording is not None else max(1, len(trace.steps)),
    )
    # Read from the trace before ``placed`` may fork a child that shares its pages: after it, each page of the trace
    # read here would be copied (CPython writes reference counts on reads).
    runtime_warmup = warmup_events(trace)
    if placed is not None:
        placed(report)
    summary.wall_time_s = _wall_time_s(trace, one_step)
    if summary.wall_time_s is None and recording is None:
        summary.span_s = _span_s(trace)
    if not trace.has_gpu and recording is None:
        summary.notes.extend(_host_outside_ops_note(summary.total_time_s, summary.wall_time_s, len(steps)))
    own_rows = [i for i in sorted(own_time_rows) if i not in fused.graphs]  # those say what they hold (fused_note)
    if not trace.has_gpu and own_rows:
        summary.notes.append(_own_time_note([ops[i] for i in own_rows], summary.total_time_s,
                                            sum(own_time_rows[i] is FIRST_CALL_SETUP for i in own_rows)))
    summary.stale_ceilings = stale_ceilings_note(ops, ceilings)
    if summary.predicted_total_s > summary.total_time_s > 0:
        summary.notes.extend(_prediction_above_note(ops, ceilings.launch_overhead_s, summary, trace.has_gpu))
    threads = thread_count_note(environment, ceilings)
    if threads:
        summary.notes.append(threads)
    summary.notes.extend(fallback_roof_notes(ops, ceilings, summary.total_time_s))
    summary.notes.extend(integer_roof_notes(ops, lambda i: (ceilings.device, ceilings), lambda i: ops[i].name,
                                            summary.total_time_s)[0])
    if missing and recording is not None:
        summary.notes.append(_no_event_note([op for i, op in enumerate(ops[:len(recording.ops)])
                                             if i not in rep_events and i not in fused.ops],
                                            sum(op.time_s for row, op in enumerate(ops)
                                                if op.name.startswith(COMPILED_GRAPH) and row not in fused.graphs)))
    if recording is not None and fused.ops:
        summary.notes.append(fused_note(fused, ops))
    summary.notes.extend(replay_notes(ops, graphs, set(fused.replays), left_to_recording))
    summary.notes.extend(kept_whole)
    summary.notes.extend(_unsized_collectives_note(ops, summary.total_time_s, shard_only))
    if idle_by_device:
        summary.notes.append(_idle_by_device_note(idle_by_device))
    if recording is not None:
        summary.notes.extend(_nested_product_notes(recording))
        note = shape_change_note(*([recording.ops[i].name for i, how in changed.items() if how == status]
                                   for status in ("recounted", "kept")))
        if note:
            summary.notes.append(note)
        summary.notes.extend(varying_steps_note(ops_per_step))
    summary.notes.extend(varlen)
    recomputed = [op for op in ops if op.phase == "recompute"]
    if recomputed:
        summary.notes.append(_recompute_note(recomputed, summary.total_flops, summary.total_time_s))
    gradient = [op for op in ops if op.phase == "gradient"]
    if gradient:
        summary.notes.append(_gradient_note(gradient, summary.total_time_s))
    if recording is not None and unseen:
        summary.notes.append(_unseen_note(unseen))
    summary.notes.extend(trace.warnings)

    report.extra["trace"] = {"path": trace.path, "device_name": trace.device_name,
                             "compute_capability": list(trace.compute_capability) if trace.compute_capability else None,
                             "has_gpu": trace.has_gpu, "steps": len(trace.steps)}
    if trace.steps:
        report.extra["step_windows_s"] = [st.window_us / 1e6 for st in trace.attribution.steps]
        report.extra["step_first_device_work_s"] = [{str(device): offset / 1e6 for device, offset in
                                                     st.first_busy_by_device.items()}
                                                    for st in trace.attribution.steps]
    warmup = runtime_warmup + first_calls
    if warmup:
        report.extra["warmup"] = warmup
    if recording is not None:
        report.extra["tf32"] = {"cuda_matmul": recording.tf32.matmul, "cudnn": recording.tf32.cudnn}
    if graphs:
        report.extra["cuda_graphs"] = graph_summaries(graphs)
    report.syncs, report.memory, syncs_left_out = side.result()
    note = left_out_note(syncs_left_out)
    if note:
        report.summary.notes.append(note)
        report.extra["syncs_left_out"] = syncs_left_out
    profiler_time = profiler_time_by_step(trace)
    if profiler_time:
        report.extra["profiler_time"] = profiler_time
    if idle_by_device:
        report.extra["idle_by_device_s"] = {str(d): t for d, t in sorted(idle_by_device.items())}
    if trace.has_gpu:
        report.summary.kernel_classes = kernel_classes(report, ceilings_by_device=ceilings_by_device or None)
    return report


HOST_COVERED_AT_LEAST = 0.5


def _host_outside_ops_note(ops_s: float, wall_s: float | None, steps: int) -> list[str]:
    """On a CPU trace the table's total is the ops' host time; when most of the steps' wall time lies outside every
    op, it says so (else a 19 ms step reads as its 2.7 ms of ops: a real torch 2.1 trace, 8 ms of it inside
    AccumulateGrad before its one aten call)."""
    if not wall_s or ops_s >= HOST_COVERED_AT_LEAST * wall_s:
        return []
    return [f"the ops' host time ({ops_s * 1e3:.3g} ms) is {ops_s / wall_s:.0%} of the {steps} profiled step(s)' wall "
            f"time ({wall_s * 1e3:.3g} ms): the rest ran outside every counted op (Python between ops, autograd's "
            "engine and the optimizer's frames, the profiler, or the OS taking the thread away)"]


def _own_time_note(rows: list[OpRecord], total_s: float, first_calls: int = 0) -> str:
    """What the rows of events' own host time are (an aten::linear beside its counted aten::addmm reads as a second
    linear otherwise). ``first_calls``: how many of them are first calls' set-up (``_first_calls``)."""
    time = Counter()
    calls = Counter(op.name for op in rows)
    for op in rows:
        time[op.name] += op.time_s
    listed = ", ".join(f"{name} x{calls[name]}" for name, _ in time.most_common(4)) + (", ..." if len(time) > 4 else "")
    share = f": {sum(time.values()) / total_s:.1%} of the op time" if total_s else ""
    return (f"{len(rows)} row(s) hold host time an op spent outside its children, which are rows of their own "
            f"({listed}{share}): where they do its work (a composite op's), its dispatch into them (no FLOPs or "
            "bytes of its own: bound 'launch', as a view's); where they only view or allocate, work it runs itself "
            "that no formula counts (unmodelled)" + (
                f"; {first_calls} of them are an op's first call that took at least {FIRST_CALL_FACTOR:g}x its later "
                "calls (same input shapes): set-up on first use inside the profiled window, not dispatch "
                "(unmodelled; see warm-up)" if first_calls else ""))


_TIME_S, _START_S = attrgetter("time_s"), attrgetter("start_s")


def _first_calls(trace: Trace, ops: list[OpRecord], event_to_report: dict[int, int],
                 own_time_rows: dict[int, OpCost]) -> list[dict[str, Any]]:
    """report.extra["warmup"]'s "first-calls" and "single-pass" records of a trace without steps
    (analyze/warmup.py; none, one or both). Each row is grouped by its event's name, input shapes and dtypes and
    scalar arguments (aten::zeros' size) and whether it is the event's own time; its time is the row's (own time or
    the whole op's). A first call's own-time row placed as dispatch (bound 'launch') becomes unmodelled: its time
    is set-up on first use, which is not per-op dispatch and no formula counts. An event without recorded shapes
    (``_shapes_recorded``) is compared with none: its calls may be of other sizes. Rows are grouped by their
    argument list objects first (the reader shares one list between events with the same arguments), then the few
    distinct lists by what they hold."""
    n = len(ops)
    if n < 2 or len(event_to_report) < n:
        return []
    row_event = np.empty(n, dtype=np.int64)
    row_event[np.fromiter(event_to_report.values(), dtype=np.int64, count=n)] = np.fromiter(
        event_to_report.keys(), dtype=np.int64, count=n)
    all_ops = trace.ops
    own = np.zeros(n, dtype=np.int64)
    own[np.fromiter(own_time_rows, dtype=np.int64, count=len(own_time_rows))] = 1
    keys: dict[tuple, int] = {}
    code_of = keys.setdefault
    events = list(map(all_ops.__getitem__, row_event.tolist()))
    by_object = 2 * np.fromiter((code_of((ev.name, id(ev.input_dims), id(ev.input_types), id(ev.concrete_inputs)),
                                         len(keys)) for ev in events), dtype=np.int64, count=n) + own
    codes, example = np.unique(by_object, return_index=True)
    by_content: dict[tuple, int] = {}
    canonical = np.full(2 * len(keys), -1, dtype=np.int64)
    for code, row in zip(codes.tolist(), example.tolist()):
        ev = events[row]
        if _shapes_recorded(ev):
            canonical[code] = by_content.setdefault(
                (ev.name, code % 2, repr(ev.input_dims), repr(ev.input_types), repr(ev.concrete_inputs)),
                len(by_content))
    times = np.fromiter(map(_TIME_S, ops), dtype=np.float64, count=n)
    starts = np.fromiter(map(_START_S, ops), dtype=np.float64, count=n)
    groups = canonical[by_object]
    # on a GPU an op's time is its kernels', which hold no host set-up (the runtime's is named by warmup_events)
    single = None if trace.has_gpu else single_pass_entry(times, groups, [op.name for op in ops])
    outliers = first_call_outliers(times, starts, groups)
    if not outliers:
        return [single] if single else []
    for row, _, _ in outliers:
        if own_time_rows.get(row) is _DISPATCH_ONLY.cost:
            own_time_rows[row] = FIRST_CALL_SETUP
            ops[row].modeled = False
    found = first_calls_entry([(ops[row], events[row].input_dims, row in own_time_rows, row, median, later)
                               for row, median, later in outliers])
    return [found] + ([single] if single else [])


def _shapes_recorded(ev: CpuOp) -> bool:
    """Whether an event's inputs' shapes are in the trace: none at all without record_shapes, and a tensor list's
    recorded as [] by torch 2.1 and older."""
    if ev.input_dims is None:
        return False
    return not any(kind in LIST_TYPES and dims == [] for kind, dims in zip(ev.input_types or (), ev.input_dims))


def _idle_by_device_note(idle: dict[int, float]) -> str:
    worst = max(idle, key=idle.__getitem__)
    each = ", ".join(f"device {d} {t * 1e3:.3g} ms" for d, t in sorted(idle.items()))
    return (f"GPU idle time per GPU of this process ({each}): the idle time given is device {worst}'s, the most "
            "idle; one GPU's kernels do not fill another's gaps")


def _op_devices(kernels: list[KernelRecord]) -> dict[int, int]:
    """Each op's GPU: the device its kernels spent most time on (ops whose kernels carry no device id: absent)."""
    time: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for k in kernels:
        if k.op_index is not None and k.device is not None:
            time[k.op_index][k.device] += k.dur_s
    return {op: max(by.items(), key=lambda kv: (kv[1], -kv[0]))[0] for op, by in time.items()}


MAX_KEPT_WHOLE_NOTES = 5


def _kept_whole_notes(costs: _CountedCosts, ops: list[OpRecord]) -> list[str]:
    """Why the unmodelled ops kept whole (an op on a sparse tensor), and those whose tensor list the profiler
    recorded as [] (a cat in a trace of torch 2.1 or older, or of more than 30 tensors), are unmodelled, one line
    per op name and reason, largest share of time first: the row alone says only "unmodeled". Each reason is the op's cost as counted
    (``_CountedCosts``: the counting pass's for a recorded op, the trace's for any other)."""
    calls: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _, op, cost in costs.unmodelled():
        if (cost.keep_whole or LIST_NOT_RECORDED in cost.note) and not cost.modeled \
                and not is_communication_op(op.name):
            calls[(op.name, cost.note)].append(op.time_s)
    if not calls:
        return []
    total = sum(op.time_s for op in ops)
    lines = []
    for (name, note), times in sorted(calls.items(), key=lambda kv: -sum(kv[1]))[:MAX_KEPT_WHOLE_NOTES]:
        share = f", {sum(times) / total:.1%} of the time" if total else ""
        why = (f" (torch 2.1 and older record every tensor list as []; later versions a list of at most "
               f"{PROFILER_LIST_LIMIT} tensors, a longer one as [])" if LIST_NOT_RECORDED in note else "")
        lines.append(f"{name} unmodelled ({len(times)} call(s){share}): {note}{why}")
    return lines


class _CountedCosts:
    """Each report op's OpCost as it was counted, for notes that read a cost's note: the counting pass's for a
    recorded op, the trace's for any other. The notes ask only of unmodelled ops and of those whose count read live
    values, found in one pass over the ops; the event index by report row is built once, and only when a note asks
    for a row the trace counted."""

    def __init__(self, trace: Trace, event_to_report: dict[int, int], ops: list[OpRecord], counter: _TraceCounter,
                 recording: OpRecording | None, own_time_rows: dict[int, OpCost]) -> None:
        self._trace, self._event_to_report, self._ops, self._counter = trace, event_to_report, ops, counter
        self._recording, self._own_time_rows = recording, own_time_rows
        self._events: dict[int, int] | None = None
        self._unmodelled: list[int] = []
        self._live: list[int] = []
        for i, op in enumerate(ops):
            if not op.modeled:
                self._unmodelled.append(i)
            elif op.name in LIVE_FACTS:
                self._live.append(i)

    def unmodelled(self, keep: Callable[[OpRecord], bool] | None = None) -> Iterator[tuple[int, OpRecord, OpCost]]:
        """(index, op, cost) of each unmodelled op (that ``keep`` accepts) whose cost is known."""
        return self._at(self._unmodelled, keep)

    def reading_live_values(self) -> Iterator[tuple[int, OpRecord, OpCost]]:
        """(index, op, cost) of each modelled op whose count read live values (registry.LIVE_FACTS)."""
        return self._at(self._live, None)

    def _at(self, rows: list[int], keep: Callable[[OpRecord], bool] | None) -> Iterator[tuple[int, OpRecord, OpCost]]:
        recorded = len(self._recording.ops) if self._recording is not None else 0
        for i in rows:
            op = self._ops[i]
            if keep is not None and not keep(op):
                continue
            if i < recorded:
                yield i, op, self._recording.ops[i].cost
                continue
            if self._events is None:
                self._events = {i: event for event, i in self._event_to_report.items()}
            if i in self._own_time_rows:
                yield i, op, self._own_time_rows[i]
            elif i in self._events:
                yield i, op, self._counter(self._trace.ops[self._events[i]]).cost


def _unsized_collectives_note(ops: list[OpRecord], total_s: float, shard_only: set[int] = frozenset()) -> list[str]:
    """The collectives whose message the trace did not record: their rows show no bytes ("?"), and this says why,
    so a 0 is never read as a measured empty message. One line per reason: the trace recorded no size at all, or
    (``shard_only``, indices into ``ops``) only an all-gather's backend annotation, which holds the local shard."""
    unsized = [i for i, op in enumerate(ops) if op.bound == "communication" and message_unrecorded(op)]
    why = {False: "the trace recorded neither their tensors' shapes nor their collective args' 'In msg nelems', so "
                  "their bytes are unknown",
           True: "their only size record is their backend's all-gather annotation (nccl:all_gather ...), which holds "
                 "the local shard; the gathered size needs the group's size, which only the collective args' 'Out "
                 "msg nelems' give, so their bytes are unknown"}
    lines = []
    for shard in (False, True):
        these = [ops[i] for i in unsized if (i in shard_only) == shard]
        if not these:
            continue
        calls = Counter(op.name for op in these)
        time = sum(op.time_s for op in these)
        share = f", {time / total_s:.1%} of the time" if total_s else ""
        listed = ", ".join(f"{name} x{n}" for name, n in calls.most_common(4))
        lines.append(f"{sum(calls.values())} collective call(s) with no message size ({listed}{share}): {why[shard]} "
                     "(shown as ?), not 0; their time still counts as communication")
    return lines


def _recount_changed_shapes(trace: Trace, recording: OpRecording, recorded: RecordedIndex,
                            events_of: dict[int, list[int]], counter: "_TraceCounter") -> dict[int, str]:
    """Recorded ops whose timed events ran other input shapes (analyze/shape_changes.py), each counted again from
    its median step's event where a formula counts it from the trace (in ``recording``, as the RECOUNTED ops are):
    {recorded op: "recounted" or "kept"}."""
    changed: dict[int, str] = {}
    for i, events in events_of.items():
        shapes = recorded.keys[i][2]
        if not shapes or not any(shapes_conflict(shapes, recorded_dims(trace.ops[e].input_dims)) for e in events):
            continue
        event = trace.ops[median_event(events, lambda e: counter(trace.ops[e]).cost)]
        cost = counter(event).cost
        was = recording.ops[i].cost
        if cost.modeled and (cost.flops, cost.bytes) == (was.flops, was.bytes):
            continue  # the same work (an in-place transpose_, which the two sides record before and after)
        if cost.modeled:
            recording.ops[i] = replace(recording.ops[i], args=_trace_args(event), outputs=[], cost=cost)
        changed[i] = "recounted" if cost.modeled else "kept"
    return changed


def _nested_product_notes(recording: OpRecording) -> list[str]:
    """How the recorded matrix products on nested tensors were counted (count/matmul.py): per component, which a
    trace alone cannot do (it records a nested operand with no shape: there the op's children, a padding kernel's
    dense product, are counted), one line per op name."""
    calls: dict[str, list[str]] = defaultdict(list)
    for rec in recording.ops:
        if rec.cost.modeled and rec.cost.note.startswith("nested operand"):
            calls[rec.name].append(rec.cost.note)
    return [f"{name} on nested tensors ({len(notes)} call(s)) counted per component (from a trace alone, the dense "
            f"product of a kernel that pads is counted instead); first call: {notes[0]}"
            for name, notes in calls.items()]


def _no_event_note(unmatched: list[OpRecord], compiled_graph_s: float = 0.0) -> str:
    """Which recorded ops found no event, the ones with work by name: those that do none (a detach of a norm's
    saved statistics, which the counting pass's recorder sees and the timed run's profiler does not) hide nothing,
    but counted together with them a missing op with work went unseen (sweep 4: a UNet's 112 were 100 detaches,
    12 views, while a Swin's 12 held 4 index_put whose time was lost). ``compiled_graph_s``: the time of the
    trace's torch.compile graph calls (``## Call CompiledFxGraph``), where ops Inductor fused into its own kernels
    ran without an event of their own: a compiled model's gelu read as a 0 ns launch-bound op otherwise."""
    work = Counter(op.name.removeprefix("aten::") for op in unmatched if not op.modeled or op.flops or op.bytes)
    idle = len(unmatched) - sum(work.values())
    if not work:
        return f"{idle} recorded op(s) that do no work (views, detach) found no event in the timed trace"
    listed = ", ".join(f"{name} x{n}" for name, n in work.most_common(5)) + (", ..." if len(work) > 5 else "")
    compiled = (f"; the model ran compiled (torch.compile): ops Inductor fused into its own kernels have no event "
                f"of their own, their time is the {COMPILED_GRAPH} rows' own ({compiled_graph_s * 1e6:.3g} us, "
                "unmodelled)" if compiled_graph_s > 0 else "")
    return (f"{sum(work.values())} recorded op(s) found no event in the timed trace (time counted as 0): {listed}"
            + (f"; and {idle} that do no work (views, detach)" if idle else "") + compiled)


def _wall_time_s(trace: Trace, one_step: bool) -> float | None:
    """The profiled steps' wall span: their median for a one-step report, their sum otherwise. A step lasts its
    window (attribution._step_windows: its host span, stretched to its last kernel's end short of the next step's
    start), the span its idle time is taken over: idle never exceeds it."""
    durations = [st.window_us / 1e6 for st in trace.attribution.steps]
    return _over_steps(durations, one_step) if durations else None


def _over_steps(values: list[float], one_step: bool) -> float:
    """A per-step figure for the report: the steps' median for a one-step report (its ops' times are medians too),
    their sum otherwise."""
    return statistics.median(values) if one_step else sum(values)


def _prediction_above_note(ops: list[OpRecord], launch_s: float, summary: Summary, on_gpu: bool = True) -> list[str]:
    """Why the prediction exceeds the measured time, where ops whose kernels ran shorter than the launch cost were
    given that cost (analyze/roofline.py: predicted = max(roofline time, launch overhead)): llama-tiny's H200 training
    step read "predicted 141.8%" with nothing saying so. On a CPU (``on_gpu`` False) there are no kernels and no
    device: the floor is the per-op host overhead the ceilings measured (a median, which many small ops beat), and
    sweep 8's RWKV (2,061 such ops) was told of kernels "back to back on the device while the host issued the next"."""
    floored = [op for op in ops if 0 < op.time_s < op.predicted_time_s and op.predicted_time_s == launch_s]
    if not floored:
        return []
    excess = sum(op.predicted_time_s - op.time_s for op in floored)
    head = (f"the prediction ({fmt_time(summary.predicted_total_s)}) is "
            f"{summary.predicted_total_s / summary.total_time_s:.0%} of the ops' measured time: ")
    if not on_gpu:
        return [head + f"it gives each op at least the per-op host overhead measured on this machine "
                f"({fmt_time(launch_s)}, a median), and {len(floored)} op(s) took less "
                f"({fmt_time(sum(op.time_s for op in floored))} in all); {fmt_time(excess)} of the prediction is that "
                "floor, not a time those ops could be brought down to"]
    return [head + f"it gives each op that launched device work at least the launch cost ({fmt_time(launch_s)}), and "
            f"{len(floored)} op(s) ran shorter ({fmt_time(sum(op.time_s for op in floored))} in all), their kernels "
            "back to back on the device while the host issued the next; "
            f"{fmt_time(excess)} of the prediction is that floor: what their launches cost when the host is the "
            "bottleneck, not a time they could reach"]


def _span_s(trace: Trace) -> float | None:
    """A trace's first op's start to its last op's or kernel's end (columns: no Python per op)."""
    if not trace.ops:
        return None
    columns = op_columns(trace)
    ends = np.fromiter((op.dur_us for op in trace.ops), dtype=np.float64, count=len(trace.ops)) + columns.ts_us
    last = float(ends.max())
    if trace.kernels:
        last = max(last, max(k.ts_us + k.dur_us for k in trace.kernels))
    span = last - float(columns.ts_us.min())
    return span / 1e6 if span > 0 else None


def _is_idle_marker(trace: Trace, c: Chosen) -> bool:
    """Framework markers (TorchDynamo cache lookups and the like) that did no device work on a GPU trace."""
    ev = trace.ops[c.event]
    return trace.has_gpu and ev.total_kernel_us == 0 and not ev.name.startswith("aten::")


def _syncs_and_memory(trace: Trace, reference_peak_bytes: int | None
                      ) -> tuple[list[SyncSite], MemorySummary, dict[str, int]]:
    """The sync sites, the memory summary, and the sync events left out of the sites by reason."""
    from roofline.capture.trace_memory import memory_from_trace
    from roofline.capture.trace_syncs import host_syncs_from_trace

    syncs, left_out = host_syncs_from_trace(trace) if trace.syncs else ([], {})
    # Always filled: with no [memory] events the summary says why it has no peak (never a bare 0 B).
    return syncs, memory_from_trace(trace, reference_peak_bytes=reference_peak_bytes), left_out


def _op_from_recording(trace: Trace, rec: RecordedOp, rec_index: int, times_us: list[float], cpu_us: list[float],
                       event: int | None, step: int | None, children: dict[int, list[int]],
                       tf32: Tf32Flags) -> OpRecord:
    ev = trace.ops[event] if event is not None else None
    kernels = _kernel_names(trace, subtree(event, children)) if event is not None else []
    input_shapes, input_dtypes, input_strides = _shape_fields(rec.input_tensors)
    return OpRecord(
        name=rec.name,
        module=rec.module,
        dtype=_roof_dtype(rec.dtype, rec.name, kernels, tf32, trace.has_gpu),
        flops=rec.cost.flops,
        bytes=rec.cost.bytes,
        time_s=statistics.median(times_us) / 1e6 if times_us else 0.0,
        source=rec.source,
        phase=rec.phase,
        input_shapes=input_shapes,
        input_dtypes=input_dtypes,
        input_strides=input_strides,
        output_shapes=[list(t.shape) for t in rec.output_tensors],
        output_dtypes=[t.dtype for t in rec.output_tensors],
        modeled=rec.cost.modeled,
        kernels=kernels,
        start_s=_start_s(trace, ev, step),
        cpu_time_s=statistics.median(cpu_us) / 1e6 if cpu_us else 0.0,
        external_id=ev.external_id if ev is not None else None,
        grad_accumulation=ev is not None and ev.is_grad_accumulation,
    )


def _append_ops(trace: Trace, chosen: list[Chosen], counter: _TraceCounter, children: dict[int, list[int]],
                step: int | None, tf32: Tf32Flags, gaps: dict[int, float], ops: list[OpRecord],
                event_to_report: dict[int, int], own_time_rows: dict[int, OpCost],
                kernel_names: list[list[str]] | None = None) -> None:
    """An op of each chosen event (its host gap from ``gaps``, 0 if not there; its kernels' names from
    ``kernel_names`` where given, ``_row_kernel_names``), appended to ``ops``, the rows of an event's own time also to
    ``own_time_rows`` with their cost; the per-op helpers are spelled out here, not called (127,620 ops on the 1
    M-event trace: 0.68 -> 0.60 s)."""
    all_ops, has_gpu = trace.ops, trace.has_gpu
    origin = _start_origin(trace, step)
    for i, c in enumerate(chosen):
        idx, self_only = c.event, c.self_only
        ev = all_ops[idx]
        counted = _row_counted(trace, ev, self_only, counter, children)
        if self_only:
            own_time_rows[len(ops)] = counted.cost
        names = kernel_names[i] if kernel_names is not None else _row_kernel_names(trace, ev, self_only, children)
        if self_only:
            time_us = ev.self_kernel_us if has_gpu else _event_time_us(trace, idx, True, children)
        else:
            time_us = ev.total_kernel_us if has_gpu else ev.dur_us
        dtype = counted.dtype
        if dtype == "float32":
            dtype = _roof_dtype(dtype, ev.name, names, tf32, has_gpu)
        cost = counted.cost
        ops.append(OpRecord(
            name=ev.name,
            module=ev.module or "",
            dtype=dtype,
            flops=cost.flops,
            bytes=cost.bytes,
            time_s=time_us / 1e6,
            source=ev.source,
            phase=op_phase(ev),
            input_shapes=counted.input_shapes,
            input_dtypes=counted.input_dtypes,
            input_strides=counted.input_strides,
            modeled=cost.modeled,
            kernels=names,
            start_s=(ev.ts_us - origin) / 1e6,
            cpu_time_s=ev.dur_us / 1e6,
            step=step,
            external_id=ev.external_id,
            host_gap_s=gaps.get(idx, 0.0) / 1e6,
            grad_accumulation=ev.is_grad_accumulation,
        ))
        event_to_report.setdefault(idx, len(ops) - 1)


# From this many events in a trace of several steps, a forked child chooses each step's rows while this process
# builds them (``_emit_choices``): ~1 s of the 1 M-event trace's ~2.4 s build was that loop, on one core while the
# other idled.
STEP_SPLIT_MIN_EVENTS = 100_000


def _choose_elsewhere(trace: Trace, steps: list[int | None]) -> bool:
    return len(steps) >= 2 and len(trace.ops) >= STEP_SPLIT_MIN_EVENTS and can_fork()


def _choices_of_step(trace: Trace, step: int | None, roots: dict[int | None, list[int]],
                     children: dict[int, list[int]], is_row: Callable[[CpuOp], bool],
                     names: dict[str, tuple[bool, bool]]) -> tuple[list[Chosen], dict[int, float], list[int]]:
    """The events a step's rows are made of (a trace read without a recording), each one's host gap, and their
    indices."""
    chosen = [c for c in choose_without_recording(trace, roots.get(step, []), children, is_row, names)
              if not _is_idle_marker(trace, c)]
    events = [c.event for c in chosen]
    return chosen, host_gaps_us(trace, events, step), events


def _emit_choices(trace: Trace, steps: list[int | None], roots: dict[int | None, list[int]],
                  children: dict[int, list[int]], is_row: Callable[[CpuOp], bool],
                  side_of: tuple[int | None] | None, emit: Callable[[Any], None]) -> None:
    """For a forked child (``Streamed``), step by step: what the step's rows are made of and costs the most to find
    (``_choices_of_step``; each row's kernel names, a composite op's a walk of its subtree), as little as pickles
    back: the events, whether each row is an event's own time and its host gap as bytes, the names as lists. The
    receiver builds the rows (``_append_ops``) with its own counts, so they are what one loop over the steps makes,
    down to the objects they share: rows pickled whole came back 30 MB bigger (each float and list of their own).

    ``side_of`` (the reference peak, in a tuple): then the sync sites and memory summary too, after the last step
    (``_syncs_and_memory``: ~0.1 s of the main process's build on the 1 M-event trace, while this child would have
    nothing left to do)."""
    names: dict[str, tuple[bool, bool]] = {}
    for step in steps:
        chosen, gaps, events = _choices_of_step(trace, step, roots, children, is_row, names)
        emit((np.array(events, dtype=np.int64).tobytes(),
              np.fromiter((c.self_only for c in chosen), dtype=bool, count=len(chosen)).tobytes(),
              np.fromiter((gaps.get(e, 0.0) for e in events), dtype=np.float64, count=len(events)).tobytes(),
              [_row_kernel_names(trace, trace.ops[c.event], c.self_only, children) for c in chosen]))
    if side_of is not None:
        emit(_syncs_and_memory(trace, side_of[0]))


class _SideFromStream:
    """The sync sites and memory summary that the child choosing the rows sends after them (``_emit_choices``),
    collected like a ``Forked`` result; worked out here if the child stopped before sending them."""

    def __init__(self, sent: Iterator[Any], trace: Trace, reference_peak_bytes: int | None) -> None:
        self._sent, self._trace, self._reference_peak_bytes = sent, trace, reference_peak_bytes

    def result(self) -> tuple[list[SyncSite], MemorySummary, dict[str, int]]:
        found = next(self._sent, None)
        if found is None:
            return _syncs_and_memory(self._trace, self._reference_peak_bytes)
        next(self._sent, None)  # the stream's end: the child is reaped
        return found


def _row_kernel_names(trace: Trace, ev: CpuOp, self_only: bool, children: dict[int, list[int]]) -> list[str]:
    """The kernels a row holds: its event's own, or its subtree's (in the order they ran)."""
    if self_only or ev.index not in children:
        kernels = trace.kernels
        return [kernels[k].name for k in ev.kernel_ids]
    return _kernel_names(trace, subtree(ev.index, children))


def _row_counted(trace: Trace, ev: CpuOp, self_only: bool, counter: _TraceCounter,
                 children: dict[int, list[int]]) -> _Counted:
    """What the row of a chosen event counts: its own time's (``_own_time_counted``), or the event's."""
    if self_only:
        return _own_time_counted(counter, trace, ev, children)
    if ev.is_annotation:  # a backend's annotation of a collective ("nccl:all_to_all") has a message
        return counter(ev) if ev.name.startswith(BACKEND_PREFIXES) else _NOT_COUNTED
    return counter(ev)


def _own_time_counted(counter: _TraceCounter, trace: Trace, ev: CpuOp, children: dict[int, list[int]]) -> _Counted:
    """What the row of an event's own time beside its children's rows counts. Kernels it ran itself on a GPU, or a
    compiled graph's C++ kernels on a CPU: unmodelled (a backend's annotation of a collective, "nccl:all_to_all":
    its message). On a CPU, an op's own host time is its dispatch into its children when their work is its work
    (a composite op, aten::linear over aten::addmm, counted or not; a vmapped op over its batched run; a wrapper
    like fft_rfft over _fft_r2c): no FLOPs or bytes, placed as a view is (bound 'launch'). An op without a count
    whose children only view, allocate or are not counted either runs its work itself (aten::index's gather when its index list is not
    recorded, _transform_bias_rescale_qkv, quantized::linear_dynamic's GEMM): unmodelled."""
    if ev.name.startswith(BACKEND_PREFIXES):
        return counter(ev)
    if trace.has_gpu or ev.is_annotation:
        return _NOT_COUNTED
    if is_composite_op(ev.name) or _counts_for_its_children(counter(ev)):
        return _DISPATCH_ONLY
    kids = [trace.ops[k] for k in children.get(ev.index, [])]
    return _DISPATCH_ONLY if any(_does_work(counter(kid)) or _data_dependent_wrapper(kid.name) for kid in kids) \
        else _OWN_WORK_NOT_COUNTED


def _data_dependent_wrapper(name: str) -> bool:
    """A composite over a data-dependent op (nonzero_numpy over nonzero), whose work a trace cannot size but which
    does work: where(cond) over it is its dispatch (a boolean-mask aten::index over a bare nonzero still gathers
    on its own)."""
    return name in DATA_DEPENDENT_OPS and is_composite_op(name)


def _place_own_time_rows(trace: Trace, extras: list[Chosen], first: int, ops: list[OpRecord],
                         rep_events: dict[int, int], recording: OpRecording, children: dict[int, list[int]]) -> None:
    """A live run's rows of an op's own time (``extras``, rows from ``first`` on) whose event names no module take
    the module and source line of the first recorded op below it: the profiler of a live run records no module,
    the counting pass does, and aten::linear's dispatch is its nn.Linear's as its addmm is (else the per-module
    view charged it to no module)."""
    recorded_at = {event: rec for rec, event in rep_events.items()}
    for row, c in enumerate(extras, start=first):
        if not c.self_only or ops[row].module:
            continue
        below = [e for e in subtree(c.event, children) if e in recorded_at]
        if below:
            rec = recording.ops[recorded_at[min(below, key=lambda e: trace.ops[e].ts_us)]]
            ops[row].module, ops[row].source = rec.module, ops[row].source or rec.source


def _does_work(counted: _Counted) -> bool:
    """A count with work in it: modelled, with FLOPs or bytes (not a view's or an allocation's; an uncounted child,
    a trace without shapes, tells nothing, and the op's own time stays unmodelled)."""
    return counted.cost.modeled and bool(counted.cost.flops or counted.cost.bytes)


def _counts_for_its_children(counted: _Counted) -> bool:
    """Whether an op's count, were it a row, would stand for its subtree (``is_row`` in report_from_trace)."""
    return counted.cost.modeled or counted.cost.keep_whole


def _uncount_unseen(extras: list[OpRecord], recorded_names) -> list[OpRecord]:
    """Of the ops a live run's timed trace has beyond the counting pass, those named like an op the counting pass
    did count: it would have seen them had they reached their kernel, so they did no countable work in the step
    (non-reentrant torch.utils.checkpoint stops its recomputation by raising inside the first op past the last
    tensor it needs, after the profiler opened that op's event: its FLOPs were counted once per checkpointed
    block; selective checkpointing's mode returns a saved op's output without running it). They keep their time,
    as unmodelled ops with no FLOPs or bytes."""
    unseen = [op for op in extras if op.name in recorded_names and (op.flops or op.bytes)]
    for op in unseen:
        op.flops = op.bytes = 0.0
        op.modeled = False
    return unseen


def _unseen_note(unseen: list[OpRecord]) -> str:
    names = ", ".join(f"{name} x{n}" for name, n in Counter(op.name for op in unseen).most_common(4))
    return (f"{len(unseen)} op event(s) of the timed step the counting pass did not see, though it counted ops of "
            f"the same name ({names}): kept with their time as unmodelled, no FLOPs or bytes (as activation "
            "checkpointing makes them: non-reentrant recomputation stops by aborting the first op it does not "
            "need, selective checkpointing answers saved ops from its cache; the profiler records both)")


def _recompute_note(recomputed: list[OpRecord], total_flops: float, total_time_s: float) -> str:
    flops = sum(op.flops for op in recomputed)
    time_s = sum(op.time_s for op in recomputed)
    return (f"{len(recomputed)} op(s) recompute checkpointed forwards inside the backward (phase 'recompute', "
            f"activation checkpointing): {flops / total_flops if total_flops else 0:.1%} of the step's FLOPs, "
            f"{time_s / total_time_s if total_time_s else 0:.1%} of its op time, counted once each")


def _gradient_note(gradient: list[OpRecord], total_time_s: float) -> str:
    """What the phase 'gradient' holds and its share: otherwise a reader takes it for part of the backward or of
    the optimizer, whose ops it is not."""
    time_s = sum(op.time_s for op in gradient)
    share = f": {time_s / total_time_s:.1%} of the op time" if total_time_s else ""
    return (f"{len(gradient)} op(s) work on the gradients between the backward and optimizer.step() (phase "
            f"'gradient': gradient clipping, GradScaler's unscale, inf check and scale update, zero_grad){share}")


def _start_origin(trace: Trace, step: int | None) -> float:
    """Where ``_start_s`` counts an op's start from: its step's start, else the trace's first op's."""
    return trace.steps[step].ts_us if step is not None and trace.steps else (trace.ops[0].ts_us if trace.ops else 0.0)


def _start_s(trace: Trace, ev: CpuOp | None, step: int | None) -> float | None:
    if ev is None:
        return None
    return (ev.ts_us - _start_origin(trace, step)) / 1e6


def _timeline(trace: Trace, steps: list[int | None], event_to_report: dict[int, int],
              ops: list[OpRecord]) -> tuple[list[KernelRecord], dict[int, float]]:
    """Kernels of the given steps on the report's timeline, and for each op the idle time, before its first kernel,
    of the GPU that kernel ran on (another GPU's kernels do not fill that GPU's gap): the gap between the kernel's
    start and the latest end of the kernels before it there, for the op's first kernel that has any before it.
    Worked out on columns (a 1 M-event trace's 62,400 kernels: 0.15 s one by one), the same floats."""
    columns = op_columns(trace)
    every = trace.kernels
    op_of = np.fromiter((k.op for k in every), dtype=np.int64, count=len(every))
    keep = op_of >= 0
    if None not in steps:
        keep[keep] = np.isin(columns.step[op_of[keep]], np.array(steps, dtype=np.int64))
    starts = np.fromiter((k.ts_us for k in every), dtype=np.float64, count=len(every))
    chosen = np.flatnonzero(keep)
    chosen = chosen[np.argsort(starts[chosen], kind="stable")]
    kernels = [every[i] for i in chosen.tolist()]
    if not kernels:
        return [], {}
    starts = starts[chosen]
    durations = np.fromiter((k.dur_us for k in kernels), dtype=np.float64, count=len(kernels))
    ends = starts + durations
    row = _report_rows(columns, event_to_report)[op_of[chosen]]
    devices = _ints(k.device for k in kernels)
    streams = _ints(k.stream for k in kernels)
    lanes = {d for d in devices if d is not None}
    several = len(lanes) > 1
    # one GPU: events with and without a device id share its timeline
    unnamed = min(lanes) - 1 if several else 0
    lane = np.fromiter((unnamed if d is None else d for d in devices), dtype=np.int64, count=len(devices)) \
        if several else np.zeros(len(kernels), dtype=np.int64)
    before = np.full(len(kernels), np.nan)
    for code in np.unique(lane).tolist():
        on = np.flatnonzero(lane == code)
        before[on[1:]] = np.maximum.accumulate(ends[on])[:-1]
    gapped = np.flatnonzero((row >= 0) & ~np.isnan(before))
    first_rows, first = np.unique(row[gapped], return_index=True)
    at = gapped[first]
    gap = (starts[at] - before[at]) / 1e6
    idle_before = dict(zip(first_rows.tolist(), np.where(gap > 0.0, gap, 0.0).tolist()))
    origin = starts[0]
    records = [KernelRecord(k.name, start, dur, stream, device, k.category, None if op_index < 0 else op_index)
               for k, start, dur, stream, device, op_index in
               zip(kernels, ((starts - origin) / 1e6).tolist(), (durations / 1e6).tolist(), streams, devices,
                   row.tolist())]
    return records, idle_before


def _ints(values: Iterator[Any]) -> list[int | None]:
    """``int_or_none`` of each value (a trace's device or stream ids), worked out once per distinct value."""
    known: dict[Any, int | None] = {}
    out: list[int | None] = []
    for value in values:
        try:
            found = known.get(value, known)
        except TypeError:  # unhashable: not an id a trace names twice
            found = int_or_none(value)
        if found is known:
            found = known[value] = int_or_none(value)
        out.append(found)
    return out


def _report_rows(columns, event_to_report: dict[int, int]) -> np.ndarray:
    """Each event's report row: its own, else its nearest chosen ancestor's (-1: none); chosen events never nest."""
    rows = np.full(len(columns.parent), -1, dtype=np.int64)
    if event_to_report:
        rows[np.fromiter(event_to_report.keys(), dtype=np.int64, count=len(event_to_report))] = np.fromiter(
            event_to_report.values(), dtype=np.int64, count=len(event_to_report))
    parent = columns.parent
    for level in columns.levels()[1:]:
        unset = level[rows[level] < 0]
        rows[unset] = rows[parent[unset]]
    return rows


def _device_api(trace) -> tuple[str, str]:
    """(kernels' API, the tracer Kineto read them from), from the launch calls' names and event categories."""
    launches = {launch.name[:3].lower() for launch in trace.launches[:1000]}
    if "xpu_runtime" in trace.categories or "xpu_driver" in trace.categories:
        return "XPU (SYCL/Level Zero)", "PTI"
    if "hip" in launches and not launches & {"cud", "cul"}:
        return "HIP", "roctracer"
    return "CUDA", "CUPTI"


def _kernel_stats(trace: Trace, steps: list[int | None], per_device: dict[int, float],
                  one_step: bool) -> tuple[float | None, float | None, float | None]:
    """Share of kernel time attributed to an op, total kernel time and device idle time (attribution's stats, over
    the steps as the wall time is: _over_steps; several GPUs, ``per_device`` from idle_by_device_s: the idle time
    of the GPU idle longest)."""
    if not trace.kernels:
        return None, None, None
    stats = trace.attribution
    wanted = {s for s in steps if s is not None}
    if per_device:
        return stats.share, stats.total_kernel_us / 1e6, max(per_device.values())
    idle = [st.idle_us / 1e6 for i, st in enumerate(stats.steps) if not wanted or i in wanted]
    return stats.share, stats.total_kernel_us / 1e6, (_over_steps(idle, one_step) if idle else None)


def idle_by_device_s(trace: Trace, steps: list[int | None], one_step: bool = False) -> dict[int, float]:
    """Each GPU's idle time over the given steps (_over_steps), for a process that drove several GPUs (else
    empty)."""
    wanted = {s for s in steps if s is not None}
    per_step: dict[int, list[float]] = {}
    for i, st in enumerate(trace.attribution.steps if trace.kernels else []):
        if not wanted or i in wanted:
            for device, idle_us in st.idle_by_device.items():
                per_step.setdefault(device, []).append(idle_us / 1e6)
    return {device: _over_steps(idle, one_step) for device, idle in per_step.items()}


_LIVE = ("analyze_model", "make_step", "time_steps", "profile_steps")


def __getattr__(name: str):
    """The live-model entry points live in analyze/live.py (they need torch; the trace path must not)."""
    if name in _LIVE:
        from roofline.analyze import live

        return getattr(live, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _shape_key(metas: list) -> tuple:
    return tuple(tuple(t.shape) for t in metas)


def _shape_fields(metas: list) -> tuple[list[list[int]], list[str], list[list[int]]]:
    """(shapes, dtypes, strides) of tensors, as a Report's op rows hold them (no strides: [])."""
    return ([list(t.shape) for t in metas], [t.dtype for t in metas],
            [list(t.strides) if t.strides is not None else [] for t in metas])
