"""benchmarks/ete.py's two host-model columns: each workload's ratio per host model, the per-model counts within
the bands, and the table that shows them side by side (a synthetic result; the harness itself needs real runs)."""

from __future__ import annotations

import pytest

from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def ete():
    return load_benchmark("ete")


def _row(name: str, dispatch: float, profiled: float, true: float) -> dict:
    return {"workload": name, "bound": "host", "predicted_s": dispatch, "low_s": dispatch, "high_s": dispatch,
            "old_estimator_s": true / 2, "profiled_step_s": 2 * true, "ops": 10, "runtime_calls": 30,
            "dispatch_predicted_s": dispatch, "dispatch_host_s": dispatch, "profiled_predicted_s": profiled,
            "profiled_host_s": profiled, "measured_rounds_s": [1.3 * true, 1.2 * true, 0.9 * true]}


def test_both_host_models_are_scored_and_shown_side_by_side(ete):
    rows = [_row("a", 0.9e-3, 1.0e-3, 1e-3), _row("b", 0.6e-3, 1.1e-3, 1e-3), _row("c", 1.0e-3, 1.5e-3, 1e-3)]
    for row in rows:
        ete._fill(row, [1e-3, 1e-3, 1e-3])
    assert [(r["dispatch_ratio"], r["profiled_ratio"]) for r in rows] == [
        (pytest.approx(0.9), pytest.approx(1.0)), (pytest.approx(0.6), pytest.approx(1.1)),
        (pytest.approx(1.0), pytest.approx(1.5))]
    summary = ete._summary(rows, [])
    assert summary["host_models"]["dispatch"]["within_15pct"] == 2
    assert summary["host_models"]["profiled"]["within_15pct"] == 2
    assert summary["host_models"]["profiled"]["mean_abs_error"] == pytest.approx((0 + 0.1 + 0.5) / 3)
    result = {"device": "CPU Z", "torch": "2.x", "repeats": 3, "iters": 2, "host_model": "dispatch",
              "host_costs": {"profiler_per_top_level_s": 2e-6, "profiler_per_nested_event_s": 1e-6,
                             "profiler_per_runtime_call_s": 2.5e-6, "profiler_fit_residual": 0.1,
                             "profiler_references": {"tiny add": [1e-6, 4.5e-6, 1, 1, 1, 0],
                                                     "conv2d": [2e-5, 4e-5, 5, 6, 1, 0],
                                                     "views": [1e-6, 1e-6, 3, 0, 3, 0]},
                             "profiler_left_out": {"views": "the profiler did not slow it down"},
                             "profiler_fit_problem": None},
              "workloads": rows, "whatif": [], "summary": summary, "anchor": "Habitat"}
    md = ete.render_md(result)
    assert "| b | host | 0.6 (0.6-0.6) | 1 (±0) | 0.60 | 2 | 0.6 | 1.1 | 0.60 | 1.10 | — | 1.20 | 10 | 30 | 0.50 |" in md
    assert "Host model dispatch: 2 of 3 workloads within 0.85-1.15; mean |error| 16.7%" in md
    assert "Host model profiled: 2 of 3 workloads within 0.85-1.15; mean |error| 20.0%" in md
    assert "2.00 us per top-level event, 1.00 us per nested aten event, 2.50 us per CUDA runtime call" in md
    assert "residual 10%, condition number 0). The profiled host model uses it" in md
    # tiny add: 2 + 2.5 = 4.5 us fitted against 3.5 added; conv2d: 2 + 4 x 1 + 6 x 2.5 = 21 against 20
    assert "| tiny add | 1.00 | 4.50 | +3.50 | 1 | 0 | 1 | 0.00 | 1.29 |" in md
    assert "| conv2d | 20.00 | 40.00 | +20.00 | 1 | 4 | 6 | 0.00 | 1.05 |" in md
    assert "| views | 1.00 | 1.00 | +0.00 | 3 | 0 | 0 | 0.00 | left out: the profiler did not slow it down |" in md
    result["host_costs"]["profiler_fit_problem"] = "its profiler-cost fit misses ... by 40% RMS, over 25%"
    assert "Profiled host model not used: its profiler-cost fit misses" in ete.render_md(result)


def _p(step: float, bound: str = "host"):
    from types import SimpleNamespace

    return SimpleNamespace(step_time_s=step, low_s=step * 0.9, high_s=step * 1.2, host_time_s=step / 2,
                           device_time_s=step / 4, bound=bound, method="m")


def test_a_prediction_is_the_median_over_the_rounds_with_their_spread(ete):
    rounds = [{"models": {m: _p(s, b) for m in ete.MODELS}}
              for s, b in ((1e-3, "host"), (3e-3, "device"), (2e-3, "device"))]
    out = ete._over_rounds(rounds)
    assert out["predicted_s"] == pytest.approx(2e-3) and out["profiled_rounds_s"] == [1e-3, 3e-3, 2e-3]
    assert out["low_s"] == pytest.approx(1.8e-3) and out["high_s"] == pytest.approx(2.4e-3)
    assert out["host_s"] == pytest.approx(1e-3) and out["bound"] == "device"
    assert out["round_spread_s"] == pytest.approx(1e-3)   # quartiles 1.5 and 2.5 ms
    row = {"workload": "a", "rounds": 3, **out, "ops": 1, "runtime_calls": 0, "old_estimator_s": None,
           "profiled_step_s": None}
    ete._fill(row, [2e-3, 2e-3, 2e-3])
    assert row["ratio"] == pytest.approx(1.0)
    assert ete._round_spread(row) == "; ±1"


def test_short_steps_are_timed_over_more_steps_up_to_ten_times(ete):
    assert ete._steps_for(0.15e-3, 20) == 200          # 0.05 / 0.15 ms = 333, capped at 10 x 20
    assert ete._steps_for(1e-3, 20) == 50
    assert ete._steps_for(30e-3, 20) == 20


def test_reports_and_traces_are_packed_in_tarballs_within_the_trace_budget(ete, tmp_path):
    import tarfile

    out, staging = tmp_path / "ete", tmp_path / "ete" / "stage"
    (staging / "traces").mkdir(parents=True)
    for name in ("ete.json", "ete.md"):
        (out / name).write_text("{}")
    (staging / "a.round1.report.json").write_text("{}")
    (staging / "b.round2.report.json").write_text("{}")
    (staging / "traces" / "small.json.gz").write_bytes(b"x" * 10)
    (staging / "traces" / "big.json.gz").write_bytes(b"x" * 1000)
    ete._pack(staging, out, trace_budget=100)
    assert not staging.exists()
    assert sorted(p.name for p in out.iterdir()) == ["ete.json", "ete.md", "reports.part01.tar.xz", "traces.tgz"]
    with tarfile.open(out / "reports.part01.tar.xz") as tar:
        assert sorted(tar.getnames()) == ["reports/a.round1.report.json", "reports/b.round2.report.json"]
    with tarfile.open(out / "traces.tgz") as tar:
        assert sorted(tar.getnames()) == ["traces/NOT_KEPT.txt", "traces/small.json.gz"]
        assert tar.extractfile("traces/NOT_KEPT.txt").read() == b"over the size budget: big.json.gz\n"
    with tarfile.open(str(out) + ".tgz") as tar:
        assert sorted(tar.getnames()) == ["ete/ete.json", "ete/ete.md"]


def _incompressible(path, n: int) -> None:
    import random

    path.write_bytes(random.Random(path.name).randbytes(n))


def test_reports_roll_over_to_parts_under_the_limit_and_out_keeps_at_most_seven_files(ete, tmp_path):
    import tarfile

    from ete_common import extract_reports

    out, staging = tmp_path / "ete", tmp_path / "ete" / "stage"
    (staging / "traces").mkdir(parents=True)
    for name in ("ete.json", "ete.md"):
        (out / name).write_text("{}")
    for i in range(5):  # 5 x 30 kB that do not compress, 70 kB a part: 3 parts of 2, 2 and 1
        _incompressible(staging / f"c{i}.round1.report.json", 30_000)
    (staging / "traces" / "t.json.gz").write_bytes(b"x" * 10)
    ete._pack(staging, out, trace_budget=100, part_limit=70_000)
    parts = sorted(out.glob("reports.part*.tar.xz"))
    assert [p.name for p in parts] == [f"reports.part0{i}.tar.xz" for i in (1, 2, 3)]
    assert all(p.stat().st_size < 70_000 for p in parts) and (out / "traces.tgz").exists()
    names = sorted(p.name for p in extract_reports(out, tmp_path / "x").iterdir())
    assert names == [f"c{i}.round1.report.json" for i in range(5)]

    # 9 such reports need 5 parts: traces.tgz gives up its place, then the last ones are left out, named in a note
    (out / "traces.tgz").unlink()
    for p in parts:
        p.unlink()
    (staging / "traces").mkdir(parents=True)
    for i in range(9):
        _incompressible(staging / f"d{i}.round1.report.json", 30_000)
    ete._pack(staging, out, trace_budget=100, part_limit=70_000)
    assert len(list(out.iterdir())) == 2 + 4 and not (out / "traces.tgz").exists()
    with tarfile.open(out / "reports.part04.tar.xz") as tar:
        assert tar.extractfile("reports/NOT_KEPT.txt").read() == b"over the parts' size budget: d8.round1.report.json\n"


def test_each_round_records_the_hosts_load_for_the_next_diagnosis(ete):
    load = ete._host_load(2, "end", 12.34)
    assert (load["round"], load["phase"], load["at_s"]) == (2, "end", 12.3)
    assert load["loadavg"] is None or (len(load["loadavg"]) == 3 and min(load["loadavg"]) >= 0)


def test_each_whatifs_source_and_target_are_timed_back_to_back_their_order_alternating(ete):
    keys = ["w", "source:a", "whatif:a", "source:b", "whatif:b"]
    assert ete._timing_order(keys, 0) == keys
    assert ete._timing_order(keys, 1) == ["w", "whatif:a", "source:a", "whatif:b", "source:b"]
    assert ete._timing_order(keys, 2) == keys


def test_a_whatifs_change_is_predicted_against_the_paired_timings(ete):
    pair = {"pair": "p", "source_true_repeats_s": [10e-3, 20e-3, 10e-3, 12e-3],
            "true_repeats_s": [5e-3, 10e-3, 6e-3, 6e-3]}
    for m in ete.MODELS:
        pair[f"{m}_rounds_s"] = [6e-3, 4e-3]
        pair[f"{m}_source_rounds_s"] = [10e-3, 10e-3]
    ete._fill_change(pair)
    # paired 0.5, 0.5, 0.6, 0.5: median 0.5; predicted 0.6 and 0.4 per round: median 0.5
    assert pair["measured_change"] == pytest.approx(0.5) and pair["paired_ratios"][2] == pytest.approx(0.6)
    assert pair["predicted_change"] == pytest.approx(0.5) and pair["change_ratio"] == pytest.approx(1.0)
    summary = ete._summary([], [dict(pair, ratio=1.3)])
    assert (summary["change_within"], summary["whatif_within"]) == (1, 0)


def test_the_aftereffect_stage_times_before_and_after_a_profile_and_with_gc_off(ete, monkeypatch):
    import gc
    from types import SimpleNamespace

    calls: list[str] = []
    level = {"now": 2e-3}

    def fake_profile(live, device, ceilings, iters, warmup, trace):
        calls.append("profile")
        level["now"] = 3e-3           # the host slower after a profiler session

    def fake_time(step, device, iters):
        calls.append("gc off" if not gc.isenabled() else "time")
        return SimpleNamespace(median_s=level["now"] * (0.5 if not gc.isenabled() else 1.0))

    monkeypatch.setattr(ete, "profile", fake_profile)
    monkeypatch.setattr(ete, "time_steps", fake_time)
    live = SimpleNamespace(case=SimpleNamespace(name="c"), step=lambda: None)
    out = ete.profiler_aftereffect(live, "cpu", None, 2, 20, 0, lambda: 1.0)
    assert gc.isenabled()
    assert calls[:5] == ["time"] * 5 and calls[5] == "profile" and calls[11:16] == ["gc off"] * 5
    # cycle 1 before at 2 ms, everything after at 3 ms; GC off halves it: 1.5 ms
    assert out["cycles"][0]["before_s"] == [2e-3] * 5 and out["cycles"][1]["before_s"] == [3e-3] * 5
    # per cycle 1.5 (2 -> 3 ms) and 1.0: median 1.25; GC off against the timings just before it: 0.5 each
    assert out["after_over_before"] == pytest.approx(1.25) and out["median_before_s"] == pytest.approx(2.5e-3)
    assert out["gc_off_over_after"] == pytest.approx(0.5)
    text = ete.render_md({"device": "X", "torch": "t", "repeats": 1, "iters": 1, "workloads": [], "whatif": [],
                          "summary": ete._summary([], []), "anchor": "A", "profiler_aftereffect": out})
    assert "after/before x1.25, GC off/after x0.50; per cycle, before -> after ms: 2 -> 3, 3 -> 3)" in text


def test_the_aftereffect_ratio_is_per_cycle_so_it_can_disagree_with_the_pooled_medians(ete, monkeypatch):
    # the 17:35 run's line: 10.5 ms before, 9.63 after pooled, yet after/before x1.19. Not an inverted ratio: with
    # the level moving between cycles, two cycles slower after (8 -> 9.6, 10.5 -> 12.5) and one much faster
    # (13 -> 9.63) give pooled medians 10.5 and 9.63 and per-cycle ratios 1.20, 1.19, 0.74: median 1.19
    from types import SimpleNamespace

    levels = iter([8e-3] * 5 + [9.6e-3] * 10 + [10.5e-3] * 5 + [12.5e-3] * 10 + [13e-3] * 5 + [9.63e-3] * 10)
    monkeypatch.setattr(ete, "profile", lambda *a: None)
    monkeypatch.setattr(ete, "time_steps", lambda step, device, iters: SimpleNamespace(median_s=next(levels)))
    live = SimpleNamespace(case=SimpleNamespace(name="c"), step=lambda: None)
    out = ete.profiler_aftereffect(live, "cpu", None, 3, 20, 0, lambda: 1.0)
    assert (out["median_before_s"], out["median_after_s"]) == (10.5e-3, 9.63e-3)
    assert [round(c["after_over_before"], 2) for c in out["cycles"]] == [1.2, 1.19, 0.74]
    assert out["after_over_before"] == pytest.approx(12.5 / 10.5)
