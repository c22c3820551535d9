"""On the GPU: the built-in workloads and a ViT-B/16 through `analyze`, checking that no op is above its roof and
that no time is unmodelled (issue 15). Writes one summary JSON; exits 1 when a check fails (the JSON is written
either way).

    PYTHONPATH=src python3 benchmarks/issue15_roofs.py OUT.json [--only NAME] [--ceilings FILE]

Each case records: ops, unmodelled time share, ops above their own roof (name, dtype, roof judged against, % of
that roof, kernels), the ops judged against the cache roof (an op whose data fits in the last-level cache and that
beats the DRAM roof, analyze/roofline.py), time by bound, and the short ops classified memory/compute because they
ran on their roof. "ok" is strict: the ceilings have a measured cache roof, and no op in any case is above its own
roof (DRAM or cache) by more than the 2% the ceilings' own measurement noise allows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

import torch

from roofline.analyze.live import analyze_model
from roofline.analyze.roofline import ROOF_FACTOR, footprint_bytes, roofline_time_s
from roofline.device import get_ceilings, load_ceilings
from roofline.io import atomic_write_text
from roofline.models import get_workload

# name, workload, dtype, batch, seq, backward
CASES = [
    ("matmul_bf16", "matmul", "bf16", None, 8192, False),
    ("matmul_fp32", "matmul", "fp32", None, 4096, False),
    ("layernorm_fp16", "layernorm", "fp16", None, None, False),
    ("llama_tiny_fp16", "llama-tiny", "fp16", 4, 512, False),
    ("llama_tiny_fp16_train", "llama-tiny", "fp16", 2, 256, True),
    ("resnet50_fp32", "resnet50", "fp32", 32, None, False),
    ("resnet50_fp16", "resnet50", "fp16", 32, None, False),
    ("bert_base_fp32", "bert-base", "fp32", 16, 128, False),
    ("bert_base_fp16", "bert-base", "fp16", 16, 128, False),
]
ABOVE_TOLERANCE = 1.02  # a 2% overshoot is the ceilings' own measurement noise


def _torchvision(name: str, device: str, dtype: torch.dtype, batch: int):
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.get_model(name, weights=None).to(device, dtype).eval()
    return model, (torch.randn(batch, 3, 224, 224, device=device, dtype=dtype),), False, None


def _row(op) -> dict:
    return {"name": op.name, "dtype": op.dtype, "roof": op.roof, "efficiency": op.efficiency, "time_s": op.time_s,
            "flops": op.flops, "bytes": op.bytes, "footprint_bytes": footprint_bytes(op),
            "achieved_bytes_per_s": op.achieved_bytes_per_s, "shapes": op.input_shapes[:3], "kernels": op.kernels[:1]}


def summarize(name: str, report) -> dict:
    ceilings = report.ceilings
    above = [op for op in report.ops if op.modeled and op.roof != "cache-unknown" and op.efficiency > ABOVE_TOLERANCE]
    from_cache = [op for op in report.ops if op.roof != "dram"]
    on_roof_short = [op for op in report.ops if op.bound in ("memory", "compute")
                     and op.time_s < 1.5 * ceilings.launch_overhead_s]
    total = report.summary.total_time_s or 1.0
    return {
        "name": name,
        "ops": len(report.ops),
        "total_time_s": report.summary.total_time_s,
        "unmodeled_time_share": report.summary.unmodeled_time_share,
        "unmodeled_ops": sorted({op.name for op in report.ops if not op.modeled}),
        "time_by_bound_share": {k: v / total for k, v in report.summary.time_by_bound_s.items()},
        "ops_above_roof": len(above),
        "above_roof": [_row(op) for op in sorted(above, key=lambda o: -o.efficiency)[:20]],
        "ops_judged_against_cache": len(from_cache),
        "ops_cache_unknown": sum(op.roof == "cache-unknown" for op in report.ops),
        "judged_against_cache": [_row(op) for op in sorted(from_cache, key=lambda o: -o.achieved_bytes_per_s)[:20]],
        "max_efficiency_by_roof": {roof: max((op.efficiency for op in report.ops if op.modeled and op.roof == roof),
                                             default=None) for roof in ("dram", "cache")},
        "short_ops_on_roof": [{"name": op.name, "bound": op.bound, "time_s": op.time_s, "efficiency": op.efficiency,
                               "roofline_time_s": roofline_time_s(op, ceilings)} for op in on_roof_short[:10]],
        "tf32": report.extra.get("tf32"),
        "roof_factor": ROOF_FACTOR,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--only", default="")
    parser.add_argument("--device", default="cuda", help="cuda (the check); cpu only to smoke-test this script")
    parser.add_argument("--batch", type=int, default=32, help="ViT-B/16 and MobileNetV3 batch (default 32)")
    parser.add_argument("--ceilings", default="", help="ceilings JSON (with the cache roof); default: this device's cache")
    args = parser.parse_args(argv)
    device = args.device
    ceilings = load_ceilings(args.ceilings) if args.ceilings else get_ceilings(device, quick=device == "cpu")
    results, failures = [], {}
    cases = [(c[0], lambda c=c: _workload(*c[1:], device=device)) for c in CASES]
    cases += [("vit_b_16_fp16", lambda: _torchvision("vit_b_16", device, torch.float16, args.batch)),
              ("mobilenet_v3_large_fp32", lambda: _torchvision("mobilenet_v3_large", device, torch.float32, args.batch))]
    for name, build in cases:
        if args.only and args.only not in name:
            continue
        started = time.perf_counter()
        try:
            model, inputs, backward, loss_fn = build()
            report = analyze_model(model, inputs, device=device, ceilings=ceilings, backward=backward,
                                   loss_fn=loss_fn, iters=5, workload=name)
            results.append(summarize(name, report) | {"seconds": time.perf_counter() - started})
            r = results[-1]
            print(f"{name}: ops={r['ops']} unmodelled={r['unmodeled_time_share']:.4f} above_roof={r['ops_above_roof']} "
                  f"judged_against_cache={r['ops_judged_against_cache']}", flush=True)
        except Exception as exc:  # noqa: BLE001 - one case failing must not lose the others
            failures[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
        if device == "cuda":
            torch.cuda.empty_cache()
    cache_roof = ceilings.cache_bandwidth_bytes_per_s > 0 and ceilings.cache_bytes > 0
    ok = cache_roof and not failures and all(
        r["ops_above_roof"] == 0 and r["ops_cache_unknown"] == 0 and r["unmodeled_time_share"] == 0 for r in results)
    device_name = torch.cuda.get_device_name() if device == "cuda" else ceilings.device_name
    atomic_write_text(args.out, json.dumps({
        "ok": ok, "device": device_name, "torch": torch.__version__, "above_tolerance": ABOVE_TOLERANCE,
        "ceilings": {"memory_bandwidth_bytes_per_s": ceilings.memory_bandwidth_bytes_per_s,
                     "cache_bandwidth_bytes_per_s": ceilings.cache_bandwidth_bytes_per_s,
                     "cache_bytes": ceilings.cache_bytes, "source": ceilings.source, "method": ceilings.method},
        "cases": results, "failures": failures}, indent=1))
    print(f"ok={ok}: cache roof {ceilings.cache_bandwidth_bytes_per_s / 1e9:,.0f} GB/s over {ceilings.cache_bytes / 2**20:g} "
          f"MiB, DRAM {ceilings.memory_bandwidth_bytes_per_s / 1e9:,.0f} GB/s; "
          f"{sum(r['ops_above_roof'] for r in results)} op(s) above their roof, "
          f"{sum(r['ops_judged_against_cache'] for r in results)} judged against the cache roof", flush=True)
    return 0 if ok else 1


def _workload(workload: str, dtype: str, batch, seq, backward: bool, device: str):
    if device == "cpu":
        batch, seq = (None, 256) if workload == "matmul" else (None, None)
        dtype = "fp32"
    w = get_workload(workload, batch=batch, seq=seq, dtype=dtype, device=device, backward=backward)
    return w.model, w.inputs, backward, w.loss_fn


if __name__ == "__main__":
    sys.exit(main())
