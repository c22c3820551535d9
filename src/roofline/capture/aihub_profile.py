"""Reading a Qualcomm AI Hub profile job's results (``ProfileJob.download_profile()`` in the qai-hub client,
saved as JSON): ``execution_summary`` (``estimated_inference_time`` in microseconds, ...) and
``execution_detail``, one entry per layer with its ``name``, ``type``, ``compute_unit`` (NPU, GPU or CPU) and
``execution_time`` (microseconds). Layer shapes are not part of it: FLOPs and bytes come from the ONNX model the
layers are matched to by name (capture/onnx_graph.py).

Checked against Qualcomm's own reader, quic/ai-hub-models' scorecard jobs (qai_hub_models/scorecard): the dict
has ``execution_summary["estimated_inference_time"]`` (microseconds: they take 1e6 / it as throughput),
``execution_summary["inference_memory_peak_range"]`` and ``execution_detail``, a list whose entries'
``compute_unit`` is "NPU", "GPU" or "CPU". The per-layer ``name``, ``type`` and ``execution_time`` keys come from
AI Hub's documentation of the profile page and are not confirmed by code we could read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError
from roofline.io import read_maybe_gzip


@dataclass(slots=True)
class HubLayer:
    name: str
    op_type: str
    compute_unit: str
    time_us: float
    index: int


@dataclass(slots=True)
class HubProfile:
    path: str
    layers: list[HubLayer]
    inference_time_us: float | None = None
    summary: dict[str, Any] = field(default_factory=dict)


def is_aihub_profile(data: object) -> bool:
    return isinstance(data, dict) and "execution_detail" in data


def parse_aihub_profile(data: object, path: str) -> HubProfile:
    if not is_aihub_profile(data):
        raise RooflineError(f"{path}: not an AI Hub profile (no execution_detail)")
    detail = data["execution_detail"]
    if not isinstance(detail, list) or not detail:
        raise RooflineError(f"{path}: the AI Hub profile's execution_detail holds no layers (profile the model "
                            "with per-layer detail on a runtime that reports it)")
    layers: list[HubLayer] = []
    for i, entry in enumerate(detail):
        if not isinstance(entry, dict) or "execution_time" not in entry or "name" not in entry:
            raise RooflineError(f"{path}: execution_detail[{i}] lacks name or execution_time")
        try:
            time_us = float(entry["execution_time"])
        except (TypeError, ValueError):
            raise RooflineError(f"{path}: execution_detail[{i}].execution_time is not a number") from None
        layers.append(HubLayer(str(entry["name"]), str(entry.get("type", "")),
                               str(entry.get("compute_unit", "")).upper(), max(time_us, 0.0), i))
    summary = data.get("execution_summary") if isinstance(data.get("execution_summary"), dict) else {}
    total = summary.get("estimated_inference_time")
    return HubProfile(str(path), layers, float(total) if isinstance(total, (int, float)) else None, dict(summary))


def read_profile_json(path: str | Path) -> object:
    """A profile file's JSON (ORT's event list or AI Hub's results); one line and exit 2 when it is cut short."""
    raw = read_maybe_gzip(path, "profile", json=True)
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RooflineError(f"cannot parse profile {path}: {exc} (is the file cut short?)") from None
