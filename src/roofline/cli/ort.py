"""`roofline ort`: an ONNX model run under ONNX Runtime with its profiler on, one roofline op per ONNX node."""

from __future__ import annotations

import argparse

from roofline.cli.common import (add_ceilings_option, add_findings_option, add_output_option, non_negative_int,
                                 positive_int, print_report_summary, progress_reporter, step_count,
                                 step_count_or_zero)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ort",
        help="per-node FLOPs, bytes, time and bound of an ONNX model under ONNX Runtime",
        description="Run MODEL.onnx under ONNX Runtime with profiling on (warm-up runs, then timed runs), count each "
                    "node's FLOPs and bytes with the aten formulas, time it from the profile (median over the timed "
                    "runs) and place it on the roofline of the unit it ran on. Writes DIR/report.json, roofline.png, "
                    "report.html.",
    )
    p.add_argument("model", metavar="MODEL.onnx", help="the ONNX model")
    p.add_argument("--provider", choices=("cpu", "cuda"), default="cpu", help="execution provider (default cpu)")
    p.add_argument("--inputs", metavar="SPEC", default=None,
                   help="input shapes or dynamic dimensions: 'x=1x3x224x224,ids=1x128' or 'batch=1,seq=128' "
                        "(default: the model's static shapes, unnamed dynamic dimensions 1)")
    p.add_argument("--opt-level", choices=("disable", "basic", "extended", "all"), default="all",
                   help="ONNX Runtime graph optimisation level (default all, what deployments run)")
    p.add_argument("--iters", type=step_count, default=10, help="timed runs to take each node's median over (default 10)")
    p.add_argument("--warmup", type=step_count_or_zero, default=3, help="warm-up runs left out of the timing (default 3)")
    p.add_argument("--threads", type=positive_int, default=None, help="intra-op threads (default: ORT's choice)")
    add_ceilings_option(p)
    add_output_option(p)
    p.add_argument("--top", type=non_negative_int, default=15, help="ops to print (default 15)")
    add_findings_option(p)
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.analyze.onnx_session import analyze_ort_model
    from roofline.doctor import diagnose
    from roofline.render.outputs import write_outputs

    with progress_reporter("onnxruntime") as progress:
        report = analyze_ort_model(args.model, provider=args.provider, inputs=args.inputs, warmup=args.warmup,
                                   iters=args.iters, opt_level=args.opt_level, ceilings_file=args.ceilings,
                                   threads=args.threads, progress=progress)
    report.findings = diagnose(report)
    written, problems = write_outputs(report, args.output, html=not args.no_html)
    print_report_summary(report, args, written, problems)
    return 0
