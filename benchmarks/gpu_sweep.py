"""Run `roofline profile`, `trace` and `doctor` live on ~50 user scripts that take GPU-only paths, and record what
breaks: one command on the lent GPU (the CPU sweeps never ran these paths through the CLI).

    PYTHONPATH=src python3 benchmarks/gpu_sweep.py OUT                       # every case, on cuda
    PYTHONPATH=src python3 benchmarks/gpu_sweep.py OUT --batch 2 --budget 240     # the second batch only
    PYTHONPATH=src python3 benchmarks/gpu_sweep.py OUT --batch 3 --jobs 6 --budget 420   # the third batch only
    PYTHONPATH=src python3 benchmarks/gpu_sweep.py OUT --device cpu --cases sdpa_flash_train,fused_adamw

Each case (gpu_sweep_cases.py) is a user script written to OUT/scripts/, run in a subprocess with a time limit:
`roofline profile SCRIPT DEVICE -o OUT/cases/NAME`, then `roofline trace` of the trace.json.gz it wrote and
`roofline doctor` on its report.json. A case that fails or hangs is a row, never the end of the sweep. Per case:
exit codes, wall times, the stderr tail, and checks on report.json: the device named, no NaN/inf/negative number
anywhere in it, no op over 100% of its roof unless flagged above_roof, the share of device time attributed to
ops, the unmodelled ops, the doctor's findings, and whether trace's kernel time agrees with profile's within 5%.
Writes OUT/sweep.json and OUT/sweep.md and prints the table last. Traces, plots and HTML are deleted after the
checks; each case keeps profile's report.json.gz, a broken one also trace's, doctor's and the logs; all is packed into
OUT/cases.tgz (the device tool brings back few files).

Cases run --jobs at a time (default 4 on cuda, 1 on cpu): the sweep looks for breakage, not speed; figures such
as % of roof are from runs that shared the GPU with up to jobs-1 other cases (they can only read lower).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_sweep_cases import CASES, Case  # noqa: E402

from roofline.io import atomic_write_bytes  # noqa: E402

PY = sys.executable
RL = [PY, "-m", "roofline"]
H200_CEILINGS = Path(__file__).resolve().parent / "results/h200/issue19-20/ceilings_h200.json"
AGREE = 0.05  # trace's kernel time against profile's
TAIL = 1500


def run(argv: list[str], timeout: float, log: Path) -> dict:
    """One CLI call: exit code (None when it hung past timeout), seconds, stdout/stderr in LOG.{out,err}."""
    start = time.perf_counter()
    with open(log.with_suffix(".out"), "w") as out, open(log.with_suffix(".err"), "w") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the case's own process group: torch.compile workers too
            proc.wait()
            rc = None
    stderr = log.with_suffix(".err").read_text(errors="replace")
    return {"rc": rc, "timed_out": rc is None, "seconds": round(time.perf_counter() - start, 1),
            "traceback": "Traceback (most recent call last)" in stderr, "stderr_tail": stderr[-TAIL:]}


def bad_numbers(node, path: str = "") -> dict[str, dict]:
    """Every NaN, infinite or negative number in a JSON tree, by path (list indices as []): count and one value."""
    found: dict[str, dict] = {}

    def walk(n, p):
        if isinstance(n, dict):
            for k, v in n.items():
                walk(v, f"{p}.{k}")
        elif isinstance(n, list):
            for v in n:
                walk(v, p + "[]")
        elif isinstance(n, (int, float)) and not isinstance(n, bool):
            if math.isnan(n) or math.isinf(n) or n < 0:
                entry = found.setdefault(p or ".", {"count": 0, "example": repr(n)})
                entry["count"] += 1

    walk(node, path)
    return found


def report_checks(report: dict, device: str, gpu: str = "") -> dict:
    """What a report says about how the run was captured and attributed (the sweep's columns)."""
    summary = report.get("summary") or {}
    ops = report.get("ops") or []
    name = (report.get("environment") or {}).get("device_name", "")
    over = [op for op in ops if op.get("efficiency", 0) > 1 + 1e-9 and not op.get("above_roof")]
    unmodelled: dict[str, float] = {}
    for op in ops:
        if not op.get("modeled", True):
            unmodelled[op["name"]] = unmodelled.get(op["name"], 0.0) + op.get("time_s", 0.0)
    top = sorted(unmodelled.items(), key=lambda kv: -kv[1])[:5]
    return {
        "device_name": name,
        "device_ok": bool(name) and (device == "cpu" or (bool(gpu) and gpu in name)),
        "bad_numbers": bad_numbers(report),
        "ops": len(ops),
        "over_roof_unflagged": sorted({op["name"] for op in over})[:5],
        "over_roof_unflagged_count": len(over),
        "above_roof_flagged": sum(bool(op.get("above_roof")) for op in ops),
        "attributed_share": summary.get("kernel_time_attributed_share"),
        "kernel_time_s": summary.get("kernel_time_total_s"),
        "op_time_s": summary.get("total_time_s"),
        "unmodelled_share": summary.get("unmodeled_time_share"),
        "unmodelled_ops": sum(not op.get("modeled", True) for op in ops),
        "unmodelled_top": [[n, t] for n, t in top],
        "steps": report.get("steps"),
        "findings": [f.get("title", "") for f in report.get("findings") or []],
    }


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def agreement(profile: dict, trace: dict | None) -> dict:
    """trace's time against profile's: kernel time when both have it (GPU), else the ops' time (CPU traces)."""
    if trace is None:
        return {"trace_agrees": None, "trace_ratio": None, "compared": None}
    key = "kernel_time_s" if profile.get("kernel_time_s") else "op_time_s"
    p, t = profile.get(key), trace.get(key)
    if not p:
        return {"trace_agrees": None, "trace_ratio": None, "compared": key}
    if not t:  # profile timed kernels (or ops) that trace, reading the same file, did not find
        return {"trace_agrees": False, "trace_ratio": t, "compared": key}
    ratio = t / p
    return {"trace_agrees": abs(ratio - 1) <= AGREE, "trace_ratio": round(ratio, 4), "compared": key}


def failed(row: dict) -> list[str]:
    """Why a case counts as broken (empty: it did not break)."""
    why = []
    for stage in ("profile", "trace", "doctor"):
        r = row.get(stage)
        if r is None:
            continue
        if r["timed_out"]:
            why.append(f"{stage} hung")
        elif r["rc"] != 0:
            why.append(f"{stage} exit {r['rc']}")
        elif r["traceback"]:
            why.append(f"{stage} traceback")
    c = row.get("checks")
    if row.get("profile", {}).get("rc") == 0 and c is None:
        why.append("no report.json")
    if c:
        if not c["device_ok"]:
            why.append(f"device {c['device_name']!r}")
        if c["bad_numbers"]:
            why.append("nan/inf/negative: " + ", ".join(list(c["bad_numbers"])[:3]))
        if c["over_roof_unflagged_count"]:
            why.append(f"{c['over_roof_unflagged_count']} ops >100% unflagged")
        traced = row.get("trace_checks") or {}
        if traced.get("bad_numbers"):
            why.append("trace nan/inf/negative: " + ", ".join(list(traced["bad_numbers"])[:3]))
        if row.get("trace_agrees") is False:
            why.append(f"trace/profile {row['trace_ratio']}")
    return why


def run_case(case: Case, out: Path, device: str, ceilings: list[str], scale: float, profile_extra: list[str],
             deadline: float, gpu: str) -> dict:
    """profile, trace, doctor and the checks of one case; every call's limit is cut to what is left before deadline
    (a perf_counter time), so that a late case cannot run the sweep past it."""

    def limit(seconds: float) -> float:
        return max(1.0, min(seconds * scale, deadline - time.perf_counter()))

    script = out / "scripts" / f"{case.name}.py"
    work = out / "cases" / case.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    row: dict = {"case": case.name, "doc": case.doc}
    argv = RL + ["profile", *ceilings, "--device", device, *case.profile_args, *profile_extra,
                 "-o", str(work / "profile"), str(script), device]
    row["profile"] = run(argv, limit(case.timeout_s), work / "profile")
    report = load(work / "profile" / "report.json")
    if report is not None:
        row["checks"] = report_checks(report, device, gpu)
    trace_file = work / "profile" / "trace.json.gz"
    if trace_file.is_file():
        row["trace"] = run(RL + ["trace", *ceilings, "--no-html", "-o", str(work / "trace"), str(trace_file)],
                           limit(60), work / "trace")
        traced = load(work / "trace" / "report.json")
        row["trace_checks"] = None if traced is None else report_checks(traced, device, gpu)
        if row.get("checks"):
            row.update(agreement(row["checks"], row["trace_checks"]))
    if report is not None:
        # a saved report keeps the roofs profile judged it against: doctor takes no --ceilings for it
        row["doctor"] = run(RL + ["doctor", "--findings", "0", "-o", str(work / "doctor"),
                                  str(work / "profile" / "report.json")], limit(60), work / "doctor")
        doctored = load(work / "doctor" / "report.json")
        found = None if doctored is None else doctored.get("findings") or []
        row["doctor_findings"] = None if found is None else [f.get("title", "") for f in found]
    row["broken"] = failed(row)
    tidy(work, broken=bool(row["broken"]))
    return row


def tidy(work: Path, broken: bool) -> None:
    """Keep profile's report.json (gzipped); for a broken case also trace's and doctor's and every stage's
    stdout/stderr. Traces, plots and HTML go (the files that come back from the device are few and capped)."""
    for path in sorted(work.rglob("*"), reverse=True):
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
            continue
        if path.name == "report.json" and (broken or path.parent.name == "profile"):
            with open(path, "rb") as src, gzip.open(path.with_suffix(".json.gz"), "wb") as dst:
                shutil.copyfileobj(src, dst)
            path.unlink()
        elif not (broken and path.suffix in (".err", ".out")):
            path.unlink()


def ceilings_args(args, out: Path) -> tuple[list[str], dict | None]:
    """--ceilings for every case: given, the committed H200 file on an H200, or measured once here first."""
    if args.ceilings:
        return ["--ceilings", args.ceilings], None
    if args.device.startswith("cuda") and H200_CEILINGS.is_file():
        import torch

        if "H200" in torch.cuda.get_device_name(torch.device(args.device)):
            return ["--ceilings", str(H200_CEILINGS)], None
    path = out / "cases" / "ceilings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    stage = run(RL + ["ceilings", "--device", args.device, "--json", str(path)], 300, out / "cases" / "ceilings")
    return (["--ceilings", str(path)] if path.is_file() else []), stage


def cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def table(rows: list[dict]) -> str:
    head = ("| case | profile | s | trace | doctor | attributed | unmodelled (top) | trace/profile | findings "
            "| broken |\n"
            "|---|---|---:|---|---|---:|---|---:|---:|---|")
    lines = [head]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['case']} | skipped: {r['skipped']} | | | | | | | | |")
            continue
        c = r.get("checks") or {}
        rc = lambda s: "-" if r.get(s) is None else ("hung" if r[s]["timed_out"] else str(r[s]["rc"]))  # noqa: E731
        unm = ", ".join(n[:40] for n, _ in c.get("unmodelled_top", [])[:3])
        unm = "-" if not c else "0" if not c["unmodelled_ops"] else (
            f"{c['unmodelled_ops']} ops, {c['unmodelled_share'] or 0:.1%}: {unm}")
        share = c.get("attributed_share")
        lines.append(f"| {r['case']} | {rc('profile')} | {r['profile']['seconds']} | {rc('trace')} | {rc('doctor')} | "
                     f"{'-' if share is None else f'{share:.1%}'} | {unm} | {cell(r.get('trace_ratio'))} | "
                     f"{len(r.get('doctor_findings') or [])} | {'; '.join(r['broken']) or 'ok'} |")
    return "\n".join(lines)


def details(rows: list[dict]) -> str:
    """Per case that ran: why it broke (with the last line of the failing stage's stderr) and the doctor's findings."""
    lines = []
    for r in rows:
        if "skipped" in r:
            continue
        lines.append(f"- **{r['case']}**: {'; '.join(r['broken']) or 'ok'}")
        for stage in ("profile", "trace", "doctor"):
            st = r.get(stage)
            if st and (st["rc"] != 0 or st["traceback"]):
                last = [ln for ln in st["stderr_tail"].splitlines() if ln.strip()][-1:] or ["(no stderr)"]
                lines.append(f"  - {stage} stderr: `{last[0][:300]}`")
        for title in (r.get("doctor_findings") or [])[:5]:
            lines.append(f"  - finding: {title[:160]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--batch", type=int, default=None,
                        help="only the cases of this batch (1: the first 21, 2: the second 14 and 3: the third 19, "
                             "both added 2026-12-02)")
    parser.add_argument("--jobs", type=int, default=None, help="cases at a time (default 4 on cuda, 1 on cpu)")
    parser.add_argument("--ceilings", default=None, help="ceilings JSON for every case")
    parser.add_argument("--budget", type=float, default=330,
                        help="seconds the sweep may take: no case starts in its last 60 s, and every call is cut to "
                             "what is left (default 330)")
    parser.add_argument("--quick", action="store_true",
                        help="profile one step, no warm-up (the test's CPU run: the flow, not the figures)")
    parser.add_argument("--keep", action="store_true", help="leave scripts/ and cases/ unpacked (no cases.tgz)")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiplies every per-case limit")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    wanted = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(wanted) - {c.name for c in CASES})
    if unknown:
        print(f"gpu_sweep: unknown case(s) {', '.join(unknown)}; known: {', '.join(c.name for c in CASES)}",
              file=sys.stderr)
        return 2
    cases = [c for c in CASES if (not wanted or c.name in wanted) and args.batch in (None, c.batch)]
    if not cases:
        print(f"gpu_sweep: no case in batch {args.batch}; batches: {sorted({c.batch for c in CASES})}", file=sys.stderr)
        return 2
    cpu = args.device == "cpu"
    jobs = args.jobs or (1 if cpu else 4)
    (out / "scripts").mkdir(exist_ok=True)
    for case in cases:
        (out / "scripts" / f"{case.name}.py").write_text(case.script())
    import torch

    gpu = torch.cuda.get_device_name(torch.device(args.device)) if not cpu and torch.cuda.is_available() else "cpu"
    start = time.perf_counter()
    ceilings, ceilings_stage = ceilings_args(args, out)

    quick = ["--warmup", "0", "--active", "1"] if args.quick else []

    def one(case: Case) -> dict:
        if cpu and case.gpu_only:
            return {"case": case.name, "doc": case.doc, "skipped": f"GPU only: {case.gpu_only}"}
        if time.perf_counter() - start > args.budget - 60:
            return {"case": case.name, "doc": case.doc, "skipped": f"sweep budget ({args.budget:.0f} s) spent"}
        try:
            row = run_case(case, out, args.device, ceilings, args.timeout_scale, quick, start + args.budget, gpu)
        except Exception as exc:  # the driver's own fault on one case (an odd report) is that case's row
            row = {"case": case.name, "doc": case.doc, "skipped": f"driver error: {type(exc).__name__}: {exc}",
                   "broken": [f"driver error: {exc}"]}
        print(f"[{time.perf_counter() - start:6.1f}s] {case.name}: {'; '.join(row['broken']) or 'ok'}", flush=True)
        return row

    slow_first = sorted(cases, key=lambda c: -c.timeout_s)  # the compiles start early, not in the budget's tail
    with ThreadPoolExecutor(jobs) as pool:
        done = dict(zip([c.name for c in slow_first], pool.map(one, slow_first)))
    rows = [done[c.name] for c in cases]
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "gpu": gpu, "device": args.device,
              "torch_version": torch.__version__, "python": sys.version.split()[0],
              "command": " ".join([Path(PY).name, "benchmarks/gpu_sweep.py",
                                   *(sys.argv[1:] if argv is None else argv)]),
              "jobs": jobs, "ceilings": ceilings,
              "ceilings_stage": ceilings_stage, "seconds": round(time.perf_counter() - start, 1),
              "broken": sum(bool(r.get("broken")) for r in rows), "cases": rows}
    atomic_write_bytes(out / "sweep.json", json.dumps(result, indent=1).encode())
    md = (f"# gpu_sweep {result['date']}: {gpu}, torch {torch.__version__}, {jobs} cases at a time, "
          f"{result['seconds']} s\n\n`{result['command']}`\n\n{details(rows)}\n\n{table(rows)}\n")
    atomic_write_bytes(out / "sweep.md", md.encode())
    if not args.keep:
        with tarfile.open(out / "cases.tgz", "w:gz") as tar:
            for sub in ("scripts", "cases"):
                if (out / sub).is_dir():
                    tar.add(out / sub, arcname=sub)
        for sub in ("scripts", "cases"):
            shutil.rmtree(out / sub, ignore_errors=True)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
