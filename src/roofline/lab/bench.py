"""Measurements of the case study: each stage's generation speed and traffic, the batch sweep, the peak decode.

Everything here returns data; nothing prints or draws. Timing: warm-up runs first (they also compile), then
every timed run is bracketed by torch.cuda.Event records and an event synchronize on CUDA, by
time.perf_counter on CPU (generation ends with a copy of the tokens to the host, so the work is done).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from roofline.device.measure import time_fn
from roofline.lab.agreement import compare_tokens
from roofline.lab.generate import DecodeStep, decode_one_token, generate, generate_ids, padded_causal_mask
from roofline.lab.graphed import GraphedDecoder
from roofline.lab.model import Fixes, configure, fused_projections
from roofline.models.llama import Transformer
from roofline.report import Ceilings, Timing

Progress = Callable[[str], None]

TIMING_METHOD_CUDA = "torch.cuda.Event elapsed time around each run, after warm-up runs (which also compile)"
TIMING_METHOD_CPU = "time.perf_counter around each run (it ends copying tokens to the host), after warm-up runs"
BYTES_METHOD = (
    "sum over every aten op of one generation run of roofline's minimum traffic (each input read once, each "
    "output written once), divided by the tokens generated"
)


@dataclass
class StageResult:
    title: str
    fixes: list[str]
    tokens: int
    tokens_per_s: float
    ms_per_token: float
    speedup_vs_previous: float
    speedup_cumulative: float
    syncs_per_token: float | None
    bytes_per_token: float | None
    memory_roof_share: float | None
    timing: Timing
    note: str = ""


@dataclass
class SweepPoint:
    batch: int
    arithmetic_intensity: float
    bound: str
    tokens_per_s: float
    ms_per_step: float
    achieved_bytes_per_s: float


@dataclass
class Sweep:
    dtype: str
    ridge_point: float
    crossing_batch: int | None
    points: list[SweepPoint] = field(default_factory=list)
    compiled: bool = False
    method: str = (
        "decode matmuls (every Linear, all layers and the output head) at batch B: FLOPs 2*B*K*N, bytes "
        "itemsize*(K*N + B*K + B*N); bound = compute when their intensity reaches the ridge point "
        "(peak FLOP/s of the dtype / measured bandwidth); tokens/s = B * decode steps / time of those steps"
    )


@dataclass
class PeakDecode:
    tokens_per_s: float
    ms_per_token: float
    bytes_per_token: float
    theoretical_tokens_per_s: float
    share_of_memory_roof: float
    bandwidth_bytes_per_s: float
    context: int
    prefill_tokens_per_s: float
    prefill_ms: float
    compiled: bool
    tuned: "TunedDecode | None" = None
    # lab/fast_rows.FastDecodeRow per hand-written variant (present, skipped with the reason, off CUDA).
    fast: list = field(default_factory=list)
    method: str = (
        "batch-1 decode reads every weight (embedding table excepted: one row per token) and the KV cache of the "
        "context once per token; theoretical tokens/s = measured bandwidth / those bytes"
    )


@dataclass
class TunedDecode:
    """The same batch-1 decode with the next tuning a bandwidth-bound decoder gets (gpt-fast's recipe)."""

    changes: list[str]
    tokens_per_s: float = float("nan")
    ms_per_token: float = float("nan")
    share_of_memory_roof: float = float("nan")
    same_tokens: int = 0
    compared_tokens: int = 0
    error: str = ""


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_runs(run: Callable[[], Any], device: torch.device, warmup: int, reps: int) -> Timing:
    samples = time_fn(run, device, warmup=warmup, repeats=reps)
    return Timing.from_samples(samples, TIMING_METHOD_CUDA if device.type == "cuda" else TIMING_METHOD_CPU)


def count_syncs(run: Callable[[], Any]) -> int | None:
    """Host-device syncs of one run as roofline's SyncDetector sees them (on CPU: calls that would sync a GPU)."""
    from roofline.capture.syncs import SyncDetector

    with SyncDetector(mode="silent") as detector:
        run()
    total = detector.total_count
    return total() if callable(total) else total


def count_bytes(run: Callable[[], Any]) -> float:
    """Minimum bytes moved by every aten op of one run, from roofline's per-op byte formulas."""
    from roofline.capture.traffic import count_traffic

    return count_traffic(run).bytes


def compile_decode(device: torch.device) -> DecodeStep:
    mode = "reduce-overhead" if device.type == "cuda" else None
    return torch.compile(decode_one_token, mode=mode, fullgraph=True)


# gpt-fast's Inductor setting: coordinate-descent tuning also makes Inductor write matrix-vector products
# (the batch-1 decode's matmuls) as tuned Triton reductions instead of calling cuBLAS. No cudagraphs option:
# the tuned loop captures its own graphs of several steps (lab/graphed.py).
TUNED_OPTIONS = {"coordinate_descent_tuning": True}
GRAPH_STEPS = 16
PEAK_REPS = 3
TUNED_CHANGES = [
    "q/k/v and gate/up weights stacked (one matrix-vector product each instead of three and two)",
    "Inductor coordinate-descent tuning (matrix-vector products as tuned Triton reductions), fullgraph, "
    "static shapes",
    f"the loop captured as CUDA graphs of up to {GRAPH_STEPS} decode steps each, so the host does no work "
    "between steps",
]


def compile_tuned_decode(device: torch.device) -> DecodeStep:
    """The decode step compiled with TUNED_OPTIONS, in its own Dynamo cache (its own code object)."""

    def tuned_decode_step(model, token, input_pos, pad):
        return decode_one_token(model, token, input_pos, pad)

    if device.type != "cuda":
        return torch.compile(tuned_decode_step, fullgraph=True, dynamic=False)
    return torch.compile(tuned_decode_step, fullgraph=True, dynamic=False, options=TUNED_OPTIONS)


def run_stage(
    model: Transformer,
    prompts: list[list[int]],
    max_new_tokens: int,
    eos_id: int,
    title: str,
    fixes: Fixes,
    ceilings: Ceilings,
    *,
    warmup: int,
    reps: int,
    decode_step: DecodeStep,
    measure_traffic: bool = True,
) -> tuple[StageResult, list[list[int]]]:
    device = model.output.weight.device
    configure(model, fixes)

    def run() -> list[list[int]]:
        return generate(model, prompts, max_new_tokens, eos_id, fixes, decode_step)

    def loop_on_device(step: DecodeStep = decode_step) -> torch.Tensor:
        return generate_ids(model, prompts, max_new_tokens, eos_id, fixes, step)

    note = ""
    syncs = bytes_moved = None
    tokens_out = run()
    if measure_traffic:
        # Counted on the eager ops: compiled kernels fuse some of them, so they move less.
        syncs = count_syncs(lambda: loop_on_device(decode_one_token))
        bytes_moved = count_bytes(lambda: loop_on_device(decode_one_token))
        if fixes.compiled:
            note = "syncs and bytes counted on the eager ops of the same loop (compiled kernels fuse, so move less)"
    tokens = sum(len(t) for t in tokens_out)
    timing = time_runs(run, device, warmup, reps)
    tokens_per_s = tokens / timing.median_s if timing.median_s > 0 else 0.0
    bytes_per_token = bytes_moved / tokens if bytes_moved is not None and tokens else None
    share = None
    if bytes_per_token is not None and ceilings.memory_bandwidth_bytes_per_s > 0:
        share = bytes_per_token * tokens_per_s / ceilings.memory_bandwidth_bytes_per_s
    result = StageResult(
        title=title,
        fixes=fixes.names(),
        tokens=tokens,
        tokens_per_s=tokens_per_s,
        ms_per_token=1e3 / tokens_per_s if tokens_per_s else float("inf"),
        speedup_vs_previous=1.0,
        speedup_cumulative=1.0,
        syncs_per_token=syncs / tokens if syncs is not None and tokens else None,
        bytes_per_token=bytes_per_token,
        memory_roof_share=share,
        timing=timing,
        note=note,
    )
    return result, tokens_out


def fill_speedups(results: list[StageResult]) -> None:
    for i, result in enumerate(results):
        previous = results[i - 1].tokens_per_s if i else result.tokens_per_s
        first = results[0].tokens_per_s
        result.speedup_vs_previous = result.tokens_per_s / previous if previous else float("nan")
        result.speedup_cumulative = result.tokens_per_s / first if first else float("nan")


def decode_matmul_intensity(model: Transformer, batch: int) -> tuple[float, float]:
    """(FLOPs, bytes) of one decode step's Linear layers at ``batch`` rows."""
    flops = moved = 0.0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            n, k = module.weight.shape
            size = module.weight.element_size()
            flops += 2.0 * batch * k * n
            moved += size * (k * n + batch * k + batch * n)
    return flops, moved


def crossing_batch(model: Transformer, ridge: float, limit: int = 1 << 16) -> int | None:
    """Smallest batch whose decode matmuls reach the ridge point (their intensity grows with the batch)."""

    def reaches(batch: int) -> bool:
        flops, moved = decode_matmul_intensity(model, batch)
        return flops / moved >= ridge

    if not reaches(limit):
        return None
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(mid) else (mid + 1, hi)
    return lo


def _decode_time(model: Transformer, decode_step: DecodeStep, batch: int, context: int, steps: int,
                 warmup: int, reps: int = 1) -> tuple[float, torch.Tensor]:
    """Median seconds for ``steps`` decode steps at ``batch`` after a prompt of ``context`` tokens, and their tokens.

    The prompt is the same for every call (seeded) and the warm-up steps only repeat the first step, so the
    tokens are the greedy continuation of that prompt: two decode steps' tokens can be compared.
    """
    device = model.output.weight.device
    _ensure_cache(model, batch, context + steps + 1)
    tokens, pad = _prompt(model, batch, context)
    out: list[torch.Tensor] = []
    with torch.no_grad():
        _prefill(model, tokens, pad)
        # Contiguous like every later step's token: a strided slice would fail Dynamo's stride guard and
        # recompile inside the timed run (it did, for batch 4 of the H200 llama-8b sweep).
        token = tokens[:, -1:].contiguous()
        pos = torch.tensor([context], device=device)
        for _ in range(warmup):
            decode_step(model, token, pos, pad)
        _sync(device)
        timing = time_runs(lambda: out.append(_decode_steps(model, decode_step, token, pos, pad, steps)),
                           device, 0, reps)
    return timing.median_s, out[-1]


def _graphed_decode_time(model: Transformer, decode_step: DecodeStep, context: int, steps: int, warmup: int,
                         reps: int) -> tuple[float, torch.Tensor]:
    """As _decode_time at batch 1, with the steps replayed as CUDA graphs of several steps (GraphedDecoder)."""
    device = model.output.weight.device
    _ensure_cache(model, 1, context + steps + 1)
    tokens, pad = _prompt(model, 1, context)
    per_graph = math.gcd(steps, GRAPH_STEPS)
    out: list[torch.Tensor] = []
    with torch.no_grad():
        # Built first: its warm-up steps write cache slots from 0, which the prefill then overwrites.
        decoder = GraphedDecoder(model, decode_step, pad, per_graph, warmup=max(warmup, 1))
        _prefill(model, tokens, pad)
        _sync(device)
        timing = time_runs(lambda: out.append(decoder.run(tokens[:, -1:].contiguous(), context, steps)), device,
                           0, reps)
    return timing.median_s, out[-1]


def _ensure_cache(model: Transformer, batch: int, seq: int) -> None:
    if model.max_batch < batch or model.max_seq < seq:
        model.setup_caches(max(batch, model.max_batch), max(model.max_seq, seq))


def _prompt(model: Transformer, batch: int, context: int) -> tuple[torch.Tensor, torch.Tensor]:
    device = model.output.weight.device
    generator = torch.Generator(device="cpu").manual_seed(1)
    tokens = torch.randint(0, model.config.vocab_size, (batch, context), generator=generator).to(device)
    return tokens, torch.zeros(batch, dtype=torch.long, device=device)


def _prefill(model: Transformer, tokens: torch.Tensor, pad: torch.Tensor) -> None:
    input_pos = torch.arange(tokens.shape[1], device=tokens.device)
    model(tokens, input_pos, mask=padded_causal_mask(input_pos, pad, model.max_seq))


def _decode_steps(model, decode_step, token, pos, pad, steps) -> torch.Tensor:
    generated = []
    for _ in range(steps):
        token = decode_step(model, token, pos, pad).clone()[:, None]
        generated.append(token)
        pos = pos + 1
    return torch.cat(generated, dim=1)


def batch_sweep(
    model: Transformer,
    decode_step: DecodeStep,
    ceilings: Ceilings,
    batches: list[int],
    *,
    context: int,
    steps: int,
    warmup: int,
    compiled: bool,
    progress: Progress,
) -> Sweep:
    configure(model, Fixes.all())
    dtype = str(model.output.weight.dtype).replace("torch.", "")
    ridge = ceilings.ridge_point(dtype)
    sweep = Sweep(dtype=dtype, ridge_point=ridge, crossing_batch=crossing_batch(model, ridge), compiled=compiled)
    for batch in batches:
        progress(f"batch sweep: batch {batch}")
        seconds, _ = _decode_time(model, decode_step, batch, context, steps, warmup)
        flops, moved = decode_matmul_intensity(model, batch)
        intensity = flops / moved
        sweep.points.append(
            SweepPoint(
                batch=batch,
                arithmetic_intensity=intensity,
                bound="compute" if intensity >= ridge else "memory",
                tokens_per_s=batch * steps / seconds,
                ms_per_step=1e3 * seconds / steps,
                achieved_bytes_per_s=(decode_bytes(model, batch, context + steps // 2) * steps) / seconds,
            )
        )
    return sweep


def decode_bytes(model: Transformer, batch: int, context: int) -> float:
    """Bytes one decode step must read: every weight but the embedding table, plus the KV cache of ``context``."""
    config = model.config
    size = model.output.weight.element_size()
    weights = sum(p.numel() for name, p in model.named_parameters() if not name.startswith("tok_embeddings"))
    kv_cache = 2 * config.n_layers * config.n_kv_heads * config.head_dim * context * batch
    return size * (weights + kv_cache + batch * config.dim)


def peak_decode(
    model: Transformer,
    decode_step: DecodeStep,
    ceilings: Ceilings,
    *,
    context: int,
    steps: int,
    warmup: int,
    compiled: bool,
    tuned_step: DecodeStep | None = None,
) -> PeakDecode:
    """Batch-1 decode throughput against bandwidth / bytes per token; prefill of the same prompt too.

    With ``tuned_step``, the same decode is measured again with the projections fused (TunedDecode), and its
    tokens compared with the plain step's.
    """
    configure(model, Fixes.all())
    device = model.output.weight.device
    seconds, reference = _decode_time(model, decode_step, 1, context, steps, warmup, reps=PEAK_REPS)
    bytes_per_token = decode_bytes(model, 1, context + steps // 2)
    bandwidth = ceilings.memory_bandwidth_bytes_per_s
    tokens_per_s = steps / seconds
    theoretical = bandwidth / bytes_per_token if bandwidth > 0 else float("nan")
    prompt, pad = _prompt(model, 1, context)
    with torch.no_grad():
        prefill_timing = time_runs(lambda: _prefill(model, prompt, pad), device, warmup=2, reps=5)
    tuned = None
    if tuned_step is not None:
        tuned = _tuned_decode(model, tuned_step, reference, context=context, steps=steps, warmup=warmup,
                              theoretical=theoretical)
    return PeakDecode(
        tokens_per_s=tokens_per_s,
        ms_per_token=1e3 / tokens_per_s,
        bytes_per_token=bytes_per_token,
        theoretical_tokens_per_s=theoretical,
        share_of_memory_roof=tokens_per_s / theoretical if theoretical == theoretical else float("nan"),
        bandwidth_bytes_per_s=bandwidth,
        context=context,
        prefill_tokens_per_s=context / prefill_timing.median_s,
        prefill_ms=1e3 * prefill_timing.median_s,
        compiled=compiled,
        tuned=tuned,
    )


def _tuned_decode(model: Transformer, tuned_step: DecodeStep, reference: torch.Tensor, *, context: int,
                  steps: int, warmup: int, theoretical: float) -> TunedDecode:
    result = TunedDecode(changes=list(TUNED_CHANGES))
    try:
        with fused_projections(model):
            seconds, tokens = _graphed_decode_time(model, tuned_step, context, steps, warmup, reps=PEAK_REPS)
    except Exception as exc:  # noqa: BLE001 - a failed tuning is reported beside the plain figure
        result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        return result
    result.tokens_per_s = steps / seconds
    result.ms_per_token = 1e3 * seconds / steps
    if theoretical == theoretical:
        result.share_of_memory_roof = result.tokens_per_s / theoretical
    agreement = compare_tokens("tuned", reference.tolist(), tokens.tolist())
    result.compared_tokens = agreement.compared_tokens
    result.same_tokens = agreement.compared_tokens if agreement.identical else agreement.first_divergence
    return result


__all__ = [
    "BYTES_METHOD",
    "PeakDecode",
    "StageResult",
    "Sweep",
    "TunedDecode",
    "SweepPoint",
    "batch_sweep",
    "compile_decode",
    "compile_tuned_decode",
    "count_bytes",
    "count_syncs",
    "crossing_batch",
    "decode_bytes",
    "fill_speedups",
    "peak_decode",
    "run_stage",
    "time_runs",
]
