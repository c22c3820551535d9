"""Where does a host-bound step's level move from? (issue 21: the ETE's misses are host-bound rows)

    PYTHONPATH=src python3 benchmarks/host_level_probe.py OUT [--seconds 60] [--workloads NAME,...]

On the H200 the host-bound rows of benchmarks/ete.py (mobilenet_v3_small, llama-tiny bf16, BERT fp16, HF Llama
bf16) moved between levels up to 2x apart from one 50 ms timing to the next, while device-bound rows stayed within
1% and host_stability.py's loops (tiny ops, pure Python) within 4-5%. Two candidate causes can be told apart with
a clock beside each timing:
- the GPU's clock: a host-bound step leaves the GPU mostly idle, and if the driver lowers its SM clock the kernels
  take longer and may end up setting the step's pace;
- the CPU: the host itself runs slower (another tenant, frequency), which a pure-Python probe timed just before
  each window shows.
The workloads are ete.py's own (same builders, batch, sequence, dtype). Each window times one workload as ete.py
does (2 untimed steps, then the median of enough steps to span 50 ms), alternating with a window of a device-bound
workload (as ete.py's alternation does). nvidia-smi samples the SM and memory clocks, power and performance state
every 20 ms in a separate process; each window gets the mean of the samples inside it. A pure-Python loop of a
fixed size is timed right before each window (the host's speed then). Writes OUT/host_level_probe.json and
OUT/host_level_probe.md and prints the table last. Needs CUDA and nvidia-smi; on a CPU-only machine it times the
CPU workloads with no clock column (a smoke test of the script).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402

from ete import cases, prepare  # noqa: E402
from ete_common import iqr, median  # noqa: E402
from roofline.analyze.live import time_steps  # noqa: E402
from roofline.io import atomic_write_text  # noqa: E402

HOST_BOUND = ("mobilenet_v3_small forward", "llama-tiny forward bf16", "hf bert forward fp16")
DEVICE_BOUND = "hf gpt2 forward"
WINDOW_S = 0.05
SMI_FIELDS = "timestamp,clocks.sm,clocks.mem,power.draw,pstate,utilization.gpu"


def python_probe_us(n: int = 20000) -> float:
    """Microseconds per iteration of a fixed pure-Python loop: the host's speed at this moment."""
    t0 = time.perf_counter()
    acc = 0
    for i in range(n):
        acc += i & 7
    return (time.perf_counter() - t0) / n * 1e6


def start_smi(path: Path) -> subprocess.Popen | None:
    if not shutil.which("nvidia-smi"):
        return None
    out = path.open("w")
    return subprocess.Popen(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits",
                             "-lms", "20"], stdout=out, stderr=subprocess.DEVNULL)


def read_smi(path: Path) -> list[dict]:
    rows = []
    if not path.exists():
        return rows
    for rec in csv.reader(io.StringIO(path.read_text())):
        if len(rec) < 6:
            continue
        try:
            stamp = dt.datetime.strptime(rec[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append({"t": stamp, "sm_mhz": float(rec[1]), "mem_mhz": float(rec[2]),
                         "power_w": float(rec[3]) if rec[3].strip() not in ("", "[N/A]") else None,
                         "pstate": rec[4].strip(), "util": float(rec[5])})
        except ValueError:
            continue
    return rows


def window_clock(samples: list[dict], t0: float, t1: float) -> dict:
    """Mean SM/memory clock of the samples inside [t0, t1] (wall clock), else of the nearest sample."""
    inside = [s for s in samples if t0 <= s["t"] <= t1]
    if not inside and samples:
        inside = [min(samples, key=lambda s: abs(s["t"] - (t0 + t1) / 2))]
    if not inside:
        return {}
    return {"sm_mhz": sum(s["sm_mhz"] for s in inside) / len(inside),
            "mem_mhz": sum(s["mem_mhz"] for s in inside) / len(inside),
            "pstates": sorted({s["pstate"] for s in inside}), "samples": len(inside)}


def _corr(xs: list[float], ys: list[float]) -> float | None:
    pairs = [(x, y) for x, y in zip(xs, ys) if x is not None and y is not None]
    if len(pairs) < 4:
        return None
    mx = sum(p[0] for p in pairs) / len(pairs)
    my = sum(p[1] for p in pairs) / len(pairs)
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    syy = sum((y - my) ** 2 for _, y in pairs)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else None


def _split(windows: list[dict], key: str) -> tuple[float | None, float | None]:
    """Median step time in the windows whose `key` is at or below its median, and in those above."""
    vals = [w[key] for w in windows if w.get(key) is not None]
    if len(vals) < 4:
        return None, None
    cut = median(vals)
    low = [w["step_s"] for w in windows if w.get(key) is not None and w[key] <= cut]
    high = [w["step_s"] for w in windows if w.get(key) is not None and w[key] > cut]
    return (median(low) if low else None), (median(high) if high else None)


def summarise(name: str, windows: list[dict]) -> dict:
    steps = [w["step_s"] for w in windows]
    lo_clk, hi_clk = _split(windows, "sm_mhz")
    fast_host, slow_host = _split(windows, "probe_us")
    return {"workload": name, "windows": len(windows), "median_s": median(steps), "iqr_s": iqr(steps),
            "min_s": min(steps), "max_s": max(steps),
            "corr_sm_clock": _corr([w.get("sm_mhz") for w in windows], steps),
            "corr_python_probe": _corr([w.get("probe_us") for w in windows], steps),
            "median_s_low_sm_clock": lo_clk, "median_s_high_sm_clock": hi_clk,
            "median_s_fast_host": fast_host, "median_s_slow_host": slow_host,
            "sm_mhz_range": [min((w["sm_mhz"] for w in windows if "sm_mhz" in w), default=None),
                             max((w["sm_mhz"] for w in windows if "sm_mhz" in w), default=None)]}


def _f(x, scale=1e3, fmt="{:.3g}") -> str:
    return "—" if x is None else fmt.format(x * scale)


def render(result: dict) -> str:
    lines = [f"# Host level probe on {result['device']} ({result['date']})", "",
             f"{result['seconds']:.0f} s of alternating 50 ms windows (ete.py's timing: 2 untimed steps, then the "
             f"median of enough steps to span 50 ms), each host-bound workload's window followed by one of "
             f"{result['device_bound'] or 'no device-bound workload'}; SM clock = mean of nvidia-smi's 20 ms samples "
             "inside the window; python probe = "
             "us per iteration of a fixed pure-Python loop timed just before the window. corr = Pearson "
             "correlation of the window's step time with that figure over the windows.", "",
             "| workload | windows | median ms (IQR) | min-max ms | corr SM clock | ms at low / high SM clock | "
             "SM MHz range | corr python probe | ms at fast / slow host |",
             "|---|---:|---|---|---:|---|---|---:|---|"]
    for s in result["summary"]:
        rng = s["sm_mhz_range"]
        lines.append(
            f"| {s['workload']} | {s['windows']} | {_f(s['median_s'])} ({_f(s['iqr_s'])}) | "
            f"{_f(s['min_s'])}-{_f(s['max_s'])} | {_f(s['corr_sm_clock'], 1, '{:+.2f}')} | "
            f"{_f(s['median_s_low_sm_clock'])} / {_f(s['median_s_high_sm_clock'])} | "
            f"{'—' if rng[0] is None else f'{rng[0]:.0f}-{rng[1]:.0f}'} | "
            f"{_f(s['corr_python_probe'], 1, '{:+.2f}')} | "
            f"{_f(s['median_s_fast_host'])} / {_f(s['median_s_slow_host'])} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--workloads", default=",".join(HOST_BOUND + (DEVICE_BOUND,)))
    args = parser.parse_args()
    device = torch.device(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    wanted = [w for w in args.workloads.split(",") if w]
    workloads, _ = cases(device)
    by_name = {c.name: c for c in workloads}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        print(f"host_level_probe: unknown workload(s) {unknown}; known: {sorted(by_name)}", file=sys.stderr)
        return 2
    lives = {w: prepare(by_name[w], device) for w in wanted}
    heavy = DEVICE_BOUND if DEVICE_BOUND in lives else None
    probed = [w for w in wanted if w != heavy]
    counts: dict[str, int] = {}

    def timed(name: str) -> tuple[float, float, float]:
        live = lives[name]
        for _ in range(2):
            live.step()
        t0 = time.time()
        step_s = time_steps(live.step, device, counts.get(name, 12)).median_s
        counts.setdefault(name, max(12, min(120, round(WINDOW_S / max(step_s, 1e-9)))))
        return step_s, t0, time.time()

    for name in wanted:
        timed(name)
    smi_path = args.out / "nvidia_smi.csv"
    smi = start_smi(smi_path) if device.type == "cuda" else None
    windows: dict[str, list[dict]] = {w: [] for w in wanted}
    began = time.perf_counter()
    try:
        while time.perf_counter() - began < args.seconds:
            for name in probed:
                probe = python_probe_us()
                step_s, t0, t1 = timed(name)
                windows[name].append({"step_s": step_s, "t0": t0, "t1": t1, "probe_us": probe})
                if heavy:
                    step_s, t0, t1 = timed(heavy)
                    windows[heavy].append({"step_s": step_s, "t0": t0, "t1": t1, "probe_us": None})
    finally:
        if smi:
            smi.terminate()
            smi.wait(timeout=10)
    samples = read_smi(smi_path)
    for ws in windows.values():
        for w in ws:
            w.update({k: v for k, v in window_clock(samples, w["t0"], w["t1"]).items()})
    result = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "command": " ".join(sys.argv), "seconds": args.seconds, "device_bound": heavy,
              "smi_samples": len(samples),
              "summary": [summarise(n, ws) for n, ws in windows.items() if ws], "windows": windows}
    atomic_write_text(args.out / "host_level_probe.json", json.dumps(result, indent=1))
    text = render(result)
    atomic_write_text(args.out / "host_level_probe.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
