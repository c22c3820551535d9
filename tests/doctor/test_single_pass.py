"""A CPU trace without steps whose time is mostly in ops that ran once with their shapes is one pass: the warm-up
rule says its first calls' set-up cannot be told from their steady state (torch 2.4.1's conv trace: a first
convolution of 60.8 ms, 82% of it, had no finding); a trace whose ops repeat does not get it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED

from roofline.analyze.trace_file import analyze_trace_file
from roofline.analyze.warmup import single_pass_entry
from roofline.doctor import diagnose

DEVTRACES = Path(__file__).resolve().parents[1] / "data" / "devtraces"


def test_one_forward_of_a_cnn_is_named_as_one_pass():
    report = analyze_trace_file(DEVTRACES / "torch2.4.1_cpu_conv_shapes_stack.json")
    (finding,) = [f for f in diagnose(report, rules=["warm-up"]) if "ran once" in f.title]
    assert finding.severity == "info" and finding.estimated_savings_s == 0
    assert "aten::convolution" in finding.title and "82%" in finding.title
    assert "warmup=1" in finding.fix


def test_repeated_ops_are_no_single_pass():
    times = np.array([5.0, 1.0, 1.0, 1.0, 0.5])
    assert single_pass_entry(times, np.array([0, 0, 0, 0, 1]), list("abcde")) is None
    found = single_pass_entry(times, np.array([0, 1, 2, 3, 3]), list("abcde"))
    assert found["rows"] == 3 and found["slowest"] == "a" and found["share"] == (7.0 / 8.5)


def test_a_gpu_trace_gets_no_single_pass_record():
    """Its ops' time is their kernels', which hold no host set-up: HTA's one-iteration multi-stream trace."""
    path = (SHARED / "fixtures" / "public-traces" / "hta" / "critical_path" / "cuda_event_sync_multi_stream"
            / "event_sync_trace.json.gz")
    if not path.exists():
        pytest.skip("../shared is not here")
    report = analyze_trace_file(path)
    assert report.extra["trace"]["has_gpu"] and not report.extra["trace"]["steps"]
    assert not [e for e in report.extra.get("warmup", []) if e.get("kind") == "single-pass"]
