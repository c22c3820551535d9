"""ONNX Runtime and AI Hub profiles: reading them, the Report built from them (per-unit roofs, warm-up left out,
unmodelled shares), the ONNX doctor rules, and `roofline ort` / `roofline trace --onnx` end to end, bad input
included (one line, exit 2)."""

from __future__ import annotations

import json

import pytest

from onnx_cases import CONV_FLOPS, aihub_profile, qnn_profile, tiny_model
from roofline.analyze.onnx_report import build_onnx_report, layers_from_ort, unit_of
from roofline.capture.aihub_profile import parse_aihub_profile
from roofline.capture.ort_profile import parse_ort_events, read_ort_profile
from roofline.cli import main
from roofline.doctor import diagnose
from roofline.errors import RooflineError
from roofline.report import Ceilings, Report

NPU = Ceilings(device="npu", device_name="test NPU", memory_bandwidth_bytes_per_s=50e9,
               peak_flops_per_s={"float32": 1e12}, source="test")
CPU = Ceilings(device="cpu", device_name="test CPU", memory_bandwidth_bytes_per_s=10e9,
               peak_flops_per_s={"float32": 1e11}, source="test")


@pytest.fixture
def model(tmp_path):
    return tiny_model(tmp_path / "tiny.onnx")


def test_profile_runs_are_split_and_warm_up_is_left_out(tmp_path):
    profile = read_ort_profile(qnn_profile(tmp_path / "p.json", runs=3))
    assert [len(r) for r in profile.runs] == [3, 3, 3]
    timed = layers_from_ort(profile, warmup=1)
    conv = timed.layers[0]
    assert conv.name == "conv" and conv.times_s == pytest.approx([40e-6, 40e-6])  # not the 120 us first run
    assert [layer.unit for layer in timed.layers] == ["npu", "npu", "cpu"]


def test_units_of_providers_and_compute_units():
    assert [unit_of(p) for p in ("CPUExecutionProvider", "CUDAExecutionProvider", "QNNExecutionProvider", "NPU",
                                 "GPU", "TensorrtExecutionProvider")] == ["cpu", "gpu", "npu", "npu", "gpu", "gpu"]


def test_each_node_is_judged_against_the_roofs_of_the_unit_it_ran_on(tmp_path):
    timed = layers_from_ort(read_ort_profile(qnn_profile(tmp_path / "p.json")), warmup=1)
    report = build_onnx_report(timed, None, {"npu": NPU, "cpu": CPU}, "npu", kind="trace", workload="t",
                               source="test")
    conv, relu, transpose = report.ops
    assert conv.flops == CONV_FLOPS and conv.time_s == pytest.approx(40e-6)
    assert transpose.bytes == 2 * 256 * 4
    # the CPU fallback's efficiency is against the CPU's 10 GB/s, not the NPU's 50 GB/s
    assert transpose.efficiency == pytest.approx(transpose.bytes / 20e-6 / 10e9)
    assert relu.efficiency == pytest.approx(relu.bytes / 10e-6 / 50e9)
    findings = {f.rule: f for f in diagnose(report)}
    fallback = findings["ort-fallback"]
    assert fallback.evidence["nodes"] == 1 and fallback.evidence["providers"] == ["CPUExecutionProvider"]
    assert "ort-layout" in findings and findings["ort-layout"].evidence["op_types"] == {"Transpose": 1}


def test_no_fallback_finding_in_a_cpu_session(tmp_path):
    timed = layers_from_ort(read_ort_profile(qnn_profile(tmp_path / "p.json")), warmup=1)
    for layer in timed.layers:
        layer.provider = "CPUExecutionProvider"
    report = build_onnx_report(timed, None, {"cpu": CPU}, "cpu", kind="ort", workload="t", source="test")
    assert "ort-fallback" not in {f.rule for f in diagnose(report)}


def test_an_unknown_node_is_unmodelled_with_its_share_of_time(tmp_path):
    path = qnn_profile(tmp_path / "p.json", cpu_node=False)
    events = json.loads(path.read_text())
    for ev in events:
        if ev["name"] == "relu_kernel_time":
            ev["args"]["op_name"] = "MysteryOp"
    timed = layers_from_ort(parse_ort_events(events, "p.json"), warmup=1)
    report = build_onnx_report(timed, None, {"npu": NPU}, "npu", kind="trace", workload="t", source="test")
    assert report.extra["onnx"]["unmodelled_share_by_op_type"] == {"MysteryOp": pytest.approx(10 / 50)}
    assert report.ops[1].bound == "unmodeled"
    assert any("MysteryOp 20.0%" in note for note in report.summary.notes)


def test_aihub_layers_take_their_shapes_from_the_matched_onnx_model(tmp_path, model):
    from roofline.analyze.onnx_report import layers_from_aihub
    from roofline.capture.onnx_graph import load_onnx_graph

    hub = parse_aihub_profile(json.loads(aihub_profile(tmp_path / "hub.json").read_text()), "hub.json")
    report = build_onnx_report(layers_from_aihub(hub), load_onnx_graph(model), {"npu": NPU, "cpu": CPU}, "npu",
                               kind="trace", workload="hub", source="Qualcomm AI Hub", check_model=True)
    conv = report.ops[0]
    assert (conv.name, conv.flops, conv.time_s) == ("onnx::Conv", CONV_FLOPS, pytest.approx(42e-6))
    assert report.summary.wall_time_s == pytest.approx(80e-6)
    assert [n["unit"] for n in report.extra["onnx"]["nodes"]] == ["npu", "npu", "cpu"]


def test_roofline_ort_end_to_end(tmp_path, model):
    out = tmp_path / "out"
    assert main(["ort", str(model), "--opt-level", "disable", "--iters", "2", "--warmup", "1", "-o", str(out),
                 "--no-html"]) == 0
    report = Report.load(out / "report.json")
    assert [op.name for op in report.ops] == ["onnx::Conv", "onnx::Relu", "onnx::Transpose", "onnx::Cast",
                                              "onnx::Cast", "onnx::Erf"]
    assert report.ops[0].flops == CONV_FLOPS and all(op.modeled for op in report.ops)
    assert report.ops[0].bound in ("memory", "compute", "launch")
    assert report.extra["onnx"]["timed_runs"] == 2 and report.profiled_step_time.n == 2
    assert {f.rule for f in report.findings} >= {"ort-cast", "ort-layout"}
    assert (out / "roofline.png").stat().st_size > 1000


def test_trace_onnx_qnn_profile_with_a_snapdragon_datasheet(tmp_path, model, capsys):
    out = tmp_path / "out"
    profile = qnn_profile(tmp_path / "qnn.json")
    assert main(["trace", str(profile), "--onnx", str(model), "--device", "Snapdragon 8 Gen 3", "-o", str(out),
                 "--no-html"]) == 0
    report = Report.load(out / "report.json")
    roofs = report.extra["onnx"]["roofs_by_unit"]
    assert roofs["npu"]["memory_bandwidth_bytes_per_s"] == pytest.approx(76.8e9)
    assert not roofs["npu"]["has_roofs"]  # no published compute peak: bound unknown, said so
    assert {op.bound for op in report.ops} == {"unknown"}
    assert "ort-fallback" in {f.rule for f in report.findings}


def test_trace_onnx_aihub_with_a_ceilings_file_judges_npu_layers(tmp_path, model):
    ceilings = tmp_path / "npu.json"
    ceilings.write_text(json.dumps(
        {"device": "npu", "device_name": "HTP", "memory_bandwidth_bytes_per_s": 76.8e9,
         "peak_flops_per_s": {"float32": 2e12}}))
    out = tmp_path / "out"
    assert main(["trace", str(aihub_profile(tmp_path / "hub.json")), "--onnx", str(model), "--ceilings",
                 str(ceilings), "-o", str(out), "--no-html"]) == 0
    report = Report.load(out / "report.json")
    assert report.ops[0].bound in ("memory", "compute", "launch") and report.ops[2].bound == "unknown"


@pytest.mark.parametrize("case,message", [
    ("truncated", "cut short"),
    ("wrong_model", "does not belong to"),
    ("no_shapes", "does not belong to"),
    ("not_a_profile", "no node events"),
    ("hub_missing_time", "lacks name or execution_time"),
])
def test_bad_profiles_are_one_line_and_exit_2(tmp_path, model, capsys, case, message):
    path = tmp_path / "bad.json"
    if case == "truncated":
        path.write_text(qnn_profile(tmp_path / "p.json").read_text()[:-40])
    elif case == "wrong_model":
        events = json.loads(qnn_profile(tmp_path / "p.json").read_text())
        for ev in events:
            if ev.get("cat") == "Node":
                ev["name"] = "other_" + ev["name"]
                for key in ("input_type_shape", "output_type_shape"):
                    ev["args"][key] = [{"float": [7, 7, 7]}]
        path.write_text(json.dumps(events))
    elif case == "no_shapes":
        events = json.loads(qnn_profile(tmp_path / "p.json", with_shapes=False).read_text())
        for ev in events:
            if ev.get("cat") == "Node":
                ev["name"] = "renamed_" + ev["name"]
        path.write_text(json.dumps(events))
    elif case == "not_a_profile":
        path.write_text(json.dumps([{"cat": "Session", "name": "model_run", "ts": 0, "dur": 1}]))
    else:
        path.write_text(json.dumps({"execution_detail": [{"name": "conv", "compute_unit": "NPU"}]}))
    code = main(["trace", str(path), "--onnx", str(model), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err


def test_a_device_name_with_no_datasheet_is_refused_not_reported_without_roofs(tmp_path, model, capsys):
    """A name no datasheet knows (a typo) used to write a report judged against no roofs, the reason in a note;
    now it is one line and exit 2, before the profile is read."""
    profile = qnn_profile(tmp_path / "qnn.json")
    assert main(["trace", str(profile), "--onnx", str(model), "--device", "Snapdragon 9", "-o",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("roofline: error: --device 'Snapdragon 9': no datasheet") and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_ort_bad_inputs_are_one_line(tmp_path, model, capsys):
    assert main(["ort", str(model), "--inputs", "x=banana", "-o", str(tmp_path / "o")]) == 2
    assert main(["ort", str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "--inputs" in err.splitlines()[0] and "not found" in err


def test_truncated_profile_is_refused_by_the_reader(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("[{\"cat\": \"Node\", ")
    with pytest.raises(RooflineError, match="cut short"):
        read_ort_profile(path)


def test_snapdragon_datasheet_entries_and_ai_hub_device_names():
    from roofline.device.datasheet import lookup_soc

    assert lookup_soc("Snapdragon 8 Gen 2").memory_bandwidth_bytes_per_s == pytest.approx(67.2e9)
    assert lookup_soc("Samsung Galaxy S24 (Family)").memory_bandwidth_bytes_per_s == pytest.approx(76.8e9)
    elite = lookup_soc("Snapdragon 8 Elite QRD")
    assert elite.memory_bandwidth_bytes_per_s == pytest.approx(84.8e9) and elite.peak_flops_per_s == {}
    assert "5300 MHz" in elite.source and lookup_soc("Google Pixel 8") is None


def test_inputs_spec_binds_shapes_and_named_dimensions():
    from roofline.capture.ort_run import parse_inputs_spec

    assert parse_inputs_spec("x=1x3x224x224,batch=2, seq=128") == ({"x": [1, 3, 224, 224]}, {"batch": 2, "seq": 128})
    with pytest.raises(RooflineError, match="NAME=SHAPE"):
        parse_inputs_spec("x=1x3xbig")


def test_unfused_chains_of_one_pattern_are_one_finding():
    from roofline.doctor.rules.onnx_nodes import unfused
    from roofline.report import Summary

    shape = [1, 64, 128]
    ops, nodes = [], []
    for layer in range(3):
        for kind in ("Add", "Add", "LayerNormalization", "MatMul"):
            i = len(ops)
            ops.append(OpRecord_(f"onnx::{kind}", f"l{layer}.{kind}{i}", i, shape, bound="compute"
                                 if kind == "MatMul" else "memory"))
            nodes.append({"op_type": kind, "unit": "cpu", "provider": "CPUExecutionProvider"})
    report = Report(ops=ops, ceilings=CPU, summary=Summary(total_time_s=sum(op.time_s for op in ops)),
                    extra={"onnx": {"nodes": nodes, "main_unit": "cpu"}})
    (finding,) = unfused(report)
    assert finding.title == "unfused chain of 3 memory-bound nodes x3: Add > Add > LayerNormalization"
    one = 2 * 8192 * 4 / 10e9  # one read of the first input and one write of the last output at 10 GB/s
    assert finding.estimated_savings_s == pytest.approx(3 * (3 * 10e-6 - one))


def OpRecord_(name, module, index, shape, bound):
    from roofline.report import OpRecord

    return OpRecord(name=name, module=module, index=index, time_s=10e-6, flops=8192.0, bytes=3 * 8192 * 4.0,
                    modeled=True, bound=bound, dtype="float32", input_shapes=[shape], input_dtypes=["float32"],
                    output_shapes=[shape], output_dtypes=["float32"])


def test_cuda_kernel_events_give_gpu_nodes_their_device_time(tmp_path):
    from onnx_cases import node_event

    c = ("float", (1, 4, 8, 8))
    events = []
    for r in range(2):
        start = 1000 * (r + 1)
        events.append({"cat": "Session", "name": "model_run", "ts": start, "dur": 900})
        events.append(node_event("relu", "Relu", "CUDAExecutionProvider", start + 10, 30, [c], [c]))
        events += [{"cat": "Kernel", "name": "elementwise_kernel", "ts": start + 50, "dur": 3, "args": {"op_name": "Relu"}},
                   {"cat": "Kernel", "name": "elementwise_kernel", "ts": start + 60, "dur": 2, "args": {"op_name": "Relu"}}]
        events.append(node_event("host", "Shape", "CPUExecutionProvider", start + 80, 7, [c], [("int64", (4,))]))
    timed = layers_from_ort(parse_ort_events(events, "p.json"), warmup=1)
    relu, shape = timed.layers
    assert relu.times_s == pytest.approx([5e-6]) and shape.times_s == pytest.approx([7e-6])
    assert "CUPTI" in timed.method


@pytest.mark.parametrize("extra, fix", [
    ({"onnx": {"source": "onnxruntime", "main_unit": "cpu"}}, "graph optimisation level all"),
    ({"onnx": {"source": "onnxruntime", "main_unit": "gpu"}}, "enable_cuda_graph=1"),
    ({"onnx": {"source": "Qualcomm AI Hub", "main_unit": "npu"}}, "fuse the small layers in the exported graph"),
    ({}, "torch.compile"),
])
def test_launch_overhead_fix_is_the_runtime_s_own(extra, fix):
    """A report of an ONNX graph is not fixed with torch.compile: ORT's CUDA graph capture or its graph fusion."""
    from roofline.doctor.rules.launch_overhead import check
    from roofline.report import OpRecord, Summary

    ops = [OpRecord(name="onnx::Add", module=f"add{i}", index=i, time_s=10e-6, flops=64.0, bytes=768.0, modeled=True,
                    bound="launch", dtype="float32") for i in range(12)]
    report = Report(ops=ops, ceilings=CPU, summary=Summary(total_time_s=120e-6), extra=extra)
    (finding,) = check(report)
    assert fix in finding.fix
    assert ("torch.compile" in finding.fix) == (not extra)
