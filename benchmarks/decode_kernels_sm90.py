"""Compile the decode kernels (lab/kernels) for the H200's sm_90a on a machine without a GPU, and report spills.

    PYTHONPATH=src python3 benchmarks/decode_kernels_sm90.py            # every tuning candidate, 3 models' shapes
    PYTHONPATH=/path/to/triton-3.6:src python3 benchmarks/decode_kernels_sm90.py   # the device's Triton version

Triton lowers to PTX and its bundled ptxas assembles it without a device, so a change that does not compile, or
that spills registers, shows here before a GPU call is spent on it. Each line: kernel, shape, tile, registers,
spill bytes; the exit status is 1 when any candidate fails or spills.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

# (rows, K, halves, norm, residual) of every product of llama-tiny, llama-1b and llama-8b
SHAPES = [
    (1536, 512, 1, True, False), (512, 512, 1, False, True), (1376, 512, 2, True, False), (512, 1376, 1, False, True),
    (32000, 512, 1, True, False),
    (2560, 2048, 1, True, False), (2048, 2048, 1, False, True), (5632, 2048, 2, True, False),
    (2048, 5632, 1, False, True), (32000, 2048, 1, True, False),
    (6144, 4096, 1, True, False), (4096, 4096, 1, False, True), (14336, 4096, 2, True, False),
    (4096, 14336, 1, False, True), (128256, 4096, 1, True, False),
]
ATTENTION = [(8, 8, 64), (32, 4, 64), (32, 8, 128)]  # (heads, kv heads, head dim)
ATTENTION_MAX_SEQS = [328, 2048, 8192]  # cache slots: decode_fast.py's, the lab's, a long one


def compile_gemv(rows: int, k: int, halves: int, norm: bool, residual: bool, config, pdl: bool, fp8: bool = False):
    """``fp8``: the weights e4m3 (float8e4nv loads, upcast in registers) with fp32 row scales (lab/fp8.py)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from roofline.lab.kernels.gemv import _pow2_at_least
    from roofline.lab.kernels.triton_gemv import gemv_kernel

    per = -(-(-(-k // config.split_k)) // config.block_k) * config.block_k
    consts = dict(HALVES=halves, NORM=norm, RESIDUAL=residual, SPLIT_K=config.split_k, BLOCK_N=config.block_n,
                  BLOCK_K=config.block_k, K_PER_SPLIT=per, EVEN_K=k % config.block_k == 0 and per * config.split_k == k,
                  EVEN_N=rows % config.block_n == 0, NORM_BLOCK=_pow2_at_least(k), PDL=pdl,
                  REDUCE_EACH=config.reduce_each, UNROLL=config.unroll,
                  STAGES=config.stages if config.stages > 1 else None, SCALED=fp8,
                  PREFETCH=getattr(config, "prefetch", 1), EARLY_LAUNCH=getattr(config, "early_launch", False),
                  EVICT_FIRST=getattr(config, "evict_first", False))
    signature = {"W": "*fp8e4nv" if fp8 else "*fp16", "X": "*fp16", "OUT": "*fp16", "RES": "*fp16", "GAMMA": "*fp16",
                 "PARTIAL": "*fp32", "COUNTERS": "*i32", "SCALE": "*fp32" if fp8 else "*fp16", "N": "i32", "K": "i32",
                 "eps": "fp32", **{c: "constexpr" for c in consts}}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(10)}  # pointers and sizes, as Triton specialises them
    return triton.compile(ASTSource(gemv_kernel, signature, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 64), options={"num_warps": config.num_warps, "launch_pdl": pdl})


def compile_attention(heads: int, kv_heads: int, head_dim: int, t_per_split: int, pdl: bool, max_seq: int = 328,
                      version: int = 1, warps: int | None = None, split_block: int | None = None, l2: bool = False):
    """``version`` 2: triton_attention_v2's kernel with attention.py's default block and warps for it; ``l2``:
    with its L2-prefetch programs (the request compiled in)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from roofline.lab.kernels.attention import launch_constants, v2_block_t, v2_warps
    from roofline.lab.kernels.triton_attention import decode_attention_kernel
    from roofline.lab.kernels.triton_attention_v2 import decode_attention_v2_kernel

    block_t = min(t_per_split, 64) if version == 1 else v2_block_t(t_per_split, head_dim)
    warps = warps or (4 if version == 1 else v2_warps(block_t))
    kernel = decode_attention_kernel if version == 1 else decode_attention_v2_kernel
    consts = {**launch_constants(heads, kv_heads, head_dim, max_seq, t_per_split, block_t, split_block), "PDL": pdl,
              **({"EARLY_LAUNCH": False} if version == 2 else {})}
    prefetch = {f"PF_{r}{s}": "i32" for r in "ABC" for s in ("", "_BYTES")} if version == 2 else {}
    if version == 2:
        consts.update(L2_PREFETCH=l2, L2_ISSUE=l2, PF_CHUNK=32768, PF_LANES=32 * warps)
    if l2:
        prefetch = {f"PF_{r}{s}": "i32" if s else "i64" for r in "ABC" for s in ("", "_BYTES")}
    signature = {"QKV": "*fp16", "KC": "*fp16", "VC": "*fp16", "COS": "*fp16", "SIN": "*fp16", "POS": "*i64",
                 "OUT": "*fp16", "PARTIAL": "*fp32", "COUNTERS": "*i32", "scale": "fp32", "max_seq": "i32",
                 **{c: "constexpr" for c in consts if c not in ("L2_PREFETCH", "L2_ISSUE", "PF_CHUNK", "PF_LANES")},
                 **prefetch, **{c: "constexpr" for c in ("L2_PREFETCH", "L2_ISSUE", "PF_CHUNK", "PF_LANES")
                                if c in consts}}
    return triton.compile(ASTSource(kernel, signature, constexprs=consts),
                          target=GPUTarget("cuda", 90, 64), options={"num_warps": warps, "launch_pdl": pdl})


def compile_persistent(config, dim: int = 2048, k_attn: int = 2048, ffn: int = 5632, pdl: bool = True,
                       phase: int = 0):
    """lab/kernels/triton_persistent's kernel (issue 19): ``phase`` 0 the three phases with the grid barriers."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from roofline.lab.kernels.persistent_mlp import constexprs
    from roofline.lab.kernels.triton_persistent import persistent_gemv_kernel

    consts = {"PHASE": phase, **constexprs(config, dim, k_attn, ffn, pdl)}
    signature = {"WO": "*fp16", "W13": "*fp16", "W2": "*fp16", "O": "*fp16", "H": "*fp16", "M": "*fp16",
                 "GAMMA": "*fp16", "SYNC": "*i32", "ERR": "*i32", "DIM": "i32", "OK": "i32", "FFN": "i32",
                 "eps": "fp32", "spin_limit": "i32", **{c: "constexpr" for c in consts}}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(12)}
    return triton.compile(ASTSource(persistent_gemv_kernel, signature, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 64), options={"num_warps": config.num_warps, "launch_pdl": pdl})


def persistent_problems(quick: bool) -> int:
    """Every persistent candidate of llama-1b (one with --quick) with the barriers, under PDL: compiled, no spill,
    the barrier's release add and acquire reads and griddepcontrol in the PTX."""
    from roofline.lab.kernels.persistent_mlp import candidate_configs

    problems = 0
    configs = list({(c.wo, c.w13, c.w2, c.num_warps): c for c in candidate_configs(2048, 5632, 2048)}.values())
    for config in configs[:1] if quick else configs:
        try:
            kernel = compile_persistent(config)
            regs, spills = registers_and_spills(kernel)
            ptx = kernel.asm["ptx"]
            # the release add and the acquire reads (Triton lowers an acquire add of 0 to an acquire load)
            spills += not ("gpu.release.add" in ptx and ("gpu.acquire.b32" in ptx or "gpu.acquire.add" in ptx)
                           and "griddepcontrol.wait" in ptx and "griddepcontrol.launch_dependents" in ptx)
        except Exception as exc:  # noqa: BLE001
            regs, spills = -1, -1
            print(f"persistent {config}: {type(exc).__name__}: {str(exc)[:300]}")
        problems += spills != 0
        print(f"persistent llama-1b {config.wo}/{config.w13}/{config.w2} warps={config.num_warps}: {regs} registers, "
              f"{spills} spill bytes (or a barrier instruction missing)", flush=True)
    return problems


def compile_l2_prefetch(lanes: int = 128):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from roofline.lab.kernels.l2_prefetch import CHUNK_BYTES
    from roofline.lab.kernels.triton_l2 import l2_prefetch_kernel

    consts = {"CHUNK": CHUNK_BYTES, "LANES": lanes}
    signature = {"ADDR": "i64", "nbytes": "i64", "CHUNK": "constexpr", "LANES": "constexpr"}
    return triton.compile(ASTSource(l2_prefetch_kernel, signature, constexprs=consts),
                          target=GPUTarget("cuda", 90, 64), options={"num_warps": lanes // 32})


def compile_argmax(n: int, pdl: bool):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from roofline.lab.kernels.argmax import BLOCK, WARPS
    from roofline.lab.kernels.triton_argmax import argmax_kernel

    consts = dict(BLOCK=min(BLOCK, 1 << (n - 1).bit_length()), PDL=pdl)
    signature = {"X": "*fp16", "OUT": "*i64", "N": "i32", **{c: "constexpr" for c in consts}}
    return triton.compile(ASTSource(argmax_kernel, signature, constexprs=consts), target=GPUTarget("cuda", 90, 64),
                          options={"num_warps": min(WARPS, max(1, consts["BLOCK"] // 256)), "launch_pdl": pdl})


def registers_and_spills(kernel) -> tuple[int, int]:
    """ptxas -v of the kernel's PTX for sm_90a: (registers per thread, spill-store bytes)."""
    import triton

    ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    with tempfile.TemporaryDirectory() as tmp:
        ptx = os.path.join(tmp, "k.ptx")
        with open(ptx, "w") as fh:
            fh.write(kernel.asm["ptx"])
        done = subprocess.run([ptxas, "-v", "-arch=sm_90a", ptx, "-o", os.path.join(tmp, "k.cubin")],
                              capture_output=True, text=True, check=True)
    regs = re.findall(r"Used (\d+) registers", done.stderr)
    spills = re.findall(r"(\d+) bytes spill stores", done.stderr)
    return int(regs[0]) if regs else -1, int(spills[0]) if spills else 0


def _prefetch_only(shapes, prefetch_configs) -> int:
    """The deep-prefetch tiles of llama-1b's and llama-8b's products, launched with PDL (their only use)."""
    problems = 0
    for rows, k, halves, norm, residual in shapes:
        for config in prefetch_configs(rows, k, 132, halves):
            try:
                regs, spills = registers_and_spills(compile_gemv(rows, k, halves, norm, residual, config, True))
            except Exception as exc:  # noqa: BLE001
                regs, spills = -1, -1
                print(f"gemv {rows}x{k} {config}: {type(exc).__name__}: {str(exc)[:200]}")
            problems += spills != 0
            print(f"gemv {rows}x{k} halves={halves} {config.block_n}x{config.block_k} warps={config.num_warps} "
                  f"prefetch={config.prefetch}: {regs} registers, {spills} spill bytes", flush=True)
    print(f"{problems} kernels failed or spilled")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one tile per shape kind (a few seconds)")
    parser.add_argument("--only-tiles", type=int, nargs="+", metavar="I",
                        help="only the tiles at these indices of gemv.TILES (e.g. the ones just added)")
    parser.add_argument("--persistent", action="store_true",
                        help="only the persistent kernel's candidates (lab/kernels/persistent_mlp.py)")
    parser.add_argument("--prefetch", action="store_true",
                        help="only the deep-prefetch candidates (gemv.prefetch_configs), with PDL, gemv only")
    args = parser.parse_args(argv)
    import triton

    from roofline.lab.decode_fast import T_PER_SPLITS, T_PER_SPLITS_V2, V2_SIXTEEN_WARPS
    from roofline.lab.kernels.gemv import TILES, GemvConfig, candidate_configs, prefetch_configs

    print(f"triton {triton.__version__}, target sm_90a")
    problems = 0
    shapes = SHAPES[5:9] if args.quick else SHAPES
    if args.persistent:
        problems = persistent_problems(False)
        print(f"{problems} kernels failed or spilled")
        return 1 if problems else 0
    if args.prefetch:
        return _prefetch_only(shapes if args.quick else SHAPES[5:], prefetch_configs)
    for rows, k, halves, norm, residual in shapes:
        configs = candidate_configs(rows, k, 132, halves)
        if args.only_tiles:
            chosen = {TILES[i][:3] for i in args.only_tiles}
            configs = [c for c in configs if (c.block_n, c.block_k, c.num_warps) in chosen and
                       (c.stages > 1) == any(TILES[i][5] > 1 for i in args.only_tiles)]
        for config in configs[:1] if args.quick else configs:
            for pdl, fp8 in ((False, False), (True, False), (False, True)):
                try:
                    regs, spills = registers_and_spills(compile_gemv(rows, k, halves, norm, residual, config, pdl, fp8))
                except Exception as exc:  # noqa: BLE001 - reported, counted, the next compiled
                    regs, spills = -1, -1
                    print(f"gemv {rows}x{k} {config} pdl={pdl} fp8={fp8}: {type(exc).__name__}: {str(exc)[:200]}")
                problems += spills != 0
                print(f"gemv {rows}x{k} halves={halves} {config} pdl={pdl} fp8={fp8}: {regs} registers, "
                      f"{spills} spill bytes")
    attention = ([(1, p, None) for p in T_PER_SPLITS] + [(2, p, None) for p in T_PER_SPLITS_V2]
                 + [(2, p, 16) for p in V2_SIXTEEN_WARPS])
    for heads, kv_heads, head_dim in ATTENTION[1:2] if args.quick else ATTENTION:
        for version, per_split, warps in [(1, T_PER_SPLITS[1], None), (2, T_PER_SPLITS_V2[-1], None)] \
                if args.quick else attention:
            # 2048 slots (the lab's max_seq_len) with 32 a program: the combine before issue 19 spilled there
            for max_seq in ATTENTION_MAX_SEQS[1:2] if args.quick else ATTENTION_MAX_SEQS:
                for pdl in (False, True):
                    try:
                        regs, spills = registers_and_spills(
                            compile_attention(heads, kv_heads, head_dim, per_split, pdl, max_seq, version, warps))
                    except Exception as exc:  # noqa: BLE001
                        regs, spills = -1, -1
                        print(f"attention {heads}/{kv_heads}x{head_dim}: {type(exc).__name__}: {str(exc)[:200]}")
                    problems += spills != 0
                    print(f"attention v{version} {heads}/{kv_heads}x{head_dim} {per_split} slots{warps and f' {warps} warps' or ''}, {max_seq}-slot cache "
                          f"pdl={pdl}: {regs} registers, {spills} spill bytes")
    for per_split, warps in ((256, None), (512, 16)):  # version 2 with its L2-prefetch programs (issue 19)
        try:
            kernel = compile_attention(32, 4, 64, per_split, True, 328, 2, warps, l2=True)
            regs, spills = registers_and_spills(kernel)
            spills += "cp.async.bulk.prefetch.L2.global" not in kernel.asm["ptx"]  # compiled out: a problem
        except Exception as exc:  # noqa: BLE001
            regs, spills = -1, -1
            print(f"attention v2 L2 prefetch: {type(exc).__name__}: {str(exc)[:200]}")
        problems += spills != 0
        print(f"attention v2 32/4x64 {per_split} slots with L2 prefetch, pdl=True: {regs} registers, "
              f"{spills} spill bytes")
    for config in (GemvConfig(2, 1024, 1, 4, prefetch=2, evict_first=True),  # llama-1b's w13 with evict-first
                   GemvConfig(2, 1024, 2, 4, stages=3, evict_first=True)):
        try:
            kernel = compile_gemv(5632, 2048, 2, True, False, config, True)
            regs, spills = registers_and_spills(kernel)
            spills += "evict_first" not in kernel.asm["ptx"]  # the policy not in the loads: a problem
        except Exception as exc:  # noqa: BLE001
            regs, spills = -1, -1
            print(f"gemv evict-first {config}: {type(exc).__name__}: {str(exc)[:200]}")
        problems += spills != 0
        print(f"gemv 5632x2048 halves=2 {config}: {regs} registers, {spills} spill bytes")
    problems += persistent_problems(args.quick)
    try:
        regs, spills = registers_and_spills(compile_l2_prefetch())
    except Exception as exc:  # noqa: BLE001
        regs, spills = -1, -1
        print(f"l2_prefetch_kernel: {type(exc).__name__}: {str(exc)[:200]}")
    problems += spills != 0
    print(f"l2_prefetch_kernel: {regs} registers, {spills} spill bytes")
    for vocab in sorted({rows for rows, _, _, norm, _ in SHAPES if rows >= 32000}):
        for pdl in (False, True):
            try:
                regs, spills = registers_and_spills(compile_argmax(vocab, pdl))
            except Exception as exc:  # noqa: BLE001
                regs, spills = -1, -1
                print(f"argmax {vocab}: {type(exc).__name__}: {str(exc)[:200]}")
            problems += spills != 0
            print(f"argmax {vocab} pdl={pdl}: {regs} registers, {spills} spill bytes")
    print(f"{problems} kernels failed or spilled")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
