"""Paired CPU time of `roofline trace TRACE -o DIR` from two source trees, for a machine shared with other jobs.

    python benchmarks/paired_cpu.py --trace /tmp/i23_big.json --before /tmp/base/src --after src --rounds 12

Each round runs both trees once, in a fresh interpreter (the first one alternating by round), under
/usr/bin/time: wall, user and system seconds of the process and every child it waited for (the trace's tail
reader, the forked memory, report.html, doctor and PNG children), and the largest peak RSS among them. Both trees
are byte-compiled first (as an installed package is). CPU time barely moves with the other jobs on the machine,
wall time does: the paired differences of user+sys are the figure to read. Prints every run, then medians,
IQRs and the paired differences; the outputs of each tree's last run are kept for comparison (--keep DIR).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_once(src: Path, trace: Path, out: Path) -> dict[str, float]:
    fmt = "wall=%e user=%U sys=%S maxrss_kb=%M"
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", fmt, sys.executable, "-m", "roofline", "trace",
                        str(trace), "-o", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
        fields = dict(item.split("=") for item in tf.read().split()[-4:])
    values = {k: float(v) for k, v in fields.items()}
    values["cpu"] = values["user"] + values["sys"]
    values["load1"] = os.getloadavg()[0]
    return values


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) < 4:
        return min(xs), statistics.median(xs), max(xs)
    q = statistics.quantiles(xs, n=4)
    return q[0], q[1], q[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True, help="the src/ directory of the tree before")
    parser.add_argument("--after", type=Path, required=True, help="the src/ directory of the tree after")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) / "paired_cpu_out")
    args = parser.parse_args()
    for src in (args.before, args.after):
        compileall.compile_dir(str(src / "roofline"), quiet=1)
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    trees = {"before": args.before, "after": args.after}
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, {args.trace} "
          f"({args.trace.stat().st_size / 1e6:.0f} MB), {args.rounds} rounds", flush=True)
    for round_ in range(args.rounds):
        order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
        for name in order:
            r = run_once(trees[name], args.trace, args.keep / name)
            runs[name].append(r)
            print(f"round {round_ + 1} {name:6s} wall={r['wall']:.2f} user={r['user']:.2f} sys={r['sys']:.2f} "
                  f"cpu={r['cpu']:.2f} maxrss_kb={r['maxrss_kb']:.0f} load1={r['load1']:.2f} "
                  f"{time.strftime('%H:%M:%S', time.gmtime())}", flush=True)
    for key, unit in (("cpu", "s"), ("user", "s"), ("sys", "s"), ("wall", "s"), ("maxrss_kb", "KiB")):
        line = []
        for name in ("before", "after"):
            lo, med, hi = quartiles([r[key] for r in runs[name]])
            xs = [r[key] for r in runs[name]]
            line.append(f"{name} {med:.2f} (IQR {lo:.2f}-{hi:.2f}, min-max {min(xs):.2f}-{max(xs):.2f})")
        print(f"{key:9s} {unit:3s} " + "   ".join(line))
    for key in ("cpu", "wall"):
        diffs = [a[key] - b[key] for a, b in zip(runs["after"], runs["before"])]
        lower = sum(d < 0 for d in diffs)
        lo, med, hi = quartiles(diffs)
        print(f"paired after-before {key}: median {med:+.2f} s (IQR {lo:+.2f} to {hi:+.2f}), lower in {lower} of "
              f"{len(diffs)}: " + " ".join(f"{d:+.2f}" for d in diffs))


if __name__ == "__main__":
    main()
