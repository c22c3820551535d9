"""Measured bus bandwidth of all-reduce / all-gather / reduce-scatter across the devices present.

``measure_collectives()`` starts a torchrun job (NCCL over every GPU when there are at least two, else a
2-process gloo group on the CPU) whose ranks run ``python -m roofline.distributed.collectives``: per kind and
message size, warm-up calls, then a timed run of back-to-back calls between barriers; each rank's time is
reduced with MAX (the slowest rank ends the collective), and bus bandwidth follows nccl-tests (see ``comm``).
Results are cached per backend, world size and device name, and written wherever ``--json`` asks.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from roofline.distributed.comm import bus_factor
from roofline.errors import RooflineError

KINDS = ("all_reduce", "all_gather", "reduce_scatter")
GPU_SIZES = tuple(1 << p for p in (20, 22, 24, 26, 28, 30))
CPU_SIZES = tuple(1 << p for p in (12, 16, 20, 22))
QUICK_CPU_SIZES = tuple(1 << p for p in (12, 18))


def cache_file(backend: str, world_size: int, device_name: str) -> Path:
    from roofline.device.cache import _slug, cache_dir  # not .ceilings: that imports torch

    return cache_dir() / f"collectives-{backend}-{world_size}-{_slug(device_name)}.json"


def _on_gpu(device: str | None) -> bool:
    """Whether collectives are measured over GPUs (NCCL): asked for, or by default when CUDA is present."""
    import torch

    return (device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cuda")


def measure_collectives(*, device: str | None = None, nproc: int | None = None, quick: bool = False,
                        timeout_s: float = 900.0) -> dict[str, Any]:
    """Launch the measuring job and return its results (also cached); needs >= 2 GPUs, or runs gloo on the CPU."""
    import torch

    from roofline.distributed.launch import run_torchrun
    from roofline.io import atomic_write_text

    on_gpu = _on_gpu(device)
    if on_gpu:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count < 2:
            raise RooflineError(f"--collectives on GPUs needs at least 2 (found {count}); use --device cpu for a "
                                "gloo figure of this machine")
        nproc = nproc or count
    else:
        nproc = nproc or 2
    with tempfile.TemporaryDirectory(prefix="roofline-collectives-") as tmp:
        out = Path(tmp) / "collectives.json"
        words = ["--out", str(out), "--device", "cuda" if on_gpu else "cpu"] + (["--quick"] if quick else [])
        # one thread per rank, as torchrun would choose, said here so that torchrun prints no banner about it
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        code = run_torchrun(nproc, words, module="roofline.distributed.collectives", timeout_s=timeout_s, env=env)
        if code != 0 or not out.is_file():
            raise RooflineError(f"the collectives job failed (torchrun exit code {code}); its output is above")
        results = json.loads(out.read_text())
    atomic_write_text(cache_file(results["backend"], results["world_size"], results["device_name"]),
                      json.dumps(results, indent=1) + "\n")
    return results


def collectives_command(args: Any) -> int:
    """`roofline ceilings --collectives [--device cpu] [--json FILE] [--remeasure] [--quick]`."""
    import torch

    from roofline.device.resolve import device_name
    from roofline.io import atomic_write_text

    on_gpu = _on_gpu(args.device)
    world = torch.cuda.device_count() if on_gpu and torch.cuda.is_available() else 2
    name = device_name(torch.device("cuda:0" if on_gpu else "cpu")) if (not on_gpu or world) else ""
    found = None if args.remeasure or args.quick else find_collective_ceilings("nccl" if on_gpu else "gloo", world, name)
    results = found.data if found is not None and not found.data.get("quick") else None
    if results is None:
        print(f"measuring collectives over {world} {'GPUs (NCCL)' if on_gpu else 'CPU processes (gloo)'}...",
              file=sys.stderr)
        results = measure_collectives(device="cuda" if on_gpu else "cpu", quick=args.quick)
    sys.stdout.write(collectives_text(results))
    if args.json:
        atomic_write_text(Path(args.json), json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def collectives_text(results: dict[str, Any]) -> str:
    from roofline.render.units import fmt_bytes

    lines = [f"collective bus bandwidth: {results['backend']} over {results['world_size']} ranks on "
             f"{results['device_name']} (torch {results['torch_version']}, {results['measured_at']})"]
    for kind, rows in results["results"].items():
        if not rows:
            lines.append(f"  {kind:<15} not supported by this backend")
            continue
        cells = "  ".join(f"{fmt_bytes(r['bytes'])}: {r['busbw_bytes_per_s'] / 1e9:.3g} GB/s" for r in rows)
        lines.append(f"  {kind:<15} {cells}")
    lines.append(f"  method: {results['method']}")
    return "\n".join(lines) + "\n"


class CollectiveCeilings:
    """Measured bus bandwidth by kind and size; ``at(kind, bytes)`` gives the figure for the nearest size."""

    def __init__(self, data: dict[str, Any], origin: str) -> None:
        self.data, self.origin = data, origin

    def at(self, kind: str, size: float) -> tuple[float, str] | None:
        rows = [r for r in self.data.get("results", {}).get(kind, []) if r.get("busbw_bytes_per_s")]
        if not rows or size <= 0:
            return None
        row = min(rows, key=lambda r: abs(math.log(r["bytes"]) - math.log(size)))
        how = (f"{self.data.get('backend')} {kind} measured at {int(row['bytes'])} B over "
               f"{self.data.get('world_size')} ranks ({self.origin})")
        return float(row["busbw_bytes_per_s"]), how

    def summary(self) -> dict[str, Any]:
        return {"backend": self.data.get("backend"), "world_size": self.data.get("world_size"),
                "device_name": self.data.get("device_name"), "origin": self.origin,
                "peak_busbw_bytes_per_s": self.data.get("peak_busbw_bytes_per_s", {}),
                "method": self.data.get("method")}


def find_collective_ceilings(backend: str | None, world_size: int, device_name: str,
                             ceilings_file: str | os.PathLike[str] | None = None) -> CollectiveCeilings | None:
    """The file's measurement (a `ceilings --collectives --json` file, or a ceilings file with a "collectives"
    key), else the cache for this backend, world size and device; None when never measured."""
    if ceilings_file:
        try:
            data = json.loads(Path(ceilings_file).read_text())
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict):
            data = data.get("collectives", data)
            if isinstance(data, dict) and "results" in data:
                return CollectiveCeilings(data, str(ceilings_file))
    if not backend:
        return None
    path = cache_file(backend, world_size, device_name or "cpu")
    try:
        return CollectiveCeilings(json.loads(path.read_text()), str(path))
    except (OSError, ValueError):
        return None


# -- the ranks' side (python -m roofline.distributed.collectives under torchrun) ---------------------------


def _time_one(dist: Any, torch: Any, kind: str, size: int, world: int, device: Any, iters: int) -> float | None:
    numel = max(size // 4 // world * world, world)
    if kind == "all_reduce":
        buf = torch.ones(numel, dtype=torch.float32, device=device)
        call = lambda: dist.all_reduce(buf)  # noqa: E731
    elif kind == "all_gather":
        src = torch.ones(numel // world, dtype=torch.float32, device=device)
        dst = torch.empty(numel, dtype=torch.float32, device=device)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # the old name warns
        call = lambda: gather(dst, src)  # noqa: E731
    else:
        src = torch.ones(numel, dtype=torch.float32, device=device)
        dst = torch.empty(numel // world, dtype=torch.float32, device=device)
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        call = lambda: scatter(dst, src)  # noqa: E731
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    try:
        for _ in range(3):
            call()
        sync()
    except (RuntimeError, NotImplementedError):
        return None
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call()
    sync()
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64,
                           device=device if device.type == "cuda" else "cpu")
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed.item())


def _rank_main(argv: list[str]) -> int:
    import torch
    import torch.distributed as dist

    parser = argparse.ArgumentParser(prog="roofline.distributed.collectives")
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    on_gpu = args.device == "cuda"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if on_gpu:
        torch.cuda.set_device(local)
    device = torch.device(f"cuda:{local}" if on_gpu else "cpu")
    backend = "nccl" if on_gpu else "gloo"
    dist.init_process_group(backend, device_id=device if on_gpu else None)
    try:
        world, rank = dist.get_world_size(), dist.get_rank()
        sizes = GPU_SIZES if on_gpu else (QUICK_CPU_SIZES if args.quick else CPU_SIZES)
        results: dict[str, list[dict[str, float]]] = {}
        for kind in KINDS:
            rows = []
            for size in sizes:
                iters = 20 if on_gpu else (3 if args.quick else 10)
                seconds = _time_one(dist, torch, kind, size, world, device, iters)
                if seconds is None:
                    break
                nbytes = float(max(size // 4 // world * world, world) * 4)
                algbw = nbytes / seconds if seconds > 0 else 0.0
                rows.append({"bytes": nbytes, "time_s": seconds, "algbw_bytes_per_s": algbw,
                             "busbw_bytes_per_s": algbw * bus_factor(kind, world)})
            results[kind] = rows
        if rank == 0:
            from roofline.device.resolve import device_name
            from roofline.io import atomic_write_text

            payload = {
                "backend": backend, "world_size": world, "quick": bool(args.quick), "device_name": device_name(device),
                "torch_version": str(torch.__version__),
                "measured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "method": ("float32 buffers; per size 3 warm-up calls, then back-to-back calls between a barrier and "
                           "a device sync, the slowest rank's mean time (all_reduce MAX); busbw = bytes/time x "
                           "2(n-1)/n (all_reduce) or (n-1)/n (all_gather, reduce_scatter; bytes = whole buffer)"),
                "results": results,
                "peak_busbw_bytes_per_s": {k: max((r["busbw_bytes_per_s"] for r in rows), default=None)
                                           for k, rows in results.items()},
            }
            atomic_write_text(Path(args.out), json.dumps(payload, indent=1) + "\n")
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(_rank_main(sys.argv[1:]))
