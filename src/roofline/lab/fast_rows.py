"""The hand-written batch-1 decode (lab/decode_fast.py) as rows of the lab, beside the compiled and tuned steps.

Four rows, "+ Triton GEMV", "+ Triton GEMV + PDL" (every kernel launched with programmatic dependent launch),
"+ Triton GEMV + PDL + attention v2" (the same tiles, the second attention kernel: lab/kernels/triton_attention_v2.py,
its slices per program tuned of their own) and "... + deep prefetch" (the products' tiles tuned again under PDL among
gemv.prefetch_configs', which read a program's whole share of a row block, or several tiles of it, before waiting
for the previous kernel, and the tile the step had) and "... + L2 prefetch" (that step whose attention's extra
programs ask the L2 for the layer's next weights, wo then w13's first bytes, the amount tuned in the whole step:
decode_fast.tune_l2_prefetch) and "... + persistent" (the deep-prefetch step with wo, the norm, w13 and w2 as one
persistent kernel a layer, a grid barrier between them, where a checked candidate makes the whole step faster:
decode_fast.tune_persistent, the three kernels among the candidates),
each timed as bench.peak_decode times its steps (the loop captured as CUDA graphs of 16 steps, same seeded prompt
and context, median of PEAK_REPS runs), its tiles tuned once per weight shape before anything is timed. Tokens are
compared with the eager fixed model's greedy tokens on the same prompt; at the first difference, that model's
top-two logit gap there (in ulps) says whether it was a near-tie. Each row's device time per token by kernel class
comes from the roofline analysis of a profiled (ungraphed) run of the same step (analyze/kernel_classes.py), with
the products' and attention's bytes from the weights and the KV cache they read (no counted op carries them).

Triton's kernels need a CUDA GPU: elsewhere both rows are present, skipped, with that reason (the kernels' torch
twins would time torch, not the kernels).
"""

from __future__ import annotations

import math

import os
import tempfile
from dataclasses import dataclass
from typing import Callable

import torch

from roofline.lab import bench
from roofline.lab.agreement import compare_tokens, logit_gap
from roofline.lab.generate import decode_one_token
from roofline.lab.model import Fixes, configure, fused_projections
from roofline.models.llama import Transformer
from roofline.report import Ceilings, KernelClasses

FAST = "+ Triton GEMV"
FAST_PDL = "+ Triton GEMV + PDL"
FAST_PDL_V2 = "+ Triton GEMV + PDL + attention v2"
FAST_PREFETCH = "+ Triton GEMV + PDL + attention v2 + deep prefetch"
FAST_L2 = FAST_PREFETCH + " + L2 prefetch"
FAST_PERSIST = FAST_PREFETCH + " + persistent"
METHOD = (
    "FastDecode (lab/decode_fast.py): five Triton kernels a layer, tiles tuned per weight shape before timing; "
    f"the loop captured as CUDA graphs of {bench.GRAPH_STEPS} steps, median of {bench.PEAK_REPS} runs (as the "
    "compiled rows); bytes/token and % of roof as the compiled rows; tokens against the eager fixed model's "
    "greedy tokens on the same prompt; kernel classes from roofline's analysis of a profiled ungraphed run of "
    "the same step, with the graphed time per token less the kernels' time as the time between kernels in the graph"
)


@dataclass
class FastDecodeRow:
    """One hand-written variant's batch-1 decode; ``skipped`` (non-empty) says why it has no figures."""

    title: str
    tokens_per_s: float | None = None
    ms_per_token: float | None = None
    bytes_per_token: float | None = None
    share_of_memory_roof: float | None = None
    compared_tokens: int = 0
    same_tokens: int = 0
    first_divergence: int | None = None
    logit_gap_ulps: float | None = None
    breakdown: KernelClasses | None = None
    graphed_gap_s: float | None = None
    skipped: str = ""


def skip_reason(device: torch.device) -> str:
    """Why the rows cannot run here ("" where they can)."""
    from roofline.lab.kernels import triton_available

    if device.type != "cuda":
        return (f"skipped: Triton's kernels need a CUDA GPU (this run is on {device.type}); their torch twins "
                "would time torch, not the kernels")
    if not triton_available():
        return "skipped: Triton is not importable here"
    return ""


def measure_fast_decode(model: Transformer, ceilings: Ceilings, *, context: int, steps: int, warmup: int,
                        pdl: bool = True, progress: Callable[[str], None] = lambda _: None) -> list[FastDecodeRow]:
    device = model.output.weight.device
    titles = [FAST] + ([FAST_PDL, FAST_PDL_V2, FAST_PREFETCH, FAST_L2, FAST_PERSIST] if pdl else [])
    reason = skip_reason(device)
    if reason:
        return [FastDecodeRow(t, skipped=reason) for t in titles]
    from roofline.lab.decode_fast import (FastDecode, tune, tune_attention, tune_l2_prefetch, tune_persistent,
                                          tune_prefetch)

    configure(model, Fixes.all())
    bytes_per_token = bench.decode_bytes(model, 1, context + steps // 2)
    bandwidth = ceilings.memory_bandwidth_bytes_per_s
    prompt, pad = bench._prompt(model, 1, context)
    with torch.no_grad():
        bench._prefill(model, prompt, pad)
        token = prompt[:, -1:].contiguous()
        pos = torch.tensor([context], device=device)
        reference = bench._decode_steps(model, decode_one_token, token, pos, pad, steps)[0].tolist()
    fed = prompt[0].tolist() + [int(prompt[0, -1])]
    kv_bytes = bench.decode_bytes(model, 1, context + steps // 2) - bench.decode_bytes(model, 1, 0)
    rows, generated = [], {}
    with fused_projections(model):
        fast = FastDecode(model)
        progress("fast decode: tuning the Triton tiles per weight shape")
        tune(fast, progress=progress, position=context + steps // 2)
        known = {"matrix products": fast.weight_bytes(), "attention": kv_bytes}
        v2 = deep = None
        for title in titles:
            row = FastDecodeRow(title, bytes_per_token=bytes_per_token)
            try:
                if title in (FAST_PDL_V2, FAST_PREFETCH) and v2 is None:
                    progress("fast decode: tuning attention v2's slices per program")
                    v2 = tune_attention(FastDecode(model, tuning=fast.tuning, attention_version=2),
                                        position=context + steps // 2, progress=progress)
                if title == FAST_PDL_V2:
                    decoder = FastDecode(model, tuning=v2, pdl=True, attention_version=2)
                elif title == FAST_PREFETCH:
                    progress("fast decode: tuning the products' deep prefetch under PDL")
                    decoder = FastDecode(model, tuning=v2, pdl=True, attention_version=2)
                    deep = tune_prefetch(decoder, progress=progress, position=context + steps // 2)
                elif title in (FAST_L2, FAST_PERSIST):  # each tuned in the whole step, from deep prefetch's tuning
                    if deep is None:
                        raise RuntimeError("the deep-prefetch row failed (its tuning is this row's start)")
                    decoder = FastDecode(model, tuning=deep, pdl=True, attention_version=2)
                    if title == FAST_L2:
                        progress("fast decode: tuning the attention's L2 prefetch in the whole step")
                        tune_l2_prefetch(decoder, progress=progress, position=context + steps // 2)
                    else:
                        progress("fast decode: tuning the persistent kernel after attention in the whole step")
                        tune_persistent(decoder, progress=progress, position=context + steps // 2)
                        if decoder.tuning.persistent is None:
                            row.skipped = kept_three_kernels(decoder.tuning.candidates_us["persistent in the step"])
                            rows.append(row)
                            continue
                else:
                    decoder = fast if title == FAST else FastDecode(model, tuning=fast.tuning, pdl=True)
                progress(f"fast decode: {title}")
                seconds, tokens = bench._graphed_decode_time(model, decoder.step, context, steps, warmup,
                                                             reps=bench.PEAK_REPS)
                breakdown = _breakdown(model, decoder.step, ceilings, context, steps, known)
                if decoder.persistent_state.failed():
                    raise RuntimeError("a persistent kernel's grid barrier gave up (the grid was not co-resident): "
                                       "its figures are of wrong results")
                row.tokens_per_s = steps / seconds
                row.ms_per_token = 1e3 * seconds / steps
                row.share_of_memory_roof = row.tokens_per_s * bytes_per_token / bandwidth if bandwidth > 0 else None
                generated[title] = tokens[0].tolist()
                row.breakdown = breakdown
                if row.breakdown is not None:
                    row.graphed_gap_s = max(0.0, seconds / steps - row.breakdown.kernel_time_s)
            except Exception as exc:  # noqa: BLE001 - the other rows and the lab's other sections still stand
                text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
                row.skipped = f"failed: {type(exc).__name__}: {text}"
            rows.append(row)
    for row in rows:  # the plain modules back: the eager model explains any divergence
        if row.title in generated:
            found = compare_tokens(row.title, [reference], [generated[row.title]])
            row.compared_tokens = found.compared_tokens
            row.same_tokens = found.compared_tokens if found.identical else found.first_divergence or 0
            row.first_divergence = found.first_divergence
            if found.first_divergence is not None:
                _, row.logit_gap_ulps = logit_gap(model, fed, reference, found.first_divergence)
    return rows


def kept_three_kernels(timings: list) -> str:
    """The persistent row's note when its tuning kept the three kernels: measuring it would repeat the deep-prefetch
    row. ``timings``: the tuning's (candidate, us a step) pairs, the three kernels first."""
    tried = [us for _, us in timings[1:] if math.isfinite(us)]
    fastest = f"the fastest of {len(tried)} working candidates {min(tried):,.1f} us" if tried else "no candidate ran"
    return (f"not measured: the tuning kept the three kernels after attention (a step {timings[0][1]:,.1f} us in the "
            f"whole step's CUDA graph; {fastest}; {len(timings) - 1 - len(tried)} failed), so this row is the "
            "deep-prefetch row's step")


def _breakdown(model: Transformer, step, ceilings: Ceilings, context: int, steps: int,
               known: dict[str, float]) -> KernelClasses | None:
    """Kernel classes per token of a profiled Python loop of ``step``, as roofline analyses any trace."""
    from roofline.analyze.kernel_classes import kernel_classes
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    device = model.output.weight.device
    prompt, pad = bench._prompt(model, 1, context)
    with torch.no_grad():
        bench._prefill(model, prompt, pad)
        token = prompt[:, -1:].contiguous()
        pos = torch.tensor([context], device=device)
        bench._decode_steps(model, step, token, pos, pad, 4)
        bench._sync(device)
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            # Hand-written kernels launch outside any aten op: the annotation holds them in the trace's op tree.
            with torch.profiler.record_function("decode_loop"):
                bench._decode_steps(model, step, token, pos, pad, steps)
                bench._sync(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        report = report_from_trace(load_trace(path), ceilings)
    return kernel_classes(report, known_bytes=known, per_step=steps, unit="token",
                          bytes_method="matrix products: every weight matrix the step reads; attention: the KV cache "
                                       "of the context read")
