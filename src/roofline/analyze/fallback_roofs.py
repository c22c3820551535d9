"""Floating-point ops judged against another dtype's compute roof, said in the report's notes.

``Ceilings.peak_for`` falls back to the float32 roof for a dtype the ceilings have no roof of their own for: float64
(and complex128, its real part) against datasheet roofs and ceilings measured before float64 was (measured ones carry
it since 2026-12-03). A float64 model
then read as compute-bound "at 45% of peak" against float32's peak, where a CPU's float64 vector rate is about half
its float32 one and a consumer GPU's a 64th: the notes say which ops that is and how much of the time (integer
dtypes: analyze/integer_roofs.py)."""

from __future__ import annotations

from collections import defaultdict

from roofline.report import Ceilings, OpRecord

_FLOATING = ("float", "bfloat", "complex")


def fallback_roof_notes(ops: list[OpRecord], ceilings: Ceilings, total_s: float) -> list[str]:
    """One note per floating-point dtype whose compute-bound ops had no compute roof of their own (a memory-bound
    op's verdict and efficiency come from the memory roof: a trace's float64 scalars, log2 and clamp_ of a loss
    scale, are no reason for a note)."""
    if not ceilings.has_roofs():
        return []
    groups: dict[str, list[OpRecord]] = defaultdict(list)
    own: dict[str, bool] = {}
    for op in ops:
        dtype = op.dtype
        if not (op.bound == "compute" and op.flops > 0 and dtype.startswith(_FLOATING)):
            continue
        has = own.get(dtype)
        if has is None:
            has = own[dtype] = ceilings.own_roof(dtype) is not None
        if not has:
            groups[dtype].append(op)
    fallback = "float32" if "float32" in ceilings.peak_flops_per_s else "highest"
    notes = []
    for dtype, members in sorted(groups.items()):
        time_s = sum(op.time_s for op in members)
        share = f"{time_s / total_s:.1%} of op time" if total_s else "no op time"
        kinds = sorted({op.name.rsplit("::", 1)[-1] for op in members})
        listed = ", ".join(kinds[:6]) + (", ..." if len(kinds) > 6 else "")
        notes.append(f"{len(members)} compute-bound op(s) in {dtype} ({listed}; {share}): the ceilings "
                     f"({ceilings.source}) have no {dtype} compute roof, so they are judged against the {fallback} one "
                     f"({ceilings.peak_for(dtype) / 1e12:.3g} TFLOP/s); a float64 peak is about half a CPU's float32 "
                     "one and a small fraction of most GPUs', so their compute-bound verdicts and efficiencies are "
                     f"relative to {fallback}'s roof (a ceilings file passed with --ceilings may add \"{dtype}\" to "
                     "peak_flops_per_s)")
    return notes
