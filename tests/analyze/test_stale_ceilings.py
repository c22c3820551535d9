"""The stale-ceilings note: compute time clearly above a measured compute roof says the roofs were measured low."""

from __future__ import annotations

from roofline.analyze.stale import stale_ceilings_note
from roofline.device.cache import remeasure_command
from roofline.report import Ceilings, OpRecord


def _ceilings(source: str = "measured") -> Ceilings:
    return Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=10e9,
                    peak_flops_per_s={"float32": 100e9}, launch_overhead_s=2e-6, source=source,
                    measured_at="2026-12-01T00:00:00+00:00", threads=2, load_average=[3.5, 2.0, 1.0])


def _op(bound: str, efficiency: float, time_s: float) -> OpRecord:
    return OpRecord(name="aten::mm", bound=bound, efficiency=efficiency, time_s=time_s, modeled=True)


def test_compute_time_clearly_above_the_roof_names_the_evidence_and_the_command():
    ops = [_op("compute", 1.6, 0.02), _op("compute", 0.7, 0.9), _op("memory", 0.5, 0.08)]
    note = stale_ceilings_note(ops, _ceilings())
    assert note is not None
    assert "1 op(s), 2.0% of op time" in note and "160%" in note and "load average 3.5" in note
    assert note.splitlines()[-1].strip() == "roofline ceilings --device cpu --remeasure"


def test_sound_roofs_and_cache_hits_give_no_note():
    assert stale_ceilings_note([_op("compute", 1.05, 1.0), _op("memory", 0.8, 1.0)], _ceilings()) is None
    # memory-bound ops above the DRAM roof are mostly cache hits: a small share of time is not evidence
    assert stale_ceilings_note([_op("memory", 3.0, 0.1), _op("memory", 0.5, 0.9)], _ceilings()) is None
    assert stale_ceilings_note([_op("memory", 3.0, 0.5), _op("memory", 0.5, 0.5)], _ceilings()) is not None


def test_datasheet_ceilings_are_never_called_stale():
    assert stale_ceilings_note([_op("compute", 2.0, 1.0)], _ceilings("datasheet")) is None


def test_quick_ceilings_are_remeasured_quick():
    assert remeasure_command(_ceilings("measured (quick)")).endswith("--remeasure --quick")


def test_thresholds_at_their_boundaries():
    """Clearly above is > 1.15x; compute: >= 1% of op time or >= 5 ops; memory: >= 25% of op time."""
    c = _ceilings()
    assert stale_ceilings_note([_op("compute", 1.15, 0.5), _op("memory", 0.5, 0.5)], c) is None
    assert stale_ceilings_note([_op("compute", 1.16, 0.01), _op("memory", 0.5, 0.99)], c) is not None
    assert stale_ceilings_note([_op("compute", 1.16, 0.0099), _op("memory", 0.5, 0.9901)], c) is None
    four = [_op("compute", 1.2, 1e-4) for _ in range(4)] + [_op("memory", 0.5, 1.0)]
    assert stale_ceilings_note(four, c) is None
    five = four + [_op("compute", 1.2, 1e-4)]
    assert "5 op(s)" in stale_ceilings_note(five, c)
    assert "6 op(s)" in stale_ceilings_note(five + [_op("compute", 1.2, 1e-4)], c)
    assert stale_ceilings_note([_op("memory", 1.2, 0.25), _op("memory", 0.5, 0.75)], c) is not None
    assert stale_ceilings_note([_op("memory", 1.2, 0.249), _op("memory", 0.5, 0.751)], c) is None
    unmodeled = OpRecord(name="aten::x", bound="compute", efficiency=9.0, time_s=1.0, modeled=False)
    assert stale_ceilings_note([unmodeled], c) is None
    assert stale_ceilings_note([_op("compute", 2.0, 0.0)], c) is None  # no time at all


def test_the_note_names_both_roofs_the_worst_op_and_what_it_knows_of_the_measurement():
    ops = [_op("compute", 1.5, 0.1), _op("compute", 2.5, 0.1), _op("memory", 1.3, 0.3), _op("memory", 0.4, 0.5)]
    note = stale_ceilings_note(ops, _ceilings())
    first = note.splitlines()[0]
    assert first == ("ceilings look stale: 3 op(s), 50.0% of op time, run up to 250% of the FLOP/s and bandwidth roof "
                     "measured at 2026-12-01T00:00:00+00:00 (load average 3.5, 2 threads). Re-measure on a quiet "
                     "machine:")
    bare = Ceilings(device="cpu", memory_bandwidth_bytes_per_s=10e9, peak_flops_per_s={"float32": 100e9},
                    source="measured")
    note = stale_ceilings_note([_op("memory", 1.3, 1.0)], bare)
    assert note.splitlines()[0] == ("ceilings look stale: 1 op(s), 100.0% of op time, run up to 130% of the "
                                    "bandwidth roof measured. Re-measure on a quiet machine:")
    no_threads = Ceilings(device="cpu", source="measured", load_average=[0.25])
    assert "measured (load average 0.25). Re-measure" in stale_ceilings_note([_op("compute", 2.0, 1.0)], no_threads)
