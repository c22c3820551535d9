"""Measure every configuration the three views need (lab/views.py), in interleaved passes, within a time budget.

Configurations: the naive model, the fully fixed one (eager, and compiled), each fix alone on the naive model,
the fixed model with each fix taken out, and the cumulative stages between. They are measured in that order of
priority. Pass 1 gives each one its warm-up (one whole untimed run: its first pass through each sequence length
grows the allocator's pool and picks kernels, and for the compiled step it compiles and captures the CUDA graphs;
on the H200 such a first run took up to 3x a later one), its evidence (syncs, bytes, FLOPs, kernel launches per
token of a whole run, extrapolated from two short counted runs of the eager ops) and its first timed run; passes 2..reps add one timed run each, so
every configuration's runs are spread over the whole measurement and slow drift of the machine hits all alike.
With a budget, a run that would not fit in what is left (judged by the last run of the same configuration, or of
the same kind, batched or not) is not started, and the result says what was cut; the first configuration of each
kind has no estimate yet and is always measured once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from roofline.device.measure import time_fn
from roofline.lab import views
from roofline.lab.agreement import compare_tokens
from roofline.lab.generate import DecodeStep, decode_one_token, generate, generate_ids
from roofline.lab.model import STAGE_ORDER, Fixes, configure
from roofline.models.llama import Transformer
from roofline.report import Ceilings

Progress = Callable[[str], None]


@dataclass
class Ablation:
    workload: str
    reps: int
    evidence_tokens: int
    budget_s: float | None
    order: list[str]
    configs: list[views.Config] = field(default_factory=list)
    rows: list[views.Row] = field(default_factory=list)
    spent_s: float = 0.0
    cut: list[str] = field(default_factory=list)
    method: str = ""


def configurations(include_compile: bool) -> list[list[str]]:
    """Fix lists of every configuration the views need, most important first, each once."""
    five = list(views.FIVE)
    wanted = [[], five] + ([five + ["compiled"]] if include_compile else [])
    wanted += [[f for f in five if f != fix] for fix in ("kv_cache", "sync_free", "contiguous_layout",
                                                          "norms_in_model_dtype", "batched")]
    if include_compile:
        wanted.append([f for f in five if f != "sync_free"] + ["compiled"])
    wanted += [[fix] for fix in ("batched", "sync_free", "contiguous_layout", "norms_in_model_dtype", "kv_cache")]
    for pairs in views.view_pairs(STAGE_ORDER, include_compile).values():
        wanted += [after for _, _, after in pairs]
    seen, result = set(), []
    for fixes in wanted:
        key = views.config_key(views.canonical(fixes))
        if key not in seen:
            seen.add(key)
            result.append(views.canonical(fixes))
    return result


def _fixes(names: list[str]) -> Fixes:
    return Fixes(**{name: True for name in names})


def _count(model: Transformer, prompts: list[list[int]], new_tokens: int, eos_id: int,
           fixes: Fixes) -> tuple[float, float, float, float, int]:
    """(syncs, bytes, FLOPs, kernel launches, unmodeled ops) of one run of the eager ops, tokens left on the
    device (the one final copy to the host is not part of the loop)."""
    from roofline.capture.syncs import SyncDetector
    from roofline.capture.traffic import count_traffic

    with SyncDetector(mode="silent") as detector:
        counter = count_traffic(lambda: generate_ids(model, prompts, new_tokens, eos_id, fixes, decode_one_token))
    syncs = detector.total_count
    syncs = syncs() if callable(syncs) else syncs
    return float(syncs), counter.bytes, counter.flops, float(counter.kernels), counter.unmodeled


def count_evidence(model: Transformer, prompts: list[list[int]], new_tokens: int, eos_id: int, fixes: Fixes,
                   compiled: bool, max_new_tokens: int) -> views.Evidence:
    """Per generated token of a whole run of ``max_new_tokens``, from two short counted runs: one new token (the
    prefill, or the first recomputation) and ``new_tokens``; their difference gives one step, and the whole run
    is the first plus ``max_new_tokens - 1`` such steps. Counting a whole run op by op would take longer than
    timing it; a short run alone would charge the prefill to a few tokens. For the recomputing loop, whose steps
    grow with the context, the extrapolation uses the steps just after the prompt, so it understates the later
    ones by about (new tokens / 2) / prompt length."""
    new_tokens = max(new_tokens, 2)
    first = _count(model, prompts, 1, eos_id, fixes)
    short = _count(model, prompts, new_tokens, eos_id, fixes)
    whole = [a + (b - a) / (new_tokens - 1) * (max_new_tokens - 1) for a, b in zip(first[:4], short[:4])]
    tokens = len(prompts) * max_new_tokens
    syncs, moved, flops, launches = (max(v, 0.0) / tokens for v in whole)
    return views.Evidence(new_tokens, syncs, moved, flops, None if compiled else launches, short[4])


def run_ablation(model: Transformer, prompts: list[list[int]], max_new_tokens: int, eos_id: int,
                 ceilings: Ceilings, *, reps: int, evidence_tokens: int, budget_s: float | None,
                 compiled_step: DecodeStep | None, workload: str, progress: Progress,
                 checkpoint: Callable[[Ablation], None]) -> tuple[Ablation, dict[str, list[list[int]]]]:
    """Measure every configuration (see the module docstring); ``checkpoint`` gets the Ablation after each
    configuration of pass 1 and after each later pass. Returns it and each configuration's greedy tokens."""
    device = model.output.weight.device
    dtype = str(model.output.weight.dtype).replace("torch.", "")
    began = time.perf_counter()
    include_compile = compiled_step is not None
    ablation = Ablation(workload, reps, evidence_tokens, budget_s, list(STAGE_ORDER), method=views.SPREAD_METHOD)
    configs: dict[str, views.Config] = {}
    tokens_out: dict[str, list[list[int]]] = {}
    last_run_s: dict[str, float] = {}

    def left() -> float:
        return float("inf") if budget_s is None else budget_s - (time.perf_counter() - began)

    def finish() -> None:
        ablation.configs = list(configs.values())
        ablation.rows = views.build_rows(configs, STAGE_ORDER, include_compile, ceilings, dtype)
        ablation.spent_s = time.perf_counter() - began
        checkpoint(ablation)

    def runner(names: list[str]) -> Callable[[], list[list[int]]]:
        fixes = _fixes(names)
        step = compiled_step if fixes.compiled else decode_one_token

        def run() -> list[list[int]]:
            configure(model, fixes)
            return generate(model, prompts, max_new_tokens, eos_id, fixes, step)

        return run

    def timed(key: str, names: list[str]) -> None:
        [seconds] = time_fn(runner(names), device, warmup=0, repeats=1)
        configs[key].samples_s.append(seconds)
        last_run_s[key] = seconds

    plan = configurations(include_compile)
    for i, names in enumerate(plan):
        key = views.config_key(names)
        similar = [s for k, s in last_run_s.items() if ("batched" in k) == ("batched" in names)]
        if similar and left() < 1.5 * max(similar):
            ablation.cut.append(f"{views.config_title(names)}: not measured (budget spent)")
            continue
        progress(f"configuration {i + 1}/{len(plan)}: {views.config_title(names)}")
        config = views.Config(key, views.config_title(names), names)
        configs[key] = config
        fixes = _fixes(names)
        short = Fixes(**{n: True for n in names if n != "compiled"})
        try:
            tokens_out[key] = runner(names)()
            _sync(device)
            timed(key, names)
        except Exception as exc:  # noqa: BLE001 - a failed compile is reported; the eager views stand
            if not fixes.compiled:
                raise
            del configs[key]
            ablation.cut.append(f"{config.title}: failed, {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            include_compile, compiled_step = False, None
            continue
        config.tokens = sum(len(t) for t in tokens_out[key])
        config.evidence = count_evidence(model, prompts, evidence_tokens, eos_id, short, fixes.compiled,
                                         max_new_tokens)
        if fixes.compiled:
            config.note = "evidence counted on the eager ops of the same loop (compiled kernels fuse, so move less)"
        progress(f"  {config.tokens_per_s:,.1f} tokens/s ({config.ms_per_token():.3f} ms/token)")
        finish()

    for rep in range(2, reps + 1):
        progress(f"timed pass {rep}/{reps}")
        for key, config in configs.items():
            if left() < 1.2 * last_run_s[key]:
                continue
            timed(key, config.fixes)
        finish()
    if any(len(c.samples_s) < reps for c in configs.values()):
        ablation.cut.append(f"fewer than {reps} timed runs (budget spent): " + ", ".join(
            f"{c.title} ({len(c.samples_s)})" for c in configs.values() if len(c.samples_s) < reps))
    naive = tokens_out.get("naive")
    if naive is not None:
        for key, config in configs.items():
            config.agreement = compare_tokens(config.title, naive, tokens_out[key])
    configure(model, Fixes.all())
    finish()
    return ablation, tokens_out


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
