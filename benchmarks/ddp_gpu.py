"""Distributed profiling on 2 GPUs: a DDP training step of llama-tiny and llama-1b, each rank profiled and merged,
and the all-reduce bus bandwidth measured by `roofline ceilings --collectives`.

    PYTHONPATH=src python3 benchmarks/ddp_gpu.py OUT              # 2 GPUs, NCCL (the H200 x2 machine)
    PYTHONPATH=src python3 benchmarks/ddp_gpu.py OUT --cpu        # 2 CPU processes, gloo, tiny sizes (a check)

Writes OUT/results.json (date, GPU, torch, command, per model the merged per-rank figures, collectives and
findings), OUT/collectives.json and OUT/<model>/ (rank0/, rank1/, report.json, report.html); prints a table last.
This file is also the training script the ranks run (`--train`), so the driver and its workload stay together.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from roofline.distributed.rank import MULTICAST_OFF, multicast_off_env

GPU_MODELS = {"llama-tiny": {"batch": 8, "seq": 512, "no_stack": False},
              "llama-1b": {"batch": 2, "seq": 1024, "no_stack": True}}
CPU_MODELS = {"llama-tiny": {"batch": 1, "seq": 32, "no_stack": False}}


def train(args: argparse.Namespace) -> None:
    """One rank of the DDP job (run under torchrun, profiled by `roofline profile`)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from roofline.models import get_workload

    local = int(os.environ.get("LOCAL_RANK", "0"))
    on_gpu = not args.cpu and torch.cuda.is_available()
    device = torch.device(f"cuda:{local}" if on_gpu else "cpu")
    if on_gpu:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if on_gpu else "gloo")
    workload = get_workload(args.model, batch=args.batch, seq=args.seq, dtype=args.dtype, device=device,
                            backward=True)
    model = DistributedDataParallel(workload.model, device_ids=[local] if on_gpu else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(args.steps):
        out = model(*workload.inputs)
        loss = workload.loss_fn(out) if workload.loss_fn is not None else out.float().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


def _env() -> dict[str, str]:
    env = multicast_off_env()
    env["PYTHONUNBUFFERED"] = "1"
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _run(argv: list[str], timeout: int, log: Path) -> tuple[int, float]:
    start = time.perf_counter()
    with open(log, "w") as fh:
        try:
            code = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=_env(), timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = 124
    return code, time.perf_counter() - start


def _ceilings_file(out: Path, cpu: bool) -> str:
    """Ceilings the ranks share (cached measurement, else the datasheet), so no rank spends the run measuring."""
    from roofline.device.ceilings import ceilings_for_device_name, get_ceilings, save_ceilings

    if cpu:
        ceilings = get_ceilings("cpu", quick=True)
    else:
        import torch

        ceilings = ceilings_for_device_name(torch.cuda.get_device_name(0)) or get_ceilings("cuda", quick=True)
    return str(save_ceilings(ceilings, out / "ceilings.json"))


def drive(args: argparse.Namespace) -> int:
    import torch

    out = Path(args.out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    models = CPU_MODELS if args.cpu else GPU_MODELS
    if args.models:
        models = {m: (GPU_MODELS.get(m) or CPU_MODELS.get(m) or {"batch": None, "seq": None, "no_stack": True})
                  for m in args.models.split(",")}
    dtype = "float32" if args.cpu else "bfloat16"
    results: dict = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": "cpu (gloo)" if args.cpu else torch.cuda.get_device_name(0),
        "gpus": 0 if args.cpu else torch.cuda.device_count(),
        "torch": str(torch.__version__),
        "command": " ".join([sys.executable, *sys.argv]),
        "env": {k: os.environ.get(k, v) for k, v in MULTICAST_OFF.items()},
        "dtype": dtype, "models": {},
    }
    py = [sys.executable, "-m", "roofline"]
    coll = ["ceilings", "--collectives", "--remeasure", "--json", str(out / "collectives.json")]
    coll += ["--device", "cpu", "--quick"] if args.cpu else []
    code, secs = _run(py + coll, 120, out / "logs" / "collectives.log")
    results["collectives"] = {"exit_code": code, "seconds": round(secs, 1)}
    if code == 0:
        data = json.loads((out / "collectives.json").read_text())
        results["collectives"].update({k: data[k] for k in ("backend", "world_size", "device_name", "method",
                                                            "peak_busbw_bytes_per_s", "results")})
    ceilings = _ceilings_file(out, args.cpu)
    for name, size in models.items():
        run_dir = out / name.replace("/", "_")
        argv = py + ["profile", "--nproc", "2", "--wait", "2", "--timed", "3", "--warmup", "1", "--active", "2",
                     "--ceilings", ceilings, "-o", str(run_dir)]
        argv += ["--no-stack"] if size.get("no_stack") else []
        argv += ["--device", "cpu"] if args.cpu else []
        argv += [str(Path(__file__).resolve()), "--train", "--model", name, "--dtype", dtype, "--steps", "20"]
        argv += ["--batch", str(size["batch"])] if size.get("batch") else []
        argv += ["--seq", str(size["seq"])] if size.get("seq") else []
        argv += ["--cpu"] if args.cpu else []
        code, secs = _run(argv, args.timeout, out / "logs" / f"{name}.log")
        results["models"][name] = _model_result(run_dir, code, secs, size, argv)
        _save(out, results)
    _save(out, results)
    print(table(results))
    return 0 if all(m["exit_code"] == 0 for m in results["models"].values()) else 1


def _model_result(run_dir: Path, code: int, secs: float, size: dict, argv: list[str]) -> dict:
    result = {"exit_code": code, "seconds": round(secs, 1), "batch": size.get("batch"), "seq": size.get("seq"),
              "command": " ".join(argv), "report": str(run_dir / "report.json")}
    if not (run_dir / "report.json").is_file():
        return result
    import msgspec

    from roofline.report import Report

    report = Report.load(run_dir / "report.json")
    info = msgspec.to_builtins(report.distributed) if report.distributed else {}
    result.update({
        "ranks": msgspec.to_builtins(report.ranks), "stragglers": info.get("stragglers"), "collectives": info.get("collectives", [])[:6],
        "collective_ceiling": info.get("collective_ceiling"), "breakdown_method": info.get("breakdown_method"),
        "findings": [{"rule": f.rule, "severity": f.severity, "title": f.title} for f in report.findings[:8]],
    })
    return result


def _save(out: Path, results: dict) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from roofline.io import atomic_write_text

    atomic_write_text(out / "results.json", json.dumps(results, indent=1, default=str) + "\n")


def table(results: dict) -> str:
    def ms(v):
        return f"{v * 1e3:8.2f}" if isinstance(v, (int, float)) else f"{'-':>8}"

    lines = [f"DDP on {results['gpu']} x2, torch {results['torch']}, {results['date']}"]
    coll = results.get("collectives", {})
    peak = (coll.get("peak_busbw_bytes_per_s") or {}).get("all_reduce")
    lines.append(f"all-reduce bus bandwidth ({coll.get('backend', '?')}, measured peak): "
                 + (f"{peak / 1e9:.1f} GB/s" if peak else f"not measured (exit {coll.get('exit_code')})"))
    lines.append(f"{'model':<11} {'rank':>4} {'step ms':>8} {'compute':>8} {'comm':>8} {'exposed':>8} {'hidden':>6}"
                 f" {'idle':>8}  {'allreduce busbw':>15}")
    for name, m in results["models"].items():
        if not m.get("ranks"):
            lines.append(f"{name:<11} failed (exit {m['exit_code']}, {m['seconds']} s): see logs/{name}.log")
            continue
        ar = next((c for c in m.get("collectives", []) if c["kind"] == "all_reduce"), None)
        bw = f"{ar['busbw_bytes_per_s'] / 1e9:.1f} GB/s" if ar and ar.get("busbw_bytes_per_s") else "-"
        for r in m["ranks"]:
            hidden = r.get("hidden_communication_share")
            lines.append(f"{name:<11} {r['rank']:>4} {ms(r['step_time_s'])} {ms(r['compute_time_s'])} "
                         f"{ms(r['communication_time_s'])} {ms(r['exposed_communication_s'])} "
                         f"{(f'{hidden:.0%}' if hidden is not None else '-'):>6} {ms(r['idle_time_s'])}  {bw:>15}"
                         + ("  straggler" if r.get("straggler") else ""))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="output directory (driver mode)")
    parser.add_argument("--cpu", action="store_true", help="gloo on 2 CPU processes, tiny sizes")
    parser.add_argument("--models", help="comma-separated workloads (default: llama-tiny,llama-1b; --cpu: llama-tiny)")
    parser.add_argument("--timeout", type=int, default=170, help="seconds per model run (default 170)")
    parser.add_argument("--train", action="store_true", help="(rank mode) run the DDP training loop")
    parser.add_argument("--model", default="llama-tiny")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    if args.train:
        train(args)
        return 0
    if not args.out:
        parser.error("give the output directory")
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
