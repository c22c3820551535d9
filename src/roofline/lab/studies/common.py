"""What every study shares: interleaved timing with OOM caught per cell, the environment block, and writing a
study's json, markdown and charts into its folder whole or not at all."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any, Callable

import msgspec
import torch

from roofline.io import atomic_directory, atomic_write_bytes, atomic_write_text
from roofline.report import Environment, Timing, finite_for_json

TIMING_CUDA = ("torch.cuda.Event elapsed time around each run; the variants are run in interleaved rounds (each "
               "once per round) after one untimed warm-up each; median with the interquartile range (IQR)")
TIMING_CPU = ("time.perf_counter around each run; the variants are run in interleaved rounds (each once per round) "
              "after one untimed warm-up each; median with the interquartile range (IQR)")


def timing_method(device: torch.device) -> str:
    return TIMING_CUDA if device.type == "cuda" else TIMING_CPU


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_once(fn: Callable[[], Any], device: torch.device) -> float:
    """Seconds of one call of ``fn`` (CUDA events on CUDA)."""
    from roofline.device.measure import time_fn

    return time_fn(fn, device, warmup=0, repeats=1)[0]


def interleaved(runs: dict[str, Callable[[], Any]], device: torch.device, rounds: int,
                method: str | None = None) -> dict[str, Timing]:
    """Each run once per round, the rounds one after another: drift (clocks, heat) lands on every run alike."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            samples[name].append(time_once(fn, device))
    return {name: Timing.from_samples(s, method or timing_method(device)) for name, s in samples.items()}


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()


def free_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:limit] if text else ''}"


def environment(device: torch.device, device_name: str) -> dict[str, Any]:
    env = msgspec.to_builtins(Environment.capture(device_name))
    env["date"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    program = Path(sys.argv[0]).name if sys.argv else ""
    env["command"] = " ".join(["roofline" if program == "__main__.py" else program, *sys.argv[1:]])
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


def plain(obj: Any) -> Any:
    """Dataclasses, msgspec structs and the rest as JSON-ready plain data (non-finite floats as null)."""
    text = json.dumps(obj, default=lambda o: dataclasses.asdict(o) if dataclasses.is_dataclass(o)
                      else msgspec.to_builtins(o, enc_hook=str) if isinstance(o, msgspec.Struct) else str(o))
    return finite_for_json(json.loads(text))


def write_study(out_dir: Path, name: str, payload: dict[str, Any], markdown: str,
                charts: dict[str, bytes]) -> list[Path]:
    """``name``.json, ``name``.md and each chart, replacing a previous run's files of this study together."""
    owned = [f"{name}.json", f"{name}.md", *charts]
    with atomic_directory(out_dir, owned) as tmp:
        written = [atomic_write_text(tmp / f"{name}.json", json.dumps(plain(payload), indent=1, allow_nan=False) + "\n"),
                   atomic_write_text(tmp / f"{name}.md", markdown)]
        written += [atomic_write_bytes(tmp / file, data) for file, data in charts.items()]
        written = [out_dir / p.relative_to(tmp) for p in written]
    return written


def png(draw: Callable[..., None], figsize: tuple[float, float], ncols: int = 1, dpi: int = 120) -> bytes:
    """A PNG of ``ncols`` matplotlib Axes side by side drawn by ``draw(*axes)`` (Agg; the figure always closed)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=figsize, dpi=dpi, squeeze=False)
    try:
        draw(*axes[0])
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(fig)


def fmt(value: float | None, spec: str, unit: str = "") -> str:
    import math

    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:{spec}}{unit}"
