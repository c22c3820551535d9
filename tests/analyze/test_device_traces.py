"""Traces from devices and torch versions we did not write ourselves (tests/data/devtraces, see its README): each
gives a report with the right device, steps and times."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analyze.kernel_classes import COMMUNICATION, MATRIX, kernel_classes
from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.kineto import load_trace
from roofline.device.identify import identify_trace
from roofline.report import Ceilings, KernelRecord, OpRecord, Report

DATA = Path(__file__).resolve().parents[1] / "data" / "devtraces"


def test_a_2021_kineto_trace_has_its_step_its_gpu_and_its_kernels_ops():
    """torch 1.8/1.9: ProfilerStep#N is an "Operator", the GPUs are "computeProperties" with major/minor, and
    runtime and kernel events spell "external id" in lower case."""
    trace = load_trace(DATA / "kineto_2021_v100x4_excerpt.json")
    assert [(s.number, s.dur_us) for s in trace.steps] == [(2, 13410.0)]
    assert not any("ProfilerStep" in w for w in trace.warnings)
    by_corr = {k.correlation: k.external_id for k in trace.kernels}
    assert by_corr[482] == 107 and by_corr[333] == 41
    ident = identify_trace(trace)
    assert (ident.name, ident.datasheet_key, ident.compute_capability) == ("Tesla V100-DGXS-32GB", "V100 SXM2 32GB",
                                                                           "7.0")
    assert ident.how.startswith("computeProperties") and not ident.assumed
    report = analyze_trace_file(DATA / "kineto_2021_v100x4_excerpt.json")
    assert report.steps == 1
    assert sorted(round(op.time_s * 1e6) for op in report.ops if op.time_s > 0) == [1, 1, 2, 3, 3]


def test_an_op_that_launched_no_kernel_is_predicted_no_launch():
    """aten::empty and aten::view launch nothing: the 5 us launch floor made 9 ops of 10 us predict 45 us."""
    report = analyze_trace_file(DATA / "kineto_2021_v100x4_excerpt.json")
    idle = [op for op in report.ops if not op.kernels]
    assert sorted(op.name for op in idle) == ["aten::empty", "aten::empty", "aten::empty_strided", "aten::view"]
    assert all(op.predicted_time_s == 0.0 for op in idle)
    assert all(op.predicted_time_s == pytest.approx(5e-6) for op in report.ops if op.kernels)
    assert report.summary.predicted_total_s == pytest.approx(25e-6)


def test_kernels_that_overlap_nowhere_show_no_overlap_from_rounding():
    """Timestamps of 1.6e9 s: the sweep's differences and the durations' sum differ in the last bits only."""
    report = analyze_trace_file(DATA / "kineto_2021_v100x4_excerpt.json")
    kc = report.summary.kernel_classes
    assert kc.overlapped_s == 0.0 and all(c.overlapped_s == 0.0 for c in kc.classes)


def test_kernels_on_two_gpus_at_once_are_not_counted_as_overlap():
    ops = [OpRecord(name="aten::mm", time_s=4e-6), OpRecord(name="aten::mm", time_s=4e-6)]
    kernels = [KernelRecord("sm80_xmma_gemm", 0.0, 4e-6, device=0, op_index=0),
               KernelRecord("sm80_xmma_gemm", 1e-6, 4e-6, device=1, op_index=1)]
    kc = kernel_classes(Report(ops=ops, kernels=kernels, ceilings=Ceilings(device="cuda")))
    assert kc.classes[0].name == MATRIX and kc.classes[0].time_s == pytest.approx(8e-6)
    assert kc.overlapped_s == 0.0 and kc.span_s == pytest.approx(8e-6) and kc.gaps_s == 0.0
    assert "2 GPUs in one process" in kc.method


def test_a_two_gpu_process_says_which_gpus_ran_kernels():
    report = analyze_trace_file(DATA / "two_gpus_one_process_a100.json")
    note = next(n for n in report.summary.notes if n.startswith("kernels ran on 2 GPUs"))
    assert "devices 0 (NVIDIA A100-SXM4-80GB), 1 (NVIDIA A100-SXM4-80GB)" in note
    assert report.summary.kernel_classes.overlapped_s == 0.0
    assert report.summary.kernel_classes.kernel_time_s == pytest.approx(900e-6)


def test_two_gpus_taking_turns_each_idle_and_each_judged_on_its_own_roofs():
    """GPU 0 (an A100) works while GPU 1 (an H100) idles, then the other way round: merged, the gaps would hide
    each other (1.1 ms idle per step); each GPU idles 1.55 ms of the 2 ms step."""
    from roofline.device.datasheet import DATASHEET

    report = analyze_trace_file(DATA / "two_gpus_taking_turns_a100_h100.json")
    assert report.summary.idle_time_s == pytest.approx(2 * 1550e-6)
    assert report.extra["idle_by_device_s"] == pytest.approx({"0": 2 * 1550e-6, "1": 2 * 1550e-6})
    assert any(n.startswith("GPU idle time per GPU of this process (device 0 3.1 ms, device 1 3.1 ms)")
               for n in report.summary.notes)
    on = {k.op_index: k.device for k in report.kernels}
    gemms = {on[i]: op for i, op in enumerate(report.ops) if op.name == "aten::addmm"}
    a100, h100 = DATASHEET["A100 80GB"], DATASHEET["H100 SXM"]
    assert gemms[0].predicted_time_s == pytest.approx(gemms[0].flops / a100.peak_flops_per_s["float16"])
    assert gemms[1].predicted_time_s == pytest.approx(gemms[1].flops / h100.peak_flops_per_s["float16"])
    assert gemms[0].above_roof and not gemms[1].above_roof  # H100-speed kernels beat an A100's roof only
    note = next(n for n in report.summary.notes if n.startswith("kernels ran on 2 GPUs"))
    assert "device 0: NVIDIA A100-SXM4-80GB, datasheet; device 1: NVIDIA H100 80GB HBM3, datasheet" in note


def test_kernel_class_share_of_roof_takes_each_kernels_own_gpus_bandwidth():
    """Each step, a relu moves 64 MiB in 30 us on the A100 and again on the H100: 2.24 TB/s together, above the
    A100's 2.04 TB/s (110% of the first GPU's roof), 83% of what 30 us on each GPU could move at its own roof."""
    from roofline.device.datasheet import DATASHEET

    report = analyze_trace_file(DATA / "two_gpus_taking_turns_a100_h100.json")
    a100 = DATASHEET["A100 80GB"].memory_bandwidth_bytes_per_s
    h100 = DATASHEET["H100 SXM"].memory_bandwidth_bytes_per_s
    assert (a100, h100) == (2.039e12, 3.35e12)
    rows = {c.name: c for c in report.summary.kernel_classes.classes}
    assert rows["other"].bytes == 2 * 64 * 2**20
    assert rows["other"].share_of_roof == pytest.approx(2 * 64 * 2**20 / (30e-6 * a100 + 30e-6 * h100))
    assert rows["other"].share_of_roof == pytest.approx(0.8302, abs=1e-4)
    assert rows["matrix products"].share_of_roof == pytest.approx(rows["matrix products"].bytes
                                                                  / (420e-6 * (a100 + h100)))
    assert "each kernel's time at its own GPU's memory bandwidth (device 0 NVIDIA A100-SXM4-80GB 2.04 TB/s, " \
           "device 1 NVIDIA H100 80GB HBM3 3.35 TB/s)" in report.summary.kernel_classes.method


def test_a_gpu_waiting_for_another_gpus_work_is_the_input_idle_gpu():
    from roofline.doctor import diagnose

    report = analyze_trace_file(DATA / "two_gpus_taking_turns_a100_h100.json")
    (finding,) = diagnose(report, rules=["input-idle"])
    assert finding.evidence["device"] == 1
    assert finding.evidence["idle_at_start_s"] == pytest.approx(420e-6)
    assert finding.evidence["idle_before_any_gpu_work_s"] == pytest.approx(20e-6)
    assert finding.title.startswith("GPU 1 idle") and "issues the other GPUs' work first" in finding.title


def test_bytes_after_a_whole_trace_are_warned_of_and_the_report_is_written(tmp_path, capsys):
    """A trace followed by NUL padding and text (a crashed writer, two exports appended) is whole: it gets its
    report and trace.json.gz (whose writer re-reads the file) instead of 'cannot parse trace ... Extra data'."""
    from roofline.cli import main
    from roofline.render.chrome_trace import read_chrome_trace

    path = DATA / "trailing_garbage_h100.json"
    assert "19 bytes after the end of the trace ignored (not part of it)" in load_trace(path).warnings
    assert len(read_chrome_trace(path)["traceEvents"]) == 17
    assert main(["trace", str(path), "-o", str(tmp_path / "out"), "--no-html"]) == 0
    assert (tmp_path / "out" / "trace.json.gz").is_file()


def test_metadata_after_the_event_list_is_kept_when_garbage_follows_it(tmp_path):
    body = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "pid": 0, "tid": 7, "ts": 1.0,
                             "dur": 2.0, "args": {"device": 0, "stream": 7, "correlation": 1}}],
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}]}
    text = json.dumps(body)
    path = tmp_path / "t.json"
    path.write_text(text + "\n\x00\x00garbage")
    trace = load_trace(path)
    assert trace.metadata["deviceProperties"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert "9 bytes after the end of the trace ignored (not part of it)" in trace.warnings


def test_xpu_runtime_waits_are_the_syncs_of_a_trace_without_xpu_sync_events(tmp_path):
    """XPU_SYNC activity off: the host waits are read from the runtime/driver calls, a driver wait inside a
    runtime wait (queue.wait(): urQueueFinish -> zeCommandListHostSynchronize) once."""
    doc = json.loads((DATA / "xpu_linear.json").read_text())
    events = [e for e in doc["traceEvents"] if e.get("cat") != "xpu_sync"]
    host = {"ph": "X", "pid": 4242, "tid": 4242, "args": {"External id": 0}}
    events += [{**host, "cat": "xpu_runtime", "name": "urQueueFinish", "ts": 8885.0, "dur": 10.0,
                "args": {"correlation": 50}},
               {**host, "cat": "xpu_driver", "name": "zeCommandListHostSynchronize", "ts": 8886.0, "dur": 8.0,
                "args": {"correlation": 50}}]
    doc["traceEvents"] = events
    path = tmp_path / "xpu_no_sync_events.json"
    path.write_text(json.dumps(doc))
    trace = load_trace(path)
    assert [(s.name, s.dur_us) for s in trace.syncs] == [("zeEventHostSynchronize", 40.0), ("urQueueFinish", 10.0)]
    report = analyze_trace_file(path)
    assert sorted((s.kind, s.count) for s in report.syncs) == [("item", 1), ("xpu.synchronize", 1)]


@pytest.mark.parametrize("name, vendor, device", [
    ("xpu_linear.json", "intel", "Intel GPU (XPU, model not named)"),
    ("xpu_linear_pvc_props.json", "intel", "Intel(R) Data Center GPU Max 1550"),
])
def test_an_intel_xpu_trace_is_an_intel_gpu_with_its_host_to_device_copy(name, vendor, device):
    """Kineto's PTI plugin: xpu_runtime/xpu_driver launches, no deviceProperties before torch 2.9, copies named
    'Memcpy M2D (MEMORY(Unknown) -> DEVICE)'."""
    from roofline.doctor import diagnose

    report = analyze_trace_file(DATA / name)
    ident = report.extra["device"]
    assert (ident["kind"], ident["vendor"], ident["name"]) == ("gpu", vendor, device)
    assert "sum of the XPU (SYCL/Level Zero) kernels" in report.summary.timing_method
    copy = next(f for f in diagnose(report) if f.rule == "host-to-device-copy")
    assert copy.evidence["copies"] == 1 and copy.evidence["pageable"] == 1
    assert copy.estimated_savings_s == pytest.approx(200e-6)
    assert "device='xpu'" in copy.fix and ".to('xpu', non_blocking=True)" in copy.fix and "cuda" not in copy.fix


def test_xpu_host_waits_are_syncs_and_device_barriers_are_not():
    """Kineto's XPU plugin writes PTI's synchronizations as xpu_sync events: the host's zeEventHostSynchronize
    after .item()'s device-to-host copy is a host-device sync; a GPU_BARRIER_EXECUTION between kernels is not."""
    from roofline.capture.trace_syncs import sync_kind
    from roofline.doctor import diagnose

    trace = load_trace(DATA / "xpu_linear.json")
    assert [(s.name, s.dur_us) for s in trace.syncs] == [("zeEventHostSynchronize", 40.0)]
    assert "xpu_sync" in trace.categories
    report = analyze_trace_file(DATA / "xpu_linear.json")
    assert [(s.kind, s.count, s.stall_s) for s in report.syncs] == [("item", 1, pytest.approx(40e-6))]
    (finding,) = diagnose(report, rules=["host-device-sync"])
    assert finding.evidence["sync_kinds"] == ["item"] and finding.estimated_savings_s == pytest.approx(40e-6)
    assert sync_kind(None, device="xpu") == "xpu.synchronize"
    assert sync_kind("aten::copy_", "Memcpy D2M (DEVICE -> MEMORY(Unknown))") == "copy to host"


def test_an_all_reduce_overlapping_a_gemm_leaves_the_gemm_its_time():
    """NCCL kernels run on their own stream under the compute they overlap: swept as one timeline, the GEMM that
    started later got 0 ns and 'ran under an earlier kernel'."""
    report = analyze_trace_file(DATA / "nccl_allreduce_h100.json")
    kc = report.summary.kernel_classes
    by = {c.name: c for c in kc.classes}
    assert by[MATRIX].time_s == pytest.approx(420e-6) and by[MATRIX].overlapped_s == 0.0
    assert by[COMMUNICATION].time_s == pytest.approx(1500e-6) and by[COMMUNICATION].kernels == 1
    assert kc.span_s == pytest.approx(1500e-6) and kc.gaps_s == 0.0
    assert "communication (NCCL) kernels swept apart" in kc.method


def test_doctor_of_a_trace_cut_short_takes_the_partial_its_refusal_asks_for(capsys):
    """A crashed run's trace: doctor refused it with 'pass --partial', an option doctor did not have."""
    from roofline.cli import main

    path = str(DATA / "truncated_h100.json")
    assert main(["doctor", path]) == 2
    assert "pass --partial" in capsys.readouterr().err
    assert main(["doctor", path, "--partial"]) == 0
    assert capsys.readouterr().out.startswith("PARTIAL: the trace is cut short; this report covers the 7 events")


def test_an_mps_run_is_named_from_its_allocations_and_keeps_host_times():
    """torch.profiler records no MPS kernels; profile_memory's [memory] events carry c10::DeviceType::MPS (13)."""
    report = analyze_trace_file(DATA / "mps_profile_memory.json")
    ident = report.extra["device"]
    assert (ident["vendor"], ident["name"]) == ("apple", "Apple GPU (MPS)")
    assert report.summary.timing_method.startswith("host time")
    assert not report.ceilings.has_roofs() and "torch.profiler records no MPS kernels" in report.ceilings.method
    plain = analyze_trace_file(DATA / "mps_cpu_ops_only.json").extra["device"]
    assert (plain["kind"], plain["name"]) == ("cpu", "CPU")


def test_hpu_op_events_name_a_gaudi_and_say_they_are_not_read():
    from roofline.device.identify import identify_device

    ident = identify_device({}, [], [], {"hpu_op", "cpu_op"}, has_device_events=False)
    assert (ident.kind, ident.name) == ("accelerator", "Intel Gaudi (HPU)")
    assert "does not read them" in ident.how


def test_a_cut_gzip_is_refused_with_the_cut_as_the_reason(tmp_path):
    """The refusal quoted the reader's last warning, which on a cut gzip was 'no input shapes (record_shapes=False)'
    (the events read before the cut had none), not the cut."""
    import gzip

    from roofline.errors import RooflineError

    data = gzip.compress((DATA / "nccl_allreduce_h100.json").read_bytes(), mtime=0)
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RooflineError, match=r"is cut short \(the gzip stream ends early \(truncated file\)"):
        analyze_trace_file(path)
    report = analyze_trace_file(path, partial=True)
    assert report.extra["partial"]["why"] == ["the gzip stream ends early (truncated file): events after the cut "
                                              "are missing"]


def test_two_gpu_models_each_show_their_own_roofs_in_console_html_and_json():
    """The ceilings table used to show device 0's roofs only, although device 1's ops were judged against an
    H100's: each GPU's roofs are kept in the report and shown, labelled with the device they belong to."""
    from roofline.device.datasheet import DATASHEET
    from roofline.render.console import render_report
    from roofline.render.html import report_payload

    report = analyze_trace_file(DATA / "two_gpus_taking_turns_a100_h100.json")
    by_device = Report.from_json(report.json_bytes()).ceilings_by_device()
    assert {d: (c.device_name, c.memory_bandwidth_bytes_per_s, c.peak_flops_per_s["float16"])
            for d, c in by_device.items()} == {
        0: ("NVIDIA A100-SXM4-80GB", DATASHEET["A100 80GB"].memory_bandwidth_bytes_per_s,
            DATASHEET["A100 80GB"].peak_flops_per_s["float16"]),
        1: ("NVIDIA H100 80GB HBM3", DATASHEET["H100 SXM"].memory_bandwidth_bytes_per_s,
            DATASHEET["H100 SXM"].peak_flops_per_s["float16"])}
    roofs = [line for line in render_report(report).splitlines() if line.startswith("Roofs")]
    assert [line.split(":")[0] for line in roofs] == ["Roofs of device 0 (NVIDIA A100-SXM4-80GB)",
                                                      "Roofs of device 1 (NVIDIA H100 80GB HBM3)"]
    assert "memory 2.04 TB/s" in roofs[0] and "memory 3.35 TB/s" in roofs[1]
    payload = report_payload(report)
    assert [(g["device"], g["ceilings"]["device_name"]) for g in payload["ceilings_by_device"]] == [
        (0, "NVIDIA A100-SXM4-80GB"), (1, "NVIDIA H100 80GB HBM3")]


def test_one_gpu_model_keeps_one_roofs_line():
    from roofline.render.console import render_report

    report = analyze_trace_file(DATA / "two_gpus_one_process_a100.json")
    assert report.ceilings_by_device() == {}
    assert [line[:6] for line in render_report(report).splitlines() if line.startswith("Roofs")] == ["Roofs:"]


def test_a_graph_replayed_from_python_gets_an_op_with_its_kernels_module_and_line():
    """torch.cuda.CUDAGraph.replay() from a module's forward (recorded by `roofline profile` on the H200,
    benchmarks/gpu_sweep_cases.py's cuda_graph_replay): the cudaGraphLaunch sits under no op, only the profiler
    step, so the graph's 16 kernels a step were unattributed (2.3% of kernel time attributed). Each launch now has
    an op of its own, placed where the graph was replayed."""
    from roofline.analyze.pipeline import GRAPH_REPLAY_NOTE
    from roofline.capture.trace_model import GRAPH_REPLAY_OP

    path = DATA / "cuda_graph_python_replay_h200.json.gz"
    trace = load_trace(path)
    replays = [op for op in trace.ops if op.name == GRAPH_REPLAY_OP]
    launches = [l for l in trace.launches if l.name == "cudaGraphLaunch"]
    assert len(replays) == len(launches) == 3
    assert [(op.ts_us, op.dur_us) for op in replays] == [(l.ts_us, l.dur_us) for l in launches]
    assert all(trace.ops[op.parent].name.startswith("ProfilerStep#") for op in replays)
    report = analyze_trace_file(path)
    assert report.summary.kernel_time_attributed_share == pytest.approx(1.0)
    rows = [op for op in report.ops if op.name == GRAPH_REPLAY_OP]
    assert len(rows) == 3 and all(len(op.kernels) == 16 and not op.modeled for op in rows)
    assert {(op.module, op.source, op.phase) for op in rows} == {("Graphed_0", "cuda_graph_replay.py:18", "forward")}
    graph_time = sum(k.dur_s for k in report.kernels if report.ops[k.op_index].name == GRAPH_REPLAY_OP)
    assert sum(op.time_s for op in rows) == pytest.approx(graph_time) and graph_time > 0.9 * sum(
        k.dur_s for k in report.kernels)
    assert any(n.startswith(f"{GRAPH_REPLAY_OP} unmodelled (3 call(s), 9") and n.endswith(GRAPH_REPLAY_NOTE)
               for n in report.summary.notes), report.summary.notes


def test_a_user_triton_kernel_launched_from_a_forward_gets_an_op_at_the_users_launch_line():
    """A @triton.jit kernel called from a module's forward (recorded by `roofline profile` on the H200,
    gpu_sweep_cases.py's triton_kernel_in_module): its launches sit under no op, so 21% of the kernel time was
    unattributed. Each launch now has an op of its own, at the module and at the user's line that launched it (not
    in Triton's launcher, whose frame is innermost)."""
    from roofline.analyze.pipeline import DIRECT_LAUNCH_NOTE
    from roofline.capture.trace_model import DIRECT_LAUNCH_OP

    path = DATA / "triton_kernel_in_module_h200.json.gz"
    trace = load_trace(path)
    direct = [op for op in trace.ops if op.name == DIRECT_LAUNCH_OP]
    assert len(direct) == 12 and all(trace.ops[op.parent].name.startswith("ProfilerStep#") for op in direct)
    report = analyze_trace_file(path)
    assert report.summary.kernel_time_attributed_share == pytest.approx(1.0)
    rows = [op for op in report.ops if op.name == DIRECT_LAUNCH_OP]
    assert {(op.module, op.source, op.phase, tuple(op.kernels)) for op in rows} == {
        (f"Sequential_0.Mlp_{i}", "triton_kernel_in_module.py:14", "forward", ("bias_gelu_kernel",)) for i in range(4)}
    share = sum(op.time_s for op in rows) / sum(op.time_s for op in report.ops)
    assert 0.15 < share < 0.3 and not any(op.modeled for op in rows)
    assert any(n.startswith(f"{DIRECT_LAUNCH_OP} unmodelled (12 call(s), 2") and n.endswith(DIRECT_LAUNCH_NOTE)
               for n in report.summary.notes), report.summary.notes


def test_a_graph_launch_inside_an_op_keeps_that_op():
    """The synthetic H100 trace's launch runs inside a CUDAGraph.replay annotation: no op is added, its kernels
    stay on the annotation."""
    from roofline.capture.trace_model import GRAPH_REPLAY_OP

    trace = load_trace(DATA / "cuda_graph_replay_h100.json")
    assert [op.name for op in trace.ops] == ["ProfilerStep#5", "CUDAGraph.replay"]
    assert GRAPH_REPLAY_OP not in {op.name for op in trace.ops}


def test_a_cpu_ceilings_file_for_a_gpu_trace_is_named_as_the_wrong_kind_of_device(tmp_path):
    """`trace H100.json --ceilings cpu.json` said "ceilings look stale, re-measure" (the H100's kernels ran far above
    a CPU's roofs) instead of saying the file describes another kind of device."""
    from roofline.device.cache import save_ceilings

    cpu = Ceilings(device="cpu", device_name="AMD EPYC", source="measured", memory_bandwidth_bytes_per_s=2e10,
                   peak_flops_per_s={"float32": 1e11, "float16": 1e11}, launch_overhead_s=5e-6)
    path = save_ceilings(cpu, tmp_path / "cpu.json")
    report = analyze_trace_file(DATA / "device_h100_sxm.json", str(path))
    (warning,) = [n for n in report.summary.notes if "--ceilings file describes" in n]
    assert "AMD EPYC (cpu)" in warning and "NVIDIA H100" in warning and report.summary.stale_ceilings is None
    assert not [n for n in analyze_trace_file(DATA / "device_h100_sxm.json").summary.notes
                if "--ceilings file describes" in n]
