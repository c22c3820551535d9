import math

import msgspec
import pytest

from roofline.lab import bench
from roofline.lab.generate import decode_one_token
from roofline.lab.model import Fixes, configure


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


def test_fused_projections_give_the_same_logits_and_restore_the_model(tiny_model, prompts):
    import torch

    from roofline.lab.model import fused_projections
    from roofline.models.llama import Attention, FeedForward

    tokens = torch.tensor([prompts[0]])
    params = {name: p.data_ptr() for name, p in tiny_model.named_parameters()}
    with torch.no_grad():
        plain = tiny_model(tokens)
        with fused_projections(tiny_model) as fused_model:
            assert type(fused_model.layers[0].attention).__name__ == "FusedAttention"
            assert {n for n, _ in fused_model.named_parameters()} > set(params)
            fused = fused_model(tokens)
    torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-5)
    assert type(tiny_model.layers[0].attention) is Attention and type(tiny_model.layers[0].feed_forward) is FeedForward
    assert {n: p.data_ptr() for n, p in tiny_model.named_parameters()} == params


def test_fused_projections_restore_the_model_when_the_block_raises(tiny_model):
    import pytest

    from roofline.lab.model import fused_projections
    from roofline.models.llama import Attention

    with pytest.raises(RuntimeError, match="user code"):
        with fused_projections(tiny_model):
            raise RuntimeError("user code")
    assert all(type(layer.attention) is Attention for layer in tiny_model.layers)
    assert not any(n.endswith(("wqkv", "w13")) for n, _ in tiny_model.named_parameters())


def test_peak_decode_measures_the_tuned_variant_and_compares_its_tokens(tiny_model, cpu_ceilings):
    tiny_model.setup_caches(1, 64)
    peak = bench.peak_decode(tiny_model, decode_one_token, cpu_ceilings, context=8, steps=6, warmup=1,
                             compiled=False, tuned_step=decode_one_token)
    tuned = peak.tuned
    assert tuned is not None and tuned.error == ""
    assert tuned.compared_tokens == 6 and tuned.same_tokens == 6
    assert math.isfinite(tuned.tokens_per_s) and tuned.share_of_memory_roof > 0
    assert any("stacked" in change for change in tuned.changes)


def test_peak_decode_reports_a_failing_tuned_step_instead_of_raising(tiny_model, cpu_ceilings):
    tiny_model.setup_caches(1, 64)

    def broken(*args):
        raise RuntimeError("inductor blew up\nsecond line")

    peak = bench.peak_decode(tiny_model, decode_one_token, cpu_ceilings, context=8, steps=4, warmup=0,
                             compiled=False, tuned_step=broken)
    assert peak.tuned.error == "RuntimeError: inductor blew up"
    assert math.isfinite(peak.tokens_per_s)
    assert type(tiny_model.layers[0].attention).__name__ == "Attention"


def test_graphed_decoder_gives_the_plain_loops_tokens_on_cpu(tiny_model, cpu_ceilings):
    tiny_model.setup_caches(1, 64)
    configure(tiny_model, Fixes.all())
    _, plain = bench._decode_time(tiny_model, decode_one_token, 1, 8, 8, 1)
    _, graphed = bench._graphed_decode_time(tiny_model, decode_one_token, 8, 8, 1, reps=2)
    assert graphed.tolist() == plain.tolist()


@pytest.mark.cuda
def test_graphed_decoder_replays_the_same_tokens_on_cuda(tiny_config):
    import torch

    from roofline.models.llama import build_llama

    model = configure(build_llama(tiny_config, dtype=torch.float16, device="cuda"), Fixes.all())
    model.setup_caches(1, 128)
    _, plain = bench._decode_time(model, decode_one_token, 1, 16, 32, 1)
    _, graphed = bench._graphed_decode_time(model, decode_one_token, 16, 32, 1, reps=2)
    assert graphed.tolist() == plain.tolist()


def test_timed_decode_steps_never_recompile_after_the_warm_up(tiny_model):
    import torch

    compiles = []

    def counting_backend(graph_module, example_inputs):
        compiles.append(len(example_inputs))
        return graph_module.forward

    tiny_model.setup_caches(4, 64)
    configure(tiny_model, Fixes.all())
    torch._dynamo.reset()
    step = torch.compile(decode_one_token, backend=counting_backend, fullgraph=True, dynamic=False)
    try:
        bench._decode_time(tiny_model, step, 4, 8, 4, warmup=1)
    finally:
        torch._dynamo.reset()
    assert len(compiles) == 1


def test_above_roof_note_names_the_cache_or_a_stale_ceiling(cpu_ceilings):
    from roofline.lab.runner import above_roof_note

    fits = above_roof_note(4e6, 32 * 2**20, cpu_ceilings)
    assert "fits in the 33.6 MB last-level cache" in fits and "remeasure" not in fits
    stale = above_roof_note(42.3e6, 8 * 2**20, cpu_ceilings)
    assert "more than the 8.4 MB last-level cache" in stale
    assert "10.00 GB/s, test" in stale and "`roofline ceilings --device cpu --remeasure`" in stale
    quick = msgspec.structs.replace(cpu_ceilings, source="measured (quick)")
    assert "`roofline ceilings --device cpu --remeasure --quick`" in above_roof_note(42.3e6, 8 * 2**20, quick)
