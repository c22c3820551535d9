"""A report read from a trace file says where the trace was recorded (its own metadata), never where it is read:
not this machine's host, Python or torch; what the trace does not record is named as unknown."""

from __future__ import annotations

import json
import platform

from roofline.analyze.trace_file import analyze_trace_file
from roofline.render.console import render_report

from test_trace_file import _trace


def test_the_environment_of_a_trace_comes_from_its_metadata(tmp_path):
    data = _trace({"name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0}, host="node-17")
    data["distributedInfo"] = {"backend": "nccl", "rank": 3, "world_size": 8}
    data["baseTimeNanoseconds"] = 1_790_857_026_000_000_000
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    env = analyze_trace_file(str(path)).environment
    assert (env.hostname, env.rank, env.world_size, env.backend) == ("node-17", 3, 8, "nccl")
    assert env.device_name == "NVIDIA H100 80GB HBM3"
    assert env.timestamp == "2026-10-01T12:17:06+00:00"
    assert env.torch_version == env.python_version == env.platform == env.command_line == ""
    assert env.unknown == ["torch_version", "python_version", "command_line", "platform"]


def test_a_trace_without_metadata_says_what_is_unknown_not_this_machine(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_trace(None, kernels=False)))
    report = analyze_trace_file(str(path))
    env = report.environment
    assert env.hostname != platform.node() and env.python_version != platform.python_version()
    assert {"torch_version", "python_version", "hostname", "timestamp", "platform"} <= set(env.unknown)
    assert render_report(report).splitlines()[0].endswith("; torch version not recorded in the trace")


def test_the_recording_time_is_read_from_any_positive_epoch_and_nothing_else():
    from roofline.analyze.environment import _recorded_at

    assert _recorded_at(1) == "1970-01-01T00:00:00+00:00"  # 1 ns after the epoch
    assert _recorded_at(1_790_857_026.5e9) == "2026-10-01T12:17:06+00:00"
    assert [_recorded_at(v) for v in (0, -1_000_000_000, True, "1790857026000000000", None)] == [""] * 5


def test_the_recording_time_is_the_base_plus_the_first_event_or_unix_microseconds_without_a_base():
    """Kineto's baseTimeNanoseconds is an epoch, not the trace's start: every trace of torch 2.4 to 2.14 recorded on
    2026-12-02 carries 1790857026000000000 (2026-10-01); its events count microseconds from it."""
    from roofline.analyze.environment import _recorded_at

    assert _recorded_at(1_790_857_026_000_000_000, 5_328_522_671_995.994) == "2026-12-02T04:25:48+00:00"
    assert _recorded_at(None, 1_796_185_541_542_754.0) == "2026-12-02T04:25:41+00:00"  # torch 2.1: no base
    assert _recorded_at(None, 5_328_522_671_995.0) == ""  # no base and not Unix time: unknown, not 1970
    assert _recorded_at(None, None) == ""
