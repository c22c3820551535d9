"""Activation checkpointing in a live analyze: the recomputed forward is counted once, as phase ``recompute`` with
the modules it reruns, and the op non-reentrant checkpointing aborts to stop its recomputation (which the profiler
records, the counting pass never sees) carries no FLOPs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from roofline.analyze.live import analyze_model
from roofline.doctor.rules.unfused_chain import find_chains

PRODUCT = 2 * 8 * 64 * 256  # one 8x64 @ 64x256 (or 8x256 @ 256x64) product


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(64, 256)
        self.b = torch.nn.Linear(256, 64)

    def forward(self, x):
        return x + self.b(F.gelu(self.a(x)))


class Checkpointed(torch.nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(2))
        self.reentrant = reentrant

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=self.reentrant)
        return x


def _product_flops(report, phase):
    return sum(op.flops for op in report.ops if op.phase == phase and op.name in ("aten::addmm", "aten::mm"))


@pytest.mark.parametrize("reentrant, recomputed, grad_products", [
    # non-reentrant stops after `a` and gelu (b's output is saved by nothing); the input needs no gradient
    (False, ["blocks.1.a", "blocks.0.a"], 7),
    # reentrant reruns each whole block and needs an input that requires grad: blocks.0.a's input gradient too
    (True, ["blocks.1.a", "blocks.1.b", "blocks.0.a", "blocks.0.b"], 8),
])
def test_recomputed_forward_counted_once(cpu_ceilings, one_thread, reentrant, recomputed, grad_products):
    torch.manual_seed(0)
    report = analyze_model(Checkpointed(reentrant), (torch.randn(8, 64, requires_grad=reentrant),), device="cpu", ceilings=cpu_ceilings,
                           backward=True, warmup=1, iters=1)
    assert report.steps == 1
    assert _product_flops(report, "forward") == 4 * PRODUCT
    assert _product_flops(report, "backward") == grad_products * PRODUCT
    assert [op.module for op in report.ops if op.phase == "recompute" and op.name == "aten::addmm"] == recomputed
    assert {op.module for op in report.ops if op.phase == "recompute"} <= {
        op.module for op in report.ops if op.phase == "forward"}
    assert all(len({op.phase for op in chain}) == 1 for chain in find_chains(report))
    assert _product_flops(report, "recompute") == len(recomputed) * PRODUCT
    assert {op.module for op in report.ops if op.phase == "backward" and op.name == "aten::mm"} == {
        "blocks.0.a", "blocks.0.b", "blocks.1.a", "blocks.1.b"}
    assert any("recompute checkpointed forwards" in n for n in report.summary.notes)
    aborted = [n for n in report.summary.notes if "counting pass did not see" in n]
    assert bool(aborted) == (not reentrant), report.summary.notes
