"""Where a batch-1 decode token's time goes on the GPU: kernel time by class against the graphed loop's wall time.

    PYTHONPATH=src python3 benchmarks/decode_breakdown.py --models llama-1b llama-8b -o OUT.json

For the lab's fixed model, two compiled steps (plain: torch.compile fullgraph; tuned: stacked q/k/v and gate/up
weights plus coordinate-descent tuning), each:
1. wall time per token of the loop captured as CUDA graphs of 16 steps (as decode_roof.py's graphed and tuned),
   so the host adds nothing between kernels;
2. one profiled run of the same compiled step called from Python (torch.profiler, CUDA activity), read with
   roofline's Kineto loader: kernels per token, summed kernel time per token, split into classes by kernel name
   (matrix products, attention, everything else) with the matrix products' achieved bandwidth (every Linear
   weight's bytes / their time) and the ten most expensive kernels.
wall - kernel time is what the GPU spends between kernels even with no host in the way (launch gaps, tails).
The split answers why the decode stays under the memory roof: slow matrix-vector kernels, or many small ones.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections import defaultdict


def kernel_class(name: str) -> str:
    """matmul, attention or other, from the kernel's name: roofline's own classes (analyze/kernel_classes.py,
    which every GPU report carries), under this script's older names."""
    from roofline.analyze.kernel_classes import ATTENTION_CLASS, MATRIX
    from roofline.analyze.kernel_classes import kernel_class as roofline_class

    return {MATRIX: "matmul", ATTENTION_CLASS: "attention"}.get(roofline_class(name), "other")


def kernel_breakdown(trace_path: str, steps: int) -> dict:
    """Kernels per token and kernel time per token, by class, with the ten most expensive kernels.

    Each kernel is counted for the part of its run that no earlier kernel covers, so the classes add up to the
    time the GPU ran any kernel (``kernel_us_per_token``). Under programmatic dependent launch a kernel starts
    while the one before it still runs and waits inside (griddepcontrol.wait): summing durations would count that
    wait twice (the first run's breakdown showed negative time between kernels). The covered part is reported
    as ``overlapped_us_per_token``, and each class's plain sum of durations as ``with_overlap_us_per_token``."""
    from roofline.capture.kineto import load_trace

    trace = load_trace(trace_path)
    kernels = sorted((k for k in trace.kernels if k.category == "kernel"), key=lambda k: k.ts_us)
    by_class: dict[str, float] = defaultdict(float)
    raw_by_class: dict[str, float] = defaultdict(float)
    count_by_class: dict[str, int] = defaultdict(int)
    by_name: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    covered = float("-inf")
    for k in kernels:
        cls = kernel_class(k.name)
        end = k.ts_us + k.dur_us
        own = max(0.0, end - max(k.ts_us, covered))
        covered = max(covered, end)
        by_class[cls] += own
        raw_by_class[cls] += k.dur_us
        count_by_class[cls] += 1
        by_name[k.name][0] += 1
        by_name[k.name][1] += own
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:10]
    busy = sum(by_class.values())
    return {
        "kernels_per_token": len(kernels) / steps,
        "kernel_us_per_token": busy / steps,
        "overlapped_us_per_token": (sum(k.dur_us for k in kernels) - busy) / steps,
        "classes": {c: {"us_per_token": by_class[c] / steps, "kernels_per_token": count_by_class[c] / steps,
                        "with_overlap_us_per_token": raw_by_class[c] / steps}
                    for c in sorted(by_class)},
        "top_kernels": [{"name": n[:120], "calls_per_token": c / steps, "us_per_token": t / steps,
                         "class": kernel_class(n)} for n, (c, t) in top],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["llama-1b"])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--device", default="cuda", help="cuda; cpu only smoke-tests the script (no kernels)")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    import torch

    from roofline.device import get_ceilings
    from roofline.io import atomic_write_text
    from roofline.lab import bench
    from roofline.lab.generate import decode_one_token
    from roofline.lab.model import Fixes, configure, fused_projections
    from roofline.models.llama import CONFIGS, build_llama

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("decode_breakdown.py needs a CUDA GPU", file=sys.stderr)
        return 2
    bandwidth = get_ceilings(device).memory_bandwidth_bytes_per_s
    results = {"gpu": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "torch": torch.__version__,
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "bandwidth_bytes_per_s": bandwidth,
               "context": args.context, "steps": args.steps, "command": " ".join(sys.argv), "models": {}}

    def plain_step(model, token, input_pos, pad):
        return decode_one_token(model, token, input_pos, pad)

    for name in args.models:
        torch._dynamo.reset()
        model = configure(build_llama(CONFIGS[name], dtype=torch.float16, device=device), Fixes.all())
        model.setup_caches(1, args.context + args.steps + 8)
        roof_bytes = bench.decode_bytes(model, 1, args.context + args.steps // 2)
        linear_bytes = sum(m.weight.numel() * m.weight.element_size() for m in model.modules()
                           if isinstance(m, torch.nn.Linear))
        rows = {}
        variants = [("plain", lambda: torch.compile(plain_step, fullgraph=True, dynamic=False), False),
                    ("tuned", lambda: bench.compile_tuned_decode(device), True)]
        for label, make_step, fused in variants:
            began = time.perf_counter()
            step = make_step()
            with fused_projections(model) if fused else contextlib.nullcontext():
                seconds, _ = bench._graphed_decode_time(model, step, args.context, args.steps, 2, reps=3)
                wall_us = 1e6 * seconds / args.steps
                tokens, pad = bench._prompt(model, 1, args.context)
                with torch.no_grad():
                    bench._prefill(model, tokens, pad)
                    token = tokens[:, -1:].contiguous()
                    pos = torch.tensor([args.context], device=device)
                    # One unprofiled pass of the Python loop first: in the first H200 run the profiled pass
                    # still autotuned (L2-flushing fills among the kernels), so a warm pass comes first, and the
                    # graphs Dynamo compiles during the profiled pass are counted and reported.
                    bench._decode_steps(model, step, token, pos, pad, args.steps)
                    bench._sync(device)
                    graphs_before = _compiled_graphs()
                    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                                            torch.profiler.ProfilerActivity.CPU]) as prof:
                        bench._decode_steps(model, step, token, pos, pad, args.steps)
                        bench._sync(device)
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "trace.json")
                prof.export_chrome_trace(path)
                breakdown = kernel_breakdown(path, args.steps)
            breakdown["graphs_compiled_while_profiled"] = _compiled_graphs() - graphs_before
            matmul_us = breakdown["classes"].get("matmul", {}).get("us_per_token", 0.0)
            row = {
                "graphed_wall_us_per_token": wall_us,
                "share_of_memory_roof": roof_bytes / bandwidth / (wall_us * 1e-6),
                "ideal_us_per_token": 1e6 * roof_bytes / bandwidth,
                "gap_us_per_token": wall_us - breakdown["kernel_us_per_token"],
                "matmul_weight_bytes": linear_bytes,
                "matmul_achieved_bytes_per_s": linear_bytes / (matmul_us * 1e-6) if matmul_us else None,
                "seconds": time.perf_counter() - began,
                **breakdown,
            }
            rows[label] = row
            classes = "  ".join(f"{c} {v['us_per_token']:.0f} us ({v['kernels_per_token']:.0f})"
                                for c, v in breakdown["classes"].items())
            achieved = row["matmul_achieved_bytes_per_s"]
            print(f"{name:9s} {label:6s} wall {wall_us:7.1f} us/token ({100 * row['share_of_memory_roof']:.1f}% "
                  f"of roof, ideal {row['ideal_us_per_token']:.0f}) kernels {breakdown['kernel_us_per_token']:.0f} us "
                  f"in {breakdown['kernels_per_token']:.0f}: {classes}; matmul weights at "
                  f"{(achieved or 0) / 1e12:.2f} TB/s; gap {row['gap_us_per_token']:.0f} us; "
                  f"graphs compiled while profiled: {breakdown['graphs_compiled_while_profiled']}", flush=True)
            for k in breakdown["top_kernels"][:5]:
                print(f"    {k['us_per_token']:7.1f} us x{k['calls_per_token']:.0f} [{k['class']}] {k['name'][:90]}")
        results["models"][name] = {"roof_bytes_per_token": roof_bytes, "variants": rows}
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
        atomic_write_text(args.output, json.dumps(results, indent=1))
    return 0


def _compiled_graphs() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


if __name__ == "__main__":
    sys.exit(main())
