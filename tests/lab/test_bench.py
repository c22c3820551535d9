import math

from roofline.lab import bench
from roofline.lab.generate import decode_one_token
from roofline.lab.model import Fixes


def test_crossing_batch_is_the_first_batch_at_the_ridge(tiny_model):
    ridge = 10.0
    batch = bench.crossing_batch(tiny_model, ridge)

    def intensity(b):
        flops, moved = bench.decode_matmul_intensity(tiny_model, b)
        return flops / moved

    assert batch is not None and intensity(batch) >= ridge > intensity(batch - 1)
    assert bench.crossing_batch(tiny_model, 1e9) is None


def test_decode_bytes_are_the_weights_but_the_embedding_plus_the_kv_cache(tiny_model, tiny_config):
    c = tiny_config
    weights = sum(p.numel() for p in tiny_model.parameters()) - c.vocab_size * c.dim
    kv = 2 * c.n_layers * c.n_kv_heads * c.head_dim * 100
    assert bench.decode_bytes(tiny_model, 1, 100) == 4 * (weights + kv + c.dim)


def test_speedups_are_relative_to_the_previous_and_the_first_stage():
    def stage(tps):
        return bench.StageResult("s", [], 1, tps, 1e3 / tps, 1, 1, None, None, None, bench.Timing())

    stages = [stage(10.0), stage(20.0), stage(80.0)]
    bench.fill_speedups(stages)
    assert [s.speedup_vs_previous for s in stages] == [1.0, 2.0, 4.0]
    assert [s.speedup_cumulative for s in stages] == [1.0, 2.0, 8.0]


def test_stage_measures_syncs_and_traffic(tiny_model, prompts, cpu_ceilings):
    kwargs = dict(warmup=0, reps=1, decode_step=decode_one_token)
    naive, naive_tokens = bench.run_stage(tiny_model, prompts, 6, 0, "naive", Fixes(), cpu_ceilings, **kwargs)
    fixed, fixed_tokens = bench.run_stage(tiny_model, prompts, 6, 0, "fixed", Fixes.all(), cpu_ceilings, **kwargs)
    assert naive_tokens == fixed_tokens
    assert naive.syncs_per_token == 1.0 and fixed.syncs_per_token == 0.0
    assert naive.bytes_per_token > fixed.bytes_per_token > 0
    assert 0 < fixed.memory_roof_share and math.isfinite(fixed.tokens_per_s)
