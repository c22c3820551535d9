"""`roofline lab --study attention`: causal prefill attention through each SDPA backend and the naive attention.

One model's attention shape (batch 1, its query heads and head size; K/V expanded to the query heads before the
timed region, so every backend solves the same multi-head problem), sequence lengths 512..32k on CUDA. Per cell:
time (median of interleaved rounds, IQR), peak memory above the inputs, achieved FLOP/s with roofline's own count
of SDPA (count/attention.py: causal counted as the kept triangle, s(s+1)/2 of s*s scores), and the point on the
attention roofline (intensity with roofline's minimum bytes: Q, K, V read once, O and the fp32 logsumexp written
once). A backend that cannot run a cell is a row that says why (torch's own warning), an OOM a row that says so.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

from roofline.errors import RooflineError
from roofline.lab.model import naive_attention
from roofline.lab.studies import Progress, StudyOptions, StudyResult
from roofline.lab.studies import common
from roofline.models.llama import CONFIGS
from roofline.report import Timing

BACKENDS = ("math", "efficient", "flash", "cudnn", "naive")
SDPA_BACKENDS = {"math": "MATH", "efficient": "EFFICIENT_ATTENTION", "flash": "FLASH_ATTENTION",
                 "cudnn": "CUDNN_ATTENTION"}
CUDA_SEQS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
CPU_SEQS = (128, 256)
FLOPS_METHOD = (
    "roofline's count of SDPA (count/attention.py, the formula of aten::_scaled_dot_product_flash_attention with "
    "is_causal=True): 2 matmuls, 4*b*h*s*s*d, times the kept causal fraction s(s+1)/(2 s^2) (about half; "
    "torch's FlopCounterMode counts the full matrix); softmax, scale and mask not counted. The same count for "
    "every backend, naive included: achieved FLOP/s is useful work per second"
)
BYTES_METHOD = (
    "roofline's minimum bytes of the same op: Q, K, V read once, O written once and the fp32 logsumexp written "
    "once; the math backend and the naive attention also write and read the s x s score matrix, which this "
    "minimum does not count (their real traffic is higher, their intensity lower)"
)
MEMORY_METHOD = ("torch.cuda.max_memory_allocated after reset_peak_memory_stats, around one call, minus the bytes "
                 "allocated before it (Q, K, V): the backend's own working memory and its output")


@dataclass
class Cell:
    backend: str
    dtype: str
    seq: int
    status: str  # ok | unavailable | oom | error
    reason: str = ""
    median_ms: float = float("nan")
    iqr_ms: float = float("nan")
    samples_ms: list[float] = field(default_factory=list)
    peak_bytes: float | None = None
    flops: float = 0.0
    min_bytes: float = 0.0
    tflops: float = float("nan")
    intensity: float = float("nan")
    roof_tflops: float = float("nan")
    share_of_roof: float = float("nan")
    speedup_vs_math: float | None = None
    speedup_vs_naive: float | None = None


def attention_cost(batch: int, heads: int, seq: int, head_dim: int, dtype: torch.dtype) -> tuple[float, float]:
    """(FLOPs, minimum bytes) of causal attention as roofline counts SDPA."""
    import roofline.count.attention  # noqa: F401 - registers the SDPA formulas
    from roofline.count.meta import TensorMeta, dtype_name
    from roofline.count.registry import FORMULAS, Call

    meta = TensorMeta((batch, heads, seq, head_dim), dtype_name(dtype))
    name = "aten::_scaled_dot_product_flash_attention"
    cost = FORMULAS[name](Call(name, [meta, meta, meta, 0.0, True], {}, None))
    return cost.flops, cost.bytes


def _sdpa(backend: str) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    chosen = getattr(SDPBackend, SDPA_BACKENDS[backend])

    def run(q, k, v):
        with sdpa_kernel(chosen):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return run


def _runner(backend: str):
    return naive_attention if backend == "naive" else _sdpa(backend)


def _first_try(backend: str, q, k, v) -> tuple[str, str]:
    """Run once: (status, reason). torch says why it refused a backend in UserWarnings; keep them as the reason."""
    device = q.device
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.no_grad():
                _runner(backend)(q, k, v)
            common.sync(device)
            return "ok", ""
        except Exception as exc:  # noqa: BLE001 - every failure is a row of the table
            if common.is_oom(exc):
                return "oom", common.first_line(exc, 160)
            said = [line for w in caught for line in str(w.message).strip().splitlines()[:1]
                    if line and "kernel not used because" not in line]
            if "No available kernel" in str(exc) or "No viable backend" in str(exc) or said:
                reason = "; ".join(dict.fromkeys(said))
                if not reason and device.type != "cuda":
                    reason = f"no {device.type} kernel in torch for this backend"
                return "unavailable", reason or common.first_line(exc)
            return "error", common.first_line(exc)


def _peak_bytes(fn: Callable[[], Any], device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    common.sync(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    common.sync(device)
    return float(torch.cuda.max_memory_allocated(device) - before)


def measure_length(heads: int, head_dim: int, seq: int, dtype: torch.dtype, device: torch.device,
                   backends: tuple[str, ...], rounds: int, roof_flops: float, bandwidth: float) -> list[Cell]:
    """Every backend at one length: each tried once (status), then the working ones timed in interleaved rounds."""
    dtype_text = str(dtype).replace("torch.", "")
    flops, min_bytes = attention_cost(1, heads, seq, head_dim, dtype)
    cells = {b: Cell(b, dtype_text, seq, "ok", flops=flops, min_bytes=min_bytes) for b in backends}
    try:
        gen = torch.Generator(device=device).manual_seed(seq)
        q, k, v = (torch.randn(1, heads, seq, head_dim, generator=gen, device=device, dtype=dtype)
                   for _ in range(3))
    except Exception as exc:  # noqa: BLE001
        if not common.is_oom(exc):
            raise
        common.free_memory(device)
        return [Cell(b, dtype_text, seq, "oom", "the inputs do not fit", flops=flops, min_bytes=min_bytes)
                for b in backends]
    working: dict[str, Callable[[], Any]] = {}
    for backend in backends:
        status, reason = _first_try(backend, q, k, v)
        cells[backend].status, cells[backend].reason = status, reason
        if status == "oom":
            common.free_memory(device)
        if status != "ok":
            continue
        run = _runner(backend)
        working[backend] = lambda run=run: run(q, k, v)
        try:
            with torch.no_grad():
                cells[backend].peak_bytes = _peak_bytes(working[backend], device)
        except Exception as exc:  # noqa: BLE001
            cells[backend].status, cells[backend].reason = ("oom" if common.is_oom(exc) else "error"), \
                common.first_line(exc, 160)
            working.pop(backend)
            common.free_memory(device)
    if working:
        with torch.no_grad():
            timings = _time_cells(working, cells, device, rounds)
        for backend, timing in timings.items():
            cell = cells[backend]
            cell.median_ms, cell.iqr_ms = 1e3 * timing.median_s, 1e3 * timing.spread_s
            cell.samples_ms = [1e3 * s for s in timing.samples_s]
            cell.tflops = flops / timing.median_s / 1e12 if timing.median_s > 0 else float("nan")
    for cell in cells.values():
        cell.intensity = flops / min_bytes if min_bytes else float("nan")
        attainable = min(roof_flops, cell.intensity * bandwidth) if roof_flops > 0 and bandwidth > 0 else float("nan")
        cell.roof_tflops = attainable / 1e12
        if cell.status == "ok" and math.isfinite(attainable) and attainable > 0:
            cell.share_of_roof = cell.tflops * 1e12 / attainable
    for cell in cells.values():
        for base, attr in (("math", "speedup_vs_math"), ("naive", "speedup_vs_naive")):
            ref = cells.get(base)
            if cell.status == "ok" and ref is not None and ref.status == "ok" and cell.median_ms > 0:
                setattr(cell, attr, ref.median_ms / cell.median_ms)
    del q, k, v
    common.free_memory(device)
    return list(cells.values())


def _time_cells(working: dict[str, Callable[[], Any]], cells: dict[str, Cell], device: torch.device,
                rounds: int) -> dict[str, Timing]:
    """common.interleaved, except that a backend running out of memory in a timed call (the allocator's blocks
    fragment between backends) loses only its own cell."""
    samples: dict[str, list[float]] = {name: [] for name in working}
    for _ in range(rounds):
        for name, fn in list(working.items()):
            try:
                samples[name].append(common.time_once(fn, device))
            except Exception as exc:  # noqa: BLE001
                cells[name].status = "oom" if common.is_oom(exc) else "error"
                cells[name].reason = f"in a timed call: {common.first_line(exc, 160)}"
                working.pop(name)
                samples.pop(name)
                common.free_memory(device)
    return {name: Timing.from_samples(s, common.timing_method(device)) for name, s in samples.items()}


def _plan(options: StudyOptions, device: torch.device) -> tuple[tuple[int, ...], list[torch.dtype], int, list[str]]:
    notes = []
    if device.type == "cuda":
        seqs = CUDA_SEQS if not options.quick else CUDA_SEQS[:3]
        dtypes = [torch.float16, torch.bfloat16] if options.dtype is None else [_dtype(options.dtype)]
        rounds = 7 if not options.quick else 3
    else:
        seqs, dtypes, rounds = CPU_SEQS, [_dtype(options.dtype or "float32")], 3
        notes.append("CPU quick form: lengths 128 and 256 in float32, 3 rounds; a smoke test of the method, not a "
                     "measurement of any GPU backend (flash, efficient and cuDNN are CUDA kernels)")
    if options.quick:
        notes.append("--quick: NOT REPRESENTATIVE")
    return seqs, dtypes, rounds, notes


def _dtype(text: str) -> torch.dtype:
    from roofline.models.workloads import parse_dtype

    return parse_dtype(text)


def run(options: StudyOptions, out_dir: Path, progress: Progress) -> StudyResult:
    from roofline.device.resolve import resolve_device
    from roofline.lab.runner import MODELS, measured_ceilings

    if options.model not in MODELS:
        raise RooflineError(f"unknown lab model {options.model!r}; choose one of: {', '.join(MODELS)}")
    device = resolve_device(options.device)
    config = CONFIGS[options.model]
    heads, head_dim = config.n_heads, config.head_dim
    seqs, dtypes, rounds, notes = _plan(options, device)
    progress(f"ceilings of {device}")
    ceilings = measured_ceilings(device, options.ceilings, progress=progress)
    bandwidth = ceilings.memory_bandwidth_bytes_per_s
    cells: list[Cell] = []
    budget = SweepBudget(options.budget_s)
    for dtype in dtypes:
        name = str(dtype).replace("torch.", "")
        for seq in seqs:
            if not budget.fits(seq):
                budget.cut.append(f"{name} at {seq}")
                continue
            progress(f"attention {name} seq {seq}")
            with budget.timing(seq):
                cells += measure_length(heads, head_dim, seq, dtype, device, BACKENDS, rounds,
                                        ceilings.peak_for(name), bandwidth)
    if budget.cut:
        notes.append(budget.note())
        progress(budget.note())
    payload = {
        "study": "attention", "model": options.model, "device": str(device),
        "device_name": ceilings.device_name, "shape": {"batch": 1, "heads": heads, "kv_heads": config.n_kv_heads,
                                                       "head_dim": head_dim, "causal": True},
        "seqs": list(seqs), "dtypes": [str(d).replace("torch.", "") for d in dtypes], "rounds": rounds,
        "timing_method": common.timing_method(device), "flops_method": FLOPS_METHOD, "bytes_method": BYTES_METHOD,
        "memory_method": MEMORY_METHOD,
        "ceilings": {"memory_bandwidth_bytes_per_s": bandwidth, "peak_flops_per_s": ceilings.peak_flops_per_s,
                     "source": ceilings.source},
        "environment": common.environment(device, ceilings.device_name), "notes": notes, "cells": cells,
        "budget_s": options.budget_s, "cut_by_budget": budget.cut,
    }
    table = speedup_table(cells)
    markdown = attention_markdown(payload, cells)
    files = common.write_study(out_dir, "attention", payload, markdown, {"attention.png": attention_png(payload, cells)})
    return StudyResult("attention", table, files, summary=_summary(cells) + ([budget.note()] if budget.cut else []))


class SweepBudget:
    """--budget for the sweep: a length is not started when the time left is less than it is predicted to take
    (the last length measured, scaled by the square of the length: attention's work grows as s^2), nor once the
    budget is spent. Without a budget every length runs."""

    def __init__(self, budget_s: float | None, clock: Callable[[], float] = time.perf_counter) -> None:
        if budget_s is not None and budget_s <= 0:
            raise RooflineError(f"--budget must be a positive number of seconds, got {budget_s:g}")
        self.budget_s, self.clock = budget_s, clock
        self.began = clock()
        self.last: tuple[int, float] | None = None  # (length, seconds it took)
        self.cut: list[str] = []

    def predicted_s(self, seq: int) -> float:
        if self.last is None:
            return 0.0
        last_seq, took = self.last
        return took * (seq / last_seq) ** 2

    def fits(self, seq: int) -> bool:
        if self.budget_s is None:
            return True
        left = self.budget_s - (self.clock() - self.began)
        return left > 0 and self.predicted_s(seq) <= left

    @contextlib.contextmanager
    def timing(self, seq: int) -> Iterator[None]:
        began = self.clock()
        yield
        self.last = (seq, self.clock() - began)

    def note(self) -> str:
        return (f"--budget {self.budget_s:g} s: not measured: {', '.join(self.cut)} (a length is not started when "
                "the time left is less than the last length's time scaled by the square of the length)")


def _summary(cells: list[Cell]) -> list[str]:
    lines = []
    for dtype in dict.fromkeys(c.dtype for c in cells):
        both = [(c.seq, c.speedup_vs_math) for c in cells if c.dtype == dtype and c.backend == "flash"
                and c.speedup_vs_math is not None]
        if both:
            seq, speedup = both[-1]
            lines.append(f"{dtype}: flash vs math at {seq} tokens: {speedup:.1f}x")
    return lines


def _cell_text(c: Cell) -> str:
    if c.status == "ok":
        return f"{c.median_ms:.3g} ms"
    return {"oom": "OOM", "unavailable": "n/a", "error": "error"}[c.status]


def speedup_table(cells: list[Cell]) -> str:
    """Time per backend and length, and the speed-up of each over math and over naive."""
    lines = ["| dtype | seq | " + " | ".join(BACKENDS) + " | flash vs math | flash vs naive | best vs math |",
             "|---|---:|" + "---:|" * len(BACKENDS) + "---:|---:|---|"]
    keys = list(dict.fromkeys((c.dtype, c.seq) for c in cells))
    for dtype, seq in keys:
        row = {c.backend: c for c in cells if c.dtype == dtype and c.seq == seq}
        flash = row.get("flash")
        ok = [c for c in row.values() if c.status == "ok" and c.speedup_vs_math is not None]
        best = max(ok, key=lambda c: c.speedup_vs_math, default=None)
        lines.append(
            f"| {dtype} | {seq} | " + " | ".join(_cell_text(row[b]) if b in row else "-" for b in BACKENDS)
            + f" | {common.fmt(flash.speedup_vs_math if flash else None, '.2f', 'x')}"
            + f" | {common.fmt(flash.speedup_vs_naive if flash else None, '.2f', 'x')}"
            + f" | {f'{best.backend} {best.speedup_vs_math:.2f}x' if best else '-'} |")
    return "\n".join(lines)


def detail_table(cells: list[Cell]) -> str:
    lines = ["| dtype | seq | backend | status | median ms (IQR) | peak memory above inputs | TFLOP/s | "
             "intensity (FLOP/B) | roof TFLOP/s | % of roof | why not |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in cells:
        timing = f"{c.median_ms:.3g} ({c.iqr_ms:.2g})" if c.status == "ok" else "-"
        peak = f"{c.peak_bytes / 2**20:,.0f} MiB" if c.peak_bytes is not None else "-"
        lines.append(f"| {c.dtype} | {c.seq} | {c.backend} | {c.status} | {timing} | {peak} | "
                     f"{common.fmt(c.tflops, '.3g')} | {common.fmt(c.intensity, '.0f')} | "
                     f"{common.fmt(c.roof_tflops, '.3g')} | {common.fmt(100 * c.share_of_roof, '.0f', '%')} | "
                     f"{c.reason.replace('|', '/')[:200]} |")
    return "\n".join(lines)


def attention_markdown(payload: dict[str, Any], cells: list[Cell]) -> str:
    shape = payload["shape"]
    parts = [
        f"# Prefill attention per SDPA backend: {payload['model']}'s shape on {payload['device_name'] or payload['device']}",
        "",
        f"Causal self-attention, batch 1, {shape['heads']} heads of {shape['head_dim']} (the model's "
        f"{shape['kv_heads']} KV heads expanded to {shape['heads']} before the timed region), random inputs; "
        f"dtypes {', '.join(payload['dtypes'])}. Backends: SDPA forced with torch.nn.attention.sdpa_kernel "
        "(math, efficient = memory-efficient, flash, cudnn) and naive (lab/model.py's naive_attention: the score "
        "matrix materialised, masked, softmaxed, multiplied by V).",
        "",
        *[f"- {note}" for note in payload["notes"]],
        "",
        "## Time per backend and speed-ups",
        "",
        speedup_table(cells),
        "",
        "n/a: the backend refused the cell (reason in the detail table); OOM: out of memory.",
        "",
        "## Detail: memory, achieved FLOP/s, the attention roofline",
        "",
        detail_table(cells),
        "",
        "## Method",
        "",
        f"- Timing: {payload['timing_method']}; {payload['rounds']} rounds.",
        f"- FLOPs: {payload['flops_method']}.",
        f"- Bytes and intensity: {payload['bytes_method']}. Roof = min(peak FLOP/s of the dtype, intensity x "
        "memory bandwidth), from the ceilings "
        f"({payload['ceilings']['source']}).",
        f"- Peak memory: {payload['memory_method']}.",
        "",
        "Chart: attention.png (time and achieved TFLOP/s against sequence length, per backend).",
        "",
    ]
    return "\n".join(parts)


def attention_png(payload: dict[str, Any], cells: list[Cell]) -> bytes:
    colors = {"math": "#c44e52", "efficient": "#dd8452", "flash": "#4c72b0", "cudnn": "#55a868", "naive": "#8172b3"}
    styles = ["-", "--", ":"]

    def draw(ax_time, ax_rate) -> None:
        for j, dtype in enumerate(payload["dtypes"]):
            for backend in BACKENDS:
                shown = [c for c in cells if c.dtype == dtype and c.backend == backend and c.status == "ok"]
                if not shown:
                    continue
                xs = [c.seq for c in shown]
                label = f"{backend} {dtype}"
                ax_time.errorbar(xs, [c.median_ms for c in shown], yerr=[c.iqr_ms / 2 for c in shown],
                                 color=colors[backend], linestyle=styles[j % 3], marker="o", ms=3, label=label)
                ax_rate.plot(xs, [c.tflops for c in shown], color=colors[backend], linestyle=styles[j % 3],
                             marker="o", ms=3, label=label)
        for ax in (ax_time, ax_rate):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("sequence length (tokens)")
        ax_time.set_yscale("log")
        ax_time.set_ylabel("time per call, ms (median, IQR bars)")
        ax_rate.set_ylabel("achieved TFLOP/s (roofline's causal count)")
        peaks = [payload["ceilings"]["peak_flops_per_s"].get(d, 0.0) for d in payload["dtypes"]]
        if max(peaks, default=0) > 0:
            ax_rate.axhline(max(peaks) / 1e12, color="black", linewidth=0.8, linestyle="--", label="peak (measured)")
        ax_rate.legend(fontsize=7)
        ax_time.set_title(f"causal prefill attention, {payload['model']} shape, "
                          f"{payload['device_name'] or payload['device']}", fontsize=9)

    return common.png(draw, (12, 4.8), ncols=2)
