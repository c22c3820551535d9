"""`roofline profile`: profile an unmodified script, or a built-in workload, and write its report and trace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from roofline.cli.common import (add_ceilings_option, add_findings_option, add_output_option, add_workload_options,
                                 leave_script_threads, non_negative_int, normalize_dtype,
                                 note_own_options_after_script, positive_int,
                                 print_merged_summary, print_report_summary, refuse_workload_options, run_ceilings,
                                 step_count, step_count_or_zero)
from roofline.errors import RooflineError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="profile a script (unmodified) or a built-in model: ops, kernels, memory, syncs, true step time",
        description=(
            "Run SCRIPT unchanged under the profiling harness (steps: each step() of the optimizer with the most "
            "parameters, else each top-level forward of the largest module, else the script's own profiler "
            "steps), or a built-in --model. "
            "Writes DIR/report.json, roofline.png, report.html and trace.json.gz."
        ),
    )
    parser.add_argument("script", nargs="?", help="the Python script to run, as `python SCRIPT ARGS...` would")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    parser.add_argument("--model", help="a built-in workload instead of a script: resnet50, bert-base, bad-syncs, llama-tiny, ...")
    parser.add_argument("--wait", type=step_count, default=1,
                        help="steps run first, neither timed nor profiled: compile, autotune, allocator warm-up "
                             "(default 1; at least 1)")
    parser.add_argument("--timed", type=step_count_or_zero, default=None,
                        help="steps then timed without the profiler, for the true step time (default: as many as "
                             "--active)")
    parser.add_argument("--warmup", type=step_count_or_zero, default=1,
                        help="profiled steps thrown away (default 1; with 0 and no --timed steps, a script whose "
                             "steps are still its forwards when profiling begins gets 1, as an optimizer.step() found "
                             "then would end the first profiled step mid-iteration)")
    parser.add_argument("--active", type=step_count, default=3, help="profiled steps kept (default 3)")
    parser.add_argument("--sync-mode", choices=("warn", "error", "silent"), default="silent",
                        help="what a host-device sync does while profiling (default: silent, listed in the report)")
    parser.add_argument("--no-stack", action="store_true", help="do not record Python stacks (less overhead, no source lines)")
    parser.add_argument("--whole", action="store_true",
                        help="profile the whole script as one step (no step detection, no true step time)")
    parser.add_argument("--run-to-end", action="store_true", help="let the script finish after the profiled steps")
    add_ceilings_option(parser)
    parser.add_argument("--nproc", type=positive_int, default=None, metavar="N",
                        help="run SCRIPT under torchrun with N processes, each rank profiled into OUTPUT/rank{r}/, "
                             "then merged into OUTPUT/report.json")
    add_workload_options(parser)
    add_output_option(parser)
    parser.add_argument("--top", type=non_negative_int, default=15, help="ops to print (default 15)")
    add_findings_option(parser)
    parser.set_defaults(func=run, parser=parser)


def run(args: argparse.Namespace) -> int:
    if bool(args.script) == bool(args.model):
        raise RooflineError("give a script to run or --model NAME (one of the two)")
    script_only = [flag for flag, given in (("--whole", args.whole), ("--run-to-end", args.run_to_end)) if given]
    if args.model and script_only:
        raise RooflineError(f"{', '.join(script_only)} {'applies' if len(script_only) == 1 else 'apply'} only to a "
                            f"script, not to --model {args.model}: a built-in model runs exactly the steps asked for")
    schedule = [f"--{name}" for name in ("wait", "timed", "warmup", "active")
                if getattr(args, name) != args.parser.get_default(name)]
    if args.whole and schedule:
        raise RooflineError(f"{', '.join(schedule)} {'sets' if len(schedule) == 1 else 'set'} the step schedule, "
                            "which --whole has none of (the whole script is one profiled step)")
    if args.whole and args.run_to_end:
        raise RooflineError("--run-to-end adds nothing to --whole: the whole script is the one profiled step, "
                            "always run to its end")
    if args.script:
        from roofline.capture.script_runner import check_script

        refuse_workload_options(args, args.script)
        check_script(args.script)
        note_own_options_after_script(args.parser, args.script, args.script_args)
    if args.nproc:
        from roofline.distributed.launch import launch_profile

        return launch_profile(args, forwarded_profile_args(args),
                              show=lambda report, written: print_merged_summary(report, args.findings, written))
    from roofline.distributed.rank import prepare_rank

    prepare_rank(args)
    from roofline.capture.profiling import StepProfiler
    from roofline.device.resolve import resolve_device

    device = resolve_device(args.device)
    # built before the ceilings are measured: a size it refuses, or one that does not fit, is told at once
    workload = _workload(args, device) if args.model else None
    ceilings = run_ceilings(device, args.ceilings)
    context = StepProfiler(
        wait=args.wait, warmup=args.warmup, active=args.active, timed=args.timed, device=device,
        with_stack=not args.no_stack, sync_mode=args.sync_mode, ceilings=ceilings,
        workload=args.model or Path(args.script).name, whole_block=bool(args.whole and not args.model),
    )
    step_source, sizes = None, {}
    if args.model:
        error, sizes = _profile_model(args, workload, context)
        label = args.model
    else:
        from roofline.capture.script_runner import profile_script

        run_ = profile_script(context, args.script, args.script_args, whole=args.whole, run_to_end=args.run_to_end)
        error, step_source = run_.error, run_.step_source
        label = args.script
        leave_script_threads(args.script, run_.threads_left)
        if error is None and context.trace_path is None:
            # A switch from forwards to optimizer.step() counted the forward that ended first as one more waiting
            # step: told in the user's own steps, 5 optimizer steps read "it made 6 step(s), the schedule needs 9".
            extra = context.wait - args.wait
            made, needed = max(context.steps_done - extra, 0), context.total_steps - extra
            kind = {"optimizer": "optimizer.step() call(s)", "forward": "top-level forward(s)"}.get(
                step_source or "", "step(s)")
            raise RooflineError(
                f"no profiled steps in {args.script}: it made {made} {kind}, the schedule needs {needed} "
                f"(--wait {args.wait} + --timed {context.timed} + --warmup {args.warmup} + --active {args.active}"
                + (" + 1 warmup step taken in case the first profiled step began mid-iteration"
                   if context.partial_step_warmup else "") + "; "
                "a step: optimizer.step(), else a top-level forward of its largest module, else its profiler's "
                "step()); "
                + ("its forwards or optimizer steps ran on other threads, and only the script's own thread is "
                   "profiled: run the model there, or analyse it with `roofline analyze FILE.py:factory`"
                   if run_.off_thread_boundaries and not context.steps_done
                   else "lower --wait/--timed/--warmup/--active, or use --whole")
            )
    return _write(context, args, error, label, step_source, sizes)


def _workload(args: argparse.Namespace, device: Any) -> Any:
    from roofline.models import get_workload

    return get_workload(args.model, batch=args.batch, seq=args.seq, dtype=normalize_dtype(args.dtype), device=device,
                        backward=args.backward)


def _profile_model(args: argparse.Namespace, workload: Any, context: Any) -> tuple[BaseException | None, dict]:
    """The error the steps raised (None: they ran), and the workload's batch and seq for the report."""
    from roofline.analyze.live import make_step
    from roofline.models.workloads import recorded_sizes

    one_step = make_step(workload.model, workload.inputs, backward=args.backward, loss_fn=workload.loss_fn)

    import torch

    try:
        with context, torch.set_grad_enabled(bool(args.backward)):
            for _ in range(context.total_steps):
                one_step()
                context.step()
    except Exception as exc:  # noqa: BLE001 - reported in one line below, outputs kept
        return exc, recorded_sizes(workload)
    return None, recorded_sizes(workload)


def _write(context: Any, args: argparse.Namespace, error: BaseException | None, label: str, step_source: str | None,
           sizes: dict | None = None) -> int:
    """Write the report and print it as `analyze` and `trace` do (the profile's own sections first); on a rank of a
    torchrun job only rank 0 prints. A script that raised still gets the report of the steps profiled before."""
    from roofline.render.profile_report import ProfileReport

    report = None
    try:
        from roofline.analyze.profiled import report_from_profile
        from roofline.distributed.rank import stamp_rank
        from roofline.doctor import diagnose

        # A script that kept its model on the CPU of a GPU machine is judged against this machine's CPU roofs
        # (measured once and cached, as `roofline ceilings --device cpu` does); a --ceilings FILE is kept.
        cpu = None if args.ceilings else (lambda: run_ceilings("cpu", None))
        report = report_from_profile(context.record(), cpu_ceilings=cpu)
        report.extra.update(sizes or {})
        report.findings = diagnose(report)

        stamp_rank(report)
    except RooflineError:
        if error is None:
            raise
    if report is not None:
        if report.profile is not None:
            report.profile.step_source = step_source
        from roofline.distributed.rank import current_rank

        rank = current_rank()
        quiet = rank is not None and rank.rank != 0
        profile = ProfileReport(report, trace=context.trace_path, top=args.top, findings=args.findings)
        written = list(profile.generate(args.output, console=False).values())
        if quiet:
            from roofline.render.console import fit

            print(fit("wrote " + ", ".join(str(p) for p in written)), file=sys.stderr)
        else:
            sys.stdout.write(profile.profile_text() + "\n")
            print_report_summary(report, args, written, profile.problems)
    if error is not None:
        from roofline.capture.script_runner import script_error_line

        line = script_error_line(error, label) if label.endswith(".py") else f"{label}: {type(error).__name__}: {error}"
        print(f"roofline: error: {line}", file=sys.stderr)
        return 2
    return 0


_NOT_FORWARDED = {"nproc", "output", "help", "script", "script_args", "ceilings"}


def forwarded_profile_args(args: argparse.Namespace) -> list[str]:
    """The `roofline profile` options the user gave, back as command-line words (less --nproc and -o)."""
    from roofline.cli import build_parser

    parser = _subparser(build_parser(), "profile")
    words: list[str] = []
    for action in parser._actions:
        if not action.option_strings or action.dest in _NOT_FORWARDED:
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or value is None:
            continue
        flag = max(action.option_strings, key=len)
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            words.append(flag)
        else:
            words += [flag, str(value)]
    return words


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    raise RooflineError(f"no `roofline {name}` command in this installation")
