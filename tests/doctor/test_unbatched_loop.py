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
