"""Sparse products read from real torch.profiler traces (record_shapes=True): the trace marks a sparse operand only
by an empty stride list and records no nonzero count, so each product is one unmodelled row with its time and
the reason in the notes, never a dense product (the old count: 262,144 FLOPs for a 64x64 matrix of 100 stored
elements by a 64x32 one, 6,400 really done) and never its metadata children (_nnz, sparse_dim); other ops on a
sparse tensor (add, mul, to_dense) likewise. Dense ops whose 0-dim operands also have empty stride lists, and ops
on mkldnn-layout operands (no strides either), are counted as before."""

from __future__ import annotations

import warnings

import pytest

from roofline.analyze.pipeline import report_from_trace
from roofline.capture.kineto import load_trace
from roofline.report import Ceilings

torch = pytest.importorskip("torch")

ROOFS = Ceilings(device="cpu", device_name="test CPU", memory_bandwidth_bytes_per_s=1e11,
                 peak_flops_per_s={"float32": 1e12}, launch_overhead_s=5e-6)
METADATA = {"aten::_nnz", "aten::sparse_dim", "aten::dense_dim", "aten::_indices", "aten::_values",
            "aten::crow_indices", "aten::col_indices", "aten::values"}


def _report(tmp_path, run):
    path = tmp_path / "trace.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sparse tensors' beta/invariant-check warnings
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            run()
        prof.export_chrome_trace(str(path))
    return report_from_trace(load_trace(path), ROOFS)


def _operands():
    gen = torch.Generator().manual_seed(0)
    indices = torch.stack([torch.randperm(64 * 64, generator=gen)[:100] // 64,
                           torch.randperm(64 * 64, generator=gen)[:100] % 64])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coo = torch.sparse_coo_tensor(indices, torch.randn(100, generator=gen), (64, 64)).coalesce()
        csr = coo.to_sparse_csr()
    return coo, csr, torch.randn(64, 32, generator=gen), torch.randn(64, 32, generator=gen)


@pytest.mark.parametrize("name, row", [
    ("torch.sparse.mm(coo)", "aten::_sparse_mm"),
    ("torch.sparse.addmm(coo)", "aten::_sparse_addmm"),
    ("torch.mm(coo)", "aten::mm"),
    ("csr @ dense", "aten::mm"),  # under aten::matmul, a composite: its mm is the row
    ("torch.addmm(csr)", "aten::addmm"),
])
def test_a_sparse_product_is_one_unmodelled_row_with_its_time_and_reason(tmp_path, name, row):
    coo, csr, dense, bias = _operands()
    run = {"torch.sparse.mm(coo)": lambda: torch.sparse.mm(coo, dense),
           "torch.sparse.addmm(coo)": lambda: torch.sparse.addmm(bias, coo, dense),
           "torch.mm(coo)": lambda: torch.mm(coo, dense),
           "csr @ dense": lambda: csr @ dense,
           "torch.addmm(csr)": lambda: torch.addmm(bias, csr, dense)}[name]
    report = _report(tmp_path, run)
    names = [op.name for op in report.ops]
    own_time = ["aten::matmul"] if name == "csr @ dense" else []  # matmul's host time outside its mm, a row of its own
    assert names == own_time + [row], names  # one row: neither the inner dense-looking addmm nor the metadata calls
    op = report.ops[-1]
    assert (op.modeled, op.flops, op.bytes, op.bound) == (False, 0.0, 0.0, "unmodeled")
    assert op.time_s > 0 and op.time_s == op.cpu_time_s  # its whole host time, children included
    assert op.input_shapes[:3] in ([[64, 64], [64, 32]], [[64, 32], [64, 64], [64, 32]])
    share = op.time_s / report.summary.total_time_s  # all of it but matmul's own time (no FLOPs, no bytes)
    assert report.summary.unmodeled_time_share == pytest.approx(share) and report.summary.total_flops == 0.0
    share = f"{share:.1%}"
    kept_whole = [n for n in report.summary.notes if n.startswith(f"{row} unmodelled (")]
    assert kept_whole == [
        f"{row} unmodelled (1 call(s), {share} of the time): sparse operand: the trace records no nonzero count "
        "(the dense 64x64 @ 64x32 product, every element stored, would be 262,144 FLOPs)"]
    assert not METADATA & set(names)


def test_dense_ops_with_0_dim_operands_and_mkldnn_operands_are_counted_as_before(tmp_path):
    """A 0-dim tensor's stride list is empty too; so is an mkldnn tensor's (its ops are dense): neither is sparse."""
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    scalar = torch.tensor(2.0)
    conv = torch.nn.Conv2d(3, 4, 3).eval()
    x = torch.randn(1, 3, 8, 8)

    def run():
        torch.addmm(scalar, a, b)  # a 0-dim bias
        torch.mm(a, b)
        scalar * a
        with torch.no_grad():
            on_mkldnn = x.to_mkldnn()
            torch.ops.aten.mkldnn_convolution(on_mkldnn, conv.weight.detach(), conv.bias.detach(),
                                              [0, 0], [1, 1], [1, 1], 1)
            on_mkldnn + on_mkldnn  # no sparse metadata read: an mkldnn add, counted as a dense one

    report = _report(tmp_path, run)
    rows = {op.name: op for op in report.ops}
    assert rows["aten::addmm"].flops == 2 * 8 * 16 * 4 and rows["aten::addmm"].modeled
    assert rows["aten::addmm"].input_shapes[0] == [] and rows["aten::addmm"].input_strides[0] == []
    assert rows["aten::mm"].flops == 2 * 8 * 16 * 4
    assert rows["aten::mul"].flops == 8 * 16 and rows["aten::mul"].modeled
    conv_row = rows["aten::mkldnn_convolution"]
    assert conv_row.modeled and conv_row.flops == 2 * (4 * 6 * 6) * (3 * 3 * 3)
    assert conv_row.input_strides[0] == []  # the trace recorded the mkldnn input without strides
    assert rows["aten::add"].modeled and rows["aten::add"].flops == 3 * 8 * 8
    assert not any("sparse" in note for note in report.summary.notes)


def test_other_ops_on_a_sparse_tensor_are_unmodelled_rows_not_dense_ones(tmp_path):
    """add, mul, to_dense of a COO matrix of 100 stored elements: their formulas would charge the 64x64 shape
    (4,096 FLOPs for the add); the trace tells them from mkldnn ones by the sparse metadata they read. A dense +
    sparse add is counted by the values its kernel converts (test_a_sparse_gradient_added_into_its_parameter...)."""
    coo, _, _, _ = _operands()
    dense = torch.randn(64, 64)

    def run():
        coo + coo
        coo * 2.0
        dense + coo
        coo.to_dense()

    report = _report(tmp_path, run)
    assert [(op.name, op.modeled, op.flops, op.bytes) for op in report.ops] == [
        ("aten::add", False, 0.0, 0.0), ("aten::mul", False, 0.0, 0.0),
        ("aten::add", True, 100.0, 2 * 16384 + 400 + 100 * 2 * 8),  # dense read, result written, values, indices
        ("aten::to_dense", False, 0.0, 0.0)]
    reasons = [note for note in report.summary.notes if "sparse operand" in note]
    assert len(reasons) == 3 and all(note.endswith("sparse operand: the trace records no nonzero count")
                                     for note in reasons)
    assert any(note.startswith("aten::add unmodelled (1 call(s)") for note in reasons)


def test_a_sparse_gradient_added_into_its_parameter_is_counted_by_its_stored_rows(tmp_path):
    """Sweep 7: SGD's step on an nn.EmbeddingBag(sparse=True) adds the sparse gradient into the 5000x16 weight in
    place; the trace records both at the dense shape, and the row was unmodelled (7.8% of a DLRM's step). The
    kernel converts the values, (nnz, 16), below the op: 1 FLOP per stored element; values and indices read, the
    rows they land in read and written."""
    bag = torch.nn.EmbeddingBag(5000, 16, mode="sum", sparse=True)
    bag(torch.randint(0, 5000, (200,)), torch.arange(0, 200, 4)).sum().backward()
    grad, weight = bag.weight.grad, bag.weight.detach().clone()

    report = _report(tmp_path, lambda: weight.add_(grad, alpha=-0.1))
    [row] = [op for op in report.ops if op.name == "aten::add_"]
    stored = grad._values().numel()
    assert row.modeled and row.flops == stored and stored == 200 * 16
    assert row.bytes == 3 * stored * 4 + grad._indices().shape[1] * 8  # an uncoalesced gradient: 200 rows


def test_roofline_trace_on_the_sweeps_sparse_model_states_the_product_unmodelled(tmp_path, capsys):
    """The sweep's case end to end through the CLI: torch.sparse.mm of a 64x64 COO matrix (100 stored) by a 64x32
    parameter, in a module; the old count was 262,144 FLOPs for the product."""
    from roofline.cli import main
    from roofline.report import Report

    class Sparse(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(64, 32))

        def forward(self, x):
            return torch.sparse.mm(x, self.w)

    coo, _, _, _ = _operands()
    model, path = Sparse(), tmp_path / "sparse.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        model(coo)
    prof.export_chrome_trace(str(path))
    assert main(["trace", str(path), "-o", str(tmp_path / "out"), "--no-html"]) == 0
    report = Report.load(tmp_path / "out" / "report.json")
    assert [(op.name, op.modeled, op.flops) for op in report.ops] == [("aten::_sparse_mm", False, 0.0)]
    assert report.summary.total_flops == 0.0
    assert "the trace records no nonzero count" in " ".join(capsys.readouterr().out.split())


def test_analyze_counts_the_product_by_its_stored_elements_and_refuses_a_sparse_add():
    """Live, the counting pass sees the nonzero count: the product is 2*nnz*n; an add of the sparse matrix to
    itself is unmodelled with the counting pass's reason (its formula would count the 64x64 shape)."""
    from roofline.analyze.live import analyze_model

    coo, _, dense, _ = _operands()

    class Both(torch.nn.Module):
        def forward(self, x, w):
            return torch.sparse.mm(x, w), x + x

    report = analyze_model(Both(), (coo, dense), device="cpu", ceilings=ROOFS, warmup=1, iters=1)
    product = next(op for op in report.ops if "sparse" in op.name)
    assert product.modeled and product.flops == 2 * coo._nnz() * 32
    add = next(op for op in report.ops if op.name == "aten::add")
    assert not add.modeled and add.flops == 0.0
    assert any(note.startswith("aten::add unmodelled (1 call(s)") and note.endswith(
        "sparse operand: the formula counts the dense shape's FLOPs, not the stored elements'")
        for note in report.summary.notes)
