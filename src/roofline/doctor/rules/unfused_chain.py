"""Unfused chains of memory-bound ops: elementwise and norm ops that each read and write the whole tensor.

A chain is a run of consecutive elementwise/reduction ops of one phase (views in between don't count), each consuming
a shape an earlier op of the chain produced (of a reduction, whose output a trace does not record: a shape it may
reduce to). An op that reads nothing the chain made starts a new one, whatever op comes before it. Fused into one
kernel, the chain reads its external inputs once and writes its last output once; each op's own round trip through
memory disappears.

Autograd's gradient accumulation (AccumulateGrad adding a parameter's gradient into its .grad) joins no chain: it runs
after the backward graph that compiling the module fuses, so a chain into it (a Linear's bias-gradient sum, autocast's
cast of the gradient back to fp32, the add into .grad) names no change the user can make to their module.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from roofline.doctor.evidence import (ELEMENTWISE_KINDS, NORM_KINDS, VIEW_KINDS, bandwidth_of, ceilings_by_op,
                                      device_not_recorded, generic_module, is_cpu_report, numel, op_bytes, op_kind,
                                      op_table, output_dtype, severity_for, tensor_bytes, tensor_inputs,
                                      top_locations)
from roofline.doctor.op_table import OpTable
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "unfused-chain"
MIN_CHAIN = 3
MAX_FINDINGS = 5
SKIPPED_PHASES = frozenset({"gradient"})


_OUT_SHAPES: dict[tuple, tuple[int, ...] | None] = {}
_IN_SHAPES: dict[tuple, tuple[tuple[int, ...], ...]] = {}


def _in_shapes(op: OpRecord) -> tuple[tuple[int, ...], ...]:
    """The tensor inputs' shapes as tuples, memoised for one check like ``_out_shape``."""
    key = (id(op.input_shapes), id(op.input_dtypes), id(op.input_strides))
    found = _IN_SHAPES.get(key)
    if found is None:
        found = _IN_SHAPES[key] = tuple(tuple(shape) for shape, _, _ in tensor_inputs(op))
    return found


def _out_shape(op: OpRecord) -> tuple[int, ...] | None:
    """The first output's shape, memoised for the duration of one check: chains ask for it repeatedly, and ops
    of one kind with the same (shared) argument lists have the same answer."""
    if op.output_shapes and op.output_shapes[0]:
        return tuple(op.output_shapes[0])
    key = (op_kind(op.name) in ELEMENTWISE_KINDS, id(op.input_shapes), id(op.input_dtypes), id(op.input_strides))
    if key not in _OUT_SHAPES:
        _OUT_SHAPES[key] = _compute_out_shape(op)
    return _OUT_SHAPES[key]


def _compute_out_shape(op: OpRecord) -> tuple[int, ...] | None:
    """The first output's shape; traces record none, so an elementwise op's is its largest input's, a softmax's or
    a norm's its input's; a reduction's is not known (``_reduced_shape``)."""
    if op.output_shapes and op.output_shapes[0]:
        return tuple(op.output_shapes[0])
    kind = op_kind(op.name)
    shapes = [tuple(shape) for shape, _, _ in tensor_inputs(op)]
    if kind in ELEMENTWISE_KINDS or (kind in _MAX_MIN and len(shapes) > 1):  # max(a, b): elementwise
        return max(shapes, key=numel) if shapes else None
    if kind in _SHAPE_KEEPING_NORMS:
        return shapes[0] if shapes else None
    return None


# Norm kinds whose (first) output has their (first) input's shape; the other NORM_KINDS reduce.
_SHAPE_KEEPING_NORMS = frozenset({
    "softmax", "_softmax", "log_softmax", "_log_softmax", "layer_norm", "native_layer_norm", "rms_norm",
    "_fused_rms_norm", "group_norm", "native_group_norm", "batch_norm", "native_batch_norm",
    "_native_batch_norm_legit_no_training"})
_MAX_MIN = frozenset({"max", "min"})


def _reduced_shape(op: OpRecord) -> tuple[int, ...] | None:
    """The shape a reduction (sum, mean, var, amax, a vector norm...) reduces, when its output's is not recorded:
    which dims it reduces and whether it keeps them are arguments a trace does not give, so a later op is taken to
    read its result when one of its inputs is a reduction of that shape (``_reductions_of``)."""
    if _out_shape(op) is not None or op_kind(op.name) not in NORM_KINDS:
        return None
    shapes = [tuple(shape) for shape, _, _ in tensor_inputs(op)]
    return shapes[0] if shapes else None


# A source of more dims is matched shape by shape (``_reduction_of_any``): n dims reduce to ~2**(n + 1) shapes.
MAX_LISTED_RANK = 10


def _reductions_of(source: tuple[int, ...]) -> frozenset[tuple[int, ...]]:
    """Every shape reducing ``source`` may give (``_reduction_of_any``), listed so that a chain asks a set once per
    op instead of matching each input against each of its reductions."""
    kept = set(itertools.product(*[(size, 1) for size in source]))
    kept.discard(source)
    left_out = {dims for n in range(len(source)) for dims in itertools.combinations(source, n)}
    return frozenset(kept | left_out)


def _reduction_of_any(shape: tuple[int, ...], reduced: list[tuple[int, ...]]) -> bool:
    """Whether ``shape`` may be the result of reducing one of ``reduced``: the same rank with some of its dims 1
    (kept), or some of its dims left out, the rest in order."""
    for source in reduced:
        if len(shape) == len(source):
            if shape != source and all(a == b or a == 1 for a, b in zip(shape, source)):
                return True
        elif len(shape) < len(source):
            rest = iter(source)
            if all(any(a == b for b in rest) for a in shape):
                return True
    return False


_MAY_RETURN_INPUT = frozenset({"to", "contiguous", "type_as", "dropout", "feature_dropout", "alpha_dropout",
                               "feature_alpha_dropout"})


def _returns_its_input(op: OpRecord) -> bool:
    """Counted as moving nothing because it returned its input (``to`` with nothing to convert, on the device it
    is on; ``contiguous`` of a contiguous tensor; a dropout with p=0 or in eval mode, as in every diffusers
    block): like a view, no pass over memory to fuse away."""
    return op.modeled and op.bytes == 0 and op_kind(op.name) in _MAY_RETURN_INPUT


def find_chains(report: Report) -> list[list[OpRecord]]:
    ops = op_table(report).ops
    return [[ops[i] for i in chain] for chain in chain_positions(report)]


def chain_positions(report: Report) -> list[list[int]]:
    """The chains as positions in report.ops (``find_chains``)."""
    table = op_table(report)
    is_view = [kind in VIEW_KINDS or _returns_its_input(op) for kind, op in zip(table.call_kind, table.calls)]
    fusible_kind = [kind in ELEMENTWISE_KINDS or kind in NORM_KINDS for kind in table.call_kind]
    in_shapes = table.per_call(_in_shapes)
    made, wide = _made_by_calls(table)
    ops, calls, steps = table.ops, table.call, table.step
    chains: list[list[int]] = []
    chain: list[int] = []
    step = phase = None
    # the shapes the chain's ops may have made: their outputs (those known: _out_shape), and what its reductions
    # may give (their outputs' shapes are not known); reductions of too many dims to list are in `reduced`
    readable: set[tuple[int, ...]] = set()
    reduced: list[tuple[int, ...]] = []
    for i in table.run_skipping(is_view):
        c = calls[i]
        if steps[i] != step:
            chains.append(chain)
            chain, step, readable, reduced = [], steps[i], set(), []
        if is_view[c]:
            continue
        op = ops[i]
        # the gradient phase's chains are torch's own (clip_grad_norm_, GradScaler), in no module to compile; an
        # op whose bytes are unknown (no shapes recorded) is no known memory pass: a chain of them claimed its
        # whole time as the saving of a fused pass of 0 bytes
        if not (fusible_kind[c] and op.modeled and op.bound != "compute" and op.phase not in SKIPPED_PHASES
                and not op.grad_accumulation):
            chains.append(chain)
            chain, readable, reduced = [], set(), []
            continue
        # never across phases: the loss's backward ops and the forward a checkpoint then recomputes are adjacent,
        # and share shapes, but no compiler fuses them into one kernel
        if chain and op.phase == phase and (not readable.isdisjoint(in_shapes[c]) or (
                reduced and any(_reduction_of_any(shape, reduced) for shape in in_shapes[c]))):
            chain.append(i)
        else:
            chains.append(chain)
            chain, phase, readable, reduced = [i], op.phase, set(), []
        readable |= made[c]
        if wide[c] is not None:
            reduced.append(wide[c])
    chains.append(chain)
    return [c for c in chains if len(c) >= MIN_CHAIN]


def _made_by_calls(table: OpTable) -> tuple[list[frozenset[tuple[int, ...]]], list[tuple[int, ...] | None]]:
    """Per call: the shapes its op may make (its output, or what its reduction may give: ``_reductions_of``), and
    the shape it reduces where that has too many dims to list (else None)."""
    listed: dict[tuple[int, ...], frozenset[tuple[int, ...]]] = {}
    made, wide = [], []
    for out, source in zip(table.per_call(_out_shape), table.per_call(_reduced_shape)):
        shapes = frozenset() if out is None else frozenset([out])
        if source is not None and len(source) <= MAX_LISTED_RANK:
            if source not in listed:
                listed[source] = _reductions_of(source)
            shapes |= listed[source]
        made.append(shapes)
        wide.append(source if source is not None and len(source) > MAX_LISTED_RANK else None)
    return made, wide


def fused_bytes(chain: list[OpRecord]) -> float:
    """External inputs read once (each operand that no earlier op of the chain produced) + the last output."""
    total = 0.0
    produced: set[tuple[int, ...]] = set()
    for op in chain:
        for shape, dtype, _ in tensor_inputs(op):
            if tuple(shape) not in produced:
                total += tensor_bytes(shape, dtype)
        out = _out_shape(op)
        if out is not None:
            produced.add(out)
    last = chain[-1]
    out = _out_shape(last) or ()
    return total + tensor_bytes(out, output_dtype(last) or (last.input_dtypes[0] if last.input_dtypes else ""))


MODULE_FIX = ("fuse the chain: torch.compile the module (Inductor emits one kernel per chain), or use a fused kernel "
              "(F.rms_norm / F.layer_norm / F.scaled_dot_product_attention) instead of composing it op by op")
# A chain of the optimizer's step is its per-parameter update run op by op (torch.optim's single-tensor path, the
# default for CPU tensors): compiling the model leaves it as it is (sweep 4: a compiled timm ViT's AdamW).
OPTIMIZER_FIX = ("the optimizer updates each parameter op by op: construct it with fused=True (Adam, AdamW, SGD, "
                 "Adagrad: one kernel per parameter group, CPU and CUDA) or foreach=True, or torch.compile the "
                 "optimizer's step; compiling the model does not fuse it")


@register(RULE, "unfused chains of memory-bound elementwise/norm ops")
def check(report: Report) -> list[Finding]:
    _OUT_SHAPES.clear()
    _IN_SHAPES.clear()
    try:
        return _check(report)
    finally:
        _OUT_SHAPES.clear()
        _IN_SHAPES.clear()


def _check(report: Report) -> list[Finding]:
    if device_not_recorded(report):
        return []  # the chain's time would be the host's launches, not the memory traffic fusion removes
    bandwidth = report.ceilings.memory_bandwidth_bytes_per_s
    table = op_table(report)
    ops, calls, call_kind = table.ops, table.call, table.call_kind
    groups: dict[tuple[str, tuple[str, ...]], list[list[OpRecord]]] = defaultdict(list)
    # A chain's fused bytes and op kinds depend only on its calls (doctor/op_table.py): each step repeats its chains.
    of_calls: dict[tuple[int, ...], tuple[float, tuple[str, ...]]] = {}
    fused_each_of: dict[int, float] = {}
    generic: dict[str, str] = {}
    for positions in chain_positions(report):
        chain = list(map(ops.__getitem__, positions))
        key = tuple(map(calls.__getitem__, positions))
        found = of_calls.get(key)
        if found is None:
            found = of_calls[key] = (fused_bytes(chain), tuple(call_kind[c] for c in key))
        fused, signature = found
        fused_each_of[id(chain)] = fused
        module = _main_module(chain)
        where = generic.get(module)
        if where is None:
            where = generic[module] = generic_module(module)
        groups[(where, signature)].append(chain)
    # Each group's totals first; the ops' locations only for the groups kept (the most saving, ties in group order).
    ranked = []
    mixed = bandwidth > 0 and bool(ceilings_by_op(report))  # GPUs of different models: each at its own GPU's roof
    for (module, signature), chains in groups.items():
        ops = [op for c in chains for op in c]
        times = [op.time_s for op in ops]
        time = sum(times)
        unfused = sum(op_bytes(op) for op in ops)
        fused_each = [fused_each_of[id(c)] for c in chains]
        fused = sum(fused_each)
        if bandwidth > 0:
            savings = sum(max(sum(times[start:start + len(c)])
                              - f / ((bandwidth_of(report, c[0]) if mixed else bandwidth) or bandwidth), 0.0)
                          for c, f, start in zip(chains, fused_each, _starts(chains)))
            # a CPU-only run has one memory roof, its CPU's; a GPU run may hold several GPUs, each with its own
            roof = ("the CPU's measured memory bandwidth" if is_cpu_report(report)
                    else "measured bandwidth of the chain's GPU")
            method = ("each chain's measured time minus one fused pass at the memory roof: (external inputs read "
                      f"once + last output written once) / {roof}")
        elif unfused > 0:
            savings = time * max(1.0 - fused / unfused, 0.0)
            method = "measured time scaled by the bytes fusion removes (same achieved bandwidth; no roof measured)"
        else:
            savings, method = 0.0, "not estimated: no bytes or bandwidth known"
        if savings > 0:
            ranked.append((savings, method, module, signature, chains, ops, time, unfused, fused))
    ranked.sort(key=lambda found: -found[0])
    return [_finding(report, *found) for found in ranked[:MAX_FINDINGS]]


def _finding(report: Report, savings: float, method: str, module: str, signature: tuple[str, ...],
             chains: list[list[OpRecord]], ops: list[OpRecord], time: float, unfused: float, fused: float) -> Finding:
    in_optimizer = all(op.phase == "optimizer" for op in ops)
    where = module or ("the optimizer's step" if in_optimizer else "(top level)")
    return Finding(
        rule=RULE, category="fusion",
        title=f"unfused chain of {len(signature)} memory-bound ops x{len(chains)} in {where}: {' > '.join(signature)}",
        evidence={"ops": list(signature), "chains": len(chains), "time_s": time, "bytes_unfused": unfused,
                  "bytes_fused": fused, "bytes_saved": max(unfused - fused, 0.0)},
        locations=top_locations(ops), estimated_savings_s=savings, savings_method=method,
        fix=OPTIMIZER_FIX if in_optimizer else MODULE_FIX,
        severity=severity_for(report, savings),
    )


def _starts(chains: list[list[OpRecord]]) -> list[int]:
    """Where each chain's ops start in the chains' ops, one after another."""
    return list(itertools.accumulate((len(c) for c in chains[:-1]), initial=0))


def _main_module(chain: list) -> str:
    """The module whose ops take most of the chain's time (its first op's at a tie or with no time): a backward
    chain often starts with the gradient add of the module before it (a Llama MLP's Linear, then 17 ops of
    RMSNorm's backward) and was named after that one op."""
    first = chain[0].module
    if all(op.module == first for op in chain):
        return first
    time: dict[str, float] = {}
    for op in chain:
        time[op.module] = time.get(op.module, 0.0) + op.time_s
    return max(time, key=lambda m: (time[m], m == first))
