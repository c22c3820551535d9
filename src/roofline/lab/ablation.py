"""Measure every configuration the three views need (lab/views.py), in interleaved passes, within a time budget.

Configurations come in two tiers, most important first. Tier 1 is what the leave-one-out and cumulative views
need: the naive model, the fully fixed one (eager, and compiled), the compiled model with each bug put back (the
decode step recompiled for the bug's module classes or batch; without the KV cache, the recomputing step compiled
with dynamic shapes), and the cumulative stages. Tier 2 is the isolated view's one-prompt-at-a-time
configurations, each as slow as the naive one. Each tier is measured in passes: pass 1 gives each configuration its
warm-up (one whole untimed run: its first pass through each sequence length grows the allocator's pool and picks
kernels, and for a compiled step it compiles and captures the CUDA graphs; on the H200 such a first run took up to
3x a later one), its evidence (syncs, bytes, FLOPs, kernel launches per token of a whole run, extrapolated from
two short counted runs of the eager ops; a compiled configuration shares its eager twin's) and its first timed
run; passes 2..reps add one timed run each, so every configuration's runs are spread over its tier's measurement
and slow drift of the machine hits all alike. A timed run during which Dynamo compiled a graph is noted on its
configuration. With a budget, a configuration is not started when what it needs does not fit in what is left,
judged by the configurations of the same kind measured so far (batched or not, compiled or not): their slowest
pass 1 for tier 1, that and all later runs at their slowest run for tier 2; the result says what was cut. The
first configuration of each kind has no estimate yet and is always measured once. If the fixed model fails to
compile, the leave-one-out view falls back to the eager fixed model.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from roofline.device.measure import time_fn
from roofline.lab import views
from roofline.lab.agreement import compare_tokens
from roofline.lab.generate import (DecodeStep, RecomputeStep, decode_one_token, generate, generate_ids,
                                   recompute_one_token)
from roofline.lab.model import STAGE_ORDER, Fixes, configure
from roofline.models.llama import Transformer
from roofline.report import Ceilings

Progress = Callable[[str], None]
CUDAGRAPHS_SKIPPED = ("Inductor skipped CUDA graphs for this decode step (its log says why): its kernels were "
                      "launched one by one, so its time holds launch overhead the others do not")
COMPILED_WHILE_TIMED = "Dynamo compiled a graph during a timed run: that run's time includes the compile"


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


def configurations(include_compile: bool) -> list[list[list[str]]]:
    """Fix lists of every configuration the views need, in two tiers (see the module docstring), each once, most
    important first within its tier."""
    five = list(views.FIVE)
    full = five + (["compiled"] if include_compile else [])
    pairs = views.view_pairs(STAGE_ORDER, include_compile)
    first = [[], five] + ([full] if include_compile else [])
    first += [[f for f in full if f != fix] for fix in ("kv_cache", "sync_free", "batched")]
    first += [after for _, _, after in pairs["cumulative"]]
    first += [[f for f in full if f != fix] for fix in ("norms_in_model_dtype", "contiguous_layout")]
    second = [[fix] for fix in ("kv_cache", "norms_in_model_dtype", "contiguous_layout", "sync_free", "batched")]
    second += [names for rows in pairs.values() for _, before, after in rows for names in (before, after)]
    seen: set[str] = set()
    tiers = []
    for wanted in (first, second):
        tier = []
        for fixes in wanted:
            key = views.config_key(views.canonical(fixes))
            if key not in seen:
                seen.add(key)
                tier.append(views.canonical(fixes))
        tiers.append(tier)
    return tiers


def compile_recompute() -> RecomputeStep:
    """The recomputing step compiled as a user would compile a model without a cache: dynamic shapes (one graph
    for every length, not a recompile per token), default mode (no CUDA graphs: they need fixed shapes)."""
    return torch.compile(recompute_one_token, dynamic=True, fullgraph=True)


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
    configure(model, fixes)
    first = _count(model, prompts, 1, eos_id, fixes)
    short = _count(model, prompts, new_tokens, eos_id, fixes)
    whole = [a + (b - a) / (new_tokens - 1) * (max_new_tokens - 1) for a, b in zip(first[:4], short[:4])]
    tokens = len(prompts) * max_new_tokens
    syncs, moved, flops, launches = (max(v, 0.0) / tokens for v in whole)
    return views.Evidence(new_tokens, syncs, moved, flops, None if compiled else launches, short[4])


def run_ablation(model: Transformer, prompts: list[list[int]], max_new_tokens: int, eos_id: int,
                 ceilings: Ceilings, *, reps: int, evidence_tokens: int, budget_s: float | None,
                 compiled_step: DecodeStep | None, workload: str, progress: Progress,
                 checkpoint: Callable[[Ablation], None],
                 compiled_recompute: RecomputeStep | None = None) -> tuple[Ablation, dict[str, list[list[int]]]]:
    """Measure every configuration (see the module docstring); ``checkpoint`` gets the Ablation after each
    configuration of a pass 1 and after each later pass. ``compiled_step`` is the compiled cached decode step,
    ``compiled_recompute`` the compiled recomputing step (the compiled model without its KV cache). Returns the
    Ablation and each configuration's greedy tokens."""
    device = model.output.weight.device
    dtype = str(model.output.weight.dtype).replace("torch.", "")
    began = time.perf_counter()
    include_compile = compiled_step is not None
    ablation = Ablation(workload, reps, evidence_tokens, budget_s, list(STAGE_ORDER), method=views.SPREAD_METHOD)
    configs: dict[str, views.Config] = {}
    tokens_out: dict[str, list[list[int]]] = {}
    last_run_s: dict[str, float] = {}
    first_pass_s: dict[tuple[bool, bool], float] = {}
    eager_evidence: dict[str, views.Evidence] = {}
    attempted: set[str] = set()

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
        recompute = compiled_recompute if fixes.compiled else recompute_one_token

        def run() -> list[list[int]]:
            configure(model, fixes)
            return generate(model, prompts, max_new_tokens, eos_id, fixes, step, recompute)

        return run

    def timed(key: str, names: list[str]) -> None:
        graphs = _graphs_compiled()
        [seconds] = time_fn(runner(names), device, warmup=0, repeats=1)
        configs[key].samples_s.append(seconds)
        last_run_s[key] = seconds
        if _graphs_compiled() != graphs and COMPILED_WHILE_TIMED not in configs[key].note:
            configs[key].note = "; ".join(filter(None, [configs[key].note, COMPILED_WHILE_TIMED]))

    def kind(names: list[str]) -> tuple[bool, bool]:
        return "batched" in names, "compiled" in names

    def fits(names: list[str], tier: int) -> bool:
        similar = [s for k, s in last_run_s.items() if kind(configs[k].fixes) == kind(names)]
        if kind(names) not in first_pass_s or not similar:
            return True
        need = first_pass_s[kind(names)] + (tier > 0) * (reps - 1) * max(similar)
        return left() >= need * (1.5 if tier == 0 else 1.1)

    def measure_first(names: list[str], tier: int, number: int) -> bool:
        """Warm-up, first timed run and evidence of one configuration; False if it was not measured."""
        nonlocal include_compile, compiled_step, compiled_recompute
        key = views.config_key(names)
        title = views.config_title(names)
        fixes = _fixes(names)
        if fixes.compiled and not fixes.kv_cache and compiled_recompute is None:
            ablation.cut.append(f"{title}: not measured (no compiled recomputing step)")
            return False
        if not fits(names, tier):
            ablation.cut.append(f"{title}: not measured (budget spent)")
            return False
        progress(f"configuration {number} (tier {tier + 1}): {title}")
        t0 = time.perf_counter()
        config = views.Config(key, title, names)
        configs[key] = config
        eager_names = [n for n in names if n != "compiled"]
        skips = _cudagraph_skips()
        try:
            tokens_out[key] = runner(names)()
            _sync(device)
            timed(key, names)
        except Exception as exc:  # noqa: BLE001 - a failed compile is reported; the rest stands
            if not fixes.compiled:
                raise
            del configs[key]
            ablation.cut.append(f"{title}: failed, {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            if eager_names == list(views.FIVE):
                # The fixed model does not compile: the leave-one-out view falls back to the eager one.
                include_compile, compiled_step, compiled_recompute = False, None, None
            return False
        config.tokens = sum(len(t) for t in tokens_out[key])
        twin = views.config_key(eager_names)
        if twin not in eager_evidence:
            eager_evidence[twin] = count_evidence(model, prompts, evidence_tokens, eos_id, _fixes(eager_names), False,
                                                  max_new_tokens)
        evidence = eager_evidence[twin]
        config.evidence = dataclasses.replace(evidence, launches_per_token=None) if fixes.compiled else evidence
        if fixes.compiled and fixes.kv_cache and _cudagraph_skips() != skips:
            config.note = "; ".join(filter(None, [CUDAGRAPHS_SKIPPED, config.note]))
        if fixes.compiled and not fixes.kv_cache:
            config.note = "; ".join(filter(None, [
                "the recomputing step compiled with dynamic shapes and without CUDA graphs (its shapes change "
                "every token)", config.note]))
        # The slowest pass 1 of the kind: a compiled configuration may or may not need a compile.
        first_pass_s[kind(names)] = max(first_pass_s.get(kind(names), 0.0), time.perf_counter() - t0)
        progress(f"  {config.tokens_per_s:,.1f} tokens/s ({config.ms_per_token():.3f} ms/token)")
        finish()
        return True

    number = 0
    for tier in range(2):
        measured: list[str] = []
        while True:
            pending = [n for n in configurations(include_compile)[tier] if views.config_key(n) not in attempted]
            if not pending:
                break
            names = pending[0]
            attempted.add(views.config_key(names))
            number += 1
            if measure_first(names, tier, number):
                measured.append(views.config_key(names))
        for rep in range(2, reps + 1):
            if not measured:
                break
            progress(f"tier {tier + 1}: timed pass {rep}/{reps}")
            for key in measured:
                if left() < 1.2 * last_run_s[key]:
                    continue
                timed(key, configs[key].fixes)
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


def _counter(group: str, name: str) -> int:
    """One of torch._dynamo's process-wide counters (0 where it is missing)."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return 0
    return int(counters[group][name])


def _graphs_compiled() -> int:
    """Graphs Dynamo has compiled in this process so far."""
    return _counter("stats", "unique_graphs")


def _cudagraph_skips() -> int:
    """Graphs for which Inductor gave up CUDA graphs (and ran its kernels one launch at a time) so far."""
    return _counter("inductor", "cudagraph_skips")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
