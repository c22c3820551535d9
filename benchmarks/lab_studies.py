"""The case study's extension studies on one GPU in one command: FP8 and attention for llama-8b and llama-1b.

    PYTHONPATH=src python3 benchmarks/lab_studies.py --data .data/wikitext-2 \
        --ceilings benchmarks/results/ceilings_h200.json -o OUT

Each study's files land in OUT/<study>/<model>/ (fp8.md/json/png, attention.md/json/png); OUT/studies.json (date,
GPU, torch version, command, each run's status, seconds and headline) and a short table printed last collect them.
Runs go most wanted first (fp8 llama-8b, attention llama-8b, then llama-1b); one that fails is recorded and the
next runs; a run that would start after --budget seconds is skipped and recorded so. --device cpu --quick runs
the CPU quick forms (llama-tiny; a smoke test of the driver).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

RUNS = (("fp8", "llama-8b"), ("attention", "llama-8b"), ("fp8", "llama-1b"), ("attention", "llama-1b"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--data", default=None, help="WikiText-2 folder (test.txt, valid.txt)")
    parser.add_argument("--ceilings", default=None, help="a ceilings json (else measured once and cached)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budget", type=float, default=420.0, help="no run starts after this many seconds")
    parser.add_argument("--runs", nargs="+", default=None, metavar="STUDY:MODEL",
                        help="a subset of the runs, e.g. fp8:llama-8b attention:llama-1b")
    args = parser.parse_args(argv)

    import torch

    from roofline.io import atomic_write_text
    from roofline.lab.studies import StudyOptions, run_study

    if args.device == "cuda" and not torch.cuda.is_available():
        print("lab_studies.py: error: no CUDA GPU (use --device cpu --quick for the smoke test)", file=sys.stderr)
        return 2
    runs = [tuple(r.split(":", 1)) for r in args.runs] if args.runs else list(RUNS)
    if args.device == "cpu":
        runs = [(study, "llama-tiny") for study in dict.fromkeys(s for s, _ in runs)]
    out = Path(args.output)
    began = time.perf_counter()
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": " ".join(["python3", *sys.argv]),
               "gpu": torch.cuda.get_device_name() if args.device == "cuda" else "cpu", "torch": torch.__version__,
               "ceilings": args.ceilings or "measured", "runs": []}
    for study, model in runs:
        row = {"study": study, "model": model, "status": "ok", "seconds": 0.0, "headline": [], "table": ""}
        summary["runs"].append(row)
        start = time.perf_counter()
        if start - began > args.budget:
            row["status"] = f"skipped: {start - began:.0f} s of the {args.budget:.0f} s budget spent"
            continue

        def progress(message: str, tag: str = f"{study} {model}") -> None:
            print(f"[{time.perf_counter() - began:6.1f}s] {tag}: {message}", file=sys.stderr, flush=True)

        try:
            options = StudyOptions(model=model, device=args.device, quick=args.quick, data=args.data,
                                   ceilings=args.ceilings)
            result = run_study(study, options, out / study / model, progress)
            row["headline"], row["table"] = result.summary, result.table
        except Exception as exc:  # noqa: BLE001 - the next run still runs; the failure is recorded
            traceback.print_exc()
            row["status"] = f"failed: {type(exc).__name__}: {str(exc)[:300]}"
        finally:
            row["seconds"] = time.perf_counter() - start
            if args.device == "cuda":
                torch.cuda.empty_cache()
            atomic_write_text(out / "studies.json", json.dumps(summary, indent=1) + "\n")
    for row in summary["runs"]:
        print(f"\n## {row['study']} {row['model']}: {row['status']} ({row['seconds']:.0f} s)")
        for line in row["headline"]:
            print(line)
    print(f"\nlab_studies.py: {len(summary['runs'])} runs in {time.perf_counter() - began:.0f} s -> {out}")
    return 0 if all(r["status"] == "ok" for r in summary["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
