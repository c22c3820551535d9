"""The flash-attn package's ops (Hugging Face's attn_implementation="flash_attention_2"), registered by flash-attn
2.x as torch.library custom ops, "flash_attn::" (before 2.7.1) or "flashattn::" (since): counted with the same
arithmetic as aten's flash kernels. Forward 4 * sum(s_q * s_k) * H * D FLOPs (Q@K^T and P@V), backward 10 * ...;
causal bottom-right aligned, a sliding window (window_size_left/right) keeps only its band. The kernels need a GPU:
the calls are built by hand, and as the profiler records them (shapes, Concrete Inputs) in a trace."""

from __future__ import annotations

import json

import pytest

from roofline.count import count_op
from roofline.count.meta import TensorMeta as T

LENGTHS = (5, 9, 3)
CUM = (0, 5, 14, 17)
H, D = 4, 64
TOKENS = sum(LENGTHS)
QKV = T((TOKENS, H, D), "float16")  # 8,704 bytes
LSE = T((H, TOKENS), "float32")


def _varlen_fwd(cum, causal=False, left=-1, right=-1, max_seqlen=9, ns="flash_attn::"):
    args = [QKV, QKV, QKV, cum, cum, max_seqlen, max_seqlen, 0.0, 0.125, causal, left, right, 0.0, None, False]
    return count_op(ns + "_flash_attn_varlen_forward", args)


def _cum(values=CUM):
    return T((4,), "int32", values=values)


@pytest.mark.parametrize("ns", ["flash_attn::", "flashattn::"])
def test_varlen_forward_counts_each_sequence(ns):
    cost = _varlen_fwd(_cum(), ns=ns)
    assert cost.modeled and cost.flops == 4 * sum(s * s for s in LENGTHS) * H * D == 117_760
    # Q, K, V read; the output and its fp32 logsumexp written
    assert cost.bytes == 3 * QKV.nbytes + QKV.nbytes + TOKENS * H * 4 == 35_088


def test_varlen_forward_causal_and_sliding_window_keep_their_part_of_each_sequence():
    assert _varlen_fwd(_cum(), causal=True).flops == 4 * sum(s * (s + 1) // 2 for s in LENGTHS) * H * D
    # window_size (2, 0) with causal: query i sees keys i-2..i, min(i + 1, 3) of them
    kept = sum(sum(min(i + 1, 3) for i in range(s)) for s in LENGTHS)
    cost = _varlen_fwd(_cum(), causal=True, left=2, right=5)  # causal makes the right bound 0, as the kernel does
    assert kept == 42 and cost.flops == 4 * kept * H * D
    assert "sliding window (2 keys back, 0 ahead)" in cost.note
    # a window with keys ahead too (not causal): query i sees i-1..i+1 within its sequence
    ahead = sum(sum(min(i + 1, s - 1) - max(i - 1, 0) + 1 for i in range(s)) for s in LENGTHS)
    assert _varlen_fwd(_cum(), left=1, right=1).flops == 4 * ahead * H * D


def test_varlen_forward_from_a_trace_counts_the_fewest_the_totals_allow():
    """No lengths recorded: the fewest entries 17 tokens in 3 sequences, the longest 9, allow (9, 4, 4)."""
    plain = T((4,), "int32")
    cost = _varlen_fwd(plain)
    assert cost.flops == 4 * (81 + 16 + 16) * H * D
    assert f"between {4 * 113 * H * D:,} and {4 * (81 + 64) * H * D:,} FLOPs" in cost.note
    windowed = _varlen_fwd(plain, causal=True, left=2)
    assert windowed.flops == 4 * 42 * H * D and "sliding window (2 keys back, 0 ahead) per sequence" in windowed.note


def test_padded_forward_and_both_backwards():
    q = T((2, 8, H, D), "bfloat16")
    fwd = count_op("flashattn::_flash_attn_forward", [q, q, q, 0.0, 0.125, False, -1, -1, 0.0, None, False])
    assert fwd.flops == 4 * 2 * 8 * 8 * H * D and fwd.bytes == 4 * q.nbytes + 2 * H * 8 * 4
    causal = count_op("flashattn::_flash_attn_forward", [q, q, q, 0.0, 0.125, True, -1, -1, 0.0, None, False])
    assert causal.flops == 4 * 2 * 36 * H * D
    # a sliding window of 2 keys back, causal: query i of 8 sees min(i + 1, 3) keys, 21 of the 64 scores
    windowed = count_op("flashattn::_flash_attn_forward", [q, q, q, 0.0, 0.125, True, 2, 0, 0.0, None, False])
    assert windowed.flops == 4 * 2 * 21 * H * D and f"only {21 / 64:.3f} of the 8x8 score matrix" in windowed.note
    # backward: 5 products (2 * (3 d_qk + 2 d_v) per entry); reads dout, q, k, v, out, lse; writes dq, dk, dv
    args = [QKV, QKV, QKV, QKV, QKV, LSE, QKV, QKV, QKV, _cum(), _cum(), 9, 9, 0.0, 0.125, False, -1, -1, 0.0,
            None, False, None]
    bwd = count_op("flash_attn::_flash_attn_varlen_backward", args)
    assert bwd.flops == 10 * sum(s * s for s in LENGTHS) * H * D
    assert bwd.bytes == 5 * QKV.nbytes + LSE.nbytes + 3 * QKV.nbytes
    lse = T((2, H, 8), "float32")
    padded = count_op("flash_attn::_flash_attn_backward",
                      [q, q, q, q, q, lse, None, None, None, 0.0, 0.125, True, -1, -1, 0.0, None, False, None])
    assert padded.flops == 10 * 2 * 36 * H * D and padded.bytes == 5 * q.nbytes + lse.nbytes + 3 * q.nbytes


def test_a_paged_kv_cache_is_unmodelled_with_its_reason():
    pages = T((10, 16, H, D), "float16")
    args = [QKV, pages, pages, _cum(), _cum(), 9, 60, 0.0, 0.125, True, -1, -1, 0.0, None, False,
            T((3, 4), "int32"), None, None]
    cost = count_op("flashattn::_flash_attn_varlen_forward", args)
    assert not cost.modeled and "paged KV cache (block_table)" in cost.note


def test_a_profiled_flash_attn_call_reaches_the_report(tmp_path, cpu_ceilings):
    """The event as torch.profiler records a custom op: shapes in Input Dims, scalars in Concrete Inputs."""
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    dims = [[TOKENS, H, D]] * 3 + [[4], [4]] + [[]] * 10
    types = ["c10::Half"] * 3 + ["int"] * 2 + ["Scalar"] * 2 + ["Scalar"] * 5 + ["", "Scalar", ""]
    concrete = [""] * 5 + ["9", "9", "0.", "0.125", "True", "-1", "-1", "0.", "", "False"]
    event = {"ph": "X", "cat": "cpu_op", "name": "flash_attn::_flash_attn_varlen_forward", "pid": 1, "tid": 1,
             "ts": 10.0, "dur": 50.0, "args": {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}}
    path = tmp_path / "fa2.json"
    path.write_text(json.dumps({"traceEvents": [event]}))
    report = report_from_trace(load_trace(path), cpu_ceilings)
    [op] = [op for op in report.ops if op.name == "flash_attn::_flash_attn_varlen_forward"]
    assert op.modeled and op.flops == 4 * ((81 + 9) // 2 + 2 * (16 + 4) // 2) * H * D
    assert op.bytes == 35_088
    notes = [n for n in report.summary.notes if n.startswith("flash_attn::_flash_attn_varlen_forward on variable")]
    assert len(notes) == 1 and "causal per sequence" in notes[0], report.summary.notes


def test_window_kept_is_the_brute_force_count_of_every_small_matrix():
    import itertools

    from roofline.count.causal_mask import causal_kept, window_kept

    for q, k, left, right in itertools.product(range(7), range(7), range(-1, 5), range(-1, 5)):
        shift = k - q
        brute = sum(1 for i in range(q) for j in range(k)
                    if (left < 0 or j - i - shift >= -left) and (right < 0 or j - i - shift <= right))
        assert window_kept(q, k, left, right) == brute, (q, k, left, right)
        assert window_kept(q, k, -1, 0) == causal_kept(q, k, bottom_right=True)
