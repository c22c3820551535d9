"""Layout copies: copies whose only job is to turn a transposed or permuted view into a contiguous tensor,
and matmuls handed operands whose layout BLAS cannot read in place.

Evidence is the recorded input strides: a copy (clone, contiguous, copy_, same-dtype _to_copy, reshape) of a view
that is a permutation of a dense tensor. Copies of broadcast or sliced views, casts, and writes into a slice of a
bigger buffer (a KV cache) are not layout fixes and are left alone. A copy site is reported when it runs on most
calls of its module (the layout is passed on every time), not when it runs once, e.g. only in a prefill.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from operator import attrgetter

from roofline.doctor.evidence import (MATMUL_KINDS, bandwidth_of, blas_compatible, generic_module, has_roofs,
                                      input_dtype, is_contiguous, is_dense_permutation, location, matmul_operands,
                                      op_kind, op_table, output_dtype, roofline_time, severity_for, tensor_bytes,
                                      top_locations)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "layout-copy"
# How deep in the dispatch each copy sits: a composite (reshape) runs as a clone, which runs as a copy_.
COPY_DEPTH = {"reshape": 0, "flatten": 0, "contiguous": 0, "to": 0, "clone": 1, "_to_copy": 1, "_reshape_copy": 1,
              "copy": 2}
COPY_KINDS = frozenset(COPY_DEPTH)
MAX_FINDINGS = 5
LOOKAHEAD = 3
MIN_CALL_SHARE = 0.5


def _source(op: OpRecord) -> tuple[list[int], list[int], str] | None:
    i = 1 if op_kind(op.name) == "copy" else 0
    if i >= len(op.input_shapes) or not op.input_shapes[i]:
        return None
    strides = op.input_strides[i] if i < len(op.input_strides) else []
    return list(op.input_shapes[i]), list(strides or []), input_dtype(op, i)


def is_layout_copy(op: OpRecord) -> bool:
    kind = op_kind(op.name)
    if kind not in COPY_KINDS:
        return False
    src = _source(op)
    if src is None or not is_dense_permutation(src[0], src[1]):
        return False
    if kind == "copy" and op.input_shapes and op.input_strides:
        if not is_contiguous(op.input_shapes[0], op.input_strides[0]):
            return False
    if kind in ("_to_copy", "to"):
        out = output_dtype(op)
        if out and src[2] and out != src[2]:
            return False
    return True


def layout_copies(report: Report) -> list[OpRecord]:
    """Layout copies, counting a composite (reshape) and the clone it runs as once."""
    table = op_table(report)
    copying = table.per_call(is_layout_copy)
    if not any(copying):
        return []
    depth = [COPY_DEPTH[kind] if hit else -1 for kind, hit in zip(table.call_kind, copying)]
    source = [_source(op)[:2] if hit else None for op, hit in zip(table.calls, copying)]
    run, calls, ops = table.run, table.call, table.ops
    at = table.positions(copying) if table.in_run_order else [j for j, i in enumerate(run) if copying[calls[i]]]
    found = []
    for j in at:
        c = calls[run[j]]
        child = any(copying[n] and depth[n] > depth[c] and source[n] == source[c]
                    for n in (calls[i] for i in run[j + 1:j + 1 + LOOKAHEAD]))
        if not child:
            found.append(ops[run[j]])
    return found


def _strided_operand_bytes(op: OpRecord) -> float | None:
    """The bytes of a matmul's operand that BLAS cannot read in place (None when both can be)."""
    if op_kind(op.name) not in MATMUL_KINDS:
        return None
    operands = matmul_operands(op)
    if operands is None:
        return None
    _, _, a_i, b_i = operands
    for i in (a_i, b_i):
        strides = op.input_strides[i] if i < len(op.input_strides) else []
        shape = op.input_shapes[i]
        if strides and not blas_compatible(shape, strides) and is_dense_permutation(shape, strides):
            return tensor_bytes(shape, input_dtype(op, i))
    return None


def strided_matmuls(report: Report) -> list[tuple[OpRecord, float]]:
    """Matmuls with an operand BLAS cannot read in place, with the bytes of that operand."""
    table = op_table(report)
    strided = table.per_call(_strided_operand_bytes)
    ops, calls = table.ops, table.call
    return [(ops[i], strided[calls[i]]) for i in table.positions([b is not None for b in strided])]


Sites = dict[str, dict[tuple[str, str, str | None], int]]


def op_sites(report: Report, asked: Iterable[tuple[str, str]] | None = None) -> Sites:
    """Calls per (module, op name, source line), per phase: counted once for every module_calls question.
    ``asked``: the (module, phase) pairs module_calls will be asked about; only the ops of those phases whose module
    starts with one of those modules are counted (all the sites of each module and its submodules, and maybe a few
    others), as counting every op's site cost most of this rule on a big report."""
    ops = report.ops
    if asked is not None:
        asked = list(asked)
        phases, modules = {phase for _, phase in asked}, tuple({module or "" for module, _ in asked})
        ops = [op for op in ops if op.phase in phases and op.module.startswith(modules)]
    sites: Sites = defaultdict(lambda: defaultdict(int))
    for (phase, module, name, source), n in Counter(map(_SITE, ops)).items():
        sites[phase][(module, name, source)] += n
    return sites


_SITE = attrgetter("phase", "module", "name", "source")


def module_calls(report: Report, module: str, phase: str, sites: Sites | None = None) -> int:
    """How many times a module ran in a phase: its fewest-called matmul site (a projection runs once per call),
    else the median call count of its op sites. ``sites``: op_sites(report), when asking about several modules."""
    prefix = module + "." if module else ""
    in_phase = (sites if sites is not None else op_sites(report)).get(phase, {})
    per_site = {site: n for site, n in in_phase.items() if site[0] == module or site[0].startswith(prefix)}
    matmuls = [n for (_, name, _), n in per_site.items() if op_kind(name) in MATMUL_KINDS]
    if matmuls:
        return min(matmuls)
    counts = sorted(per_site.values())
    return counts[len(counts) // 2] if counts else 0


def recurring_copies(report: Report) -> list[OpRecord]:
    """Layout copies at sites that copy on at least half the calls of their module."""
    sites: dict[tuple[str, str | None, str], list[OpRecord]] = defaultdict(list)
    for op in layout_copies(report):
        sites[(op.module, op.source, op.phase)].append(op)
    if not sites:
        return []
    calls = op_sites(report, [(module, phase) for module, _, phase in sites])
    return [op for (module, _, phase), ops in sites.items()
            if len(ops) >= MIN_CALL_SHARE * max(module_calls(report, module, phase, calls), len(ops)) for op in ops]


@register(RULE, "copies of transposed/permuted views; matmuls on strided operands")
def check(report: Report) -> list[Finding]:
    if not has_roofs(report):
        return []
    groups: dict[str, list[OpRecord]] = defaultdict(list)
    for op in recurring_copies(report):
        groups[generic_module(op.module) or op.source or ""].append(op)
    findings = []
    for ops in groups.values():
        time = sum(op.time_s for op in ops)
        src = _source(ops[0])
        moved = sum(tensor_bytes(_source(op)[0], _source(op)[2]) * 2 for op in ops)
        lines = sorted({op.source for op in ops if op.source})
        where = generic_module(ops[0].module) or "(top level)"
        at = f" at {', '.join(lines[:4])}" if lines else ""
        findings.append(Finding(
            rule=RULE, category="layout",
            title=f"{len(ops)} layout copies of non-contiguous (transposed/permuted) views in {where}{at}",
            evidence={"ops": sorted({op.name for op in ops}), "count": len(ops), "time_s": time,
                      "bytes_moved": moved, "source_shape": src[0], "source_strides": src[1]},
            locations=top_locations(ops, limit=8), estimated_savings_s=time,
            savings_method="the copies' measured time, removed when the producer writes the layout the consumer reads",
            fix=("keep the tensor in the layout its consumer reads: e.g. for attention output, let "
                 "F.scaled_dot_product_attention's output be transposed and reshaped once into the projection "
                 "(or compute q/k/v in [batch, seq, heads, dim] order) instead of copying a transposed view each "
                 "time; avoid .contiguous()/.reshape on permuted views inside the loop"),
            severity=severity_for(report, time),
        ))
    strided = strided_matmuls(report)
    if strided:
        ops = [op for op, _ in strided]
        time = sum(op.time_s for op in ops)
        copy_s = sum(b * 2 / bw for op, b in strided if (bw := bandwidth_of(report, op)) > 0)
        savings = max(time - sum(roofline_time(report, op) for op in ops) - copy_s, 0.0)
        findings.append(Finding(
            rule=RULE, category="layout",
            title=f"{len(ops)} matmuls read a permuted operand BLAS cannot read in place",
            evidence={"ops": sorted({op.name for op in ops}), "count": len(ops), "time_s": time,
                      "operand_shapes_strides": [[op.input_shapes, op.input_strides] for op in ops[:3]]},
            locations=top_locations(ops), estimated_savings_s=savings,
            savings_method=("upper bound: the matmuls' time above their roofline time, less one copy of the strided "
                            "operand at the memory roof"),
            fix="make the operand contiguous once where it is produced (or transpose only the last two dims)",
            severity=severity_for(report, savings),
        ))
    findings.sort(key=lambda f: -f.estimated_savings_s)
    return findings[:MAX_FINDINGS]
