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
