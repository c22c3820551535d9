"""Launching N ranks with torchrun (``python -m torch.distributed.run``), and `roofline profile --nproc N`.

Every worker runs ``python -m roofline profile ... -o RUN_DIR SCRIPT ARGS``; inside the job the profile command
sends its files to RUN_DIR/rank{r}/ (``rank.prepare_rank``). When torchrun returns, the ranks are merged into
RUN_DIR/report.json. torchrun runs in its own process group, ended (SIGTERM, then SIGKILL) on any error or
interrupt, so no worker outlives the command.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.distributed.rank import find_rank_dirs, multicast_off_env
from roofline.errors import RooflineError

if TYPE_CHECKING:
    from roofline.report import Report


def rank_threads_env(nproc: int) -> tuple[dict[str, str], str]:
    """The job's environment with OMP_NUM_THREADS set, and a few words saying how it was chosen.

    torchrun gives each of several ranks one thread when OMP_NUM_THREADS is unset, and prints a banner saying so.
    On a CPU job that leaves most cores idle; the machine's cores shared among the ranks is what a user profiling
    on their own machine means. A value the user set is kept.
    """
    given = os.environ.get("OMP_NUM_THREADS")
    if given:
        return dict(os.environ), f"OMP_NUM_THREADS={given} per rank, as set"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // max(nproc, 1))
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    return env, f"OMP_NUM_THREADS={threads} per rank: {cores} cores over {nproc} ranks; set it to choose"


def torchrun_command(nproc: int, module_args: list[str], *, module: str = "roofline") -> list[str]:
    """torchrun's ``--standalone --nproc-per-node N -m MODULE ARGS`` (a free local port), through
    roofline.distributed.torchrun_quiet: a failing worker is its own one line, not torchrun's traceback."""
    return [sys.executable, "-m", "roofline.distributed.torchrun_quiet", "--standalone", f"--nproc-per-node={nproc}",
            "-m", module, *module_args]


def run_torchrun(nproc: int, module_args: list[str], *, module: str = "roofline", timeout_s: float | None = None,
                 env: dict[str, str] | None = None, errors: list[str] | None = None) -> int:
    """Run the job to the end and return torchrun's exit code; the whole process group is ended on any error.

    The workers' stderr passes through, less repeats of a `roofline: error:` line (N ranks failing alike print it
    N times); ``errors``, when given, receives the distinct error lines shown."""
    if nproc < 1:
        raise RooflineError(f"--nproc must be at least 1 (got {nproc})")
    cmd = torchrun_command(nproc, module_args, module=module)
    process = subprocess.Popen(cmd, env=multicast_off_env(env), start_new_session=True, stderr=subprocess.PIPE)
    shown = errors if errors is not None else []
    pump = threading.Thread(target=_pass_stderr, args=(process.stderr, shown), daemon=True)
    pump.start()
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RooflineError(f"the {nproc}-process job ran past {timeout_s:g} s and was stopped") from None
    finally:
        _end_group(process)
        pump.join(5)


def _pass_stderr(stream: Any, shown: list[str]) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        if line.startswith("roofline: error:"):
            if line.rstrip("\n") in shown:
                continue
            shown.append(line.rstrip("\n"))
        sys.stderr.write(line)
        sys.stderr.flush()


def _end_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        _kill_group(process.pid, signal.SIGKILL)
        return
    _kill_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid, signal.SIGKILL)
        process.wait()


def _kill_group(pgid: int, sig: int) -> None:
    """Signal the group torchrun leads (its workers included); a group already gone is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def launch_profile(args: argparse.Namespace, forwarded: list[str],
                   show: Callable[[Report, list[Path]], None] | None = None) -> int:
    """`roofline profile --nproc N SCRIPT`: the script under torchrun, each rank profiled, then the merge.

    `forwarded` is the user's `roofline profile` options as words, built by the CLI that owns the parser; `show`
    prints the merged report and the files written (the CLI's, as `roofline merge` prints them; default: the files).
    """
    if not args.script:
        raise RooflineError("--nproc runs a script under torchrun: give the script (not --model)")
    if not Path(args.script).is_file():
        raise RooflineError(f"script not found: {args.script}")
    run_dir = Path(args.output)
    run_dir.mkdir(parents=True, exist_ok=True)
    ceilings = args.ceilings or _shared_cpu_ceilings(args, run_dir)
    words = list(forwarded)
    if ceilings:
        words += ["--ceilings", str(ceilings)]
    words += ["-o", str(run_dir), str(args.script), *list(args.script_args or [])]
    env, threads = rank_threads_env(int(args.nproc))
    print(f"roofline: launching {args.nproc} ranks with torchrun into {run_dir} ({threads})", file=sys.stderr)
    errors: list[str] = []
    code = run_torchrun(int(args.nproc), ["profile", *words], env=env, errors=errors)
    ranks = find_rank_dirs(run_dir)
    if not ranks:
        if errors:  # the ranks said why, once
            return RooflineError.exit_code
        raise RooflineError(f"no rank wrote a report into {run_dir} (torchrun exit code {code})")
    from roofline.distributed.merge import merge_run_dir, write_merged
    from roofline.doctor import diagnose

    report = merge_run_dir(run_dir, ceilings_file=args.ceilings)
    report.findings = diagnose(report)
    written = write_merged(report, run_dir)
    if show is None:
        print(f"merged {len(ranks)} rank(s) into {', '.join(map(str, written))}", file=sys.stderr)
    else:
        show(report, written)
    if len(ranks) < int(args.nproc):
        print(f"roofline: error: only {len(ranks)} of {args.nproc} ranks wrote a report", file=sys.stderr)
        return 1
    return 1 if code else 0


def _shared_cpu_ceilings(args: Any, run_dir: Path) -> str | None:
    """On the CPU the ranks share one ceilings file, measured here once, rather than each measuring at once."""
    from roofline.device.resolve import resolve_device

    device = resolve_device(getattr(args, "device", None))
    if device.type != "cpu":
        return None
    from roofline.device.ceilings import ceilings_for_run, save_ceilings

    return str(save_ceilings(ceilings_for_run(device, getattr(args, "ceilings", None)), run_dir / "ceilings.json"))
