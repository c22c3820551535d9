"""`roofline analyze`: the per-op roofline of a built-in workload or of a user's `file.py:factory`."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from roofline.cli.common import (add_ceilings_option, add_findings_option, add_output_option, add_workload_options,
                                 non_negative_int, normalize_dtype, positive_int, print_report_summary, run_ceilings,
                                 step_count, step_count_or_zero)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="per-op FLOPs, bytes, device time and bound of a model",
        description="Count every op once, time it under torch.profiler in a separate pass, join the two, and place "
                    "each op on the device's roofline. Writes DIR/report.json, roofline.png, report.html, trace.json.gz.",
    )
    p.add_argument("target", nargs="?",
                   help="path/to/file.py:factory, where factory() returns (model, inputs) or (model, args, kwargs)")
    p.add_argument("--model", help="a built-in workload: matmul, layernorm, llama-tiny, llama-1b, resnet50, bert-base, ...")
    add_workload_options(p, factory=True)
    add_output_option(p)
    add_ceilings_option(p)
    p.add_argument("--iters", type=step_count, default=5, help="profiled steps to take the median over (default 5)")
    p.add_argument("--warmup", type=step_count_or_zero, default=2, help="warm-up steps before timing (default 2)")
    p.add_argument("--top", type=non_negative_int, default=15, help="ops to print (default 15)")
    add_findings_option(p)
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument("--ncu", action="store_true",
                   help="also run one step under Nsight Compute (NVIDIA GPUs; ncu on PATH or in /opt/nvidia/"
                        "nsight-compute): measured DRAM/L2 bytes per op beside the modelled minimum, the memory-access "
                        "view, the hierarchical roofline")
    p.add_argument("--ncu-metrics", default=None, metavar="SET",
                   help="with --ncu: dram, memory or full (default full), or a comma-separated list of ncu metrics")
    p.add_argument("--ncu-max-kernels", type=positive_int, default=None, metavar="N",
                   help="with --ncu: profile at most N kernels of the step (ncu --launch-count)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from roofline.analyze.live import analyze_model
    from roofline.cli.targets import load_target, user_code
    from roofline.device import resolve_device
    from roofline.doctor import diagnose
    from roofline.models.workloads import recorded_sizes
    from roofline.render.outputs import TextFileRenderer, report_renderers, write_outputs

    ncu_metrics = _ncu_preflight(args)
    device = resolve_device(args.device)
    if ncu_metrics and device.type != "cuda":
        from roofline.errors import RooflineError

        raise RooflineError(f"--ncu needs an NVIDIA GPU: the run is on {device} (pass --device cuda on a machine with one)")
    workload = load_target(args.target, args.model, batch=args.batch, seq=args.seq,
                           dtype=args.dtype and normalize_dtype(args.dtype), device=str(device),
                           backward=args.backward)
    ceilings = run_ceilings(device, args.ceilings)
    err = Console(stderr=True)
    with err.status("profiling") as status:
        with tempfile.TemporaryDirectory(prefix="roofline-") as tmp:
            raw = Path(tmp) / "trace.json"
            with user_code(f"{workload.name}'s step"):
                report = analyze_model(
                    workload.model, workload.inputs, device=device, ceilings=ceilings, backward=args.backward,
                    loss_fn=workload.loss_fn, warmup=args.warmup, iters=args.iters, workload=workload.name,
                    trace_path=raw, progress=status.update,
                )
            report.extra["workload_description"] = workload.description
            report.extra.update(recorded_sizes(workload))
            ncu_csv = None
            if ncu_metrics:
                status.update("one step under Nsight Compute (each kernel replayed per metric pass)")
                ncu_csv = _ncu_join(report, args, device, ncu_metrics)
            report.findings = diagnose(report)
            status.update("writing report.json, roofline.png, report.html, trace.json.gz")
            renderers = report_renderers(raw_trace=raw, html=not args.no_html)
            if ncu_csv is not None:
                renderers.append(TextFileRenderer("ncu.csv", ncu_csv))
            written, _ = write_outputs(report, args.output, renderers)
    print_report_summary(report, args, written, [])
    return 0


def _ncu_preflight(args: argparse.Namespace) -> list[str] | None:
    """The metrics --ncu will collect, after checking ncu is there (before any work); None without --ncu."""
    from roofline.errors import RooflineError

    if not args.ncu:
        if args.ncu_metrics or args.ncu_max_kernels:
            raise RooflineError("--ncu-metrics and --ncu-max-kernels need --ncu")
        return None
    from roofline.capture.ncu_metrics import DEFAULT_SET, metrics_for
    from roofline.capture.ncu_run import find_ncu

    metrics = metrics_for(args.ncu_metrics or DEFAULT_SET)
    find_ncu()
    return metrics


def _ncu_join(report, args: argparse.Namespace, device, metrics: list[str]) -> str:
    """Profile one step of the same workload under ncu, join its kernels to the report's ops; ncu's CSV text."""
    from roofline.analyze.ncu_join import join_ncu
    from roofline.capture.ncu_csv import parse_ncu_csv
    from roofline.capture.ncu_metrics import METRIC_SETS
    from roofline.capture.ncu_run import profile_step

    spec = {"target": args.target, "model": args.model, "batch": args.batch, "seq": args.seq,
            "dtype": args.dtype and normalize_dtype(args.dtype), "device": str(device), "backward": args.backward,
            "warmup": max(1, args.warmup)}
    run = profile_step(spec, metrics, max_kernels=args.ncu_max_kernels, fallback=METRIC_SETS["dram"])
    summary = join_ncu(report, parse_ncu_csv(run.csv_text, "ncu's output"), source="roofline analyze --ncu",
                       metrics=run.metrics)
    summary.notes.extend(run.notes)
    summary.method += "; ncu " + " ".join(run.command[1:run.command.index("--csv") + 1])
    return run.csv_text
