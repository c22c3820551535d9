"""Rules for reports of ONNX graphs (`roofline ort`, `roofline trace --onnx`): what the runtime's own graph costs.

Evidence is ``Report.extra["onnx"]["nodes"]``, one entry per op (by ``op.index``): the node's ONNX op type, the
provider or compute unit it ran on, and the unit the session asked for (``main_unit``).
- ort-fallback: nodes that ran on another unit than the session's (a CUDA or QNN session's CPU fallback), and the
  device copies (MemcpyToHost/FromHost) that the placement adds;
- ort-layout: layout conversions the graph runs (Transpose, the NCHWc transformer's ReorderInput/ReorderOutput);
- ort-cast: float precision casts between float dtypes (a half model's float32 islands);
- ort-unfused: chains of three or more memory-bound elementwise/normalisation nodes, each reading what the previous
  one wrote, that a fused kernel would read once and write once.
"""

from __future__ import annotations

from roofline.count.meta import dtype_itemsize
from roofline.count.onnx_ops import CASTS, DEVICE_COPIES, ELEMENTWISE, LAYOUT, NORMS
from roofline.doctor.evidence import roofline_time, severity_for, top_locations
from roofline.doctor.registry import register
from roofline.report import Finding, OpRecord, Report

MIN_CHAIN = 3
MAX_CHAINS = 5
FUSIBLE = frozenset(ELEMENTWISE) | NORMS


def _nodes(report: Report) -> list[tuple[OpRecord, dict]]:
    info = report.extra.get("onnx") if isinstance(report.extra, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("nodes"), list):
        return []
    nodes = info["nodes"]
    return [(op, nodes[op.index]) for op in sorted(report.ops, key=lambda o: o.index)
            if 0 <= op.index < len(nodes) and isinstance(nodes[op.index], dict)]


def _main_unit(report: Report) -> str:
    return str(report.extra.get("onnx", {}).get("main_unit", ""))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


@register("ort-fallback", "ONNX nodes that ran on another unit than the session's (CPU fallback), and their copies")
def fallback(report: Report) -> list[Finding]:
    main = _main_unit(report)
    nodes = _nodes(report)
    if not nodes or main in ("", "cpu"):
        return []
    off = [(op, n) for op, n in nodes if n.get("unit") != main]
    copies = [op for op, n in nodes if n.get("op_type") in DEVICE_COPIES]
    if not off and not copies:
        return []
    ops = [op for op, _ in off]
    time = sum(op.time_s for op in ops) + sum(op.time_s for op in copies if op not in ops)
    on_main = sum(roofline_time(report, op) for op in ops if op.modeled) if report.ceilings.has_roofs() else 0.0
    savings = max(time - on_main, 0.0)
    units = sorted({str(n.get("provider") or n.get("unit")) for _, n in off})
    kinds = sorted({str(n.get("op_type")) for _, n in off})
    return [Finding(
        rule="ort-fallback", category="placement",
        title=(f"{len(off)} node(s) ran on {', '.join(units) or 'another unit'} instead of the session's "
               f"{main.upper()} ({', '.join(kinds[:6])})" + (f", plus {len(copies)} device copies" if copies else "")
               + f": {_ms(time)}"),
        evidence={"nodes": len(off), "op_types": kinds, "providers": units, "copies": len(copies),
                  "time_s": time, "roofline_time_on_main_unit_s": on_main},
        locations=top_locations(ops + copies, limit=8), estimated_savings_s=savings,
        savings_method=("the fallback nodes' and copies' measured time, less the fallback nodes' roofline time on "
                        "the session's unit" if on_main else "the fallback nodes' and copies' measured time "
                        "(no roofs for the session's unit to subtract their own work)"),
        fix=("the provider has no kernel for these op types, dtypes or shapes: read ORT's node placement "
             "(SessionOptions.log_severity_level = 0 logs it), export with ops the provider supports (a newer "
             "opset, a static shape), or for QNN/HTP quantize the model (the HTP runs int8/int16 and float16) so it "
             "takes those layers"),
        severity=severity_for(report, savings),
    )]


def _simple(report: Report, rule: str, kinds: frozenset[str], what: str, fix: str, method: str,
            keep=lambda op, n: True) -> list[Finding]:
    found = [(op, n) for op, n in _nodes(report) if n.get("op_type") in kinds and op.bytes > 0 and keep(op, n)]
    if not found:
        return []
    ops = [op for op, _ in found]
    time = sum(op.time_s for op in ops)
    moved = sum(op.bytes for op in ops)
    counts: dict[str, int] = {}
    for _, n in found:
        counts[n["op_type"]] = counts.get(n["op_type"], 0) + 1
    listed = ", ".join(f"{k} x{v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    return [Finding(
        rule=rule, category="layout" if rule == "ort-layout" else "precision",
        title=f"{len(ops)} {what} nodes ({listed}) move {moved / 1e6:.3g} MB in {_ms(time)}",
        evidence={"nodes": len(ops), "op_types": counts, "bytes": moved, "time_s": time},
        locations=top_locations(ops, limit=8), estimated_savings_s=time, savings_method=method, fix=fix,
        severity=severity_for(report, time),
    )]


@register("ort-layout", "layout conversions in an ONNX graph: Transpose, NCHWc ReorderInput/ReorderOutput")
def layout(report: Report) -> list[Finding]:
    return _simple(
        report, "ort-layout", LAYOUT, "layout conversion",
        fix=("produce each tensor in the layout its consumer reads: for attention, let the runtime's fusion take the "
             "transposes (graph optimisation level all, or onnxruntime.transformers.optimizer for BERT/GPT graphs); "
             "for NCHWc reorders on the CPU, keep runs of NCHWc-capable ops (Conv, pooling, elementwise) unbroken, "
             "since ORT converts at every boundary"),
        method="the conversions' measured time, removed when producer and consumer agree on the layout")


def _float_cast(op: OpRecord, node: dict) -> bool:
    src = op.input_dtypes[0] if op.input_dtypes else ""
    dst = op.output_dtypes[0] if op.output_dtypes else ""
    return src != dst and all(d.startswith(("float", "bfloat")) for d in (src, dst))


@register("ort-cast", "precision casts between float dtypes in an ONNX graph")
def casts(report: Report) -> list[Finding]:
    return _simple(
        report, "ort-cast", CASTS, "float precision cast",
        fix=("export the model in one precision end to end (cast weights offline; with onnxconverter-common's "
             "float16 conversion use keep_io_types only at the graph's edges, and an op block list only for ops "
             "that need float32): each cast reads and writes the whole tensor"),
        method="the casts' measured time, removed when the graph stays in one precision", keep=_float_cast)


def _produced(op: OpRecord) -> set[tuple[int, ...]]:
    return {tuple(s) for s in op.output_shapes}


def find_chains(report: Report) -> list[list[OpRecord]]:
    chains: list[list[OpRecord]] = []
    chain: list[OpRecord] = []
    for op, node in _nodes(report):
        fusible = node.get("op_type") in FUSIBLE and op.modeled and op.bound in ("memory", "launch")
        if fusible and chain and any(tuple(s) in _produced(chain[-1]) for s in op.input_shapes):
            chain.append(op)
            continue
        if len(chain) >= MIN_CHAIN:
            chains.append(chain)
        chain = [op] if fusible else []
    if len(chain) >= MIN_CHAIN:
        chains.append(chain)
    return chains


@register("ort-unfused", "chains of memory-bound elementwise/normalisation ONNX nodes a fused kernel would merge")
def unfused(report: Report) -> list[Finding]:
    """One finding per pattern of op types (a transformer repeats its chains once per layer)."""
    bandwidth = report.ceilings.memory_bandwidth_bytes_per_s
    if bandwidth <= 0:
        return []
    patterns: dict[tuple[str, ...], list[list[OpRecord]]] = {}
    for chain in find_chains(report):
        patterns.setdefault(tuple(op.name.removeprefix("onnx::") for op in chain), []).append(chain)
    findings = []
    for kinds, chains in patterns.items():
        time = savings = fused = 0.0
        for chain in chains:
            first, last = chain[0], chain[-1]
            external = sum(_meta_bytes(s, d) for s, d in zip(first.input_shapes, first.input_dtypes))
            external += sum(_meta_bytes(s, d) for s, d in zip(last.output_shapes, last.output_dtypes))
            chain_time = sum(op.time_s for op in chain)
            time += chain_time
            fused += external
            savings += max(chain_time - external / bandwidth, 0.0)
        ops = [op for chain in chains for op in chain]
        times = f" x{len(chains)}" if len(chains) > 1 else ""
        findings.append(Finding(
            rule="ort-unfused", category="fusion",
            title=f"unfused chain of {len(kinds)} memory-bound nodes{times}: {' > '.join(kinds)}",
            evidence={"chains": len(chains), "first_chain": [op.module for op in chains[0]], "time_s": time,
                      "fused_bytes": fused, "bytes": sum(op.bytes for op in ops)},
            locations=top_locations(ops), estimated_savings_s=savings,
            savings_method="each chain's measured time less one read of its inputs and one write of its output at "
                           "the memory roof, summed over the chains of this pattern",
            fix=("let the runtime fuse it (graph optimisation level all; for transformer graphs "
                 "onnxruntime.transformers.optimizer creates SkipLayerNormalization, BiasGelu, FastGelu), or fuse it "
                 "before export (write the fused computation as one module or custom op)"),
            severity=severity_for(report, savings),
        ))
    findings.sort(key=lambda f: -f.estimated_savings_s)
    return findings[:MAX_CHAINS]


def _meta_bytes(shape: list[int], dtype: str) -> float:
    n = 1
    for d in shape:
        n *= d
    return float(n * dtype_itemsize(dtype))
