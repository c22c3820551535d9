from doctor_cases import linear, report
from roofline.doctor import diagnose

WEIGHTS = ("layers.0.wq", "layers.0.wo")


def _calls(shapes: list[list[int]]):
    return [linear(s, module=m) for s in shapes for m in WEIGHTS]


def test_prompts_generated_one_at_a_time_without_cache():
    shapes = [[1, t, 64] for start in (5, 4, 6) for t in range(start, start + 5)]
    findings = diagnose(report(_calls(shapes)), rules=["unbatched-loop"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["pattern"] == "generation" and f.evidence["sequences"] == 3
    assert f.evidence["call_sites"] == 2
    assert 0 < f.estimated_savings_s < f.evidence["time_s"]
    assert "batch" in f.fix


def test_prompts_generated_one_at_a_time_with_cache():
    shapes = [[1, 5, 64]] + [[1, 1, 64]] * 4 + [[1, 7, 64]] + [[1, 1, 64]] * 4
    findings = diagnose(report(_calls(shapes)), rules=["unbatched-loop"])
    assert findings and findings[0].evidence["sequences"] == 2


def test_same_weights_at_batch_one_in_a_loop():
    findings = diagnose(report(_calls([[1, 64]] * 8)), rules=["unbatched-loop"])
    assert findings and findings[0].evidence["pattern"] == "repeat"


def test_batched_generation_is_silent():
    no_cache = [[4, t, 64] for t in range(5, 10)]
    cache = [[4, 5, 64]] + [[4, 1, 64]] * 6
    assert diagnose(report(_calls(no_cache)), rules=["unbatched-loop"]) == []
    assert diagnose(report(_calls(cache)), rules=["unbatched-loop"]) == []


def test_one_prompt_decoded_with_a_cache_is_silent():
    shapes = [[1, 5, 64]] + [[1, 1, 64]] * 8
    assert diagnose(report(_calls(shapes)), rules=["unbatched-loop"]) == []


def test_without_ceilings_the_saving_is_not_invented():
    shapes = [[1, t, 64] for start in (5, 4) for t in range(start, start + 4)]
    r = report(_calls(shapes))
    r.ceilings.memory_bandwidth_bytes_per_s = 0.0
    r.ceilings.peak_flops_per_s = {}
    f = diagnose(r, rules=["unbatched-loop"])[0]
    assert f.estimated_savings_s == 0.0 and f.savings_method.startswith("not estimated")


def _mm(rows: int, step=None, module="layers.0.wq"):
    """aten::mm as a recorded linear decomposes to: [rows, 64] x [64, 64]."""
    from doctor_cases import op

    return op("aten::mm", [([rows, 64], "float32"), ([64, 64], "float32")], out=[rows, 64], module=module,
              step=step, flops=2.0 * rows * 64 * 64, nbytes=4.0 * (64 * 64 + 2 * rows * 64), time=1e-4)


def test_recorded_2d_matmuls_of_prompts_one_at_a_time_are_found():
    ops = [_mm(t) for start in (5, 7) for t in range(start, start + 4)]
    findings = diagnose(report(ops), rules=["unbatched-loop"])
    assert findings and findings[0].evidence["sequences"] == 2


def test_the_same_single_prompt_generation_repeated_in_each_profiled_step_is_silent():
    ops = [_mm(n, step=s) for s in range(3) for n in [5, 1, 1, 1, 1]]
    assert diagnose(report(ops, steps=3), rules=["unbatched-loop"]) == []


def test_one_forward_per_step_prompts_one_at_a_time_are_found_across_steps():
    lengths = [5, 6, 7, 8, 4, 5, 6, 7]
    ops = [_mm(n, step=s) for s, n in enumerate(lengths)]
    findings = diagnose(report(ops, steps=len(lengths)), rules=["unbatched-loop"])
    assert findings and findings[0].evidence["sequences"] == 2


def test_backward_weight_gradients_of_a_one_output_layer_are_not_a_batch_one_loop():
    """LBFGS evaluates its closure 4 times a step: the [1, 64] x [64, 64] weight gradient of a Linear(64, 1) ran 4
    times per step and was reported as "the same weights applied at batch 1 up to 4 times"."""
    ops = [_mm(1) for _ in range(8)]
    for o in ops:
        o.phase = "backward"
    assert diagnose(report(ops), rules=["unbatched-loop"]) == []
    for o in ops:
        o.phase = "forward"
    assert diagnose(report(ops), rules=["unbatched-loop"])
