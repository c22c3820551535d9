"""`roofline analyze`: the per-op roofline of a built-in workload or of a user's `file.py:factory`."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from roofline.cli.common import (
    add_ceilings_option,
    add_findings_option,
    add_output_option,
    add_workload_options,
    non_negative_int,
    normalize_dtype,
    positive_int,
    run_ceilings,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "analyze",
        help="per-op FLOPs, bytes, device time and bound of a model",
        description="Count every op once, time it under torch.profiler in a separate pass, join the two, and place "
                    "each op on the device's roofline. Writes DIR/report.json, roofline.png, report.html, trace.json.gz.",
    )
    p.add_argument("target", nargs="?", help="path/to/file.py:factory, where factory() returns (model, inputs)")
    p.add_argument("--model", help="a built-in workload: matmul, layernorm, llama-tiny, llama-1b, resnet50, bert-base, ...")
    add_workload_options(p)
    add_output_option(p)
    add_ceilings_option(p)
    p.add_argument("--iters", type=positive_int, default=5, help="profiled steps to take the median over (default 5)")
    p.add_argument("--warmup", type=non_negative_int, default=2, help="warm-up steps before timing (default 2)")
    p.add_argument("--top", type=non_negative_int, default=15, help="ops to print (default 15)")
    add_findings_option(p)
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from roofline.analyze.live import analyze_model
    from roofline.cli.targets import load_target, user_code
    from roofline.device import resolve_device
    from roofline.doctor import diagnose
    from roofline.render.console import ConsoleRenderer, fit
    from roofline.render.findings import FindingsRenderer
    from roofline.render.outputs import report_renderers, write_outputs

    device = resolve_device(args.device)
    workload = load_target(args.target, args.model, batch=args.batch, seq=args.seq,
                           dtype=normalize_dtype(args.dtype), device=str(device), backward=args.backward)
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
            report.findings = diagnose(report)
            status.update("writing report.json, roofline.png, report.html, trace.json.gz")
            written, _ = write_outputs(report, args.output, report_renderers(raw_trace=raw, html=not args.no_html))
    sys.stdout.write(ConsoleRenderer(args.top).render(report))
    sys.stdout.write(FindingsRenderer(args.findings).render(report))
    print(fit("wrote " + ", ".join(str(p) for p in written)))
    return 0
