"""`roofline doctor`: ranked findings (what is slow, where, what it costs, the fix) for a model, a script, a saved
report or a torch.profiler trace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from roofline import quickexit
from roofline.cli.common import (
    add_ceilings_option,
    add_findings_option,
    add_workload_options,
    leave_script_threads,
    note_own_options_after_script,
    normalize_dtype,
    output_dir,
    refuse_workload_options,
    run_ceilings,
)
from roofline.errors import RooflineError
from roofline.gcpause import cyclic_gc_paused

SEVERITIES = ("info", "warning", "critical")
REPORT_SUFFIXES = (".json", ".json.gz", ".gz")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="ranked findings with estimated savings and a fix: for a model, a script, a report.json or a trace",
        description=(
            "Diagnose a built-in --model, a SCRIPT (run unchanged under the profiling harness, as `roofline "
            "profile`), a saved roofline report (report.json[.gz]) or a torch.profiler trace (.json[.gz]). "
            "Prints the findings ranked by estimated saving; with -o DIR writes DIR/report.json with them (and roofline.png, report.html)."
        ),
    )
    parser.add_argument("target", nargs="?", help="SCRIPT.py, report.json[.gz] or a torch.profiler trace .json[.gz]")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    parser.add_argument("--model", help="a built-in workload: llama-tiny, resnet50, bert-base, bad-syncs, ...")
    parser.add_argument("--rules", help="comma-separated rule names to run (default: all; see --list-rules)")
    parser.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    add_findings_option(parser, "--top")
    parser.add_argument("--fail-on", choices=SEVERITIES, default=None,
                        help="exit 1 when a finding of this severity or worse is found (for CI)")
    add_ceilings_option(parser)
    parser.add_argument("--partial", action="store_true",
                        help="with a trace cut short: diagnose what was read (refused otherwise)")
    add_workload_options(parser)
    parser.add_argument("-o", "--output", type=output_dir, default=None, help="write DIR/report.json (with the findings), roofline.png and report.html")
    parser.set_defaults(func=run, parser=parser)


def _options_after_target(args: argparse.Namespace) -> argparse.Namespace:
    """Arguments after a report or trace path are doctor options (after a script they belong to the script)."""
    if not args.script_args or (args.target or "").endswith(".py"):
        return args
    extra, args.script_args, target = args.script_args, [], args.target
    args = args.parser.parse_args(extra, namespace=args)
    if args.target is not None or args.script_args:
        raise RooflineError(f"unexpected arguments after {target}: {' '.join(extra)}")
    args.target = target
    return args


def run(args: argparse.Namespace) -> int:
    from roofline.doctor import RULES

    args = _options_after_target(args)
    if args.list_rules:
        for name, rule in sorted(RULES.items()):
            print(f"{name:24s} {rule.summary}")
        return 0
    if bool(args.target) == bool(args.model):
        raise RooflineError("give one of: --model NAME, a script.py, a report.json or a trace file")
    if args.target and not args.target.endswith(".py"):
        # A saved report or a trace: millions of long-lived objects and none of a user's script. As in `roofline
        # trace`, no cycle collection rescans them, and the console command ends without freeing them.
        with cyclic_gc_paused(resume=not quickexit.armed()):
            return _diagnosed(args, keep_report=True)
    return _diagnosed(args, keep_report=False)


def _diagnosed(args: argparse.Namespace, keep_report: bool) -> int:
    from roofline.doctor import diagnose
    from roofline.render.findings import FindingsRenderer

    rules = [r.strip() for r in args.rules.split(",") if r.strip()] if args.rules else None
    report, script_error = _report_for(args)
    if keep_report:
        quickexit.keep_until_exit(report)
    report.findings = diagnose(report, rules=rules)
    if report.extra.get("partial"):
        print(next((n for n in report.summary.notes if n.startswith("PARTIAL")), "PARTIAL report"))
    sys.stdout.write(FindingsRenderer(args.findings).render(report))
    if args.output:
        from roofline.render.outputs import report_renderers, write_outputs

        written, _ = write_outputs(report, args.output, report_renderers())
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    if script_error is not None:
        print(f"roofline: error: {script_error}", file=sys.stderr)
        return 2
    if args.fail_on:
        worst = SEVERITIES.index(args.fail_on)
        if any(SEVERITIES.index(f.severity) >= worst for f in report.findings if f.severity in SEVERITIES):
            return 1
    return 0


def _report_for(args: argparse.Namespace) -> tuple[Any, str | None]:
    """The report to diagnose, and the user script's own error line when it raised (the report is of the steps
    profiled before it)."""
    if args.model:
        _refuse_unused(args, f"--model {args.model}", "partial")
        return _analyze_model(args), None
    refuse_workload_options(args, args.target)
    target = Path(args.target)
    if target.suffix == ".py":
        from roofline.capture.script_runner import check_script

        _refuse_unused(args, args.target, "partial")
        check_script(target)
        note_own_options_after_script(args.parser, target, args.script_args)
        return _profile_script(args)
    if not target.exists():
        raise RooflineError(f"file not found: {target}")
    from roofline.report import Report

    if Report.is_report_file(target):
        _refuse_unused(args, args.target, "partial", "ceilings", "device")
        return Report.load(target), None
    _refuse_unused(args, args.target, "device")
    from roofline.analyze.trace_file import analyze_trace_file

    return analyze_trace_file(target, args.ceilings, partial=args.partial), None


_UNUSED_WHY = {"partial": "--partial reads a trace cut short",
               "ceilings": "a saved report keeps the roofs it was judged against (re-judge its trace with --ceilings)",
               "device": "a report or a trace names the device it ran on"}


def _refuse_unused(args: argparse.Namespace, target: str, *names: str) -> None:
    """Options that the target makes meaningless, refused rather than ignored without a word."""
    given = [name for name in names if getattr(args, name)]
    if given:
        flags = ", ".join(f"--{name}" for name in given)
        raise RooflineError(f"{flags} {'does' if len(given) == 1 else 'do'} not apply to {target}: "
                            + "; ".join(_UNUSED_WHY[name] for name in given))


def _analyze_model(args: argparse.Namespace) -> Any:
    from roofline.analyze.pipeline import analyze_model
    from roofline.device import resolve_device
    from roofline.models import get_workload
    from roofline.models.workloads import recorded_sizes

    device = resolve_device(args.device)
    dtype = normalize_dtype(args.dtype)
    workload = get_workload(args.model, batch=args.batch, seq=args.seq, dtype=dtype, device=device,
                            backward=args.backward)
    ceilings = run_ceilings(device, args.ceilings)
    report = analyze_model(workload.model, workload.inputs, device=device, ceilings=ceilings,
                           backward=args.backward, loss_fn=workload.loss_fn, workload=args.model,
                           progress=lambda msg: print(f"roofline: {msg}", file=sys.stderr))
    report.extra.update(recorded_sizes(workload))
    return report


def _profile_script(args: argparse.Namespace) -> tuple[Any, str | None]:
    """The report of the script's profiled steps, and the one line naming the script's own error if it raised."""
    from roofline.analyze.profiled import report_from_profile
    from roofline.capture.profiling import StepProfiler
    from roofline.capture.script_runner import profile_script, script_error_line
    from roofline.device import resolve_device

    device = resolve_device(args.device)
    context = StepProfiler(device=device, ceilings=run_ceilings(device, args.ceilings), workload=Path(args.target).name)
    run = profile_script(context, args.target, args.script_args)
    leave_script_threads(args.target, run.threads_left)
    error = script_error_line(run.error, args.target) if run.error is not None else None
    try:
        cpu = None if args.ceilings else (lambda: run_ceilings("cpu", None))
        report = report_from_profile(context.record(), cpu_ceilings=cpu)
    except RooflineError:
        if error is None:
            raise
        raise RooflineError(error) from None
    if report.profile is not None:
        report.profile.step_source = run.step_source
    return report, error
