"""A CPU-only torch.profiler trace read by `roofline trace`: Kineto records no CPU model and no torch version (torch
2.x writes schemaVersion, deviceProperties (GPUs only), trace_id, record_shapes, host_name, displayTimeUnit,
baseTimeNanoseconds, traceName; distributedInfo in a distributed job), so the device is shown as a CPU whose model
the trace does not record, never as the CPU of the machine reading it, and the roofs say whose they are: this
machine's measured ceilings only when the trace's host name is this machine's, the file given with --ceilings, or
none. Console, report.json (environment, Summary notes, extra["device"]) and report.html."""

from __future__ import annotations

import gzip
import json

import pytest
import torch

from conftest import SHARED
from roofline.analyze.trace_file import CPU_NOT_RECORDED, analyze_trace_file
from roofline.cli import main
from roofline.device.host import cpu_name, host_name

HTA_CPU_ONLY = (SHARED / "fixtures" / "public-traces" / "hta" / "cpu_only"
                / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory):
    """A real CPU-activity trace of a small MLP, recorded here with record_shapes=True."""
    from torch.profiler import ProfilerActivity, profile

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    x = torch.randn(16, 64)
    model(x)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            model(x)
            prof.step()
    path = tmp_path_factory.mktemp("cpu-trace") / "cpu.json"
    prof.export_chrome_trace(str(path))
    return path


def _elsewhere(trace, tmp_path, host: str = "another-box"):
    data = json.loads(trace.read_text())
    data["host_name"] = host
    path = tmp_path / "elsewhere.json"
    path.write_text(json.dumps(data))
    return path


def test_torch_writes_no_cpu_model_nor_torch_version_in_a_cpu_trace(cpu_trace):
    top = json.loads(cpu_trace.read_text())
    assert top["deviceProperties"] == [] and top["host_name"] == host_name()
    assert not {"torch_version", "pytorch_version", "cpu", "cpu_name"} & set(top)


def test_a_cpu_trace_recorded_here_names_no_cpu_model_and_says_whose_roofs(cpu_trace, tmp_path, capsys, monkeypatch):
    from roofline.device import host
    from roofline.device.host import generic_host_name

    if generic_host_name(host_name()):  # a container's id or "localhost": no evidence of "here", said elsewhere
        monkeypatch.setattr(host, "host_name", lambda: "roofline-test-box")
        cpu_trace = _elsewhere(cpu_trace, tmp_path, "roofline-test-box")
    out = tmp_path / "out"
    assert main(["trace", str(cpu_trace), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    here = cpu_name()
    assert report["environment"]["device_name"] == CPU_NOT_RECORDED == "CPU (model not recorded in the trace)"
    assert "torch_version" in report["environment"]["unknown"] and report["environment"]["torch_version"] == ""
    whose = (f"this machine's measured CPU ceilings ({here}, {report['ceilings']['source']}), because the trace's "
             f"host name '{host.host_name()}' is this machine's; the trace does not record which CPU ran it")
    assert report["summary"]["notes"][0] == (f"Device: {CPU_NOT_RECORDED} (no device events and no device named in the "
                                             f"trace); roofs: {whose}")
    assert report["extra"]["device"]["roofs_of"] == whose and report["ceilings"]["device_name"] == here
    assert text.splitlines()[0] == (f"roofline report: {cpu_trace.name} on {CPU_NOT_RECORDED}; torch version not "
                                    "recorded in the trace")
    assert "this machine's measured CPU ceilings" in " ".join(text.split())
    html = (out / "report.html").read_text()
    assert html.count(CPU_NOT_RECORDED) >= 2  # the environment and the Device note in the overview's notes
    assert "because the trace" in html


def test_a_cpu_trace_from_another_host_never_carries_this_machines_cpu(cpu_trace, tmp_path):
    report = analyze_trace_file(_elsewhere(cpu_trace, tmp_path))
    assert report.environment.device_name == CPU_NOT_RECORDED and not report.ceilings.has_roofs()
    assert report.summary.notes[0] == (f"Device: {CPU_NOT_RECORDED} (no device events and no device named in the "
                                       "trace); roofs: none")
    assert report.summary.notes[1].startswith("warning: no roofs: a CPU trace recorded on another-box is not judged "
                                              "against this machine's CPU")
    everything = json.dumps([report.summary.notes, report.environment.device_name, report.extra["device"]])
    assert cpu_name() not in everything


def test_a_cpu_trace_judged_against_a_ceilings_file_names_the_file_and_its_cpu(cpu_trace, tmp_path, cpu_ceilings):
    import msgspec

    given = msgspec.structs.replace(cpu_ceilings, device_name="Given CPU 9000")
    path = tmp_path / "given.json"
    path.write_bytes(msgspec.json.encode(given))
    report = analyze_trace_file(_elsewhere(cpu_trace, tmp_path), str(path))
    assert report.environment.device_name == CPU_NOT_RECORDED
    assert report.summary.notes[0] == (f"Device: {CPU_NOT_RECORDED} (no device events and no device named in the "
                                       f"trace); roofs: --ceilings {path} (Given CPU 9000, {given.source})")
    assert report.ceilings.memory_bandwidth_bytes_per_s == cpu_ceilings.memory_bandwidth_bytes_per_s


@pytest.mark.skipif(not HTA_CPU_ONLY.exists(), reason="public trace corpus not present")
def test_a_public_cpu_only_trace_names_no_cpu_and_no_torch_version():
    top = json.loads(gzip.decompress(HTA_CPU_ONLY.read_bytes()))
    assert "host_name" not in top and top["deviceProperties"] == []
    report = analyze_trace_file(HTA_CPU_ONLY)
    assert report.environment.device_name == CPU_NOT_RECORDED and report.environment.torch_version == ""
    assert (report.environment.rank, report.environment.world_size, report.environment.backend) == (34, 300, "gloo")
    assert report.summary.notes[0].endswith("roofs: none") and cpu_name() not in report.summary.notes[0]


@pytest.mark.parametrize("name, generic", [
    ("localhost", True), ("localhost.localdomain", True), ("", True), (None, True), ("ubuntu", True),
    ("3f9a1c2b7d4e", True), ("3F9A1C2B7D4E", True), ("a" * 64, True),
    ("gpu-box-17", False), ("vm", False), ("3f9a1c2b7d4", False), ("ip-10-0-3-17", False)])
def test_generic_host_names(name, generic):
    from roofline.device.host import generic_host_name

    assert generic_host_name(name) is generic


def _as_if_here(monkeypatch, name, cpu_ceilings):
    """This machine named ``name``, with ``cpu_ceilings`` as its cached CPU ceilings."""
    import msgspec

    from roofline.device import cache, host

    monkeypatch.setattr(host, "host_name", lambda: name)
    measured = msgspec.structs.replace(cpu_ceilings, device_name="Here CPU 1")
    monkeypatch.setattr(cache, "cached_ceilings", lambda *a, **k: msgspec.structs.replace(measured))
    return measured


def test_a_cpu_trace_whose_real_host_name_is_this_machines_uses_its_ceilings(cpu_trace, tmp_path, monkeypatch,
                                                                             cpu_ceilings):
    measured = _as_if_here(monkeypatch, "gpu-box-17", cpu_ceilings)
    report = analyze_trace_file(_elsewhere(cpu_trace, tmp_path, "gpu-box-17"))
    assert report.ceilings.has_roofs() and report.ceilings.device_name == "Here CPU 1"
    assert report.ceilings.memory_bandwidth_bytes_per_s == measured.memory_bandwidth_bytes_per_s
    assert report.extra["device"]["roofs_of"] == (
        f"this machine's measured CPU ceilings (Here CPU 1, {measured.source}), because the trace's host name "
        "'gpu-box-17' is this machine's; the trace does not record which CPU ran it")


@pytest.mark.parametrize("generic", ["localhost", "3f9a1c2b7d4e"])
def test_a_cpu_trace_whose_generic_host_name_matches_this_machines_is_not_claimed(cpu_trace, tmp_path, monkeypatch,
                                                                                  cpu_ceilings, generic):
    """Both the trace and this machine say "localhost" (or one container id pattern): no evidence the trace ran
    here, so no roofs of this machine, and the note says why and how to use them anyway."""
    _as_if_here(monkeypatch, generic, cpu_ceilings)
    report = analyze_trace_file(_elsewhere(cpu_trace, tmp_path, generic))
    assert not report.ceilings.has_roofs() and report.ceilings.device_name == "CPU"
    assert report.summary.notes[0] == (f"Device: {CPU_NOT_RECORDED} (no device events and no device named in the "
                                       "trace); roofs: none")
    assert report.summary.notes[1].startswith(f"warning: no roofs: the trace's host name '{generic}' is a generic "
                                              "default (many machines and containers share it), so it is no "
                                              "evidence the trace was recorded on this machine")
    everything = json.dumps([report.summary.notes, report.extra["device"]])
    assert "Here CPU 1" not in everything and "is this machine's" not in everything
