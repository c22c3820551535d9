"""Issue 19: does the persistent kernel (lab/kernels/persistent_mlp.py) run here without hanging, and agree with the
three gemv kernels? The first stage of gpu_suite.py issue19-persist (in a subprocess with a time limit).

    PYTHONPATH=src python3 benchmarks/persistent_smoke.py OUT_DIR
    PYTHONPATH=src python3 benchmarks/persistent_smoke.py --require OUT_DIR/persistent_smoke.json -- COMMAND...

On the GPU, for a small shape (dim 256, ffn 512) and llama-1b's (2048, 5632), random fp16 weights: each tile of
persistent_mlp.TILES (the small shape: the first only) at the most programs a multiprocessor asked for (PER_SM's
last, capped by what fits), with and without PDL: one launch, synchronised, then the barrier's error flag (a
barrier that gave up), h and m against the three gemv kernels with the same tiles (each K chunk summed at once, in
K order: the same fp32 sums; whether bit for bit is recorded, the check allows TORCH_TOLERANCE, as the reduction
inside a tile may be laid out differently) and against the torch twin (relative error), the counter back at 0;
then a CUDA graph of h reset + the kernel, replayed 20 times: every replay's h the first one's (the counter is reset
by the kernel's last program, so a graph replays it as captured). Without CUDA it writes what it skipped. Writes
OUT_DIR/persistent_smoke.json ("passed": every check) and prints it last.

``--require JSON -- COMMAND``: run COMMAND only where that result passed (else say why and exit 0): a kernel that
hangs or faults would take COMMAND's CUDA context and every figure it was to measure with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from smoke_gate import run_gated

SHAPES = (("small", 256, 256, 512), ("llama-1b", 2048, 2048, 5632))  # (name, dim, attention width, ffn)
TORCH_TOLERANCE = 2**-8  # relative to max(1, |value|): fp32 sums in another order than F.linear's


def refused(smoke: str) -> str | None:
    """Why a command that uses the persistent kernel must not run after the smoke result ``smoke`` (None: it may)."""
    try:
        found = json.loads(Path(smoke).read_text())
    except (OSError, ValueError):
        return f"the smoke test left no result ({smoke})"
    if not found.get("passed"):
        return f"the smoke test did not pass ({smoke}: {found.get('skipped') or found.get('failures')})"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    gated = run_gated(argv, refused, "persistent_smoke.py")
    if gated is not None:
        return gated
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    args = parser.parse_args(argv)
    import torch

    from roofline.io import atomic_write_text, check_output_dir

    out = Path(args.out)
    check_output_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv), "torch": torch.__version__}
    path = out / "persistent_smoke.json"
    if not torch.cuda.is_available():
        result.update(passed=False, skipped="no CUDA device: nothing run")
    else:
        result.update(_gpu(torch, lambda partial: atomic_write_text(path, json.dumps({**result, **partial}, indent=1))))
    atomic_write_text(path, json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "cases"}, indent=1))
    return 0 if result["passed"] or "skipped" in result else 1


def _gpu(torch, checkpoint) -> dict:
    import triton

    from roofline.lab.kernels.persistent_mlp import PER_SM, candidate_configs

    found = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "cases": [], "failures": []}
    dt, dev = torch.float16, torch.device("cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for name, dim, k_attn, ffn in SHAPES:
        wo = torch.randn(dim, k_attn, dtype=dt, device=dev, generator=gen) * 0.02
        w13 = torch.randn(2 * ffn, dim, dtype=dt, device=dev, generator=gen) * 0.02
        w2 = torch.randn(dim, ffn, dtype=dt, device=dev, generator=gen) * 0.02
        o = torch.randn(k_attn, dtype=dt, device=dev, generator=gen)
        h0 = torch.randn(dim, dtype=dt, device=dev, generator=gen)
        gamma = torch.rand(dim, dtype=dt, device=dev, generator=gen) + 0.5
        configs = [c for c in candidate_configs(dim, ffn, k_attn) if c.per_sm == PER_SM[-1]]
        # ~13 compiles in all (each ~2 s): the small shape's first tile without and with PDL, llama-1b's every tile
        # with PDL (as the step launches it) and its first without; the gemv kernels for the first tile only.
        plan = ([(configs[0], False), (configs[0], True)] if name == "small"
                else [(configs[0], False)] + [(c, True) for c in configs])
        for config, pdl in plan:
            case = {"shape": name, "config": config.as_dict(), "pdl": pdl}
            began = time.perf_counter()
            try:
                case.update(_case(torch, config, pdl, (wo, w13, w2, o, h0, gamma), with_gemv=config == configs[0]))
            except Exception as exc:  # noqa: BLE001 - recorded; a sticky CUDA error fails the rest too
                case["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            case["seconds"] = round(time.perf_counter() - began, 2)
            ok = ("error" not in case and not case["barrier_gave_up"]
                  and (case["gemv_rel_error"] or 0.0) <= TORCH_TOLERANCE
                  and case["torch_rel_error"] <= TORCH_TOLERANCE and case["counters_reset"]
                  and case["graph_replays_same"])
            if not ok:
                found["failures"].append(f"{name} {config.wo}/{config.w13}/{config.w2} w{config.num_warps} "
                                         f"pdl={pdl}: {case.get('error') or 'a check failed'}")
            found["cases"].append(case)
            print(json.dumps(case), flush=True)
            checkpoint({**found, "passed": False})
    found["passed"] = not found["failures"] and bool(found["cases"])
    return found


def _case(torch, config, pdl: bool, tensors: tuple, with_gemv: bool) -> dict:
    """One configuration's checks (see the module's docstring); ``with_gemv``: against the gemv kernels too."""
    from roofline.lab.kernels.gemv import GemvConfig, Scratch, gemv
    from roofline.lab.kernels.persistent_mlp import PersistentState, persistent_mlp, persistent_mlp_torch

    wo, w13, w2, o, h0, gamma = tensors
    ffn = w2.shape[1]
    dev = h0.device
    state = PersistentState(dev, 2)
    h, m = h0.clone(), torch.zeros(ffn, dtype=h0.dtype, device=dev)
    persistent_mlp(wo, w13, w2, o, h, m, gamma, eps=1e-5, config=config, state=state, slot=1, pdl=pdl)
    torch.cuda.synchronize()
    gave_up = state.failed()
    hg, mg = h0.clone(), torch.zeros_like(m)
    if with_gemv:
        scratch = Scratch(dev, 1 << 16, 1 << 10)
        tile = lambda t: GemvConfig(t[0], t[1], 1, config.num_warps, True)  # noqa: E731
        gemv(wo, o, hg, config=tile(config.wo), scratch=scratch, residual=hg)
        gemv(w13, hg, mg, config=tile(config.w13), scratch=scratch, halves=2, norm_weight=gamma, eps=1e-5)
        gemv(w2, mg, hg, config=tile(config.w2), scratch=scratch, residual=hg)
    ht, mt = h0.clone(), torch.zeros_like(m)
    persistent_mlp_torch(wo, w13, w2, o, ht, mt, gamma, 1e-5)

    def rel(pairs):
        return max(((a.float() - b.float()).abs() / b.float().abs().clamp_min(1)).max().item() for a, b in pairs)

    hx, mx = torch.empty_like(h0), torch.zeros_like(m)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        hx.copy_(h0)
        persistent_mlp(wo, w13, w2, o, hx, mx, gamma, eps=1e-5, config=config, state=state, slot=0, pdl=pdl)
    same = True
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        graph.replay()
        same = same and torch.equal(hx, h) and torch.equal(mx, m)
    end.record()
    torch.cuda.synchronize()
    return {"barrier_gave_up": gave_up or state.failed(),
            "gemv_rel_error": rel(((h, hg), (m, mg))) if with_gemv else None,
            "bit_identical_to_gemv": (torch.equal(h, hg) and torch.equal(m, mg)) if with_gemv else None,
            "torch_rel_error": rel(((h, ht), (m, mt))),
            "counters_reset": int(state.sync.abs().sum()) == 0, "graph_replays_same": bool(same),
            "resident_per_sm": sorted(set(state.resident.values())),
            "replay_ms_with_checks": round(start.elapsed_time(end) / 20, 4)}


if __name__ == "__main__":
    sys.exit(main())
