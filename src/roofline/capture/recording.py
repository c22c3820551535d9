"""What the counting pass records, as plain data that needs no torch (the trace path reads it too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roofline.count.meta import TensorMeta
from roofline.count.registry import OpCost, flatten_metas


@dataclass
class RecordedOp:
    name: str
    args: list[Any]
    outputs: list[Any]
    cost: OpCost
    dtype: str
    module: str
    phase: str
    source: str | None

    @property
    def input_tensors(self) -> list[TensorMeta]:
        return flatten_metas(self.args)

    @property
    def output_tensors(self) -> list[TensorMeta]:
        return flatten_metas(self.outputs)


@dataclass(frozen=True)
class Tf32Flags:
    """Whether the live run let fp32 matmuls (torch.backends.cuda.matmul.allow_tf32, or
    float32_matmul_precision below 'highest') and cuDNN convolutions (torch.backends.cudnn.allow_tf32) use TF32."""

    matmul: bool = False
    cudnn: bool = False


@dataclass
class OpRecording:
    ops: list[RecordedOp] = field(default_factory=list)
    tf32: Tf32Flags = field(default_factory=Tf32Flags)

    @property
    def tf32_matmul(self) -> bool:
        return self.tf32.matmul

    @property
    def names(self) -> frozenset[str]:
        return frozenset(op.name for op in self.ops)


@dataclass
class CapturedGraph:
    """The aten ops dispatched while one CUDA graph was captured under roofline (capture/cuda_graphs.py), each
    counted as the counting pass counts it: what every replay of that capture runs. ``number``: the capture's, as
    the replay's label in the trace names it (trace_model.GRAPH_REPLAY_LABEL). ``inductor``: captured by
    torch.compile's CUDA graph trees, whose Triton kernels launch without the dispatcher (not among ``ops``)."""

    number: int
    ops: list[RecordedOp] = field(default_factory=list)
    inductor: bool = False

    @property
    def flops(self) -> float:
        """The counted ops' FLOPs summed (an op with no formula adds nothing)."""
        return sum(op.cost.flops for op in self.ops if op.cost.modeled)

    @property
    def bytes(self) -> float:
        return sum(op.cost.bytes for op in self.ops if op.cost.modeled)


def op_dtype(args: list[Any], outputs: list[Any]) -> str:
    """The dtype an op computes in: its first floating-point input, else its first output, else its first input."""
    inputs = flatten_metas(args)
    for t in inputs:
        if t.dtype.startswith(("float", "bfloat", "complex")):
            return t.dtype
    for t in flatten_metas(outputs) + inputs:
        return t.dtype
    return ""


