"""Checkpoint recomputation and nested-tensor products on a CUDA GPU, where autograd runs the backward (and so the
recomputed forward) on its own device thread, and SDPA on a jagged tensor runs a fused varlen attention kernel rather
than the CPU's padded math path (counted per sequence live, from a trace as an estimate with its range:
tests/count/test_attention_varlen.py is the CPU side). The CPU versions are tests/analyze/test_checkpoint_recompute.py,
tests/capture/test_kineto_cpu.py and tests/count/test_nested_products.py. Run on the device (< 1 min):
    PYTHONPATH=src python3 -m pytest -m cuda tests/analyze/test_recompute_nested_cuda.py
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

LENGTHS = (5, 9, 3)
HEADS, HEAD_DIM = 4, 64


@pytest.fixture(scope="module")
def gpu_ceilings():
    from roofline.device import get_ceilings

    return get_ceilings("cuda", quick=True)


def _rows(ops) -> str:
    return "\n".join(f"{op.phase:10} {op.name:45} {op.module or '-':18} flops={op.flops} modeled={op.modeled} "
                     f"kernels={len(op.kernels)} time={op.time_s:.3g} shapes={op.input_shapes}" for op in ops)


@pytest.mark.parametrize("reentrant", [False, True])
def test_recomputed_forward_on_the_gpu_is_its_own_phase_with_its_kernels(gpu_ceilings, reentrant):
    from test_checkpoint_recompute import PRODUCT, Checkpointed, _product_flops

    from roofline.analyze.live import analyze_model

    torch.manual_seed(0)
    model = Checkpointed(reentrant).cuda()
    x = torch.randn(8, 64, device="cuda", requires_grad=reentrant)
    report = analyze_model(model, (x,), device="cuda", ceilings=gpu_ceilings, backward=True, warmup=1, iters=1)
    assert report.steps == 1
    assert _product_flops(report, "forward") == 4 * PRODUCT, _rows(report.ops)
    recomputed = [op for op in report.ops if op.phase == "recompute" and op.name == "aten::addmm"]
    assert len(recomputed) == (4 if reentrant else 2), _rows(report.ops)
    assert all(op.kernels and op.time_s > 0 for op in recomputed), _rows(recomputed)
    assert report.summary.kernel_time_attributed_share >= 0.95


@pytest.mark.parametrize("reentrant", [False, True])
def test_recomputation_is_told_from_a_gpu_trace(tmp_path, reentrant):
    from test_checkpoint_recompute import Checkpointed

    from roofline.capture.kineto import load_trace

    torch.manual_seed(0)
    model = Checkpointed(reentrant).cuda()
    x = torch.randn(8, 64, device="cuda", requires_grad=reentrant)
    model(x).sum().backward()
    path = tmp_path / "ckpt_cuda.json"
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(activities=acts, record_shapes=True, with_stack=True) as prof:
            model(x).sum().backward()
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(path))
    trace = load_trace(path)
    phases = [("recompute" if op.is_recompute else "backward" if op.is_backward else "forward", op.module)
              for op in trace.ops if op.name == "aten::addmm"]
    assert [p for p, _ in phases].count("forward") == 4, phases
    assert [p for p, _ in phases].count("recompute") >= 2, phases
    assert all(m for _, m in phases), phases
    mm = [op for op in trace.ops if op.name == "aten::mm"]
    assert mm and all(op.is_backward and not op.is_recompute for op in mm)


def _jagged_qkv():
    torch.manual_seed(0)
    x = torch.nested.nested_tensor([torch.randn(n, HEADS * HEAD_DIM) for n in LENGTHS], layout=torch.jagged,
                                   device="cuda", dtype=torch.float16)
    return x.unflatten(-1, (HEADS, HEAD_DIM)).transpose(1, 2)  # (3, heads, j, head_dim)


def _per_sequence_attention_flops() -> int:
    return sum(2 * 2 * HEADS * n * n * HEAD_DIM for n in LENGTHS)  # Q @ K^T and P @ V, each sequence alone


class _Attention(torch.nn.Module):
    def forward(self, q):
        return F.scaled_dot_product_attention(q, q, q)


def test_sdpa_on_a_jagged_tensor_on_the_gpu_is_counted_per_sequence(gpu_ceilings):
    from roofline.analyze.live import analyze_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = analyze_model(_Attention().eval(), (_jagged_qkv(),), device="cuda", ceilings=gpu_ceilings,
                               warmup=1, iters=1)
    top = [op for op in report.ops if "attention" in op.name or op.name == "aten::matmul"]
    assert top, _rows(report.ops)
    assert sum(op.flops for op in top) == _per_sequence_attention_flops(), _rows(report.ops) + "\n" + "\n".join(
        report.summary.notes)
    # the fused varlen kernel's count read its cumulative lengths (0, 5, 14, 17) in the counting pass, not 17 // 3 each
    assert any("variable-length batches" in n and "3 sequences counted one by one" in n
               for n in report.summary.notes), report.summary.notes
    assert report.summary.unmodeled_time_share < 0.05, _rows(report.ops) + "\n" + "\n".join(report.summary.notes)


def test_sdpa_on_a_jagged_tensor_from_a_gpu_trace_is_counted_not_unmodelled(tmp_path, gpu_ceilings):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace
    from roofline.count.attention_varlen import squares_range

    q = _jagged_qkv()
    path = tmp_path / "nested_cuda.json"
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        F.scaled_dot_product_attention(q, q, q)
        with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
            F.scaled_dot_product_attention(q, q, q)
            torch.cuda.synchronize()
        prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(str(path)), gpu_ceilings)
    attention = [op for op in report.ops if "attention" in op.name]
    assert attention, _rows(report.ops)
    # a trace records a nested operand with neither shape nor dtype: the fused kernel's op is counted from its own
    # (flattened) arguments, never as a dense (3, 4, j, 64) attention. They hold no lengths, only the 17 tokens, the
    # 3 sequences and the longest (9): counted as the fewest FLOPs those allow (9, 4, 4), the range in a note
    fewest, most = (2 * 2 * HEADS * HEAD_DIM * n for n in squares_range(sum(LENGTHS), len(LENGTHS), max(LENGTHS)))
    assert (fewest, most) == (115_712, 148_480) and fewest <= _per_sequence_attention_flops() <= most
    assert sum(op.flops for op in attention if op.modeled) == fewest, _rows(report.ops)
    assert any("variable-length batches" in n and f"between {fewest:,} and {most:,} FLOPs" in n
               for n in report.summary.notes), report.summary.notes
    unmodelled = {op.name for op in attention if not op.modeled}
    assert all(any(name in note for note in report.summary.notes) for name in unmodelled), report.summary.notes
