"""Batch-1 decode with hand-written Triton kernels (lab/decode_fast.py) against the current best, on one GPU.

    PYTHONPATH=src python3 benchmarks/decode_fast.py --models llama-8b llama-1b llama-tiny -o OUT.json --budget 470

For each model (fp16, random weights, the lab's fixed model, a 256-token prompt):
- "+ Triton GEMV": FastDecode, 5 kernels a layer (norm-fused products with split-K, fused SiLU*mul and residual
  adds, fused RoPE + KV-cache write + flash-decoding attention), its tiles tuned once per weight shape;
- "+ Triton GEMV + PDL": the same kernels launched with programmatic dependent launch (each reads its first
  weight tile while the kernel before it drains); left out with a note where Triton or the driver refuse it;
- "+ Triton GEMV + PDL + attention v2" (``--attention-v2``; without PDL where it cannot run): the same tiles with
  triton_attention_v2's kernel, its slices per program tuned of their own (lab/kernels/attention.py);
- "tuned (compiled + graphed)": the repo's best so far (decode_roof.py's "tuned": stacked projections,
  Inductor coordinate-descent tuning), skipped with a note when the budget left cannot pay its compile;
both captured as CUDA graphs of 16 steps (lab/graphed.py) and timed in alternating runs (median and spread).
Tokens are compared with the eager fixed model's greedy tokens; at a divergence, the eager model's top-two logit
gap there (in ulps) says whether it was a tie. Each variant's kernel time is split by class (matrix products,
attention, other; decode_breakdown.py's classes) from a profiled Python-loop run, with each class's bandwidth
and the time between kernels (graphed wall time - time any kernel ran). Under PDL a kernel starts while the one
before it runs and waits inside it: each kernel counts only from where the one before it ended, and the time
they overlapped is given apart ("ran under an earlier kernel").

On CPU (``--device cpu``, a smoke test of this script) the products run as the kernels' torch twins, or as the
Triton kernels under TRITON_INTERPRET=1; the JSON's "backend" says which, and no such figure is a GPU's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
import traceback
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BUDGET_FOR_BASELINE_S = {"llama-8b": 185, "llama-1b": 130}  # the tuned step took 169 s and 114 s on the H200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["llama-1b"])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--reps", type=int, default=5, help="alternating timed runs of each variant")
    parser.add_argument("--baseline", choices=["tuned", "none"], default="tuned")
    parser.add_argument("--no-tune", action="store_true", help="default tiles instead of tuning them")
    parser.add_argument("--no-pdl", dest="pdl", action="store_false",
                        help="leave out the variant launched with programmatic dependent launch")
    parser.add_argument("--attention-v2", action="store_true",
                        help="also the step with the second attention kernel (triton_attention_v2)")
    parser.add_argument("--prefetch", action="store_true",
                        help="also the PDL + attention v2 step with its products tuned again for deep prefetch "
                             "(gemv.prefetch_configs: several tiles, or a program's whole row block, read before "
                             "the wait for the previous kernel); implies --attention-v2")
    parser.add_argument("--l2-prefetch", action="store_true",
                        help="also the deep-prefetch step whose attention asks the L2 for the layer's next weights "
                             "(wo, then w13's first bytes; the amount tuned in the whole step); implies --prefetch")
    parser.add_argument("--persistent", action="store_true",
                        help="also the deep-prefetch step with wo, the norm, w13 and w2 as one persistent kernel a "
                             "layer (kernels/persistent_mlp.py), or the three kernels where they are faster in the "
                             "whole step (decode_fast.tune_persistent); implies --prefetch. Run it only after "
                             "persistent_smoke.py passed (gpu_suite.py issue19-persist gates it so)")
    parser.add_argument("--l2-smoke", metavar="JSON",
                        help="l2_prefetch_smoke.py's result: --l2-prefetch only where it says the instruction ran "
                             "and left attention's bits unchanged (a faulting instruction would poison this process "
                             "and every variant's figures with it)")
    parser.add_argument("--budget", type=float, default=470.0, help="seconds; baselines are skipped past it")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("-o", "--output")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the markdown tables of earlier runs' JSON")
    args = parser.parse_args(argv)
    args.prefetch = args.prefetch or args.l2_prefetch or args.persistent
    args.attention_v2 = args.attention_v2 or args.prefetch
    if args.table:
        print(table(args.table))
        return 0
    if not args.output:
        parser.error("-o/--output is required")

    import torch

    from roofline.device import get_ceilings
    from roofline.io import atomic_write_text

    began = time.perf_counter()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("decode_fast.py: error: no CUDA GPU (use --device cpu for the smoke test)", file=sys.stderr)
        return 2
    bandwidth = get_ceilings(device, quick=device.type != "cuda").memory_bandwidth_bytes_per_s
    results = {"gpu": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "torch": torch.__version__,
               "triton": _triton_version(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
               "command": " ".join(sys.argv), "bandwidth_bytes_per_s": bandwidth, "context": args.context,
               "steps": args.steps, "reps": args.reps, "models": {}}
    for name in args.models:
        try:
            results["models"][name] = measure_model(name, args, device, bandwidth, began, checkpoint=lambda row, n=name: (
                results["models"].__setitem__(n, row), atomic_write_text(args.output, json.dumps(results, indent=1))))
        except Exception as exc:  # noqa: BLE001 - one model's failure is recorded; the others still run
            traceback.print_exc()
            results["models"].setdefault(name, {})["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        if device.type == "cuda":
            torch.cuda.empty_cache()
        atomic_write_text(args.output, json.dumps(results, indent=1))
    results["seconds"] = time.perf_counter() - began
    atomic_write_text(args.output, json.dumps(results, indent=1))
    print(f"decode_fast.py: {len(results['models'])} models in {results['seconds']:.0f} s -> {args.output}")
    return 0


def measure_model(name: str, args, device, bandwidth: float, began: float, checkpoint=lambda row: None) -> dict:
    """The model's row: the Triton step alone first (checkpointed), then alternating with the baseline."""
    import torch

    from roofline.lab import bench
    from roofline.lab.decode_fast import FastDecode, tune
    from roofline.lab.generate import decode_one_token
    from roofline.lab.model import Fixes, configure, fused_projections
    from roofline.models.llama import build_llama

    t0 = time.perf_counter()
    torch._dynamo.reset()
    model = configure(build_llama(_config(name), dtype=torch.float16, device=device), Fixes.all())
    model.setup_caches(1, args.context + args.steps + 8)
    roof_bytes = bench.decode_bytes(model, 1, args.context + args.steps // 2)
    config = model.config
    kv_bytes = 2 * 2 * config.n_layers * config.n_kv_heads * config.head_dim * (args.context + args.steps // 2)
    row = {"roof_bytes_per_token": roof_bytes, "roof_tokens_per_s": bandwidth / roof_bytes,
           "kv_cache_bytes_per_token": kv_bytes, "variants": {}, "notes": []}
    checkpoint(row)
    prompt, pad = bench._prompt(model, 1, args.context)
    with torch.no_grad():
        bench._prefill(model, prompt, pad)
        token = prompt[:, -1:].contiguous()
        pos = torch.tensor([args.context], device=device)
        reference = bench._decode_steps(model, decode_one_token, token, pos, pad, args.steps)[0].tolist()
    row["eager_tokens"] = reference
    print(f"{name}: built, eager reference tokens in {time.perf_counter() - t0:.0f} s", flush=True)
    # Every variant is fed the prompt's last token again at slot `context` (bench's convention), so the
    # sequence behind generated token i is the prompt, that token, and the reference's first i tokens.
    fed = prompt[0].tolist() + [prompt[0, -1].item()]
    context = Run(model, prompt, pad, token, pos, reference, fed, roof_bytes, kv_bytes, bandwidth, args, device)

    with fused_projections(model):
        fast = FastDecode(model)
        if not args.no_tune:
            try:
                tune(fast, progress=lambda m: print(f"  {name} {m}", flush=True),
                     position=args.context + args.steps // 2)
            except Exception as exc:  # noqa: BLE001 - default tiles still give a figure
                traceback.print_exc()
                row["notes"].append(f"tuning failed, default tiles used: {type(exc).__name__}: {str(exc)[:300]}")
        row["fast"] = {"backend": fast.backend, "tuning": fast.tuning.as_dict(), "kernels_per_layer": 5,
                       "matrix_bytes": fast.weight_bytes()}
        context.matrix_bytes = fast.weight_bytes()
        steps = {FAST: fast.step}
        try:
            decoders = context.build(steps, name)
        except Exception as exc:  # noqa: BLE001 - retried with the eager attention ops, labelled so
            traceback.print_exc()
            row["notes"].append(f"the Triton step failed ({type(exc).__name__}: {str(exc)[:300]}); measured again "
                                "with attention as eager torch ops (products still Triton)")
            fast = FastDecode(model, tuning=fast.tuning, triton_attention=False)
            steps = {FAST: fast.step}
            decoders = context.build(steps, name)
        row["fast"]["triton_attention"] = fast.triton_attention
        row["variants"] = context.measure(steps, decoders, name)
        row["seconds"] = time.perf_counter() - t0
        generated = row["variants"][FAST]["generated"]
        row["variants"][FAST]["tokens"] = {"compared": len(reference), "same": _same_prefix(reference, generated),
                                           "first_divergence": None if generated == reference else
                                           _same_prefix(reference, generated), "note": "logit gap not yet measured"}
        checkpoint(row)
        more = {}
        if args.pdl and fast.backend == "triton" and device.type == "cuda":
            more[FAST_PDL] = partial(_pdl_step, model, fast)
        elif args.pdl:
            row["notes"].append("PDL variant needs the Triton kernels on a CUDA GPU: not run")
        if args.attention_v2:
            pdl = args.pdl and fast.backend == "triton" and device.type == "cuda"
            v2_tuning = {}
            more[FAST_PDL_V2 if pdl else FAST_V2] = partial(
                _v2_step, model, fast, pdl, args.context + args.steps // 2, row,
                lambda m: print(f"  {name} v2 {m}", flush=True), v2_tuning)
            if args.prefetch and pdl:
                prefetched = {}
                more[FAST_PREFETCH] = partial(_prefetch_step, model, fast, v2_tuning, row,
                                              lambda m: print(f"  {name} {m}", flush=True),
                                              args.context + args.steps // 2, prefetched)
                from l2_prefetch_smoke import refused as l2_refused

                refused = l2_refused(args.l2_smoke) if args.l2_prefetch else None
                if refused:
                    row["notes"].append(f"L2 prefetch not run: {refused}")
                elif args.l2_prefetch:
                    more[FAST_L2] = partial(_l2_step, model, fast, prefetched, row,
                                            lambda m: print(f"  {name} {m}", flush=True),
                                            args.context + args.steps // 2)
                if args.persistent:
                    more[FAST_PERSIST] = partial(_persistent_step, model, fast, prefetched, row,
                                                 lambda m: print(f"  {name} {m}", flush=True),
                                                 args.context + args.steps // 2)
            elif args.prefetch:
                row["notes"].append("deep prefetch needs PDL (the Triton kernels on a CUDA GPU): not run")
                if args.l2_prefetch:
                    row["notes"].append("L2 prefetch needs PDL and deep prefetch (Triton on a CUDA GPU): not run")
                if args.persistent:
                    row["notes"].append("the persistent step needs PDL and deep prefetch (Triton on a CUDA GPU): "
                                        "not run")
        if args.baseline == "tuned":
            left = args.budget - (time.perf_counter() - began)
            if left < BUDGET_FOR_BASELINE_S.get(name, 60):
                row["notes"].append(f"tuned baseline skipped: {left:.0f} s of the budget left")
                print(f"  {name}: {row['notes'][-1]}", flush=True)
            elif device.type == "cuda":
                more["tuned (compiled + graphed)"] = lambda: bench.compile_tuned_decode(device)
            else:
                more["eager stand-in for tuned (cpu smoke)"] = lambda: decode_one_token
        for label, make in more.items():
            try:
                step = make()
                decoders.update(context.build({label: step}, name))
                steps[label] = step
            except Exception as exc:  # noqa: BLE001 - e.g. a Triton without PDL: the figures above stand
                traceback.print_exc()
                row["notes"].append(f"{label} failed: {type(exc).__name__}: {str(exc)[:300]}")
        if len(steps) > 1:
            alone = row["variants"][FAST]
            try:
                row["variants"] = context.measure(steps, decoders, name)
                row["variants"][FAST]["alone"] = {k: alone[k] for k in ("tokens_per_s", "runs_tokens_per_s")}
            except Exception as exc:  # noqa: BLE001
                traceback.print_exc()
                row["notes"].append(f"alternating runs failed: {type(exc).__name__}: {str(exc)[:300]}")
    for label, step in steps.items():  # a grid barrier that gave up: that variant's figures are of wrong results
        state = getattr(getattr(step, "__self__", None), "persistent_state", None)
        if state is not None and state.failed():
            row["notes"].append(f"{label}: a persistent kernel's grid barrier gave up (the grid was not "
                                "co-resident): its figures and tokens are not valid")
    if FAST_PDL in row["variants"]:
        row["notes"].append("PDL: programmatic dependent launch; each kernel reads its first weight tile while the "
                            "previous one finishes")
    context.compare_tokens(row["variants"], name)
    row["seconds"] = time.perf_counter() - t0
    return row


FAST = "+ Triton GEMV"
FAST_PDL = "+ Triton GEMV + PDL"
FAST_V2 = "+ Triton GEMV + attention v2"
FAST_PDL_V2 = "+ Triton GEMV + PDL + attention v2"
FAST_PREFETCH = "+ Triton GEMV + PDL + attention v2 + deep prefetch"
FAST_L2 = FAST_PREFETCH + " + L2 prefetch"
FAST_PERSIST = FAST_PREFETCH + " + persistent"


class Run:
    """One model's fixed inputs, and the graphed decoders' timing in alternating rounds."""

    def __init__(self, model, prompt, pad, token, pos, reference, fed, roof_bytes, kv_bytes, bandwidth, args, device):
        self.model, self.prompt, self.pad, self.token, self.pos = model, prompt, pad, token, pos
        self.reference, self.fed, self.roof_bytes, self.kv_bytes = reference, fed, roof_bytes, kv_bytes
        self.bandwidth, self.args, self.device = bandwidth, args, device
        self.matrix_bytes = 0

    def build(self, steps: dict, name: str) -> dict:
        import torch

        from roofline.lab import bench
        from roofline.lab.graphed import GraphedDecoder

        decoders = {}
        for label, step in steps.items():
            t1 = time.perf_counter()
            decoders[label] = GraphedDecoder(self.model, step, self.pad, math.gcd(self.args.steps, bench.GRAPH_STEPS),
                                             warmup=2)
            print(f"  {name} {label}: built and captured in {time.perf_counter() - t1:.0f} s", flush=True)
        with torch.no_grad():  # the decoders' warm-up steps wrote cache slots from 0
            bench._prefill(self.model, self.prompt, self.pad)
        return decoders

    def measure(self, steps: dict, decoders: dict, name: str) -> dict:
        args = self.args
        times = {label: [] for label in decoders}
        tokens = {}
        for _ in range(args.reps + 1):  # the first round warms up and is dropped
            for label, decoder in decoders.items():
                seconds, out = _timed(lambda d=decoder: d.run(self.token, args.context, args.steps), self.device)
                times[label].append(seconds)
                tokens[label] = out[0].tolist()
        variants = {}
        for label, samples in times.items():
            samples = samples[1:]
            median = statistics.median(samples)
            rate = args.steps / median
            variant = {"tokens_per_s": rate, "ms_per_token": 1e3 / rate,
                       "share_of_memory_roof": rate * self.roof_bytes / self.bandwidth,
                       "runs_tokens_per_s": [args.steps / s for s in samples],
                       "spread_tokens_per_s": [args.steps / max(samples), args.steps / min(samples)],
                       "generated": tokens[label]}
            try:
                variant["breakdown"] = breakdown(self.model, steps[label], self.token, self.pos, self.pad, args.steps,
                                                 self.device, 1e6 * median / args.steps, self.matrix_bytes,
                                                 self.kv_bytes)
            except Exception as exc:  # noqa: BLE001 - the timing stands without its breakdown
                traceback.print_exc()
                variant["breakdown"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}", "classes": {},
                                        "top_kernels": [], "kernel_us_per_token": 0.0, "kernels_per_token": 0.0,
                                        "gap_us_per_token": 0.0}
            variants[label] = variant
            print(f"{name:10s} {label:32s} {rate:9.1f} tok/s {1e3 / rate:7.3f} ms/token "
                  f"{100 * variant['share_of_memory_roof']:5.1f}% of roof (runs {min(variant['runs_tokens_per_s']):.1f}-"
                  f"{max(variant['runs_tokens_per_s']):.1f})", flush=True)
            _print_breakdown(variant["breakdown"])
        return variants

    def compare_tokens(self, variants: dict, name: str) -> None:
        """Each variant's tokens against the eager model's (called with the plain, unstacked modules back)."""
        for label, variant in variants.items():
            if "generated" in variant:
                variant["generated_tokens"] = variant["generated"]
                variant["tokens"] = agreement(self.model, self.fed, self.reference, variant.pop("generated"))
            same = variant["tokens"]
            print(f"{name:10s} {label:32s} tokens: {same['same']}/{same['compared']} as eager, first divergence "
                  f"{same['first_divergence']}, eager's top-2 gap there {same.get('logit_gap_ulps')} ulp", flush=True)


def _pdl_step(model, fast):
    from roofline.lab.decode_fast import FastDecode

    return FastDecode(model, tuning=fast.tuning, pdl=True, triton_attention=fast.triton_attention).step


def _v2_step(model, fast, pdl: bool, position: int, row: dict, progress, keep: dict | None = None):
    """The step with attention version 2: the products' tiles of ``fast``, the attention's slices tuned anew
    (the tuning also left in ``keep["tuning"]`` for the deep-prefetch step)."""
    from roofline.lab.decode_fast import FastDecode, tune_attention

    v2 = FastDecode(model, tuning=fast.tuning, triton_attention=fast.triton_attention, attention_version=2)
    tuning = tune_attention(v2, position=position, progress=progress)
    if keep is not None:
        keep["tuning"] = tuning
    row["fast"]["attention_v2"] = {"t_per_split": tuning.t_per_split, "attention_position": tuning.attention_position,
                                   "num_warps": tuning.attention_warps, "split_block": tuning.attention_split_block,
                                   "candidates_us": [{**c, "us": us} for c, us in
                                                     tuning.candidates_us.get("attention", [])]}
    return FastDecode(model, tuning=tuning, pdl=pdl, triton_attention=fast.triton_attention,
                      attention_version=2).step


def _prefetch_step(model, fast, v2_tuning: dict, row: dict, progress, position: int | None = None,
                   keep: dict | None = None):
    """The PDL + attention v2 step (its tuning, made by _v2_step before this) with the products' tiles tuned again
    under PDL among the deep-prefetch candidates and the tile each had (decode_fast.tune_prefetch; ``position``:
    the slot its whole-step timings write, one the decode rewrites before reading it)."""
    from roofline.lab.decode_fast import FastDecode, tune_prefetch

    if "tuning" not in v2_tuning:
        raise RuntimeError("the attention v2 step was not built (its tuning is the prefetch step's start)")
    step = FastDecode(model, tuning=v2_tuning["tuning"], pdl=True, triton_attention=fast.triton_attention,
                      attention_version=2)
    tuning = tune_prefetch(step, progress=progress, position=position)
    row["fast"]["prefetch"] = {"configs": {r: c.as_dict() for r, c in tuning.configs.items()},
                               "attention_early_launch": tuning.attention_early_launch,
                               "candidates_us": {r: [{**c, "us": us} for c, us in rows]
                                                 for r, rows in tuning.candidates_us.items()
                                                 if r.endswith(("prefetch", "in the step", "early launch"))},
                               "seconds": tuning.seconds}
    if keep is not None:
        keep["tuning"] = tuning
    return step.step


def _l2_step(model, fast, prefetched: dict, row: dict, progress, position: int):
    """The deep-prefetch step (its tuning, made by _prefetch_step before this) whose attention also asks the L2
    for the layer's next weights (wo, then a first slice of w13), the amount chosen in the whole step
    (decode_fast.tune_l2_prefetch, 0 among the candidates)."""
    from roofline.lab.decode_fast import FastDecode, tune_l2_prefetch

    if "tuning" not in prefetched:
        raise RuntimeError("the deep-prefetch step was not built (its tuning is the L2-prefetch step's start)")
    step = FastDecode(model, tuning=prefetched["tuning"], pdl=True, triton_attention=fast.triton_attention,
                      attention_version=2)
    tuning = tune_l2_prefetch(step, position=position, progress=progress)
    row["fast"]["l2_prefetch"] = {"bytes": tuning.attention_l2_prefetch, "chunk": tuning.attention_l2_chunk,
                                  "candidates_us": [{**c, "us": us} for c, us in
                                                    tuning.candidates_us.get("attention l2 prefetch", [])],
                                  "evict_first": [r for r, c in tuning.configs.items() if c.evict_first],
                                  "evict_first_us": {r: [us for _, us in rows]
                                                     for r, rows in tuning.candidates_us.items()
                                                     if r.endswith(" evict first")}}
    return step.step


def _persistent_step(model, fast, prefetched: dict, row: dict, progress, position: int):
    """The deep-prefetch step (its tuning, made by _prefetch_step before this) with wo, the norm, w13 and w2 as one
    persistent kernel a layer where a checked candidate makes the whole step faster (decode_fast.tune_persistent;
    the three kernels are a candidate)."""
    from roofline.lab.decode_fast import FastDecode, tune_persistent

    if "tuning" not in prefetched:
        raise RuntimeError("the deep-prefetch step was not built (its tuning is the persistent step's start)")
    step = FastDecode(model, tuning=prefetched["tuning"], pdl=True, triton_attention=fast.triton_attention,
                      attention_version=2)
    tuning = tune_persistent(step, position=position, progress=progress)
    row["fast"]["persistent"] = {"config": tuning.persistent.as_dict() if tuning.persistent is not None else None,
                                 "resident_per_sm": sorted(set(step.persistent_state.resident.values())),
                                 "candidates_us": [{**c, "us": us} for c, us in
                                                   tuning.candidates_us.get("persistent in the step", [])]}
    return step.step


def _same_prefix(a: list, b: list) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _config(name: str):
    from roofline.models.llama import CONFIGS, LlamaConfig

    if name == "llama-micro":  # the CPU smoke test's model: every code path, seconds on CPU
        return LlamaConfig(dim=128, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=192, vocab_size=256)
    return CONFIGS[name]


def _timed(run, device) -> tuple[float, object]:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3, out
    t = time.perf_counter()
    out = run()
    return time.perf_counter() - t, out


def agreement(model, prompt: list[int], reference: list[int], tokens: list[int]) -> dict:
    """Tokens equal to the eager model's, and at the first divergence the eager model's top-two logit gap."""
    from roofline.lab.agreement import compare_tokens, logit_gap

    found = compare_tokens("x", [reference], [tokens])
    result = {"compared": found.compared_tokens, "first_divergence": found.first_divergence,
              "same": found.compared_tokens if found.identical else found.first_divergence}
    if found.first_divergence is not None:
        gap, ulps = logit_gap(model, prompt, reference, found.first_divergence)
        result.update(logit_gap=gap, logit_gap_ulps=ulps, reference_token=reference[found.first_divergence],
                      token=tokens[found.first_divergence])
    return result


def breakdown(model, step, token, pos, pad, steps: int, device, wall_us: float, matrix_bytes: int,
              kv_bytes: int) -> dict:
    """Kernel time per token by class from a profiled Python-loop run of ``step``, against the graphed wall time."""
    import torch

    from decode_breakdown import kernel_breakdown
    from roofline.lab import bench

    with torch.no_grad():
        bench._decode_steps(model, step, token, pos, pad, 4)
        bench._sync(device)
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as prof:
            bench._decode_steps(model, step, token, pos, pad, steps)
            bench._sync(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        result = kernel_breakdown(path, steps)
    classes = result["classes"]
    for cls, moved in (("matmul", matrix_bytes), ("attention", kv_bytes)):
        us = classes.get(cls, {}).get("us_per_token", 0.0)
        if cls in classes:
            classes[cls]["bytes_per_token"] = moved
            classes[cls]["achieved_bytes_per_s"] = moved / (us * 1e-6) if us else None
    result["graphed_wall_us_per_token"] = wall_us
    result["gap_us_per_token"] = wall_us - result["kernel_us_per_token"]
    return result


def _print_breakdown(b: dict) -> None:
    parts = []
    for cls, v in b["classes"].items():
        bw = v.get("achieved_bytes_per_s")
        parts.append(f"{cls} {v['us_per_token']:.0f} us ({v['kernels_per_token']:.0f})"
                     + (f" {bw / 1e12:.2f} TB/s" if bw else ""))
    overlap = b.get("overlapped_us_per_token") or 0.0
    print(f"    kernels {b['kernel_us_per_token']:.0f} us in {b['kernels_per_token']:.0f}: {'; '.join(parts)}; "
          f"between kernels {b['gap_us_per_token']:.0f} us"
          + (f"; {overlap:.0f} us more ran under an earlier kernel (PDL: early starts, waiting)" if overlap >= 0.5
             else ""), flush=True)
    for k in b["top_kernels"][:4]:
        print(f"      {k['us_per_token']:7.1f} us x{k['calls_per_token']:.0f} [{k['class']}] {k['name'][:80]}")


def table(paths: list[str]) -> str:
    """Markdown: one row per model and variant (speed, share of the roof, tokens), then the kernel classes."""
    lines = ["| model | variant | tokens/s (runs) | ms/token | bytes/token | % of measured roof | same tokens as eager |",
             "|---|---|---:|---:|---:|---:|---|"]
    classes = ["| model | variant | wall / token | kernels | matrix products (bandwidth) | attention (bandwidth) "
               "| other | between kernels | overlapped (PDL) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    skipped = []
    for path in paths:
        with open(path) as fh:
            data = json.load(fh)
        if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
            skipped.append(os.path.basename(path))  # e.g. gpu_suite.py's suite.json beside the results
            continue
        for model, row in data["models"].items():
            for label, v in row.get("variants", {}).items():
                runs = v["runs_tokens_per_s"]
                tokens = v.get("tokens") or {}
                same = (f"{tokens['same']}/{tokens['compared']}" if tokens else "not compared")
                if tokens.get("first_divergence") is not None:
                    gap = tokens.get("logit_gap_ulps")
                    same += f" (first differs at {tokens['first_divergence']}" + (
                        f": eager's top-2 gap {gap:.1f} ulp)" if gap is not None else ": gap not measured)")
                lines.append(f"| {model} | {label} | {v['tokens_per_s']:,.1f} ({min(runs):,.1f}-{max(runs):,.1f}) | "
                             f"{v['ms_per_token']:.3f} | {row['roof_bytes_per_token'] / 1e9:.2f} GB | "
                             f"{100 * v['share_of_memory_roof']:.1f}% | {same} |")
                b = v.get("breakdown", {})
                c = b.get("classes", {})

                def cell(name):
                    x = c.get(name)
                    if not x:
                        return "-"
                    bw = x.get("achieved_bytes_per_s")
                    return f"{x['us_per_token']:,.0f} us ({x['kernels_per_token']:.0f})" + (f" {bw / 1e12:.2f} TB/s" if bw else "")
                classes.append(f"| {model} | {label} | {b.get('graphed_wall_us_per_token', 0):,.0f} us | "
                               f"{b.get('kernel_us_per_token', 0):,.0f} us ({b.get('kernels_per_token', 0):.0f}) | "
                               f"{cell('matmul')} | {cell('attention')} | {cell('other')} | {_gap_cell(b)} | "
                               + (f"{b['overlapped_us_per_token']:,.0f} us |" if "overlapped_us_per_token" in b
                                  else "not split out |"))
            for note in row.get("notes", []) + ([row["error"]] if "error" in row else []):
                lines.append(f"| {model} | note: {note} | | | | | |")
    notes = [f"(not decode_fast.py results, left out: {', '.join(skipped)})"] if skipped else []
    return "\n".join(lines + [""] + classes + notes)


def _gap_cell(b: dict) -> str:
    gap = b.get("gap_us_per_token", 0)
    if gap < 0 and "overlapped_us_per_token" not in b:  # runs before overlaps were split out summed PDL's waits
        return f"{gap:,.0f} us (kernel times overlap: PDL's waits counted twice)"
    return f"{gap:,.0f} us"


def _triton_version() -> str | None:
    try:
        import triton
    except Exception:  # noqa: BLE001
        return None
    return triton.__version__


if __name__ == "__main__":
    sys.exit(main())
