"""Counting rules found missing by the third model sweep (benchmarks/results/sweep_models3_2026-12-02.md):
linalg_matrix_exp (torch.nn.utils.parametrizations.orthogonal: 75% of a step's time was unmodelled), and what
forward-mode AD runs (torch.func.hessian / jacfwd: _efficientzerotensor, prims::add, _has_same_storage_numel)."""

from __future__ import annotations

import torch

from roofline.capture.op_recorder import record_ops
from roofline.count import count_op
from roofline.count.linalg import NO_NORM, PRODUCTS_KWARG, products_for_norm
from roofline.count.meta import TensorMeta


def test_products_follow_torchs_degree_thresholds():
    # float32 thetas: 1.19e-7 (degree 1: 0 products), 5.98e-4 (2: 1), 5.12e-2 (4: 2), 0.580 (8: 3),
    # 1.46 (12: 4), 3.01 (18: 5)
    assert [products_for_norm(v, "float32") for v in (0.0, 1e-4, 0.01, 0.5, 1.0, 3.0)] == [0, 1, 2, 3, 4, 5]
    # above theta_18 = 3.0101: scale by 2^-s, s = ceil(log2(norm / theta_18)), then square s times
    assert products_for_norm(17.28, "float32") == 5 + 3
    assert products_for_norm(6.0, "float32") == 5 + 1
    assert products_for_norm(0.5, "float64") == 5  # float64's theta_18 is 1.09: degree 18, no squaring


def test_matrix_exp_counts_two_n_cubed_per_product():
    a = TensorMeta((16, 16), "float32")
    cost = count_op("aten::linalg_matrix_exp", [a], {PRODUCTS_KWARG: 7}, [a])
    assert cost.modeled and cost.flops == 2 * 16 ** 3 * 7 and cost.bytes == 2 * 16 * 16 * 4
    c = TensorMeta((16, 16), "complex64")
    assert count_op("aten::linalg_matrix_exp", [c], {PRODUCTS_KWARG: 7}, [c]).flops == 4 * 2 * 16 ** 3 * 7


def test_matrix_exp_from_a_trace_is_unmodelled_with_its_reason():
    cost = count_op("aten::linalg_matrix_exp", [TensorMeta((16, 16), "float32")])
    assert not cost.modeled and cost.note == NO_NORM and cost.keep_whole


def _recorded_products(step) -> int:
    """The n x n products torch made, as its profiler records them: each aten::bmm's batch."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    return sum(e.input_shapes[0][0] for e in prof.events() if e.name == "aten::bmm")


def _scaled(norms, n=16, dtype=torch.float32):
    torch.manual_seed(0)
    m = torch.randn(len(norms), n, n, dtype=dtype)
    return m * (torch.tensor(norms, dtype=torch.float64) / m.abs().sum(-2).amax(-1).double()).to(dtype)[:, None, None]


def test_live_matrix_exp_counts_a_single_matrix_by_its_norm_and_a_batch_at_degree_18():
    """A single matrix: its norm's degree (0.4: degree 8, 3 products). A batch of more than one: degree 18 for every
    matrix (5 products each) and each one's squarings (10: 2): 12 products, where a degree per matrix (3 + 7) was
    counted; torch's profiler records the same 12 bmm products."""
    single = _scaled([0.4])[0]
    batch = _scaled([0.4, 10.0])
    for tensor, products in ((single, 3), (batch, 5 + 5 + 2)):
        recording = record_ops(lambda: torch.linalg.matrix_exp(tensor))
        (op,) = [op for op in recording.ops if "matrix_exp" in op.name]
        assert op.cost.modeled and op.cost.flops == 2 * 16 ** 3 * products
        assert _recorded_products(lambda: torch.linalg.matrix_exp(tensor)) == products


def test_a_matrix_with_a_nan_is_left_unmodelled_not_raised():
    recording = record_ops(lambda: torch.linalg.matrix_exp(torch.full((4, 4), float("nan"))))
    (op,) = [op for op in recording.ops if "matrix_exp" in op.name]
    assert not op.cost.modeled and op.cost.note == NO_NORM


def test_orthogonal_parametrization_step_has_no_unmodelled_op():
    from torch.nn.utils.parametrizations import orthogonal

    model = torch.nn.Sequential(orthogonal(torch.nn.Linear(8, 8)), torch.nn.Tanh())
    x = torch.randn(4, 8)
    recording = record_ops(lambda: model(x).sum().backward(), root=model)
    assert [op.name for op in recording.ops if not op.cost.modeled] == []
    exps = [op for op in recording.ops if "matrix_exp" in op.name]
    assert [op.phase for op in exps] == ["forward", "backward"]
    assert exps[0].cost.flops == 0.0  # the parametrization starts at the identity: A = 0, degree 1, no product


def test_forward_mode_ad_ops_are_counted():
    zero = count_op("aten::_efficientzerotensor", [[8, 4]], None, [TensorMeta((8, 4), "float32")])
    assert zero.modeled and (zero.flops, zero.bytes) == (0.0, 0.0)
    x = TensorMeta((8, 4, 16), "float32")
    add = count_op("prims::add", [x, x])
    assert add.modeled and add.flops == 8 * 4 * 16 and add.bytes == 3 * 8 * 4 * 16 * 4
    assert count_op("prims::exp", [x]).flops == 4 * 8 * 4 * 16  # as aten::exp
    assert count_op("prims::lt", [x, x]).bytes == 2 * 8 * 4 * 16 * 4 + 8 * 4 * 16  # a bool output
    same = count_op("aten::_has_same_storage_numel", [x, x])
    assert same.modeled and same.is_view


def test_hessian_in_a_forward_has_no_unmodelled_op():
    f = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    params = dict(f.named_parameters())
    g = lambda xi: torch.func.functional_call(f, params, (xi,)).squeeze()  # noqa: E731
    x = torch.randn(8, 4)
    recording = record_ops(lambda: torch.func.vmap(torch.func.hessian(g))(x))
    assert {op.name for op in recording.ops if not op.cost.modeled} == set()


def test_broadcast_tensors_is_a_view():
    # torchvision's box coder (fasterrcnn in train mode) calls it; it returns expanded views, no kernel runs. Its
    # trace event has one TensorList argument, which the expand_copy formula it shared read as a tensor:
    # "could not count", an unmodelled row
    cost = count_op("aten::broadcast_tensors", [[TensorMeta((9, 4), "float32"), TensorMeta((1, 4), "float32")]])
    assert cost.modeled and cost.is_view and (cost.flops, cost.bytes) == (0.0, 0.0)


def test_a_norm_exactly_at_a_threshold_takes_that_degree_and_one_just_above_the_next():
    import math

    from roofline.count.linalg import _PRODUCTS, _THETAS

    for dtype in ("float32", "float64"):
        for i, theta in enumerate(_THETAS[dtype]):
            assert products_for_norm(theta, dtype) == _PRODUCTS[i]  # theta_m bounds the norm: <=
            above = products_for_norm(math.nextafter(theta, math.inf), dtype)
            assert above == (_PRODUCTS[i + 1] if i + 1 < len(_PRODUCTS) else _PRODUCTS[-1] + 1)
