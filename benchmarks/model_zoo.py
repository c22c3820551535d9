"""Formula coverage over the model zoo (roofline.models.zoo), per model: op calls, the share without a formula (by
count, and by host time where the model runs on CPU), our FLOPs against torch's FlopCounterMode.

    PYTHONPATH=src python benchmarks/model_zoo.py benchmarks/results/model_zoo_cpu   # writes .json and .md

One thread, CPU (torchvision models on the meta device: shapes only). tests/count/test_model_zoo.py asserts the
same numbers; this script records them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import torch

from roofline.io import atomic_write_text
from roofline.models.zoo import Coverage, all_entries, coverage


def _row(result: Coverage) -> dict:
    row = dataclasses.asdict(result)
    row["unmodeled_op_share"] = result.unmodeled_op_share
    row["flops_vs_flop_counter"] = (result.flops_comparable / result.flop_counter_flops
                                    if result.flop_counter_flops else None)
    return row


def _pct(value: float | None) -> str:
    return "n/a (meta)" if value is None else f"{100 * value:.2f}%"


def _markdown(rows: list[dict], failures: dict[str, str], meta: dict) -> str:
    lines = [
        "# Formula coverage over the model zoo (CPU)",
        "",
        f"torch {meta['torch']}, torchvision {meta['torchvision']}, transformers {meta['transformers']}, one thread, "
        f"{meta['date']}. `PYTHONPATH=src python benchmarks/model_zoo.py benchmarks/results/model_zoo_cpu`.",
        "",
        "Unmodelled time: host time of op calls without a formula over all op calls' (each op timed around its "
        "dispatch, real CPU tensors); the meta-device rows (every torchvision classifier at 224px, 299 for "
        "inception_v3; the segmenters at 64px) count shapes only. 'ours / FCM': our FLOPs (causal attention and "
        "a grouped convolution's weight gradient counted as FlopCounterMode does) over FlopCounterMode's; FCM "
        "counts no FFT, RNN kernel, fused MHA, grouped matmul, torchvision.ops or quantized op.",
        "",
        "| model | family | device | ops | unmodelled ops | unmodelled time | our FLOPs | FlopCounterMode | ours / FCM |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["flop_counter_flops"] is None:
            reference, ratio = "failed", "FCM could not run it"
        else:
            reference = f"{r['flop_counter_flops']:.4g}"
            ratio = f"{r['flops_vs_flop_counter']:.3f}" if r["flops_vs_flop_counter"] else "FCM counts 0"
        lines.append(f"| {r['name']} | {r['family']} | {r['device']} | {r['ops']} | {r['unmodeled_ops']} | "
                     f"{_pct(r['unmodeled_time_share'])} | {r['flops']:.4g} | {reference} | {ratio} |")
    worst = max(rows, key=lambda r: r["unmodeled_op_share"], default=None)
    lines += ["", f"{len(rows)} models; unmodelled op calls in total: {sum(r['unmodeled_ops'] for r in rows)}"
              + (f" (worst: {worst['name']}, {_pct(worst['unmodeled_op_share'])})" if worst else "") + "."]
    below = [r["name"] for r in rows
             if r["flop_counter_flops"] is not None and r["flops_comparable"] < r["flop_counter_flops"]]
    lines.append(f"Models counting fewer FLOPs than FlopCounterMode: {', '.join(below) or 'none'}.")
    if failures:
        lines += ["", "Failed to run:"] + [f"- {name}: {error}" for name, error in failures.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="output path without extension (.json and .md are written)")
    parser.add_argument("--only", default="", help="run only models whose name contains this")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    import torchvision
    import transformers

    rows, failures = [], {}
    started = time.perf_counter()
    for entry in all_entries():
        if args.only and args.only not in entry.name:
            continue
        try:
            rows.append(_row(coverage(entry)))
        except Exception as exc:  # noqa: BLE001 - one model failing must not lose the others' numbers
            failures[entry.name] = f"{type(exc).__name__}: {exc}"[:300]
        print(f"{entry.name}: {'FAILED' if entry.name in failures else 'ok'}", file=sys.stderr, flush=True)
    meta = {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "transformers": transformers.__version__, "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d", time.gmtime()), "threads": 1,
            "wall_s": time.perf_counter() - started}
    out = Path(args.out)
    atomic_write_text(out.with_suffix(".json"), json.dumps({"meta": meta, "models": rows, "failures": failures},
                                                           indent=1))
    atomic_write_text(out.with_suffix(".md"), _markdown(rows, failures, meta))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
