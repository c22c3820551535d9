"""Batch-1 decode against the memory roof, three ways side by side in one run (GPU only).

    PYTHONPATH=src python3 benchmarks/decode_roof.py --models llama-1b -o OUT.json

1. plain: the lab's compiled step, torch.compile(mode="reduce-overhead"), one Python call per token;
2. graphed: the same step compiled without cudagraphs, the loop captured as CUDA graphs of 16 steps;
3. tuned: graphed, plus stacked q/k/v and gate/up weights and coordinate-descent tuning (the lab's tuned figure).
Each is measured by roofline.lab.bench on the same fixed model and prompt, against the same run's measured
memory bandwidth (roofline ceilings); the tokens of 2 and 3 are compared with 1's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["llama-1b"])
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    import torch

    from roofline.device import get_ceilings
    from roofline.lab import bench
    from roofline.lab.agreement import compare_tokens
    from roofline.lab.generate import decode_one_token
    from roofline.lab.model import Fixes, configure, fused_projections
    from roofline.models.llama import CONFIGS, build_llama

    if not torch.cuda.is_available():
        print("decode_roof.py needs a CUDA GPU", file=sys.stderr)
        return 2
    device = torch.device("cuda")
    ceilings = get_ceilings(device)
    bandwidth = ceilings.memory_bandwidth_bytes_per_s
    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
               "date": time.strftime("%Y-%m-%d %H:%M:%S"), "bandwidth_bytes_per_s": bandwidth,
               "context": args.context, "steps": args.steps, "models": {}}
    for name in args.models:
        model = configure(build_llama(CONFIGS[name], dtype=torch.float16, device=device), Fixes.all())
        model.setup_caches(1, args.context + args.steps + 8)
        bytes_per_token = bench.decode_bytes(model, 1, args.context + args.steps // 2)
        roof = bandwidth / bytes_per_token
        rows = {}

        def record(label: str, seconds: float, tokens, reference=None) -> None:
            rate = args.steps / seconds
            same = None
            if reference is not None:
                agreement = compare_tokens(label, reference.tolist(), tokens.tolist())
                same = agreement.compared_tokens if agreement.identical else agreement.first_divergence
            rows[label] = {"tokens_per_s": rate, "ms_per_token": 1e3 / rate, "share_of_memory_roof": rate / roof,
                           "same_tokens_as_plain": same}
            print(f"{name:10s} {label:9s} {rate:9.1f} tok/s {1e3 / rate:7.3f} ms/token "
                  f"{100 * rate / roof:5.1f}% of roof  same tokens: {same}", flush=True)

        torch._dynamo.reset()
        began = time.perf_counter()
        plain = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
        seconds, reference = bench._decode_time(model, plain, 1, args.context, args.steps, 3, reps=3)
        record("plain", seconds, reference)

        def graphed_step(model, token, input_pos, pad):
            return decode_one_token(model, token, input_pos, pad)

        graphed = torch.compile(graphed_step, fullgraph=True, dynamic=False)
        seconds, tokens = bench._graphed_decode_time(model, graphed, args.context, args.steps, 2, reps=3)
        record("graphed", seconds, tokens, reference)

        with fused_projections(model):
            seconds, tokens = bench._graphed_decode_time(model, bench.compile_tuned_decode(device), args.context,
                                                         args.steps, 2, reps=3)
        record("tuned", seconds, tokens, reference)
        results["models"][name] = {"bytes_per_token": bytes_per_token, "roof_tokens_per_s": roof, "variants": rows,
                                   "seconds": time.perf_counter() - began}
        del model
        torch.cuda.empty_cache()
        with open(args.output, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
