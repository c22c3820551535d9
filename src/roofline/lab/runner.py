"""`roofline lab`: diagnose the naive decoder, fix it one switch at a time, compile it, and measure every stage.

``run_lab(options, progress)`` returns a ``LabResult`` (plain data); ``lab.render`` writes it out.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from roofline.device.cache import remeasure_command
from roofline.device.resolve import last_level_cache_bytes
from roofline.errors import RooflineError
from roofline.lab import bench, views
from roofline.lab.ablation import Ablation, compile_recompute, run_ablation
from roofline.lab.agreement import Agreement, compare_tokens, logit_gap
from roofline.lab.data import UNK, load_wikitext, passage_prompts, sentence_prompts
from roofline.lab.diagnosis import diagnose, doctor_dtype, profile_generation
from roofline.lab.fast_rows import measure_fast_decode
from roofline.lab.generate import decode_one_token
from roofline.lab.model import FIX_TITLES, Fixes, configure, stages
from roofline.models.llama import CONFIGS, LlamaConfig, Transformer, build_llama
from roofline.device.resolve import resolve_device
from roofline.models.workloads import parse_dtype
from roofline.report import Ceilings, Environment, Report, Timing

Progress = Callable[[str], None]
Checkpoint = Callable[["LabResult"], None]
MODELS = ("llama-tiny", "llama-1b", "llama-8b")
# Naive llama-8b (one prompt at a time, the prefix recomputed per token) would take far too long: its lab runs
# the fixed decode, eager then compiled.
FIXED_ONLY = ("llama-8b",)


@dataclass
class LabPlan:
    """Sizes of one lab run, chosen from the device and --quick; every choice is written into the results."""

    prompts: int
    prompt_words: int
    max_new_tokens: int
    reps: int
    warmup: int
    compile: bool
    sweep_batches: list[int]
    sweep_context: int
    sweep_steps: int
    doctor_prompts: int = 2
    doctor_new_tokens: int = 6
    config_overrides: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The three views (lab/ablation.py) instead of the cumulative stages alone.
    ablation: bool = False
    # > 0: prompts are passages of min_prompt_words..prompt_words words of running text, not first sentences.
    min_prompt_words: int = 0
    evidence_tokens: int = 8
    budget_s: float | None = None
    peak: bool = True
    sweep: bool = True
    # The hand-written Triton decode's rows beside the peak decode (lab/fast_rows.py; skipped off CUDA).
    fast_decode: bool = True
    workload: str = ""


@dataclass
class LabOptions:
    model: str = "llama-tiny"
    device: str = "cpu"
    dtype: str | None = None
    quick: bool = False
    data: str | None = None
    doctor: bool = True
    plan: LabPlan | None = None
    ceilings: str | None = None
    # Seconds for the views' configurations; runs that would not fit are not started, and the result says so.
    budget_s: float | None = None
    # Only the batch-1 decode against the memory roof (compiled, tuned, hand-written): no stages, views, sweep or
    # doctor.
    decode_only: bool = False
    # The Inductor-tuned batch-1 step beside the compiled one (CUDA); its compile takes minutes on llama-8b.
    tuned: bool = True


@dataclass
class LabResult:
    model: str
    config: dict[str, Any]
    device: str
    dtype: str
    plan: LabPlan
    ceilings: Ceilings
    environment: Environment
    prompts: list[str]
    sample_output: str
    stages: list[bench.StageResult]
    agreement: list[Agreement]
    sweep: bench.Sweep | None
    peak: bench.PeakDecode | None
    naive_report: Report | None = None
    fixed_report: Report | None = None
    timing_method: str = ""
    bytes_method: str = bench.BYTES_METHOD
    notes: list[str] = field(default_factory=list)
    # Sections not measured yet: non-empty only in the partial results handed to a checkpoint.
    pending: list[str] = field(default_factory=list)
    ablation: Ablation | None = None
    sample_tokens: list[int] = field(default_factory=list)


# The workload of the three views, per model on a GPU: (prompts, min words, max words, new tokens). Chosen so each
# seeded bug has something to cost, and stated in lab.md: passages of 512-1024 words (a page of an article, the
# prompt of a summary or a question about a document; left-padded to the longest, recomputing the prefix costs
# ~1,000 tokens' FLOPs per new token, which is what a model without a KV cache pays at such a context), a batch of
# prompts of different lengths (padding and one-at-a-time both matter). llama-tiny generates 128 new tokens;
# llama-1b 64, only to fit its one-prompt-at-a-time eager configurations (~16 ms per launch-bound step on the H200
# host) into one call of the GPU budget: the KV cache's worth at this context is set by the prompt, not by the
# number of new tokens.
WORKLOADS = {"llama-tiny": (4, 512, 1024, 128), "llama-1b": (4, 512, 1024, 64)}
WORKLOAD_WHY = (
    "passages of running WikiText-2 text of {lo}-{hi} words (a page of an article, as the prompt of a summary or "
    "of a question about a document gives; without a KV cache every new token recomputes the whole prefix, up to "
    "{hi} + {new} tokens), {new} new tokens each, {n} prompts of different lengths in one left-padded batch "
    "(against one prompt at a time)"
)


def ablation_plan(model: str, device: torch.device, quick: bool) -> LabPlan:
    if device.type == "cuda" and not quick:
        n, lo, hi, new = WORKLOADS.get(model, WORKLOADS["llama-1b"])
        return LabPlan(n, hi, new, 5, 0, True, [1, 4, 16, 64, 256], 256, 64, ablation=True, min_prompt_words=lo,
                       evidence_tokens=4, workload=WORKLOAD_WHY.format(lo=lo, hi=hi, new=new, n=n))
    if device.type == "cuda":
        return LabPlan(4, 96, 32, 5, 0, True, [1, 16], 128, 32, ablation=True, min_prompt_words=48,
                       workload="NOT REPRESENTATIVE (--quick): " + WORKLOAD_WHY.format(lo=48, hi=96, new=32, n=4))
    if quick:
        return LabPlan(
            3, 32, 8, 5, 0, False, [1, 4, 16], 16, 8, ablation=True, min_prompt_words=16, evidence_tokens=2,
            config_overrides={"dim": 256, "n_layers": 2, "n_heads": 4, "n_kv_heads": 4, "ffn_dim": 688,
                              "vocab_size": 8192},
            workload="NOT REPRESENTATIVE (--quick on CPU, a smoke test of the method): "
                     + WORKLOAD_WHY.format(lo=16, hi=32, new=8, n=3),
            notes=["--quick on CPU: llama-tiny's shape cut to dim 256, 2 layers and the first 8192 words of the "
                   "vocabulary (later words read as <unk>), 3 prompts x 8 new tokens; torch.compile skipped (Inductor's C++ "
                   "build takes minutes on a small CPU). Not representative of any real decode: it only shows the "
                   "method runs"],
        )
    return LabPlan(4, 128, 32, 5, 1, True, [1, 2, 4, 8, 16, 32], 32, 16, ablation=True, min_prompt_words=64,
                   workload=WORKLOAD_WHY.format(lo=64, hi=128, new=32, n=4))


def make_plan(model: str, device: torch.device, quick: bool) -> LabPlan:
    if model not in FIXED_ONLY:
        return ablation_plan(model, device, quick)
    if device.type == "cuda":
        if quick:
            return LabPlan(4, 24, 32, 1, 0, True, [1, 16], 128, 32)
        return LabPlan(8, 24, 32, 3, 0, True, [1, 4, 16, 64, 256], 256, 64)
    return LabPlan(4, 16, 16, 2, 1, True, [1, 2, 4, 8, 16, 32], 32, 16)


def lab_config(model: str, plan: LabPlan) -> LlamaConfig:
    if model not in MODELS:
        raise RooflineError(f"unknown lab model {model!r}; choose one of: {', '.join(MODELS)}")
    return dataclasses.replace(CONFIGS[model], **plan.config_overrides)


def run_lab(options: LabOptions, progress: Progress = lambda _: None,
            checkpoint: Checkpoint | None = None) -> LabResult:
    """The whole lab. ``checkpoint`` gets the partial result after the stages, the peak decode and the sweep
    (``pending`` names what is still to come), so a long run that is stopped keeps what it measured."""
    device = resolve_device(options.device)
    dtype = parse_dtype(options.dtype or ("float16" if device.type == "cuda" else "float32"))
    plan = options.plan or make_plan(options.model, device, options.quick)
    if options.budget_s is not None:
        if options.budget_s <= 0:
            raise RooflineError(f"--budget must be a positive number of seconds, got {options.budget_s:g}")
        plan = dataclasses.replace(plan, budget_s=options.budget_s)
    if options.decode_only:
        plan = dataclasses.replace(plan, ablation=False, sweep=False, peak=True, fast_decode=True, prompts=1,
                                   sweep_batches=[1],
                                   notes=[*plan.notes, "--decode-only: the batch-1 decode against the memory roof alone "
                                          "(no stages, views, sweep or doctor)"])
    config = lab_config(options.model, plan)
    if device.type == "cpu" and options.model != "llama-tiny" and not options.plan:
        raise RooflineError(f"{options.model} is too big for the CPU lab; use --model llama-tiny or --device cuda")

    if options.decode_only:  # the batch-1 decode runs on a seeded random prompt: no text needed
        corpus, word_prompts, prompts, eos_id = None, [], [], 0
    else:
        corpus, word_prompts, prompts, eos_id = _prompts(options, plan, config, progress)

    progress(f"ceilings of {device} (measured once, then cached)")
    ceilings = measured_ceilings(device, options.ceilings, progress=progress)

    progress(f"building {options.model} ({dtype}) on {device} with random weights")
    model = build_llama(config, dtype=dtype, device=device)
    # One KV cache for the whole lab, so the compiled decode step never sees its buffers replaced.
    model.setup_caches(max([plan.prompts, *plan.sweep_batches]),
                       max(plan.prompt_words + plan.max_new_tokens, plan.sweep_context + plan.sweep_steps + 8))
    with _compile_settings(plan.compile):
        return _run_stages(options, plan, config, dtype, device, model, corpus, word_prompts, prompts, eos_id,
                           ceilings, progress, checkpoint or (lambda _: None))


def _prompts(options: LabOptions, plan: LabPlan, config: LlamaConfig,
             progress: Progress) -> tuple[Any, list[list[int]], list[list[int]], int]:
    """(corpus, prompts as corpus word ids, the same as the model's token ids, the end-of-text id)."""
    progress("loading WikiText-2 and building the word vocabulary")
    corpus = load_wikitext(options.data)
    unk = corpus.vocab.word_to_id.get(UNK, 0)
    if plan.min_prompt_words:
        word_prompts = passage_prompts(corpus, plan.prompts, min_words=plan.min_prompt_words,
                                       max_words=plan.prompt_words)
    else:
        word_prompts = sentence_prompts(corpus, plan.prompts, max_words=plan.prompt_words)
    prompts = [[i if i < config.vocab_size else unk for i in p] for p in word_prompts]
    return corpus, word_prompts, prompts, corpus.eos_id


@contextlib.contextmanager
def _compile_settings(enabled: bool) -> Iterator[None]:
    """A fresh Dynamo cache, and room for the decode step's recompiles (one per batch shape, a few models)."""
    if not enabled:
        yield
        return
    config = torch._dynamo.config
    names = [n for n in ("recompile_limit", "cache_size_limit") if hasattr(config, n)]
    saved = {n: getattr(config, n) for n in names}
    torch._dynamo.reset()
    try:
        for name in names:
            setattr(config, name, max(saved[name], 64))
        yield
    finally:
        for name, value in saved.items():
            setattr(config, name, value)


def _run_stages(options: LabOptions, plan: LabPlan, config: LlamaConfig, dtype: torch.dtype,
                device: torch.device, model: Transformer, corpus: Any, word_prompts: list[list[int]],
                prompts: list[list[int]], eos_id: int, ceilings: Ceilings, progress: Progress,
                checkpoint: Checkpoint) -> LabResult:
    eager = decode_one_token
    compiled_step = bench.compile_decode(device) if plan.compile else None
    compiled_recompute = compile_recompute() if plan.compile else None
    doctor = options.doctor and options.model not in FIXED_ONLY and not options.decode_only
    views_on = plan.ablation and options.model not in FIXED_ONLY
    result = LabResult(
        model=options.model,
        config=dataclasses.asdict(config),
        device=str(device),
        dtype=str(dtype).replace("torch.", ""),
        plan=plan,
        ceilings=ceilings,
        environment=Environment.capture(ceilings.device_name),
        prompts=[" ".join(corpus.vocab.decode(p)) for p in word_prompts] if corpus is not None else [],
        sample_output="",
        stages=[],
        agreement=[],
        sweep=None,
        peak=None,
        timing_method=bench.TIMING_METHOD_CUDA if device.type == "cuda" else bench.TIMING_METHOD_CPU,
        notes=list(plan.notes),
        pending=(["configurations"] if views_on else [])
        + (["batch-1 peak decode"] if plan.peak else []) + (["batch-size sweep"] if plan.sweep else [])
        + (["doctor"] if doctor else []),
    )
    if views_on:
        compiled_step = _measure_views(result, model, prompts, eos_id, ceilings, compiled_step, compiled_recompute,
                                       progress, checkpoint)
    elif not options.decode_only:
        compiled_step = _measure_stages(result, options, model, prompts, eos_id, ceilings, compiled_step, progress)
    if result.stages:
        result.sample_output = " ".join(corpus.vocab.decode(result.sample_tokens)) if result.sample_tokens else ""
    checkpoint(result)
    if not _budget_left(result, plan, progress, "the peak decode, the sweep and the doctor"):
        result.pending.clear()
        return result

    decode_step = compiled_step or eager
    peak = None
    if plan.peak:
        # The tuned variant only on CUDA: its point is the GPU's memory roof, and on CPU it would only add a build.
        tuned_step = (bench.compile_tuned_decode(device)
                      if options.tuned and compiled_step and device.type == "cuda" else None)
        progress("peak decode: batch 1, fixed" + (" and compiled, then tuned" if tuned_step else
                                                  " and compiled" if compiled_step else ""))
        peak = bench.peak_decode(model, decode_step, ceilings, context=plan.sweep_context, steps=plan.sweep_steps,
                                 warmup=plan.warmup + 2, compiled=compiled_step is not None, tuned_step=tuned_step)
        if peak.tuned is not None:
            t = peak.tuned
            progress(f"  tuned: {t.error}" if t.error else
                     f"  plain {100 * peak.share_of_memory_roof:.1f}%, tuned {100 * t.share_of_memory_roof:.1f}% of "
                     "the memory roof")
        if plan.fast_decode:
            peak.fast = measure_fast_decode(model, ceilings, context=plan.sweep_context, steps=plan.sweep_steps,
                                            warmup=plan.warmup + 2, progress=progress)
            for row in peak.fast:
                progress(f"  {row.title}: {row.skipped}" if row.skipped else
                         f"  {row.title}: {row.tokens_per_s:,.1f} tokens/s, "
                         f"{100 * (row.share_of_memory_roof or 0):.1f}% of the memory roof")
        result.peak = peak
        result.pending.remove("batch-1 peak decode")
        checkpoint(result)
    if plan.sweep:
        progress("batch-size sweep of the fixed decode")
        sweep = bench.batch_sweep(model, decode_step, ceilings, plan.sweep_batches, context=plan.sweep_context,
                                  steps=plan.sweep_steps, warmup=plan.warmup + 2,
                                  compiled=compiled_step is not None, progress=progress)
        result.sweep = sweep
        result.pending.remove("batch-size sweep")
        checkpoint(result)

    shares = [r.memory_roof_share or 0.0 for r in result.stages] + ([peak.share_of_memory_roof] if peak else [])
    if shares and max(shares) > 1.0 and peak is not None:
        result.notes.append(above_roof_note(peak.bytes_per_token, last_level_cache_bytes(device), ceilings))
    if doctor and _budget_left(result, plan, progress, "the doctor"):
        try:
            result.naive_report, result.fixed_report = _doctor_runs(
                model, config, dtype, device, prompts, eos_id, plan, ceilings, progress)
        except Exception as exc:  # noqa: BLE001 - the measured stages are still worth writing out
            message = f"doctor run failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
            progress(message)
            result.notes.append(message)
    result.pending.clear()
    return result


def _budget_left(result: LabResult, plan: LabPlan, progress: Progress, what: str) -> bool:
    """False (and a note) when the views spent the run's budget: what follows is skipped, not cut short."""
    ablation = result.ablation
    if plan.budget_s is None or ablation is None or ablation.spent_s < plan.budget_s:
        return True
    message = f"{what} skipped: the budget of {plan.budget_s:.0f} s was spent on the configurations"
    progress(message)
    result.notes.append(message)
    return False


def _measure_stages(result: LabResult, options: LabOptions, model: Transformer, prompts: list[list[int]],
                    eos_id: int, ceilings: Ceilings, compiled_step: Any, progress: Progress) -> Any:
    """The cumulative stages alone, one after the other (llama-8b's fixed decode, and plans without views)."""
    plan = result.plan
    stage_list = stages(include_compile=compiled_step is not None)
    if options.model in FIXED_ONLY:
        stage_list = [s for s in stage_list if s[1].names() and set(s[1].names()) >= {
            "kv_cache", "contiguous_layout", "sync_free", "norms_in_model_dtype", "batched"}]
        result.notes.append(f"{options.model}: fixed decode only (eager, then compiled); the naive stages would "
                            "take hours")
    outputs: list[list[list[int]]] = []
    for i, (title, fixes) in enumerate(stage_list):
        progress(f"stage {i + 1}/{len(stage_list)}: {title}")
        step = compiled_step if fixes.compiled else decode_one_token
        try:
            stage, tokens = bench.run_stage(
                model, prompts, plan.max_new_tokens, eos_id, title, fixes, ceilings,
                warmup=plan.warmup + (2 if fixes.compiled else 0), reps=plan.reps, decode_step=step,
            )
        except Exception as exc:  # noqa: BLE001 - a failed compile is reported, the rest of the lab stands
            if not fixes.compiled:
                raise
            result.notes.append(f"torch.compile stage skipped: {type(exc).__name__}: "
                                f"{str(exc).splitlines()[0][:200]}")
            compiled_step = None
            continue
        result.stages.append(stage)
        outputs.append(tokens)
        progress(f"  {stage.tokens_per_s:,.1f} tokens/s, {stage.ms_per_token:.2f} ms/token")
    bench.fill_speedups(result.stages)
    result.agreement = [compare_tokens(r.title, outputs[0], out) for r, out in zip(result.stages, outputs)]
    if any(not a.identical for a in result.agreement):
        _explain_divergences(model, stage_list[0][1], prompts, outputs[0], result.agreement)
    result.sample_tokens = outputs[0][0] if outputs else []
    return compiled_step


def _measure_views(result: LabResult, model: Transformer, prompts: list[list[int]], eos_id: int,
                   ceilings: Ceilings, compiled_step: Any, compiled_recompute: Any, progress: Progress,
                   checkpoint: Checkpoint) -> Any:
    """Every configuration of the three views; the cumulative ones also fill ``result.stages``."""
    plan = result.plan

    def keep(partial: Ablation) -> None:
        result.ablation = partial
        checkpoint(result)

    ablation, outputs = run_ablation(
        model, prompts, plan.max_new_tokens, eos_id, ceilings, reps=plan.reps, evidence_tokens=plan.evidence_tokens,
        budget_s=plan.budget_s, compiled_step=compiled_step, workload=plan.workload, progress=progress,
        checkpoint=keep, compiled_recompute=compiled_recompute)
    result.ablation = ablation
    configs = {c.key: c for c in ablation.configs}
    if not any(c.fixes == ["compiled"] or "compiled" in c.fixes for c in ablation.configs):
        compiled_step = None
    naive = outputs.get("naive")
    divergent = [c.agreement for c in ablation.configs if c.agreement is not None and not c.agreement.identical]
    if naive is not None and divergent:
        _explain_divergences(model, Fixes(), prompts, naive, divergent)
    steps = [p for p in views.view_pairs(ablation.order, compiled_step is not None)["cumulative"] if p[0] != "total"]
    sequence = [views.config_key([])] + [views.config_key(views.canonical(after)) for _, _, after in steps]
    titles = ["naive"] + [f"+ {FIX_TITLES[fix]}" for fix, _, _ in steps]
    for key, title in zip(sequence, titles):
        c = configs.get(key)
        if c is None or not c.samples_s:
            continue
        result.stages.append(_stage_of(c, title, ceilings, result.timing_method))
        if c.agreement is not None:
            result.agreement.append(dataclasses.replace(c.agreement, stage=title))
    bench.fill_speedups(result.stages)
    result.pending.remove("configurations")
    if naive:
        result.sample_tokens = naive[0]
    return compiled_step


def _stage_of(c: views.Config, title: str, ceilings: Ceilings, method: str) -> bench.StageResult:
    e = c.evidence
    tokens_per_s = c.tokens_per_s
    bytes_per_token = e.bytes_per_token if e else None
    share = (bytes_per_token * tokens_per_s / ceilings.memory_bandwidth_bytes_per_s
             if bytes_per_token is not None and ceilings.memory_bandwidth_bytes_per_s > 0 else None)
    return bench.StageResult(
        title=title, fixes=list(c.fixes), tokens=c.tokens, tokens_per_s=tokens_per_s,
        ms_per_token=c.ms_per_token(), speedup_vs_previous=1.0, speedup_cumulative=1.0,
        syncs_per_token=e.syncs_per_token if e else None, bytes_per_token=bytes_per_token,
        memory_roof_share=share, timing=Timing.from_samples(c.samples_s, method), note=c.note)


def above_roof_note(bytes_per_token: float, cache_bytes: int, ceilings: Ceilings) -> str:
    """Why a share of the memory roof came out above 100%: the bytes fit in the last-level cache, or the
    bandwidth ceiling is too low (a cached measurement from a busy machine)."""
    head = "a share of the memory roof above 100%: "
    reads, cache = f"{bytes_per_token / 1e6:,.1f} MB", f"{cache_bytes / 1e6:,.1f} MB"
    if bytes_per_token <= cache_bytes:
        return (head + f"the batch-1 decode reads {reads} per token, which fits in the {cache} last-level cache, "
                "so those bytes come from the cache, not DRAM, and the DRAM roof does not bind")
    when = f" at {ceilings.measured_at}" if ceilings.measured_at else ""
    command = remeasure_command(ceilings)
    return (head + f"the batch-1 decode reads {reads} per token, more than the {cache} last-level cache, so the "
            f"bandwidth ceiling ({ceilings.memory_bandwidth_bytes_per_s / 1e9:,.2f} GB/s, {ceilings.source}{when}) "
            f"is too low, likely measured on a busy machine: re-measure it with `{command}`")


def measured_ceilings(device: torch.device, ceilings_file: str | None, *, progress: Progress) -> Ceilings:
    """The device's roofs: a --ceilings FILE, else the one cached set every run on this machine uses (a --quick lab
    still measures against the full ceilings, so its shares match `analyze` and `profile`)."""
    from roofline.device import ceilings_for_run

    return ceilings_for_run(device, ceilings_file, progress=progress)


def _doctor_runs(model: Transformer, config: LlamaConfig, dtype: torch.dtype, device: torch.device,
                 prompts: list[list[int]], eos_id: int, plan: LabPlan, ceilings: Ceilings,
                 progress: Progress) -> tuple[Report, Report]:
    half = doctor_dtype(device, dtype)
    doctor_model = model if half == dtype else build_llama(config, dtype=half, device=device)
    few = prompts[: plan.doctor_prompts]
    progress(f"doctor: profiling the naive generation ({half}, {len(few)} prompts x {plan.doctor_new_tokens} tokens)")
    naive = diagnose(profile_generation(doctor_model, few, plan.doctor_new_tokens, eos_id, Fixes(), ceilings))
    progress("doctor: profiling the fixed generation")
    fixed = diagnose(profile_generation(doctor_model, few, plan.doctor_new_tokens, eos_id, Fixes.all(), ceilings))
    return naive, fixed


def _explain_divergences(model: Transformer, reference_fixes: Fixes, prompts: list[list[int]],
                         reference: list[list[int]], agreement: list[Agreement]) -> None:
    """Fill each divergence's logit gap, as the first stage's model sees it."""
    configure(model, reference_fixes)
    for a in agreement:
        if a.identical or a.divergent_prompt is None or a.first_divergence is None:
            continue
        row = reference[a.divergent_prompt]
        if a.first_divergence < len(row):
            a.logit_gap, a.logit_gap_ulps = logit_gap(model, prompts[a.divergent_prompt], row, a.first_divergence)
