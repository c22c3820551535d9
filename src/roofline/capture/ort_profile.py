"""Reading ONNX Runtime's profile (SessionOptions.enable_profiling): a Chrome-trace JSON list of events.

Per run, ORT writes a ``model_run`` Session event and, per node executed, a ``Node`` event named
``<node name>_kernel_time`` whose args carry ``op_name``, ``provider``, ``input_type_shape`` and
``output_type_shape`` (lists of ``{dtype: shape}``). Older versions add ``_fence_before``/``_fence_after`` events
of the same node (skipped here). A GPU build with ORT's CUDA profiler (CUPTI; onnxruntime PR 8406) adds ``Kernel``
events, each written after the Node event of the node that launched it (PR 9567): their durations are that node's
device time (``NodeEvent.device_us``), where a Node event's own duration on a GPU provider is the host's launch
call. Nothing here imports onnxruntime: profiles recorded on another machine (a phone
through the QNN provider, a GPU server) are read the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from roofline.count.meta import TensorMeta
from roofline.count.onnx_ops import onnx_dtype
from roofline.errors import RooflineError
from roofline.io import read_maybe_gzip

KERNEL_SUFFIX = "_kernel_time"


@dataclass(slots=True)
class NodeEvent:
    """One node's execution in one run."""

    name: str
    op_type: str
    provider: str
    dur_us: float
    ts_us: float
    inputs: list[TensorMeta] | None
    outputs: list[TensorMeta] | None
    node_index: int | None = None
    device_us: float | None = None
    kernels: int = 0
    kernel_names: list[str] = field(default_factory=list)  # distinct, in launch order (CUPTI's, when joined)


@dataclass(slots=True)
class OrtProfile:
    path: str
    runs: list[list[NodeEvent]]
    run_durations_us: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    run_spans_us: list[tuple[float, float]] = field(default_factory=list)  # each run's model_run (start, end)

    @property
    def providers(self) -> set[str]:
        return {e.provider for run in self.runs for e in run}


def _metas(value: object) -> list[TensorMeta] | None:
    """ORT's ``[{"float": [1, 3, 224, 224]}, ...]`` -> TensorMeta list; None when absent or malformed."""
    if not isinstance(value, list):
        return None
    metas: list[TensorMeta] = []
    for item in value:
        if not isinstance(item, dict) or len(item) != 1:
            return None
        (dtype, shape), = item.items()
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            return None
        metas.append(TensorMeta(tuple(shape), onnx_dtype(dtype)))
    return metas


def parse_ort_events(events: object, path: str) -> OrtProfile:
    """Node events grouped into runs (by the ``model_run`` events' spans; one run when the profile has none)."""
    if not isinstance(events, list):
        raise RooflineError(f"{path}: not an ONNX Runtime profile (expected a JSON list of trace events)")
    runs_spans: list[tuple[float, float]] = []
    nodes: list[NodeEvent] = []
    last: NodeEvent | None = None
    for ev in events:
        if not isinstance(ev, dict):
            continue
        cat, name = ev.get("cat"), str(ev.get("name", ""))
        if cat == "Session" and name == "model_run":
            ts, dur = float(ev.get("ts", 0)), float(ev.get("dur", 0))
            runs_spans.append((ts, ts + dur))
        elif cat == "Node" and name.endswith(KERNEL_SUFFIX):
            args = ev.get("args") or {}
            if not isinstance(args, dict):
                continue
            index = args.get("node_index")
            nodes.append(NodeEvent(
                name=name[: -len(KERNEL_SUFFIX)], op_type=str(args.get("op_name", "")),
                provider=str(args.get("provider", "")), dur_us=float(ev.get("dur", 0)), ts_us=float(ev.get("ts", 0)),
                inputs=_metas(args.get("input_type_shape")), outputs=_metas(args.get("output_type_shape")),
                node_index=int(index) if str(index or "").isdigit() else None,
            ))
            last = nodes[-1]
        elif cat == "Kernel" and last is not None:
            last.device_us = (last.device_us or 0.0) + float(ev.get("dur", 0))
            last.kernels += 1
    if not nodes:
        raise RooflineError(f"{path}: no node events (cat 'Node', '*_kernel_time') in this profile: record it with "
                            "SessionOptions.enable_profiling = True and run the model at least once")
    nodes.sort(key=lambda e: e.ts_us)
    runs_spans.sort()
    profile = OrtProfile(path, [], [end - start for start, end in runs_spans], run_spans_us=list(runs_spans))
    if not runs_spans:
        profile.runs = [nodes]
        profile.warnings.append("no model_run events: all node events taken as one run")
        return profile
    buckets: list[list[NodeEvent]] = [[] for _ in runs_spans]
    starts = [s for s, _ in runs_spans]
    outside = 0
    import bisect

    for node in nodes:
        i = bisect.bisect_right(starts, node.ts_us) - 1
        if i >= 0 and node.ts_us <= runs_spans[i][1]:
            buckets[i].append(node)
        else:
            outside += 1
    profile.runs = [b for b in buckets if b]
    profile.run_durations_us = [d for d, b in zip(profile.run_durations_us, buckets) if b]
    profile.run_spans_us = [s for s, b in zip(runs_spans, buckets) if b]
    if outside:
        profile.warnings.append(f"{outside} node events outside any model_run were left out")
    return profile


def read_ort_profile(path: str | Path) -> OrtProfile:
    """An ORT profile file (.json or .json.gz); one line and exit 2 (RooflineError) when it is not one or is cut."""
    raw = read_maybe_gzip(path, "ONNX Runtime profile", json=True)
    try:
        events = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RooflineError(f"cannot parse ONNX Runtime profile {path}: {exc} (is the file cut short?)") from None
    return parse_ort_events(events, str(path))
