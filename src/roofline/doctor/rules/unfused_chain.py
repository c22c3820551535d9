"""Unfused chains of memory-bound ops: elementwise and norm ops that each read and write the whole tensor.

A chain is a run of consecutive elementwise/reduction ops (views in between don't count), each consuming a shape
an earlier op of the chain produced. Fused into one kernel, the chain reads its external inputs once and writes
its last output once; each op's own round trip through memory disappears.
"""

from __future__ import annotations

from collections import defaultdict

from roofline.doctor.evidence import (ELEMENTWISE_KINDS, NORM_KINDS, VIEW_KINDS, generic_module, numel, op_kind,
                                      op_bytes, ordered_ops, output_dtype, severity_for, tensor_bytes, tensor_inputs,
                                      top_locations)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "unfused-chain"
MIN_CHAIN = 3
MAX_FINDINGS = 5


def _fusible(op: OpRecord) -> bool:
    kind = op_kind(op.name)
    return (kind in ELEMENTWISE_KINDS or kind in NORM_KINDS) and op.bound != "compute"


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
    """The first output's shape; traces record none, so an elementwise op's is its largest input's."""
    if op.output_shapes and op.output_shapes[0]:
        return tuple(op.output_shapes[0])
    if op_kind(op.name) in ELEMENTWISE_KINDS:
        shapes = [tuple(shape) for shape, _, _ in tensor_inputs(op)]
        return max(shapes, key=numel) if shapes else None
    return None


def find_chains(report: Report) -> list[list[OpRecord]]:
    chains: list[list[OpRecord]] = []
    chain: list[OpRecord] = []
    step = None
    produced: set[tuple[int, ...]] = set()
    fusible: dict[tuple[str, str], bool] = {}
    last_out = None  # _out_shape(chain[-1]) while the chain has ops: an op depends on it, or reads what it produced
    for op in ordered_ops(report):
        kind = op_kind(op.name)
        if op.step != step:
            chains.append(chain)
            chain, step, produced = [], op.step, set()
        if kind in VIEW_KINDS:
            continue
        can_fuse = fusible.get((op.name, op.bound))
        if can_fuse is None:
            can_fuse = fusible[(op.name, op.bound)] = _fusible(op)
        if can_fuse and chain and (last_out is None or any(shape in produced for shape in _in_shapes(op))):
            chain.append(op)
        else:
            chains.append(chain)
            chain, produced = ([op] if can_fuse else []), set()
        if chain and chain[-1] is op:
            last_out = _out_shape(op)
            if last_out is not None:
                produced.add(last_out)
    chains.append(chain)
    return [c for c in chains if len(c) >= MIN_CHAIN]


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


def _fused_bytes_memoised(chain: list[OpRecord], memo: dict[tuple, float]) -> float:
    """``fused_bytes``, once per chain of the same calls: its ops' names, own dtypes, outputs and (shared) input
    lists, these by identity while the report holds them."""
    key = tuple((op.name, op.dtype, id(op.input_shapes), id(op.input_dtypes), id(op.input_strides),
                 tuple(map(tuple, op.output_shapes)), tuple(op.output_dtypes)) for op in chain)
    found = memo.get(key)
    if found is None:
        found = memo[key] = fused_bytes(chain)
    return found


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
    bandwidth = report.ceilings.memory_bandwidth_bytes_per_s
    groups: dict[tuple[str, tuple[str, ...]], list[list[OpRecord]]] = defaultdict(list)
    fused_of: dict[tuple, float] = {}  # a chain's fused bytes by what they depend on: every step repeats its chains
    for chain in find_chains(report):
        signature = tuple(op_kind(op.name) for op in chain)
        groups[(generic_module(chain[0].module), signature)].append(chain)
    findings = []
    for (module, signature), chains in groups.items():
        time = sum(op.time_s for c in chains for op in c)
        unfused = sum(op_bytes(op) for c in chains for op in c)
        fused_each = [_fused_bytes_memoised(c, fused_of) for c in chains]
        fused = sum(fused_each)
        if bandwidth > 0:
            savings = sum(max(sum(op.time_s for op in c) - f / bandwidth, 0.0) for c, f in zip(chains, fused_each))
            method = ("each chain's measured time minus one fused pass at the memory roof: (external inputs read "
                      "once + last output written once) / measured bandwidth")
        elif unfused > 0:
            savings = time * max(1.0 - fused / unfused, 0.0)
            method = "measured time scaled by the bytes fusion removes (same achieved bandwidth; no roof measured)"
        else:
            savings, method = 0.0, "not estimated: no bytes or bandwidth known"
        if savings <= 0:
            continue
        ops = [op for c in chains for op in c]
        where = module or "(top level)"
        findings.append(Finding(
            rule=RULE, category="fusion",
            title=f"unfused chain of {len(signature)} memory-bound ops x{len(chains)} in {where}: {' > '.join(signature)}",
            evidence={"ops": list(signature), "chains": len(chains), "time_s": time, "bytes_unfused": unfused,
                      "bytes_fused": fused, "bytes_saved": max(unfused - fused, 0.0)},
            locations=top_locations(ops), estimated_savings_s=savings, savings_method=method,
            fix=("fuse the chain: torch.compile the module (Inductor emits one kernel per chain), or use a fused "
                 "kernel (F.rms_norm / F.layer_norm / F.scaled_dot_product_attention) instead of composing it op by op"),
            severity=severity_for(report, savings),
        ))
    findings.sort(key=lambda f: -f.estimated_savings_s)
    return findings[:MAX_FINDINGS]
