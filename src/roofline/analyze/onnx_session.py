"""The two ways to an ONNX report: run a model under ONNX Runtime here (``analyze_ort_model``, `roofline ort`), or
read a profile recorded elsewhere, ORT's or Qualcomm AI Hub's (``analyze_onnx_profile``, `roofline trace --onnx`).

Roofs per unit: a run here takes this machine's measured ceilings (``--ceilings FILE`` for the session's unit), the
CPU's too when nodes fell back to it. On the CUDA provider with torch (CUDA) in the process, the runs are also
recorded under torch.profiler and each GPU node is timed by its kernels (analyze/ort_device_time.py), not by ORT's
host-side Compute call. A profile from elsewhere is never judged against this machine: its roofs come
from ``--ceilings FILE`` (for its main unit) or the datasheet of ``--device NAME`` (a GPU, or a Snapdragon SoC
whose CPU, GPU and NPU share one DRAM roof).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from roofline.analyze.onnx_report import (Timed, build_onnx_report, layers_from_aihub, layers_from_ort,
                                          unit_of, warmup_left_out)
from roofline.analyze.ort_device_time import DeviceAttribution, attribute_device_time
from roofline.capture.aihub_profile import is_aihub_profile, parse_aihub_profile, read_profile_json
from roofline.capture.onnx_graph import OnnxGraph, load_onnx_graph
from roofline.capture.ort_profile import OrtProfile, parse_ort_events
from roofline.device.datasheet import datasheet_refusal, lookup_datasheet, lookup_soc, with_datasheet_cache
from roofline.errors import RooflineError
from roofline.io import read_maybe_gzip
from roofline.report import Ceilings, Environment, Report

ASSUMED_LAUNCH_S = 5e-6


def analyze_ort_model(model: str, *, provider: str = "cpu", inputs: str | None = None, warmup: int = 3,
                      iters: int = 10, opt_level: str = "all", ceilings_file: str | None = None,
                      threads: int | None = None, progress=lambda msg: None) -> Report:
    """Run ``model`` under ONNX Runtime with profiling, then build its undiagnosed Report."""
    import tempfile

    from roofline.capture.ort_profile import read_ort_profile
    from roofline.capture.ort_run import parse_inputs_spec, run_profiled

    if not Path(model).is_file():
        raise RooflineError(f"ONNX model not found: {model}")
    parse_inputs_spec(inputs)  # a bad spec is refused before any work
    with tempfile.TemporaryDirectory(prefix="roofline-ort-") as tmp:
        progress(f"running {Path(model).name} under ONNX Runtime ({warmup} warm-up + {iters} timed runs)")
        run = run_profiled(model, provider, inputs, warmup=warmup, iters=iters, opt_level=opt_level,
                           threads=threads, workdir=tmp)
        profile = read_ort_profile(run.profile_path)
        graph = _optimized_graph(run.optimized_model, model, parse_inputs_spec(inputs)[1])
        device, device_note = _device_times(run, profile)
        timed = layers_from_ort(profile, warmup, device)
    if device_note:
        timed.notes.append(device_note)
    main = unit_of(run.provider)
    units = {layer.unit for layer in timed.layers} | {main}
    ceilings = {}
    for unit in sorted(units):
        progress(f"ceilings of the {unit.upper()} (measured once, cached)")
        ceilings[unit] = _this_machine(unit, ceilings_file if unit == main else None)
    timed.notes.extend(run.notes)
    env = Environment.capture(ceilings[main].device_name)
    report = build_onnx_report(timed, graph, ceilings, main, kind="ort", workload=Path(model).name,
                               source="onnxruntime", requested=run.provider, environment=env)
    report.extra["onnx"].update({
        "onnxruntime_version": run.ort_version, "optimization_level": run.opt_level, "inputs": run.inputs,
        "warmup_runs": run.warmup, "timed_runs": run.iters, "providers_available": run.providers_available,
        "intra_op_threads": run.threads,
    })
    if device is not None:
        report.extra["onnx"]["device_time"] = device.as_dict(warmup_left_out(len(profile.runs), warmup))
    report.summary.notes.insert(0, f"ONNX Runtime {run.ort_version}, {run.provider}, graph optimisation level "
                                   f"{run.opt_level}; inputs " + ", ".join(f"{k} {'x'.join(map(str, s))} {d}"
                                                                          for k, (s, d) in run.inputs.items()))
    return report


def _device_times(run, profile: OrtProfile) -> tuple[DeviceAttribution | None, str | None]:
    """GPU nodes' device times from the torch.profiler trace of the same runs; else why the host times stay."""
    if run.device_trace is None:
        return None, run.device_trace_why_not
    if any(ev.kernels for r in profile.runs for ev in r):
        return None, None  # ORT's own CUPTI profiler (a build with it) already joined each node's kernels
    try:
        data = json.loads(read_maybe_gzip(run.device_trace, "torch.profiler trace", json=True))
        events = data.get("traceEvents", []) if isinstance(data, dict) else data
        clock = None
        if run.profiling_start_ns and isinstance(data, dict):
            base = data.get("baseTimeNanoseconds", 0)
            clock = (run.profiling_start_ns - (base if isinstance(base, int) else 0)) / 1e3
        return attribute_device_time(profile, events, gpu_node=lambda ev: unit_of(ev.provider) == "gpu",
                                     clock_offset_us=clock), None
    except (RooflineError, ValueError) as exc:
        return None, f"no device times ({exc}): GPU nodes keep ORT's host times"


def _optimized_graph(optimized: Path | None, model: str, dims: dict[str, int]) -> OnnxGraph | None:
    """The graph ORT ran (its fused nodes' attributes: activation, transposes), else the model as given."""
    for path in (optimized, model):
        if path is None:
            continue
        try:
            return load_onnx_graph(path, dims)
        except RooflineError:
            continue
    return None


def _this_machine(unit: str, ceilings_file: str | None) -> Ceilings:
    from roofline.device.ceilings import ceilings_for_run
    from roofline.device.resolve import resolve_device

    device = {"cpu": "cpu", "gpu": "cuda"}.get(unit)
    if device is None:
        return Ceilings(device=unit, source="none", method=f"no {unit.upper()} roofs on this machine")
    return ceilings_for_run(resolve_device(device), ceilings_file)


def analyze_onnx_profile(path: str, model: str, *, ceilings_file: str | None = None, device: str | None = None,
                         inputs: str | None = None, warmup: int = 1) -> Report:
    """A profile from elsewhere (ORT's JSON, or AI Hub's per-layer results) against the ONNX model it ran."""
    from roofline.capture.ort_run import parse_inputs_spec

    if device and lookup_soc(device) is None and lookup_datasheet(device) is None:
        refusal = datasheet_refusal(device)
        raise RooflineError(f"--device {device!r}: " + (f"no datasheet on purpose: {refusal}; pass --ceilings FILE"
                                                         if refusal else
                                                         "no datasheet by that name (Snapdragon 8 Gen 2, 8 Gen 3 or "
                                                         "8 Elite; Samsung Galaxy S23/S24/S25; a GPU such as 'H100 "
                                                         "SXM'); or pass --ceilings FILE"))
    data = read_profile_json(path)
    shapes, dims = parse_inputs_spec(inputs)
    graph = load_onnx_graph(model, {**dims, **_dims_from_shapes(model, shapes)})
    if is_aihub_profile(data):
        timed: Timed = layers_from_aihub(parse_aihub_profile(data, path))
        source = "Qualcomm AI Hub"
    else:
        timed = layers_from_ort(parse_ort_events(data, path), warmup)
        source = "onnxruntime (recorded elsewhere)"
    time_by_unit: dict[str, float] = defaultdict(float)
    for layer in timed.layers:
        time_by_unit[layer.unit] += sum(layer.times_s)
    main = max(time_by_unit, key=time_by_unit.get) if time_by_unit else "cpu"
    ceilings = {unit: _elsewhere(unit, unit == main, ceilings_file, device) for unit in time_by_unit}
    env = Environment(device_name=device or "", unknown=["torch_version", "python_version", "platform", "hostname"])
    report = build_onnx_report(timed, graph, ceilings, main, kind="trace", workload=Path(path).name,
                               source=source, environment=env, check_model=True)
    report.summary.notes.insert(0, f"{source} profile {Path(path).name} against {Path(model).name}; roofs: "
                                   + (f"--ceilings {ceilings_file} for the {main.upper()}" if ceilings_file else
                                      f"datasheet of {device}" if device else "none given (--ceilings or --device)"))
    return report


def _dims_from_shapes(model: str, shapes: dict[str, list[int]]) -> dict[str, int]:
    """Named dimensions bound by per-input shapes (``x=1x3x224x224`` binds x's symbolic dims)."""
    if not shapes:
        return {}
    graph = load_onnx_graph(model)
    dims: dict[str, int] = {}
    for name, (declared, _) in graph.inputs.items():
        for d, size in zip(declared, shapes.get(name, [])):
            if isinstance(d, str):
                dims[d] = size
    return dims


def _elsewhere(unit: str, main: bool, ceilings_file: str | None, device: str | None) -> Ceilings:
    from roofline.device.cache import load_ceilings

    if main and ceilings_file:
        return load_ceilings(ceilings_file)
    soc = lookup_soc(device)
    if soc is not None:
        return Ceilings(device=unit, device_name=f"{soc.name} {unit.upper()}",
                        memory_bandwidth_bytes_per_s=soc.memory_bandwidth_bytes_per_s,
                        peak_flops_per_s=dict(soc.peak_flops_per_s), launch_overhead_s=0.0, datasheet=soc,
                        source="datasheet", method=f"datasheet of the {soc.name} ({soc.source})")
    sheet = lookup_datasheet(device) if unit == "gpu" else None
    if sheet is not None:
        return with_datasheet_cache(Ceilings(
            device="cuda", device_name=sheet.name, memory_bandwidth_bytes_per_s=sheet.memory_bandwidth_bytes_per_s,
            peak_flops_per_s=dict(sheet.peak_flops_per_s), launch_overhead_s=ASSUMED_LAUNCH_S, datasheet=sheet,
            source="datasheet", method=f"datasheet peaks of the {sheet.name} ({sheet.source})"))
    why = (f"no roofs for the {unit.upper()}: " + (f"{device!r} has no datasheet entry for it; " if device else "")
           + "pass --ceilings FILE (`roofline ceilings --json FILE` on that machine, or by hand) or --device NAME")
    return Ceilings(device=unit, source="none", method=why)
