"""`roofline ort` on a tiny model quantized by onnxruntime.quantization the three ways users do (static QDQ, static
QOperator, dynamic): every node counted, the integer products judged with the dtype they compute in, and the
report saying there is no int8 roof when the ceilings have none. The model is built with onnx.helper (no export):
Conv(4->8, 3x3) + Relu, GlobalAveragePool, Flatten, MatMul(8x16) + Add."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CONV_FLOPS = 2 * 1 * (8 * 4 * 3 * 3) * (8 * 8)
MATMUL_FLOPS = 2 * 1 * 8 * 16


def _float_model(path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "fc_w"),
             numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "fc_b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "fc_w"], ["m"], name="fc"),
             helper.make_node("Add", ["m", "fc_b"], ["y"], name="fc_bias")]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, \
        quantize_static

    root = tmp_path_factory.mktemp("quantized")
    _float_model(root / "float.onnx")

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.batches = iter([{"x": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)} for _ in range(2)])

        def get_next(self):
            return next(self.batches, None)

    for fmt, name in ((QuantFormat.QDQ, "qdq"), (QuantFormat.QOperator, "qop")):
        quantize_static(str(root / "float.onnx"), str(root / f"{name}.onnx"), Reader(), quant_format=fmt,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    quantize_dynamic(str(root / "float.onnx"), str(root / "dynamic.onnx"), weight_type=QuantType.QInt8,
                     op_types_to_quantize=["Conv", "MatMul"])
    return root


@pytest.mark.parametrize("name,level", [("qdq", "disable"), ("qdq", "all"), ("qop", "disable"),
                                        ("dynamic", "disable"), ("dynamic", "all")])
def test_every_node_of_a_quantized_model_is_counted(quantized, name, level, one_thread):
    from roofline.analyze.onnx_session import analyze_ort_model

    report = analyze_ort_model(str(quantized / f"{name}.onnx"), opt_level=level, warmup=0, iters=1, threads=1)
    nodes = report.extra["onnx"]["nodes"]
    assert [n["op_type"] for n, op in zip(nodes, report.ops) if not op.modeled] == []
    types = {n["op_type"] for n in nodes}
    conv = [op for op, n in zip(report.ops, nodes) if "aten::convolution" in n["aten"]]
    matmul = [op for op, n in zip(report.ops, nodes) if "aten::matmul" in n["aten"] or "aten::mm" in n["aten"]]
    # whichever node form ORT ran them in, the conv and the matmul keep the float model's products
    assert [op.flops for op in conv] == [CONV_FLOPS]
    assert len(matmul) == 1 and MATMUL_FLOPS <= matmul[0].flops <= MATMUL_FLOPS + 6 * 8 + 3 * 16
    if name == "qdq" and level == "disable":
        assert {"QuantizeLinear", "DequantizeLinear", "Conv", "MatMul"} <= types
        q = next(op for op, n in zip(report.ops, nodes) if n["op_type"] == "QuantizeLinear")
        assert q.flops == 4 * q.input_shapes[0][0] * np.prod(q.input_shapes[0][1:])
    if name == "qop":
        conv = next(op for op, n in zip(report.ops, nodes) if n["op_type"] == "QLinearConv")
        assert (conv.flops, conv.dtype) == (CONV_FLOPS, "uint8")
        # x, w, int32 bias, y, three per-tensor float scales, three 1-byte zero points
        assert conv.bytes == 4 * 64 + 8 * 4 * 9 + 8 * 4 + 8 * 64 + 3 * 4 + 3 * 1
    if name == "dynamic" and level == "disable":
        assert {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"} <= types
        mm = next(op for op, n in zip(report.ops, nodes) if n["op_type"] == "MatMulInteger")
        assert (mm.flops, mm.dtype) == (MATMUL_FLOPS, "uint8")
    notes = " ".join(report.summary.notes)
    integer = [op for op in report.ops if op.dtype in ("int8", "uint8") and op.flops > 0]
    if integer and report.ceilings.own_roof("uint8") is None:
        assert "no uint8 roof in the CPU's ceilings" in notes and "judged against the float32 compute roof" in notes
        assert {n.get("roof_dtype") for op, n in zip(report.ops, nodes) if op in integer} == {"float32 (no uint8 roof)"}
    elif integer:  # measured CPU ceilings carry an int8 roof where torch._int_mm runs: uint8 products take it
        assert "compute on uint8 operands" in notes and "judged against the int8 roof (" in notes
        assert {n.get("roof_dtype") for op, n in zip(report.ops, nodes) if op in integer} == {"int8"}


def test_a_prepacked_weight_comes_from_the_model_and_an_unknown_activation_from_the_profile():
    """ORT's NHWC QLinearConv: the profile leaves the prepacked weight out (the scalars after it move up); the
    optimised model knows the weight but not the activation's shape after the layout change."""
    from roofline.analyze.onnx_report import aligned_inputs
    from roofline.count.meta import TensorMeta as T

    x, s, zp, w, b = T((1, 16, 16, 64), "uint8"), T((), "float32"), T((), "uint8"), T((64, 64, 3, 3), "int8"), \
        T((64,), "int32")
    profiled = [x, s, zp, s, T((), "int8"), s, zp, b]
    model = [None, s, zp, w, s, T((), "int8"), s, zp, b]
    assert aligned_inputs(profiled, model) == [x, s, zp, w, s, T((), "int8"), s, zp, b]


def test_optional_inputs_left_out_keep_their_positions():
    """GroupQueryAttention with packed QKV: key, value, past_key, past_value are empty names, which ORT's profile
    skips; the formula reads seqlens_k at position 5 and finds no key at 1."""
    from roofline.analyze.onnx_report import aligned_inputs
    from roofline.count.meta import TensorMeta as T

    qkv, lens, total, cache = T((1, 8, 128), "float32"), T((1,), "int32"), T((), "int32"), T((32, 8), "float32")
    model = [qkv, None, None, None, None, lens, total, cache, cache]
    assert aligned_inputs([qkv, lens, total, cache, cache], model, (1, 2, 3, 4)) == model


@pytest.mark.slow
def test_the_zoo_driver_runs_a_model_and_tables_it(tmp_path, capsys):
    """benchmarks/onnx_zoo.py on its one model that needs no exporter (the LLM contrib ops, onnx.helper): the CLI
    run's report feeds the table, every node counted, FLOPs ratio 1 against itself."""
    import json

    from benchmark_scripts import load_benchmark

    zoo = load_benchmark("onnx_zoo")
    assert zoo.main([str(tmp_path), "--models", "contrib_llm", "--levels", "disable", "--iters", "1"]) == 0
    data = json.loads((tmp_path / "onnx_zoo_cpu.json").read_text())
    row = data["results"]["contrib_llm"]["runs"]["model.onnx"]["disable"]
    assert (row["nodes"], row["unmodelled_nodes"]) == (7, 0)
    assert row["op_types"]["GroupQueryAttention"] == 1 and row["total_flops"] > 2 * 8 * 64 * 128
    assert "| contrib_llm | model.onnx | disable | 7 | - | 0 | 1.000 | none |" in (tmp_path / "onnx_zoo_cpu.md").read_text()
