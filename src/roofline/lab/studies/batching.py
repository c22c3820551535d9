"""`roofline lab --study batching`: static against continuous batching of a WikiText-2 request stream.

Both schedulers (lab/studies/batching_schedulers.py) serve the same seeded requests through the same slot KV
cache (the same memory budget) on a simulated clock driven by each step's measured wall time. On CUDA each decode
step replays a CUDA graph of its row count (lab/studies/batching_engine.py), captured for every row count before
anything is timed; ``--no-graphs`` runs them eagerly. Arrival rates are swept as fractions of an estimated
capacity (one prefill of a mean prompt plus a mean output's share of full-batch decode steps, timed before the
sweep); each (rate, scheduler) is run ``repeats`` times in alternating passes and
reported as the median with its min-max. The comparison the issue asks for is read off the two curves of
throughput against p99 request latency (see ``compare``). A short window of each scheduler's loop is then profiled
(roofline's StepProfiler, the capture behind ``roofline.ProfilingContext``, one profiler step per engine step), and
its Report split into prefill and decode time and the time of tokens computed for padding or finished requests.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from roofline.errors import RooflineError
from roofline.lab.studies import Progress, StudyOptions, StudyResult
from roofline.lab.studies.batching_engine import SlotEngine
from roofline.lab.studies.batching_schedulers import (DECODE, PREFILL, Run, Step, Timer, Workload, make_requests,
                                                     measured, serve_continuous, serve_static, summarize)

SCHEDULERS = ("static", "continuous")
HEADLINE_LATENCY = "latency_s"


@dataclass(frozen=True)
class Settings:
    """One sweep: ``slots`` x ``max_len`` KV cache, the workload, rates as fractions of the estimated capacity."""

    slots: int
    workload: Workload
    rate_fractions: tuple[float, ...]
    repeats: int
    timeout_steps: float  # static batching's wait for a full batch, in full-batch decode steps
    profile_skip: int
    profile_steps: int
    budget_s: float | None = None
    quick: bool = False
    config_overrides: tuple[tuple[str, int], ...] = ()
    decode: str = "auto"  # SlotEngine's decode mode: auto = CUDA-graphed on CUDA, eager elsewhere

    @property
    def max_len(self) -> int:
        return self.workload.prompt_words[1] + self.workload.new_tokens[1]

    def as_dict(self) -> dict:
        return {"slots": self.slots, "max_len": self.max_len, "workload": self.workload.as_dict(),
                "rate_fractions": list(self.rate_fractions), "repeats": self.repeats,
                "static_timeout_decode_steps": self.timeout_steps, "profile_skip_steps": self.profile_skip,
                "profile_steps": self.profile_steps, "budget_s": self.budget_s, "quick": self.quick,
                "config_overrides": dict(self.config_overrides), "decode": self.decode}


# The first H200 run (2026-12-01) decoded eagerly: a 16-row llama-1b step took 22.4 ms of host dispatch for 2.7 ms
# of kernels, so only one pass of 80 requests fit 270 s. With CUDA-graphed decode steps (~3 ms for 1-16 rows) and
# eager ~300-word prefills (~15-25 ms, host-bound), a run's wall time is its busy time (idle gaps are skipped):
# a cost model of those step times (the schedulers on a stub engine) gives ~15 s per scheduler at 0.3x of the
# estimated capacity down to ~5 s from 1.2x, ~90 s a pass, ~270 s for three. In that model static batching's p99
# latency starts rising near 0.9x, its throughput flattens from 1.2x, continuous batching's from 1.6x; 2x is
# saturated for both (the estimate assumes full 16-row decode steps, which low rates never have). The budget (the
# graphs' capture, the calibration and the sweep; not the model's build nor the profiling) keeps the whole study
# under 8 minutes if steps turn out slower: it cuts passes and says so.
FULL = Settings(slots=16, workload=Workload(80, (32, 512), (16, 256), seed=0),
                rate_fractions=(0.3, 0.6, 0.9, 1.2, 1.6, 2.0), repeats=3, timeout_steps=8,
                profile_skip=48, profile_steps=12, budget_s=360.0)
QUICK = Settings(slots=4, workload=Workload(24, (8, 48), (4, 24), seed=0), rate_fractions=(0.4, 0.8, 1.3),
                 repeats=1, timeout_steps=8, profile_skip=4, profile_steps=8, quick=True)
# --quick on CPU: the lab's cut-down llama-tiny (runner.ablation_plan), so the whole study takes seconds.
QUICK_CPU = replace(QUICK, slots=3, workload=Workload(12, (4, 16), (2, 8), seed=0), rate_fractions=(0.5, 1.0, 1.5),
                    profile_skip=2, profile_steps=6,
                    config_overrides=(("dim", 256), ("n_layers", 2), ("n_heads", 4), ("n_kv_heads", 4),
                                             ("ffn_dim", 688), ("vocab_size", 8192)))


def run(options: StudyOptions, out_dir: Path, progress: Progress = lambda _: None) -> StudyResult:
    from roofline.device.resolve import resolve_device
    from roofline.lab.data import load_wikitext
    from roofline.lab.runner import measured_ceilings
    from roofline.lab.studies.batching_report import summary_lines, table, write_batching
    from roofline.models.llama import CONFIGS, build_llama
    from roofline.models.workloads import parse_dtype

    device = resolve_device(options.device)
    dtype = parse_dtype(options.dtype or ("float16" if device.type == "cuda" else "float32"))
    if options.model not in CONFIGS:
        raise RooflineError(f"unknown lab model {options.model!r}; choose one of: {', '.join(CONFIGS)}")
    if device.type == "cpu" and options.model != "llama-tiny":
        raise RooflineError(f"{options.model} is too big for the CPU batching study; use --model llama-tiny "
                            "or --device cuda")
    if options.budget_s is not None and options.budget_s <= 0:
        raise RooflineError(f"--budget must be a positive number of seconds, got {options.budget_s:g}")
    settings = (QUICK_CPU if device.type == "cpu" else QUICK) if options.quick else FULL
    if options.budget_s is not None:
        settings = replace(settings, budget_s=options.budget_s)
    if not options.graphs:
        settings = replace(settings, decode="eager")
    progress("loading WikiText-2")
    corpus = load_wikitext(options.data)
    ceilings = measured_ceilings(device, options.ceilings, progress=progress)
    progress(f"building {options.model} ({dtype}) on {device} with random weights")
    config = dataclasses.replace(CONFIGS[options.model], **dict(settings.config_overrides))
    model = build_llama(config, dtype=dtype, device=device)
    result = measure(model, corpus, settings, progress=progress, ceilings=ceilings)
    result.update(model=options.model, dtype=str(dtype).replace("torch.", ""),
                  command=" ".join(["roofline", *sys.argv[1:]]) if sys.argv else "")
    files = write_batching(result, out_dir)
    return StudyResult("batching", table(result), files, summary_lines(result))


def measure(model, corpus, settings: Settings, *, progress: Progress = lambda _: None, ceilings=None,
            profile: bool = True, timer: Timer = measured) -> dict[str, Any]:
    """The sweep, the comparison and the profiled windows, as one JSON-ready dict. ``timer``: how a step's
    time is taken (``measured``; a test passes ``modelled`` for deterministic scheduling)."""
    device = model.output.weight.device
    eos_id = corpus.eos_id
    vocab = model.config.vocab_size
    began = time.perf_counter()
    notes: list[str] = []
    if settings.quick:
        cut = (f", the model's shape cut to {dict(settings.config_overrides)} (later words read as <unk>)"
               if settings.config_overrides else "")
        notes.append(f"NOT REPRESENTATIVE (--quick): a handful of short requests, one run per point{cut}; it only "
                     "shows the method runs")
    with SlotEngine(model, settings.slots, settings.max_len, decode=settings.decode) as engine:
        unit = make_requests(corpus, settings.workload, 1.0, vocab)
        if engine.decode_mode == "graphed":
            progress(f"capturing the decode step of 1..{settings.slots} rows as CUDA graphs")
            engine.capture_graphs()
            if engine.fallback:
                progress(engine.fallback)
        progress("warming up and timing a prefill and a full-batch decode step")
        calibration = calibrate(engine, unit, eos_id, timer=timer)
        capacity = calibration["capacity_requests_per_s"]
        rates = [_round3(f * capacity) for f in settings.rate_fractions]
        timeout_s = settings.timeout_steps * calibration["decode_step_s"]
        progress(f"estimated capacity {capacity:.3g} requests/s; rates {rates}; "
                 f"static timeout {1e3 * timeout_s:.3g} ms")
        _warm_up(engine, unit, eos_id, rates[-1], timeout_s, timer)
        runs, cut = _sweep(engine, corpus, settings, rates, eos_id, timeout_s, vocab, began, progress, timer)
        if cut:
            notes.append(cut)
        points = {name: [_point(rate, [r for r in runs if r["scheduler"] == name and r["rate_per_s"] == rate])
                         for rate in rates] for name in SCHEDULERS}
        profiles, window_rate = {}, None
        if profile:
            window_rate = rates[min(range(len(rates)), key=lambda i: abs(settings.rate_fractions[i] - 0.85))]
            for name in SCHEDULERS:
                progress(f"profiling {settings.profile_steps} steps of the {name} loop at {window_rate} requests/s")
                requests = make_requests(corpus, settings.workload, window_rate, vocab)
                try:
                    profiles[name] = profile_window(engine, requests, eos_id, name, timeout_s, settings, ceilings,
                                                    timer)
                except Exception as exc:  # noqa: BLE001 - the sweep's figures are kept; the failure is stated
                    profiles[name] = {"error": f"{type(exc).__name__}: {exc}"}
                    notes.append(f"profiling the {name} loop failed: {type(exc).__name__}: {exc}")
        cache_bytes = engine.cache_bytes()
        decode = decode_facts(engine, settings.decode)
    if decode["fallback"]:
        notes.append(f"CUDA graphs NOT used: {decode['fallback']}")
    return {
        "study": "batching",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch_version": torch.__version__,
        "settings": settings.as_dict(),
        "kv_cache_bytes": cache_bytes,
        "calibration": calibration,
        "rates_per_s": rates,
        "static_timeout_s": timeout_s,
        "decode": decode,
        "method": {**METHOD, "decode": decode_method(decode)},
        "runs": runs,
        "points": points,
        "comparison": {HEADLINE_LATENCY: compare(points, HEADLINE_LATENCY), "ttft_s": compare(points, "ttft_s")},
        "profile": profiles,
        "profile_rate_per_s": window_rate if profile else None,
        "notes": notes,
        "seconds": time.perf_counter() - began,
    }


METHOD = {
    "clock": "simulated: starts at 0, skips idle gaps to the next arrival (nothing slept); each prefill or decode "
             "step advances it by the step's measured wall time, from its call until its tokens are on the host",
    "memory": "both schedulers use one slot KV cache of slots x max_len positions (the same bytes)",
    "static": "waits for a full batch or until the oldest request has waited the timeout; prefills the batch "
              "left-padded; decodes until all its requests are done (finished rows still computed)",
    "continuous": "a queued request is prefilled alone into a free slot before the next decode step and leaves "
                  "when done; a decode step computes rows 0..highest taken slot",
    "throughput": "generated tokens / (first arrival -> last token)",
    "latency": "per request: time to first token (arrival -> first token), per-token latency ((last - first token) "
               "/ (tokens - 1)), request latency (arrival -> last token); p50/p99 over requests (numpy, linear)",
    "busy_share": "time inside steps (the device working or the host launching its work) / (first arrival -> last "
                  "token)",
    "waste": "token positions computed for left padding (prefill), finished requests (static decode) or free "
             "slots below the highest taken one (continuous decode), over all positions computed",
    "repeats": "each (rate, scheduler) run `repeats` times in alternating passes; median with min-max",
    "comparison": "throughput at equal p99 latency: the other scheduler's (p99 latency, throughput) points, in rate "
                  "order, interpolated linearly at the static point's p99 latency; the headline is at static "
                  "batching's highest-throughput point. 'at least' where continuous batching stayed below that "
                  "latency at every swept rate (its highest throughput is given)",
}


def decode_facts(engine: SlotEngine, requested: str) -> dict[str, Any]:
    """How the decode steps ran: mode, capture time, and what a static-shape step reads beyond an eager one."""
    model = engine.model
    weight_bytes = sum(p.numel() * p.element_size() for name, p in model.named_parameters()
                       if not name.startswith("tok_embeddings."))
    return {"requested": requested, "mode": engine.decode_mode, "fallback": engine.fallback,
            "graphs": engine.graph_count, "capture_s": engine.capture_s,
            # A static-shape step reads every slot of its rows: at full rows, the whole cache.
            "full_step_kv_bytes": engine.cache_bytes(), "decode_weight_bytes": weight_bytes,
            "slots": engine.slots, "max_len": engine.max_len}


def decode_method(decode: dict[str, Any]) -> str:
    kv, weights = decode["full_step_kv_bytes"], decode["decode_weight_bytes"]
    if decode["mode"] == "eager":
        why = f" ({decode['fallback']})" if decode["fallback"] else ""
        return (f"eager{why}: every decode step launched op by op from Python with dynamic shapes; attention reads "
                "slots up to the longest row's context")
    static = (f"static shapes: a step of b rows reads all {decode['max_len']} slots of each row (a visibility mask "
              f"hides the others; at {decode['slots']} rows {kv / 2**20:,.0f} MiB of keys and values, "
              f"{100 * kv / weights:.0f}% of the {weights / 2**30:.2f} GiB of weights a step reads, embedding table "
              "excepted; an eager step reads up to the longest row's context only); tokens, write slots and first "
              "keys copied into fixed device buffers, mask and RoPE positions computed on the device")
    if decode["mode"] == "static":
        return f"{static}, run eagerly (no graphs)"
    return (f"CUDA-graphed: one graph per row count (1..{decode['slots']}, sharing one memory pool), each replayed "
            f"as one launch; {static}. The {decode['graphs']} graphs were captured (each after two warm-up steps on "
            "a side stream, then replayed once and checked to give the warm-up's tokens) in "
            f"{decode['capture_s']:.2f} s before the calibration: outside the clock and every timed step")


def calibrate(engine: SlotEngine, requests, eos_id: int, repeats: int = 5, timer: Timer = measured) -> dict[str, float]:
    """Median time of a prefill of a mean-length prompt and of a decode step over every slot at a mean context;
    the capacity estimate is 1 / (prefill + mean output x decode step / slots)."""
    mean_prompt = round(statistics.mean(len(r.prompt) for r in requests))
    mean_new = statistics.mean(r.max_new for r in requests)
    prompt = list(requests[0].prompt) * (mean_prompt // len(requests[0].prompt) + 1)
    prompt = prompt[:mean_prompt]
    slots = engine.slots
    context = min(mean_prompt + round(mean_new / 2), engine.max_len - 1)
    prefill, decode = [], []
    for i in range(repeats + 1):
        _, seconds = timer(PREFILL, 1, mean_prompt, lambda: engine.prefill(0, [prompt], eos_id))
        prefill.append(seconds)
        _, seconds = timer(DECODE, slots, slots, lambda: engine.decode([eos_id] * slots, [context] * slots,
                                                                           [0] * slots))
        decode.append(seconds)
    prefill_s, decode_s = statistics.median(prefill[1:]), statistics.median(decode[1:])
    return {"prefill_s": prefill_s, "prefill_prompt_words": mean_prompt, "decode_step_s": decode_s,
            "decode_context": context, "mean_new_tokens": mean_new,
            "capacity_requests_per_s": 1.0 / (prefill_s + mean_new * decode_s / slots)}


def _warm_up(engine, unit, eos_id, rate, timeout_s, timer) -> None:
    """One untimed run of each scheduler over the first quarter of the requests (every shape's first call)."""
    few = [replace(r, arrival_s=r.arrival_s / rate) for r in unit[: max(len(unit) // 4, engine.slots)]]
    serve_continuous(engine, few, eos_id, timer=timer)
    serve_static(engine, few, eos_id, timeout_s=timeout_s, timer=timer)


def _sweep(engine, corpus, settings, rates, eos_id, timeout_s, vocab, began, progress,
           timer) -> tuple[list[dict], str]:
    """Every rate under both schedulers, pass after pass (the order of the schedulers alternates each pass); a
    pass that would not end within the budget (judged by the longest pass so far) is not started, nor is any run
    once the budget is spent."""
    runs: list[dict] = []
    longest_pass = 0.0
    for repeat in range(settings.repeats):
        elapsed = time.perf_counter() - began
        if repeat and settings.budget_s is not None and elapsed + longest_pass > settings.budget_s:
            return runs, (f"budget {settings.budget_s:g} s: {repeat} of {settings.repeats} passes run "
                          f"(a pass took up to {longest_pass:.0f} s)")
        pass_began = time.perf_counter()
        order = SCHEDULERS if repeat % 2 == 0 else SCHEDULERS[::-1]
        for rate in rates:
            requests = make_requests(corpus, settings.workload, rate, vocab)
            for name in order:
                if settings.budget_s is not None and time.perf_counter() - began > settings.budget_s:
                    return runs, (f"budget {settings.budget_s:g} s spent in pass {repeat + 1} of {settings.repeats}: "
                                  "the runs left were not started")
                run_ = _serve(engine, name, requests, eos_id, timeout_s, timer=timer)
                figures = summarize(run_)
                runs.append({"scheduler": name, "rate_per_s": rate, "pass": repeat, **figures})
                progress(f"pass {repeat + 1}/{settings.repeats} {name:>10} at {rate:>8.3g} req/s: "
                         f"{figures['throughput_tokens_per_s']:,.0f} tokens/s, p99 latency "
                         f"{figures['latency_s']['p99']:.3g} s, busy {100 * figures['busy_share']:.0f}%")
        longest_pass = max(longest_pass, time.perf_counter() - pass_began)
    return runs, ""


def _serve(engine, name, requests, eos_id, timeout_s, **kwargs) -> Run:
    if name == "static":
        return serve_static(engine, requests, eos_id, timeout_s=timeout_s, **kwargs)
    return serve_continuous(engine, requests, eos_id, **kwargs)


def _stat(values: list[float]) -> dict[str, float] | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _point(rate: float, runs: list[dict]) -> dict[str, Any]:
    """One (rate, scheduler) point: the median and min-max of each figure over its runs."""
    def of(*path):
        values = []
        for r in runs:
            value = r
            for key in path:
                value = value[key]
            values.append(value)
        return _stat(values)

    return {
        "rate_per_s": rate, "runs": len(runs),
        "throughput_tokens_per_s": of("throughput_tokens_per_s"), "busy_share": of("busy_share"),
        **{f"{metric}_{p}": of(metric, p) for metric in ("ttft_s", "per_token_s", "latency_s") for p in ("p50", "p99")},
        "prefill_share": _stat([r["by_kind"][PREFILL]["seconds"] / max(r["span_s"] * r["busy_share"], 1e-12)
                                for r in runs]),
        "prefill_waste_share": of("by_kind", PREFILL, "waste_share"),
        "decode_waste_share": of("by_kind", DECODE, "waste_share"),
    }


def throughput_at_latency(points: list[dict], metric: str, latency: float) -> tuple[float | None, str]:
    """The highest throughput the (rate-ordered) points reach at a p99 ``metric`` of at most ``latency``, linear
    between neighbouring points; ('at least', max) when every point stays below ``latency``."""
    curve = [(p[f"{metric}_p99"]["median"], p["throughput_tokens_per_s"]["median"]) for p in points
             if p["runs"] and p[f"{metric}_p99"] is not None]
    if not curve:
        return None, "no points"
    if all(lat <= latency for lat, _ in curve):
        return max(t for _, t in curve), "at least"  # a bound: the sweep never pushed this scheduler that far
    candidates = [t for lat, t in curve if lat <= latency]
    for (l0, t0), (l1, t1) in zip(curve, curve[1:]):
        if l0 <= latency < l1:
            candidates.append(t0 + (t1 - t0) * (latency - l0) / (l1 - l0))
    return (max(candidates), "interpolated") if candidates else (None, "never that low")


def compare(points: dict[str, list[dict]], metric: str) -> dict[str, Any]:
    """Continuous batching's throughput at static batching's p99 ``metric`` for every static point, and the
    headline at static batching's highest-throughput point."""
    rows = []
    for p in points["static"]:
        if not p["runs"] or p[f"{metric}_p99"] is None:
            continue
        latency = p[f"{metric}_p99"]["median"]
        static_tps = p["throughput_tokens_per_s"]["median"]
        cont_tps, how = throughput_at_latency(points["continuous"], metric, latency)
        # Where the figure is a bound, the p99 continuous batching had at its highest throughput.
        cont_p99 = latency if how != "at least" else max(
            (q for q in points["continuous"] if q["runs"]), key=lambda q: q["throughput_tokens_per_s"]["median"]
        )[f"{metric}_p99"]["median"]
        rows.append({"rate_per_s": p["rate_per_s"], "p99_s": latency, "static_tokens_per_s": static_tps,
                     "continuous_tokens_per_s": cont_tps, "continuous_p99_s": cont_p99, "how": how,
                     "factor": cont_tps / static_tps if cont_tps is not None and static_tps > 0 else None})
    headline = max(rows, key=lambda r: r["static_tokens_per_s"]) if rows else None
    return {"metric": f"p99 {metric[:-2]}", "rows": rows, "headline": headline}


class _WindowDone(Exception):
    """The profiled window is full: the serving loop stops there."""


def profile_window(engine: SlotEngine, requests, eos_id: int, name: str, timeout_s: float, settings: Settings,
                   ceilings, timer: Timer = measured) -> dict[str, Any]:
    """``profile_steps`` engine steps, each a profiler step, from the first prefill after ``profile_skip`` steps
    (so the window holds a prefill and the decode steps after it, past the cold start); the Report's op time and
    the steps' profiled wall time summed by kind, and the op time of wasted positions (each step's op time x its
    wasted share of the positions it computed: a share of the work, not a measured saving). The whole run's
    shares of prefill, decode and waste are the sweep's; the window shows what a step of each kind is made of."""
    from roofline.analyze.profiled import report_from_profile
    from roofline.capture.profiling import StepProfiler
    from roofline.doctor import diagnose

    window: list[Step] = []
    seen, opened = [0], [False]
    profiler = StepProfiler(wait=0, warmup=0, active=settings.profile_steps, timed=0, device=engine.device,
                            ceilings=ceilings, detect_syncs=False, whole_block=False,
                            workload=f"{name} batching serving loop")

    def opening_timer(kind, rows, positions, fn):
        if not opened[0] and seen[0] >= settings.profile_skip and kind == PREFILL:
            profiler.__enter__()
            opened[0] = True
        return timer(kind, rows, positions, fn)

    def on_step(step: Step) -> None:
        seen[0] += 1
        if opened[0]:
            window.append(step)
            profiler.step()
            if len(window) == settings.profile_steps:
                raise _WindowDone

    _prime_profiler(engine, eos_id)
    try:
        _serve(engine, name, requests, eos_id, timeout_s, timer=opening_timer, on_step=on_step)
    except _WindowDone:
        pass
    finally:
        if opened[0]:
            profiler.__exit__(None, None, None)
    if not window:
        raise RooflineError(f"the {name} loop ran no prefill after {settings.profile_skip} steps: nothing profiled")
    record = profiler.record()
    report = report_from_profile(record, ceilings)
    op_time = [0.0] * len(window)
    for op in report.ops:
        if op.step is not None and 0 <= op.step < len(window):
            op_time[op.step] += op.time_s
    out: dict[str, Any] = {"steps": len(window), "ops_time_source": "device kernels" if engine.device.type == "cuda"
                           else "host op time (CPU)"}
    total_ops = sum(op_time)
    total_wall = sum(record.profiled_step_s[: len(window)])
    for kind in (PREFILL, DECODE):
        idx = [i for i, st in enumerate(window) if st.kind == kind]
        ops_s = sum(op_time[i] for i in idx)
        wall_s = sum(record.profiled_step_s[i] for i in idx if i < len(record.profiled_step_s))
        wasted = sum(op_time[i] * (window[i].computed - window[i].useful) / window[i].computed for i in idx)
        out[kind] = {"steps": len(idx), "op_s": ops_s, "wall_s": wall_s,
                     "op_s_per_step": ops_s / len(idx) if idx else None,
                     "op_share": ops_s / total_ops if total_ops else 0.0,
                     "wall_share": wall_s / total_wall if total_wall else 0.0,
                     "wasted_op_s": wasted, "computed_tokens": sum(window[i].computed for i in idx),
                     "wasted_tokens": sum(window[i].computed - window[i].useful for i in idx)}
    # On CUDA: the share of the window's wall time the device spent in kernels (the profiler's own host cost
    # lengthens the wall time, so this is a lower bound of the unprofiled loop's).
    out["op_time_over_wall"] = total_ops / total_wall if total_wall else None
    wasted_s = out[PREFILL]["wasted_op_s"] + out[DECODE]["wasted_op_s"]
    out["wasted_op_share"] = wasted_s / total_ops if total_ops else 0.0
    by_name: dict[str, float] = {}
    for op in report.ops:
        by_name[op.name] = by_name.get(op.name, 0.0) + op.time_s
    out["top_ops"] = [{"op": k, "share": v / total_ops} for k, v in
                      sorted(by_name.items(), key=lambda kv: -kv[1])[:6]] if total_ops else []
    out["findings"] = [f.title for f in diagnose(report)[:5]]
    return out


def _prime_profiler(engine: SlotEngine, eos_id: int) -> None:
    """One throwaway profiled decode step: the profiler's first start in a process (Kineto, CUPTI) takes up to
    seconds, which the window's first step, a prefill, would otherwise carry."""
    from roofline.capture.profiling import StepProfiler

    with StepProfiler(wait=0, warmup=0, active=1, timed=0, device=engine.device, detect_syncs=False,
                      whole_block=False, with_stack=False, profile_memory=False) as primer:
        engine.decode([eos_id], [0], [0]).tolist()
        primer.step()


def _round3(value: float) -> float:
    return float(f"{value:.3g}") if value > 0 and math.isfinite(value) else value
