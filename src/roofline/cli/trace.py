"""`roofline trace`: analyse torch.profiler / Kineto trace files a user already has, without the model."""

from __future__ import annotations

import argparse
import sys

from roofline import quickexit
from roofline.cli.common import (add_ceilings_option, add_fanout_options, add_findings_option, add_output_option,
                                 fanout_jobs, non_negative_int, print_report_summary, report_tables)
from roofline.gcpause import cyclic_gc_paused


WARMUP_DEFAULT = 1  # with --onnx: ORT profile runs left out as warm-up


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "trace",
        help="analyse existing torch.profiler trace files (.json / .json.gz)",
        description="Kernel -> op attribution, FLOPs and bytes from the recorded shapes, the roofline with the ceilings "
                    "of the GPU the trace names, idle time, syncs and the doctor's findings.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace file(s); several files of one job are ranks")
    add_ceilings_option(p)
    add_output_option(p)
    p.add_argument("--top", type=non_negative_int, default=15, help="ops to print (default 15)")
    add_findings_option(p)
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument("--ncu", metavar="FILE.csv",
                   help="Nsight Compute CSV of the same step (`ncu --csv --metrics ...`, .gz allowed): measured DRAM/L2 "
                        "bytes per op beside the modelled minimum, the memory-access view and the hierarchical roofline")
    p.add_argument("--partial", action="store_true",
                   help="report what was read from a trace that is cut short (refused otherwise)")
    p.add_argument("--onnx", metavar="MODEL.onnx", default=None,
                   help="PATH is an ONNX Runtime profile (any provider: CPU, CUDA, QNN on a Snapdragon) or a Qualcomm "
                        "AI Hub profile job's results (JSON), of this ONNX model: one op per node, FLOPs and bytes from "
                        "the model's shapes")
    p.add_argument("--device", metavar="NAME", default=None,
                   help="with --onnx: the device the profile ran on, for its datasheet roofs ('Snapdragon 8 Gen 3', "
                        "'Samsung Galaxy S24', 'H100 SXM')")
    p.add_argument("--inputs", metavar="SPEC", default=None,
                   help="with --onnx: the model's dynamic dimensions ('batch=1,seq=128' or 'x=1x3x224x224') when the "
                        "profile records no shapes (AI Hub)")
    p.add_argument("--warmup", type=non_negative_int, default=WARMUP_DEFAULT,
                   help="with --onnx and an ORT profile: runs at its start left out as warm-up (default 1)")
    add_fanout_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if quickexit.armed():  # this process ends with the command: keep what it frees for its own reuse
        from roofline.forked import reuse_freed_memory

        reuse_freed_memory()
    with cyclic_gc_paused(resume=not quickexit.armed()):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.forked import meanwhile
    from roofline.render.outputs import (html_parts_meanwhile, in_background, is_big, png_drawer_for, prepare,
                                         report_renderers, write_outputs)

    if args.onnx or args.device or args.inputs:
        return _run_onnx(args)
    if args.warmup != WARMUP_DEFAULT:
        from roofline.errors import RooflineError

        raise RooflineError("--warmup applies only with --onnx (an ONNX Runtime profile's warm-up runs); a torch "
                            "trace's steps are the ones its profiler recorded")
    if len(args.paths) > 1 and args.ncu:
        from roofline.errors import RooflineError

        raise RooflineError("--ncu joins one trace file's step; pass one trace, not several ranks")
    tables = None
    if len(args.paths) > 1:
        from roofline.distributed.merge import merge_trace_files

        report = merge_trace_files(args.paths, ceilings_file=args.ceilings, partial=args.partial,
                                   jobs=fanout_jobs(args), cluster=args.cluster)
        report.findings = _diagnose(report)
        written, problems = write_outputs(report, args.output, report_renderers(png=False, html=not args.no_html))
    else:
        if args.cluster:
            print(f"roofline: note: --cluster {args.cluster} not used: it spreads the ranks of several traces over "
                  "the cluster; one trace is read here", file=sys.stderr)
        # report.html's op table is started as soon as the ops are placed and summed up (a forked child on a big
        # report, which first sends the PNG's drawer its chart, while this process builds the rest of the report);
        # with --ncu the ops change after (their measured traffic).
        html_parts = []
        drawer = png_drawer_for(args.paths[0])
        try:
            report = analyze_trace_file(args.paths[0], args.ceilings, partial=args.partial,
                                        placed=None if args.no_html or args.ncu
                                        else lambda r: html_parts.append(html_parts_meanwhile(r, drawer)),
                                        trace_read=None if drawer is None else drawer.go)
            if args.ncu:
                from roofline.analyze.ncu_join import join_ncu
                from roofline.capture.ncu_csv import read_ncu_csv

                join_ncu(report, read_ncu_csv(args.ncu), source=args.ncu)
        except BaseException:
            if drawer is not None:
                drawer.stop()
            raise
        raw = None if report.extra.get("partial") else args.paths[0]
        # A big report's PNG is drawn (by the drawer started above, or a forked child) and its doctor run by a
        # forked child meanwhile (the PNG shows no findings), while this process builds what of report.html needs
        # no findings and writes report.json up to them.
        renderers = in_background(report_renderers(raw_trace=raw, html=not args.no_html), report, drawer)
        findings = meanwhile(_diagnose, report, fork=is_big(report))
        prepare(renderers, report, html_parts[0] if html_parts else None)
        tables = report_tables(report, args)  # needs no findings: rendered while the doctor runs
        written, problems = write_outputs(report, args.output, renderers, findings=findings.result)
        if raw is None:
            problems.append("trace.json.gz not written: the trace is cut short (open the original in Perfetto)")
    print_report_summary(report, args, written, problems, tables)
    quickexit.keep_until_exit(report)
    return 0


def _diagnose(report):
    """The doctor, imported where it runs: for a big report that is the forked child, so the main process (the
    command's critical path) never imports its rules (~0.03 s)."""
    from roofline.doctor import diagnose

    return diagnose(report)


def _run_onnx(args: argparse.Namespace) -> int:
    """A profile of an ONNX model recorded elsewhere (ORT's or AI Hub's), judged against the roofs given."""
    from roofline.analyze.onnx_session import analyze_onnx_profile
    from roofline.doctor import diagnose
    from roofline.errors import RooflineError
    from roofline.render.outputs import write_outputs

    if not args.onnx:
        raise RooflineError("--device and --inputs go with --onnx MODEL.onnx (an ONNX profile); a torch trace "
                            "names its own device")
    if len(args.paths) > 1 or args.ncu or args.partial:
        raise RooflineError("--onnx reads one profile; --ncu and --partial are for torch traces")
    report = analyze_onnx_profile(args.paths[0], args.onnx, ceilings_file=args.ceilings, device=args.device,
                                  inputs=args.inputs, warmup=args.warmup)
    report.findings = diagnose(report)
    written, problems = write_outputs(report, args.output, html=not args.no_html)
    print_report_summary(report, args, written, problems)
    return 0
