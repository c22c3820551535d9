"""How steady is this machine's host, and does pinning the process steady it? (issue 21's host level)

    PYTHONPATH=src python3 benchmarks/host_stability.py OUT [--rounds 30] [--window-s 0.2]

The ETE's misses on the lent H200 are host-bound steps whose host time moved by up to 2x within seconds while the
load average stayed under 1. One process times two host-bound loops in short windows, alternating the process's CPU
affinity between windows: `free` (every CPU the process may use), `node` (the CPUs local to the GPU, from sysfs,
or the first NUMA node on a CPU-only machine) and `core` (one CPU of that set). Loops: `dispatch` (tiny tensor ops
on the device, one synchronize a window: the eager model's host path) and `python` (a pure-Python loop: the
interpreter alone). Per mode and loop: median, interquartile range and min-max of the microseconds per iteration
over the rounds, and the spread (IQR / median); the CPU each window ran on is recorded (from /proc/self/stat), with
the machine's topology (lscpu, numactl, nvidia-smi topo) when those tools exist. Writes OUT/host_stability.json and
OUT/host_stability.md and prints the table last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _parse_cpulist(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _local_cpus(device: torch.device, allowed: set[int]) -> tuple[list[int], str]:
    """The CPUs nearest the GPU (its PCI device's local_cpulist), else those of NUMA node 0, within `allowed`."""
    candidates: list[tuple[Path, str]] = []
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        bus = getattr(props, "pci_bus_id", None)
        dom = getattr(props, "pci_domain_id", 0)
        dev = getattr(props, "pci_device_id", 0)
        if bus is not None:
            bdf = f"{dom:04x}:{bus:02x}:{dev:02x}.0"
            candidates.append((Path(f"/sys/bus/pci/devices/{bdf}/local_cpulist"), f"GPU {bdf} local_cpulist"))
    candidates.append((Path("/sys/devices/system/node/node0/cpulist"), "NUMA node 0"))
    for path, what in candidates:
        try:
            cpus = [c for c in _parse_cpulist(path.read_text()) if c in allowed]
        except (OSError, ValueError):
            continue
        if cpus:
            return cpus, what
    return sorted(allowed), "every allowed CPU (no topology found)"


def pin_cpus(mode: str, device: torch.device) -> list[int]:
    """The CPUs for `mode`: free = all allowed, node = those local to the GPU, core = one of those."""
    allowed = set(os.sched_getaffinity(0))
    if mode == "free":
        return sorted(allowed)
    node, _ = _local_cpus(device, allowed)
    return node if mode == "node" else [node[len(node) // 2]]


def _current_cpu() -> int:
    try:
        return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return -1


def _dispatch_loop(device: torch.device):
    a = torch.ones(64, device=device)
    b = torch.ones(64, device=device)

    def step() -> None:
        c = a + b
        c = c * b
        c = torch.relu(c)
        c.add_(a)

    return step


def _python_loop():
    data = list(range(64))

    def step() -> None:
        total = 0
        for x in data:
            total += x * x
        return None

    return step


def _window_us(step, window_s: float, sync) -> float:
    """Microseconds per iteration over one window (iterations in blocks of 20 until the window has passed)."""
    n = 0
    sync()
    start = time.perf_counter()
    while True:
        for _ in range(20):
            step()
        n += 20
        if time.perf_counter() - start >= window_s:
            break
    sync()
    return (time.perf_counter() - start) / n * 1e6


def _stats(values: list[float]) -> dict:
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    med = statistics.median(values)
    return {"median": med, "q1": q[0], "q3": q[2], "min": min(values), "max": max(values),
            "spread": (q[2] - q[0]) / med if med else 0.0, "n": len(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--window-s", type=float, default=0.2)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = torch.device(args.device)
    allowed = set(os.sched_getaffinity(0))
    node, node_source = _local_cpus(device, allowed)
    modes = {mode: pin_cpus(mode, device) for mode in ("free", "node", "core")}
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    loops = {"dispatch": _dispatch_loop(device), "python": _python_loop()}
    for step in loops.values():
        _window_us(step, 0.5, sync)
    samples: dict[str, dict[str, list[float]]] = {m: {name: [] for name in loops} for m in modes}
    cpus: dict[str, list[int]] = {m: [] for m in modes}
    order = list(modes)
    started = time.time()
    for r in range(args.rounds):
        for mode in (order if r % 2 == 0 else order[::-1]):
            os.sched_setaffinity(0, modes[mode])
            for name, step in loops.items():
                samples[mode][name].append(_window_us(step, args.window_s, sync))
            cpus[mode].append(_current_cpu())
    os.sched_setaffinity(0, allowed)
    result = {
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__, "rounds": args.rounds, "window_s": args.window_s,
        "allowed_cpus": sorted(allowed), "node_cpus": node, "node_source": node_source, "modes": modes,
        "load_average": os.getloadavg(),
        "stats": {m: {name: _stats(v) for name, v in by.items()} for m, by in samples.items()},
        "samples_us": samples, "cpu_per_window": cpus,
        "lscpu": _run(["lscpu"]), "numactl": _run(["numactl", "-H"]),
        "nvidia_smi_topo": _run(["nvidia-smi", "topo", "-m"]) if device.type == "cuda" else "",
        "governor": _run(["cat", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"]).strip(),
    }
    lines = [f"# Host stability on {result['device']} ({result['date']})", "",
             f"{args.rounds} rounds of {args.window_s:g} s windows per loop, modes alternating (order reversed every "
             f"other round); node = {node_source}: {node}; allowed: {sorted(allowed)}.", "",
             "| mode | loop | median us/iter | IQR | min-max | spread (IQR/median) | CPUs seen |",
             "|---|---|---:|---|---|---:|---|"]
    for mode, by in result["stats"].items():
        for name, s in by.items():
            lines.append(f"| {mode} | {name} | {s['median']:.3f} | {s['q1']:.3f}-{s['q3']:.3f} | "
                         f"{s['min']:.3f}-{s['max']:.3f} | {s['spread']:.1%} | {sorted(set(cpus[mode]))} |")
    table = "\n".join(lines) + "\n"
    from roofline.io import atomic_write_text

    atomic_write_text(out / "host_stability.json", json.dumps(result, indent=1))
    atomic_write_text(out / "host_stability.md", table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
