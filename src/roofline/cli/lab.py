"""`roofline lab`: the case study - a deliberately slow LLaMA decoder diagnosed, fixed, compiled and measured."""

from __future__ import annotations

import argparse
import sys
import time

from roofline.cli.common import add_ceilings_option, finite_number, non_empty, output_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="case study: a slow LLaMA decoder diagnosed by the doctor, fixed step by step, compiled, measured",
        description=(
            "Profile a naive LLaMA generation loop, let the doctor diagnose it, apply the fixes one at a time, "
            "compile the decode step, and write the staged table (lab.md, lab.json), the speed-up chart "
            "(speedup.png) and the doctor's reports (doctor/) to -o DIR. Needs WikiText-2 (--data or ROOFLINE_DATA)."
        ),
    )
    parser.add_argument("--quick", action="store_true", help="a small run, not representative (a few minutes on a 2-core CPU)")
    parser.add_argument("--device", type=non_empty, default=None, help="cpu or cuda (default: cuda when present)")
    parser.add_argument("--model", default="llama-tiny", choices=["llama-tiny", "llama-1b", "llama-8b"],
                        help="the LLaMA size to run")
    parser.add_argument("--dtype", default=None, help="model dtype (default float16 on CUDA, float32 on CPU)")
    parser.add_argument("--data", default=None, help="folder with WikiText-2 test.txt/valid.txt (default: $ROOFLINE_DATA)")
    parser.add_argument("--no-doctor", action="store_true", help="skip the doctor's profiling runs")
    parser.add_argument("--decode-only", action="store_true",
                        help="only the batch-1 decode against the memory roof: compiled, tuned and the hand-written "
                             "Triton kernels (CUDA), with each one's device time by kernel class; no WikiText-2 "
                             "needed (a seeded random prompt)")
    parser.add_argument("--no-tuned", action="store_true",
                        help="leave out the Inductor-tuned batch-1 step (its compile takes minutes on llama-8b)")
    parser.add_argument("--budget", type=finite_number, default=None, metavar="SECONDS",
                        help="time for the configurations of the three views (default: no limit); runs that would "
                             "not fit are not started, and lab.md says what was cut. With --study batching: time for "
                             "its graph capture, calibration and sweep (default 360 s; none with --quick); with "
                             "--study attention: time for its sweep of lengths (default: no limit); not with "
                             "--study fp8")
    parser.add_argument("--study", default=None, choices=["attention", "fp8", "batching"],
                        help="run one extension study instead of the staged lab: attention (SDPA backends vs the "
                             "naive attention over sequence lengths), fp8 (FP8 weights for decode, FP8 matmuls for "
                             "prefill), batching (static vs continuous batching of a prompt stream)")
    parser.add_argument("--no-graphs", action="store_true",
                        help="--study batching: decode steps eager (op by op from Python) instead of CUDA graphs")
    add_ceilings_option(parser)
    parser.add_argument("-o", "--output", type=output_dir, required=True, help="output folder")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from roofline.lab.render import write_lab
    from roofline.lab.runner import LabOptions, run_lab

    _refuse_unused(args)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    began = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    if args.study is not None:
        return _run_study(args, device, progress, began)

    options = LabOptions(model=args.model, device=device, dtype=args.dtype, quick=args.quick, data=args.data,
                         doctor=not args.no_doctor, ceilings=args.ceilings, budget_s=args.budget,
                         decode_only=args.decode_only, tuned=not args.no_tuned)
    # Each finished section is written at once: a long GPU run that is stopped keeps what it measured.
    result = run_lab(options, progress, checkpoint=lambda partial: write_lab(partial, args.output))
    written = write_lab(result, args.output)
    from roofline.lab.render import stage_table

    if result.stages:
        print(stage_table(result))
    if result.peak is not None:
        print(f"\nbatch-1 decode: {result.peak.tokens_per_s:,.1f} tokens/s = "
              f"{100 * result.peak.share_of_memory_roof:.1f}% of the memory roof")
        tuned = result.peak.tuned
        if tuned is not None:
            print(f"tuned batch-1 decode: failed ({tuned.error})" if tuned.error else
                  f"tuned batch-1 decode (stacked projections, tuned kernels, graphed loop): "
                  f"{tuned.tokens_per_s:,.1f} tokens/s = {100 * tuned.share_of_memory_roof:.1f}% of the memory roof")
        for row in result.peak.fast:
            print(f"{row.title}: {row.skipped}" if row.skipped else
                  f"{row.title}: {row.tokens_per_s:,.1f} tokens/s = {100 * (row.share_of_memory_roof or 0):.1f}% of "
                  f"the memory roof")
    if result.naive_report is not None:
        print(f"doctor, naive model: {', '.join(sorted({f.rule for f in result.naive_report.findings}))}")
    print(f"wrote {len(written)} files to {args.output} in {time.perf_counter() - began:.0f} s")
    return 0


def _refuse_unused(args: argparse.Namespace) -> None:
    """Options of the staged lab given to a study, or of the batching study given elsewhere: refused, not ignored."""
    from roofline.errors import RooflineError

    if args.study is not None:
        staged = [flag for flag, given in (("--no-doctor", args.no_doctor), ("--decode-only", args.decode_only),
                                           ("--no-tuned", args.no_tuned)) if given]
        if staged:
            raise RooflineError(f"{', '.join(staged)} {'applies' if len(staged) == 1 else 'apply'} to the staged lab, "
                                f"not to --study {args.study}")
    if args.no_graphs and args.study != "batching":
        raise RooflineError("--no-graphs applies only to --study batching")
    if args.data and args.study == "attention":
        raise RooflineError("--data does not apply to --study attention: it times attention on seeded random inputs, "
                            "no text")


def _run_study(args: argparse.Namespace, device: str, progress, began: float) -> int:
    from roofline.lab.studies import StudyOptions, run_study

    options = StudyOptions(model=args.model, device=device, dtype=args.dtype, quick=args.quick, data=args.data,
                           ceilings=args.ceilings, budget_s=args.budget, graphs=not args.no_graphs)
    result = run_study(args.study, options, args.output, progress)
    print(result.table)
    for line in result.summary:
        print(line)
    print(f"wrote {len(result.files)} files to {args.output} in {time.perf_counter() - began:.0f} s")
    return 0
