"""Issue 19's L2 prefetch of the next products' weights from attention v2's extra programs (lab/kernels/l2_prefetch.py,
triton_l2.py): the byte ranges and their chunks on the host, the attention's outputs unchanged with the programs
launched (under Triton's interpreter, where the request itself is compiled out), the step's plumbing and its
tuning in the whole step, and gpu_suite.py issue19-l2's CPU path. The instruction itself compiles for sm_90a in
test_decode_fast's compile check (benchmarks/decode_kernels_sm90.py)."""

from __future__ import annotations

import json
import sys
import types

import pytest
import torch

from roofline.lab import decode_fast
from roofline.lab.decode_fast import FastDecode
from roofline.lab.kernels.l2_prefetch import (CHUNK_BYTES, chunk_plan, next_weights_ranges, prefetch_programs,
                                              prefetch_ranges)

from benchmark_scripts import load_benchmark
from lab.test_decode_fast import _interpret, _micro_model


def test_the_next_weights_are_wo_then_the_first_rows_of_both_halves_of_w13():
    wo, w13 = torch.zeros(64, 32, dtype=torch.float16), torch.zeros(128, 32, dtype=torch.float16)  # 4096, 8192 B
    ranges = next_weights_ranges(wo, w13, 4096 + 2 * 1024)
    assert [(t.data_ptr(), n) for t, n in ranges] == [(wo.data_ptr(), 4096), (w13.data_ptr(), 1024),
                                                      (w13[64:].data_ptr(), 1024)]  # gate rows 0-15, up rows 64-79
    assert [n for _, n in next_weights_ranges(wo, w13, 1 << 20)] == [4096, 4096, 4096]
    assert [n for _, n in next_weights_ranges(wo, w13, 1000)] == [992] and next_weights_ranges(wo, w13, 0) == []


def test_ranges_take_the_first_bytes_of_wo_then_w13_in_multiples_of_16():
    wo, w13 = torch.zeros(64, 32, dtype=torch.float16), torch.zeros(128, 32, dtype=torch.float16)  # 4096, 8192 B
    assert prefetch_ranges([wo, w13], 6000) == [(wo, 4096), (w13, 1904)]
    assert [n for _, n in prefetch_ranges([wo, w13], 6010)] == [4096, 1904]  # rounded down to 16
    assert [n for _, n in prefetch_ranges([wo, w13], 1 << 20)] == [4096, 8192]  # no more than the tensors hold
    assert prefetch_ranges([wo, w13], 2000)[0][1] == 2000 and len(prefetch_ranges([wo, w13], 2000)) == 1
    assert prefetch_ranges([wo, w13], 0) == [] and prefetch_ranges([wo, w13], 15) == []
    flat = torch.zeros(4096, dtype=torch.float16)
    assert prefetch_ranges([flat[1:], w13], 6000) == []  # a 2-byte offset: not 16-byte aligned, nothing after it


@pytest.mark.parametrize("nbytes,programs,lanes", [(8_650_752, 2, 256), (32 << 20, 8, 128), (48, 1, 128),
                                                    (3 * CHUNK_BYTES + 16, 2, 1)])
def test_the_kernels_chunks_cover_the_range_once_each_with_valid_sizes(nbytes, programs, lanes):
    parts = [p for program in range(programs) for p in chunk_plan(nbytes, program, programs, lanes)]
    distinct = sorted(set(parts))
    assert [off for off, _ in distinct] == list(range(0, nbytes, CHUNK_BYTES))  # every chunk, in order
    assert sum(size for _, size in distinct) == nbytes
    assert all(0 < size <= CHUNK_BYTES and size % 16 == 0 for _, size in parts)


def test_programs_cover_the_longer_range_one_lane_a_chunk():
    wo, w13 = torch.zeros(2048, 2048, dtype=torch.float16), torch.zeros(11264, 2048, dtype=torch.float16)
    ranges = prefetch_ranges([wo, w13], 8 << 20 | 16 << 20)  # wo's 8 MB, then 16 MB of w13
    assert [n >> 20 for _, n in ranges] == [8, 16]
    assert prefetch_programs(ranges, 256) == 2 and prefetch_programs(ranges, 128) == 4
    assert prefetch_programs([], 128) == 0 and prefetch_programs(ranges, 256, 4096) == 16


def test_attention_v2_with_prefetch_programs_gives_the_same_bits_in_the_interpreter():
    result = _interpret("""
    import json, torch
    from roofline.lab.kernels.attention import decode_attention
    from roofline.lab.kernels.gemv import Scratch
    from roofline.lab.kernels.l2_prefetch import next_weights_ranges
    from roofline.models.llama import LlamaConfig, rope_tables
    torch.manual_seed(0)
    dt, h, hkv, d, seq, pos = torch.float16, 4, 2, 32, 48, 37
    cos, sin = (t.to(dt) for t in rope_tables(LlamaConfig(h * d, 1, h, hkv, 64, 10), seq))
    kc, vc = torch.randn(1, hkv, seq, d, dtype=dt), torch.randn(1, hkv, seq, d, dtype=dt)
    qkv, p = torch.randn((h + 2 * hkv) * d, dtype=dt), torch.tensor([pos])
    wo, w13 = torch.randn(256, 1024, dtype=dt), torch.randn(1024, 1024, dtype=dt)
    got = []
    for nbytes in (0, 9 << 19):  # none, then wo's 512 KB and 2 x 2 MB of w13: 64 chunks each, extra programs
        k, v, out = kc.clone(), vc.clone(), torch.full((h * d,), float("nan"), dtype=dt)
        s = Scratch(torch.device("cpu"), 1 << 16, 64)
        decode_attention(qkv, k, v, cos, sin, p, out, n_heads=h, n_kv_heads=hkv, scratch=s, t_per_split=16,
                         version=2, l2_prefetch=next_weights_ranges(wo, w13, nbytes))
        got.append((out, k, v, int(s.counters.abs().sum())))
    same = all(torch.equal(a, b) for a, b in zip(got[0][:3], got[1][:3]))
    # evict-first weight loads (a cache policy): the same sums as without
    from roofline.lab.kernels.gemv import GemvConfig, gemv
    x, w = torch.randn(256, dtype=dt), torch.randn(2 * 48, 256, dtype=dt)
    sums = [gemv(w, x, torch.empty(48, dtype=dt), config=GemvConfig(16, 128, 1, 4, evict_first=e), halves=2,
                 scratch=Scratch(torch.device("cpu"), 1 << 12, 64)) for e in (False, True)]
    print("RESULT", json.dumps({"same": same, "nan": bool(got[1][0].isnan().any()),
                                "counters": got[1][3], "evict_first_same": torch.equal(*sums)}))
    """)
    assert result == {"same": True, "nan": False, "counters": 0, "evict_first_same": True}


def test_the_step_hands_attention_the_tuned_ranges_of_its_own_layer(monkeypatch):
    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    calls = []
    monkeypatch.setattr(decode_fast, "decode_attention", lambda *a, **kw: calls.append(kw))
    layer = fast.layers[1]
    wo_bytes = layer["wo"].numel() * 2
    fast.tuning = decode_fast.replace(fast.tuning, attention_l2_prefetch=wo_bytes + 4096)
    fast.attend(layer, torch.tensor([3]))
    assert calls[-1]["l2_chunk"] == fast.tuning.attention_l2_chunk == 32768
    half = layer["w13"].shape[0] // 2
    assert [(t.data_ptr(), n) for t, n in calls[-1]["l2_prefetch"]] == [
        (layer["wo"].data_ptr(), wo_bytes), (layer["w13"].data_ptr(), 2048), (layer["w13"][half:].data_ptr(), 2048)]
    fast.attend(layer, torch.tensor([3]), t_per_split=64)  # a tuning candidate of the attention alone: none
    assert calls[-1]["l2_prefetch"] == ()
    fast.attention_version = 1
    fast.attend(layer, torch.tensor([3]))
    assert calls[-1]["l2_prefetch"] == ()


def test_l2_tuning_chooses_in_the_whole_step_with_zero_among_the_candidates(monkeypatch):
    fast = FastDecode(_micro_model(), backend=decode_fast.BACKEND_TRITON, attention_version=2)
    wo_bytes = fast.layers[0]["wo"].numel() * 2
    w13_bytes = fast.layers[0]["w13"].numel() * 2
    monkeypatch.setattr(fast, "device", types.SimpleNamespace(type="cuda"))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: types.SimpleNamespace(L2_cache_size=50 << 20))
    candidates = decode_fast.l2_prefetch_candidates(fast)
    assert candidates == [0, wo_bytes // 2, wo_bytes, wo_bytes + w13_bytes]  # the micro model's w13 is < 4 MB
    timed = []

    def time_step(decode, position, replays):
        timed.append((position, decode.tuning.attention_l2_prefetch))
        if decode.tuning.attention_l2_prefetch == wo_bytes // 2:
            raise RuntimeError("refused")
        return (700.0 - 3 * (decode.tuning.attention_l2_prefetch == wo_bytes)
                - decode.tuning.configs["w13"].evict_first + decode.tuning.configs["qkv"].evict_first)

    monkeypatch.setattr(decode_fast, "_time_step", time_step)
    tuning = decode_fast.tune_l2_prefetch(fast, position=30)
    assert tuning.attention_l2_prefetch == wo_bytes and {p for p, _ in timed} == {30}
    # 0 once, every other amount with each chunk size (the 4 KB one first)
    assert [(c["l2_prefetch_bytes"], c["chunk"], us) for c, us in tuning.candidates_us["attention l2 prefetch"]] == [
        (0, 32768, 700.0), (wo_bytes // 2, 4096, float("inf")), (wo_bytes // 2, 32768, float("inf")),
        (wo_bytes, 4096, 697.0), (wo_bytes, 32768, 697.0), (wo_bytes + w13_bytes, 4096, 700.0),
        (wo_bytes + w13_bytes, 32768, 700.0)]
    assert tuning.attention_l2_chunk == 4096 and tuning.as_dict()["attention_l2_prefetch"] == wo_bytes
    # then evict-first per product, in the step with the chosen prefetch: kept where that step is faster (w13 here)
    assert [r for r in decode_fast.ROLES if tuning.configs[r].evict_first] == ["w13"]
    assert [us for _, us in tuning.candidates_us["w13 evict first"]] == [697.0, 696.0]
    assert [us for _, us in tuning.candidates_us["qkv evict first"]] == [697.0, 698.0]
    assert timed[-10:] == [(30, wo_bytes)] * 10
    monkeypatch.setattr(decode_fast, "_time_step", lambda decode, position, replays:
                        600.0 + decode.tuning.attention_l2_prefetch)  # every prefetch slower: none kept
    assert decode_fast.tune_l2_prefetch(fast, position=30).attention_l2_prefetch == 0
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: types.SimpleNamespace(L2_cache_size=wo_bytes))
    assert decode_fast.l2_prefetch_candidates(fast) == [0, wo_bytes // 2, wo_bytes]  # no more than the L2 holds


def test_the_suite_checks_the_instruction_first_and_fits_one_call(tmp_path):
    gpu_suite = load_benchmark("gpu_suite")
    stages = gpu_suite.stages("issue19-l2", tmp_path)
    names = [name for name, _, _ in stages]
    assert names[:2] == ["env", "l2_smoke"] and names[-1] == "summary"
    lab = dict((n, a) for n, a, _ in stages)["lab_decode_llama-1b"]
    assert lab[1:4] == ["benchmarks/l2_prefetch_smoke.py", "--require", str(tmp_path / "l2_smoke" /
                                                                              "l2_prefetch_smoke.json")]
    decode = dict((n, a) for n, a, _ in stages)["decode_fast_llama-1b"]
    assert "--l2-prefetch" in decode and decode[decode.index("--l2-smoke") + 1].endswith("l2_prefetch_smoke.json")
    assert sum(limit for *_, limit in stages) <= 480 and dict((n, t) for n, _, t in stages)["l2_smoke"] <= 45


def test_the_decode_benchmark_runs_the_l2_step_only_after_a_passing_smoke_test(tmp_path):
    smoke_script = load_benchmark("l2_prefetch_smoke")
    refused = smoke_script.refused
    smoke = tmp_path / "smoke.json"
    assert refused(None) is None and "left no result" in refused(str(smoke))
    smoke.write_text(json.dumps({"prefetch_64mb_runs": True, "attention_same": True}))
    assert refused(str(smoke)) is None
    smoke.write_text(json.dumps({"prefetch_64mb_runs": True, "attention_same": False}))
    assert "did not pass" in refused(str(smoke))
    smoke.write_text(json.dumps({"skipped": "no CUDA device"}))
    assert refused(str(smoke)).endswith("no CUDA device)")
    # the gate gpu_suite.py puts before the lab's rows: the command runs only after a passing smoke test
    ran = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(ran)!r}, 'w').write('x')"]
    assert smoke_script.main(["--require", str(smoke), "--", *command]) == 0 and not ran.exists()
    smoke.write_text(json.dumps({"prefetch_64mb_runs": True, "attention_same": True}))
    assert smoke_script.main(["--require", str(smoke), "--", *command]) == 0 and ran.exists()
    assert smoke_script.main(["--require", str(smoke)]) == 2


def test_the_smoke_script_on_cpu_checks_the_plan_and_says_what_it_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    smoke = load_benchmark("l2_prefetch_smoke")
    assert smoke.main([str(tmp_path)]) == 0
    data = json.loads((tmp_path / "l2_prefetch_smoke.json").read_text())
    assert data["plan_covers_ranges"] is True and "no CUDA" in data["skipped"]
    assert smoke.plan_covers(64, 1, 1) and smoke.plan_covers(CHUNK_BYTES + 16, 1, 1)
    summary = load_benchmark("issue19_kernels_summary")
    assert summary.l2_smoke_line(data).startswith("L2 prefetch smoke: skipped (no CUDA")
    line = summary.l2_smoke_line({"prefetch_64mb_runs": True, "read_mb": 32, "attention_same": True,
                                  "read_us": {"without": {"median": 9.0, "min": 8.5, "max": 9.9},
                                              "with": {"median": 4.0, "min": 3.9, "max": 4.4},
                                              "with 4 KB": {"median": 3.5, "min": 3.4, "max": 3.6}}})
    assert ("9.0 us (8.5-9.9) without, 4.0 us (3.9-4.4) with a prefetch first in 32 KB requests, 3.5 us (3.4-3.6) "
            "in 4 KB ones" in line) and "bit-identical: True" in line
