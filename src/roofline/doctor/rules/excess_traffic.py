"""Excess DRAM traffic: ops whose kernels moved clearly more bytes than the op's modelled minimum, measured by
Nsight Compute (``op.measured``, set by analyze/ncu_join.py; silent without it).

The bytes beyond the minimum are re-reads (a softmax row too wide for shared memory read twice, matmul tiles read
once per output tile), uncoalesced or strided access (a sector fetched for a few useful bytes), or spills. The
saving is the time those extra bytes take at the DRAM roof, never more than the op's time above its compute floor
and above the minimum bytes' time: a compute-bound matmul's re-reads cost little. Findings group the calls of one
op at one site (the same code in every layer), ranked by that saving; the fix depends on what the op is.
"""

from __future__ import annotations

from collections import defaultdict

from roofline.doctor.evidence import (ATTENTION_KINDS, CONV_KINDS, ELEMENTWISE_KINDS, MATMUL_KINDS, NORM_KINDS,
                                      ceilings_of, generic_module, has_roofs, is_contiguous, norm_dtype, op_kind,
                                      severity_for, top_locations)
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

RULE = "excess-traffic"
EXCESS_MIN = 1.25
MIN_EXTRA_BYTES = 1 << 20
MAX_FINDINGS = 5
GATHER_KINDS = frozenset({"embedding", "index_select", "index", "gather", "scatter", "scatter_add", "index_add",
                          "index_put", "take", "embedding_bag", "_embedding_bag"})
CROSS_ENTROPY_KINDS = frozenset({"_log_softmax", "log_softmax", "cross_entropy", "nll_loss", "nll_loss_forward"})
COPY_KINDS = frozenset({"copy", "clone", "contiguous", "_to_copy", "to", "cat", "stack"})


def extra_time_s(report: Report, op: OpRecord) -> float:
    """Time the bytes beyond the minimum cost at the DRAM roof, bounded by the op's time above both its compute
    floor and its minimum bytes' time."""
    c = ceilings_of(report, op)
    m = op.measured
    bw = c.memory_bandwidth_bytes_per_s
    if m is None or bw <= 0 or op.bytes <= 0:
        return 0.0
    peak = c.peak_for(norm_dtype(op.dtype) or "float32")
    floor = max(op.flops / peak if peak > 0 else 0.0, op.bytes / bw)
    return max(0.0, min((m.dram_bytes - op.bytes) / bw, op.time_s - floor))


def fix_for(op: OpRecord) -> str:
    kind = op_kind(op.name)
    if kind in CROSS_ENTROPY_KINDS:
        return ("the softmax re-reads rows too wide for shared memory: compute the loss in one fused, chunked kernel "
                "(a fused linear+cross-entropy such as Liger's, or torch.compile over logits and loss) so the "
                "full-vocabulary logits are read once, or never written at all")
    if kind in MATMUL_KINDS:
        return ("tiles are re-read from DRAM: keep dimensions multiples of 128 so cuBLAS picks large tiles, prefer one "
                "bigger matmul over several (stack the projections), try torch.backends.cuda.matmul settings or "
                "torch.compile(mode='max-autotune') for a better-tiled kernel")
    if kind in ATTENTION_KINDS:
        return ("attention re-reads K/V: use a fused SDPA backend (flash or cuDNN) with contiguous [batch, heads, "
                "seq, dim] inputs and a supported head size so K/V tiles stay on chip")
    if kind in NORM_KINDS:
        return ("the reduction re-reads its rows (too wide for one block's shared memory) or reads them strided: "
                "reduce over the contiguous last dimension, and fuse the norm with its neighbours (torch.compile or "
                "a fused norm kernel) so the row is read once")
    if kind in CONV_KINDS:
        return ("the convolution re-reads its input: set torch.backends.cudnn.benchmark = True and try "
                "channels_last (model.to(memory_format=torch.channels_last)) so cuDNN picks a better-tiled algorithm")
    if kind in GATHER_KINDS:
        return ("scattered rows fetch whole sectors for a few useful bytes: sort or deduplicate the indices, gather "
                "wider rows (whole embedding rows, not slices), or fuse the gather into its consumer")
    if kind in COPY_KINDS or kind in ELEMENTWISE_KINDS:
        strided = any(strides and not is_contiguous(shape, strides)
                      for shape, strides in zip(op.input_shapes, op.input_strides))
        if strided:
            return ("the kernel reads a strided (non-contiguous) view, so its loads are uncoalesced: produce the "
                    "tensor in the layout this op reads, or fold the permute into the producer")
        return ("more bytes than the tensors hold: fuse this op with its producer and consumer (torch.compile) so the "
                "intermediate is not written and read back, and check for broadcast operands re-read per element")
    return ("look at ncu's Memory Workload Analysis for this kernel (L1/L2 sectors per request, spills): fuse it with "
            "its neighbours or give it contiguous inputs")


@register(RULE, "ops whose measured DRAM traffic (Nsight Compute) exceeds the modelled minimum")
def check(report: Report) -> list[Finding]:
    if report.ncu is None or not has_roofs(report):
        return []
    sites: dict[tuple[str, str], list[OpRecord]] = defaultdict(list)
    for op in report.ops:
        m = op.measured
        if (m is None or m.excess_ratio is None or m.excess_ratio < EXCESS_MIN
                or m.dram_bytes - op.bytes < MIN_EXTRA_BYTES):
            continue
        sites[(op.name, generic_module(op.module))].append(op)
    findings = []
    for (name, module), ops in sites.items():
        saving = sum(extra_time_s(report, op) for op in ops)
        measured = sum(op.measured.dram_bytes for op in ops)
        modelled = sum(op.bytes for op in ops)
        hits = [(op.measured.l2_hit_rate, op.measured.l2_bytes) for op in ops
                if op.measured.l2_hit_rate is not None and op.measured.l2_bytes]
        weight = sum(b for _, b in hits)
        where = module or "(top level)"
        findings.append(Finding(
            rule=RULE, category="memory",
            title=(f"{name.removeprefix('aten::')} in {where} moves {measured / modelled:.2f}x its minimum DRAM bytes "
                   f"({len(ops)} call{'s' if len(ops) != 1 else ''})"),
            evidence={"op": name, "calls": len(ops), "excess_ratio": measured / modelled, "dram_bytes": measured,
                      "modelled_min_bytes": modelled, "time_s": sum(op.time_s for op in ops),
                      "l2_hit_rate": sum(h * b for h, b in hits) / weight if weight else None,
                      "kernels": sorted({k for op in ops for k in op.kernels})[:3]},
            locations=top_locations(ops), estimated_savings_s=saving,
            savings_method=("the extra bytes (ncu's DRAM read+write less the modelled minimum) at the DRAM roof, at "
                            "most each call's time above its compute floor and its minimum bytes' time"),
            fix=fix_for(ops[0]), severity=severity_for(report, saving),
        ))
    findings.sort(key=lambda f: -f.estimated_savings_s)
    return findings[:MAX_FINDINGS]
