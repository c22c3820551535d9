"""The hand-written decode kernels (lab/kernels) and the decode step built from them (lab/decode_fast.py).

Triton's kernels are checked against their torch twins on CPU under TRITON_INTERPRET=1 (in a subprocess: the
interpreter is chosen when Triton is first imported), and on the GPU in cuda-marked tests; the step built from
the twins must give the eager model's greedy tokens.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from roofline.lab.agreement import logit_gap
from roofline.lab.decode_fast import BACKEND_TORCH, FastDecode, default_config
from roofline.lab.generate import decode_one_token
from roofline.lab.graphed import GraphedDecoder
from roofline.lab.kernels import triton_available
from roofline.lab.kernels.gemv import candidate_configs
from roofline.lab.model import Fixes, configure, fused_projections
from roofline.models.llama import LlamaConfig, build_llama

from benchmark_scripts import load_benchmark

SRC = Path(__file__).resolve().parents[2] / "src"
MICRO = LlamaConfig(dim=128, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=192, vocab_size=256)

INTERPRETED_KERNELS = """
import torch
from roofline.lab.kernels.attention import attention_torch, decode_attention, scratch_floats, splits_for
from roofline.lab.kernels.argmax import argmax
from roofline.lab.kernels.gemv import GemvConfig, Scratch, gemv, gemv_torch
from roofline.models.llama import LlamaConfig, rope_tables

torch.manual_seed(0)
dt = torch.float16
worst = {}
cases = [  # rows, K, halves, norm, residual, tile: plain, split-K with every fusion, uneven K and rows
    (64, 256, 1, False, False, GemvConfig(8, 128, 1)), (64, 256, 1, True, True, GemvConfig(8, 64, 2)),
    (96, 256, 2, True, True, GemvConfig(8, 64, 2, 4, True)), (64, 512, 1, True, True, GemvConfig(4, 64, 2, 4, False, 2)),
    (96, 344, 2, True, False, GemvConfig(16, 64, 3)), (40, 200, 1, False, True, GemvConfig(16, 128, 2)),
    (64, 256, 2, True, False, GemvConfig(2, 256, 1, 8)),  # a whole row per pass: no loop
    (64, 512, 1, True, True, GemvConfig(4, 64, 1, 4, False, 1, 3)),  # the loop pipelined (compiled only on a GPU)
    # Deep prefetch (issue 19): the whole row before the wait, part of it then the loop (uneven K: its last tile
    # masked), split-K with each split's first half prefetched, the gate/up halves' whole rows
    (64, 256, 1, True, True, GemvConfig(4, 64, 1, 4, prefetch=4)), (96, 344, 2, True, False, GemvConfig(8, 64, 1, prefetch=2)),
    (64, 512, 1, True, True, GemvConfig(4, 64, 2, prefetch=2)), (96, 256, 2, True, True, GemvConfig(2, 128, 1, 4, prefetch=2)),
    (40, 200, 1, False, True, GemvConfig(16, 64, 1, prefetch=2))]
for i, (rows, k, halves, norm, res, cfg) in enumerate(cases):
    w = torch.randn(rows, k, dtype=dt) * 0.05
    x, g = torch.randn(k, dtype=dt), torch.rand(k, dtype=dt) + 0.5
    r = torch.randn(rows // halves, dtype=dt)
    out, ref = torch.empty(rows // halves, dtype=dt), torch.empty(rows // halves, dtype=dt)
    s = Scratch(torch.device("cpu"), 4096, 64)
    kw = dict(halves=halves, norm_weight=g if norm else None, residual=r.clone() if res else None)
    gemv(w, x, out, config=cfg, scratch=s, **kw)
    gemv_torch(w, x, ref, **kw)
    worst[f"gemv{i}"] = [(out.float() - ref.float()).abs().max().item(), int(s.counters.abs().sum())]
for i, (rows, k, halves, norm, res, cfg) in enumerate(cases[1:3]):  # e4m3 weights, fp32 row scales (lab/fp8.py)
    w = torch.randn(rows, k) * 0.05
    scale = w.abs().amax(1) / 448
    w8 = (w / scale[:, None]).to(torch.float8_e4m3fn)
    x, g, r = torch.randn(k, dtype=dt), torch.rand(k, dtype=dt) + 0.5, torch.randn(rows // halves, dtype=dt)
    out, ref = torch.empty(rows // halves, dtype=dt), torch.empty(rows // halves, dtype=dt)
    s = Scratch(torch.device("cpu"), 4096, 64)
    kw = dict(halves=halves, norm_weight=g if norm else None, residual=r.clone() if res else None, scale=scale)
    gemv(w8, x, out, config=cfg, scratch=s, **kw)
    gemv_torch(w8, x, ref, **kw)
    worst[f"fp8gemv{i}"] = [((out.float() - ref.float()).abs() / ref.float().abs().clamp_min(1)).max().item(),
                            int(s.counters.abs().sum())]
for i, (h, hkv, d, seq, pos, per, sb) in enumerate([  # splits past pos, pos on a split's first slot, a group of 3
        (4, 2, 32, 48, 37, 16, None), (8, 8, 64, 40, 20, 64, None), (4, 1, 32, 70, 69, 32, None),
        (4, 2, 32, 80, 32, 16, None), (6, 2, 32, 48, 30, 16, None),
        # a cache far longer than the context (29 of 32 splits past pos); a late split (32 live: two combine
        # blocks of 16); 30 live splits merged 4 at a time (the online rescale over 8 blocks, the last one ragged)
        (4, 2, 32, 512, 40, 16, None), (4, 2, 32, 512, 500, 16, None), (6, 2, 32, 512, 470, 16, 4)]):
    cos, sin = (t.to(dt) for t in rope_tables(LlamaConfig(h * d, 1, h, hkv, 64, 10), seq))
    kc, vc = torch.randn(1, hkv, seq, d, dtype=dt), torch.randn(1, hkv, seq, d, dtype=dt)
    kc2, vc2 = kc.clone(), vc.clone()
    qkv, p = torch.randn((h + 2 * hkv) * d, dtype=dt), torch.tensor([pos])
    out, ref = torch.empty(h * d, dtype=dt), torch.empty(h * d, dtype=dt)
    s = Scratch(torch.device("cpu"), 1 << 16, 64)
    decode_attention(qkv, kc, vc, cos, sin, p, out, n_heads=h, n_kv_heads=hkv, scratch=s, t_per_split=per, block_t=16,
                     split_block=sb)
    attention_torch(qkv, kc2, vc2, cos, sin, p, ref, n_heads=h, n_kv_heads=hkv)
    worst[f"attention{i}"] = [(out.float() - ref.float()).abs().max().item(), int(s.counters.abs().sum()),
                              (kc.float() - kc2.float()).abs().max().item() + (vc.float() - vc2.float()).abs().max().item()]
# Version 2 (triton_attention_v2): a lone live slice writes the output itself; wide slices looped in blocks
# (pos inside the first slice, at its first slot, at 0), several live slices merged as version 1 does, and
# llama-1b's heads with its default 256-slot block in a 512-slot slice.
for i, (h, hkv, d, seq, pos, per, bt) in enumerate([
        (4, 2, 32, 48, 37, 64, 16), (6, 2, 32, 48, 30, 16, None), (4, 1, 32, 70, 69, 32, 16),
        (4, 2, 32, 512, 40, 128, 32), (4, 2, 32, 512, 300, 128, 32), (4, 2, 32, 512, 0, 128, 32),
        (4, 2, 32, 512, 128, 128, 64), (32, 4, 64, 328, 290, 512, None)]):
    cos, sin = (t.to(dt) for t in rope_tables(LlamaConfig(h * d, 1, h, hkv, 64, 10), seq))
    kc, vc = torch.randn(1, hkv, seq, d, dtype=dt), torch.randn(1, hkv, seq, d, dtype=dt)
    kc2, vc2 = kc.clone(), vc.clone()
    qkv, p = torch.randn((h + 2 * hkv) * d, dtype=dt), torch.tensor([pos])
    out, ref = torch.full((h * d,), float("nan"), dtype=dt), torch.empty(h * d, dtype=dt)
    s = Scratch(torch.device("cpu"), 1 << 16, 64)
    decode_attention(qkv, kc, vc, cos, sin, p, out, n_heads=h, n_kv_heads=hkv, scratch=s, t_per_split=per,
                     block_t=bt, version=2)
    attention_torch(qkv, kc2, vc2, cos, sin, p, ref, n_heads=h, n_kv_heads=hkv)
    worst[f"attention_v2_{i}"] = [(out.float() - ref.float()).abs().max().item(), int(s.counters.abs().sum()),
                                  (kc.float() - kc2.float()).abs().max().item() + (vc.float() - vc2.float()).abs().max().item()]
# One Scratch for launch after launch with other slots per program (other partials layouts), as the attention
# benchmark's graphs replay them: each launch must leave the counters at zero for the next.
h, hkv, d, seq = 4, 2, 32, 256
cos, sin = (t.to(dt) for t in rope_tables(LlamaConfig(h * d, 1, h, hkv, 64, 10), seq))
kc, vc = torch.randn(1, hkv, seq, d, dtype=dt), torch.randn(1, hkv, seq, d, dtype=dt)
qkv, p = torch.randn((h + 2 * hkv) * d, dtype=dt), torch.tensor([70])
ref = attention_torch(qkv, kc.clone(), vc.clone(), cos, sin, p, torch.empty(h * d, dtype=dt), n_heads=h, n_kv_heads=hkv)
s, errors, counters = Scratch(torch.device("cpu"), scratch_floats(hkv, h, d, splits_for(seq, 16)), 64), [], []
for per, version in ((16, 1), (32, 1), (64, 1), (16, 1), (32, 2), (128, 2), (16, 2), (32, 1)):
    out = torch.full((h * d,), float("nan"), dtype=dt)
    decode_attention(qkv, kc, vc, cos, sin, p, out, n_heads=h, n_kv_heads=hkv, scratch=s, t_per_split=per,
                     version=version)
    errors.append((out.float() - ref.float()).abs().max().item())
    counters.append(int(s.counters.abs().sum()))
worst["attention_relaunched"] = [torch.tensor(errors).max().item(), max(counters), 0.0]  # NaN stays NaN
for n in (300, 40000):  # one pass, and five passes of the 8k block with a ragged end
    logits = torch.randn(n, dtype=dt)
    logits[n - 5] = logits[n // 3] = 9.0  # a tie: torch answers the first index
    got = torch.full((1,), -1, dtype=torch.long)
    argmax(logits, got)
    worst[f"argmax{n}"] = [float(got.item() != logits.argmax().item()), 0, 0.0]
print("RESULT", __import__("json").dumps(worst))
"""


def _interpret(script: str, timeout: int = 240) -> dict:
    if not triton_available():
        pytest.skip("Triton is not installed")
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                          timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        if "interpret" in done.stderr.lower() and "not supported" in done.stderr.lower():
            pytest.skip("Triton's interpreter cannot run here: " + done.stderr.strip().splitlines()[-1])
        raise AssertionError(done.stderr[-3000:])
    return json.loads(lines[-1][len("RESULT "):])


def test_triton_kernels_match_their_torch_twins_in_the_interpreter():
    worst = _interpret(INTERPRETED_KERNELS)
    for name, (error, counters, *cache) in worst.items():
        assert counters == 0, f"{name}: split-K/attention arrival counters were not reset"
        if name.startswith("argmax"):
            assert error == 0.0, f"{name}: not torch.argmax's index"
        elif name.startswith("fp8gemv"):
            # fp32 sums in another order than F.linear's: the fp16 result may round one step apart.
            assert error <= 2**-9, f"{name}: the FP8 product is not its twin's (relative error {error})"
        elif name.startswith("gemv"):
            assert error == 0.0, f"{name}: the product is not the eager ops' (max error {error})"
        else:
            assert error < 2e-3, f"{name}: attention differs by {error}"
            assert cache == [0.0], f"{name}: the KV-cache write differs"


def _micro_model():
    model = configure(build_llama(MICRO, dtype=torch.float16, seed=3), Fixes.all())
    model.setup_caches(1, 48)
    return model


def _eager_tokens(model, token, pos, steps):
    out, pad = [], torch.zeros(1, dtype=torch.long, device=token.device)
    for i in range(steps):
        token = decode_one_token(model, token, torch.tensor([pos + i], device=token.device), pad)[:, None]
        out.append(token.item())
    return out


@torch.no_grad()
def test_the_step_built_from_the_twins_gives_the_eager_models_tokens():
    model = _micro_model()
    prompt = torch.randint(0, MICRO.vocab_size, (1, 20), generator=torch.Generator().manual_seed(0))
    model(prompt, torch.arange(20))
    reference = _eager_tokens(model, prompt[:, -1:], 20, 8)
    model(prompt, torch.arange(20))
    with fused_projections(model):
        fast = FastDecode(model, backend=BACKEND_TORCH)
        assert fast.layers[0]["qkv"].data_ptr() == model.layers[0].attention.wqkv.data_ptr()  # shared, not copied
        decoder = GraphedDecoder(model, fast.step, torch.zeros(1, dtype=torch.long), steps_per_graph=4)
        tokens = decoder.run(prompt[:, -1:], 20, 8)[0].tolist()
    assert tokens == reference
    assert fast.weight_bytes() == 2 * sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def test_the_triton_step_in_the_interpreter_gives_the_eager_models_tokens():
    result = _interpret(f"""
        import torch
        from roofline.lab.decode_fast import BACKEND_TRITON, FastDecode
        from roofline.lab.generate import decode_one_token
        from roofline.lab.model import Fixes, configure
        from roofline.models.llama import LlamaConfig, build_llama

        model = configure(build_llama(LlamaConfig(**{MICRO.__dict__!r}), dtype=torch.float16, seed=3), Fixes.all())
        model.setup_caches(1, 48)
        prompt = torch.randint(0, 256, (1, 20), generator=torch.Generator().manual_seed(0))
        pad = torch.zeros(1, dtype=torch.long)
        runs = {{}}
        with torch.no_grad():
            # attention v2 (its slices merged is checked kernel by kernel above): slots 20-22 in one slice, no merge
            for name, step in (("eager", decode_one_token), ("fast", FastDecode(model).step),
                               ("fast v2", FastDecode(model, attention_version=2).step)):
                model(prompt, torch.arange(20))
                token, out = prompt[:, -1:], []
                for i in range(3):
                    token = step(model, token, torch.tensor([20 + i]), pad)[:, None]
                    out.append(token.item())
                runs[name] = out
            from roofline.lab.decode_fast import BACKEND_TORCH
            from roofline.lab.fp8 import Fp8FastDecode, fp8_weights

            with fp8_weights(model):  # e4m3 weights: the Triton GEMV against its torch twin
                for name, backend in (("fp8", None), ("fp8 twin", BACKEND_TORCH)):
                    step = Fp8FastDecode(model, backend=backend).step
                    model(prompt, torch.arange(20))
                    logits = step.__self__.logits
                    step(model, prompt[:, -1:], torch.tensor([20]), pad)
                    runs[name] = logits.float().tolist()
        runs["backend"] = FastDecode(model).backend == BACKEND_TRITON
        print("RESULT", __import__("json").dumps(runs))
    """)
    assert result["backend"], "under TRITON_INTERPRET=1 the step must run the Triton kernels"
    assert result["fast"] == result["eager"] == result["fast v2"]
    fp8, twin = torch.tensor(result["fp8"]), torch.tensor(result["fp8 twin"])
    assert torch.allclose(fp8, twin, atol=2e-2, rtol=1e-2) and fp8.argmax() == twin.argmax()


def test_tiles_split_k_only_where_rows_are_too_few_to_fill_the_gpu():
    for rows, k in [(2048, 5632), (4096, 14336), (14336, 4096), (128256, 4096), (512, 1376)]:
        configs = candidate_configs(rows, k, sm_count=132)
        assert configs and len(set(configs)) == len(configs)
        for c in configs:
            assert c.split_k == 1 or -(-rows // c.block_n) < 2 * 132, (rows, k, c)
            assert k // c.split_k >= min(c.block_k, k) // 2
    assert any(c.split_k > 1 for c in candidate_configs(2048, 5632))
    assert all(c.split_k == 1 for c in candidate_configs(128256, 4096))
    assert default_config(2048, 2048).split_k > 1 and default_config(128256, 4096).split_k == 1


def test_fast_decode_refuses_a_model_without_a_kv_cache():
    with pytest.raises(ValueError, match="KV cache"):
        FastDecode(configure(build_llama(MICRO, dtype=torch.float16), Fixes.all()))


def test_the_benchmark_script_runs_end_to_end_on_cpu(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    script = load_benchmark("decode_fast")
    out = tmp_path / "fast.json"
    assert script.main(["--device", "cpu", "--models", "llama-micro", "--context", "16", "--steps", "8",
                        "--reps", "1", "--l2-prefetch", "-o", str(out)]) == 0  # --prefetch, --attention-v2 too
    data = json.loads(out.read_text())
    row = data["models"]["llama-micro"]
    assert "error" not in row, row
    assert "deep prefetch needs PDL (the Triton kernels on a CUDA GPU): not run" in row["notes"]
    assert "L2 prefetch needs PDL and deep prefetch (Triton on a CUDA GPU): not run" in row["notes"]
    assert row["fast"]["backend"] in (BACKEND_TORCH, "triton")
    assert set(row["variants"]) == {"+ Triton GEMV", "+ Triton GEMV + attention v2",
                                    "eager stand-in for tuned (cpu smoke)"}
    for variant in row["variants"].values():
        assert variant["tokens"]["same"] == variant["tokens"]["compared"] == 8
        assert len(variant["runs_tokens_per_s"]) == 1 and variant["tokens_per_s"] > 0
        assert {"kernel_us_per_token", "gap_us_per_token", "classes"} <= set(variant["breakdown"])
    assert script.main(["--table", str(out)]) == 0
    assert "| llama-micro | + Triton GEMV |" in capsys.readouterr().out
    assert all(v["generated_tokens"] == row["eager_tokens"] for v in row["variants"].values())
    # The deep-prefetch step starts from the attention v2 step's tuning (refused without it) and records its tiles.
    model = _micro_model()
    fast, row = FastDecode(model), {"fast": {}}
    with pytest.raises(RuntimeError, match="attention v2 step was not built"):
        script._prefetch_step(model, fast, {}, row, print)
    step = script._prefetch_step(model, fast, {"tuning": fast.tuning}, row, print)
    assert callable(step) and set(row["fast"]["prefetch"]["configs"]) == {"qkv", "wo", "w13", "w2", "head"}
    # The L2-prefetch step starts from the deep-prefetch step's tuning (refused without it) and records its amount.
    with pytest.raises(RuntimeError, match="deep-prefetch step was not built"):
        script._l2_step(model, fast, {}, row, print, 30)
    assert callable(script._l2_step(model, fast, {"tuning": fast.tuning}, row, print, 30))
    assert row["fast"]["l2_prefetch"] == {"bytes": 0, "chunk": 32768, "candidates_us": [], "evict_first": [],
                                          "evict_first_us": {}}  # CPU: not tuned


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or not triton_available(), reason="needs a CUDA GPU and Triton")
def test_kernels_match_torch_on_the_gpu_for_the_models_shapes():
    from dataclasses import replace

    from roofline.lab.kernels.gemv import Scratch, gemv, gemv_torch, prefetch_configs

    torch.manual_seed(0)
    scratch = Scratch(torch.device("cuda"), 1 << 22, 1 << 15)
    for rows, k, halves, norm, res in [(2560, 2048, 1, True, False), (2048, 5632, 1, False, True),
                                       (11264, 2048, 2, True, False), (4096, 14336, 1, False, True),
                                       (512, 1376, 1, False, True)]:
        w = torch.randn(rows, k, dtype=torch.float16, device="cuda") * 0.02
        x = torch.randn(k, dtype=torch.float16, device="cuda")
        g = torch.rand(k, dtype=torch.float16, device="cuda") + 0.5
        r = torch.randn(rows // halves, dtype=torch.float16, device="cuda")
        ref = gemv_torch(w, x, torch.empty_like(r), halves=halves, norm_weight=g if norm else None,
                         residual=r if res else None)
        configs = candidate_configs(rows // halves, k, halves=halves)
        picked = configs[:2] + [c for c in configs if c.split_k > 1][:1] + [c for c in configs if c.stages > 1][:1]
        for config in picked + [c for c in configs if c.block_k >= 2048][:1]:
            out = gemv(w, x, torch.empty_like(r), config=config, scratch=scratch, halves=halves,
                       norm_weight=g if norm else None, residual=r if res else None)
            torch.testing.assert_close(out, ref, atol=2e-2, rtol=1e-2, msg=f"{rows}x{k} {config}")
        deep = prefetch_configs(rows // halves, k, halves=halves)  # launched as the PDL step launches them
        for config in deep[:1] + deep[-1:] + [replace(deep[-1], early_launch=True)]:
            out = gemv(w, x, torch.empty_like(r), config=config, scratch=scratch, halves=halves,
                       norm_weight=g if norm else None, residual=r if res else None, pdl=True)
            torch.testing.assert_close(out, ref, atol=2e-2, rtol=1e-2, msg=f"{rows}x{k} {config}")
        assert int(scratch.counters.abs().sum()) == 0


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or not triton_available(), reason="needs a CUDA GPU and Triton")
def test_attention_and_argmax_match_torch_on_the_gpu_at_the_models_shapes():
    from roofline.lab.kernels.argmax import argmax
    from roofline.lab.kernels.attention import attention_torch, decode_attention, scratch_floats, splits_for
    from roofline.lab.kernels.gemv import Scratch
    from roofline.models.llama import rope_tables

    torch.manual_seed(0)
    dt, dev = torch.float16, torch.device("cuda")
    scratch = Scratch(dev, 1 << 22, 1 << 15)
    for heads, kv_heads, head_dim in [(32, 4, 64), (32, 8, 128), (8, 8, 64)]:
        cos, sin = (t.to(dev, dt) for t in rope_tables(LlamaConfig(heads * head_dim, 1, heads, kv_heads, 64, 10), 2048))
        # splits past pos; pos on a split's last slot; a cache far longer than the context; 63 live splits (4 blocks)
        for per_split, pos, seq in [(16, 300, 328), (32, 31, 328), (64, 327, 328), (16, 40, 2048), (32, 2000, 2048)]:
            kc = torch.randn(1, kv_heads, seq, head_dim, dtype=dt, device=dev)
            vc = torch.randn_like(kc)
            kc2, vc2 = kc.clone(), vc.clone()
            qkv = torch.randn((heads + 2 * kv_heads) * head_dim, dtype=dt, device=dev)
            p = torch.tensor([pos], device=dev)
            out = decode_attention(qkv, kc, vc, cos, sin, p, torch.empty(heads * head_dim, dtype=dt, device=dev),
                                   n_heads=heads, n_kv_heads=kv_heads, scratch=scratch, t_per_split=per_split)
            ref = attention_torch(qkv, kc2, vc2, cos, sin, p, torch.empty_like(out), n_heads=heads,
                                  n_kv_heads=kv_heads)
            torch.testing.assert_close(out, ref, atol=2e-3, rtol=1e-2, msg=f"{heads}/{kv_heads}x{head_dim} {per_split}")
            # Only the new position's row is written. Its rotated key may differ from torch's by about one fp16 ulp of
            # the products in x*cos - y*sin (torch rounds each product to fp16, the kernel keeps fp32 and contracts):
            # at most 2^-9 absolute on the H200, every other row bit-identical.
            others = torch.arange(kc.shape[2], device=dev) != pos
            assert torch.equal(kc[:, :, others], kc2[:, :, others]) and torch.equal(vc, vc2)
            torch.testing.assert_close(kc[:, :, pos], kc2[:, :, pos], atol=2 ** -9, rtol=2 ** -10)
        assert int(scratch.counters.abs().sum()) == 0
    for vocab in (32000, 128256):
        logits = torch.randn(vocab, dtype=dt, device=dev)
        logits[vocab - 7] = logits[vocab // 3] = 12.0
        assert argmax(logits, torch.empty(1, dtype=torch.long, device=dev)).item() == vocab // 3


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or not triton_available(), reason="needs a CUDA GPU and Triton")
@torch.no_grad()
def test_graphed_triton_step_gives_the_eager_tokens_on_the_gpu():
    model = configure(build_llama(MICRO, dtype=torch.float16, device="cuda", seed=3), Fixes.all())
    model.setup_caches(1, 96)
    prompt = torch.randint(0, MICRO.vocab_size, (1, 40), generator=torch.Generator().manual_seed(0)).cuda()
    model(prompt, torch.arange(40, device="cuda"))
    reference = _eager_tokens(model, prompt[:, -1:], 40, 16)
    fast = FastDecode(model)
    decoder = GraphedDecoder(model, fast.step, torch.zeros(1, dtype=torch.long, device="cuda"), steps_per_graph=8)
    model(prompt, torch.arange(40, device="cuda"))
    tokens = decoder.run(prompt[:, -1:], 40, 16)[0].tolist()
    if tokens != reference:  # another summation order may flip a near-tie, and nothing else
        first = next(i for i, (a, b) in enumerate(zip(tokens, reference)) if a != b)
        fed = prompt[0].tolist() + [prompt[0, -1].item()]
        _, ulps = logit_gap(model, fed, reference, first)
        assert ulps <= 2, f"token {first} differs where the eager model's top two logits are {ulps} ulp apart"


def test_tuning_keeps_each_roles_fastest_tile_and_survives_a_failing_one(monkeypatch):
    import types

    from roofline.lab import decode_fast

    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON)
    timed = []

    def fake_time(decode, role, weights, x, out, norm, residual, config, replays):
        timed.append((role, config, len(weights), norm is not None, residual is not None))
        if config.unroll == 2:
            raise RuntimeError("does not compile")
        return 1.0 / config.block_n  # the widest row block wins

    attended = []
    monkeypatch.setattr(decode_fast, "_time_products", fake_time)
    monkeypatch.setattr(decode_fast, "_time_launches", lambda launch_all, n, replays: (launch_all(), 100.0 / n)[1])
    monkeypatch.setattr(fast, "attend", lambda layer, pos, per_split, warps=None, split_block=None:
                        attended.append((int(pos), per_split)))
    monkeypatch.setattr(fast, "device", types.SimpleNamespace(type="cuda"))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: types.SimpleNamespace(multi_processor_count=132))
    tuning = decode_fast.tune(fast, position=30)
    assert set(tuning.configs) == set(decode_fast.ROLES)
    assert tuning.t_per_split == decode_fast.T_PER_SPLITS[0] and len(tuning.candidates_us["attention"]) == 3
    # The attention candidates are timed where the caller decodes (every layer, every candidate), not at max_seq.
    assert sorted(set(attended)) == [(30, per) for per in decode_fast.T_PER_SPLITS]
    assert len(attended) == 3 * MICRO.n_layers and tuning.as_dict()["attention_position"] == 30
    attended.clear()
    assert decode_fast.tune(fast, position=10_000).attention_position == 47 == attended[0][0]  # the cache's last slot
    assert all(c.block_n == max(t[1].block_n for t in timed if t[0] == role) for role, c in tuning.configs.items())
    assert {t[0] for t in timed if t[3]} == {"qkv", "w13", "head"} and {t[0] for t in timed if t[4]} == {"wo", "w2"}
    assert all(t[2] == MICRO.n_layers for t in timed if t[0] != "head")
    assert any(us == float("inf") for rows in tuning.candidates_us.values() for _, us in rows)
    assert json.dumps(tuning.as_dict())


def test_attention_v2_tuning_keeps_the_products_tiles_and_chooses_slices_and_warps(monkeypatch):
    import types

    from roofline.lab import decode_fast

    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    fast.tuning.configs["wo"] = decode_fast.GemvConfig(2, 64)
    attended, blocks = [], []

    def attend(layer, pos, per_split, warps=None, split_block=None):
        attended.append((int(pos), per_split, warps))
        blocks.append((per_split, split_block))
        if per_split == 128:
            raise RuntimeError("does not compile")

    def fake_launches(launch_all, n, replays):  # the 16-warp 256-slot slice is the fastest
        launch_all()
        _, per_split, warps = attended[-1]
        return 1.0 if (per_split, warps) == (256, 16) else 2.0 + per_split / 1000

    monkeypatch.setattr(decode_fast, "_time_launches", fake_launches)
    monkeypatch.setattr(fast, "attend", attend)
    monkeypatch.setattr(fast, "device", types.SimpleNamespace(type="cuda"))
    tuning = decode_fast.tune_attention(fast, position=30)
    assert (tuning.t_per_split, tuning.attention_warps, tuning.attention_position) == (256, 16, 30)
    assert tuning.configs["wo"] == decode_fast.GemvConfig(2, 64)
    assert {(p, w) for _, p, w in attended} == ({(p, None) for p in decode_fast.T_PER_SPLITS_V2}
                                                | {(p, 16) for p in decode_fast.V2_SIXTEEN_WARPS})
    assert [us for c, us in tuning.candidates_us["attention"] if c["t_per_split"] == 128] == [float("inf")]
    assert json.loads(json.dumps(tuning.as_dict()))["attention_warps"] == 16
    # The merge sized by the slices live at slot 30 (one for every candidate: 2, the least), not by the cache's;
    # the chosen candidate's is the tuning's.
    assert set(blocks) == {(p, 2) for p in decode_fast.T_PER_SPLITS_V2}
    assert tuning.attention_split_block == 2


def test_attention_tuning_keeps_the_steps_settings_when_every_candidate_fails(monkeypatch):
    """Not a failed candidate's warps or merge block beside the kept slots: the settings the step had, together."""
    import types
    from dataclasses import replace

    from roofline.lab import decode_fast

    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    fast.tuning = replace(fast.tuning, t_per_split=64, attention_warps=8, attention_split_block=4,
                          attention_position=7)

    def attend(layer, pos, per_split, warps=None, split_block=None):
        raise RuntimeError("does not compile")

    monkeypatch.setattr(decode_fast, "_time_launches", lambda launch_all, n, replays: launch_all())
    monkeypatch.setattr(fast, "attend", attend)
    monkeypatch.setattr(fast, "device", types.SimpleNamespace(type="cuda"))
    said = []
    tuning = decode_fast.tune_attention(fast, position=30, progress=said.append)
    assert (tuning.t_per_split, tuning.attention_warps, tuning.attention_split_block,
            tuning.attention_position) == (64, 8, 4, 7)
    rows = tuning.candidates_us["attention"]
    assert len(rows) == len(decode_fast.T_PER_SPLITS_V2) + len(decode_fast.V2_SIXTEEN_WARPS)
    assert all(us == float("inf") for _, us in rows)
    assert "every candidate failed" in said[-1]


def test_the_merge_block_follows_the_live_slices_not_the_cache():
    from roofline.lab.kernels.attention import launch_constants, live_split_block

    # llama-1b at slot 288 of the lab's 2,048-slot cache: 256-slot slices, 2 live of 8
    assert launch_constants(32, 4, 64, 2048, 256, 256)["SPLIT_BLOCK"] == 8
    assert live_split_block(288, 256) == 2 and live_split_block(288, 32) == 16 and live_split_block(288, 128) == 4
    assert live_split_block(0, 512) == 2 and live_split_block(8000, 16) == 16


def test_a_prefetch_deeper_than_a_programs_share_of_k_is_refused():
    from roofline.lab.kernels.attention import decode_attention
    from roofline.lab.kernels.gemv import GemvConfig, Scratch, gemv

    if triton_available():  # early launch is the second attention kernel's only
        with pytest.raises(ValueError, match="early_launch"):
            decode_attention(*[torch.zeros(1)] * 7, n_heads=4, n_kv_heads=2, scratch=None, early_launch=True)

    w, x, out = torch.zeros(64, 256, dtype=torch.float16), torch.zeros(256, dtype=torch.float16), torch.zeros(64)
    for config in (GemvConfig(4, 64, 1, prefetch=8), GemvConfig(4, 64, 2, prefetch=4), GemvConfig(4, 64, 1, prefetch=3)):
        with pytest.raises(ValueError, match="prefetch"):
            gemv(w, x, out, config=config, scratch=Scratch(torch.device("cpu"), 4096, 64))


def test_prefetch_tuning_times_the_deep_tiles_under_pdl_beside_the_current_one_and_drops_wrong_ones(monkeypatch):
    import types

    from roofline.lab import decode_fast
    from roofline.lab.kernels.gemv import GemvConfig, prefetch_configs

    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    fast.tuning = decode_fast.replace(fast.tuning, t_per_split=256, attention_warps=16, attention_split_block=2)
    before = dict(fast.tuning.configs)
    deep = GemvConfig(2, 512, 1, 4, prefetch=2)
    wrong = GemvConfig(4, 512, 1, 4, prefetch=2)
    timed, checked = [], []
    monkeypatch.setattr(decode_fast, "prefetch_configs", lambda rows, k, sm, halves: [deep, wrong])
    early = decode_fast.replace(deep, early_launch=True)
    monkeypatch.setattr(decode_fast, "_time_products", lambda decode, role, *a: timed.append((role, a[-2], decode.pdl))
                        or {deep: 1.0, early: 0.5 if role == "head" else 1.5}.get(a[-2], 2.0))

    def check(decode, role, w, x, norm, residual, config):
        checked.append((role, config))
        if config == wrong:
            raise ValueError("wrong results: max error 1 against 1 (torch twin)")

    monkeypatch.setattr(decode_fast, "_check_product", check)
    monkeypatch.setattr(fast, "device", types.SimpleNamespace(type="cuda"))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: types.SimpleNamespace(multi_processor_count=132))
    fast.pdl = True
    tuning = decode_fast.tune_prefetch(fast)
    assert tuning.configs == {**{r: deep for r in decode_fast.ROLES}, "head": early}
    assert (tuning.t_per_split, tuning.attention_warps, tuning.attention_split_block) == (256, 16, 2)
    for role in decode_fast.ROLES:  # each role: the deep tile, the wrong one (checked, never timed), its own tile;
        # then the choice beside itself launching the next kernel early
        assert [c for r, c in checked if r == role] == [deep, wrong, before[role], deep, early]
        assert [c for r, c, _ in timed if r == role] == [deep, before[role], deep, early]
        assert [us for _, us in tuning.candidates_us[f"{role} prefetch"]] == [1.0, float("inf"), 2.0]
        assert [us for _, us in tuning.candidates_us[f"{role} early launch"]] == [1.0, 0.5 if role == "head" else 1.5]
    assert all(pdl for *_, pdl in timed)
    assert prefetch_configs(2560, 2048)[0].prefetch == 2 and all(  # llama-1b's qkv: up to its whole row
        c.block_n * c.block_k * c.prefetch // (32 * c.num_warps) <= 64 for c in prefetch_configs(2560, 2048))
    assert max(c.block_k * c.prefetch for c in prefetch_configs(2560, 2048)) == 2048


def test_the_kernels_compile_for_sm90_without_spilling():
    """Triton's own PTX assembler builds them for the H200 with no GPU here (benchmarks/decode_kernels_sm90.py)."""
    try:
        importlib.import_module("triton.backends.compiler").GPUTarget
        importlib.import_module("triton.compiler").ASTSource
    except Exception:  # noqa: BLE001
        pytest.skip("this Triton cannot compile ahead of time")
    script = load_benchmark("decode_kernels_sm90")
    assert script.main(["--quick"]) == 0


def test_prefetch_tuning_chooses_in_the_whole_step_where_it_is_given_a_slot(monkeypatch):
    import types

    from roofline.lab import decode_fast
    from roofline.lab.kernels.gemv import GemvConfig

    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    before = dict(fast.tuning.configs)
    deep, deeper, slow = (GemvConfig(2, 512, 1, 4, prefetch=2), GemvConfig(4, 512, 1, 4, prefetch=4),
                          GemvConfig(8, 512, 1, 8, prefetch=2))
    alone = {deep: 1.0, deeper: 1.1, slow: 1.2}
    monkeypatch.setattr(decode_fast, "prefetch_configs", lambda rows, k, sm, halves: [slow, deeper, deep])
    monkeypatch.setattr(decode_fast, "_check_product", lambda *a: None)
    monkeypatch.setattr(decode_fast, "_time_products", lambda decode, role, *a: alone.get(a[-2], 3.0))
    stepped = []

    def time_step(decode, position, replays):
        configs = decode.tuning.configs
        stepped.append((position, dict(configs)))
        # In the step: w2 is fastest with its old tile, qkv with the deeper one, head with early launch
        return (800.0 - (configs["w2"] == before["w2"]) - 2 * (configs["qkv"] == deeper)
                - 3 * configs["head"].early_launch - 0.5 * (configs["wo"] == deep)
                - 4 * decode.tuning.attention_early_launch)

    monkeypatch.setattr(decode_fast, "_time_step", time_step)
    monkeypatch.setattr(fast, "device", types.SimpleNamespace(type="cuda"))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: types.SimpleNamespace(multi_processor_count=132))
    tuning = decode_fast.tune_prefetch(fast, position=30)
    assert tuning.configs["w2"] == before["w2"] and tuning.configs["qkv"] == deeper
    assert tuning.configs["head"] == decode_fast.replace(deep, early_launch=True) and tuning.configs["wo"] == deep
    # shortlist: the three fastest alone, then the current tile; each role's step timings with the others' choices
    assert [GemvConfig(**{k: v for k, v in c.items()}) for c, _ in tuning.candidates_us["qkv in the step"]] == [
        deep, deeper, slow, before["qkv"]]
    assert {p for p, _ in stepped} == {30} and len(stepped) == 5 * 4 + 5 * 2 + 2  # + attention without/with
    assert tuning.attention_early_launch and [us for _, us in tuning.candidates_us["attention early launch"]] == [
        793.5, 789.5]
    assert all(c["qkv"] == deeper for _, c in stepped[4:20])  # after qkv's turn its choice stays in every step
    assert [c["qkv"].early_launch for _, c in stepped[20:22]] == [False, True]
