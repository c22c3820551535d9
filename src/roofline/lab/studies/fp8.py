"""`roofline lab --study fp8`: weight-only FP8 (e4m3, per-output-channel scales) for decode, FP8 matmuls for
prefill, and what the rounding costs in quality.

- Decode (CUDA): the batch-1 decode step of hand-written kernels (lab/decode_fast.py) with fp16 weights against
  the same step reading e4m3 weights (lab/fp8.py: the Triton GEMV upcasts each weight and scales each row's sum),
  each replayed as CUDA graphs of 16 steps, timed in interleaved rounds; bytes per token counted in each format.
- Prefill (CUDA): every Linear of the model at T tokens as fp16 F.linear (cuBLAS) against torch._scaled_mm with
  row-wise scales (activations per token, weights per output channel; bf16 output), with and without quantising
  the activations inside the timed region; TFLOP/s against the measured roofs of fp16 and fp8.
- Quality (any device): greedy tokens of fp16 vs fp8 decode from WikiText-2 prompts; perplexity of both on the
  WikiText-2 validation split and the KL divergence of the fp8 next-token distribution from the fp16 one.
The lab's models have random weights: their perplexity says nothing about language, only how far FP8 moves the
model from its fp16 self (the ratio of the two and the KL divergence are the figures to read).
"""

from __future__ import annotations

import dataclasses
import math
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from roofline.errors import RooflineError
from roofline.lab.studies import Progress, StudyOptions, StudyResult
from roofline.lab.studies import common

CPU_SHAPE = {"dim": 128, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_dim": 352, "vocab_size": 4096}
DECODE_METHOD = (
    "batch-1 decode of the prompt's continuation from slot {context}: the hand-written step (lab/decode_fast.py, "
    "Triton GEMV per product; {tiles}) with fp16 weights and with e4m3 weights "
    "(one fp32 scale per output row); {steps} steps replayed as CUDA graphs of 16 steps; {rounds} interleaved "
    "rounds, median and IQR"
)
BYTES_METHOD = (
    "bytes one token must read: every Linear's weights (fp16: 2 bytes each; fp8: 1 byte each plus a 4-byte scale "
    "per output row), the norms, the embedding row and the fp16 KV cache at the mean context; % of the memory "
    "roof = bytes per token x tokens/s / measured bandwidth"
)
PREFILL_METHOD = (
    "every Linear of the model (q, k, v, o, gate, up, down of every layer and the output head, each a distinct "
    "matrix) at {tokens} tokens: fp16 F.linear (cuBLAS) vs torch._scaled_mm with row-wise fp32 scales (activations "
    "per token, weights per output channel, bf16 output), the activations quantised before the timed region "
    "('fp8 matmul') or inside it ('fp8 + quantise'); FLOPs 2*T*K*N per matrix; {rounds} interleaved rounds"
)
QUALITY_METHOD = (
    "greedy tokens: each prompt prefilled by the eager model (fp8: every Linear computing from its e4m3 weights, "
    "fp32 sums), then decoded token by token by the same step as the speed rows (fp16 vs e4m3 weights); "
    "perplexity: exp of the mean next-token cross-entropy over windows of {window} tokens of the WikiText-2 "
    "validation split (word-level vocabulary, words past the model's vocabulary read as <unk>); KL: mean over the "
    "same positions of KL(p_fp16 || p_fp8) of the next-token distributions, in nats"
)
RANDOM_WEIGHTS = (
    "The lab's models have random (seeded) weights: their perplexity measures nothing about language. fp16 vs fp8 "
    "perplexity and their ratio, and the KL divergence, measure only how far FP8 rounding moves the model's "
    "predictions from its own fp16 predictions."
)


@dataclass
class DecodeRow:
    format: str
    tokens_per_s: float = float("nan")
    ms_per_token: float = float("nan")
    iqr_ms_per_token: float = float("nan")
    bytes_per_token: float = 0.0
    memory_roof_share: float = float("nan")
    speedup_vs_fp16: float = float("nan")
    note: str = ""
    tiles: dict[str, Any] = field(default_factory=dict)


@dataclass
class PrefillRow:
    variant: str
    ms: float = float("nan")
    iqr_ms: float = float("nan")
    tflops: float = float("nan")
    roof_tflops: float = float("nan")
    share_of_roof: float = float("nan")
    speedup_vs_fp16: float = float("nan")
    note: str = ""


@dataclass
class Quality:
    prompts: int = 0
    new_tokens: int = 0
    same_tokens: int = 0
    compared_tokens: int = 0
    identical_prompts: int = 0
    first_divergences: list[int | None] = field(default_factory=list)
    perplexity_tokens: int = 0
    perplexity_fp16: float = float("nan")
    perplexity_fp8: float = float("nan")
    perplexity_ratio: float = float("nan")
    kl_nats: float = float("nan")
    top1_agreement: float = float("nan")
    weight_rel_error: float = float("nan")
    note: str = ""


@dataclass
class Plan:
    context: int
    steps: int
    rounds: int
    prefill_tokens: int
    prompts: int
    new_tokens: int
    window: int
    windows: int
    tune: bool = False


def _plan(device: torch.device, quick: bool) -> Plan:
    if device.type == "cuda":
        return Plan(512, 128, 7, 4096, 8, 64, 1024, 8, True) if not quick else Plan(128, 32, 3, 512, 2, 16, 256, 2)
    return Plan(32, 16, 3, 64, 2, 8, 64, 2)


def run(options: StudyOptions, out_dir: Path, progress: Progress) -> StudyResult:
    from roofline.device.resolve import resolve_device
    from roofline.lab.data import UNK, load_wikitext
    from roofline.lab.model import Fixes, configure
    from roofline.lab.runner import MODELS, measured_ceilings
    from roofline.models.llama import CONFIGS, build_llama
    from roofline.models.workloads import parse_dtype

    if options.budget_s is not None:
        raise RooflineError("--budget does not apply to --study fp8: it measures a fixed set (each decode format, "
                            "each prefill matmul, one quality check), not a sweep that can be cut; --quick is "
                            "the short run")
    if options.model not in MODELS:
        raise RooflineError(f"unknown lab model {options.model!r}; choose one of: {', '.join(MODELS)}")
    device = resolve_device(options.device)
    if not hasattr(torch, "float8_e4m3fn"):
        raise RooflineError(f"torch {torch.__version__} has no float8_e4m3fn dtype; the fp8 study needs torch 2.1+")
    dtype = parse_dtype(options.dtype or ("float16" if device.type == "cuda" else "float32"))
    plan = _plan(device, options.quick)
    notes: list[str] = []
    config = CONFIGS[options.model]
    if device.type != "cuda":
        if options.model != "llama-tiny":
            raise RooflineError(f"{options.model} is too big for the CPU fp8 study; use --model llama-tiny or a GPU")
        config = dataclasses.replace(config, **CPU_SHAPE)
        notes.append("CPU quick form: llama-tiny's shape cut to dim 128, 2 layers, a 4096-word vocabulary, float32 "
                     "activations; the FP8 products emulated (e4m3 weights upcast, fp32 sums, row scales). Quality "
                     "figures only; speed rows are CUDA only. NOT REPRESENTATIVE")
    elif options.quick:
        notes.append("--quick: NOT REPRESENTATIVE")

    progress("loading WikiText-2")
    corpus = load_wikitext(options.data)
    unk = corpus.vocab.word_to_id.get(UNK, 0)
    progress(f"ceilings of {device}")
    ceilings = measured_ceilings(device, options.ceilings, progress=progress)
    progress(f"building {options.model} ({dtype}) on {device} with random weights")
    model = configure(build_llama(config, dtype=dtype, device=device), Fixes.all())
    model.setup_caches(1, max(plan.context + plan.steps + 8, 64 + plan.new_tokens + 8))

    def in_vocab(ids: list[int]) -> list[int]:
        return [i if i < config.vocab_size else unk for i in ids]

    began = time.perf_counter()
    decode_rows = _decode(model, ceilings, plan, device, progress, notes)
    prefill_rows = _prefill(model, ceilings, plan, device, progress, notes)
    try:
        quality = _quality(model, corpus, in_vocab, plan, progress)
    except RooflineError:
        raise
    except Exception as exc:  # noqa: BLE001 - the speed rows stand; the failure is written where quality would be
        traceback.print_exc()
        quality = Quality(note=f"failed: {common.first_line(exc)}")
        notes.append(f"quality measurement failed: {common.first_line(exc)}")
    payload = {
        "study": "fp8", "model": options.model, "config": dataclasses.asdict(config), "device": str(device),
        "device_name": ceilings.device_name, "dtype": str(dtype).replace("torch.", ""), "reference": _short(dtype),
        "plan": plan,
        "decode": decode_rows, "prefill": prefill_rows, "quality": quality, "notes": notes,
        "methods": {"timing": common.timing_method(device),
                    "decode": DECODE_METHOD.format(
                        context=plan.context, steps=plan.steps, rounds=plan.rounds,
                        tiles="each format's tiles tuned per weight shape by decode_fast.tune before timing"
                        if plan.tune else "the default tiles for both formats, untuned"),
                    "bytes": BYTES_METHOD,
                    "prefill": PREFILL_METHOD.format(tokens=plan.prefill_tokens, rounds=plan.rounds),
                    "quality": QUALITY_METHOD.format(window=plan.window), "random_weights": RANDOM_WEIGHTS,
                    "quantisation": "e4m3 (torch.float8_e4m3fn), scale = max|row| / 448 per output channel of "
                                    "every Linear (output head included); embedding and norms stay in the "
                                    "model's dtype"},
        "ceilings": {"memory_bandwidth_bytes_per_s": ceilings.memory_bandwidth_bytes_per_s,
                     "peak_flops_per_s": ceilings.peak_flops_per_s, "source": ceilings.source},
        "environment": common.environment(device, ceilings.device_name),
        "seconds": time.perf_counter() - began,
    }
    charts = {"fp8.png": fp8_png(payload)} if any(math.isfinite(r.tokens_per_s) for r in decode_rows) else {}
    files = common.write_study(out_dir, "fp8", payload, fp8_markdown(payload, charted=bool(charts)), charts)
    return StudyResult("fp8", fp8_table(payload), files, summary=_summary(payload))


# ---------------------------------------------------------------- decode


def _short(dtype: torch.dtype) -> str:
    return {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}.get(dtype, str(dtype))


def _decode(model, ceilings, plan: Plan, device: torch.device, progress: Progress, notes: list[str]) -> list[DecodeRow]:
    from roofline.lab import bench
    from roofline.lab.decode_fast import FastDecode, tune
    from roofline.lab.fp8 import Fp8FastDecode, fp8_weight_bytes, fp8_weights
    from roofline.lab.graphed import GraphedDecoder

    context = plan.context + plan.steps // 2
    bytes16 = bench.decode_bytes(model, 1, context)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    bytes8 = bytes16 - model.output.weight.element_size() * linear + fp8_weight_bytes(model)
    rows = [DecodeRow(f"{_short(model.output.weight.dtype)} weights", bytes_per_token=bytes16),
            DecodeRow("fp8 e4m3 weights", bytes_per_token=bytes8)]
    if device.type != "cuda":
        for row in rows:
            row.note = "CUDA only"
        return rows
    progress("decode: building the fp16 and fp8 steps, capturing their graphs")
    try:
        fast16 = FastDecode(model)
        with fp8_weights(model):
            fast8 = Fp8FastDecode(model)
        if fast8.backend != "triton":
            notes.append(f"decode ran the kernels' torch twins ({fast8.backend})")
        for row, fast in zip(rows, (fast16, fast8)):
            if plan.tune:
                try:
                    tune(fast, progress=lambda m, f=row.format: progress(f"tune {f}: {m}"), position=context)
                except Exception as exc:  # noqa: BLE001 - the default tiles still give a figure
                    notes.append(f"tuning {row.format} failed, default tiles used: {common.first_line(exc)}")
            row.tiles = {r: c.as_dict() for r, c in fast.tuning.configs.items()}
        prompt, pad = bench._prompt(model, 1, plan.context)
        decoders = {}
        with torch.no_grad():
            for row, step in zip(rows, (fast16.step, fast8.step)):
                try:  # one format failing to build or capture leaves the other's figure
                    decoders[row.format] = GraphedDecoder(model, step, pad, 16, warmup=2)
                except Exception as exc:  # noqa: BLE001
                    traceback.print_exc()
                    row.note = f"failed: {common.first_line(exc)}"
            bench._prefill(model, prompt, pad)
            token = prompt[:, -1:].contiguous()
            runs = {name: (lambda d=d: d.run(token, plan.context, plan.steps)) for name, d in decoders.items()}
            for fn in runs.values():
                fn()
            timings = common.interleaved(runs, device, plan.rounds)
    except Exception as exc:  # noqa: BLE001 - the failure is the row's figure
        traceback.print_exc()
        for row in rows:
            row.note = row.note or f"failed: {common.first_line(exc)}"
        return rows
    bandwidth = ceilings.memory_bandwidth_bytes_per_s
    for row in rows:
        if row.format not in timings:
            continue
        t = timings[row.format]
        row.tokens_per_s = plan.steps / t.median_s
        row.ms_per_token = 1e3 * t.median_s / plan.steps
        row.iqr_ms_per_token = 1e3 * t.spread_s / plan.steps
        if bandwidth > 0:
            row.memory_roof_share = row.bytes_per_token * row.tokens_per_s / bandwidth
        row.speedup_vs_fp16 = row.tokens_per_s / rows[0].tokens_per_s if rows[0].format in timings else float("nan")
    del decoders, fast16, fast8
    common.free_memory(device)
    return rows


# ---------------------------------------------------------------- prefill


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(e4m3 rows, fp32 scale per row (rows, 1)) of activations ``x`` [tokens, K]."""
    from roofline.lab.fp8 import quantize_e4m3

    x8, scale = quantize_e4m3(x)
    return x8, scale[:, None]


def fp8_matmul(x8: torch.Tensor, x_scale: torch.Tensor, w8: torch.Tensor, w_scale: torch.Tensor) -> torch.Tensor:
    """x @ w^T from e4m3 rows of x (scale per row, (tokens, 1)) and of w (scale per output channel, (N,)):
    torch._scaled_mm with row-wise scales (w8^T is column-major, as it requires), bf16 out (what row-wise takes)."""
    return torch._scaled_mm(x8, w8.t(), scale_a=x_scale, scale_b=w_scale[None, :], out_dtype=torch.bfloat16)


def _prefill(model, ceilings, plan: Plan, device: torch.device, progress: Progress,
             notes: list[str]) -> list[PrefillRow]:
    from roofline.lab.fp8 import fp8_weights

    variants = [f"{_short(model.output.weight.dtype)} F.linear", "fp8 matmul", "fp8 + quantise"]
    rows = [PrefillRow(v) for v in variants]
    if device.type != "cuda":
        for row in rows:
            row.note = "CUDA only"
        return rows
    if not hasattr(torch, "_scaled_mm"):
        for row in rows[1:]:
            row.note = f"torch {torch.__version__} has no torch._scaled_mm"
        return rows
    progress(f"prefill: every Linear at {plan.prefill_tokens} tokens, fp16 vs torch._scaled_mm")
    dtype = model.output.weight.dtype
    gen = torch.Generator(device="cpu").manual_seed(2)
    flops = 0.0
    try:
        with fp8_weights(model), torch.no_grad():
            linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
            inputs: dict[int, torch.Tensor] = {}
            for m in linears:
                k = m.weight.shape[1]
                if k not in inputs:
                    inputs[k] = (torch.randn(plan.prefill_tokens, k, generator=gen) * 0.5).to(device, dtype)
                flops += 2.0 * plan.prefill_tokens * k * m.weight.shape[0]
            quantised = {k: quantize_rows(x) for k, x in inputs.items()}

            def fp16() -> None:
                for m in linears:
                    F.linear(inputs[m.weight.shape[1]], m.weight)

            def fp8(requantise: bool) -> None:
                for m in linears:
                    k = m.weight.shape[1]
                    x8, sa = quantize_rows(inputs[k]) if requantise else quantised[k]
                    fp8_matmul(x8, sa, m.weight_fp8, m.weight_scale)

            runs = {variants[0]: fp16, variants[1]: lambda: fp8(False), variants[2]: lambda: fp8(True)}
            for row in rows:
                try:  # the warm-up; a variant torch refuses is a row that says why
                    runs[row.variant]()
                    common.sync(device)
                except Exception as exc:  # noqa: BLE001
                    traceback.print_exc()
                    row.note = f"failed: {common.first_line(exc)}"
                    runs.pop(row.variant)
            timings = common.interleaved(runs, device, plan.rounds)
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc()
        for row in rows:
            row.note = row.note or f"failed: {common.first_line(exc)}"
        notes.append(f"prefill matmuls failed: {common.first_line(exc)}")
        return rows
    for row in rows:
        if row.variant not in timings:
            continue
        t = timings[row.variant]
        row.ms, row.iqr_ms = 1e3 * t.median_s, 1e3 * t.spread_s
        row.tflops = flops / t.median_s / 1e12
        roof = ceilings.peak_for(str(dtype).replace("torch.", "") if row is rows[0] else "float8_e4m3fn")
        row.roof_tflops = roof / 1e12 if roof > 0 else float("nan")
        if roof > 0:
            row.share_of_roof = row.tflops * 1e12 / roof
        row.speedup_vs_fp16 = rows[0].ms / row.ms if row.ms > 0 and math.isfinite(rows[0].ms) else float("nan")
    common.free_memory(device)
    return rows


# ---------------------------------------------------------------- quality


@torch.no_grad()
def _greedy(model, step, prompt: list[int], new_tokens: int) -> list[int]:
    from roofline.lab.generate import padded_causal_mask

    device = model.output.weight.device
    tokens = torch.tensor([prompt], device=device)
    pad = torch.zeros(1, dtype=torch.long, device=device)
    input_pos = torch.arange(len(prompt), device=device)
    logits = model(tokens, input_pos, mask=padded_causal_mask(input_pos, pad, model.max_seq))
    token = logits[:, -1].argmax(-1, keepdim=True)
    out = [int(token.item())]
    for i in range(new_tokens - 1):
        token = step(model, token, torch.tensor([len(prompt) + i], device=device), pad).view(1, 1)
        out.append(int(token.item()))
    return out


def validation_tokens(corpus, in_vocab, count: int) -> list[int]:
    """The first ``count`` words of WikiText-2's validation split (empty lines skipped), as the lab's ids."""
    path = corpus.directory / "valid.txt"
    if not path.is_file():
        raise RooflineError(f"no WikiText-2 valid.txt in {corpus.directory}: the fp8 study's perplexity needs it")
    ids: list[int] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words:
            ids += corpus.vocab.encode(words + ["<eos>"])
        if len(ids) >= count:
            break
    return in_vocab(ids[:count])


@torch.no_grad()
def _perplexity(model, windows: torch.Tensor) -> tuple[list[torch.Tensor], float]:
    """(log-probabilities of each window, in fp32; mean next-token cross-entropy)."""
    logps, losses = [], []
    for row in windows:
        logits = model(row[None, :-1]).float()
        logp = torch.log_softmax(logits[0], dim=-1)
        losses.append(-logp.gather(1, row[1:, None]).mean())
        logps.append(logp)
    return logps, float(torch.stack(losses).mean())


def _quality(model, corpus, in_vocab, plan: Plan, progress: Progress) -> Quality:
    from roofline.lab.data import sentence_prompts
    from roofline.lab.decode_fast import FastDecode
    from roofline.lab.fp8 import Fp8FastDecode, dequantize, fp8_weights, quantize_e4m3

    device = model.output.weight.device
    quality = Quality(prompts=plan.prompts, new_tokens=plan.new_tokens)
    prompts = [in_vocab(p) for p in sentence_prompts(corpus, plan.prompts, max_words=48)]
    progress(f"quality: greedy tokens of {len(prompts)} WikiText-2 prompts x {plan.new_tokens}, fp16 vs fp8")
    fast16 = FastDecode(model)
    reference = [_greedy(model, fast16.step, p, plan.new_tokens) for p in prompts]
    del fast16
    with fp8_weights(model):
        fast8 = Fp8FastDecode(model)
        fp8_tokens = [_greedy(model, fast8.step, p, plan.new_tokens) for p in prompts]
        del fast8
        for ref, got in zip(reference, fp8_tokens):
            first = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), None)
            quality.first_divergences.append(first)
            quality.same_tokens += sum(a == b for a, b in zip(ref, got))
            quality.compared_tokens += len(ref)
            quality.identical_prompts += first is None
        progress(f"quality: perplexity and KL over {plan.windows} windows of {plan.window} validation tokens")
        ids = validation_tokens(corpus, in_vocab, plan.windows * (plan.window + 1))
        usable = len(ids) // (plan.window + 1)
        windows = torch.tensor(ids[: usable * (plan.window + 1)], device=device).view(usable, plan.window + 1)
        logp8, loss8 = _perplexity(model, windows)
    logp16, loss16 = _perplexity(model, windows)
    quality.perplexity_tokens = usable * plan.window
    quality.perplexity_fp16, quality.perplexity_fp8 = math.exp(loss16), math.exp(loss8)
    quality.perplexity_ratio = quality.perplexity_fp8 / quality.perplexity_fp16
    kl = [F.kl_div(b, a, log_target=True, reduction="sum") / a.shape[0] for a, b in zip(logp16, logp8)]
    quality.kl_nats = float(torch.stack(kl).mean())
    quality.top1_agreement = float(torch.cat([(a.argmax(-1) == b.argmax(-1)).float()
                                              for a, b in zip(logp16, logp8)]).mean())
    w = model.layers[0].feed_forward.w1.weight.detach()
    w8, scale = quantize_e4m3(w)
    quality.weight_rel_error = float((dequantize(w8, scale) - w.float()).norm() / w.float().norm())
    return quality


# ---------------------------------------------------------------- output


def _summary(payload: dict[str, Any]) -> list[str]:
    decode = payload["decode"]
    q: Quality = payload["quality"]
    lines = []
    if math.isfinite(decode[1].speedup_vs_fp16):
        lines.append(f"{payload['model']} fp8 decode: {decode[1].tokens_per_s:,.0f} tokens/s = "
                     f"{decode[1].speedup_vs_fp16:.2f}x {payload['reference']} ({decode[0].tokens_per_s:,.0f} "
                     f"tokens/s, {100 * decode[0].memory_roof_share:.0f}% vs {100 * decode[1].memory_roof_share:.0f}% "
                     "of the memory roof)")
    ref = payload["reference"]
    lines.append(f"greedy tokens equal to {ref}: {q.same_tokens}/{q.compared_tokens}; perplexity fp8/{ref} "
                 f"{q.perplexity_ratio:.4f}; KL({ref}||fp8) {q.kl_nats:.2e} nats (random weights: distortion only)")
    return lines


def decode_table(payload: dict[str, Any]) -> str:
    lines = ["| decode (batch 1) | tokens/s | ms/token (IQR) | bytes/token | % of memory roof | speed-up vs fp16 | note |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in payload["decode"]:
        lines.append(f"| {r.format} | {common.fmt(r.tokens_per_s, ',.1f')} | "
                     f"{common.fmt(r.ms_per_token, '.3f')} ({common.fmt(r.iqr_ms_per_token, '.3f')}) | "
                     f"{r.bytes_per_token / 1e6:,.1f} MB | {common.fmt(100 * r.memory_roof_share, '.1f', '%')} | "
                     f"{common.fmt(r.speedup_vs_fp16, '.2f', 'x')} | {r.note} |")
    return "\n".join(lines)


def prefill_table(payload: dict[str, Any]) -> str:
    lines = [f"| prefill matmuls ({payload['plan'].prefill_tokens} tokens) | ms (IQR) | TFLOP/s | roof TFLOP/s | "
             "% of roof | speed-up | note |", "|---|---:|---:|---:|---:|---:|---|"]
    for r in payload["prefill"]:
        lines.append(f"| {r.variant} | {common.fmt(r.ms, '.2f')} ({common.fmt(r.iqr_ms, '.2f')}) | "
                     f"{common.fmt(r.tflops, ',.0f')} | {common.fmt(r.roof_tflops, ',.0f')} | "
                     f"{common.fmt(100 * r.share_of_roof, '.0f', '%')} | {common.fmt(r.speedup_vs_fp16, '.2f', 'x')} "
                     f"| {r.note} |")
    return "\n".join(lines)


def quality_table(payload: dict[str, Any]) -> str:
    q: Quality = payload["quality"]
    return "\n".join([
        f"| quality (fp8 vs {payload['reference']}) | value |", "|---|---:|",
        f"| greedy tokens equal | {q.same_tokens} / {q.compared_tokens} ({q.identical_prompts} of {q.prompts} "
        f"prompts identical over {q.new_tokens} tokens) |",
        f"| first divergence per prompt | {', '.join('-' if d is None else str(d) for d in q.first_divergences)} |",
        f"| perplexity {payload['reference']} (random weights) | {q.perplexity_fp16:,.1f} |",
        f"| perplexity fp8 (random weights) | {q.perplexity_fp8:,.1f} |",
        f"| perplexity ratio fp8 / {payload['reference']} | {q.perplexity_ratio:.4f} |",
        f"| KL({payload['reference']} \\|\\| fp8), nats per token | {q.kl_nats:.3e} |",
        f"| next-token argmax equal | {100 * q.top1_agreement:.1f}% of {q.perplexity_tokens} positions |",
        f"| weight error, layer 0 gate (relative Frobenius) | {q.weight_rel_error:.4f} |",
    ])


def fp8_table(payload: dict[str, Any]) -> str:
    return "\n\n".join([decode_table(payload), prefill_table(payload), quality_table(payload)])


def fp8_markdown(payload: dict[str, Any], *, charted: bool) -> str:
    """``charted``: fp8.png was drawn (it plots the speed rows, so not on a CPU, where they are CUDA only)."""
    m = payload["methods"]
    return "\n".join([
        f"# FP8 weights and matmuls: {payload['model']} on {payload['device_name'] or payload['device']} "
        f"({payload['dtype']})", "",
        *[f"- {n}" for n in payload["notes"]], "",
        decode_table(payload), "", prefill_table(payload), "", quality_table(payload), "",
        f"**{m['random_weights']}**", "",
        "## Method", "",
        f"- Quantisation: {m['quantisation']}.",
        f"- Decode: {m['decode']}.", f"- Bytes per token: {m['bytes']}.",
        f"- Prefill: {m['prefill']}.", f"- Quality: {m['quality']}.", f"- Timing: {m['timing']}.",
        "", "Chart: fp8.png (decode tokens/s against the memory roof of each format; prefill TFLOP/s against the "
            "fp16 and fp8 roofs)." if charted else "No chart: fp8.png plots the decode and prefill speed rows, which "
            "are CUDA only.", "",
    ])


def fp8_png(payload: dict[str, Any]) -> bytes:
    decode, prefill = payload["decode"], payload["prefill"]
    bandwidth = payload["ceilings"]["memory_bandwidth_bytes_per_s"]

    def draw(ax_decode, ax_prefill) -> None:
        names = [r.format for r in decode]
        ax_decode.bar(range(len(decode)), [r.tokens_per_s for r in decode], color=["#4c72b0", "#dd8452"])
        if bandwidth > 0:
            for i, r in enumerate(decode):
                ax_decode.plot([i - 0.4, i + 0.4], [bandwidth / r.bytes_per_token] * 2, color="black",
                               linestyle="--", linewidth=1, label="memory roof (bandwidth / bytes per token)" if i == 0
                               else None)
        ax_decode.set_xticks(range(len(decode)))
        ax_decode.set_xticklabels(names, fontsize=8)
        ax_decode.set_ylabel("batch-1 decode tokens/s (median)")
        ax_decode.legend(fontsize=7)
        ax_decode.set_title(f"{payload['model']} decode, {payload['device_name'] or payload['device']}", fontsize=9)
        shown = [r for r in prefill if math.isfinite(r.tflops)]
        ax_prefill.bar(range(len(shown)), [r.tflops for r in shown], color="#55a868")
        for i, r in enumerate(shown):
            ax_prefill.plot([i - 0.4, i + 0.4], [r.roof_tflops] * 2, color="black", linestyle="--", linewidth=1)
        ax_prefill.set_xticks(range(len(shown)))
        ax_prefill.set_xticklabels([r.variant for r in shown], fontsize=8)
        ax_prefill.set_ylabel("prefill matmul TFLOP/s (dashed: measured roof)")
        ax_prefill.set_title(f"prefill matmuls, {payload['plan'].prefill_tokens} tokens", fontsize=9)

    return common.png(draw, (11, 4.5), ncols=2)
