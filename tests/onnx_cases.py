"""ONNX models and profiles the ONNX tests build: a tiny model made with onnx.helper (no export), and profile files
in the structures their tools document (ORT's Chrome-trace events, with any provider; AI Hub's profile results)."""

from __future__ import annotations

import json
from pathlib import Path

CONV_OUT = (1, 4, 8, 8)


def tiny_model(path: Path) -> Path:
    """x(1,3,8,8) -> Conv(4 filters 3x3, pad 1) -> Relu -> Transpose(NHWC) -> Cast fp16 -> Cast fp32 -> Erf, named
    nodes; a node (Erf) for every family the rules look at."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    b = numpy_helper.from_array(np.zeros(4, dtype="float32"), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Transpose", ["r"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
        helper.make_node("Cast", ["t"], ["h"], name="to_half", to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["h"], ["f"], name="to_float", to=TensorProto.FLOAT),
        helper.make_node("Erf", ["f"], ["y"], name="erf"),
    ]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 4])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))
    return path


CONV_FLOPS = 2 * 1 * (4 * 3 * 3 * 3) * 64  # FlopCounterMode's rule: 2 * batch * prod(weight) * output pixels


def node_event(name: str, op: str, provider: str, ts: float, dur: float, inputs=None, outputs=None) -> dict:
    args = {"op_name": op, "provider": provider, "node_index": "0"}
    if inputs is not None:
        args["input_type_shape"] = [{dtype: list(shape)} for dtype, shape in inputs]
    if outputs is not None:
        args["output_type_shape"] = [{dtype: list(shape)} for dtype, shape in outputs]
    return {"cat": "Node", "name": f"{name}_kernel_time", "ph": "X", "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": args}


def qnn_profile(path: Path, runs: int = 3, with_shapes: bool = True, cpu_node: bool = True) -> Path:
    """An ORT profile of tiny_model as a QNN (HTP) session records it: the NPU takes conv and relu, the transpose
    falls back to the CPU; the first run slower (warm-up)."""
    events: list[dict] = [{"cat": "Session", "name": "session_initialization", "ph": "X", "ts": 0, "dur": 900,
                           "pid": 1, "tid": 1, "args": {}}]
    x, c = ("float", (1, 3, 8, 8)), ("float", CONV_OUT)
    t = ("float", (1, 8, 8, 4))
    for r in range(runs):
        start = 1000 + r * 1000
        slow = 3.0 if r == 0 else 1.0
        events.append({"cat": "Session", "name": "model_run", "ph": "X", "ts": start, "dur": 500, "pid": 1, "tid": 1,
                       "args": {}})
        shapes = with_shapes
        events.append(node_event("conv", "Conv", "QNNExecutionProvider", start + 10, 40 * slow,
                                 [x, ("float", (4, 3, 3, 3)), ("float", (4,))] if shapes else None,
                                 [c] if shapes else None))
        events.append(node_event("relu", "Relu", "QNNExecutionProvider", start + 60, 10 * slow,
                                 [c] if shapes else None, [c] if shapes else None))
        if cpu_node:
            events.append(node_event("to_nhwc", "Transpose", "CPUExecutionProvider", start + 80, 20 * slow,
                                     [c] if shapes else None, [t] if shapes else None))
    path.write_text(json.dumps(events))
    return path


def aihub_profile(path: Path, names: tuple[str, ...] = ("conv", "relu", "to_nhwc")) -> Path:
    """AI Hub profile job results (``download_profile()``): per-layer name, type, compute_unit, execution_time (us)."""
    units = {"conv": "NPU", "relu": "NPU", "to_nhwc": "CPU"}
    times = {"conv": 42.0, "relu": 8.0, "to_nhwc": 25.0}
    detail = [{"name": n, "type": {"conv": "Conv2d", "relu": "ReLU", "to_nhwc": "Transpose"}.get(n, "Op"),
               "compute_unit": units.get(n, "NPU"), "execution_time": times.get(n, 5.0), "execution_cycles": 1000}
              for n in names]
    data = {"execution_summary": {"estimated_inference_time": 80, "estimated_inference_peak_memory": 1 << 20},
            "execution_detail": detail}
    path.write_text(json.dumps(data))
    return path
