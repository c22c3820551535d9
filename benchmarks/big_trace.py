"""Big-trace benchmark: `roofline trace` against Holistic Trace Analysis' load, side by side in one run, on one
304 MB trace; then a 1 GB trace, and a 256-rank synthetic job merged in 1 and 2 worker processes and on a Dask
LocalCluster of two workers.

1. ``--repeat 30``: the llama training fixture's events repeated 30 times with shifted timestamps, ids and step
   numbers (~304 MB, 1.05 M events). ``--rounds`` alternations of (the whole `roofline trace BIG -o DIR`, HTA's
   ``TraceAnalysis`` load, roofline's load + attribution alone), the first tool swapped each round, so both see
   the same load on a shared machine. Medians, min-max, and the ratio of medians.
2. ``--gb-repeat 100``: the same built 100 times (~1 GB); the whole `roofline trace` once (HTA is not run: it
   needs ~6 GB here). The file is deleted afterwards.
   ``--gzip``: section 1 on the same trace gzipped (torch's trace handler writes .json.gz), both tools.
3. ``--ranks 256``: rank traces made from the small bad-syncs fixture (one per rank: its own distributedInfo, an
   NCCL all-reduce per step, rank 3 a straggler that sleeps before it), merged by `roofline trace rank*.json.gz`
   with ``--jobs 1``, ``--jobs 2`` and ``--cluster`` (a LocalCluster of two single-threaded worker processes,
   started before the timing); ``--heavy-ranks 32``: the same from the llama training fixture, whose ranks take
   ~0.4 s each, so analysis outweighs every fixed cost. The whole command and its rank-analysis phase are timed;
   scaling = jobs-1 time / jobs-2 (cluster) time, beside the machine's own two-process scaling of a pure-Python
   loop measured in the same rounds, and the load average.

Every timed run is a fresh subprocess; its wall time is measured by this process and its peak RSS is wait4's
ru_maxrss (the largest of the process and its children, so HTA's forked parser pool counts). Writes
benchmarks/results/big_trace.json, big_trace_1gb.json and big_trace_ranks.json (the sections run) and prints a table.

    PYTHONPATH=src .venv/bin/python benchmarks/big_trace.py [--rounds 3] [--sections trace,gb,ranks]
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import gzip
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "h200" / "llama_tiny_train_fp16_b2_s256.json.gz"
RANK_FIXTURE = REPO / "tests" / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz"
RESULTS = REPO / "benchmarks" / "results"

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
import json, sys, time
t0 = time.perf_counter()
from roofline.capture.kineto import load_trace
from roofline.analyze.attribution import attribute
t1 = time.perf_counter()
trace = load_trace(sys.argv[1], split=True)
stats = attribute(trace)
t2 = time.perf_counter()
print(json.dumps({"load_s": t2 - t1, "import_s": t1 - t0, "ops": len(trace.ops), "kernels": len(trace.kernels),
                  "steps": len(trace.steps), "attributed_share": stats.share}))
"""

_HTA = """
import json, os, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
path = sys.argv[1]
analysis = TraceAnalysis(trace_files={0: os.path.basename(path)}, trace_dir=os.path.dirname(path))
t2 = time.perf_counter()
print(json.dumps({"load_s": t2 - t1, "import_s": t1 - t0, "events": len(analysis.t.get_trace(0))}))
"""


# Runs the measured command and writes its ru_maxrss (KiB) to argv[1]. Linux starts a child's ru_maxrss at the
# RSS of the process that spawned it (the spawner's high-water mark survives exec), so the measured command is
# spawned by this small interpreter, never by the benchmark itself with its GB of built trace.
_LAUNCHER = """
import os, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_child(argv: list[str]) -> dict:
    """Run ``argv``: wall time seen from here, peak RSS from wait4 in a small launcher (the command and its
    descendants: HTA's parser pool counts), and the JSON its last stdout line holds, if any."""
    import tempfile

    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        launch = [sys.executable, "-c", _LAUNCHER, rss.name, *argv]
        pid = os.posix_spawn(launch[0], launch, env, file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                                                                    (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        peak = int(rss.read() or 0) * 1024
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if code != 0:
        raise SystemExit(f"benchmark child failed ({code}): {' '.join(argv[:6])}\n{stderr[-2000:]}")
    result: dict = {}
    lines = stdout.strip().splitlines()
    if lines:
        try:
            result = json.loads(lines[-1])
        except ValueError:
            result = {}
    if not isinstance(result, dict):
        result = {}
    result["wall_s"] = wall
    result["peak_rss_bytes"] = peak
    result["cpu_s"] = usage.ru_utime + usage.ru_stime
    return result


def roofline_trace_argv(paths: list[str], out: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "roofline", "trace", *paths, "-o", out, *extra]


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def gzipped_copy(path: Path, rebuild: bool = False) -> Path:
    """``path`` gzipped beside it (level 6, gzip's default; torch's trace handler writes .json.gz)."""
    gz = path.with_name(path.name + ".gz")
    if rebuild or not gz.exists() or gz.stat().st_mtime < path.stat().st_mtime:
        tmp = gz.with_suffix(".tmp")
        with open(path, "rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, gz)
    return gz


def bench_trace(args) -> dict:
    sidecar = args.trace.with_name(args.trace.name + ".meta.json")
    if args.rebuild or not args.trace.exists() or not sidecar.exists():
        sidecar.write_text(json.dumps(build_big_trace(args.trace, args.repeat)))
    built = json.loads(sidecar.read_text())
    read = gzipped_copy(args.trace, args.rebuild) if args.gzip else args.trace
    out = f"/tmp/roofline-big-{os.getpid()}"
    runs: dict[str, list[dict]] = {"roofline_trace_command": [], "hta_load": [], "roofline_load": []}
    load_before = os.getloadavg()
    for round_ in range(args.rounds):
        order = ["roofline_trace_command", "hta_load"] if round_ % 2 == 0 else ["hta_load", "roofline_trace_command"]
        for tool in order + ["roofline_load"]:
            if tool == "roofline_trace_command":
                r = run_child(roofline_trace_argv([str(read)], out))
                r["load_s"] = r["wall_s"]
            elif tool == "hta_load":
                r = run_child([sys.executable, "-c", _HTA, str(read)])
            else:
                r = run_child([sys.executable, "-c", _OURS, str(read)])
            r["round"] = round_
            r["load_average"] = os.getloadavg()[0]
            runs[tool].append(r)
            print(f"round {round_} {tool}: {r['load_s']:.1f} s (wall {r['wall_s']:.1f}), "
                  f"{r['peak_rss_bytes'] / 2**20:.0f} MB", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    summary = {tool: {"time_s": spread([r["load_s"] for r in rs]),
                      "wall_s": spread([r["wall_s"] for r in rs]),
                      "peak_rss_bytes": spread([r["peak_rss_bytes"] for r in rs])} for tool, rs in runs.items()}
    med = {tool: (s["time_s"]["median"], s["peak_rss_bytes"]["median"]) for tool, s in summary.items()}
    hta_t, hta_m = med["hta_load"]
    per_round = [h["load_s"] / c["load_s"] for h, c in zip(runs["hta_load"], runs["roofline_trace_command"])]
    return {
        "trace": {"path": str(read), "bytes": built["bytes"], "events": built["events"],
                  "file_bytes": read.stat().st_size, "gzip": bool(args.gzip),
                  "built_from": str(FIXTURE.relative_to(REPO)), "repeat": args.repeat},
        "rounds": args.rounds,
        "load_average_before": load_before,
        "summary": summary,
        "ratios": {
            "hta_load_time_over_roofline_trace_command": hta_t / med["roofline_trace_command"][0],
            "hta_peak_rss_over_roofline_trace_command": hta_m / med["roofline_trace_command"][1],
            "hta_load_time_over_roofline_load": hta_t / med["roofline_load"][0],
            "hta_peak_rss_over_roofline_load": hta_m / med["roofline_load"][1],
            "per_round_time_hta_over_command": per_round,
        },
        "runs": runs,
        "tools": {"roofline_trace_command": "roofline trace BIG -o DIR (whole command: load, attribution, counting, "
                                            "roofline, doctor, report.json, roofline.png, report.html; wall time of "
                                            "the process, imports included; forked children read the trace's second "
                                            "half, replay its memory, run the doctor and draw the PNG: peak RSS is "
                                            "the largest of the process and its children)",
                  "hta_load": "HolisticTraceAnalysis 0.5.0 TraceAnalysis(trace_files={0: ...}) (the load call's "
                              "own time, imports excluded; peak RSS of the process and its parser pool)",
                  "roofline_load": "roofline.capture.kineto.load_trace(split=True, as the command reads it) + "
                                   "analyze.attribution.attribute (the load call's own time, imports excluded)"},
    }


def bench_gb(args) -> dict:
    path = args.trace.with_name("roofline_gb_trace.json")
    free = shutil.disk_usage(path.parent).free
    if free < 4 << 30:
        raise SystemExit(f"only {free >> 30} GiB free under {path.parent}: the 1 GB section needs 4")
    built = build_big_trace(path, args.gb_repeat)
    out = f"/tmp/roofline-gb-{os.getpid()}"
    try:
        runs = []
        for round_ in range(args.gb_rounds):
            r = run_child(roofline_trace_argv([str(path)], out))
            r["load_average"] = os.getloadavg()[0]
            runs.append(r)
            print(f"1 GB round {round_}: {r['wall_s']:.1f} s, {r['peak_rss_bytes'] / 2**20:.0f} MB", flush=True)
    finally:
        path.unlink(missing_ok=True)
        shutil.rmtree(out, ignore_errors=True)
    return {"trace": {"bytes": built["bytes"], "events": built["events"], "repeat": args.gb_repeat,
                      "built_from": str(FIXTURE.relative_to(REPO))},
            "tool": "roofline trace GB -o DIR (whole command, wall time of the process)",
            "wall_s": spread([r["wall_s"] for r in runs]),
            "peak_rss_bytes": spread([r["peak_rss_bytes"] for r in runs]),
            "targets": {"wall_s": 60, "peak_rss_bytes": 2 << 30}}


def build_rank_job(out_dir: Path, ranks: int, straggler: int = 3, fixture: Path = RANK_FIXTURE) -> list[str]:
    """One trace per rank from ``fixture``: its distributedInfo, an NCCL all-reduce (4 MiB of fp32) ending each
    step; rank ``straggler`` sleeps on the host first (2 ms, or a quarter of the median step if that is longer),
    so its all-reduce is short and the others wait."""
    data = json.loads(gzip.decompress(fixture.read_bytes()))
    events = data.pop("traceEvents")
    steps = [e for e in events if e.get("cat") == "user_annotation" and str(e.get("name")).startswith("ProfilerStep#")]
    steps = sorted({e["name"]: e for e in steps}.values(), key=lambda e: e["ts"])
    pid = next(e["pid"] for e in events if e.get("cat") == "kernel")
    host_pid, host_tid = steps[0]["pid"], steps[0]["tid"]
    sleep_us = max(2000.0, round(0.25 * statistics.median(e["dur"] for e in steps)))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        extra = []
        for n, step in enumerate(steps):
            end = step["ts"] + step["dur"]
            slow = rank == straggler
            comm_us = 300.0 if slow else sleep_us + 300.0
            if slow:
                extra.append({"ph": "X", "cat": "python_function", "name": "<built-in function sleep>",
                              "pid": host_pid, "tid": host_tid, "ts": end - sleep_us - 400.0, "dur": sleep_us,
                              "args": {}})
            extra.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": pid,
                          "tid": 13, "ts": end - comm_us - 10.0, "dur": comm_us,
                          "args": {"device": 0, "stream": 13, "correlation": 9_000_000 + n,
                                   "Collective name": "allreduce", "In msg nelems": 1 << 20,
                                   "Out msg nelems": 1 << 20, "Group size": ranks, "dtype": "Float"}})
        payload = dict(data, traceEvents=events + extra,
                       distributedInfo={"backend": "nccl", "rank": rank, "world_size": ranks})
        path = out_dir / f"rank{rank}.json.gz"
        path.write_bytes(gzip.compress(json.dumps(payload).encode(), compresslevel=1))
        paths.append(str(path))
    return paths


# The real CLI (roofline.cli.main, as `python -m roofline` runs it) with the rank-analysis phase timed: every rank
# analysed and its summary back in this process (distributed/fanout.summarize_all), printed as JSON last.
_TIMED_CLI = """
import json, sys, time
from roofline.distributed import fanout
phase = {}
summarize_all = fanout.summarize_all
def timed(*args, **kwargs):
    start = time.perf_counter()
    try:
        return summarize_all(*args, **kwargs)
    finally:
        phase["rank_analysis_s"] = time.perf_counter() - start
fanout.summarize_all = timed
from roofline.cli import main
code = main(sys.argv[1:])
print(json.dumps(phase))
sys.exit(code)
"""

# What the machine itself gives two processes at the moment: a fixed amount of pure-Python integer work in one
# process, then split between two (forked) processes. Its ratio is the ceiling for any CPU-bound work here.
_CPU_REFERENCE = """
import json, os, sys, time
def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
n = 6_000_000
start = time.perf_counter()
work(n)
one = time.perf_counter() - start
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    work(n // 2)
    os._exit(0)
work(n // 2)
os.waitpid(pid, 0)
two = time.perf_counter() - start
print(json.dumps({"one_process_s": one, "two_processes_s": two, "scaling": one / two}))
"""


def machine_cpu_s() -> float:
    """CPU seconds every CPU of the machine has been busy since boot, whoever ran (/proc/stat)."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def processes_cpu_s(pids: list[int]) -> float:
    """CPU seconds of these processes so far (/proc/PID/stat utime + stime), this one's from os.times()."""
    total = 0.0
    for pid in pids:
        if pid == os.getpid():
            t = os.times()
            total += t.user + t.system
            continue
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def wait_for_quiet(max_wait_s: float, ours: list[int], busy_cpus: float = 0.15) -> dict:
    """Wait (at most ``max_wait_s``) for a second in which other processes kept less than ``busy_cpus`` CPUs busy;
    what was waited and the last second's figure."""
    waited, others = 0.0, 0.0
    while True:
        machine, mine = machine_cpu_s(), processes_cpu_s(ours)
        time.sleep(1.0)
        others = max((machine_cpu_s() - machine) - (processes_cpu_s(ours) - mine), 0.0)
        waited += 1.0
        if others < busy_cpus or waited >= max_wait_s:
            return {"waited_s": waited, "other_cpus_before": others}


def timed_cli_argv(paths: list[str], out: str, *extra: str) -> list[str]:
    return [sys.executable, "-c", _TIMED_CLI, "trace", *paths, "-o", out, *extra]


QUIET_OTHER_CPUS = 0.1


def start_cluster():
    """A LocalCluster of two single-threaded worker processes, warmed (roofline imported), and the pids whose CPU
    is ours (its workers, this process with its scheduler)."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=40)
    with Client(cluster.scheduler_address) as client:
        client.run(__import__, "roofline.distributed.fanout")
        pids = [os.getpid(), *client.run(os.getpid).values()]
    return cluster, pids


def bench_rank_job(name: str, paths: list[str], rounds: int, modes: dict[str, list[str]], out: str,
                   quiet_wait_s: float, retry_disturbed: int = 0) -> dict:
    """``rounds`` alternations of the modes (order reversed every other round), each a fresh `roofline trace`;
    with the machine's own two-process scaling measured between the modes of every round. A cluster mode's
    LocalCluster is started (and warmed) before its run and closed after it, so its idle processes never share
    the machine with the other modes' runs. Each run records the CPUs other processes kept busy meanwhile (the
    machine's busy time less the command's, its pool's, the cluster's and this process's), so a run disturbed by
    someone else's job shows as such; with ``retry_disturbed``, such a run is made again (up to that many times)
    and the attempts kept beside the run that counts."""
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    cpu_reference = []
    merged: dict = {}
    for round_ in range(rounds):
        order = list(modes.items()) if round_ % 2 == 0 else list(reversed(modes.items()))
        for mode, extra in order:
            cluster, ours = start_cluster() if "{cluster}" in extra else (None, [os.getpid()])
            if cluster is not None:
                extra = [cluster.scheduler_address if a == "{cluster}" else a for a in extra]
            disturbed = []
            try:
                for attempt in range(retry_disturbed + 1):
                    quiet = wait_for_quiet(quiet_wait_s, ours) if quiet_wait_s else {}
                    load_before = os.getloadavg()[0]
                    machine, mine = machine_cpu_s(), processes_cpu_s(ours)
                    r = run_child(timed_cli_argv(paths, out, "--no-html", *extra))
                    ours_cpu = processes_cpu_s(ours) - mine
                    r["other_cpus"] = max(machine_cpu_s() - machine - r["cpu_s"] - ours_cpu, 0.0) / r["wall_s"]
                    r["cluster_and_benchmark_cpu_s"] = ours_cpu
                    r["load_average_before"] = load_before
                    r["load_average_after"] = os.getloadavg()[0]
                    r["round"] = round_
                    r.update(quiet)
                    if r["other_cpus"] < QUIET_OTHER_CPUS or attempt == retry_disturbed:
                        break
                    disturbed.append(r)
                    print(f"{name} round {round_} {mode}: {r['wall_s']:.2f} s, others kept {r['other_cpus']:.2f} "
                          "CPUs busy: run again", flush=True)
            finally:
                if cluster is not None:
                    cluster.close()
            r["disturbed_attempts"] = disturbed
            runs[mode].append(r)
            print(f"{name} round {round_} {mode}: {r['wall_s']:.2f} s (rank analysis {r['rank_analysis_s']:.2f} s), "
                  f"others kept {r['other_cpus']:.2f} CPUs busy, load {load_before:.2f}", flush=True)
            report = json.loads((Path(out) / "report.json").read_text())
            merged[mode] = _merged_digest(report)
        cpu_reference.append(run_child([sys.executable, "-c", _CPU_REFERENCE]))
    wall = {m: spread([r["wall_s"] for r in rs]) for m, rs in runs.items()}
    phase = {m: spread([r["rank_analysis_s"] for r in rs]) for m, rs in runs.items()}
    others = [m for m in modes if m != "jobs_1"]
    loads = [r[k] for rs in runs.values() for r in rs for k in ("load_average_before", "load_average_after")]
    quiet_runs = {m: [r for r in rs if r["other_cpus"] < QUIET_OTHER_CPUS] for m, rs in runs.items()}
    quiet = None
    if all(quiet_runs.values()):
        qw = {m: statistics.median(r["wall_s"] for r in rs) for m, rs in quiet_runs.items()}
        qp = {m: statistics.median(r["rank_analysis_s"] for r in rs) for m, rs in quiet_runs.items()}
        quiet = {"other_cpus_below": QUIET_OTHER_CPUS, "runs": {m: len(rs) for m, rs in quiet_runs.items()},
                 "wall_s": qw, "rank_analysis_s": qp,
                 "scaling_whole_command": {f"jobs_1_over_{m}": qw["jobs_1"] / qw[m] for m in others},
                 "scaling_rank_analysis": {f"jobs_1_over_{m}": qp["jobs_1"] / qp[m] for m in others}}
    return {
        "ranks": len(paths),
        "wall_s": wall,
        "rank_analysis_s": phase,
        "scaling_whole_command": {f"jobs_1_over_{m}": wall["jobs_1"]["median"] / wall[m]["median"] for m in others},
        "scaling_rank_analysis": {f"jobs_1_over_{m}": phase["jobs_1"]["median"] / phase[m]["median"] for m in others},
        "machine_two_process_scaling": spread([c["scaling"] for c in cpu_reference]),
        "quiet_runs_only": quiet,
        "other_cpus_busy": {m: spread([r["other_cpus"] for r in rs]) for m, rs in runs.items()},
        "cpu_s": {m: spread([r["cpu_s"] + r["cluster_and_benchmark_cpu_s"] for r in rs]) for m, rs in runs.items()},
        "load_average_1min": {"min": min(loads), "max": max(loads), "median": statistics.median(loads)},
        "peak_rss_bytes": {m: spread([r["peak_rss_bytes"] for r in rs]) for m, rs in runs.items()},
        "merged": merged,
        "merged_identical": all(merged[m] == merged["jobs_1"] for m in merged),
        "runs": runs,
        "cpu_reference_runs": cpu_reference,
    }


def _merged_digest(report: dict) -> dict:
    """What must not depend on where the ranks were analysed: the rank table, stragglers, the collectives."""
    dist = report["distributed"]
    return {"ranks": len(report["ranks"]), "stragglers": [s["rank"] for s in dist["stragglers"]],
            "world_size": report["environment"]["world_size"],
            "exposed_communication_s": [r["exposed_communication_s"] for r in report["ranks"]],
            "busy_time_s": [r["busy_time_s"] for r in report["ranks"]],
            "collectives": dist["collectives"]}


def bench_ranks(args) -> dict:
    job = Path(f"/tmp/roofline-ranks-{os.getpid()}")
    jobs = {f"bad_syncs_{args.ranks}": (RANK_FIXTURE, args.ranks)}
    if args.heavy_ranks:
        jobs[f"llama_train_{args.heavy_ranks}"] = (FIXTURE, args.heavy_ranks)
    out = str(job / "merged")
    os.environ["PYTHONPATH"] = str(REPO / "src")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # children use .pyc files, as an installed package does
    modes = {"jobs_1": ["--jobs", "1"], "jobs_2": ["--jobs", "2"], "cluster_2_workers": ["--cluster", "{cluster}"]}
    results = {}
    try:
        for name, (fixture, ranks) in jobs.items():
            paths = build_rank_job(job / name, ranks, fixture=fixture)
            results[name] = {"rank_trace_from": str(fixture.relative_to(REPO)), "rank_trace_bytes": 
                             os.path.getsize(paths[0]),
                             **bench_rank_job(name, paths, args.rank_rounds, modes, out, args.quiet_wait,
                                              args.retry_disturbed)}
            shutil.rmtree(job / name, ignore_errors=True)
    finally:
        shutil.rmtree(job, ignore_errors=True)
    return {"jobs": results, "rounds": args.rank_rounds,
            "tool": ("roofline trace rank*.json.gz -o DIR --no-html with --jobs 1 | --jobs 2 | --cluster ADDRESS (a "
                     "LocalCluster of 2 single-threaded worker processes, started and warmed (roofline imported) "
                     "before each cluster run and closed after it, its scheduler in the benchmark's process), run as "
                     "roofline.cli.main in a fresh interpreter with .pyc files. wall_s: the process's wall time "
                     "(interpreter start, imports, ranks, merge, doctor, report.json, console output); "
                     "rank_analysis_s: distributed/fanout.summarize_all inside it (every rank analysed and its "
                     "summary back in the command's process). Scaling: jobs-1 median / the mode's median "
                     "(quiet_runs_only: the same over the runs during which other processes kept < 0.1 CPUs busy, "
                     "when every mode has one). machine_two_process_scaling: a pure-Python loop in 1 process vs split "
                     "over 2, once per round (the ceiling the shared 2-core machine gave). other_cpus_busy: CPUs "
                     "other processes kept busy during each run (/proc/stat's busy time less the command's, its "
                     "pool's, the cluster workers' and the benchmark's own). cpu_s: the command's, its pool's, the "
                     "cluster workers' and the benchmark's (scheduler) CPU time. "
                     "Peak RSS is the command's and its pool's, not the cluster workers'.")}


def _machine() -> dict:
    """Where the sitting ran: the ratio to HTA moves with the host (HTA's pandas work and roofline's two
    processes gain differently from a faster core), so the CPU model is recorded beside the figures."""
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "cpu_model": _cpu_model(), "load_average": os.getloadavg()}


def _cpu_model() -> str | None:
    """The CPU's model name as /proc/cpuinfo gives it (Linux), with its MHz at this moment; None elsewhere."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    name = fields.get("model name")
    return f"{name} ({fields['cpu MHz']} MHz)" if name and fields.get("cpu MHz") else name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="trace,gb,ranks", help="comma-separated: trace, gb, ranks")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trace", type=Path, default=Path("/tmp/roofline_big_trace.json"))
    parser.add_argument("--rebuild", action="store_true", help="rebuild the trace even if it exists")
    parser.add_argument("--gzip", action="store_true",
                        help="the trace section reads the trace gzipped (level 6, beside it), both tools; results in "
                             "big_trace_gz.json")
    parser.add_argument("--gb-repeat", type=int, default=100)
    parser.add_argument("--gb-rounds", type=int, default=1)
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--heavy-ranks", type=int, default=32,
                        help="ranks of a second job made from the llama training fixture (~0.4 s a rank); 0: none")
    parser.add_argument("--rank-rounds", type=int, default=3)
    parser.add_argument("--quiet-wait", type=float, default=0,
                        help="before each rank run, wait up to this many seconds for a second in which other "
                             "processes keep < 0.15 CPUs busy (a shared machine); 0: do not wait")
    parser.add_argument("--retry-disturbed", type=int, default=0,
                        help="make a rank run again (up to N times) when other processes kept >= 0.1 CPUs busy "
                             "during it; every attempt is kept in the JSON")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    command = " ".join(["python", "benchmarks/big_trace.py", *(argv if argv is not None else sys.argv[1:])])
    from roofline.io import atomic_write_text

    # HTA runs from site-packages, whose modules pip compiled at install; roofline runs from src/, where an
    # environment with PYTHONDONTWRITEBYTECODE (this machine's) would recompile every module in every timed run.
    compileall.compile_dir(str(REPO / "src" / "roofline"), quiet=1)
    sections = {"trace": (bench_trace, "big_trace_gz.json" if args.gzip else "big_trace.json"),
                "gb": (bench_gb, "big_trace_1gb.json"),
                "ranks": (bench_ranks, "big_trace_ranks.json")}
    results = {}
    for name in args.sections.split(","):
        run, file_name = sections[name]
        date = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        result = {"date": date, "machine": _machine(), "command": command, **run(args)}
        atomic_write_text(args.out_dir / file_name, json.dumps(result, indent=2) + "\n")
        results[name] = result
    print(_table(results))
    return 0


def _table(results: dict) -> str:
    mb = 1 << 20
    lines = []
    if "trace" in results:
        t = results["trace"]
        packed = f" (gzipped: {t['trace']['file_bytes'] / 1e6:.0f} MB)" if t["trace"].get("gzip") else ""
        lines.append(f"{t['trace']['bytes'] / 1e6:.0f} MB trace{packed}, {t['trace']['events']} events, "
                     f"{t['rounds']} alternating rounds (median, min-max):")
        for tool, s in t["summary"].items():
            ts, m = s["time_s"], s["peak_rss_bytes"]
            lines.append(f"  {tool:24s} {ts['median']:6.1f} s ({ts['min']:.1f}-{ts['max']:.1f})  "
                         f"{m['median'] / mb:6.0f} MB ({m['min'] / mb:.0f}-{m['max'] / mb:.0f})")
        r = t["ratios"]
        lines.append(f"  HTA load / roofline trace: time {r['hta_load_time_over_roofline_trace_command']:.2f}x, "
                     f"memory {r['hta_peak_rss_over_roofline_trace_command']:.2f}x; HTA load / roofline load: time "
                     f"{r['hta_load_time_over_roofline_load']:.1f}x, memory {r['hta_peak_rss_over_roofline_load']:.1f}x")
    if "gb" in results:
        g = results["gb"]
        lines.append(f"{g['trace']['bytes'] / 1e9:.2f} GB trace: roofline trace {g['wall_s']['median']:.1f} s, "
                     f"{g['peak_rss_bytes']['median'] / mb:.0f} MB (targets 60 s, 2048 MB)")
    if "ranks" in results:
        for name, k in results["ranks"]["jobs"].items():
            w, p = k["wall_s"], k["rank_analysis_s"]
            lines.append(f"{name} ({k['ranks']} ranks), median (min-max) of {results['ranks']['rounds']} rounds, "
                         f"load {k['load_average_1min']['min']:.1f}-{k['load_average_1min']['max']:.1f}:")
            for mode in w:
                lines.append(f"  {mode:18s} command {w[mode]['median']:6.2f} s ({w[mode]['min']:.2f}-"
                             f"{w[mode]['max']:.2f})  rank analysis {p[mode]['median']:6.2f} s ({p[mode]['min']:.2f}-"
                             f"{p[mode]['max']:.2f})")
            for key, value in k["scaling_whole_command"].items():
                lines.append(f"  scaling {key}: command {value:.2f}x, rank analysis "
                             f"{k['scaling_rank_analysis'][key]:.2f}x")
            m = k["machine_two_process_scaling"]
            busy = ", ".join(f"{mode} {v['median']:.2f}" for mode, v in k["other_cpus_busy"].items())
            lines.append(f"  machine's own 2-process scaling {m['median']:.2f}x ({m['min']:.2f}-{m['max']:.2f}); "
                         f"CPUs others kept busy (median): {busy}; merged reports identical: {k['merged_identical']}")
            q = k["quiet_runs_only"]
            if q:
                scal = ", ".join(f"{key} command {v:.2f}x, rank analysis {q['scaling_rank_analysis'][key]:.2f}x"
                                 for key, v in q["scaling_whole_command"].items())
                lines.append(f"  runs while others kept < {q['other_cpus_below']} CPUs busy ({q['runs']}): {scal}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    raise SystemExit(main())
