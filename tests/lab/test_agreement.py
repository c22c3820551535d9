import torch

from roofline.lab.agreement import _ulp, compare_tokens, logit_gap


def test_identical_rows_agree():
    a = compare_tokens("s", [[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 5]])
    assert a.identical and a.first_divergence is None and a.compared_tokens == 5


def test_the_earliest_divergence_over_all_rows_is_reported_with_its_row():
    a = compare_tokens("s", [[1, 2, 3, 4], [5, 6, 7, 8]], [[1, 2, 3, 9], [5, 0, 7, 8]])
    assert not a.identical and a.first_divergence == 1 and a.divergent_prompt == 1


def test_a_shorter_row_diverges_where_it_ends():
    a = compare_tokens("s", [[1, 2, 3]], [[1, 2]])
    assert a.first_divergence == 2 and a.divergent_prompt == 0


def test_ulp_matches_torch_finfo_at_one():
    assert _ulp(1.0, torch.float16) == torch.finfo(torch.float16).eps
    assert _ulp(1.5, torch.bfloat16) == torch.finfo(torch.bfloat16).eps
    assert _ulp(-3.0, torch.float32) == 2 * torch.finfo(torch.float32).eps


def test_logit_gap_is_the_top_two_margin_where_the_reference_token_was_chosen(tiny_model, prompts):
    prompt = prompts[0]
    with torch.no_grad():
        logits = tiny_model(torch.tensor([prompt]))[0, -1]
    top = torch.topk(logits, 2).values
    reference = [int(logits.argmax())]
    gap, ulps = logit_gap(tiny_model, prompt, reference, 0)
    assert abs(gap - float(top[0] - top[1])) < 1e-6
    assert gap >= 0 and ulps == gap / _ulp(float(top[0]), torch.float32)


def test_the_lab_explains_each_divergence_with_the_reference_models_gap(tiny_model, prompts):
    from roofline.lab.generate import generate
    from roofline.lab.model import Fixes
    from roofline.lab.runner import _explain_divergences

    reference = generate(tiny_model, prompts[:2], 5, 0, Fixes())
    changed = [list(reference[0]), reference[1][:2] + [(reference[1][2] + 1) % 512] + reference[1][3:]]
    agreements = [compare_tokens("same", reference, reference), compare_tokens("changed", reference, changed)]
    _explain_divergences(tiny_model, Fixes(), prompts[:2], reference, agreements)
    assert agreements[0].logit_gap is None
    assert agreements[1].first_divergence == 2 and agreements[1].logit_gap_ulps > 0
