"""Integer-product ops (int8 MACs counted as FLOPs) are judged against their dtype's roof when the ceilings have
one, else against float32's, and the notes say which."""

from __future__ import annotations

from roofline.analyze.integer_roofs import integer_roof_notes
from roofline.report import Ceilings, OpRecord

CPU = Ceilings(device="cpu", device_name="cpu", memory_bandwidth_bytes_per_s=50e9,
               peak_flops_per_s={"float32": 1e12})


def _ops():
    return [OpRecord(name="aten::_int_mm", dtype="int8", flops=2e9, bytes=1e6, time_s=3e-3),
            OpRecord(name="aten::mm", dtype="float32", flops=2e9, bytes=1e6, time_s=1e-3),
            OpRecord(name="aten::add", dtype="int8", flops=0.0, bytes=1e6, time_s=1e-3)]


def test_without_an_int8_roof_the_note_says_float32s_roof_judged_them():
    notes, roofs = integer_roof_notes(_ops(), lambda i: ("cpu", CPU), lambda i: _ops()[i].name, 5e-3)
    assert roofs == {0: "float32 (no int8 roof)"}  # the mm is float, the add has no FLOPs
    assert len(notes) == 1 and notes[0].startswith("1 CPU op(s) compute on int8 operands (aten::_int_mm; 60.0% of")
    assert "no int8 roof in the CPU's ceilings (measured); judged against the float32 compute roof" in notes[0]
    assert CPU.peak_for("int8") == 1e12  # the fallback the note describes


def test_with_an_int8_roof_it_is_used_and_named():
    c = Ceilings(device="npu", memory_bandwidth_bytes_per_s=77e9, peak_flops_per_s={"float16": 10e12, "int8": 40e12},
                 source="file")
    notes, roofs = integer_roof_notes(_ops(), lambda i: ("npu", c), lambda i: _ops()[i].name, 5e-3)
    assert roofs == {0: "int8"} and c.peak_for("int8") == 40e12
    assert notes[0].endswith("judged against the int8 roof (40 TOP/s)")


def test_uint8_products_take_the_int8_roof():
    """QOperator models compute uint8 activations times int8 weights: an int8 roof in the ceilings judges them."""
    c = Ceilings(device="npu", memory_bandwidth_bytes_per_s=77e9, peak_flops_per_s={"float16": 10e12, "int8": 40e12})
    ops = [OpRecord(name="onnx::QLinearConv", dtype="uint8", flops=1e9, bytes=1e6, time_s=1e-3)]
    notes, roofs = integer_roof_notes(ops, lambda i: ("npu", c), lambda i: "QLinearConv", 1e-3)
    assert (c.peak_for("uint8"), c.own_roof("uint8"), roofs) == (40e12, "int8", {0: "int8"})
    assert notes[0].endswith("judged against the int8 roof (40 TOP/s)")
    assert c.own_roof("int16") is None and c.peak_for("int16") == 40e12  # no float32 roof: the highest of all
