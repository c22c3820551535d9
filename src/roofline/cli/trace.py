"""`roofline trace`: analyse torch.profiler / Kineto trace files a user already has, without the model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from roofline.cli.common import add_output_option, non_negative_int
from roofline.errors import RooflineError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "trace",
        help="analyse existing torch.profiler trace files (.json / .json.gz)",
        description="Kernel -> op attribution, FLOPs and bytes from the recorded shapes, the roofline with the ceilings "
                    "of the GPU the trace names, idle time, syncs and the doctor's findings.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file(s); several files of one job are ranks")
    p.add_argument("--ceilings", metavar="FILE", help="ceilings JSON (from `roofline ceilings --json`) to use")
    add_output_option(p)
    p.add_argument("--top", type=non_negative_int, default=15, help="ops to print (default 15)")
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.set_defaults(func=run)


def ceilings_for_trace(trace, ceilings_file: str | None):
    from roofline.device.cache import ceilings_for_device_name, load_ceilings

    if ceilings_file:
        return load_ceilings(ceilings_file)
    if trace.device_name:
        found = ceilings_for_device_name(trace.device_name)
        if found is None:
            raise RooflineError(
                f"no ceilings known for {trace.device_name!r}: run `roofline ceilings --json FILE` on that machine "
                "and pass --ceilings FILE"
            )
        return found
    from roofline.device.ceilings import get_ceilings

    ceilings = get_ceilings("cpu")
    ceilings.method = "the trace names no GPU: ceilings of this machine's CPU. " + ceilings.method
    return ceilings


def analyze_trace_file(path: str | Path, ceilings_file: str | None = None, *, diagnose: bool = True):
    """The Report of one trace file; ``diagnose=False`` leaves the doctor to the caller."""
    from roofline.analyze.pipeline import report_from_trace, run_doctor
    from roofline.capture.kineto import load_trace

    trace = load_trace(path)
    ceilings = ceilings_for_trace(trace, ceilings_file)
    report = report_from_trace(trace, ceilings, kind="trace", workload=Path(path).name, diagnose=False)
    del trace  # the doctor reads only the Report: free the parsed trace first (big traces)
    if diagnose:
        run_doctor(report)
    return report


def run(args: argparse.Namespace) -> int:
    from roofline.render.console import render_report
    from roofline.render.findings import render_findings
    from roofline.render.outputs import write_outputs

    if len(args.paths) > 1:
        from roofline.distributed.merge import merge_trace_files

        report = merge_trace_files(args.paths, ceilings_file=args.ceilings)
        written, problems = write_outputs(report, args.output, png=False, html=not args.no_html)
    else:
        report = analyze_trace_file(args.paths[0], args.ceilings)
        written, problems = write_outputs(report, args.output, raw_trace=args.paths[0], html=not args.no_html)
    sys.stdout.write(render_report(report, top=args.top))
    for problem in problems:
        print(f"note: {problem}")
    sys.stdout.write(render_findings(report.findings, total_time_s=report.summary.reference_time_s, top=10))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
