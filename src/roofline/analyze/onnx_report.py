"""A Report with one op per ONNX node, from an ONNX Runtime profile or AI Hub's per-layer results.

Each profiled node is a ``Layer``: its op type, where it ran (the execution provider or compute unit, folded to a
unit: ``cpu``, ``gpu`` or ``npu``), its time in every timed run, and its shapes (from the profile, else from the
ONNX model it is matched to by name). FLOPs and bytes come from count/onnx_ops.py (the aten formulas); each node is
judged against the roofs of the unit it ran on (``ceilings_by_unit``): a node that fell back to the CPU in a CUDA
or QNN session is judged against the CPU's roofs, not the accelerator's. Times are per-node medians over the timed
runs (warm-up runs, the first ``warmup`` model_run spans, are left out).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from roofline.analyze.integer_roofs import integer_roof_notes
from roofline.analyze.kernel_names import any_tf32
from roofline.analyze.ort_device_time import DeviceAttribution
from roofline.analyze.roofline import place_op, summarize
from roofline.capture.aihub_profile import HubProfile
from roofline.capture.onnx_graph import GraphNode, OnnxGraph, normalized_name
from roofline.capture.ort_profile import OrtProfile
from roofline.count.meta import TensorMeta
from roofline.count.onnx_ops import count_onnx_node
from roofline.count.onnx_quant import compute_dtype
from roofline.errors import RooflineError
from roofline.report import Ceilings, Environment, OpRecord, Report, Timing

UNITS = ("cpu", "gpu", "npu")
_GPU_PROVIDERS = ("CUDA", "Tensorrt", "ROCM", "MIGraphX", "Dml", "WebGpu", "CoreML")
MIN_MATCH_SHARE = 0.5


def unit_of(provider: str) -> str:
    """The unit an execution provider or AI Hub compute unit runs on."""
    text = provider.strip()
    upper = text.upper()
    if upper in ("CPU", "GPU", "NPU"):
        return upper.lower()
    if text.startswith("CPU"):
        return "cpu"
    if text.startswith("QNN") or upper in ("HTP", "DSP", "NNAPI") or text.startswith(("Nnapi", "VitisAI", "OpenVINO")):
        return "npu"
    if text.startswith(_GPU_PROVIDERS):
        return "gpu"
    return upper.lower() or "cpu"


@dataclass(slots=True)
class Layer:
    name: str
    op_type: str
    provider: str
    times_s: list[float]
    inputs: list[TensorMeta] | None = None
    outputs: list[TensorMeta] | None = None
    start_s: float | None = None
    device_time: bool = False
    kernel_names: list[str] = field(default_factory=list)

    @property
    def unit(self) -> str:
        return unit_of(self.provider)


@dataclass(slots=True)
class Timed:
    """What the profile says about the runs as a whole."""

    layers: list[Layer]
    method: str
    run_times_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def warmup_left_out(runs: int, warmup: int) -> int:
    """Runs left out as warm-up: ``warmup``, but never all of them."""
    return min(warmup, runs - 1) if runs > 1 else 0


def layers_from_ort(profile: OrtProfile, warmup: int, device: DeviceAttribution | None = None) -> Timed:
    """Per-node times over the runs after the first ``warmup`` (all runs when there are not more than that).

    A GPU node that launched kernels (ORT's own Kernel events, or ``device``: CUPTI's kernels joined to the nodes
    by ``attribute_device_time``) is timed by its kernels' summed durations; every other node by its host time."""
    runs = profile.runs
    skipped = warmup_left_out(len(runs), warmup)
    timed_runs = runs[skipped:]
    notes = list(profile.warnings)
    if skipped < warmup:
        notes.append(f"the profile holds {len(runs)} run(s): {skipped} left out as warm-up instead of {warmup}")
    on_device = {ev.name for run in timed_runs for ev in run if ev.kernels and unit_of(ev.provider) == "gpu"}
    # a node runs once per run; a node name seen several times in one run (a loop) is summed per run
    per_run: dict[str, list[float]] = defaultdict(list)
    first: dict[str, tuple] = {}
    kernel_names: dict[str, dict[str, None]] = defaultdict(dict)  # first-seen order, no repeats
    for r, run in enumerate(timed_runs):
        t0 = run[0].ts_us if run else 0.0
        sums: dict[str, float] = defaultdict(float)
        for ev in run:
            sums[ev.name] += ((ev.device_us or 0.0) if ev.name in on_device else ev.dur_us) * 1e-6
            if ev.name not in first:
                first[ev.name] = (r, ev, (ev.ts_us - t0) * 1e-6)
            kernel_names[ev.name].update(dict.fromkeys(ev.kernel_names))
        for name, s in sums.items():
            per_run[name].append(s)
    order = sorted(first, key=lambda n: (first[n][0], first[n][1].ts_us))
    layers = []
    for name in order:
        _, ev, start = first[name]
        times = per_run[name] + [0.0] * (len(timed_runs) - len(per_run[name]))
        layers.append(Layer(name, ev.op_type, ev.provider, times, ev.inputs, ev.outputs, start,
                            device_time=name in on_device, kernel_names=list(kernel_names[name])))
    run_times = [d * 1e-6 for d in profile.run_durations_us[skipped:]]
    method = (f"ONNX Runtime profiler (per-node kernel_time events): median of {len(timed_runs)} timed run(s) "
              f"after {skipped} warm-up run(s)")
    if on_device and device is not None:
        method += ("; GPU nodes that launched kernels: DEVICE time, the summed durations of their CUDA kernels, "
                   "memcpys and memsets from CUPTI via torch.profiler (each joined by correlation id to its launch "
                   "call, placed in the node whose host interval holds it); all other nodes: ORT's host time")
    elif on_device:
        method += ("; GPU nodes that launched kernels: DEVICE time, the CUDA kernels ORT's CUPTI profiler wrote "
                   "after each node (Kernel events); all other nodes: ORT's host time")
    host_gpu = [layer for layer in layers if layer.unit == "gpu" and not layer.device_time]
    if device is not None and any(layer.unit == "gpu" for layer in layers):
        notes.extend(_device_notes(device, skipped))
        if not on_device:
            notes.append("the torch.profiler trace held no kernel launched inside a GPU node: GPU nodes keep ORT's "
                         "host time (see the launches counted above)")
    if on_device and host_gpu:
        kinds = sorted({layer.op_type for layer in host_gpu})
        notes.append(f"{len(host_gpu)} GPU node(s) launched no kernel ({', '.join(kinds[:8])}"
                     f"{', ...' if len(kinds) > 8 else ''}; typically shape and view ops, which move no data): their time is "
                     "ORT's host time")
    return Timed(layers, method, run_times, notes)


def _device_notes(device: DeviceAttribution, skipped: int) -> list[str]:
    kernel = device.kernel_us_per_run[skipped:]
    share = device.attributed_share(skipped)
    per_run = statistics.median(kernel) if kernel else 0.0
    notes = [f"device times: CUPTI (torch.profiler) saw {per_run / 1e3:.4g} ms of GPU kernels and copies per run "
             f"(median); {share if share is not None else 0:.1%} of it attributed to nodes, the rest "
             "launched between nodes (ORT's input and output copies) and counted in no node"]
    how = ("the clocks' own offset (ORT's profiling start vs Kineto's base time), which every run's anchor allows"
           if device.fitted_by == "clocks" else
           f"the offset within the band the anchors allow that puts the most launches inside nodes (plateau "
           f"{device.plateau_us:.1f} us wide)")
    notes.append(f"clock alignment: each ORT model_run anchored inside its record_function range (start offsets "
                 f"within {device.residual_us:.1f} us of their median); offset used: {how}; "
                 f"{device.launches_in_nodes} of {device.launches} launches fall inside a GPU node")
    if device.outside_runs_us > 0:
        notes.append(f"{device.outside_runs_us / 1e3:.3g} ms of device events outside every run (not ORT's): "
                     "left out")
    if device.unlaunched:
        notes.append(f"{device.unlaunched} device event(s) ({device.unlaunched_us / 1e3:.3g} ms over all runs) had no "
                     "launch call in the trace: counted in their run's kernel time, attributed to no node")
    return notes + device.notes


def layers_from_aihub(hub: HubProfile) -> Timed:
    layers = [Layer(layer.name, layer.op_type, layer.compute_unit or "NPU", [layer.time_us * 1e-6])
              for layer in hub.layers]
    run = [hub.inference_time_us * 1e-6] if hub.inference_time_us else []
    method = ("Qualcomm AI Hub profile job (execution_detail: per-layer execution_time as AI Hub reports it, its "
              "own aggregate over the job's profiler iterations)")
    return Timed(layers, method, run)


def match_graph(layers: list[Layer], graph: OnnxGraph) -> tuple[dict[str, GraphNode], float]:
    """Each layer's ONNX node, by exact or normalised name; and the share of layers that belong to this model (by
    name, or by op type and a shape the model holds, for nodes ORT renamed when fusing)."""
    exact = graph.by_name()
    loose = graph.by_normalized_name()
    matched: dict[str, GraphNode] = {}
    shapes = {tuple(m.shape) for n in graph.nodes for m in n.inputs + n.outputs if m is not None}
    op_types = {n.op_type for n in graph.nodes}
    belongs = 0
    for layer in layers:
        node = exact.get(layer.name) or loose.get(normalized_name(layer.name))
        if node is not None:
            matched[layer.name] = node
            belongs += 1
            continue
        known = [m for m in (layer.inputs or []) + (layer.outputs or []) if m.ndim >= 1]
        if any(tuple(m.shape) in shapes for m in known) and (layer.op_type in op_types or _fused(layer.op_type)):
            belongs += 1
    return matched, belongs / len(layers) if layers else 0.0


def _compiled_subgraph(layer: Layer) -> bool:
    """A node an EP compiled from many (QNN, TensorRT, OpenVINO): ORT names it after the provider."""
    return "ExecutionProvider_" in layer.name or layer.op_type.startswith(("QNN", "TRTKernel", "OpenVINO"))


def _fused(op_type: str) -> bool:
    return op_type.startswith(("Fused", "Skip", "Bias", "Reorder", "Memcpy", "Attention", "MultiHead", "Embed",
                               "QuickGelu", "FastGelu", "Gelu"))


TF32_CAPABLE = frozenset({"MatMul", "FusedMatMul", "Gemm", "FusedGemm", "Conv", "FusedConv", "ConvTranspose",
                          "NhwcConv", "NhwcFusedConv", "Attention", "MultiHeadAttention"})


def roof_dtype(op_type: str, dtype: str, kernel_names: list[str]) -> str:
    """A float32 product whose kernels ran on TF32 tensor cores (ORT's CUDA provider allows TF32 by default,
    provider option use_tf32) is judged against the TF32 roof, as PyTorch's are (analyze/pipeline.py); the kernel
    names are CUPTI's, known only for nodes timed on the device."""
    if dtype == "float32" and op_type in TF32_CAPABLE and any_tf32(kernel_names):
        return "tfloat32"
    return dtype


def _dtype(metas: list[TensorMeta]) -> str:
    floats = [m.dtype for m in metas if m.dtype.startswith(("float", "bfloat"))]
    return floats[0] if floats else (metas[0].dtype if metas else "")


def build_onnx_report(timed: Timed, graph: OnnxGraph | None, ceilings_by_unit: dict[str, Ceilings], main_unit: str,
                      *, kind: str, workload: str, source: str, requested: str = "",
                      environment: Environment | None = None, check_model: bool = False) -> Report:
    """The undiagnosed Report of profiled ONNX nodes. ``check_model``: refuse a profile that does not belong to
    ``graph`` (fewer than half its nodes found in it)."""
    matched: dict[str, GraphNode] = {}
    if graph is not None:
        matched, share = match_graph(timed.layers, graph)
        if check_model and share < MIN_MATCH_SHARE:
            raise RooflineError(f"the profile does not belong to {graph.path}: only {share:.0%} of its "
                                f"{len(timed.layers)} nodes are found in the model (by name, or by op type and "
                                "shape); pass the ONNX model the profile was recorded with")
    ops: list[OpRecord] = []
    nodes_info: list[dict] = []
    for i, layer in enumerate(timed.layers):
        node = matched.get(layer.name)
        inputs = layer.inputs if layer.inputs is not None else (node.inputs if node else None)
        if node is not None and layer.inputs is not None and node.op_type == layer.op_type:
            inputs = aligned_inputs(layer.inputs, node.inputs, node.absent_inputs)
        outputs = layer.outputs if layer.outputs is not None else (node.outputs if node else None)
        op_type = layer.op_type or (node.op_type if node else "")
        if node is not None and layer.inputs is None and node.op_type != op_type and op_type:
            op_type = node.op_type  # AI Hub's layer type spelling (Conv2d, ...): the model's op type counts
        attrs = node.attrs if node is not None and node.op_type == op_type else {}
        if inputs is None or outputs is None or any(m is None for m in outputs):
            why = ("no shapes: the profile records none and the layer matches no node of the ONNX model"
                   if node is None else "no shapes: ONNX shape inference left this node's shapes unknown "
                                        "(bind dynamic dimensions with --inputs)")
            cost, aten = count_onnx_node("", [], []), ""
            cost.note = why
        else:
            cost, aten = count_onnx_node(op_type, inputs, outputs, attrs, node.domain if node else "")
        if not cost.modeled and _compiled_subgraph(layer):
            cost.note = (f"{layer.provider} ran a compiled subgraph as this one node: its ONNX nodes are timed "
                         "together; for per-op times record with the provider's detailed profiling (QNN: provider "
                         "option profiling_level=detailed) or use AI Hub's per-layer profile")
        ins = [m for m in (inputs or []) if m is not None]
        outs = [m for m in (outputs or []) if m is not None]
        dtype = compute_dtype(op_type, ins) or roof_dtype(op_type, _dtype(ins), layer.kernel_names)
        op = OpRecord(
            name=f"onnx::{op_type or 'unknown'}", module=layer.name, dtype=dtype,
            flops=cost.flops if cost.modeled else 0.0, bytes=cost.bytes if cost.modeled else 0.0,
            time_s=statistics.median(layer.times_s) if layer.times_s else 0.0, modeled=cost.modeled,
            input_shapes=[list(m.shape) for m in ins], input_dtypes=[m.dtype for m in ins],
            output_shapes=[list(m.shape) for m in outs], output_dtypes=[m.dtype for m in outs],
            kernels=layer.kernel_names or ([layer.provider] if layer.provider else []), start_s=layer.start_s,
            index=i, count=1,
        )
        unit = layer.unit
        place_op(op, ceilings_by_unit.get(unit) or Ceilings(device=unit, source="none"))
        ops.append(op)
        nodes_info.append({"node": layer.name, "op_type": op_type, "provider": layer.provider, "unit": unit,
                           "aten": aten, "note": cost.note, "matched": node is not None,
                           "time": "device" if layer.device_time else "host"})
    summary = summarize(ops, timing_method=timed.method)
    summary.wall_time_s = statistics.median(timed.run_times_s) if timed.run_times_s else None
    summary.notes.extend(timed.notes)
    if summary.wall_time_s:
        summary.notes.append(f"node times sum to {summary.total_time_s / summary.wall_time_s:.0%} of the median run's "
                             "wall time (the rest: the executor between nodes, input/output copies)")
    if any(layer.unit == "gpu" for layer in timed.layers) and "CUPTI" not in timed.method:
        summary.notes.append("GPU nodes: ORT's profiler times a node's Compute call on the host, which enqueues its "
                             "kernels asynchronously unless the provider synchronises: a GPU node's time can be its "
                             "launch cost, not its kernels' (compare the sum with the run's wall time)")
    summary.notes.extend(_unit_notes(ops, nodes_info, ceilings_by_unit, main_unit))
    int_notes, int_roofs = integer_roof_notes(
        ops, lambda i: (nodes_info[i]["unit"], ceilings_by_unit.get(nodes_info[i]["unit"])),
        lambda i: nodes_info[i]["op_type"], summary.total_time_s)
    summary.notes.extend(int_notes)
    for i, roof in int_roofs.items():
        nodes_info[i]["roof_dtype"] = roof
    unmodelled = _unmodelled_shares(ops, nodes_info, summary.total_time_s)
    if unmodelled:
        listed = ", ".join(f"{t} {s:.1%}" for t, s in sorted(unmodelled.items(), key=lambda kv: -kv[1]))
        summary.notes.append(f"unmodelled ONNX nodes (no formula), share of node time: {listed}")
    report = Report(kind=kind, workload=workload, environment=environment or Environment(),
                    ceilings=ceilings_by_unit.get(main_unit) or Ceilings(device=main_unit, source="none"),
                    ops=ops, summary=summary, steps=1)
    if timed.run_times_s:
        report.profiled_step_time = Timing.from_samples(timed.run_times_s,
                                                        f"{source}: whole runs under the profiler (model_run spans)")
    report.extra["onnx"] = {
        "source": source, "model": graph.path if graph else None, "requested_provider": requested,
        "main_unit": main_unit, "nodes": nodes_info, "unmodelled_share_by_op_type": unmodelled,
        "roofs_by_unit": {u: {"device_name": c.device_name, "source": c.source, "has_roofs": c.has_roofs(),
                              "memory_bandwidth_bytes_per_s": c.memory_bandwidth_bytes_per_s,
                              "peak_flops_per_s": dict(c.peak_flops_per_s), "method": c.method}
                          for u, c in ceilings_by_unit.items()},
        "graph_notes": graph.notes if graph else [],
    }
    return report


def aligned_inputs(profiled: list[TensorMeta], model: list[TensorMeta | None],
                   absent: tuple[int, ...] = ()) -> list[TensorMeta | None]:
    """The node's inputs at the positions its op type defines. ORT's profile lists only the inputs it was given:
    it skips optional inputs left out (empty names in the model: ``absent``), and constant inputs ORT prepacked
    (weights). Absent inputs become None at their positions; when the profile holds fewer inputs than the model's
    present ones, the model's inputs are taken, those whose shape the model leaves unknown (an activation after a
    layout change) from the profile at the same position, up to the first position where the two lists part (the
    prepacked input). A profile with more inputs than the model is kept as it is."""
    present = [i for i in range(len(model)) if i not in absent]
    if len(profiled) > len(present):
        return list(profiled)
    known = [model[i] for i in present]
    if len(profiled) == len(present):
        merged: list[TensorMeta | None] = list(profiled)
    else:
        gap = next((i for i, (p, m) in enumerate(zip(profiled, known))
                    if m is not None and (p is None or tuple(p.shape) != tuple(m.shape))), len(profiled))
        merged = [m if m is not None else (profiled[i] if i < gap else None) for i, m in enumerate(known)]
    out: list[TensorMeta | None] = [None] * len(model)
    for position, meta in zip(present, merged):
        out[position] = meta
    return out


def _unmodelled_shares(ops: list[OpRecord], info: list[dict], total: float) -> dict[str, float]:
    shares: dict[str, float] = defaultdict(float)
    for op, node in zip(ops, info):
        if not op.modeled:
            shares[node["op_type"] or "unknown"] += op.time_s / total if total else 0.0
    return dict(shares)


def _unit_notes(ops: list[OpRecord], info: list[dict], roofs: dict[str, Ceilings], main: str) -> list[str]:
    by_unit: dict[str, float] = defaultdict(float)
    for op, node in zip(ops, info):
        by_unit[node["unit"]] += op.time_s
    total = sum(by_unit.values())
    notes = []
    for unit, t in sorted(by_unit.items(), key=lambda kv: -kv[1]):
        c = roofs.get(unit)
        judged = (f"judged against {c.device_name or unit} ({c.source})" if c is not None and c.has_roofs()
                  else "no roofs known for it: bound unknown" + (f" ({c.method})" if c is not None and c.method else ""))
        notes.append(f"{unit.upper()}: {t / total:.1%} of node time" + (" (the session's unit)" if unit == main else "")
                     + f"; {judged}" if total else f"{unit.upper()}: {judged}")
    return notes
