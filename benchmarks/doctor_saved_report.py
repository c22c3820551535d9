"""diagnose() on a report fresh from analysis and on the same report loaded back from its report.json.

Analyses TRACE in this process (the live report), loads REPORT (written by `roofline trace TRACE -o DIR`), then
alternates diagnose() on the two ``--runs`` times. Prints the ops, the calls the doctor's op table groups them into,
Report.load's time, each run's time with the median, and whether the two reports' findings are byte-identical
(msgspec JSON). Runs against whichever roofline PYTHONPATH names, so one checkout can be set beside another:

    PYTHONPATH=src .venv/bin/python benchmarks/doctor_saved_report.py BIG.json DIR/report.json [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import msgspec

from roofline.analyze.trace_file import analyze_trace_file
from roofline.doctor import diagnose
from roofline.doctor.op_table import OpTable
from roofline.report import Report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("report")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    live = analyze_trace_file(args.trace, None)
    started = time.perf_counter()
    loaded = Report.load(args.report)
    load_s = time.perf_counter() - started
    print(f"ops: live {len(live.ops)}, loaded {len(loaded.ops)}; calls: live {len(OpTable(live.ops).calls)}, "
          f"loaded {len(OpTable(loaded.ops).calls)}; Report.load {load_s:.2f} s")
    times: dict[str, list[float]] = {"live": [], "loaded": []}
    findings: dict[str, bytes] = {}
    for _ in range(args.runs):
        for name, report in (("live", live), ("loaded", loaded)):
            started = time.perf_counter()
            found = diagnose(report)
            times[name].append(time.perf_counter() - started)
            findings.setdefault(name, msgspec.json.encode(found))
    for name, runs in times.items():
        print(f"diagnose {name}: {' '.join(f'{t:.2f}' for t in runs)} s, median {statistics.median(runs):.2f} s")
    print(f"findings identical: {findings['live'] == findings['loaded']} ({len(findings['live'])} bytes of JSON)")


if __name__ == "__main__":
    main()
