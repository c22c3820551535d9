"""The doctor's CPU time, in total and per rule: ``diagnose`` timed ``--rounds`` times with the cyclic GC disabled
(the CLI pauses it), medians and min-max.

PATH is a report.json (``Report.load``), or with ``--trace`` a trace analysed here first. ``--fork``: each round in a
forked child of a process that never ran the doctor, as `roofline trace` runs it on a big report (cold caches, the
report's pages copied on first write); its times are the child's CPU time. A loaded report differs from a live one:
its strings are not shared between ops, so hashing them costs more. Each rule's time is that of its ``check`` within
the round's ``diagnose``; ``_cap`` is ``registry.profiled_time_s``, which builds the op table and step spans the rules
share. Runs against whichever roofline PYTHONPATH names, so two checkouts can be run alternately:

    PYTHONPATH=src .venv/bin/python benchmarks/doctor_speed.py REPORT.json [--rounds 5]
    PYTHONPATH=src .venv/bin/python benchmarks/doctor_speed.py BIG.json --trace --fork
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

from roofline.doctor import registry
from roofline.report import Report

CAP = "_cap"


def timed_round(report: Report) -> dict[str, float]:
    """One ``diagnose`` with each rule's check and the profiled-time cap timed: seconds by name, and "total"."""
    registry._load_rules()
    spent: dict[str, float] = {}
    rules = dict(registry.RULES)
    cap = registry.profiled_time_s

    def timing(name: str, work: Callable[[Report], Any]) -> Callable[[Report], Any]:
        def run(r: Report) -> Any:
            started = time.process_time()
            try:
                return work(r)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - started
        return run

    registry.profiled_time_s = timing(CAP, cap)
    for name, rule in rules.items():
        registry.RULES[name] = registry.Rule(rule.name, timing(name, rule.check), rule.summary)
    try:
        started = time.process_time()
        registry.diagnose(report)
        spent["total"] = time.process_time() - started
    finally:
        registry.profiled_time_s = cap
        registry.RULES.update(rules)
    return spent


def forked_round(report: Report) -> dict[str, float]:
    """``timed_round`` in a forked child, its result sent back over a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(read)
            with os.fdopen(write, "wb") as out:
                pickle.dump(timed_round(report), out)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as received:
        data = received.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        raise SystemExit(f"the forked round failed (status {status})")
    return pickle.loads(data)


def load(path: str, trace: bool) -> Report:
    if trace:
        from roofline.analyze.trace_file import analyze_trace_file

        return analyze_trace_file(path)
    return Report.load(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a report.json, or a trace with --trace")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trace", action="store_true", help="PATH is a trace: analyse it first")
    parser.add_argument("--fork", action="store_true", help="each round in a forked child (cold, as the CLI)")
    args = parser.parse_args()
    gc.disable()
    report = load(args.path, args.trace)
    if not args.fork:
        registry.diagnose(report)  # warm: imports and the rules' memoised name tables
    rounds = [(forked_round if args.fork else timed_round)(report) for _ in range(args.rounds)]
    names = sorted(rounds[0], key=lambda n: -statistics.median(r.get(n, 0.0) for r in rounds))
    print(f"{len(report.ops)} ops, {len(report.kernels)} kernels; {args.rounds} rounds"
          f"{', forked' if args.fork else ''}; CPU ms: median (min-max)")
    for name in names:
        values = [r.get(name, 0.0) * 1e3 for r in rounds]
        if name == "total" or statistics.median(values) >= 0.05:
            print(f"{statistics.median(values):8.1f} ({min(values):.1f}-{max(values):.1f})  {name}")


if __name__ == "__main__":
    main()
