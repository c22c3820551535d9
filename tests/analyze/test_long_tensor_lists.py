"""A stack of more than 30 tensors from a CPU trace: the profiler records the list as [] (count/copy.py,
PROFILER_LIST_LIMIT), and sweep 7's bidirectional GRU left its 60-step stacks unmodelled, forward and backward.
torch's stack runs as cat(...).view(sizes): the view below it shows the output, and the stack is counted as a copy
of it (analyze/stacked_lists.py). A cat big enough for the CPU's parallel path narrows its output below it and is
counted from that; a small one has nothing below it and stays unmodelled, saying why."""

from __future__ import annotations

import torch

from roofline.analyze.trace_file import analyze_trace_file


def _trace(tmp_path, step):
    step()
    path = tmp_path / "lists.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    prof.export_chrome_trace(str(path))
    return analyze_trace_file(path)


def test_a_gru_stacking_60_steps_counts_its_stacks_forward_and_backward(tmp_path):
    torch.manual_seed(0)
    rnn = torch.nn.GRU(16, 16, batch_first=True, bidirectional=True)
    x = torch.randn(4, 60, 16)
    report = _trace(tmp_path, lambda: rnn(x)[0].sum().backward())
    unrecorded = [op for op in report.ops if op.name == "aten::stack" and not any(op.input_shapes)]
    assert {op.phase for op in unrecorded} == {"forward", "backward"} and len(unrecorded) == 4
    assert all(op.modeled for op in unrecorded)
    forward = 60 * 4 * 16 * 4  # each direction's 60 steps of (4, 16) float32 hidden states
    backward = 60 * 4 * 48 * 4  # the input gates' gradients, (4, 3 x 16) per step
    assert sorted(op.bytes for op in unrecorded) == [2 * forward] * 2 + [2 * backward] * 2
    assert not any(op.name == "aten::stack" and not op.modeled for op in report.ops)


def test_a_stack_of_30_is_counted_from_its_list_and_of_31_from_its_view_alike(tmp_path):
    xs = [torch.randn(5, 7) for _ in range(31)]
    report = _trace(tmp_path, lambda: (torch.stack(xs[:30]), torch.stack(xs), torch.stack(xs, dim=1)))
    stacks = [op for op in report.ops if op.name == "aten::stack"]
    assert [op.modeled for op in stacks] == [True] * 3
    assert [op.bytes for op in stacks] == [2 * 30 * 35 * 4, 2 * 31 * 35 * 4, 2 * 31 * 35 * 4]


def test_a_cat_of_40_tensors_is_counted_from_the_narrow_of_its_output_below_it(tmp_path):
    xs = [torch.randn(64, 128) for _ in range(40)]
    report = _trace(tmp_path, lambda: (torch.cat(xs), torch.cat(xs, dim=1), torch.cat(xs[:30])))
    cats = [op for op in report.ops if op.name == "aten::cat"]
    assert [op.modeled for op in cats] == [True] * 3
    output = 40 * 64 * 128 * 4
    assert [op.bytes for op in cats] == [2 * output, 2 * output, 2 * 30 * 64 * 128 * 4]
    assert not any(n.startswith("aten::cat unmodelled") for n in report.summary.notes)


def test_a_small_cat_of_31_tensors_stays_unmodelled_and_says_why(tmp_path):
    xs = [torch.randn(5, 7) for _ in range(31)]
    report = _trace(tmp_path, lambda: torch.cat(xs))
    (cat,) = [op for op in report.ops if op.name == "aten::cat"]
    assert not cat.modeled
    assert any(n.startswith("aten::cat unmodelled") and "at most 30 tensors" in n for n in report.summary.notes)
