"""The case study's GPU set in one command: `roofline lab` for llama-tiny and llama-1b, the fixed decode of llama-8b.

    PYTHONPATH=src python3 benchmarks/lab_gpu.py --data ../shared/data/wikitext-2 -o benchmarks/results/lab

Each model's outputs land in OUT/<model>/ (lab.md, lab.json, speedup.png, doctor/); OUT/summary.json and a short
table printed last collect the headline figures. --quick runs the small plan of each (a smoke test).

    PYTHONPATH=src python3 benchmarks/lab_gpu.py --views --models llama-tiny --budget 150 -o OUT

--views measures the three views of each fix (cumulative, isolated, leave-one-out; lab/ablation.py) alone, without
the peak decode and the batch sweep, within --budget seconds of configurations per model (runs that would not fit
are not started and lab.md says so); each configuration is checkpointed to OUT/<model>/ as it finishes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

MODELS = ("llama-tiny", "llama-1b", "llama-8b")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--data", default=None)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--views", action="store_true", help="the three views only (no peak decode, no sweep)")
    parser.add_argument("--budget", type=float, default=None, help="seconds of configurations per model (--views)")
    args = parser.parse_args()

    import torch

    from roofline.lab.render import write_lab
    from roofline.lab.runner import LabOptions, make_plan, run_lab

    if not torch.cuda.is_available():
        print("lab_gpu.py needs a CUDA GPU", file=sys.stderr)
        return 2
    out = Path(args.output)
    began = time.perf_counter()
    summary = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "command": " ".join(sys.argv),
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "models": {}}
    for model in args.models:
        def progress(message: str, model: str = model) -> None:
            print(f"[{time.perf_counter() - began:7.1f}s] {model}: {message}", file=sys.stderr, flush=True)

        plan = None
        if args.views:
            plan = dataclasses.replace(make_plan(model, torch.device("cuda"), args.quick), peak=False, sweep=False,
                                       budget_s=args.budget)
        result = run_lab(LabOptions(model=model, device="cuda", quick=args.quick, data=args.data, plan=plan),
                         progress, checkpoint=lambda partial, model=model: write_lab(partial, out / model))
        write_lab(result, out / model)
        stages = result.stages
        tuned = result.peak is not None and result.peak.tuned is not None and not result.peak.tuned.error
        summary["models"][model] = {
            "stages": [(s.title, round(s.tokens_per_s, 1), round(s.speedup_cumulative, 2)) for s in stages],
            "cumulative_speedup": stages[-1].speedup_cumulative if stages else None,
            "compiled_over_fixed": (stages[-1].tokens_per_s / stages[-2].tokens_per_s
                                    if len(stages) > 1 and "compile" in stages[-1].title else None),
            "batch1_decode_tokens_per_s": result.peak.tokens_per_s if result.peak else None,
            "batch1_share_of_memory_roof": result.peak.share_of_memory_roof if result.peak else None,
            "tuned_batch1_decode_tokens_per_s": result.peak.tuned.tokens_per_s if tuned else None,
            "tuned_batch1_share_of_memory_roof": result.peak.tuned.share_of_memory_roof if tuned else None,
            "tuned_error": result.peak.tuned.error if result.peak and result.peak.tuned else None,
            "prefill_ms": result.peak.prefill_ms if result.peak else None,
            "crossing_batch": result.sweep.crossing_batch if result.sweep else None,
            "bandwidth_bytes_per_s": result.ceilings.memory_bandwidth_bytes_per_s,
            "tokens_identical": {a.stage: (a.identical, a.first_divergence) for a in result.agreement},
            "doctor_naive": sorted({f.rule for f in result.naive_report.findings}) if result.naive_report else None,
            "doctor_fixed": sorted({f.rule for f in result.fixed_report.findings}) if result.fixed_report else None,
            "views": [(r.view, r.fix, None if r.speedup is None else round(r.speedup, 3),
                       None if r.low is None else round(r.low, 3), None if r.high is None else round(r.high, 3),
                       r.verdict) for r in result.ablation.rows] if result.ablation else None,
            "cut": result.ablation.cut if result.ablation else None,
            "fast_rows": [{"title": r.title, "tokens_per_s": r.tokens_per_s, "share_of_memory_roof": r.share_of_memory_roof,
                           "same_tokens": r.same_tokens, "compared_tokens": r.compared_tokens, "skipped": r.skipped}
                          for r in (result.peak.fast if result.peak else [])],
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")

    print(f"\n{'model':12s} {'cumulative':>10s} {'compiled/fixed':>15s} {'b1 tok/s':>9s} {'% roof':>7s} "
          f"{'tuned tok/s':>11s} {'% roof':>7s}")
    for model, s in summary["models"].items():
        share = s["batch1_share_of_memory_roof"]
        print(f"{model:12s} {s['cumulative_speedup'] or 0:10.2f} {s['compiled_over_fixed'] or 0:15.2f} "
              f"{s['batch1_decode_tokens_per_s'] or 0:9.1f} {100 * (share or 0):6.1f}% "
              f"{s['tuned_batch1_decode_tokens_per_s'] or 0:11.1f} {100 * (s['tuned_batch1_share_of_memory_roof'] or 0):6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
