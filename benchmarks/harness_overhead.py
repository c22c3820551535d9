"""The profiling harness against plain torch.profiler and an unprofiled run, side by side in one process.

For each workload (ResNet-50, BERT-base, the bad-syncs model): the step time of an unprofiled run (before and
after the profiled runs, to see drift), the harness's true step time (must be within 3% of the unprofiled run),
the harness's profiled step time and plain torch.profiler's (same activities and options), the same unprofiled
steps again after profiling (CUPTI leaves launch callbacks on once a profiler has run), the memory peak
against torch.cuda.max_memory_allocated() over the same window (within 5%), and the syncs found.

    python benchmarks/harness_overhead.py results.json                  # CUDA, the sizes of ANCHORS.md
    python benchmarks/harness_overhead.py results.json --device cpu --small
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import msgspec
import torch

from roofline.api import ProfilingContext
from roofline.device.ceilings import ceilings_for_device_name, get_ceilings, load_ceilings
from roofline.io import atomic_write_text
from roofline.models import get_workload

SIZES = {  # name -> (batch, seq) on CUDA (ANCHORS.md) and small ones for a CPU check
    "resnet50": ((32, None), (2, None)),
    "bert-base": ((16, 128), (2, 32)),
    "bad-syncs": ((256, None), (8, None)),  # 256: the H200 fixture's size (1 MiB activations)
}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step: Callable[[], Any], device: torch.device, n: int) -> list[float]:
    """Wall time per step, the device synchronised at each boundary (the harness's method)."""
    samples = []
    for _ in range(n):
        _sync(device)
        start = time.perf_counter()
        step()
        _sync(device)
        samples.append(time.perf_counter() - start)
    return samples


def plain_profiler_steps(step: Callable[[], Any], device: torch.device, warmup: int, active: int) -> list[float]:
    """Plain torch.profiler with the harness's options; the active steps timed the same way."""
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    samples = []
    with profile(activities=activities, schedule=schedule(wait=0, warmup=warmup, active=active, repeat=1),
                 record_shapes=True, profile_memory=True, with_stack=True) as prof:
        for i in range(warmup + active):
            _sync(device)
            start = time.perf_counter()
            step()
            _sync(device)
            if i >= warmup:
                samples.append(time.perf_counter() - start)
            prof.step()
    return samples


def bench_workload(name: str, device: torch.device, small: bool, steps: int, ceilings: Any,
                   n_repeats: int = 3) -> dict[str, Any]:
    batch, seq = SIZES[name][1 if small else 0]
    workload = get_workload(name, batch=batch, seq=seq, dtype="float32", device=device)
    model, inputs = workload.model, workload.inputs

    def step() -> None:
        with torch.no_grad():
            model(*inputs)

    for _ in range(10):
        step()
    repeats = []
    for _ in range(n_repeats):
        before = time_steps(step, device, steps)
        context = ProfilingContext(wait=1, timed=steps, warmup=1, active=steps, device=device, ceilings=ceilings,
                                   workload=name, whole_block=False)
        with context:
            for _ in range(context.total_steps):
                step()
                context.step()
        after = time_steps(step, device, steps)
        start = time.perf_counter()
        report = context.report()
        analysis_s = time.perf_counter() - start
        bracket = statistics.median(before + after)
        repeats.append({"unprofiled_median_s": bracket, "true_median_s": report.step_time.median_s,
                        "true_vs_unprofiled": report.step_time.median_s / bracket - 1,
                        "profiled_median_s": report.profiled_step_time.median_s,
                        "before": before, "after": after, "true_samples": report.step_time.samples_s})
    baseline_before = [x for r in repeats for x in r["before"]]
    baseline_mid = [x for r in repeats for x in r["after"]]
    plain = plain_profiler_steps(step, device, warmup=1, active=steps)
    baseline_after = time_steps(step, device, steps)

    unprofiled = statistics.median(baseline_before + baseline_mid)
    true_s = statistics.median(r["true_median_s"] for r in repeats)
    true_ratio = statistics.median(r["true_vs_unprofiled"] for r in repeats)
    harness_profiled = statistics.median(r["profiled_median_s"] for r in repeats)
    plain_s = statistics.median(plain)
    memory = report.memory
    return {
        "workload": name,
        "batch": batch,
        "seq": seq,
        "unprofiled_step_s": {"median": unprofiled,
                              "note": "each repeat brackets the harness's run with unprofiled runs (before and "
                                      "after) to cancel drift; true_vs_unprofiled is the median over repeats"},
        "unprofiled_after_profiling_step_s": {"median": statistics.median(baseline_after), "samples": baseline_after,
                                              "note": "same steps after plain torch.profiler has run too"},
        "harness_true_step_s": true_s,
        "true_vs_unprofiled": true_ratio,
        "true_within_3pct": abs(true_ratio) <= 0.03,
        "repeats": repeats,
        "harness_profiled_step_s": harness_profiled,
        "harness_overhead": (harness_profiled / unprofiled - 1) if harness_profiled else None,
        "plain_profiler_step_s": plain_s,
        "plain_profiler_overhead": plain_s / unprofiled - 1,
        "harness_analysis_s": analysis_s,
        "memory_peak_bytes": memory.peak_allocated_bytes,
        "memory_counter": memory.counter,
        "reference_peak_bytes": memory.reference_peak_bytes,
        "reference_counter": memory.reference_counter,
        "memory_within_5pct": (abs(memory.peak_allocated_bytes / memory.reference_peak_bytes - 1) <= 0.05
                               if memory.reference_peak_bytes else None),
        "syncs": [{"kind": s.kind, "location": s.location, "count": s.count, "per_step": s.per_step,
                   "stall_s": s.stall_s} for s in report.syncs],
        "syncs_from_kineto": msgspec.to_builtins(report.profile.syncs_from_trace) if report.profile else [],
        "syncs_per_step": sum(s.per_step or 0 for s in report.syncs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="where to write the JSON results")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--small", action="store_true", help="small sizes (for a CPU check)")
    parser.add_argument("--steps", type=int, default=10, help="timed and profiled steps per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="harness runs, each bracketed by unprofiled runs")
    parser.add_argument("--workloads", default=",".join(SIZES), help="comma-separated subset")
    parser.add_argument("--ceilings", help="ceilings JSON instead of the cache")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    ceilings = load_ceilings(args.ceilings) if args.ceilings else None
    if ceilings is None and device.type == "cuda":
        ceilings = ceilings_for_device_name(torch.cuda.get_device_name(device))
    if ceilings is None:
        ceilings = get_ceilings(device, quick=True)
    if device.type == "cpu":
        torch.set_num_threads(max(torch.get_num_threads(), 1))
    results = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "steps": args.steps,
        "method": "wall time per step, device synchronised at each boundary; medians; one process, side by side",
        "workloads": [],
    }
    for name in args.workloads.split(","):
        print(f"{name} ...", file=sys.stderr, flush=True)
        results["workloads"].append(bench_workload(name, device, args.small, args.steps, ceilings, args.repeats))
        atomic_write_text(Path(args.output), json.dumps(results, indent=1) + "\n")
    for w in results["workloads"]:
        print(f"{w['workload']:>10}: unprofiled {w['unprofiled_step_s']['median'] * 1e3:.2f} ms, "
              f"true {(w['harness_true_step_s'] or 0) * 1e3:.2f} ms ({(w['true_vs_unprofiled'] or 0):+.1%}), "
              f"after profiling {w['unprofiled_after_profiling_step_s']['median'] * 1e3:.2f} ms, "
              f"harness profiled {w['harness_overhead'] or 0:+.0%} vs plain torch.profiler "
              f"{w['plain_profiler_overhead']:+.0%}, memory {w['memory_peak_bytes']} vs ref {w['reference_peak_bytes']}, "
              f"syncs/step {w['syncs_per_step']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
