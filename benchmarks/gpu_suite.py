"""One driver for the GPU measurements the issues ask for, run on the lent H200 in as few calls as possible.

Each stage is a subprocess with its own time limit, so one failure never costs the rest; every stage's output
lands under OUT/<stage>/ with its log, and the whole folder is packed into OUT/<suite>.tgz (the device tool brings
back at most 8 files). The last lines printed are a short table of what each stage did.

    PYTHONPATH=src python3 benchmarks/gpu_suite.py analyze  $OUT     # ceilings, analyze, doctor, harness, cuda tests
    PYTHONPATH=src python3 benchmarks/gpu_suite.py lab-1b   $OUT     # the case study, one model a call
                                                        # (lab-tiny, lab-1b, lab-8b; `lab` runs all three)
    Carry .whl (the msgspec wheel: the GPU image lacks it) and .data (WikiText-2, copied from ../shared/data).
    PYTHONPATH=src python3 benchmarks/gpu_suite.py lab-views $OUT    # three views of each fix, llama-tiny and llama-1b,
                                                        # in one call of at most 9 minutes (budgets below)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py ddp      $OUT     # ceilings again, the 2-GPU DDP run
    PYTHONPATH=src python3 benchmarks/gpu_suite.py decode-roof $OUT  # batch-1 decode three ways (decode_roof.py)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py decode-breakdown $OUT  # its kernel time by class
    PYTHONPATH=src python3 benchmarks/gpu_suite.py decode-fast $OUT  # Triton decode kernels vs the tuned step, then
                                                        # their cuda tests (issue 19; one call under 9 minutes)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue19-20 $OUT  # the shared-memory roof, then roofline lab
                                                        # --decode-only per model: the Triton rows, kernel classes
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue19-attention $OUT  # attention alone by cache length (old
                                                        # kernel beside it: first, here, mkdir -p .old && git show
                                                        # 7d80a2d:src/roofline/lab/kernels/triton_attention.py
                                                        # > .old/triton_attention_7d80a2d.py), its cuda tests,
                                                        # the lab's llama-1b decode rows (<= 7 min)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue19-kernels $OUT  # attention alone current vs v2 at context
                                                        # 256/1024, llama-1b decode with both (decode_fast.py and the
                                                        # lab's rows), a summary table last (<= 8 min)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue19-prefetch $OUT  # deep prefetch under PDL vs PDL + attention
                                                        # v2: llama-1b decode alternating, the lab's llama-1b and
                                                        # llama-8b decode rows, a summary table last (<= 7 min)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue19-l2 $OUT  # L2 prefetch from attention: the instruction's
                                                        # smoke test, llama-1b decode with and without it, the
                                                        # lab's llama-1b rows (with an L2 row), summary (<= 8 min)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue19-persist $OUT  # the persistent kernel after attention: its
                                                        # smoke test (a subprocess, 75 s) gates llama-1b's decode
                                                        # with and without it and the lab's llama-1b rows (<= 8 min;
                                                        # issue19-persist-8b: the smoke, then the lab's llama-8b)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue15-doctor $OUT    # doctor names HF generate()'s per-token syncs
    PYTHONPATH=src python3 benchmarks/gpu_suite.py issue15-roofs $OUT  # ceilings with the cache roof, then no op above its own roof (DRAM or cache), no unmodelled time (built-ins, ViT-B/16)
    PYTHONPATH=src python3 benchmarks/gpu_suite.py ncu $OUT  # issue 20: analyze --ncu on llama-tiny (<= 300 s, >= 98% joined)
                                                        # and on the byte model's ground-truth ops (ncu_gpu.py)
    Suites join with '+': lab-tiny+decode-roof+cuda-tests runs the three in one call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from roofline.distributed.rank import multicast_off_env

PY = sys.executable
OLD_ATTENTION = Path(".old/triton_attention_7d80a2d.py")  # the attention kernel before issue 19's change
RL = [PY, "-m", "roofline"]


def stages(suite: str, out: Path) -> list[tuple[str, list[str], int]]:
    """(name, argv, timeout_s) for each stage of a suite."""
    if "+" in suite:
        return [stage for part in suite.split("+") for stage in stages(part, out)]
    a = out / "analyze"
    if suite == "analyze":
        return [
            ("env", ["nvidia-smi"], 30),
            ("ceilings", RL + ["ceilings", "--device", "cuda", "--remeasure", "--json", str(out / "ceilings_h200.json")], 240),
            ("matmul_bf16", RL + ["analyze", "--model", "matmul", "--dtype", "bf16", "--seq", "8192", "--device", "cuda",
                                  "--iters", "10", "-o", str(a / "matmul_bf16")], 120),
            ("layernorm_fp16", RL + ["analyze", "--model", "layernorm", "--dtype", "fp16", "--device", "cuda",
                                     "--iters", "10", "-o", str(a / "layernorm_fp16")], 120),
            ("llama_tiny_fp16", RL + ["analyze", "--model", "llama-tiny", "--dtype", "fp16", "--batch", "4", "--seq", "512",
                                      "--device", "cuda", "-o", str(a / "llama_tiny_fp16_b4_s512")], 180),
            ("llama_1b_fp16", RL + ["analyze", "--model", "llama-1b", "--dtype", "fp16", "--batch", "4", "--seq", "512",
                                    "--device", "cuda", "-o", str(a / "llama_1b_fp16_b4_s512")], 240),
            ("doctor_llama_tiny", RL + ["doctor", "--model", "llama-tiny", "--dtype", "fp16", "--device", "cuda",
                                        "-o", str(a / "doctor_llama_tiny")], 180),
            ("doctor_resnet50", RL + ["doctor", "--model", "resnet50", "--device", "cuda", "-o", str(a / "doctor_resnet50")], 180),
            ("profile_bad_syncs", RL + ["profile", "--model", "bad-syncs", "--device", "cuda", "-o", str(a / "profile_bad_syncs")], 180),
            ("harness_overhead", [PY, "benchmarks/harness_overhead.py", str(out / "harness_overhead.json")], 300),
            ("cuda_tests", [PY, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider", "tests"], 300),
        ]
    if suite == "lab-views":
        data = os.environ.get("ROOFLINE_DATA", ".data/wikitext-2")
        # (model, seconds of configurations, stage limit): the limits leave room for the start, the ceilings, the
        # model build and the doctor (~20 s each on the H200 host); together they stay under the suite's 540 s.
        # llama-1b gets more: its recompiles (~15-20 s each) and eager configurations are the slower ones.
        plan = [("llama-tiny", 175, 205), ("llama-1b", 290, 320)]
        return [("env", ["nvidia-smi"], 30)] + [
            (f"views_{m}", [PY, "benchmarks/lab_gpu.py", "--views", "--budget", str(budget), "-o", str(out / "lab"),
                            "--data", data, "--models", m], limit)
            for m, budget, limit in plan
        ]
    if suite.startswith("lab"):
        data = os.environ.get("ROOFLINE_DATA", ".data/wikitext-2")
        models = {"lab": ["llama-tiny", "llama-1b", "llama-8b"], "lab-tiny": ["llama-tiny"],
                  "lab-1b": ["llama-1b"], "lab-8b": ["llama-8b"]}.get(suite)
        if models is None:
            raise SystemExit(f"unknown suite {suite!r}: lab, lab-tiny, lab-1b or lab-8b")
        return [("env", ["nvidia-smi"], 30)] + [
            (f"lab_{m}", [PY, "benchmarks/lab_gpu.py", "-o", str(out / "lab"), "--data", data, "--models", m], 560)
            for m in models
        ]
    if suite == "decode-roof":
        return [("decode_roof", [PY, "benchmarks/decode_roof.py", "--models", "llama-1b", "-o",
                                 str(out / "decode_roof_h200.json")], 420)]
    if suite == "decode-breakdown":
        return [("decode_breakdown", [PY, "benchmarks/decode_breakdown.py", "--models", "llama-1b", "llama-8b", "-o",
                                      str(out / "decode_breakdown_h200.json")], 480)]
    if suite == "decode-fast":
        # One process a model, so that a kernel fault (a sticky CUDA error) costs one model only: 8b first (the
        # 80% aim, with the tuned baseline, whose compile took 169 s on the H200), then 1b and tiny (their
        # baselines do not fit the call: decode_fast.py skips them by --budget and says so), then the cuda tests.
        plan = [("llama-8b", 285, 295), ("llama-1b", 110, 120), ("llama-tiny", 65, 75)]
        return [("env", ["nvidia-smi"], 15)] + [
            (f"decode_fast_{m}", [PY, "benchmarks/decode_fast.py", "--models", m, "--budget", str(budget), "-o",
                                  str(out / f"decode_fast_{m}_h200.json")], limit)
            for m, budget, limit in plan
        ] + [("cuda_tests_decode_fast", [PY, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider",
                                         "tests/lab/test_decode_fast.py"], 90)]
    if suite == "issue19-20":
        # The shared-memory roof (with the DRAM and L2 ones, measured again), its cuda test and the lab's rows' test,
        # then `roofline lab --decode-only` per model: compiled step, hand-written Triton rows and their kernel
        # classes. No tuned step (its compile alone took 169 s for llama-8b; decode_fast.py measured it already).
        ceilings = out / "ceilings_h200.json"
        return [
            ("env", ["nvidia-smi"], 15),
            ("ceilings", RL + ["ceilings", "--device", "cuda", "--remeasure", "--json", str(ceilings)], 45),
            ("cuda_tests_issue19_20", [PY, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider",
                                       "tests/device/test_shared_memory.py", "tests/lab/test_fast_rows.py"], 70),
        ] + [
            (f"lab_decode_{m}", RL + ["lab", "--device", "cuda", "--model", m, "--decode-only", "--no-tuned",
                                      "--ceilings", str(ceilings), "-o", str(out / "lab_decode" / m)], limit)
            # llama-8b: tuning its five weight shapes compiles ~80 Triton candidates (the decode_fast run took 180 s
            # with the tuned baseline's compile, not run here).
            # Cold Triton caches: llama-tiny and llama-1b took more than 50 s and 70 s on a fresh machine (2026-12-01).
            for m, limit in (("llama-tiny", 80), ("llama-1b", 130), ("llama-8b", 220))
        ]
    if suite == "issue19-attention":
        # The attention kernel alone at context 256 in 328/2048/8192-slot caches, beside the kernel before the
        # change where OLD_ATTENTION exists (the device gets no .git: make it first, see the module docstring),
        # its cuda tests, then the lab's llama-1b decode rows (482 us/token with the 2048-slot cache before).
        old = [] if not OLD_ATTENTION.is_file() else ["--old-kernel", str(OLD_ATTENTION)]
        return [
            ("env", ["nvidia-smi"], 15),
            ("attention_context", [PY, "benchmarks/decode_attention_context.py", str(out / "attention_context"),
                                   *old], 240),
            ("cuda_tests_decode_fast", [PY, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider",
                                        "tests/lab/test_decode_fast.py",
                                        "tests/lab/test_decode_attention_context.py"], 90),
            ("lab_decode_llama-1b", RL + ["lab", "--device", "cuda", "--model", "llama-1b", "--decode-only",
                                          "--no-tuned", "--ceilings",
                                          "benchmarks/results/h200/issue19-20/ceilings_h200.json",
                                          "-o", str(out / "lab_decode" / "llama-1b")], 130),
        ]
    if suite == "issue19-kernels":
        # Issue 19's kernels old vs new in one call (< 8 min): the attention kernel alone, current vs version 2
        # (lab/kernels/triton_attention_v2.py), at contexts 256 and 1024 (each configuration checked against the
        # torch twin first; one that fails is a row, not the end), then llama-1b's decode with both (alternating
        # runs, kernel classes, tokens against the eager model), the lab's llama-1b decode rows (its 2,048-slot
        # cache; the v2 row beside the others), then the summary table. Limits sum to 470 s; the H200 took 91 s
        # for three cache lengths of the attention alone, 25 s (warm) for decode_fast's llama-1b, 90 s for the lab.
        return [
            ("env", ["nvidia-smi"], 10),
            ("attention_ctx256", [PY, "benchmarks/decode_attention_context.py", str(out / "attention_ctx256"),
                                  "--context", "256", "--max-seqs", "328", "2048", "--v2"], 90),
            ("attention_ctx1024", [PY, "benchmarks/decode_attention_context.py", str(out / "attention_ctx1024"),
                                   "--context", "1024", "--max-seqs", "2048", "--v2"], 55),
            ("decode_fast_llama-1b", [PY, "benchmarks/decode_fast.py", "--models", "llama-1b", "--baseline", "none",
                                      "--attention-v2", "-o", str(out / "decode_fast_llama-1b.json")], 170),
            ("lab_decode_llama-1b", RL + ["lab", "--device", "cuda", "--model", "llama-1b", "--decode-only",
                                          "--no-tuned", "--ceilings",
                                          "benchmarks/results/h200/issue19-20/ceilings_h200.json",
                                          "-o", str(out / "lab_decode" / "llama-1b")], 130),
            ("summary", [PY, "benchmarks/issue19_kernels_summary.py", str(out)], 15),
        ]
    if suite == "issue19-prefetch":
        # Deep prefetch under PDL (gemv.prefetch_configs, decode_fast.tune_prefetch) against today's best, PDL +
        # attention v2, in one call (< 7 min): llama-1b's decode with every variant in alternating runs (median,
        # min-max, kernel classes, tokens against the eager model and the old step's), then the lab's decode rows
        # (2,048-slot cache) for llama-1b and llama-8b (8b: 84.2% with PDL before; it must stay >= 80%), then the
        # summary table. The H200 took 50 s for decode_fast's llama-1b with three variants and 75 s and 126 s for
        # the lab's llama-1b and llama-8b rows; the prefetch tuning adds ~60 compiles a model.
        ceilings = "benchmarks/results/h200/issue19-20/ceilings_h200.json"
        return [
            ("env", ["nvidia-smi"], 10),
            ("decode_fast_llama-1b", [PY, "benchmarks/decode_fast.py", "--models", "llama-1b", "--baseline", "none",
                                      "--prefetch", "--reps", "7", "-o", str(out / "decode_fast_llama-1b.json")], 160),
        ] + [
            (f"lab_decode_{m}", RL + ["lab", "--device", "cuda", "--model", m, "--decode-only", "--no-tuned",
                                      "--ceilings", ceilings, "-o", str(out / "lab_decode" / m)], limit)
            for m, limit in (("llama-1b", 130), ("llama-8b", 215))
        ] + [("summary", [PY, "benchmarks/issue19_kernels_summary.py", str(out)], 15)]
    if suite == "issue19-l2":
        # L2 prefetch of the next products' weights from attention v2's extra programs (kernels/triton_l2.py), in one
        # call (< 8 min): first, in seconds, whether the instruction compiles, runs and helps on this GPU
        # (l2_prefetch_smoke.py), then llama-1b's decode with PDL + attention v2, deep prefetch and deep prefetch +
        # L2 prefetch (the amount tuned in the whole step, 0 among the candidates) in alternating runs (7, median,
        # min-max, kernel classes, tokens against the eager model), the lab's llama-1b rows (2,048-slot cache, the
        # L2-prefetch row last), then the summary table. issue19-prefetch's decode stage took ~110 s on the H200 and
        # its lab llama-1b stage 75 s; the L2 tuning adds 23 whole-step timings (each a graph capture and 20
        # replays) and ~7 compiles (two attention variants, five evict-first products) a run: ~30-60 s each.
        smoke = out / "l2_smoke" / "l2_prefetch_smoke.json"
        return [
            ("env", ["nvidia-smi"], 10),
            ("l2_smoke", [PY, "benchmarks/l2_prefetch_smoke.py", str(out / "l2_smoke")], 45),
            ("decode_fast_llama-1b", [PY, "benchmarks/decode_fast.py", "--models", "llama-1b", "--baseline", "none",
                                      "--l2-prefetch", "--l2-smoke", str(smoke),
                                      "--reps", "7", "-o", str(out / "decode_fast_llama-1b.json")], 225),
            ("lab_decode_llama-1b", [PY, "benchmarks/l2_prefetch_smoke.py", "--require", str(smoke), "--", *RL,
                                     "lab", "--device", "cuda", "--model", "llama-1b", "--decode-only", "--no-tuned",
                                     "--ceilings", "benchmarks/results/h200/issue19-20/ceilings_h200.json",
                                     "-o", str(out / "lab_decode" / "llama-1b")], 180),
            ("summary", [PY, "benchmarks/issue19_kernels_summary.py", str(out)], 15),
        ]
    if suite in ("issue19-persist", "issue19-persist-8b"):
        # The products after attention as one persistent kernel a layer (kernels/persistent_mlp.py), in one call
        # (< 8 min): first, in a subprocess with a time limit, whether the kernel runs at all without a barrier hang
        # and agrees with the three gemv kernels (persistent_smoke.py, ~14 compiles); every later stage runs only
        # where it passed. Then llama-1b's decode with deep prefetch and deep prefetch + persistent (the kernel or
        # the three chosen in the whole step) in 7 alternating runs (kernel classes, tokens), the lab's llama-1b
        # rows (the persistent row last), the summary table. issue19-prefetch's decode stage took ~110 s and its
        # lab llama-1b stage 75 s on the H200; the persistent tuning adds ~5 compiles (the smoke test made them) and 21 whole-step timings.
        # issue19-persist-8b: the smoke and the lab's llama-8b rows (126 s before; it must stay >= 80%).
        smoke = out / "persist_smoke" / "persistent_smoke.json"
        gate = [PY, "benchmarks/persistent_smoke.py", "--require", str(smoke), "--"]
        ceilings = "benchmarks/results/h200/issue19-20/ceilings_h200.json"
        first = [("env", ["nvidia-smi"], 10),
                 ("persist_smoke", [PY, "benchmarks/persistent_smoke.py", str(out / "persist_smoke")], 75)]
        if suite == "issue19-persist-8b":
            return first + [("lab_decode_llama-8b", gate + RL + ["lab", "--device", "cuda", "--model", "llama-8b",
                                                                 "--decode-only", "--no-tuned", "--ceilings", ceilings,
                                                                 "-o", str(out / "lab_decode" / "llama-8b")], 300),
                            ("summary", [PY, "benchmarks/issue19_kernels_summary.py", str(out)], 15)]
        return first + [
            ("decode_fast_llama-1b", gate + [PY, "benchmarks/decode_fast.py", "--models", "llama-1b", "--baseline",
                                             "none", "--persistent", "--reps", "7",
                                             "-o", str(out / "decode_fast_llama-1b.json")], 190),
            ("lab_decode_llama-1b", gate + RL + ["lab", "--device", "cuda", "--model", "llama-1b", "--decode-only",
                                                 "--no-tuned", "--ceilings", ceilings,
                                                 "-o", str(out / "lab_decode" / "llama-1b")], 185),
            ("summary", [PY, "benchmarks/issue19_kernels_summary.py", str(out)], 15),
        ]
    if suite == "issue15-doctor":
        return [("env", ["nvidia-smi"], 30),
                ("generate_syncs", [PY, "benchmarks/generate_syncs.py", str(out / "generate_syncs"), "--device", "cuda",
                                    "--ceilings", "benchmarks/results/ceilings_h200.json"], 420)]
    if suite == "issue15-roofs":
        return [
            ("env", ["nvidia-smi"], 30),
            ("ceilings", RL + ["ceilings", "--device", "cuda", "--remeasure", "--json", str(out / "ceilings_h200.json")], 240),
            ("issue15_roofs", [PY, "benchmarks/issue15_roofs.py", str(out / "issue15_roofs.json"),
                               "--ceilings", str(out / "ceilings_h200.json")], 300),
        ]
    if suite == "ncu":
        return [
            ("env", ["nvidia-smi"], 30),
            ("ncu_gpu", [PY, "benchmarks/ncu_gpu.py", str(out / "ncu"), "--budget", "430"], 450),
        ]
    if suite == "cuda-tests":
        return [("cuda_tests", [PY, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider", "tests"], 300)]
    if suite == "ddp":
        return [
            ("env", ["nvidia-smi"], 30),
            ("ceilings", RL + ["ceilings", "--device", "cuda", "--remeasure", "--json", str(out / "ceilings_h200.json")], 120),
            ("ddp_gpu", [PY, "benchmarks/ddp_gpu.py", str(out / "ddp"), "--timeout", "150"], 480),
        ]
    raise SystemExit(f"unknown suite {suite!r}: analyze, lab, lab-tiny, lab-1b, lab-8b, lab-views, decode-roof, decode-breakdown, decode-fast, "
                     "cuda-tests, issue15-doctor, issue15-roofs, issue19-20, issue19-attention, issue19-kernels, "
                     "issue19-prefetch, issue19-l2, issue19-persist, issue19-persist-8b, ncu or ddp")


def run_stage(name: str, argv: list[str], timeout: int, out: Path) -> dict:
    log = out / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(multicast_off_env(), ROOFLINE_CACHE_DIR=str(out / "cache"), PYTHONUNBUFFERED="1")
    t0 = time.perf_counter()
    with log.open("w") as fh:
        fh.write("$ " + " ".join(argv) + "\n")
        fh.flush()
        try:
            rc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        except OSError as exc:
            rc = f"cannot start: {exc}"
    elapsed = time.perf_counter() - t0
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
    return {"stage": name, "rc": rc, "seconds": round(elapsed, 1), "last_line": tail[0][:100]}


def main() -> int:
    suite = sys.argv[1]
    name = suite.replace("+", "_and_")  # the device tool brings back only plain names
    out = Path(sys.argv[2]) / name
    out.mkdir(parents=True, exist_ok=True)
    budget = float(os.environ.get("SUITE_BUDGET_S", "540"))
    start = time.perf_counter()
    results = []
    for stage, argv, timeout in stages(suite, out):
        left = budget - (time.perf_counter() - start)
        if left < 20:
            results.append({"stage": stage, "rc": "skipped", "seconds": 0, "last_line": "suite budget spent"})
            continue
        results.append(run_stage(stage, argv, int(min(timeout, left - 10)), out))
        print(f"[{time.perf_counter() - start:6.1f}s] {results[-1]}", flush=True)
    (out / "suite.json").write_text(json.dumps({"suite": suite, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
                                                "stages": results}, indent=1))
    for junk in out.rglob("cache"):
        shutil.rmtree(junk, ignore_errors=True)
    for trace in out.rglob("trace.json.gz"):
        if trace.stat().st_size > 2 * 2**20:
            trace.unlink()
    with tarfile.open(Path(sys.argv[2]) / f"{name}.tgz", "w:gz") as tar:
        tar.add(out, arcname=name)
    print(f"{'stage':22} {'rc':>8} {'s':>7}  last line")
    for r in results:
        print(f"{r['stage']:22} {str(r['rc']):>8} {r['seconds']:7.1f}  {r['last_line']}")
    summary = out / "summary.md"
    if summary.is_file():  # a suite's own summary (issue19-kernels'), last
        print("\n" + summary.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
