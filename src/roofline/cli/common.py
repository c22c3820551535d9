"""Options shared by several subcommands, typed once, and the argparse types that refuse bad values at parse time
(before any work): a count that must be positive, an output path that cannot be written."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

DTYPE_CHOICES = ("float32", "float16", "bfloat16", "fp32", "fp16", "bf16")


def _int(text: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """A count that must be at least 1 (steps to time, processes, sizes)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


MAX_STEPS = 100_000


def step_count(text: str) -> int:
    """Steps to run, at least 1: more than MAX_STEPS would run for hours (a typo, not a plan)."""
    return _at_most_steps(positive_int(text))


def step_count_or_zero(text: str) -> int:
    """Steps to run that may be 0 (warm-up), at most MAX_STEPS."""
    return _at_most_steps(non_negative_int(text))


def _at_most_steps(value: int) -> int:
    if value > MAX_STEPS:
        raise argparse.ArgumentTypeError(f"at most {MAX_STEPS:,} steps, got {value:,}")
    return value


def non_negative_int(text: str) -> int:
    """A count that may be 0 (warm-up steps, rows to show)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def finite_number(text: str) -> float:
    """A number that is not NaN or infinite (float() takes 'nan' and 'inf', which pass every comparison or none)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def non_negative_number(text: str) -> float:
    value = finite_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def add_fanout_options(parser: argparse.ArgumentParser) -> None:
    """--jobs / --cluster: where the ranks of a job are analysed (distributed/fanout.py)."""
    parser.add_argument("--jobs", "-j", type=non_negative_int, default=1, metavar="N",
                        help="analyse ranks in N worker processes (0: one per CPU; default 1)")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="analyse ranks on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786); "
                             "its scheduler and workers need this roofline, its workers the trace paths (pip install "
                             "'roofline[cluster]')")


def fanout_jobs(args: argparse.Namespace) -> int:
    if args.jobs == 0:
        from roofline.distributed.fanout import default_jobs

        return default_jobs()
    return args.jobs


def add_findings_option(parser: argparse.ArgumentParser, *aliases: str) -> None:
    """The one findings cut-off, with the same default for every command that prints findings."""
    from roofline.render import FINDINGS_SHOWN

    parser.add_argument("--findings", *aliases, dest="findings", type=non_negative_int, default=FINDINGS_SHOWN,
                        metavar="N", help=f"findings to print, largest saving first (default {FINDINGS_SHOWN}; 0: all)")


def non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def output_dir(text: str) -> str:
    """An output directory that can be one: not an existing file, under a writable folder."""
    from roofline.io import check_output_dir

    return _checked_path(check_output_dir, text)


def output_file(text: str) -> str:
    """An output file name that is not a directory, under a folder that can be made."""
    from roofline.io import check_output_file

    return _checked_path(check_output_file, text)


def _checked_path(check, text: str) -> str:
    from roofline.errors import RooflineError

    try:
        check(text)
    except RooflineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device", type=non_empty, default=None, help="cpu, cuda or cuda:N (default: cuda when present, else cpu)"
    )


def add_workload_options(parser: argparse.ArgumentParser, *, factory: bool = False) -> None:
    """--batch/--seq/--dtype/--device/--backward, as `analyze`, `profile` and `doctor` take them. ``factory``: the
    command also takes path/to/file.py:factory, whose model --dtype casts and --backward runs backward."""
    parser.add_argument("--batch", type=positive_int, default=None,
                        help="batch size of a built-in --model (default: per workload)")
    parser.add_argument("--seq", type=positive_int, default=None,
                        help="sequence length or matrix size of a built-in --model (default: per workload)")
    parser.add_argument("--dtype", default=None, choices=DTYPE_CHOICES,
                        help="model dtype (default float32; a file.py:factory's model and inputs as it built them)"
                        if factory else "dtype of a built-in --model (default float32)")
    add_device_option(parser)
    parser.add_argument("--backward", action="store_true",
                        help="also run and measure the backward pass" + ("" if factory else " of a built-in --model"))


def refuse_workload_options(args: argparse.Namespace, target: str) -> None:
    """--batch/--seq/--dtype/--backward build a built-in --model; given with a script, report or trace they would
    be ignored without a word, so they are refused."""
    from roofline.errors import RooflineError

    given = [f"--{name}" for name in ("batch", "seq", "dtype", "backward") if getattr(args, name, None)]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise RooflineError(f"{', '.join(given)} {verb} only to a built-in --model, not to {target}: a script sets "
                            "its own sizes, dtype and backward; a report or trace was recorded as it ran")


def add_output_option(parser: argparse.ArgumentParser, default: str | None = "roofline-out") -> None:
    parser.add_argument("-o", "--output", type=output_dir, default=default, help=f"output directory (default: {default})")


def normalize_dtype(name: str | None) -> str:
    """torch's name for --dtype; float32 when it was not given."""
    from roofline.count.meta import canonical_dtype

    return canonical_dtype(name or "float32")


def add_ceilings_option(parser: argparse.ArgumentParser) -> None:
    """--ceilings FILE, the same for every command that places ops on a roofline."""
    parser.add_argument(
        "--ceilings", metavar="FILE", default=None,
        help="ceilings JSON (from `roofline ceilings --json FILE`) to measure against (default: this machine's "
             "cached ceilings, measured once on first use and shared by every command)",
    )


@contextlib.contextmanager
def progress_reporter(first: str) -> Iterator[Callable[[str], None]]:
    """A progress callback: a spinner showing `first` on a terminal; elsewhere (a log) one timestamped line on stderr
    per step reported, and nothing when no step is (a cache hit stays quiet)."""
    if sys.stderr.isatty():
        from rich.console import Console

        with Console(stderr=True).status(first) as status:
            yield status.update
        return
    began = time.perf_counter()

    def line(message: str) -> None:
        print(f"roofline: [{time.perf_counter() - began:5.1f}s] {message}", file=sys.stderr, flush=True)

    yield line


def run_ceilings(device: Any, ceilings_file: str | None) -> Any:
    """The Ceilings a run on `device` measures against (device/ceilings.py: ceilings_for_run), showing the
    measurement's progress when the cache has none yet."""
    from roofline.device.ceilings import ceilings_for_run

    if ceilings_file:
        return ceilings_for_run(device, ceilings_file)
    with progress_reporter("ceilings: reading the cache (measured once on first use)") as progress:
        return ceilings_for_run(device, progress=lambda m: progress(f"ceilings: {m}"))


def print_report_summary(report: Any, args: argparse.Namespace, written: list, problems: list[str],
                         tables: str | None = None) -> None:
    """What a report-producing command prints last: the op table, notes on outputs not written, the findings and
    the files written (``--top`` and ``--findings`` from ``args``). ``tables``: ``report_tables(report, args)``,
    rendered earlier (it needs no findings: a big trace's command renders it while its doctor runs elsewhere)."""
    from roofline.render.console import fit
    from roofline.render.findings import FindingsRenderer

    sys.stdout.write(tables if tables is not None else report_tables(report, args))
    for problem in problems:
        print(f"note: {problem}")
    sys.stdout.write(FindingsRenderer(args.findings).render(report))
    print(fit("wrote " + ", ".join(str(p) for p in written)))


def report_tables(report: Any, args: argparse.Namespace) -> str:
    """The console's op table, kernel classes and notes of a report (``--top`` from ``args``)."""
    from roofline.render.console import ConsoleRenderer

    return ConsoleRenderer(args.top).render(report)


def print_merged_summary(report: Any, findings: int, written: list) -> None:
    """What a merge of ranks prints (`roofline merge`, `roofline profile --nproc`): the ranks, stragglers and
    collectives, the findings (the ``findings`` largest; 0: all) and the files written."""
    from roofline.render.console import fit
    from roofline.render.distributed import DistributedRenderer
    from roofline.render.findings import FindingsRenderer

    sys.stdout.write(DistributedRenderer().render(report))
    sys.stdout.write(FindingsRenderer(findings).render(report))
    print(fit("wrote " + ", ".join(str(p) for p in written)))


def leave_script_threads(script: str, names: tuple[str, ...]) -> None:
    """A note that the profiled script left threads running, and the process's end not waiting for them."""
    if not names:
        return
    from pathlib import Path

    from roofline import quickexit

    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    print(f"roofline: note: {Path(script).name} left {len(names)} thread(s) running ({shown}); roofline ends "
          "without waiting for them", file=sys.stderr)
    quickexit.leave_threads_behind()


def note_own_options_after_script(parser: argparse.ArgumentParser, script: str, script_args: list[str]) -> None:
    """A note when the script's arguments hold one of roofline's own options (`roofline doctor train.py -o out`):
    everything after the script is the script's, as with `python train.py -o out`, so roofline never saw it (a
    doctor then wrote no files, a profile wrote to its default folder) and the script got an option it may not take.
    A note rather than an error: the script may take that option itself."""
    from pathlib import Path

    ours = {flag for action in parser._actions for flag in action.option_strings if flag not in ("-h", "--help")}
    for i, word in enumerate(script_args):
        flag = word.split("=", 1)[0]
        if flag in ours:
            shown = " ".join(script_args[i:i + 2]) if "=" not in word and i + 1 < len(script_args) else word
            print(f"roofline: note: '{shown}' comes after {Path(script).name}, so it is passed to the script (as "
                  f"`python {Path(script).name} {shown}` would pass it), not to roofline; roofline's own options go "
                  "before the script", file=sys.stderr)
            return
