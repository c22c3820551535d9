"""Traces from devices and torch versions we did not write ourselves (tests/data/devtraces, see its README): each
gives a report with the right device, steps and times."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analyze.trace_file import analyze_trace_file
from roofline.capture.kineto import load_trace
from roofline.device.identify import identify_trace

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
