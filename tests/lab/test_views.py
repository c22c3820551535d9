"""The three views: which configurations they compare, the noise verdict, the evidence behind each row, and a
measured ablation of the tiny model on CPU (every configuration gives the naive model's tokens in float32)."""

import pytest

from roofline.lab import ablation, views
from roofline.lab.model import STAGE_ORDER


def _config(fixes, samples, tokens=10, **evidence):
    base = dict(new_tokens=4, syncs_per_token=0.0, bytes_per_token=1e6, flops_per_token=1e6, launches_per_token=100)
    base.update(evidence)
    return views.Config(views.config_key(fixes), views.config_title(fixes), fixes, tokens, list(samples),
                        views.Evidence(**base))


def test_each_view_has_a_row_per_fix_and_leave_one_out_puts_back_exactly_one_bug():
    pairs = views.view_pairs(STAGE_ORDER, include_compile=True)
    assert [fix for fix, _, _ in pairs["isolated"]] == list(views.FIVE)
    assert all(before == [] and after == [fix] for fix, before, after in pairs["isolated"])
    loo = pairs["leave-one-out"]
    # Each bug goes back into the fully fixed, compiled model; compile's own row is fixed eager vs compiled.
    assert [fix for fix, _, _ in loo] == [*views.FIVE, "compiled"]
    full = [*views.FIVE, "compiled"]
    assert all(after == full and set(after) - set(before) == {fix} for fix, before, after in loo)
    eager = views.view_pairs(STAGE_ORDER, include_compile=False)["leave-one-out"]
    assert [fix for fix, _, _ in eager] == list(views.FIVE)
    assert all(set(after) - set(before) == {fix} and after == list(views.FIVE) for fix, before, after in eager)
    cumulative = pairs["cumulative"]
    assert [fix for fix, _, _ in cumulative][:-1] == list(STAGE_ORDER) and cumulative[-1][0] == "total"
    assert cumulative[-1][1] == [] and set(cumulative[-1][2]) == set(STAGE_ORDER)
    assert "compiled" not in {fix for p in views.view_pairs(STAGE_ORDER, False).values() for fix, _, _ in p}


def test_configurations_come_in_two_tiers_each_measured_once():
    plain, with_compile = ablation.configurations(False), ablation.configurations(True)
    flat = [c for tier in plain for c in tier]
    assert len({views.config_key(c) for c in flat}) == len(flat) == 14
    assert plain[0][0] == [] and plain[0][1] == list(views.FIVE)
    assert sum("batched" not in c for c in flat) == 6
    # Tier 2 is the isolated view's slow one-prompt-at-a-time configurations, nothing else.
    assert all(len(c) == 1 and "batched" not in c for tier in (plain, with_compile) for c in tier[1])
    compiled = [c for tier in with_compile for c in tier]
    assert len(compiled) == 16 and with_compile[0][2] == [*views.FIVE, "compiled"]
    # Everything the leave-one-out and cumulative views compare is in tier 1.
    pairs = views.view_pairs(STAGE_ORDER, True)
    needed = {views.config_key(views.canonical(n)) for view in ("leave-one-out", "cumulative")
              for _, before, after in pairs[view] for n in (before, after)}
    assert needed <= {views.config_key(c) for c in with_compile[0]}


def test_overlapping_interquartile_ranges_are_within_noise_and_separated_ones_are_not():
    slow = _config([], [10.0, 10.2, 10.4, 10.6, 30.0])
    overlapping = _config(["sync_free"], [9.9, 10.1, 10.3, 10.5, 10.7])
    fast = _config(["batched"], [5.0, 5.1, 5.2, 5.3, 5.4])
    speedup, low, high, verdict = views.compare(slow, overlapping)
    assert verdict == views.WITHIN_NOISE and low <= 1.0 <= high
    speedup, low, high, verdict = views.compare(slow, fast)
    assert verdict == "faster" and 1.0 < low <= speedup <= high
    assert views.compare(fast, slow)[3] == "slower"
    assert views.compare(slow, _config([], [1.0, 1.1]))[3] == "no spread (under 3 runs)"
    assert views.compare(slow, _config([], []))[3] == "not measured"


def test_a_fix_that_does_not_pay_is_explained_by_the_floor_it_runs_under(cpu_ceilings):
    # 1000 launches x 5 us = 5 ms of launch floor per token; the fix removes 20 MB (2 ms at 10 GB/s).
    before = _config(["batched"], [0.08, 0.08, 0.08], launches_per_token=1000, bytes_per_token=30e6)
    after = _config(["batched", "kv_cache"], [0.08, 0.08, 0.08], launches_per_token=1000, bytes_per_token=10e6)
    text = views.explain("kv_cache", before, after, views.WITHIN_NOISE, cpu_ceilings, "float32")
    assert "bytes/token 30 MB -> 10 MB" in text and "launch-bound" in text
    assert "shadow of the launch floor" in text
    sync = views.explain("sync_free", before, _config(["sync_free"], [0.08, 0.08, 0.08], launches_per_token=1000,
                                                      bytes_per_token=30e6, syncs_per_token=0.0),
                         views.WITHIN_NOISE, cpu_ceilings, "float32")
    assert "host wait for the GPU" in sync
    paid = views.explain("batched", _config([], [0.2] * 3, launches_per_token=4000), before, "faster",
                         cpu_ceilings, "float32")
    assert paid.startswith("kernel launches/token 4,000 -> 1,000") and "pays: 12 ms/token saved" in paid


def test_measured_ablation_gives_every_row_and_the_naive_tokens_everywhere(tiny_model, prompts, cpu_ceilings):
    seen = []
    result, tokens = ablation.run_ablation(
        tiny_model, prompts, 4, 0, cpu_ceilings, reps=3, evidence_tokens=2, budget_s=None, compiled_step=None,
        workload="test", progress=lambda _: None, checkpoint=lambda a: seen.append(len(a.configs)))
    assert len(result.configs) == 14 and all(len(c.samples_s) == 3 for c in result.configs)
    assert all(c.agreement.identical for c in result.configs)
    assert seen[:3] == [1, 2, 3] and seen[-1] == 14
    by_key = {c.key: c for c in result.configs}
    assert by_key["naive"].evidence.syncs_per_token == pytest.approx(1.0)
    assert by_key[views.config_key(list(views.FIVE))].evidence.syncs_per_token == 0.0
    unbatched = by_key[views.config_key([f for f in views.FIVE if f != "batched"])].evidence
    assert unbatched.launches_per_token > by_key[views.config_key(list(views.FIVE))].evidence.launches_per_token
    rows = [r for r in result.rows if r.view != "cumulative" or r.fix != "total"]
    assert len(rows) == 15 and all(r.speedup is not None and r.explanation for r in result.rows)
    assert set(tokens) == set(by_key)


def test_a_spent_budget_leaves_configurations_unmeasured_and_says_so(tiny_model, prompts, cpu_ceilings):
    result, _ = ablation.run_ablation(
        tiny_model, prompts, 4, 0, cpu_ceilings, reps=5, evidence_tokens=2, budget_s=1e-9, compiled_step=None,
        workload="test", progress=lambda _: None, checkpoint=lambda a: None)
    # The first configuration of each kind (one prompt at a time, batched) has no cost estimate yet: measured once.
    assert [c.key for c in result.configs] == ["naive", views.config_key(list(views.FIVE))]
    assert all(len(c.samples_s) == 1 for c in result.configs)
    assert any("not measured (budget spent)" in line for line in result.cut)
    assert any(line.startswith("fewer than 5 timed runs") for line in result.cut)
    assert {r.verdict for r in result.rows} <= {"not measured", "no spread (under 3 runs)"}


def test_evidence_spreads_the_prefill_over_the_whole_run(tiny_model, prompts):
    from roofline.lab.model import Fixes, configure

    fixed = Fixes.all()
    configure(tiny_model, fixed)
    tiny_model.setup_caches(len(prompts), 32)
    whole = ablation.count_evidence(tiny_model, prompts, 6, 0, fixed, False, 6)
    extrapolated = ablation.count_evidence(tiny_model, prompts, 2, 0, fixed, False, 6)
    # Every cached decode step reads the same static cache, so two tokens predict six exactly.
    assert extrapolated.flops_per_token == pytest.approx(whole.flops_per_token, rel=1e-6)
    assert extrapolated.launches_per_token == pytest.approx(whole.launches_per_token, rel=1e-6)
    short = ablation.count_evidence(tiny_model, prompts, 2, 0, fixed, False, 2)
    assert short.flops_per_token > 1.5 * whole.flops_per_token  # the prefill charged to two tokens


def test_leave_one_out_puts_each_bug_back_into_the_compiled_model(tiny_model, prompts, cpu_ceilings):
    import torch

    from roofline.lab.generate import decode_one_token, recompute_one_token

    # Dynamo with its eager backend: the same graphs, guards and recompiles as on a GPU, without Inductor's build.
    torch._dynamo.reset()
    try:
        step = torch.compile(decode_one_token, backend="eager", fullgraph=True)
        recompute = torch.compile(recompute_one_token, backend="eager", dynamic=True, fullgraph=True)
        result, _ = ablation.run_ablation(
            tiny_model, prompts, 4, 0, cpu_ceilings, reps=3, evidence_tokens=2, budget_s=None, compiled_step=step,
            workload="test", progress=lambda _: None, checkpoint=lambda a: None, compiled_recompute=recompute)
    finally:
        torch._dynamo.reset()
    by_key = {c.key: c for c in result.configs}
    assert len(by_key) == 16 and all(len(c.samples_s) == 3 for c in result.configs)
    assert all(c.agreement.identical for c in result.configs)
    loo = [r for r in result.rows if r.view == "leave-one-out"]
    assert [r.fix for r in loo] == [*views.FIVE, "compiled"]
    assert all(r.speedup is not None and r.explanation for r in loo)
    without_cache = by_key[views.config_key([f for f in views.FIVE if f != "kv_cache"] + ["compiled"])]
    assert "dynamic shapes" in without_cache.note and without_cache.launches_text.startswith("Inductor")
    # Its evidence is its eager twin's (the recomputing loop's FLOPs), launches not counted one by one.
    twin = by_key[views.config_key([f for f in views.FIVE if f != "kv_cache"])]
    assert without_cache.evidence.flops_per_token == twin.evidence.flops_per_token
    assert without_cache.evidence.launches_per_token is None and twin.evidence.launches_per_token > 0
    # Every compile happened in a warm-up run, none inside a timed one.
    assert not any(ablation.COMPILED_WHILE_TIMED in c.note for c in result.configs)


def test_a_fixed_model_that_fails_to_compile_leaves_the_eager_leave_one_out(tiny_model, prompts, cpu_ceilings):
    def broken(*args):
        raise RuntimeError("inductor said no\nsecond line")

    result, _ = ablation.run_ablation(
        tiny_model, prompts, 3, 0, cpu_ceilings, reps=3, evidence_tokens=2, budget_s=None, compiled_step=broken,
        workload="test", progress=lambda _: None, checkpoint=lambda a: None, compiled_recompute=broken)
    assert any("failed, RuntimeError: inductor said no" in line for line in result.cut)
    assert not any("compiled" in c.fixes for c in result.configs) and len(result.configs) == 14
    loo = [r for r in result.rows if r.view == "leave-one-out"]
    assert [r.fix for r in loo] == list(views.FIVE) and all(r.speedup is not None for r in loo)
