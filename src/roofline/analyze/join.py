"""Choosing which trace events are the ops of a report, and joining them with the counting pass.

A torch.profiler trace nests ops: ``aten::linear`` holds ``aten::t`` and ``aten::addmm``; ``aten::_to_copy``
holds ``aten::copy_``. Counting each level would count the same work twice, so a report takes, on every path
from a root to a leaf, exactly one event:

- with a counting pass (live runs): the outermost event whose name the dispatch-level recorder saw, matched to
  the recorded op by occurrence order among ops of the same name, phase (forward/backward) and input shapes
  (both passes run the same step, so the k-th ``aten::addmm`` of shapes S in the timed step's forward is the k-th
  of the counted one); what that leaves unmatched is paired by name and phase, then by name alone, in order.
  Keying by name alone let one op the recorder saw and the trace did not (or the reverse) shift every later
  pairing of that name: a GPT-2 backward's 201 ms embedding-gradient add carried another add's FLOPs. On a CPU
  an op it descends through, one the recorder did not see above ones it did (it records below autograd:
  aten::linear over aten::addmm), keeps its host time outside them as a row, as on the trace-only path below;
- autograd engine frames (``AddBackward0``, ``autograd::engine::evaluate_function: ...``) are never ops: like
  annotations, their children are; a node with no children (AddBackward0 passes its gradient through) is
  dropped, its host time being the engine's bookkeeping;
- without one (trace files): the outermost event that has a formula, except composite ops that show their
  children (their work is their children's), else a leaf. An op its formula cannot count from the trace but
  keeps whole (OpCost.keep_whole: a sparse product, whose children see the same uncountable operand) is one
  unmodelled row, as if it had a formula. Annotations with kernels of their own (Triton kernels
  under a compiled graph) become ops named after the annotation. On a CPU, a library's custom op (outside
  aten::) without a formula that has children keeps its own host time (outside them) as an unmodelled op: it runs
  its own kernel besides them (quantized::linear_dynamic's GEMM beside two allocations), which a trace-only
  report otherwise lost. So does any op on a CPU that gives way to its children (a composite aten op, one with no
  formula): its own C++ and its dispatch into them are host time the step spent in it. Likewise a compiled graph's
  call on a CPU ("## Call CompiledFxGraph ..."): its time outside its children is Inductor's C++ kernels', which
  have no events; it becomes an (unmodelled) op.

Each chosen event's time is inclusive: every kernel launched in its subtree on a GPU; its host duration on CPU.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from math import prod

import numpy as np

from roofline.capture.trace_model import CpuOp, Trace, is_autograd_frame, is_step_marker, op_columns
from roofline.count.counting import is_composite_op, is_view_op


@dataclass
class Chosen:
    event: int
    recorded: int | None = None
    self_only: bool = False


def children_index(trace: Trace) -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for op in trace.ops:
        if op.parent >= 0:
            children[op.parent].append(op.index)
    return children


def roots_by_step(trace: Trace) -> dict[int | None, list[int]]:
    """Top-level events of each step, in time order: the children of its ProfilerStep annotation and any other
    root inside it (one pass over the trace's columns, whatever the number of steps)."""
    ops = trace.ops
    columns = op_columns(trace)
    parent = columns.parent
    step_named = columns.named(is_step_marker)
    under_marker = np.zeros(len(ops), dtype=bool)
    if len(ops):
        has_parent = parent >= 0
        markers = np.unique(parent[has_parent & step_named[np.maximum(parent, 0)]]).tolist()
        markers = [m for m in markers if ops[m].is_annotation]
        under_marker = has_parent & np.isin(parent, markers)
        roots = np.flatnonzero(((parent < 0) | under_marker) & ~step_named)
    else:
        roots = np.zeros(0, dtype=np.int64)
    # The loader's ops are in time order already: a stable sort by step keeps them so within each step.
    steps = columns.step[roots]
    order = np.argsort(steps, kind="stable")
    roots, steps = roots[order], steps[order]
    by_step: dict[int | None, list[int]] = {}
    if len(roots):
        starts = np.flatnonzero(np.diff(steps, prepend=steps[0] - 1)).tolist()
        flat = roots.tolist()
        in_order = np.diff(columns.ts_us[roots]) >= 0
        for a, b in zip(starts, starts[1:] + [len(flat)]):
            idx = flat[a:b]
            if not in_order[a:b - 1].all():
                idx.sort(key=lambda i: ops[i].ts_us)
            by_step[None if steps[a] < 0 else int(steps[a])] = idx
    return by_step


def choose_without_recording(trace: Trace, roots: Iterable[int], children: dict[int, list[int]],
                             is_row, names: dict[str, tuple[bool, bool]] | None = None) -> list[Chosen]:
    """``is_row(op)``: whether an event's own count stands for its subtree (modelled, or kept whole);
    ``names``: a cache of (autograd frame, composite) per op name, shared between calls (one per step)."""
    chosen: list[Chosen] = []
    ops = trace.ops
    kinds = {} if names is None else names
    layered = _maybe_layered(trace)
    stack = list(reversed(list(roots)))
    while stack:
        idx = stack.pop()
        op = ops[idx]
        kids = children.get(idx, [])
        kind = kinds.get(op.name)
        if kind is None:
            kind = kinds[op.name] = (is_autograd_frame(op.name), is_composite_op(op.name))
        if op.is_annotation or kind[0]:
            if op.self_kernel_us > 0 or _cpu_compiled_graph(trace, op):
                chosen.append(Chosen(idx, self_only=True))
            stack.extend(reversed(kids))
            continue
        row = is_row(op)
        if row and not (kids and (kind[1] or (layered[idx] and _batched_below(trace, idx, children)))):
            chosen.append(Chosen(idx))
        elif kids:
            if op.self_kernel_us > 0 or _host_time_of_its_own(trace, idx, kids):
                chosen.append(Chosen(idx, self_only=True))
            stack.extend(reversed(kids))
        else:
            chosen.append(Chosen(idx))
    return chosen


COMPILED_GRAPH = "## Call CompiledFxGraph"


LAYER_LEVELS = 6  # how far up _batched_below looks for a re-dispatched record of the same op


def _maybe_layered(trace: Trace) -> np.ndarray:
    """Each event that ``_batched_below`` could find layered: one with a child of its own name, or that itself or
    an ancestor within LAYER_LEVELS - 1 levels has its parent's name (a name test on columns, made once a trace; the
    function then compares shapes only for those)."""
    columns = op_columns(trace)
    found = columns.derived.get("maybe_layered")
    if found is not None:
        return found
    parent = columns.parent
    codes = columns.name_codes()
    has_parent = parent >= 0
    same = np.zeros(len(parent), dtype=bool)
    same[has_parent] = codes[has_parent] == codes[parent[has_parent]]
    found = same.copy()
    found[parent[same & has_parent]] = True
    above = parent.copy()
    for _ in range(LAYER_LEVELS - 1):
        valid = np.flatnonzero(above >= 0)
        if not len(valid):
            break
        found[valid] |= same[above[valid]]
        above[valid] = parent[above[valid]]
    columns.derived["maybe_layered"] = found
    return found


def _batched_below(trace: Trace, idx: int, children: dict[int, list[int]]) -> bool:
    """Whether this event is torch.func.vmap's per-sample (logical) record of an op whose batched (physical) run is
    nested below it: vmap records each op at the per-sample shapes and runs its batching rule inside (the same op,
    or another: mv -> mm), on the batch. Counting the outer event counted one sample (sweep 3: jacrev in a forward,
    mm at [1, 4] @ [4, 32] where [8, 4] @ [4, 32] ran; the trace's FLOPs 0.70x analyze's).

    Told by functorch's layer re-dispatch, which records an op inside itself with the same shapes (on this event
    or on its ancestors, up to 6 levels; eager code does that too, a scalar mul wrapped, and so does autocast), and
    by a descendant other than a view whose first two inputs hold more elements than this event's (the batch; the
    first two only, as the re-dispatch records out= variants whose extra arguments would outweigh it) in a shape
    none of this event's inputs has."""
    ops = trace.ops
    op = ops[idx]
    kids = children.get(idx, [])
    layered = any(ops[k].name == op.name and ops[k].input_dims == op.input_dims for k in kids)
    child, parent = idx, op.parent
    for _ in range(LAYER_LEVELS):
        if layered or parent is None or parent < 0:
            break
        layered = ops[parent].name == ops[child].name and ops[parent].input_dims == ops[child].input_dims
        child, parent = parent, ops[parent].parent
    if not layered:
        return False
    size = _operands_numel(op)
    own = {_shape_key(d) for d in (op.input_dims or []) if isinstance(d, list)}
    stack = list(kids)
    while stack:
        k = stack.pop()
        if (_operands_numel(ops[k]) > size and not is_view_op(ops[k].name) and _holds_another_shape(ops[k], own)
                and (ops[k].name not in _FILLS_A_RESULT or op.name in _FILLS_A_RESULT)):
            return True
        stack.extend(children.get(k, []))
    return False


# Ops below a non-copy op that write a buffer of its own (its result, a layout copy of an operand), never its batched
# run: CPU addmm under autocast copies its bias, broadcast to the (rows, out) result, into the result (copy_ of
# [32, 256] below an addmm of [256] + [32, 64] @ [64, 256]) before the GEMM; judged batched, every bf16 nn.Linear
# with a bias lost its FLOPs (a training step under CPU autocast counted 0.69x FlopCounterMode's).
_FILLS_A_RESULT = frozenset({"aten::copy_", "aten::fill_", "aten::zero_"})


def _holds_another_shape(op: CpuOp, own: set[tuple]) -> bool:
    """Whether one of an event's first two inputs has a shape its ancestor's inputs do not: the batch. A layout copy
    of the ancestor's own operand has none (autocast records conv2d inside conv2d at the same shapes, and oneDNN's
    contiguous copy of the weight, copy_(w, w), outweighs input + weight: timm's ConvNeXt downsampling convs were
    judged batched and counted as their mkldnn_convolution child, sweep 4)."""
    return any(isinstance(d, list) and d and _shape_key(d) not in own for d in (op.input_dims or [])[:2])


def _shape_key(dims: list) -> tuple:
    """An input's recorded dims as a set key: a tensor list's (cat's, stack's) are a list of shapes."""
    return tuple(_shape_key(d) if isinstance(d, list) else d for d in dims)


def _operands_numel(op: CpuOp) -> int:
    """Elements of an event's first two inputs: an out= variant's extra arguments left out; a tensor list's (cat's)
    every tensor."""
    return sum(_numel(d) for d in (op.input_dims or [])[:2] if isinstance(d, list))


def _numel(dims: list) -> int:
    if all(isinstance(v, int) for v in dims):
        return prod(dims)
    return sum(_numel(d) for d in dims if isinstance(d, list))


def _cpu_compiled_graph(trace: Trace, op: CpuOp) -> bool:
    """A torch.compile graph's call on a CPU: Inductor's C++ kernels run inside it with no event of their own, so
    its time outside its children (the extern aten calls) is theirs."""
    return not trace.has_gpu and op.is_annotation and op.name.startswith(COMPILED_GRAPH)


def _host_time_of_its_own(trace: Trace, idx: int, kids: list[int]) -> bool:
    """On a CPU, whether an op that gives way to its children spent host time outside them: the table's total is
    host time there, so that time is the op's own row. A library's custom op runs its kernel itself
    (quantized::linear_dynamic's GEMM beside two allocations); an aten op runs its own C++ between its children
    (aten::_native_multi_head_attention: 35 to 790 us a call outside its mm, bmm and softmax in torch 2.7.1's
    TransformerEncoder fast path, 38% of that trace's op time) or its dispatch into them (aten::linear over
    aten::addmm). Left out, the table understated the step. Events named without a namespace (a framework's
    frames, "Torch-Compiled Region") are not ops: their own time is Python or guards, outside every op; nor are
    annotations and the autograd engine's frames (bookkeeping).

    Both joins ask it of an op they descend through: the trace-only one of an op without a row of its own, the
    live one of an op the counting pass did not see above ops it did (aten::linear above the recorded aten::addmm,
    since the recorder sees ops below autograd: a live CPU report of a TransformerEncoder's training step lost
    6.5% of its ops' host time, 172 us a step, in aten::reshape, matmul, linear, dropout, sdpa)."""
    op = trace.ops[idx]
    if trace.has_gpu or op.is_annotation or "::" not in op.name or is_autograd_frame(op.name):
        return False
    return op.dur_us - sum(trace.ops[k].dur_us for k in kids) > 0


Key = tuple


@dataclass
class RecordedIndex:
    """What matching needs of a recording, built once per trace (not once per profiled step).

    ``keys[i]``: recorded op i's (name, phase, input shapes); ``by_key``: the recorded ops of each key, in order."""

    names: set[str]
    holds_named: set[int]
    keys: list[Key]
    by_key: dict[Key, list[int]]

    @classmethod
    def build(cls, trace: Trace, recorded_names: list[str], phases: list[str] | None = None,
              shapes: list[tuple] | None = None) -> "RecordedIndex":
        names = set(recorded_names) | {_inplace_variant(name) for name in recorded_names}
        names |= {twin for name in names for twin in _TWINS_OF.get(name, ())}
        n = len(recorded_names)
        keys = [(recorded_names[i], _trace_phase(phases[i]) if phases else "", shapes[i] if shapes else ())
                for i in range(n)]
        by_key: dict[Key, list[int]] = defaultdict(list)
        for rec_idx, key in enumerate(keys):
            by_key[key].append(rec_idx)
        return cls(names, _ancestors_of_named(trace, names), keys, dict(by_key))


def choose_with_recording(trace: Trace, roots: Iterable[int], children: dict[int, list[int]],
                          index: RecordedIndex, is_row, shapes_of=None) -> tuple[list[Chosen], int]:
    """Match recorded ops to trace events; events outside every match fall back to the trace-only rule.

    ``shapes_of(event)``: the event's input shapes, as the recording's keys hold them (None: match without shapes).
    Returns the chosen events and how many recorded ops found no event.
    """
    names, holds_named = index.names, index.holds_named
    layered = _maybe_layered(trace)
    candidates: list[int] = []
    leftovers: list[int] = []
    stack = list(reversed(list(roots)))
    while stack:
        idx = stack.pop()
        op = trace.ops[idx]
        if (not op.is_annotation and op.name in names
                and not (layered[idx] and idx in holds_named and _batched_below(trace, idx, children))):
            candidates.append(idx)
            continue
        if idx in holds_named:
            kids = children.get(idx, [])
            if op.self_kernel_us > 0 or _cpu_compiled_graph(trace, op) or _host_time_of_its_own(trace, idx, kids):
                leftovers.append(idx)
            stack.extend(reversed(kids))
        else:
            leftovers.append(idx)
    candidates.sort(key=lambda i: trace.ops[i].ts_us)
    with_shapes = shapes_of is not None and any(key[2] for key in index.keys)
    event_keys = [(RENAMED_UNDER_RECORDER.get(trace.ops[i].name, trace.ops[i].name), _recorded_phase(trace.ops[i]),
                   shapes_of(trace.ops[i]) if with_shapes else ()) for i in candidates]
    recorded_keys = index.keys if with_shapes else [(k[0], k[1], ()) for k in index.keys]
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for coarsen in (lambda k: k, _out_of_place_key, lambda k: (_twin(k[0]), *k[1:2]), lambda k: (_twin(k[0]),)):
        _pair_in_order(candidates, event_keys, recorded_keys, coarsen, pairs, taken)
    chosen = [Chosen(idx, pairs.get(pos)) for pos, idx in enumerate(candidates)]
    missing = len(index.keys) - len(taken)
    for idx in leftovers:
        if idx in holds_named:
            chosen.append(Chosen(idx, self_only=True))
        else:
            chosen.extend(choose_without_recording(trace, [idx], children, is_row))
    return chosen, missing


# An op that the counting pass sees under another name than the timed run runs: torch's backward formulas take a
# functional path when any tensor is "subclass-like", which a Python dispatch mode (the counting pass's recorder)
# makes every tensor. index's backward is index_put into zeros under the recorder, _index_put_impl_ in place
# without it (sweep 4: timm's Swin and MaxViT relative-position-bias tables; the timed op's time was lost and the
# recorded one had none). reshape's view is _reshape_alias only where no Python dispatch key is set.
DISPATCH_MODE_TWINS = {"aten::_index_put_impl_": "aten::index_put", "aten::_reshape_alias": "aten::view"}
# Twins that are one call whatever its place: the timed event's key reads as the recorded name from the first pass
# on, so it pairs in order among that name's calls (a linalg_eig beside it would take its recording otherwise).
# linalg_eigvals calls _linalg_eigvals, under the recorder linalg_eig (its values and vectors: the timed event's
# count replaces the recorded one, analyze/dispatch_mode_paths.py).
RENAMED_UNDER_RECORDER = {"aten::_linalg_eigvals": "aten::linalg_eig"}
DISPATCH_MODE_TWINS.update(RENAMED_UNDER_RECORDER)
_TWINS_OF: dict[str, set[str]] = defaultdict(set)
for _timed, _recorded in DISPATCH_MODE_TWINS.items():
    _TWINS_OF[_recorded].add(_timed)


def _twin(name: str) -> str:
    return DISPATCH_MODE_TWINS.get(name, name)


def _out_of_place_key(key: Key) -> Key:
    """A key with an in-place name (aten::add_) read as its out-of-place twin, shapes and phase kept: the counting
    pass and the timed run are two runs of one program, and an op can run in place in one and not in the other.
    The autograd engine accumulates a gradient in place when nothing else holds the buffer, which differs between
    the two (Mamba's selective scan: 60 accumulations a step recorded as add, timed as add_, were counted twice).
    A timed op with a twin under the recorder (DISPATCH_MODE_TWINS) reads as that twin."""
    name = _twin(key[0])
    return (name[:-1] if name.endswith("_") and not name.endswith("__") else name,) + tuple(key[1:])


def _inplace_variant(name: str) -> str:
    """aten::add -> aten::add_ and back (see _out_of_place_key); dunder names are left as they are."""
    if name.endswith("__"):
        return name
    return name[:-1] if name.endswith("_") else name + "_"


def _pair_in_order(candidates: list[int], event_keys: list[Key], recorded_keys: list[Key], coarsen,
                   pairs: dict[int, int], taken: set[int]) -> None:
    """Pair the k-th still-unpaired event of each (coarsened) key with the k-th still-unpaired recorded op of it."""
    free: dict[Key, list[int]] = defaultdict(list)
    for rec_idx, key in enumerate(recorded_keys):
        if rec_idx not in taken:
            free[coarsen(key)].append(rec_idx)
    seen: dict[Key, int] = defaultdict(int)
    for pos in range(len(candidates)):
        if pos in pairs:
            continue
        key = coarsen(event_keys[pos])
        recs = free.get(key)
        k = seen[key]
        if recs is not None and k < len(recs):
            seen[key] = k + 1
            pairs[pos] = recs[k]
            taken.add(recs[k])


def _trace_phase(recorded_phase: str) -> str:
    """A recorded phase as the trace can tell it: a checkpoint's recomputation runs inside the autograd engine."""
    return "backward" if recorded_phase == "recompute" else recorded_phase


def _recorded_phase(op: CpuOp) -> str:
    """The phase as the counting pass names it (it runs no optimizer: an optimizer's ops count as forward)."""
    return "backward" if op.is_backward else "forward"


def _ancestors_of_named(trace: Trace, names: set[str]) -> set[int]:
    """Indices of events with a recorded-name event somewhere below them (one upward walk per such event)."""
    marked: set[int] = set()
    for op in trace.ops:
        if op.is_annotation or op.name not in names:
            continue
        parent = op.parent
        while parent >= 0 and parent not in marked:
            marked.add(parent)
            parent = trace.ops[parent].parent
    return marked


def subtree(idx: int, children: dict[int, list[int]]) -> list[int]:
    kids = children.get(idx)
    if not kids:
        return [idx]
    out = [idx]
    stack = list(kids)
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(children.get(i, []))
    return out


def op_phase(op: CpuOp) -> str:
    """forward, backward, recompute (activation checkpointing's rerun forward), optimizer (its step's update),
    gradient (work on the gradients between them: clipping, AMP's unscale and inf checks, zero_grad)."""
    if op.is_optimizer:
        return "optimizer"
    if op.is_recompute:
        return "recompute"
    if op.is_backward:
        return "backward"
    if op.is_gradient:
        return "gradient"
    return "forward"
