"""`roofline merge RUN_DIR`: the ranks of a distributed run (RUN_DIR/rank{r}/) merged into one report."""

from __future__ import annotations

import argparse

from roofline.cli.common import (add_fanout_options, add_findings_option, fanout_jobs, non_negative_number, output_dir,
                                 print_merged_summary)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "merge",
        help="merge the per-rank reports of a distributed run (RUN_DIR/rank*/) into one report",
        description="Per-rank step time split into compute, communication and idle; the share of communication "
                    "hidden under compute; stragglers and the op that makes them slow; each collective's bus "
                    "bandwidth against the measured ceiling (`roofline ceilings --collectives`); doctor findings.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="directory holding rank0/, rank1/, ... (report.json + trace.json.gz)")
    p.add_argument("-o", "--output", type=output_dir, default=None, help="output directory (default: RUN_DIR)")
    p.add_argument("--ceilings", metavar="FILE",
                   help="collective ceilings JSON (`roofline ceilings --collectives --json`)")
    p.add_argument("--threshold", type=non_negative_number, default=None,
                   help="straggler threshold: busy time above the median rank's by this fraction (default 0.1)")
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument("--no-png", action="store_true", help="skip roofline.png")
    add_fanout_options(p)
    add_findings_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from roofline.distributed.merge import STRAGGLER_THRESHOLD, merge_run_dir, write_merged
    from roofline.doctor import diagnose

    threshold = STRAGGLER_THRESHOLD if args.threshold is None else args.threshold
    report = merge_run_dir(args.run_dir, ceilings_file=args.ceilings, threshold=threshold, jobs=fanout_jobs(args),
                           cluster=args.cluster)
    report.findings = diagnose(report)
    written = write_merged(report, args.output or args.run_dir, png=not args.no_png, html=not args.no_html)
    print_merged_summary(report, args.findings, written)
    return 0
