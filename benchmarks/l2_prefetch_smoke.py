"""Issue 19: does Hopper's L2 bulk prefetch compile, run and help here? The first stage of gpu_suite.py issue19-l2.

    PYTHONPATH=src python3 benchmarks/l2_prefetch_smoke.py OUT_DIR [--mb 32] [--rounds 20]
    PYTHONPATH=src python3 benchmarks/l2_prefetch_smoke.py --require OUT_DIR/l2_prefetch_smoke.json -- COMMAND...

On the GPU: (1) lab/kernels/triton_l2.l2_prefetch_kernel over a 64 MB tensor, synchronised (a wrong instruction
or operand fails here, in seconds); (2) the time of a read of an ``--mb`` tensor (torch.sum) after the L2 is
flushed (a 256 MB write), without and with a prefetch of that tensor launched first (in 32 KB and in 4 KB
requests, one a thread), then ~30 us of the GPU's sleep (time for the prefetch to land), in alternating rounds:
medians and min-max of the read alone, between two CUDA events; (3) attention v2 at llama-1b's heads with and
without L2-prefetch programs: the outputs and caches must be bit for bit the same. Without CUDA it writes what it
skipped (a smoke of this script on CPU) and checks the prefetch plan only. Writes OUT_DIR/l2_prefetch_smoke.json
and prints its figures last (JSON).

``--require JSON -- COMMAND``: run COMMAND only where that result says the instruction ran and left attention's
bits unchanged (else say why and exit 0): a faulting instruction would poison COMMAND's CUDA context and every
figure it was to measure (gpu_suite.py issue19-l2 runs the lab's rows, whose last uses the prefetch, this way).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from smoke_gate import run_gated


def plan_covers(nbytes: int, programs: int, lanes: int) -> bool:
    """Every byte of [0, nbytes) in some prefetch of the kernel's plan, each size a positive multiple of 16."""
    from roofline.lab.kernels.l2_prefetch import chunk_plan

    parts = {p for program in range(programs) for p in chunk_plan(nbytes, program, programs, lanes)}
    ends = sorted(parts)
    covered = 0
    for off, size in ends:
        if off > covered or size <= 0 or size % 16:
            return False
        covered = max(covered, off + size)
    return covered == nbytes


def refused(smoke: str | None) -> str | None:
    """Why a step with the L2 prefetch must not run after the smoke result ``smoke`` (None: it may, or no file)."""
    if smoke is None:
        return None
    try:
        found = json.loads(Path(smoke).read_text())
    except (OSError, ValueError):
        return f"the smoke test left no result ({smoke})"
    if not found.get("prefetch_64mb_runs") or not found.get("attention_same"):
        return f"the smoke test did not pass ({smoke}: {found.get('skipped') or 'prefetch or attention check failed'})"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    gated = run_gated(argv, refused, "l2_prefetch_smoke.py")
    if gated is not None:
        return gated
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--mb", type=int, default=32, help="MB read after the prefetch (under the 50 MB L2)")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    import torch

    from roofline.io import atomic_write_text, check_output_dir

    out = Path(args.out)
    check_output_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv), "torch": torch.__version__,
              "plan_covers_ranges": all(plan_covers(n, p, lanes) for n, p, lanes in
                                        ((32 << 20, 8, 128), (8_650_752, 3, 256), (48, 1, 128), (32_784, 2, 4)))}
    if not torch.cuda.is_available():
        result["skipped"] = "no CUDA device: only the prefetch plan was checked"
    else:
        result.update(_gpu(args, torch))
    atomic_write_text(out / "l2_prefetch_smoke.json", json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "rounds_us"}, indent=1))
    return 0 if result["plan_covers_ranges"] and result.get("attention_same", True) else 1


def _gpu(args, torch) -> dict:
    import triton

    from roofline.lab.kernels.l2_prefetch import CHUNK_BYTES, CHUNK_CANDIDATES, chunks
    from roofline.lab.kernels.triton_l2 import l2_prefetch_kernel

    props = torch.cuda.get_device_properties(0)
    found = {"gpu": props.name, "triton": triton.__version__, "l2_bytes": getattr(props, "L2_cache_size", None)}
    lanes = 128

    def prefetch(t, chunk=CHUNK_BYTES):
        nbytes = t.numel() * t.element_size()
        l2_prefetch_kernel[(-(-chunks(nbytes, chunk) // lanes),)](t.data_ptr(), nbytes, CHUNK=chunk, LANES=lanes,
                                                                  num_warps=lanes // 32)

    big = torch.randn(32 << 20, dtype=torch.float16, device="cuda")  # 64 MB
    began = time.perf_counter()
    prefetch(big)
    torch.cuda.synchronize()
    found["prefetch_64mb_runs"] = True
    found["first_launch_s"] = round(time.perf_counter() - began, 2)
    x = torch.randn(args.mb << 19, dtype=torch.float16, device="cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    want = x.float().sum().item()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rounds = {"without": [], **{f"with {c >> 10} KB" if c != CHUNK_BYTES else "with": [] for c in CHUNK_CANDIDATES}}
    for _ in range(args.rounds):
        for label in rounds:
            flush.fill_(1)
            if label != "without":
                prefetch(x, CHUNK_BYTES if label == "with" else int(label.split()[1]) << 10)
            torch.cuda._sleep(60_000)  # ~30 us at ~2 GHz: the prefetch lands (and the "without" read waits as long)
            start.record()
            x.sum()
            end.record()
            end.synchronize()
            rounds[label].append(1e3 * start.elapsed_time(end))
    found["read_mb"] = args.mb
    found["read_us"] = {k: {"median": statistics.median(v), "min": min(v), "max": max(v)} for k, v in rounds.items()}
    found["data_unchanged"] = x.float().sum().item() == want
    found["rounds_us"] = rounds
    found.update(_attention_same(torch))
    return found


def _attention_same(torch) -> dict:
    from roofline.lab.kernels.attention import decode_attention
    from roofline.lab.kernels.gemv import Scratch
    from roofline.lab.kernels.l2_prefetch import next_weights_ranges
    from roofline.models.llama import LlamaConfig, rope_tables

    h, hkv, d, seq, pos = 32, 4, 64, 328, 290
    dt = torch.float16
    cos, sin = (t.to(dt).cuda() for t in rope_tables(LlamaConfig(h * d, 1, h, hkv, 64, 10), seq))
    wo = torch.randn(2048, 2048, dtype=dt, device="cuda")
    w13 = torch.randn(11264, 2048, dtype=dt, device="cuda")
    qkv, p = torch.randn((h + 2 * hkv) * d, dtype=dt, device="cuda"), torch.tensor([pos], device="cuda")
    kc, vc = torch.randn(1, hkv, seq, d, dtype=dt, device="cuda"), torch.randn(1, hkv, seq, d, dtype=dt, device="cuda")
    outs = []
    for nbytes in (0, 8 << 20, 40 << 20):
        k, v, out = kc.clone(), vc.clone(), torch.empty(h * d, dtype=dt, device="cuda")
        s = Scratch(torch.device("cuda"), 1 << 16, 64)
        decode_attention(qkv, k, v, cos, sin, p, out, n_heads=h, n_kv_heads=hkv, scratch=s, t_per_split=256,
                         version=2, pdl=True, l2_prefetch=next_weights_ranges(wo, w13, nbytes))
        torch.cuda.synchronize()
        outs.append((out, k, v))
    same = all(torch.equal(a, b) for o in outs[1:] for a, b in zip(outs[0], o))
    return {"attention_same": same}


if __name__ == "__main__":
    sys.exit(main())
