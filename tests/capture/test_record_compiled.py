"""The counting pass of a torch.compile'd model records the model's own aten ops with compiled code run eagerly:
Dynamo, asked to compile under the recorder's dispatch mode, traced into roofline's recorder and broke the graph at
its calls (a compiled MLP under `roofline analyze`: 3 graph breaks and 8.1 s, now none and 5.9 s)."""

from __future__ import annotations

import torch

from roofline.capture.op_recorder import record_ops


def test_a_compiled_model_is_recorded_eagerly_with_no_graph_break():
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32))
    compiled = torch.compile(model)
    x = torch.randn(4, 16)
    compiled(x)  # compiled before the recorder, as a user's warm-up does
    counters.clear()
    recorded = record_ops(lambda: compiled(x))
    assert sum(counters["graph_break"].values()) == 0
    eager = record_ops(lambda: model(x))
    assert [(op.name, op.cost.flops, op.cost.bytes) for op in recorded.ops] == \
        [(op.name, op.cost.flops, op.cost.bytes) for op in eager.ops]
    assert any(op.name == "aten::gelu" for op in recorded.ops)
