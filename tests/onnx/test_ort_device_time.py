"""GPU nodes' device times: CUPTI's kernels (a torch.profiler trace of the same runs) joined to ORT's node host
intervals through their launch calls, with the two profilers' clocks aligned on the runs. Built from the documented
formats: ORT's profile (cat Node / Session model_run, ts and dur in us from its profiling start) and Kineto's trace
(cat kernel / gpu_memcpy / cuda_runtime / cuda_driver / user_annotation, args.correlation, ts and dur in us)."""

from __future__ import annotations

import warnings

import pytest

from onnx_cases import node_event
from roofline.analyze.onnx_report import build_onnx_report, layers_from_ort, roof_dtype, unit_of
from roofline.analyze.ort_device_time import attribute_device_time
from roofline.capture.ort_profile import parse_ort_events
from roofline.capture.ort_run import RUN_ANNOTATION
from roofline.errors import RooflineError
from roofline.report import Ceilings

K = 5_271_498_289_238.894  # Kineto's clock: ORT's + K (us)
RUNS = 3
ROW = ("float", (1, 64))
GPU = Ceilings(device="cuda", device_name="test GPU", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e14}, source="test")


def _run_start(r: int) -> float:
    return 1000.0 + 500 * r


def ort_events() -> list[dict]:
    """Per run: input copy, gemm (2 kernels), reshape (no kernel), relu (1 kernel), a CPU Shape node, output copy."""
    events = []
    for r in range(RUNS):
        m = _run_start(r)
        events.append({"cat": "Session", "name": "model_run", "ph": "X", "ts": m, "dur": 300, "args": {}})
        events.append(node_event("gemm", "Gemm", "CUDAExecutionProvider", m + 20, 40, [ROW], [ROW]))
        events.append(node_event("reshape", "Reshape", "CUDAExecutionProvider", m + 62, 4, [ROW], [ROW]))
        events.append(node_event("relu", "Relu", "CUDAExecutionProvider", m + 68, 32, [ROW], [ROW]))
        events.append(node_event("shape", "Shape", "CPUExecutionProvider", m + 102, 8, [ROW], [("int64", (2,))]))
    return events


def kineto_events(offset: float = K) -> list[dict]:
    """The same runs seen by torch.profiler: launch calls at the ORT times + offset, each joined to its device
    event by correlation id; the annotation starts 25 us before model_run and ends 40 us after it."""
    events: list[dict] = []
    corr = 100

    def launch(api: str, cat: str, at: float, device_cat: str, dur: float) -> None:
        nonlocal corr
        corr += 1
        events.append({"ph": "X", "cat": cat, "name": api, "ts": at + offset, "dur": 2.0,
                       "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": device_cat, "name": f"k{corr}", "ts": at + offset + 50, "dur": dur,
                       "args": {"correlation": corr, "device": 0, "stream": 7}})
        events.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": at + offset + 50})

    for r in range(RUNS):
        m = _run_start(r)
        events.append({"ph": "X", "cat": "user_annotation", "name": RUN_ANNOTATION, "ts": m + offset - 25,
                       "dur": 365.0, "args": {}})
        events.append({"ph": "X", "cat": "gpu_user_annotation", "name": RUN_ANNOTATION, "ts": m + offset + 40,
                       "dur": 200.0, "args": {}})
        launch("cudaMemcpyAsync", "cuda_runtime", m + 5, "gpu_memcpy", 4.0)  # input copy, before the first node
        launch("cudaLaunchKernel", "cuda_runtime", m + 30, "kernel", 30.0 + r)  # gemm
        launch("cuLaunchKernel", "cuda_driver", m + 45, "kernel", 20.0)  # gemm (cuBLAS through the driver API)
        launch("cudaLaunchKernelExC", "cuda_runtime", m + 80, "kernel", 7.0)  # relu
        launch("cudaMemcpyAsync", "cuda_runtime", m + 150, "gpu_memcpy", 3.0)  # output copy, after the last node
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": offset, "dur": 9.0,
                   "args": {"correlation": 5}})  # a runtime call that launched nothing
    return events


def _attribute(offset: float = K, clock: float | None = K):
    profile = parse_ort_events(ort_events(), "ort.json")
    device = attribute_device_time(profile, kineto_events(offset), gpu_node=lambda ev: unit_of(ev.provider) == "gpu",
                                   clock_offset_us=clock)
    return profile, device


def _by_name(profile, run: int) -> dict:
    return {ev.name: ev for ev in profile.runs[run]}


def test_kernels_go_to_the_node_whose_host_interval_holds_their_launch():
    profile, device = _attribute()
    assert device.fitted_by == "clocks" and device.offset_us == K
    for r in range(RUNS):
        nodes = _by_name(profile, r)
        assert nodes["gemm"].device_us == pytest.approx(50.0 + r) and nodes["gemm"].kernels == 2
        assert nodes["relu"].device_us == pytest.approx(7.0) and nodes["relu"].kernels == 1
        assert nodes["reshape"].device_us is None and nodes["reshape"].kernels == 0
        assert nodes["shape"].device_us is None  # a CPU node gets no kernel
    # the copies launched before the first node and after the last are counted, in no node
    assert device.kernel_us_per_run == pytest.approx([64.0, 65.0, 66.0])
    assert device.attributed_us_per_run == pytest.approx([57.0, 58.0, 59.0])
    assert device.attributed_share(1) == pytest.approx((58 / 65 + 59 / 66) / 2)  # median over the timed runs
    assert device.launches == 15 and device.launches_in_nodes == 9


def test_misaligned_clocks_are_refitted_on_the_runs():
    """The clocks' own offset 5 ms off (outside what the runs' anchors allow): the offset is fitted on the kernel
    launches within the anchors' band, and the attribution is the same."""
    for clock in (K + 5000.0, None):
        profile, device = _attribute(clock=clock)
        assert device.fitted_by == "launches"
        assert device.band_us[0] <= device.offset_us <= device.band_us[1]
        assert abs(device.offset_us - K) <= 10.0  # the gemm and relu launches pin it within 10 us
        nodes = _by_name(profile, 1)
        assert nodes["gemm"].device_us == pytest.approx(51.0) and nodes["relu"].device_us == pytest.approx(7.0)
        assert device.attributed_us_per_run == pytest.approx([57.0, 58.0, 59.0])
        assert bool(device.notes) == (clock is not None)


def test_anchor_residual_is_the_spread_of_the_runs_start_offsets():
    events = kineto_events()
    annotations = [ev for ev in events if ev.get("cat") == "user_annotation"]
    annotations[2]["ts"] += 4.0  # the third run's Python overhead before session.run was 4 us shorter
    annotations[2]["dur"] -= 4.0
    profile = parse_ort_events(ort_events(), "ort.json")
    device = attribute_device_time(profile, events, clock_offset_us=K)
    assert device.residual_us == pytest.approx(4.0)
    assert device.band_us == pytest.approx((K - 21 - 1, K + 40 + 1))


def test_device_events_without_a_launch_call_are_counted_in_their_run_not_dropped():
    events = kineto_events() + [
        {"ph": "X", "cat": "kernel", "name": "orphan", "ts": _run_start(1) + K + 120, "dur": 6.0,
         "args": {"correlation": 9999}},
        {"ph": "X", "cat": "kernel", "name": "not_ort", "ts": K + 99_000, "dur": 11.0, "args": {"correlation": 9998}}]
    profile = parse_ort_events(ort_events(), "ort.json")
    device = attribute_device_time(profile, events, clock_offset_us=K)
    assert device.kernel_us_per_run == pytest.approx([64.0, 71.0, 66.0])
    assert device.attributed_us_per_run == pytest.approx([57.0, 58.0, 59.0])
    assert device.unlaunched == 2 and device.outside_runs_us == pytest.approx(11.0)


def test_runs_that_cannot_be_paired_are_refused():
    profile = parse_ort_events(ort_events(), "ort.json")
    events = [ev for ev in kineto_events() if not (ev.get("cat") == "user_annotation" and ev["ts"] > K + 1400)]
    with pytest.raises(RooflineError, match="3 model_run events: the runs cannot be paired"):
        attribute_device_time(profile, events)
    with pytest.raises(RooflineError, match="no 'roofline::ort_run' ranges"):
        attribute_device_time(profile, [ev for ev in events if ev.get("cat") != "user_annotation"])


def test_report_says_which_times_are_device_times():
    profile, device = _attribute()
    timed = layers_from_ort(profile, warmup=1, device=device)
    gemm, reshape, relu, shape = timed.layers
    assert gemm.times_s == pytest.approx([51e-6, 52e-6]) and gemm.device_time
    assert relu.times_s == pytest.approx([7e-6, 7e-6])
    assert reshape.times_s == pytest.approx([4e-6, 4e-6]) and not reshape.device_time  # host time kept
    assert shape.times_s == pytest.approx([8e-6, 8e-6]) and not shape.device_time
    assert "DEVICE time" in timed.method and "CUPTI via torch.profiler" in timed.method
    notes = " | ".join(timed.notes)
    assert "89.3% of it attributed to nodes" in notes  # 58 of 65 and 59 of 66 us in the two timed runs
    assert "1 GPU node(s) launched no kernel (Reshape" in notes
    assert "9 of 15 launches fall inside a GPU node" in notes
    report = build_onnx_report(timed, None, {"gpu": GPU, "cpu": GPU}, "gpu", kind="ort", workload="t",
                               source="onnxruntime")
    assert [n["time"] for n in report.extra["onnx"]["nodes"]] == ["device", "host", "device", "host"]
    assert report.summary.total_time_s == pytest.approx((51.5 + 4 + 7 + 8) * 1e-6)
    assert not any("launch cost, not its kernels'" in n for n in report.summary.notes)


def test_a_trace_without_kernels_in_nodes_keeps_host_times_and_says_so():
    profile = parse_ort_events(ort_events(), "ort.json")
    events = [ev for ev in kineto_events() if ev["cat"] not in ("kernel", "gpu_memcpy")]
    timed = layers_from_ort(profile, warmup=1, device=attribute_device_time(profile, events, clock_offset_us=K))
    assert not any(layer.device_time for layer in timed.layers) and "DEVICE" not in timed.method
    assert timed.layers[0].times_s == pytest.approx([40e-6, 40e-6])
    assert any("held no kernel launched inside a GPU node" in n for n in timed.notes)
    assert any("0 of 0 launches" in n for n in timed.notes)


def test_without_a_device_trace_gpu_nodes_keep_host_times_and_the_report_says_so():
    timed = layers_from_ort(parse_ort_events(ort_events(), "ort.json"), warmup=1)
    assert timed.layers[0].times_s == pytest.approx([40e-6, 40e-6]) and not timed.layers[0].device_time
    report = build_onnx_report(timed, None, {"gpu": GPU, "cpu": GPU}, "gpu", kind="ort", workload="t",
                               source="onnxruntime")
    assert any("launch cost, not its kernels'" in n for n in report.summary.notes)
    assert {n["time"] for n in report.extra["onnx"]["nodes"]} == {"host"}


@pytest.mark.cuda
def test_cuda_provider_nodes_get_device_times(tmp_path):
    """A Linear + ReLU exported to ONNX, run under ORT's CUDA provider: its Gemm is timed by its kernels, and the
    device-timed nodes add up to the kernel time attributed to nodes (the rest: the run's input and output copies,
    which ORT makes outside any node)."""
    import warnings

    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    if "CUDAExecutionProvider" not in ort.get_available_providers() or not torch.cuda.is_available():
        pytest.skip("needs onnxruntime-gpu and a CUDA GPU")
    from roofline.analyze.onnx_session import analyze_ort_model

    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU()).eval()
    path = tmp_path / "linear_relu.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(256, 1024),), str(path), dynamo=False)
    report = analyze_ort_model(str(path), provider="cuda", warmup=2, iters=5)
    info = report.extra["onnx"]
    assert "device_time" in info, report.summary.notes
    device = info["device_time"]
    timed = {n["op_type"]: op for op, n in zip(report.ops, info["nodes"]) if n["time"] == "device"}
    assert any(t.startswith(("Gemm", "FusedGemm", "MatMul")) for t in timed), info["nodes"]
    assert all(op.time_s > 0 for op in timed.values())
    assert device["launches_in_nodes"] > 0 and 0 < device["attributed_share"] <= 1
    node_sum = sum(op.time_s for op in timed.values())
    assert node_sum == pytest.approx(device["kernel_time_per_run_s"] * device["attributed_share"], rel=0.25)
    assert "CUPTI via torch.profiler" in report.summary.timing_method


def test_a_trace_file_that_cannot_be_paired_leaves_host_times_with_a_note(tmp_path):
    import json
    from types import SimpleNamespace

    from roofline.analyze.onnx_session import _device_times

    base = 1_790_857_026_000_000_000
    trace = tmp_path / "device_trace.json"
    trace.write_text(json.dumps({"traceEvents": kineto_events(), "baseTimeNanoseconds": base}))
    run = SimpleNamespace(device_trace=trace, device_trace_why_not=None,
                          profiling_start_ns=base + 5_271_498_289_238_894)
    device, note = _device_times(run, parse_ort_events(ort_events(), "ort.json"))
    assert note is None and device.fitted_by == "clocks" and device.offset_us == pytest.approx(K, abs=1e-3)
    cut = [ev for ev in kineto_events() if not (ev["cat"] == "user_annotation" and ev["ts"] > K + 1900)]
    trace.write_text(json.dumps({"traceEvents": cut}))  # the last run's annotation cut off
    device, note = _device_times(run, parse_ort_events(ort_events(), "ort.json"))
    assert device is None and note.startswith("no device times (the torch.profiler trace has 2 'roofline::ort_run'")
    assert note.endswith("GPU nodes keep ORT's host times")
    trace.write_text("[{")
    assert _device_times(run, parse_ort_events(ort_events(), "ort.json"))[1].startswith("no device times")


def test_kernel_names_reach_the_ops_and_a_tf32_gemm_is_judged_against_the_tf32_roof():
    """ORT's CUDA provider lets fp32 Gemm/MatMul/Conv use TF32 (use_tf32, on by default): CUPTI's kernel names say
    whether it did, as cuBLAS's names do for PyTorch's ops."""
    events = kineto_events()
    for ev in events:
        if ev.get("cat") == "kernel" and ev["name"] in ("k102", "k107", "k112"):  # each run's first gemm kernel
            ev["name"] = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"
    profile = parse_ort_events(ort_events(), "ort.json")
    device = attribute_device_time(profile, events, gpu_node=lambda ev: unit_of(ev.provider) == "gpu",
                                   clock_offset_us=K)
    assert _by_name(profile, 1)["gemm"].kernel_names == ["sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32",
                                                         "k108"]
    tf32 = Ceilings(device="cuda", device_name="test GPU", memory_bandwidth_bytes_per_s=1e12,
                    peak_flops_per_s={"float32": 1e14, "tfloat32": 8e14}, source="test")
    report = build_onnx_report(layers_from_ort(profile, warmup=1, device=device), None, {"gpu": tf32, "cpu": tf32},
                               "gpu", kind="ort", workload="t", source="onnxruntime")
    gemm, reshape, relu, _ = report.ops
    assert (gemm.dtype, relu.dtype) == ("tfloat32", "float32")
    assert gemm.kernels[0].startswith("sm90_xmma_gemm") and relu.kernels == ["k109", "k114"]  # timed runs, distinct
    assert reshape.kernels == ["CUDAExecutionProvider"]  # no kernel: the provider, as before
    assert tf32.peak_for(gemm.dtype) == 8e14  # the roof it is placed under: TF32, not fp32


def test_roof_dtype_needs_a_tf32_kernel_a_float32_product_and_a_product_op():
    tf32 = ["cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"]
    assert roof_dtype("Gemm", "float32", tf32) == "tfloat32"
    assert roof_dtype("Conv", "float32", ["sm80_xmma_fprop_implicit_gemm_tf32f32"]) == "tfloat32"
    assert roof_dtype("Gemm", "float32", ["ampere_sgemm_128x64_nn"]) == "float32"
    assert roof_dtype("Gemm", "float16", tf32) == "float16"
    assert roof_dtype("Relu", "float32", tf32) == "float32"
