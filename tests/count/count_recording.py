"""A minimal TorchDispatchMode recorder for the coverage tests: every aten op with metas of its args/outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from roofline.count import OpCost, count_op, normalize_op_name, to_meta


@dataclass
class RecordedOp:
    name: str
    args: Any
    kwargs: Any
    outputs: Any

    def cost(self) -> OpCost:
        outputs = self.outputs if isinstance(self.outputs, (list, tuple)) else [self.outputs]
        return count_op(self.name, self.args, self.kwargs, outputs)


class OpCollector(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[RecordedOp] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.ops.append(RecordedOp(normalize_op_name(func), to_meta(args), to_meta(kwargs), to_meta(out)))
        return out


def unmodeled(ops: list[RecordedOp]) -> dict[str, str]:
    missing: dict[str, str] = {}
    for op in ops:
        cost = op.cost()
        if not cost.modeled:
            missing.setdefault(op.name, cost.note)
    return missing
