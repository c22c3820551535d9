"""Turning a user's device string into a torch.device, with errors a user can act on."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from roofline.device.host import cpu_name
from roofline.errors import RooflineError

_DEVICE_RE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def resolve_device(spec: str | torch.device | None = None) -> torch.device:
    """cpu, cuda or cuda:N; None picks cuda when present, else cpu."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    if spec is None or spec == "":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    match = _DEVICE_RE.match(spec.strip().lower())
    if not match:
        raise RooflineError(f"unknown device {spec!r}: use cpu, cuda or cuda:N")
    kind, index = match.group(1), match.group(2)
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RooflineError(f"device {spec!r} asked for, but CUDA is not available here: use --device cpu")
    count = torch.cuda.device_count()
    idx = int(index) if index is not None else torch.cuda.current_device()
    if idx >= count:
        raise RooflineError(f"device {spec!r} asked for, but only {count} CUDA device(s) exist (cuda:0..cuda:{count - 1})")
    return torch.device("cuda", idx)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_name()


def last_level_cache_bytes(device: torch.device) -> int:
    """L2 on a GPU (device properties); the largest cache level the OS reports on a CPU (fallback 32 MiB)."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    best = 0
    for size_file in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = size_file.read_text().strip().upper()
        except OSError:
            continue
        mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * mult)
    return best or 32 * 2**20


def compute_capability(device: torch.device) -> tuple[int, int] | None:
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_capability(device)
