"""The ONNX roofline against the PyTorch one: ResNet-18 and a BERT-base encoder (random weights, built from config),
each run by `roofline analyze` (PyTorch) and, exported with torch.onnx.export, by `roofline ort` (ONNX Runtime),
totals compared.

    PYTHONPATH=src python benchmarks/onnx_consistency.py OUT_DIR [--provider cpu|cuda] [--small]

Two ONNX configurations per model, because ONNX Runtime's graph is not PyTorch's op graph at every level:
- ``as exported``: torch.onnx.export(optimize=False) run at ORT's optimisation level ``disable``: the op graph as
  PyTorch ran it (BatchNormalization kept; matmul and bias add as separate nodes), node by node;
- ``deployed``: the default export (its optimizer folds BatchNormalization into Conv) at level ``all``, what a
  deployment runs: ORT fuses Conv+Add+Relu (NCHWc), MatMul+Add into Gemm, Add+LayerNormalization into
  SkipLayerNormalization. Its FLOPs match PyTorch's (within the folded BatchNorm's own FLOPs); its bytes are lower
  by every round trip the fusion removes.

Writes OUT_DIR/onnx_consistency.json (date, device, versions, commands, totals and ratios per configuration),
OUT_DIR/onnx_consistency.md, and every run's report under OUT_DIR/<model>/<run>/; prints a table last. With
``--provider cuda`` and no CUDAExecutionProvider in the installed onnxruntime (the CPU build), it says so, records
it and runs the PyTorch side only. ``--small``: ResNet-18 at 64x64 and a 2-layer BERT (hidden 128, seq 32), the
test suite's sizes.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS = ("resnet18", "bert_base")
SMALL_ENV = {"ONNX_RESNET_SIZE": "64", "ONNX_BERT_LAYERS": "2", "ONNX_BERT_HIDDEN": "128", "ONNX_BERT_SEQ": "32"}
TOLERANCE = 0.02
CONFIGS = {"as exported": ("model_raw.onnx", "disable"), "deployed": ("model.onnx", "all")}


def export(name: str, out: Path, env: dict[str, str]) -> None:
    """Both ONNX files of one model (in this process: the factory reads the size variables)."""
    import torch

    os.environ.update(env)
    sys.path.insert(0, str(HERE))
    try:
        import onnx_models

        model, inputs = getattr(onnx_models, name)()
    finally:
        sys.path.pop(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for file, optimize in (("model.onnx", True), ("model_raw.onnx", False)):
            torch.onnx.export(model, inputs, str(out / file), dynamo=True, optimize=optimize, verbose=False)


def roofline(args: list[str], env: dict[str, str], log: Path) -> tuple[list[str], float]:
    command = [sys.executable, "-m", "roofline", *args]
    began = time.perf_counter()
    full_env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, env=full_env, capture_output=True, text=True)
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {(done.stderr or done.stdout)[-400:]}")
    return command, time.perf_counter() - began


def totals(report_path: Path) -> dict:
    data = json.loads(report_path.read_text())
    s = data["summary"]
    unmodelled = [op["name"] for op in data["ops"] if not op.get("modeled", True)]
    row = {"flops": s["total_flops"], "bytes": s["total_bytes"], "time_s": s["total_time_s"], "ops": len(data["ops"]),
           "unmodelled_ops": len(unmodelled), "unmodelled_names": sorted(set(unmodelled)),
           "unmodelled_time_share": s["unmodeled_time_share"], "time_by_bound_s": s["time_by_bound_s"],
           "timing_method": s["timing_method"]}
    onnx = data.get("extra", {}).get("onnx")
    if onnx:
        row["onnxruntime"] = onnx.get("onnxruntime_version")
        row["providers_used"] = sorted({n["provider"] for n in onnx["nodes"]})
        kinds = [n.get("time", "host") for n in onnx["nodes"]]
        row["device_time_s"] = sum(op["time_s"] for op, k in zip(data["ops"], kinds) if k == "device")
        row["host_time_s"] = sum(op["time_s"] for op, k in zip(data["ops"], kinds) if k != "device")
        row["host_timed_gpu_nodes"] = sum(1 for n, k in zip(onnx["nodes"], kinds)
                                          if n["unit"] == "gpu" and k != "device")
        row["device_attribution"] = onnx.get("device_time")
    else:
        on_device = s["timing_method"].startswith("device time")
        row["device_time_s"], row["host_time_s"] = (s["total_time_s"], 0.0) if on_device else (0.0, s["total_time_s"])
    return row


def time_cell(row: dict) -> str:
    """The sum of op times, saying which are device times (CUDA kernels via CUPTI) and which host times."""
    device, host = row.get("device_time_s", 0.0), row.get("host_time_s", row["time_s"])
    if not host:
        return f"{device * 1e3:.3g} ms device"
    if not device:
        return f"{host * 1e3:.3g} ms host"
    return f"{(device + host) * 1e3:.3g} ms ({device * 1e3:.3g} device + {host * 1e3:.3g} host)"


def run_model(name: str, out: Path, provider: str, env: dict[str, str], ort_ok: bool, iters: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    device = "cuda" if provider == "cuda" else "cpu"
    if ort_ok:
        export(name, out, env)
    result: dict = {"commands": {}}
    cmd, secs = roofline(["analyze", f"{HERE / 'onnx_models.py'}:{name}", "--device", device, "--iters", str(iters),
                          "-o", str(out / "torch"), "--no-html"], env, out / "torch.log")
    result["commands"]["torch"] = " ".join(cmd[1:])
    result["torch"] = totals(out / "torch" / "report.json")
    if not ort_ok:
        return result
    for config, (file, level) in CONFIGS.items():
        run_dir = out / ("ort-" + config.replace(" ", "-"))
        cmd, secs = roofline(["ort", str(out / file), "--provider", provider, "--opt-level", level, "--iters",
                              str(iters), "-o", str(run_dir)], env, run_dir.with_suffix(".log"))
        row = totals(run_dir / "report.json")
        row["flops_ratio"] = row["flops"] / result["torch"]["flops"] if result["torch"]["flops"] else None
        row["bytes_ratio"] = row["bytes"] / result["torch"]["bytes"] if result["torch"]["bytes"] else None
        row["within_2pct"] = {k: abs(row[f"{k}_ratio"] - 1) <= TOLERANCE for k in ("flops", "bytes")
                              if row[f"{k}_ratio"] is not None}
        result["commands"][config] = " ".join(cmd[1:])
        result[config] = row
    return result


def markdown(meta: dict, results: dict) -> str:
    lines = [
        "# ONNX roofline vs PyTorch roofline",
        "",
        f"{meta['date']}, {meta['device']}, torch {meta['torch']}, onnxruntime {meta['onnxruntime']} "
        f"({meta['provider']}). `{meta['command']}`.",
        "",
        "'as exported': torch.onnx.export(optimize=False) at ORT level disable (PyTorch's op graph, node by node); "
        "'deployed': the default export at level all (fused). Ratios are ONNX over PyTorch totals.",
        "",
        "| model | run | FLOPs | bytes | FLOPs ratio | bytes ratio | ops | unmodelled | time (sum of ops) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, res in results.items():
        for run in ("torch", *CONFIGS):
            row = res.get(run)
            if row is None:
                continue
            ratio = (f"{row['flops_ratio']:.4f} | {row['bytes_ratio']:.4f}" if "flops_ratio" in row else "- | -")
            lines.append(f"| {name} | {run} | {row['flops']:.5g} | {row['bytes']:.5g} | {ratio} | {row['ops']} | "
                         f"{row['unmodelled_ops']} | {time_cell(row)} |")
    lines.append("")
    for name, res in results.items():
        for run in CONFIGS:
            attribution = (res.get(run) or {}).get("device_attribution")
            if attribution:
                share = attribution.get("attributed_share")
                lines.append(f"- {name} {run}: CUPTI saw {(attribution['kernel_time_per_run_s'] or 0) * 1e3:.3g} ms "
                             f"of GPU kernels and copies per run; {share or 0:.1%} attributed to nodes (clock offset "
                             f"from {attribution['offset_from']}, anchor residual "
                             f"{attribution['anchor_residual_us']:.1f} us); {res[run]['host_timed_gpu_nodes']} GPU "
                             "node(s) launched no kernel and keep ORT's host time")
    for name, res in results.items():
        agree = [run for run in CONFIGS if run in res and all(res[run]["within_2pct"].values())]
        flops = [run for run in CONFIGS if run in res and res[run]["within_2pct"].get("flops")]
        if run_rows := [run for run in CONFIGS if run in res]:
            lines.append(f"- {name}: FLOPs within {TOLERANCE:.0%} in {len(flops)} of {len(run_rows)} configurations; "
                         f"FLOPs and bytes within {TOLERANCE:.0%} in: {', '.join(agree) or 'none'}; unmodelled nodes: "
                         f"{sum(res[run]['unmodelled_ops'] for run in run_rows)} (PyTorch ops: "
                         f"{res['torch']['unmodelled_ops']})")
    lines += ["", "Times are not compared: each run is timed in its own process at its own moment (see each report's "
              "timing_method and the load average in its ceilings). 'device': the CUDA kernels' durations (CUPTI via "
              "torch.profiler; for ONNX Runtime, each node's kernels joined to it through their launch calls); "
              "'host': CPU-side durations (ORT's profiler times a node's Compute call on the host)."]
    if meta.get("ort_missing"):
        lines += ["", f"**{meta['ort_missing']}**"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--provider", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--small", action="store_true", help="the test suite's sizes")
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args(argv)
    import torch

    try:
        import onnxruntime as ort
    except ImportError:
        raise SystemExit("onnxruntime missing: pip install onnxruntime (onnxruntime-gpu for --provider cuda)") from None

    env = dict(SMALL_ENV) if args.small else {}
    wanted = "CUDAExecutionProvider" if args.provider == "cuda" else "CPUExecutionProvider"
    available = ort.get_available_providers()
    ort_missing = None
    if wanted not in available:
        ort_missing = (f"{wanted} missing: onnxruntime {ort.__version__} here offers {', '.join(available)} (the CPU "
                       "build); install onnxruntime-gpu for the ONNX runs on the GPU")
    if args.provider == "cuda" and not torch.cuda.is_available():
        raise SystemExit((ort_missing + "; " if ort_missing else "")
                         + "--provider cuda needs a CUDA GPU for the PyTorch side too")
    if ort_missing:
        ort_missing += ". Only the PyTorch side runs."
        print(ort_missing, file=sys.stderr)
    if ort_missing is None:
        try:
            import onnxscript  # noqa: F401 - torch.onnx.export's default (dynamo) exporter needs it
        except ImportError:
            raise SystemExit("onnxscript missing: torch.onnx.export (dynamo exporter) needs it; pip install "
                             "onnxscript onnx (the onnx extra)") from None
    device = torch.cuda.get_device_name(0) if args.provider == "cuda" else platform.processor() or "cpu"
    if args.provider == "cpu":
        from roofline.device.host import cpu_name

        device = cpu_name()
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.models.split(","):
        results[name] = run_model(name, args.out / name, args.provider, env, ort_missing is None, args.iters)
    meta = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "device": device,
            "torch": torch.__version__, "onnxruntime": ort.__version__, "provider": wanted,
            "providers_available": available, "small": args.small, "sizes": env or "full (ResNet-18 224x224, "
            "BERT-base 12 layers hidden 768 seq 128)", "command": "python " + " ".join(sys.argv),
            "ort_missing": ort_missing, "tolerance": TOLERANCE}
    from roofline.io import atomic_write_text

    atomic_write_text(args.out / "onnx_consistency.json", json.dumps({"meta": meta, "results": results}, indent=1))
    text = markdown(meta, results)
    atomic_write_text(args.out / "onnx_consistency.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
