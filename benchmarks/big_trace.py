"""Big-trace benchmark: our load_trace + attribute against Holistic Trace Analysis' load, same machine, same run.

Also runs the whole `roofline trace` command on it (analysis + report.json, PNG and HTML), which is what the
issue's target is about. Builds a ~304 MB trace under /tmp (the llama training fixture's events repeated 30 times with shifted timestamps,
ids and step numbers, ~1.05 M events), then loads it in a fresh subprocess per tool and reads each child's wall
time and peak RSS (ru_maxrss of the child). Writes benchmarks/results/big_trace.json and prints a table.

    .venv/bin/python benchmarks/big_trace.py [--repeat 30] [--trace /tmp/roofline_big_trace.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "h200" / "llama_tiny_train_fp16_b2_s256.json.gz"
RESULTS = REPO / "benchmarks" / "results" / "big_trace.json"

_ID_KEYS = ("External id", "correlation", "Python id", "Python parent id", "Ev Idx", "Sequence number")


def build_big_trace(out: Path, repeat: int = 30, fixture: Path = FIXTURE) -> dict:
    """Write the fixture's events ``repeat`` times, each copy shifted past the previous one in time and ids."""
    data = json.loads(gzip.decompress(fixture.read_bytes()))
    events = data.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + float(e.get("dur", 0) or 0) for e in timed)
    span = t1 - t0 + 1000.0
    id_span = 1 + max(
        [int(e["args"][k]) for e in events for k in _ID_KEYS if isinstance(e.get("args"), dict)
         and isinstance(e["args"].get(k), int)] + [int(e["id"]) for e in events if isinstance(e.get("id"), int)]
    )
    steps = sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation")
    n = 0
    tmp = out.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        head = json.dumps(data)[:-1]
        fh.write(head.encode() + b', "traceEvents": [\n')
        first = True
        for k in range(repeat):
            for e in events:
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)):
                    e2["ts"] = round(e2["ts"] + k * span, 3)
                if isinstance(e2.get("id"), int):
                    e2["id"] = e2["id"] + k * id_span
                args = e2.get("args")
                if isinstance(args, dict):
                    args = dict(args)
                    for key in _ID_KEYS:
                        if isinstance(args.get(key), int):
                            args[key] = args[key] + k * id_span
                    e2["args"] = args
                name = e2.get("name")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    e2["name"] = f"ProfilerStep#{int(name[13:]) + k * steps}"
                if not first:
                    fh.write(b",\n")
                fh.write(json.dumps(e2).encode())
                first = False
                n += 1
        fh.write(b"\n]}\n")
    os.replace(tmp, out)
    return {"events": n, "bytes": out.stat().st_size}


_OURS = """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from roofline.capture.kineto import load_trace
from roofline.analyze.attribution import attribute
t1, c1 = time.perf_counter(), time.process_time()
trace = load_trace(sys.argv[1])
stats = attribute(trace)
t2, c2 = time.perf_counter(), time.process_time()
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"load_s": t2 - t1, "load_cpu_s": c2 - c1, "import_s": t1 - t0, "peak_rss_bytes": peak * 1024,
                  "ops": len(trace.ops), "kernels": len(trace.kernels), "steps": len(trace.steps),
                  "attributed_share": stats.share}))
"""

_HTA = """
import json, os, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from hta.trace_analysis import TraceAnalysis
t1, c1 = time.perf_counter(), time.process_time()
path = sys.argv[1]
analysis = TraceAnalysis(trace_files={0: os.path.basename(path)}, trace_dir=os.path.dirname(path))
t2, c2 = time.perf_counter(), time.process_time()
children = resource.getrusage(resource.RUSAGE_CHILDREN)
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, children.ru_maxrss)
df = analysis.t.get_trace(0)
print(json.dumps({"load_s": t2 - t1, "load_cpu_s": c2 - c1 + children.ru_utime + children.ru_stime,
                  "import_s": t1 - t0, "peak_rss_bytes": peak * 1024, "events": len(df)}))
"""


_CLI = r"""
import io, json, resource, sys, tempfile, time, contextlib
t0 = time.perf_counter(); c0 = time.process_time()
from roofline.cli import main
out = tempfile.mkdtemp(prefix="roofline-big-")
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["trace", sys.argv[1], "-o", out])
t1 = time.perf_counter(); c1 = time.process_time()
print(json.dumps({"load_s": t1 - t0, "load_cpu_s": c1 - c0, "import_s": 0.0, "rc": rc,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "torch_imported": "torch" in sys.modules}))
"""


def measure(code: str, trace: Path) -> dict:
    """Run ``code`` in a fresh interpreter; its own report plus the parent's view of wall time."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = wall
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--trace", type=Path, default=Path("/tmp/roofline_big_trace.json"))
    parser.add_argument("--rebuild", action="store_true", help="rebuild the trace even if it exists")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    sidecar = args.trace.with_name(args.trace.name + ".meta.json")
    if args.rebuild or not args.trace.exists() or not sidecar.exists():
        built = build_big_trace(args.trace, args.repeat)
        sidecar.write_text(json.dumps(built))
    else:
        built = json.loads(sidecar.read_text())
    load_before = os.getloadavg()
    ours = measure(_OURS, args.trace)
    whole = measure(_CLI, args.trace)
    hta = measure(_HTA, args.trace)
    result = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": os.getloadavg()},
        "trace": {"path": str(args.trace), "bytes": built["bytes"], "events": built["events"],
                  "built_from": str(FIXTURE.relative_to(REPO)), "repeat": args.repeat},
        "hta": {"tool": "HolisticTraceAnalysis 0.5.0 TraceAnalysis(trace_files={0: ...}) load", **hta},
        "roofline": {"tool": "roofline.capture.kineto.load_trace + roofline.analyze.attribution.attribute", **ours},
        "roofline_trace_command": {"tool": "roofline trace BIG -o DIR: the whole analysis (load, attribution, "
                                   "counting, roofline, doctor) and its outputs (report.json, roofline.png, "
                                   "report.html), imports included", **whole},
        "whole_command_time_ratio_hta_load_over_ours": hta["load_s"] / whole["load_s"],
        "whole_command_memory_ratio_hta_over_ours": hta["peak_rss_bytes"] / whole["peak_rss_bytes"],
        "time_ratio_hta_over_ours": hta["load_s"] / ours["load_s"],
        "cpu_time_ratio_hta_over_ours": hta["load_cpu_s"] / ours["load_cpu_s"],
        "memory_ratio_hta_over_ours": hta["peak_rss_bytes"] / ours["peak_rss_bytes"],
        "method": ("each tool in a fresh subprocess, one after the other, in one run; load_s = wall time of the "
                   "load call alone (imports excluded, reported apart); peak RSS = max(ru_maxrss of the process, "
                   "of its children) (HTA parses in a forked pool); cpu time includes HTA's pool"),
        "command": " ".join([Path(sys.executable).name, "benchmarks/big_trace.py", *(argv if argv is not None else sys.argv[1:])]),
    }
    from roofline.io import atomic_write_text

    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(_table(result))
    return 0


def _table(result: dict) -> str:
    mb = 1 << 20
    rows = [("tool", "load s", "cpu s", "peak RSS MB", "imports s")]
    for key in ("hta", "roofline", "roofline_trace_command"):
        r = result[key]
        rows.append((key, f"{r['load_s']:.2f}", f"{r['load_cpu_s']:.2f}", f"{r['peak_rss_bytes'] / mb:.0f}",
                     f"{r['import_s']:.2f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows]
    lines.append(f"trace: {result['trace']['bytes'] / 1e6:.0f} MB, {result['trace']['events']} events; HTA/ours: time {result['time_ratio_hta_over_ours']:.1f}x, "
                 f"cpu {result['cpu_time_ratio_hta_over_ours']:.1f}x, memory {result['memory_ratio_hta_over_ours']:.1f}x")
    lines.append(f"whole `roofline trace` command vs HTA's load alone: time {result['whole_command_time_ratio_hta_load_over_ours']:.1f}x, "
                 f"memory {result['whole_command_memory_ratio_hta_over_ours']:.1f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    raise SystemExit(main())
