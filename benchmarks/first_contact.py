"""First contact on a small machine: what `roofline ceilings --remeasure` and `make demo` cost, and whether the
console fits 80 columns (issue 13's closing measurements).

Each command runs as a user would run it, in a child process whose own peak RSS (os.wait4, as /usr/bin/time -v
reports it) and wall time are taken, with a fresh empty ROOFLINE_CACHE_DIR for the demo. The load average before each run is recorded: other work on the
machine makes timings and the measured roofs noisy.

    python benchmarks/first_contact.py benchmarks/results/first_contact_cpu.json [--runs 3] [--only-ceilings]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roofline.io import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> dict:
    """Run cmd; its peak RSS, wall time, exit code, stdout, stderr's end and the load average before."""
    load = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    rss_kib = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss
    return {"command": " ".join(cmd), "returncode": os.waitstatus_to_exitcode(status), "wall_s": round(wall, 2),
            "peak_rss_bytes": rss_kib * 1024, "load_average_before": load, "stdout": stdout,
            "stderr_tail": stderr[-1500:]}


def spread(values: list[float]) -> float:
    """(max - min) / min: how far apart the runs are."""
    return (max(values) - min(values)) / min(values) if values and min(values) > 0 else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--runs", type=int, default=3, help="ceilings --remeasure runs")
    parser.add_argument("--only-ceilings", action="store_true", help="skip the demo and the 80-column check")
    args = parser.parse_args()
    py = [sys.executable, "-m", "roofline"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    import torch

    result: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "torch": torch.__version__},
                    "ceilings": [], "demo": {}}
    with tempfile.TemporaryDirectory(prefix="roofline-first-contact-") as tmp:
        cache = Path(tmp) / "cache"
        env_c = dict(env, ROOFLINE_CACHE_DIR=str(cache))
        for i in range(args.runs):
            jpath = Path(tmp) / f"ceilings{i}.json"
            run = timed([*py, "ceilings", "--device", "cpu", "--remeasure", "--json", str(jpath)], env_c, ROOT)
            run["ceilings"] = json.loads(jpath.read_text()) if jpath.exists() else None
            run.pop("stdout")
            result["ceilings"].append(run)
            print(f"ceilings run {i + 1}: {run['wall_s']} s, {run['peak_rss_bytes'] / 2**30:.2f} GiB", file=sys.stderr)
        good = [r["ceilings"] for r in result["ceilings"] if r["ceilings"]]
        figures = {"memory_bandwidth_bytes_per_s": [c["memory_bandwidth_bytes_per_s"] for c in good]}
        for dtype in good[0]["peak_flops_per_s"] if good else []:
            figures[f"peak_flops_per_s.{dtype}"] = [c["peak_flops_per_s"][dtype] for c in good]
        result["ceilings_spread"] = {k: {"values": v, "spread": round(spread(v), 4)} for k, v in figures.items()}

        if args.only_ceilings:
            atomic_write_text(Path(args.out), json.dumps(result, indent=1) + "\n")
            print(json.dumps(result["ceilings_spread"], indent=1))
            return 0
        demo_cache = Path(tmp) / "demo-cache"
        out = Path(tmp) / "demo-out"
        run = timed([*py, "analyze", "--model", "llama-tiny", "-o", str(out)],
                    dict(env, ROOFLINE_CACHE_DIR=str(demo_cache)), Path(tmp))
        run.pop("stdout")
        result["demo"] = run
        print(f"demo: {run['wall_s']} s, {run['peak_rss_bytes'] / 2**30:.2f} GiB", file=sys.stderr)

        run = timed([*py, "analyze", "--model", "llama-tiny", "--device", "cpu", "-o", str(Path(tmp) / "c80")],
                    dict(env, ROOFLINE_CACHE_DIR=str(demo_cache), COLUMNS="80"), Path(tmp))
        lines = run.pop("stdout").splitlines()
        words = re.compile(r"\b(float3|comput|memor)\s*$")
        result["columns_80"] = {"returncode": run["returncode"], "lines": len(lines),
                                "longest_line": max((len(x) for x in lines), default=0),
                                "lines_over_80": [x for x in lines if len(x) > 80],
                                "suspect_broken_words": [x for x in lines if words.search(x)],
                                "stderr_lines": [x for x in run["stderr_tail"].splitlines()
                                                 if not x.startswith(("\t", "roofline: ["))][:10]}
    atomic_write_text(Path(args.out), json.dumps(result, indent=1) + "\n")
    print(json.dumps({"ceilings_spread": result["ceilings_spread"], "columns_80": result["columns_80"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
