"""Which compute roof the ops that compute on integers (int8/uint8 products: quantized convolutions and matmuls,
torch's _int_mm, ONNX's QLinear* and MatMulInteger) are judged against, said in the report's notes.

Their FLOPs count integer multiply-accumulates as 2 operations, as for floats. ``Ceilings.peak_for`` gives an
integer dtype its own roof when the ceilings have one (uint8 the int8 roof: ``Ceilings.own_roof``; a ceilings file
passed with --ceilings may add ``"int8"`` to peak_flops_per_s), else falls back to the float32 roof. Measured ceilings
have an int8 roof where torch._int_mm runs on the device (device/measure.py; where it does not, their method says
why), and the Hopper SXM datasheet entries carry the INT8 Tensor Core peak; without one the fallback applies and the
notes say so rather than an int8 roof being invented.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from roofline.count.onnx_quant import INTEGER_DTYPES
from roofline.report import Ceilings, OpRecord


def integer_roof_notes(ops: list[OpRecord], roofs_of: Callable[[int], tuple[str, Ceilings | None]],
                       kind_of: Callable[[int], str], total_s: float) -> tuple[list[str], dict[int, str]]:
    """Notes per (unit, integer dtype) for modelled ops with FLOPs, and each such op's roof ("int8", or
    "float32 (no int8 roof)"). ``roofs_of(i)``: op i's unit label and the ceilings it was judged against;
    ``kind_of(i)``: its op type, for the note."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, op in enumerate(ops):
        if op.modeled and op.flops > 0 and op.dtype in INTEGER_DTYPES:
            groups[(roofs_of(i)[0], op.dtype)].append(i)
    notes: list[str] = []
    roof_of: dict[int, str] = {}
    for (unit, dtype), members in sorted(groups.items()):
        c = roofs_of(members[0])[1]
        kinds = sorted({kind_of(i) for i in members})
        share = sum(ops[i].time_s for i in members) / total_s if total_s else 0.0
        what = (f"{len(members)} {unit.upper()} op(s) compute on {dtype} operands ({', '.join(kinds[:6])}"
                f"{', ...' if len(kinds) > 6 else ''}; {share:.1%} of op time; their FLOPs count integer "
                "multiply-accumulates as 2 operations, as for floats)")
        own = c.own_roof(dtype) if c is not None else None
        if c is None or not c.has_roofs():
            notes.append(f"{what}: no roofs for the {unit.upper()}")
        elif own:
            notes.append(f"{what}: judged against the {own} roof ({c.peak_flops_per_s[own] / 1e12:.3g} TOP/s)")
        else:
            fallback = "float32" if "float32" in c.peak_flops_per_s else "highest"
            notes.append(f"{what}: no {dtype} roof in the {unit.upper()}'s ceilings ({c.source}); judged against "
                         f"the {fallback} compute roof instead (peak_for's fallback), so a compute-bound verdict "
                         "or efficiency for them is relative to a float roof, not an integer one")
        for i in members:
            roof_of[i] = own or f"float32 (no {dtype} roof)"
    return notes, roof_of
