"""An ONNX model's nodes as the counting needs them: op type, domain, attributes, and the shapes and dtypes of
their inputs and outputs (from ONNX shape inference, with the graph's dynamic dimensions bound when asked).

Needs the ``onnx`` package (the ``onnx`` extra). A node's name is its key: ORT's profile and AI Hub's per-layer
results name layers after it (AI Hub's QNN names replace the separators: see ``normalized_name``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.count.meta import TensorMeta
from roofline.count.onnx_ops import onnx_dtype
from roofline.errors import RooflineError


@dataclass(slots=True)
class GraphNode:
    name: str
    op_type: str
    domain: str
    attrs: dict[str, Any]
    inputs: list[TensorMeta | None]
    outputs: list[TensorMeta | None]
    index: int = 0
    absent_inputs: tuple[int, ...] = ()  # optional inputs left out (empty names): ORT's profile skips them


@dataclass(slots=True)
class OnnxGraph:
    path: str
    nodes: list[GraphNode]
    inputs: dict[str, tuple[list[int | str], str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def by_name(self) -> dict[str, GraphNode]:
        return {n.name: n for n in self.nodes}

    def by_normalized_name(self) -> dict[str, GraphNode]:
        return {normalized_name(n.name): n for n in self.nodes}


_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalized_name(name: str) -> str:
    """'/layer1/layer1.0/conv1/Conv' and '_layer1_layer1_0_conv1_Conv' both -> 'layer1layer10conv1conv'."""
    return _NON_WORD.sub("", name.lower())


def _import_onnx():
    try:
        import onnx
    except ImportError:
        raise RooflineError("reading ONNX models needs the onnx package: pip install 'roofline[onnx]'") from None
    return onnx


def load_onnx_graph(path: str | Path, dims: dict[str, int] | None = None) -> OnnxGraph:
    """The model's nodes with inferred shapes. ``dims`` binds symbolic dimensions by name (``batch``=1); a
    dimension left unbound stays unknown and the shapes that hold it are None."""
    onnx = _import_onnx()
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise RooflineError(f"ONNX model not found: {path}") from None
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends: not an ONNX file
        raise RooflineError(f"cannot read ONNX model {path}: {type(exc).__name__}: {exc}"[:300]) from None
    if not model.graph.node:
        raise RooflineError(f"{path}: not an ONNX model (no graph nodes)")
    notes: list[str] = []
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as exc:  # noqa: BLE001 - contrib ops and odd graphs: keep the declared shapes
        inferred = model
        notes.append(f"ONNX shape inference failed ({type(exc).__name__}); declared shapes only")
    graph = inferred.graph
    initializers = {t.name for t in graph.initializer}
    types: dict[str, tuple[list[int | str], str]] = {}
    for t in graph.initializer:
        types[t.name] = (list(t.dims), onnx_dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type).name))
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        parsed = _value_type(onnx, vi)
        if parsed is not None:
            types.setdefault(vi.name, parsed)
    bound = dims or {}

    def meta(name: str) -> TensorMeta | None:
        if not name or name not in types:
            return None
        shape, dtype = types[name]
        concrete = [bound.get(d) if isinstance(d, str) else d for d in shape]
        if any(d is None for d in concrete):
            return None
        return TensorMeta(tuple(int(d) for d in concrete), dtype)

    nodes = [
        GraphNode(
            name=node.name or f"{node.op_type}_{i}", op_type=node.op_type, domain=node.domain,
            attrs={a.name: _attr_value(onnx, a) for a in node.attribute},
            inputs=[meta(n) for n in node.input], outputs=[meta(n) for n in node.output], index=i,
            absent_inputs=tuple(j for j, n in enumerate(node.input) if not n),
        )
        for i, node in enumerate(graph.node)
    ]
    inputs = {vi.name: types[vi.name] for vi in graph.input if vi.name in types and vi.name not in initializers}
    return OnnxGraph(str(path), nodes, inputs, notes)


def _value_type(onnx, vi) -> tuple[list[int | str], str] | None:
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    shape: list[int | str] = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            shape.append(int(d.dim_value))
        else:
            shape.append(d.dim_param or "?")
    try:
        dtype = onnx_dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name)
    except (KeyError, ValueError, TypeError):
        dtype = "unknown"
    return shape, dtype


def _attr_value(onnx, attr) -> Any:
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return [v.decode(errors="replace") if isinstance(v, bytes) else v for v in value
                if isinstance(v, (int, float, str, bytes))]
    if isinstance(value, (int, float, str)):
        return value
    return None
