"""A broad sweep of torch.nn.functional / tensor ops and optimizers, forward and backward: all modeled."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from count_recording import OpCollector, unmodeled


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def test_vision_and_loss_ops_forward_and_backward():
    x = torch.randn(2, 4, 8, 8, requires_grad=True)
    with OpCollector() as collector:
        y = F.interpolate(x, scale_factor=2, mode="bilinear") + F.interpolate(x, size=(16, 16), mode="nearest")
        y = F.avg_pool2d(y, 2) + F.adaptive_avg_pool2d(x, (8, 8)) + F.adaptive_max_pool2d(x, (8, 8))
        y = F.group_norm(y, 2) + F.instance_norm(y) + F.batch_norm(y, None, None, training=True)
        z = y.masked_fill(y > 1, 0.0).flatten(1)
        values, _ = torch.topk(z, 3, dim=1)
        ordered, _ = torch.sort(z, dim=1)
        loss = F.mse_loss(z, torch.zeros_like(z)) + F.binary_cross_entropy_with_logits(z, torch.ones_like(z))
        loss = loss + F.l1_loss(z, z.detach()) + F.smooth_l1_loss(z, z.detach() * 2) + values.sum() + ordered.mean()
        for activation in (F.softplus, torch.sigmoid, F.hardswish, F.elu, F.leaky_relu, torch.tanh, F.mish):
            loss = loss + activation(z).mean()
        loss = loss + F.log_softmax(z, -1).mean() + torch.var(z) + z.std(1).sum() + z.norm() + z.amax(1).sum()
        loss = loss + torch.einsum("bi,bj->ij", z, z).sum() + torch.stack([z, z]).sum() + z.repeat(2, 1).sum()
        loss = loss + torch.flip(z, [1]).sum() + torch.roll(z, 1, 1).sum() + F.pad(z, (1, 1)).sum()
        loss = loss + torch.cumsum(z, 1).sum() + z.argmax(1).float().sum()
        loss.backward()
    assert unmodeled(collector.ops) == {}


def test_indexing_ops():
    with OpCollector() as collector:
        index = torch.tensor([0, 1])
        w = torch.zeros(4, 10).index_put((index,), torch.ones(2, 10), accumulate=True)
        w = w.scatter_add(1, torch.zeros(4, 3, dtype=torch.long), torch.ones(4, 3))
        torch.nonzero(w)
        _ = w[w > 0]
        _ = w[index]
        torch.where(w > 0, w, -w)
        F.embedding_bag(torch.tensor([1, 2, 3, 4]), torch.randn(10, 3), torch.tensor([0, 2]))
        torch.tril(torch.ones(4, 4))
    assert unmodeled(collector.ops) == {}


@pytest.mark.parametrize("make", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True),
    lambda p: torch.optim.Adam(p, foreach=True),
    lambda p: torch.optim.Adam(p, foreach=False),
    lambda p: torch.optim.AdamW(p, fused=True),
])
def test_optimizers_with_grad_clipping(make):
    model = nn.Linear(4, 4)
    optimizer = make(model.parameters())
    model(torch.randn(2, 4)).sum().backward()
    with OpCollector() as collector:
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.step()
        optimizer.zero_grad()
    assert unmodeled(collector.ops) == {}


def test_grad_scaler_step():
    model = nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    with OpCollector() as collector:
        scaler.scale(model(torch.randn(2, 4)).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
    assert unmodeled(collector.ops) == {}
