"""Live facts (count/live.py): a formula declares what it reads from an op's tensor values (``register(live=...)``:
an argument's elements, or a fact derived from the tensors), and the counting pass reads exactly that, for the ops
that declared it only; a timed pass and a trace never read values. The facts' functions are counted here."""

from __future__ import annotations

import pytest
import torch

from roofline.capture.op_recorder import record_ops
from roofline.capture.traffic import count_traffic
from roofline.count import count_op, to_meta
from roofline.count.linalg import PRODUCTS_KWARG, matrix_products
from roofline.count.live import ArgValues, Derived
from roofline.count.registry import FORMULAS, LIVE_FACTS, Call, OpCost, register, unmodeled

OP = "roofline_livefacts::weighted_copy"
KEY = "abs_total"


@torch.library.custom_op(OP, mutates_args=())
def weighted_copy(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    return x.clone()


class _Counted:
    """A fact function that counts its calls: the sum of the first argument's absolute values."""

    def __init__(self, compute=lambda args, kwargs: int(args[0].abs().sum())) -> None:
        self.calls = 0
        self.compute = compute

    def __call__(self, args, kwargs):
        self.calls += 1
        return self.compute(args, kwargs)


def _formula(call: Call) -> OpCost:
    total, lengths = call.kwargs.get(KEY), call.tensor(1, "lengths").values
    if total is None or lengths is None:
        return unmodeled("no live facts")
    return OpCost(float(total), float(sum(lengths)), True)


@pytest.fixture
def declared():
    """The custom op's formula, declaring a derived fact and its second argument's values; unregistered after."""
    fact = _Counted()
    register(OP, live=(Derived(KEY, fact), ArgValues(((1, "lengths"),))))(_formula)
    try:
        yield fact
    finally:
        FORMULAS.pop(OP, None)
        LIVE_FACTS.pop(OP, None)


@pytest.fixture
def tolist_calls(monkeypatch):
    """How many times any tensor's values were copied out with tolist (how the live facts read them)."""
    calls = [0]
    real = torch.Tensor.tolist

    def counted(self):
        calls[0] += 1
        return real(self)

    monkeypatch.setattr(torch.Tensor, "tolist", counted)
    return calls


def test_a_declared_fact_reaches_its_formula_and_no_other_op_has_values_read(declared, tolist_calls):
    x, lengths = torch.tensor([1.0, -2.0, 3.0]), torch.tensor([0, 2, 7], dtype=torch.int32)
    table, index = torch.randn(10, 4), torch.tensor([3, 1, 4], dtype=torch.int64)

    def undeclared():  # integer tensors among their arguments, yet no formula of theirs declared a fact
        torch.nn.functional.embedding(index, table)
        torch.index_select(table, 0, index) @ table.T
        return index + lengths

    recording = record_ops(undeclared)
    assert len(recording.ops) == 5 and all(op.cost.modeled for op in recording.ops)
    assert tolist_calls[0] == 0 and declared.calls == 0
    assert all(getattr(a, "values", None) is None for op in recording.ops for a in op.args)

    recording = record_ops(lambda: (undeclared(), weighted_copy(x, lengths), weighted_copy(-2 * x, lengths)))
    copies = [op for op in recording.ops if op.name == OP]
    assert declared.calls == 2 and tolist_calls[0] == 2  # one fact function call and one values read per copy
    assert [op.cost.flops for op in copies] == [6.0, 12.0] and [op.cost.bytes for op in copies] == [9.0, 9.0]
    assert [op.args[1].values for op in copies] == [(0, 2, 7), (0, 2, 7)] and copies[0].args[0].values is None
    assert all(getattr(a, "values", None) is None for op in recording.ops if op.name != OP for a in op.args)

    # the trace path reads nothing: no values, no derived fact, the formula's fallback
    trace = count_op(OP, to_meta([x, lengths]))
    assert not trace.modeled and trace.note == "no live facts" and declared.calls == 2


def test_a_traffic_count_reads_the_facts_of_each_call_though_it_caches_costs_by_shape(declared):
    lengths = torch.tensor([0, 3], dtype=torch.int32)
    xs = [torch.full((3,), float(k)) for k in (1, 2, 3)]
    counter = count_traffic(lambda: [weighted_copy(x, lengths) for x in xs] + [xs[0] + xs[0], xs[0] + xs[0]])
    assert declared.calls == 3 and counter.flops == 3 * (1 + 2 + 3) + 2 * 3  # the adds: one element-wise FLOP each


def test_the_timed_passes_never_compute_a_fact(monkeypatch, cpu_ceilings):
    """analyze_model runs the step 1 + 2 times untimed-by-profiler, once to count, 1 + 2 times under the profiler:
    matrix_exp's fact is computed once, in the counting pass, and its count reaches the report."""
    from roofline.analyze.live import analyze_model

    fact = _Counted(matrix_products)
    monkeypatch.setitem(LIVE_FACTS, "aten::linalg_matrix_exp", (Derived(PRODUCTS_KWARG, fact),))
    torch.manual_seed(0)
    a = torch.randn(8, 8)
    a *= 0.4 / a.abs().sum(-2).amax()  # 1-norm 0.4: degree 8, 3 products

    class Exp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.steps = 0

        def forward(self, m: torch.Tensor) -> torch.Tensor:
            self.steps += 1
            return torch.linalg.matrix_exp(m)

    model = Exp()
    report = analyze_model(model, (a,), device="cpu", ceilings=cpu_ceilings, warmup=1, iters=2)
    assert model.steps == 7 and fact.calls == 1
    (row,) = [op for op in report.ops if op.name == "aten::linalg_matrix_exp"]
    assert row.flops == 2 * 8 ** 3 * 3


def test_no_fact_is_read_while_a_cuda_graph_is_captured(declared, tolist_calls, monkeypatch):
    """A values read while the stream captures a CUDA graph would end the user's capture with an error: the
    formula gets no facts there, as from a trace."""
    import roofline.count.live as live

    x, lengths = torch.tensor([1.0, -2.0]), torch.tensor([0, 2], dtype=torch.int32)
    monkeypatch.setattr(live, "_capturing", lambda: True)
    (op,) = [op for op in record_ops(lambda: weighted_copy(x, lengths)).ops if op.name == OP]
    assert declared.calls == 0 and tolist_calls[0] == 0
    assert not op.cost.modeled and op.cost.note == "no live facts"
