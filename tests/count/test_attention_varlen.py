"""Variable-length (packed, jagged) attention: each sequence counted alone where the op is seen live (the cumulative
lengths' values read by the counting pass), and from a trace, which records no values, the fewest FLOPs the totals
allow with the range the true count lies in. The jagged batch of the H200 check (lengths 5, 9, 3; 4 heads; head dim
64; fp16): per sequence 2 * 2 * 4 * 64 * (25 + 81 + 9) = 117,760 FLOPs, where equal lengths (17 // 3 = 5 each) made
it 76,800. The GPU kernels cannot run here: their calls are built by hand, or run on meta tensors (whose Meta
kernels the counting pass and the profiler see as on a GPU) with the lengths on the CPU."""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch

from roofline.count import count_op
from roofline.count.attention_varlen import squares_range
from roofline.count.meta import TensorMeta as T

LENGTHS = (5, 9, 3)
HEADS, DIM = 4, 64
CUM = (0, 5, 14, 17)
PER_ENTRY_FWD = HEADS * 2 * (DIM + DIM)  # Q@K^T and P@V, all heads, per score entry
PER_ENTRY_BWD = HEADS * 2 * (3 * DIM + 2 * DIM)
TRUTH = PER_ENTRY_FWD * sum(n * n for n in LENGTHS)
CAUSAL = PER_ENTRY_FWD * sum(n * (n + 1) // 2 for n in LENGTHS)
FEWEST, MOST = PER_ENTRY_FWD * (81 + 4 * 4 + 4 * 4), PER_ENTRY_FWD * (81 + 8 * 8)  # one of 9, then 4 + 4 / 8 + 0


def _tokens(*lead):
    return T((*lead, sum(LENGTHS), HEADS, DIM), "float16")


def _cum(values=CUM):
    return T((len(CUM),), "int32", values=values)


def test_the_h200_batch_is_counted_per_sequence_from_the_cumulative_lengths():
    assert TRUTH == 117_760
    q = _tokens()
    for causal, expected in ((False, TRUTH), (True, CAUSAL)):
        cost = count_op("aten::_flash_attention_forward", [q, q, q, _cum(), _cum(), 9, 9, 0.0, causal, False])
        assert cost.modeled and cost.flops == expected, cost.note
        assert cost.note.startswith("variable-length batch: 3 sequences counted one by one")
        assert ("causal: only 0.574" in cost.note) == causal  # 66 of 115 score entries
    # bytes: Q, K, V read; the (17, 4, 64) output and its fp32 logsumexp written: the same as counted before
    assert cost.bytes == 3 * q.nbytes + q.nbytes + 17 * HEADS * 4


def test_efficient_kernel_and_both_backwards_count_each_sequence_with_its_own_causal_part():
    qe = _tokens(1)
    grad, lse = _tokens(1), T((1, HEADS, 17), "float32")
    # queries and keys of different lengths per sequence: bottom-right causal keeps row i's first i + s_k - s_q keys
    q_cum, k_cum = (0, 2, 10, 17), (0, 5, 14, 17)
    pairs = [(2, 5), (8, 9), (7, 3)]
    kept = (4 + 5) + sum(range(2, 10)) + (0 + 0 + 0 + 0 + 1 + 2 + 3)
    fwd = [qe, qe, qe, None, _cum(q_cum), _cum(k_cum), 8, 9, 0.0, 2]
    cost = count_op("aten::_efficient_attention_forward", fwd)
    assert cost.flops == PER_ENTRY_FWD * kept and "3 sequences counted one by one" in cost.note
    fwd[9] = 0
    assert count_op("aten::_efficient_attention_forward", fwd).flops == PER_ENTRY_FWD * sum(a * b for a, b in pairs)
    bwd = [grad, qe, qe, qe, None, grad, _cum(q_cum), _cum(k_cum), 8, 9, lse, 0.0, None, None, 1]
    top_left = 3 + sum(range(1, 9)) + sum(range(1, 4)) + 4 * 3  # row i keeps min(i + 1, s_k) keys
    assert count_op("aten::_efficient_attention_backward", bwd).flops == PER_ENTRY_BWD * top_left
    q = _tokens()
    flash_bwd = [q, q, q, q, q, T((HEADS, 17), "float32"), _cum(), _cum(), 9, 9, 0.0, False]
    cost = count_op("aten::_flash_attention_backward", flash_bwd)
    assert cost.flops == PER_ENTRY_BWD * 115 and cost.note == "variable-length batch: 3 sequences counted one by one"


def test_from_a_trace_the_fewest_the_totals_allow_is_counted_and_the_range_noted():
    q = _tokens()
    plain = T((4,), "int32")
    cost = count_op("aten::_flash_attention_forward", [q, q, q, plain, plain, 9, 9, 0.0, False, False])
    assert cost.flops == FEWEST == 115_712 and FEWEST <= TRUTH <= MOST
    assert "3 sequences, 17 tokens in all, the longest 9" in cost.note
    assert f"between {FEWEST:,} and {MOST:,} FLOPs" in cost.note and "one sequence of the longest" in cost.note
    causal = count_op("aten::_flash_attention_forward", [q, q, q, plain, plain, 9, 9, 0.0, True, False])
    fewest_causal = PER_ENTRY_FWD * ((81 + 9) // 2 + 2 * (16 + 4) // 2)
    assert causal.flops == fewest_causal <= CAUSAL and "causal per sequence" in causal.note
    # no longest recorded: equal lengths (6, 6, 5), up to every token in one sequence
    unknown = count_op("aten::_flash_attention_forward", [q, q, q, plain, plain, None, None, 0.0, False, False])
    assert unknown.flops == PER_ENTRY_FWD * 97 and f"and {PER_ENTRY_FWD * 17 * 17:,} FLOPs" in unknown.note
    # a longest that fixes the lengths (3 x 5 of 15 tokens): exact, said so
    fixed = T((15, HEADS, DIM), "float16")
    exact = count_op("aten::_flash_attention_forward", [fixed, fixed, fixed, plain, plain, 5, 5, 0.0, False, False])
    assert exact.flops == PER_ENTRY_FWD * 75 and "those totals fix the count" in exact.note


def test_lengths_that_do_not_fit_the_tensors_fall_back_to_the_estimate():
    q = _tokens()
    for bad in ((0, 5, 14, 40), (0, 9, 5, 17)):  # past the 17 tokens; not cumulative
        cost = count_op("aten::_flash_attention_forward", [q, q, q, _cum(bad), _cum(bad), 9, 9, 0.0, False, False])
        assert cost.flops == FEWEST and "from a trace" in cost.note


@pytest.mark.parametrize("tokens, batch", [(7, 3), (10, 4), (9, 1), (6, 6)])
def test_squares_range_is_what_every_split_of_the_tokens_reaches(tokens, batch):
    splits = [s for s in itertools.product(range(tokens + 1), repeat=batch) if sum(s) == tokens]
    for longest in sorted({max(s) for s in splits}):
        squares = [sum(n * n for n in s) for s in splits if max(s) == longest]
        assert squares_range(tokens, batch, longest) == (min(squares), max(squares))
    every = [sum(n * n for n in s) for s in splits]
    assert squares_range(tokens, batch, None) == (min(every), max(every))


def test_the_counting_pass_reads_the_lengths_of_these_ops_only():
    from roofline.capture.op_recorder import record_ops
    from roofline.capture.traffic import count_traffic

    q = torch.empty(17, HEADS, DIM, device="meta", dtype=torch.float16)
    cum = torch.tensor(CUM, dtype=torch.int32)
    source, index = torch.ones(4), torch.tensor([0, 2], dtype=torch.int64)

    def step():
        torch.ops.aten._flash_attention_forward(q, q, q, cum, cum, 9, 9, 0.0, False, False)
        torch.index_select(source, 0, index)

    recording = record_ops(step)
    flash, select = recording.ops
    assert flash.cost.flops == TRUTH and flash.args[3].values == CUM and flash.args[4].values == CUM
    assert all(getattr(a, "values", None) is None for a in select.args)
    # lengths of the same shape but other values: a traffic count, which caches costs by shape, counts each anew
    other = torch.tensor((0, 1, 2, 17), dtype=torch.int32)
    counter = count_traffic(lambda: [torch.ops.aten._flash_attention_forward(q, q, q, c, c, 15, 15, 0.0, False,
                                                                             False) for c in (cum, other)])
    assert counter.flops == TRUTH + PER_ENTRY_FWD * (1 + 1 + 15 * 15)
    # lengths on the meta device have no values: the estimate, as from a trace
    on_meta = cum.to("meta")
    cost = record_ops(lambda: torch.ops.aten._flash_attention_forward(q, q, q, on_meta, on_meta, 9, 9, 0.0, False,
                                                                      False)).ops[0].cost
    assert cost.flops == FEWEST and "from a trace" in cost.note


def test_a_profiled_varlen_call_reports_the_estimate_and_its_range(tmp_path, cpu_ceilings):
    """What the profiler records of these ops (checked on the meta device: the cumulative lengths as (4,) int
    tensors, max_q / max_k as concrete inputs) reaches the report's summary with the range."""
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    q = torch.empty(17, HEADS, DIM, device="meta", dtype=torch.float16)
    cum = torch.empty(4, dtype=torch.int32, device="meta")
    path = tmp_path / "varlen.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            torch.ops.aten._flash_attention_forward(q, q, q, cum, cum, 9, 9, 0.0, False, False)
        prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(path), cpu_ceilings)
    flash = [op for op in report.ops if op.name == "aten::_flash_attention_forward"]
    assert [op.flops for op in flash] == [FEWEST]
    notes = [n for n in report.summary.notes if n.startswith("aten::_flash_attention_forward on variable-length")]
    assert len(notes) == 1 and f"between {FEWEST:,} and {MOST:,} FLOPs" in notes[0], report.summary.notes


def test_the_causal_estimate_notes_the_most_causal_entries_too():
    """The causal range's top end: the most squares (81 + 64 of one 9 and one 8) each keep s*(s+1)/2."""
    q, plain = _tokens(), T((4,), "int32")
    causal = count_op("aten::_flash_attention_forward", [q, q, q, plain, plain, 9, 9, 0.0, True, False])
    most = PER_ENTRY_FWD * ((81 + 64 + 17) // 2)
    assert f"between {PER_ENTRY_FWD * 65:,} and {most:,} FLOPs, causal per sequence" in causal.note


def test_from_a_trace_queries_and_keys_of_other_totals_assume_equal_lengths_with_a_cauchy_schwarz_bound():
    """17 queries and 12 keys in 3 sequences, the longest 9 and 6: equal lengths (6 queries, 4 keys) give
    17 * 12 / 3 = 68 entries; the bound is isqrt(most q squares 81 + 64 times most k squares 36 + 36) + 1 = 103."""
    q, k = T((1, 17, HEADS, DIM), "float16"), T((1, 12, HEADS, DIM), "float16")
    plain = T((4,), "int32")
    args = [q, k, k, None, plain, plain, 9, 6, 0.0, 0]
    cost = count_op("aten::_efficient_attention_forward", args)
    assert cost.flops == PER_ENTRY_FWD * 68
    assert "equal lengths assumed (6 queries, 4 keys each)" in cost.note
    assert f"the true count at most {PER_ENTRY_FWD * 103:,} FLOPs" in cost.note
    # causal: each 6 x 4 sequence keeps 18 of 24 (top-left: rows keep 1, 2, 3, 4, 4, 4) or 10 (bottom-right: 0, 0,
    # 1, 2, 3, 4) of its entries, the share applied to the 68
    for mask_type, kept in ((1, 18), (2, 10)):
        args[9] = mask_type
        flops = count_op("aten::_efficient_attention_forward", args).flops
        assert flops == pytest.approx(PER_ENTRY_FWD * 68 * kept / 24)
    # no longest recorded: the bound from every token in one sequence, isqrt(17^2 * 12^2) + 1
    args[6:10] = [None, None, 0.0, 0]
    assert f"at most {PER_ENTRY_FWD * (17 * 12 + 1):,} FLOPs" in count_op("aten::_efficient_attention_forward",
                                                                           args).note


def test_lengths_known_for_one_side_only_or_of_other_batches_fall_back_to_the_estimate():
    q = _tokens()
    plain = T((4,), "int32")
    for cum_q, cum_k in ((_cum(), plain), (plain, _cum()), (_cum(), T((3,), "int32", values=(0, 8, 17)))):
        cost = count_op("aten::_flash_attention_forward", [q, q, q, cum_q, cum_k, 9, 9, 0.0, False, False])
        assert cost.flops == FEWEST and "from a trace" in cost.note


def test_a_negative_length_is_not_read_as_lengths():
    q = _tokens()
    bad = _cum((0, 5, 4, 17))  # lengths 5, -1, 13
    cost = count_op("aten::_flash_attention_forward", [q, q, q, bad, bad, 9, 9, 0.0, False, False])
    assert cost.flops == FEWEST and "from a trace" in cost.note


@pytest.mark.parametrize("tokens, batch, longest", [(10, 3, 11), (10, 3, 3), (10, 1, 9), (10, 1, 11), (10, 2, 4)])
def test_a_longest_the_totals_cannot_hold_is_ignored(tokens, batch, longest):
    assert squares_range(tokens, batch, longest) == squares_range(tokens, batch, None)


def test_causal_kept_is_the_brute_force_count_of_every_small_matrix():
    from roofline.count.causal_mask import causal_kept

    for q, k, bottom_right in itertools.product(range(9), range(9), (False, True)):
        shift = k - q if bottom_right else 0
        brute = sum(1 for i in range(q) for j in range(k) if j <= i + shift)
        assert causal_kept(q, k, bottom_right) == brute, (q, k, bottom_right)
