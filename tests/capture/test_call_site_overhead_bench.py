"""benchmarks/call_site_overhead.py's CPU path at tiny sizes: its switch really turns roofline's call-site ranges
on and off, so the two figures it compares are what it says they are."""

from __future__ import annotations

from benchmark_scripts import load_benchmark

from roofline.capture.kineto import CALL_SITE_PREFIX


def test_the_ranges_are_in_the_trace_only_when_on(tmp_path, one_thread):
    bench = load_benchmark("call_site_overhead")
    script = bench.write_script(tmp_path)
    on = bench.one_run(script, ranges=True, active=2, device="cpu")
    off = bench.one_run(script, ranges=False, active=2, device="cpu")
    assert len(on.profiled_step_s) == len(off.profiled_step_s) == 2
    assert on.trace_path.read_text().count(CALL_SITE_PREFIX) >= 2  # one per profiled forward at least
    assert CALL_SITE_PREFIX not in off.trace_path.read_text()
    (cost,) = bench.range_cost_s(repeats=1, calls=20)
    assert 0 < cost < 1e-3
