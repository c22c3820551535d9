"""Nsight Compute's per-kernel counters joined to a Report's ops: measured bytes beside the modelled minimum.

ncu numbers kernels in launch order; the report's kernels of one step are in device order with the op that
launched each (Kineto correlation). The two sequences are aligned on normalised kernel names (ncu and CUPTI
demangle differently: ``at::<unnamed>::`` vs ``at::native::(anonymous namespace)::``) with difflib's matching
blocks, which tolerates kernels only one side saw (input set-up ncu profiled, memsets ncu does not). Each step of
the report is aligned on its own; the step with most matches is the one the totals describe.

Every number the memory-access view and the hierarchical roofline show is set here (renderers never compute):
per op MeasuredTraffic (excess ratio = measured DRAM bytes / modelled minimum, intensities at DRAM and L2),
per module and per op name TrafficGroup rows, and the join's share.
"""

from __future__ import annotations

import re
from collections import defaultdict
from difflib import SequenceMatcher

from roofline.capture.ncu_csv import NcuKernel
from roofline.capture.ncu_metrics import (AVERAGED, DRAM_READ, DRAM_WRITE, L2_BYTES, L2_HIT, SUMMED, TENSOR_PIPES)
from roofline.report import MeasuredTraffic, NcuSummary, OpRecord, Report, TrafficGroup

METHOD = ("ncu kernels matched to each step's Kineto kernels in launch order by normalised kernel name (difflib "
          "matching blocks); an op's counters are the sums over its matched kernels (percentages: duration-weighted)")
_LAYER_INDEX = re.compile(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.|$)|_\d+(?=\.|$)")
_ANON = re.compile(r"\(anonymous namespace\)|<unnamed>|\bunnamed>")
TOP_GROUPS = 40


def kernel_key(name: str) -> str:
    """A kernel's identity that survives both demanglers: the function's own name without namespace, template
    arguments or parameters (``vectorized_elementwise_kernel``, ``nvjet_sm90_hsh_128x64_64x8_1x2_h_bz_TNT``)."""
    text = _ANON.sub("anon", name).strip()
    text = text.removeprefix("void ").strip()
    cut = len(text)
    for stop in "<(":
        pos = text.find(stop)
        if pos >= 0:
            cut = min(cut, pos)
    return text[:cut].rsplit("::", 1)[-1].strip()


def join_ncu(report: Report, ncu: list[NcuKernel], *, source: str = "", metrics: list[str] | None = None) -> NcuSummary:
    """Set ``op.measured`` on every op with matched kernels and ``report.ncu``; returns the summary."""
    ncu_keys = [kernel_key(k.name) for k in ncu]
    steps = _step_kernels(report)
    per_op: dict[int, list[NcuKernel]] = defaultdict(list)
    best_step, best_matched = None, -1
    for step, kernels in steps.items():
        matcher = SequenceMatcher(None, ncu_keys, [kernel_key(report.kernels[i].name) for i in kernels], autojunk=False)
        matched = 0
        for block in matcher.get_matching_blocks():
            for j in range(block.size):
                per_op[report.kernels[kernels[block.b + j]].op_index].append(ncu[block.a + j])
            matched += block.size
        if matched > best_matched:
            best_step, best_matched = step, matched
    launched = _kernels_per_op(report)
    for index, kernels in per_op.items():
        op = report.ops[index]
        op.measured = _measured(op, kernels, launched.get(index, len(kernels)))
    basis = [op for op in report.ops if op.step == best_step] if len(steps) > 1 else list(report.ops)
    step_kernels = len(steps.get(best_step, [])) if steps else 0
    summary = NcuSummary(
        source=source, method=METHOD, metrics=list(metrics or _seen_metrics(ncu)), kernels=len(ncu),
        kernels_joined=max(best_matched, 0), joined_share=max(best_matched, 0) / len(ncu) if ncu else 0.0,
        step_kernels=step_kernels, step_kernels_measured=max(best_matched, 0),
        step_share=max(best_matched, 0) / step_kernels if step_kernels else 0.0,
    )
    _totals(summary, basis)
    report.ncu = summary
    return summary


def _step_kernels(report: Report) -> dict[int | None, list[int]]:
    """Indices into report.kernels of each step's kernels that belong to an op (memcpy/memset left out)."""
    steps: dict[int | None, list[int]] = defaultdict(list)
    for i, k in enumerate(report.kernels):
        if k.category == "kernel" and k.op_index is not None and 0 <= k.op_index < len(report.ops):
            steps[report.ops[k.op_index].step].append(i)
    return dict(steps)


def _kernels_per_op(report: Report) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for k in report.kernels:
        if k.category == "kernel" and k.op_index is not None:
            counts[k.op_index] += 1
    return counts


def _seen_metrics(ncu: list[NcuKernel]) -> list[str]:
    return sorted({name for k in ncu for name in k.metrics})


def _measured(op: OpRecord, kernels: list[NcuKernel], launched: int) -> MeasuredTraffic:
    m = MeasuredTraffic(kernels=len(kernels), kernels_total=max(launched, len(kernels)))
    for metric, name in SUMMED.items():
        values = [k.metrics[metric] for k in kernels if metric in k.metrics]
        if values:
            setattr(m, name, float(sum(values)))
    weights = [k.metrics.get("gpu__time_duration.sum", 0.0) or 1e-12 for k in kernels]
    for metric, name in AVERAGED.items():
        setattr(m, name, _weighted(kernels, metric, weights))
    pipes = [v for v in (_weighted(kernels, p, weights) for p in TENSOR_PIPES) if v is not None]
    m.tensor_pipe_pct = max(pipes) if pipes else None
    m.dram_bytes = m.dram_read_bytes + m.dram_write_bytes
    l2_weights = [k.metrics.get(L2_BYTES, 0.0) for k in kernels]
    m.l2_hit_rate = _weighted(kernels, L2_HIT, l2_weights if sum(l2_weights) > 0 else weights)
    if m.l2_hit_rate is not None:
        m.l2_hit_rate /= 100.0
    if not any(DRAM_READ in k.metrics or DRAM_WRITE in k.metrics for k in kernels):
        return m
    if op.modeled and op.bytes > 0:
        m.excess_ratio = m.dram_bytes / op.bytes
    if op.modeled and op.flops > 0:
        m.dram_intensity = op.flops / m.dram_bytes if m.dram_bytes > 0 else None
        m.l2_intensity = op.flops / m.l2_bytes if m.l2_bytes else None
    return m


def _weighted(kernels: list[NcuKernel], metric: str, weights: list[float]) -> float | None:
    pairs = [(k.metrics[metric], w) for k, w in zip(kernels, weights) if metric in k.metrics]
    total = sum(w for _, w in pairs)
    if not pairs or total <= 0:
        return None
    return sum(v * w for v, w in pairs) / total


def _totals(summary: NcuSummary, ops: list[OpRecord]) -> None:
    measured = [op for op in ops if op.measured is not None]
    summary.ops_measured = len(measured)
    summary.modelled_bytes = sum(op.bytes for op in measured if op.modeled)
    summary.dram_bytes = sum(op.measured.dram_bytes for op in measured)
    l2 = [op.measured.l2_bytes for op in measured if op.measured.l2_bytes is not None]
    summary.l2_bytes = sum(l2) if l2 else None
    summary.by_module = _groups(measured, lambda op: module_site(op.module))
    summary.by_op = _groups(measured, lambda op: op.name)
    if summary.kernels and summary.joined_share < 0.98:
        summary.notes.append(f"only {summary.kernels_joined} of {summary.kernels} ncu kernels matched a kernel of the "
                             "report's step: was ncu run on the same step (same shapes, same model)?")
    if summary.modelled_bytes and summary.dram_bytes < 0.95 * summary.modelled_bytes:
        summary.notes.append(
            f"measured DRAM traffic ({summary.dram_bytes / 1e9:.3g} GB) is below the modelled minimum "
            f"({summary.modelled_bytes / 1e9:.3g} GB): outputs that fit in L2 are not written back while their kernel "
            "runs (ncu flushes caches before each kernel), so DRAM writes undercount small outputs")


def module_site(module: str) -> str:
    """One name for the same code in every layer: 'model.layers.3.attn' -> 'model.layers.*.attn',
    'LlamaDecoderLayer_2.LlamaAttention_2' -> 'LlamaDecoderLayer*.LlamaAttention*'."""
    return _LAYER_INDEX.sub("*", module) if module else "(top level)"


def _groups(ops: list[OpRecord], key) -> list[TrafficGroup]:
    groups: dict[str, TrafficGroup] = {}
    hit_weight: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for op in ops:
        m = op.measured
        g = groups.setdefault(key(op), TrafficGroup(key(op)))
        g.ops += 1
        g.time_s += op.time_s
        g.modelled_bytes += op.bytes if op.modeled else 0.0
        g.dram_bytes += m.dram_bytes
        if m.l2_bytes is not None:
            g.l2_bytes = (g.l2_bytes or 0.0) + m.l2_bytes
            if m.l2_hit_rate is not None:
                hit_weight[g.name][0] += m.l2_hit_rate * m.l2_bytes
                hit_weight[g.name][1] += m.l2_bytes
    for g in groups.values():
        g.excess_ratio = g.dram_bytes / g.modelled_bytes if g.modelled_bytes > 0 else None
        num, den = hit_weight.get(g.name, (0.0, 0.0))
        g.l2_hit_rate = num / den if den > 0 else None
    return sorted(groups.values(), key=lambda g: -g.time_s)[:TOP_GROUPS]
