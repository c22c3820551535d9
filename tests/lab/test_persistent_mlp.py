"""Issue 19's persistent kernel for the products after attention (lab/kernels/persistent_mlp.py, triton_persistent.py).

The grid barrier cannot run under Triton's interpreter with more than one program (it runs programs one after
another), so the kernel's phases are checked there as three launches of the same code (bit for bit the three gemv
kernels with the same tiles, and close to the torch twin); the one-launch mode with one program (its barriers pass
at once) gives their bits and leaves its counter at 0; with two programs the first gives up after its spin limit
and sets the error flag. The step launches it once a layer with that layer's barrier counter, and the barrier mode
compiles for sm_90a in test_decode_fast's compile check (benchmarks/decode_kernels_sm90.py). The occupancy cap, the
tuning's choice in the whole step and the GPU suite's smoke gate are checked on the host."""

from __future__ import annotations

import json
import sys
import types

import pytest
import torch

from roofline.lab import decode_fast
from roofline.lab.decode_fast import FastDecode
from roofline.lab.kernels.persistent_mlp import (PersistentConfig, candidate_configs, grid_size,
                                                 resident_programs)

from benchmark_scripts import load_benchmark
from lab.test_decode_fast import _interpret, _micro_model

H200 = types.SimpleNamespace(regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048,
                             shared_memory_per_multiprocessor=233472, multi_processor_count=132)


def test_the_phases_are_the_three_gemv_kernels_bit_for_bit_and_a_stuck_barrier_flags_instead_of_hanging():
    result = _interpret("""
    import json, torch
    import roofline.lab.kernels.persistent_mlp as pm
    from roofline.lab.kernels.gemv import GemvConfig, Scratch, gemv
    from roofline.lab.kernels.persistent_mlp import PersistentConfig, PersistentState, persistent_mlp_torch
    pm.ASSUMED_SMS = 3  # a few programs, each with several row blocks
    torch.manual_seed(0)
    dt, found = torch.float16, {}
    cases = [(64, 64, 96, PersistentConfig((2, 64), (2, 64), (2, 64), 4, 1)),  # a row block's K in one chunk
             (64, 128, 96, PersistentConfig((4, 32), (2, 64), (4, 32), 4, 2)),  # K in chunks, 6 programs
             (40, 64, 72, PersistentConfig((4, 32), (8, 16), (2, 32), 4, 1))]  # uneven rows and K
    for i, (dim, ka, ffn, cfg) in enumerate(cases):
        wo, w13 = torch.randn(dim, ka, dtype=dt) * 0.1, torch.randn(2 * ffn, dim, dtype=dt) * 0.1
        w2, o = torch.randn(dim, ffn, dtype=dt) * 0.1, torch.randn(ka, dtype=dt)
        h, g = torch.randn(dim, dtype=dt), torch.rand(dim, dtype=dt) + 0.5
        runs = []
        for way in ("persistent", "gemv", "torch"):
            hh, m = h.clone(), torch.full((ffn,), float("nan"), dtype=dt)
            if way == "persistent":
                st = PersistentState(torch.device("cpu"), 2)
                pm.persistent_mlp(wo, w13, w2, o, hh, m, g, eps=1e-5, config=cfg, state=st, slot=1, phased=True)
                assert int(st.sync.abs().sum()) == 0 and not st.failed()
            elif way == "gemv":  # each tile summed at once, in K order: the persistent kernel's order
                s, c = Scratch(torch.device("cpu"), 4096, 64), lambda t: GemvConfig(t[0], t[1], 1, 4, True)
                gemv(wo, o, hh, config=c(cfg.wo), scratch=s, residual=hh)
                gemv(w13, hh, m, config=c(cfg.w13), scratch=s, halves=2, norm_weight=g, eps=1e-5)
                gemv(w2, m, hh, config=c(cfg.w2), scratch=s, residual=hh)
            else:
                persistent_mlp_torch(wo, w13, w2, o, hh, m, g, 1e-5)
            runs.append((hh.float(), m.float()))
        found[i] = {"gemv": max((a - b).abs().max().item() for a, b in zip(runs[0], runs[1])),
                    "torch": max(((a - b).abs() / b.abs().clamp_min(1)).max().item() for a, b in zip(runs[0], runs[2]))}
    # PHASE 0 (the launch the GPU runs) with one program: its barriers pass at once, so the interpreter runs the
    # fused path (next-phase loads before the barrier, the norm after it, the counter reset) to the phased bits; with
    # two, the first program (run alone) cannot see the second arrive: it gives up after spin_limit reads and flags it
    dim, ka, ffn, cfg = 40, 64, 72, cases[2][3]
    wo, w13 = torch.randn(dim, ka, dtype=dt) * 0.1, torch.randn(2 * ffn, dim, dtype=dt) * 0.1
    w2, o = torch.randn(dim, ffn, dtype=dt) * 0.1, torch.randn(ka, dtype=dt)
    h, g = torch.randn(dim, dtype=dt), torch.rand(dim, dtype=dt) + 0.5
    fused = {}
    for name, sms, phased in (("phased", 1, True), ("one program", 1, False), ("two programs", 2, False)):
        pm.ASSUMED_SMS = sms
        st = PersistentState(torch.device("cpu"), 2)
        hh, m = h.clone(), torch.zeros(ffn, dtype=dt)
        pm.persistent_mlp(wo, w13, w2, o, hh, m, g, eps=1e-5, config=cfg, state=st, slot=1, phased=phased,
                          spin_limit=5)
        fused[name] = (hh, m, int(st.counter(1).item()), int(st.error.item()))
    found["fused"] = {k: [torch.equal(v[0], fused["phased"][0]) and torch.equal(v[1], fused["phased"][1]), v[2], v[3]]
                      for k, v in fused.items()}
    print("RESULT", json.dumps(found))
    """)
    assert result.pop("fused") == {"phased": [True, 0, 0], "one program": [True, 0, 0],
                                   "two programs": [False, 0, 1]}  # [same bits, counter after, error flag]
    for case, errors in result.items():
        assert errors["gemv"] == 0.0, f"case {case}: not the three gemv kernels' bits"
        # the gemv kernels' own distance from the eager ops (fp32 sums in another order; SiLU*mul amplifies an ulp)
        assert errors["torch"] <= 2**-7, f"case {case}: {errors['torch']} from the torch twin"


def test_the_step_runs_the_persistent_kernel_per_layer_in_place_of_the_three_products(monkeypatch):
    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    launched = []
    monkeypatch.setattr(decode_fast, "persistent_mlp", lambda *a, **kw: launched.append((a, kw)))
    monkeypatch.setattr(fast, "product", lambda role, *a, **kw: launched.append(role))
    monkeypatch.setattr(fast, "attend", lambda *a, **kw: None)
    monkeypatch.setattr(decode_fast, "argmax", lambda *a, **kw: None)
    config = PersistentConfig((2, 64), (2, 128), (4, 64), 4, 1)
    fast.tuning.persistent = config
    fast.step(fast.model, torch.zeros(1, dtype=torch.long), torch.tensor([3]), None)
    assert [x if isinstance(x, str) else "persistent" for x in launched] == ["qkv", "persistent"] * 2 + ["head"]
    (args, kw), layer = launched[3], fast.layers[1]
    assert [a.data_ptr() for a in args] == [t.data_ptr() for t in (layer["wo"], layer["w13"], layer["w2"], fast.o,
                                                                  fast.h, fast.m, layer["ffn_norm"])]
    assert kw["slot"] == 1 and kw["config"] == config and kw["phased"]  # off a GPU: one launch a phase
    assert kw["state"] is fast.persistent_state and fast.persistent_state.slots == 2
    launched.clear()
    fast.tuning.persistent = None
    fast.step(fast.model, torch.zeros(1, dtype=torch.long), torch.tensor([3]), None)
    assert launched == ["qkv", "wo", "w13", "w2"] * 2 + ["head"]


def test_the_grid_fits_the_multiprocessors_at_the_compiled_kernels_occupancy():
    assert resident_programs(58, 0, 8, H200) == 4  # 58 -> 64 registers a thread: 2048 a warp, 32 warps an SM
    assert resident_programs(48, 0, 4, H200) == 10  # 48 x 32 = 1536 a warp: 10 warps a quarter, 40 an SM
    assert resident_programs(255, 0, 8, H200) == 1  # 255 -> 256 a thread: 8192 a warp, 2 warps a quarter
    assert resident_programs(255, 0, 16, H200) == 0  # 16 such warps overflow the 64k file
    assert resident_programs(32, 0, 4, H200) == 16  # threads: 2048 / 128
    assert resident_programs(32, 100_000, 4, H200) == 2  # shared memory
    config = PersistentConfig(per_sm=4)
    assert grid_size(config, 2, torch.device("cpu")) == 2 * 132  # asked 4 a multiprocessor, 2 fit
    assert grid_size(PersistentConfig(per_sm=1), 4, torch.device("cpu")) == 132
    with pytest.raises(RuntimeError, match="not one program"):
        grid_size(config, 0, torch.device("cpu"))


def test_candidates_keep_each_phases_chunk_within_its_k():
    configs = candidate_configs(2048, 5632, 2048)
    assert len(configs) == 20 and {c.per_sm for c in configs} == {1, 2, 4, 8}
    assert all(c.wo[1] <= 2048 and c.w13[1] <= 2048 and c.w2[1] <= 8192 for c in configs)
    tiny = candidate_configs(128, 192)
    assert all(c.wo[1] <= 128 and c.w13[1] <= 128 and c.w2[1] <= 256 for c in tiny)
    assert PersistentConfig.from_dict(json.loads(json.dumps(configs[3].as_dict()))) == configs[3]


def test_the_tuning_keeps_three_kernels_unless_a_checked_persistent_kernel_is_faster(monkeypatch):
    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    good, wrong, faster = (PersistentConfig((2, 64), (2, 64), (2, 64), 4, 1),
                           PersistentConfig((4, 64), (2, 64), (2, 64), 4, 1),
                           PersistentConfig((2, 64), (2, 64), (2, 64), 4, 2))

    def check(decode, config):
        if config == wrong:
            raise ValueError("wrong h")

    step_us = {None: 700.0, good: 690.0, wrong: 600.0, faster: 680.0}
    timed = []

    def time_step(decode, position, replays):
        timed.append((position, decode.tuning.persistent))
        return step_us[decode.tuning.persistent]

    monkeypatch.setattr(decode_fast, "_check_persistent", check)
    monkeypatch.setattr(decode_fast, "_time_step", time_step)
    monkeypatch.setattr(fast, "device", types.SimpleNamespace(type="cuda"))
    tuning = decode_fast.tune_persistent(fast, position=30, candidates=[good, wrong, faster])
    assert tuning.persistent == faster and timed == [(30, None), (30, good), (30, faster)]
    assert [us for _, us in tuning.candidates_us["persistent in the step"]] == [700.0, 690.0, float("inf"), 680.0]
    assert tuning.as_dict()["persistent"]["per_sm"] == 2
    step_us[faster] = step_us[good] = 701.0  # none faster than the three kernels: they stay
    assert decode_fast.tune_persistent(fast, position=30, candidates=[good, faster]).persistent is None
    monkeypatch.setattr(fast.persistent_state, "failed", lambda: True)  # a barrier that gave up: no candidate
    assert decode_fast.tune_persistent(fast, position=30, candidates=[good]).persistent is None


def test_the_suite_runs_the_smoke_first_and_gates_every_later_stage_on_it(tmp_path):
    gpu_suite = load_benchmark("gpu_suite")
    stages = gpu_suite.stages("issue19-persist", tmp_path)
    names = [name for name, _, _ in stages]
    assert names[:2] == ["env", "persist_smoke"] and names[-1] == "summary"
    smoke = str(tmp_path / "persist_smoke" / "persistent_smoke.json")
    argv = dict((n, a) for n, a, _ in stages)
    assert argv["persist_smoke"][1] == "benchmarks/persistent_smoke.py"
    for name in ("decode_fast_llama-1b", "lab_decode_llama-1b"):
        assert argv[name][1:4] == ["benchmarks/persistent_smoke.py", "--require", smoke]
    assert "--persistent" in argv["decode_fast_llama-1b"] and "7" in argv["decode_fast_llama-1b"]
    assert sum(limit for *_, limit in stages) <= 480 and dict((n, t) for n, _, t in stages)["persist_smoke"] <= 75


def test_the_smoke_gate_runs_a_command_only_after_a_passing_smoke(tmp_path, monkeypatch):
    smoke_script = load_benchmark("persistent_smoke")
    smoke = tmp_path / "smoke.json"
    ran = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(ran)!r}, 'w').write('x')"]
    assert smoke_script.main(["--require", str(smoke), "--", *command]) == 0 and not ran.exists()  # no result
    smoke.write_text(json.dumps({"passed": False, "skipped": "no CUDA device"}))
    assert smoke_script.main(["--require", str(smoke), "--", *command]) == 0 and not ran.exists()
    smoke.write_text(json.dumps({"passed": True}))
    assert smoke_script.main(["--require", str(smoke), "--", *command]) == 0 and ran.exists()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert smoke_script.main([str(tmp_path / "out")]) == 0
    written = json.loads((tmp_path / "out" / "persistent_smoke.json").read_text())
    assert written["passed"] is False and "no CUDA" in written["skipped"]


def test_the_decode_benchmarks_persistent_step_starts_from_the_deep_prefetch_tuning():
    script = load_benchmark("decode_fast")
    model = _micro_model()
    fast, row = FastDecode(model), {"fast": {}}
    with pytest.raises(RuntimeError, match="deep-prefetch step was not built"):
        script._persistent_step(model, fast, {}, row, print, 30)
    step = script._persistent_step(model, fast, {"tuning": fast.tuning}, row, print, 30)
    assert callable(step) and step.__self__.pdl is False  # CPU: no PDL, nothing tuned, the three kernels kept
    assert row["fast"]["persistent"] == {"config": None, "resident_per_sm": [], "candidates_us": []}
    summary = load_benchmark("issue19_kernels_summary")
    line = summary.persistent_line({"config": PersistentConfig(per_sm=2).as_dict(), "resident_per_sm": [4],
                                    "candidates_us": [{"persistent": None, "us": 761.0},
                                                      {**PersistentConfig(per_sm=2).as_dict(), "us": 700.5}]})
    assert line == ("persistent kernel after attention: chosen 2x2048/2x2048/2x2048 w8 2/SM (programs resident a "
                    "multiprocessor: [4]; a step 761.0 us three kernels, 700.5 us 2x2048/2x2048/2x2048 w8 2/SM in the "
                    "tuning)")
    smoke = summary.persist_smoke_line({"passed": True, "failures": [], "cases": [
        {"bit_identical_to_gemv": True, "torch_rel_error": 0.001, "barrier_gave_up": False}]})
    assert smoke.startswith("persistent kernel smoke: passed True (1 cases, 1 bit-identical")
