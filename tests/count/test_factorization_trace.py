"""eigh, eig, svd and qr, live (analyze) and from a CPU trace alike: every row modelled, with the count of the path
the timed run took. Under the counting pass's dispatch mode torch computes the vectors that eigvalsh, svdvals and
eigvals leave out (analyze/dispatch_mode_paths.py): the analyze report counted 9n^3 for an eigvalsh that ran 4n^3/3."""

from __future__ import annotations

import torch

from roofline.analyze.live import analyze_model
from roofline.count import count_op
from roofline.count.meta import TensorMeta as T

N = 24  # batch 3 of N x N, float32
SQUARE = T((3, N, N), "float32")
TALL = T((2, 30, 12), "float32")


class Spectral(torch.nn.Module):
    def forward(self, s, r):
        out = torch.linalg.eigvalsh(s).sum() + torch.linalg.eigh(s)[1].sum()
        out = out + torch.linalg.eigvals(s).abs().sum() + torch.linalg.eig(s)[1].abs().sum()
        out = out + torch.linalg.svdvals(r).sum() + torch.linalg.svd(r, full_matrices=False)[0].sum()
        return out + torch.linalg.qr(r)[1].sum() + torch.linalg.det(s).sum()


def _inputs():
    torch.manual_seed(0)
    a = torch.randn(3, N, N)
    return a @ a.mT + N * torch.eye(N), torch.randn(2, 30, 12)


def _expected():
    """(name, FLOPs) of each decomposition of Spectral's step, in order, as the formulas count the path run."""
    flops = lambda name, *args: count_op(name, args, None, None).flops  # noqa: E731
    return [("aten::_linalg_eigh", flops("aten::_linalg_eigh", SQUARE, None, False)),
            ("aten::_linalg_eigh", flops("aten::_linalg_eigh", SQUARE, None, True)),
            ("aten::_linalg_eigvals", flops("aten::_linalg_eigvals", SQUARE)),
            ("aten::linalg_eig", flops("aten::linalg_eig", SQUARE)),
            ("aten::_linalg_svd", flops("aten::_linalg_svd", TALL, False, False, None)),
            ("aten::_linalg_svd", flops("aten::_linalg_svd", TALL, False, True, None)),
            ("aten::linalg_qr", flops("aten::linalg_qr", TALL, "reduced"))]


DECOMPOSITIONS = {name for name, _ in _expected()}


def test_the_counts_differ_between_values_and_vectors():
    counts = [f for _, f in _expected()]
    assert counts[0] < counts[1] and counts[2] < counts[3] and counts[4] < counts[5]  # the paths tell apart


def test_analyze_counts_the_path_the_timed_run_took(cpu_ceilings):
    report = analyze_model(Spectral(), _inputs(), device="cpu", ceilings=cpu_ceilings, warmup=1, iters=1)
    rows = [(op.name, op.flops) for op in report.ops if op.name in DECOMPOSITIONS]
    assert rows == _expected()
    assert all(op.modeled for op in report.ops if op.name in DECOMPOSITIONS or "det" in op.name)
    assert not any("found no event" in note for note in report.summary.notes)


def test_a_cpu_trace_counts_them_from_their_recorded_shapes(tmp_path, cpu_ceilings):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    model, args = Spectral(), _inputs()
    model(*args)
    path = tmp_path / "linalg.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        model(*args)
    prof.export_chrome_trace(str(path))
    report = report_from_trace(load_trace(str(path)), cpu_ceilings)
    rows = [op for op in report.ops if op.name in DECOMPOSITIONS]
    assert [(op.name, op.flops) for op in rows] == _expected()
    assert all(op.modeled and op.bytes > 0 for op in rows)
    assert not [op.name for op in report.ops if not op.modeled and "linalg" in op.name]
