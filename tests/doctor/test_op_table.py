"""The doctor's shared op table (doctor/op_table.py) holds, column by column, what each op itself says."""

import math
from pathlib import Path

import numpy as np
import pytest

from roofline.count.families import op_kind
from roofline.doctor.evidence import memoised, op_table, ordered_ops, run_positions, step_spans
from roofline.doctor.op_table import KernelTable, call_key
from roofline.report import KernelRecord, OpRecord, Report

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _made_up_report() -> Report:
    """Shared argument lists (as trace reports hold them), a step-less op, ops out of run order, an op with
    recorded outputs and ops without a start time."""
    shapes, dtypes, strides = [[4, 8], [8, 8]], ["c10::Half", "c10::Half"], [[8, 1], [1, 8]]
    ops = [
        OpRecord(name="aten::mm", input_shapes=shapes, input_dtypes=dtypes, input_strides=strides, index=5, step=1,
                 start_s=0.5, cpu_time_s=0.1, time_s=0.3, kernels=["gemm"]),
        OpRecord(name="aten::add_", input_shapes=[[4, 8]], input_dtypes=["float"], index=2, step=0, start_s=0.2,
                 time_s=0.05),
        OpRecord(name="aten::mm", input_shapes=shapes, input_dtypes=dtypes, input_strides=strides, index=1, step=0,
                 start_s=-0.1, cpu_time_s=0.4, time_s=0.2, kernels=["gemm"]),
        OpRecord(name="aten::view", index=0, step=None, start_s=None),
        OpRecord(name="aten::mm", input_shapes=shapes, input_dtypes=dtypes, input_strides=strides, index=6, step=1,
                 start_s=0.4, time_s=0.1, output_shapes=[[4, 8]], output_dtypes=["c10::Half"]),
        OpRecord(name="aten::add_", input_shapes=[[4, 8]], input_dtypes=["float"], index=3, step=0, start_s=None),
    ]
    return Report(kind="trace", ops=ops, kernels=[KernelRecord(name="gemm", start_s=0.3, dur_s=0.01),
                                                  KernelRecord(name="copy", start_s=0.1, dur_s=0.0)])


def _reference_run_order(ops: list[OpRecord]) -> list[int]:
    indexed = any(op.index for op in ops)
    return sorted(range(len(ops)), key=lambda p: (ops[p].step if ops[p].step is not None else -1,
                                                   ops[p].index if indexed else p))


def _pin_columns(report: Report) -> None:
    ops = report.ops
    with memoised():
        table = op_table(report)
        assert table.ops is ops
        assert table.kind == [op_kind(op.name) for op in ops]
        assert table.step == [op.step for op in ops]
        # Two ops share a call exactly when their call keys are equal; each call's representative is its first op.
        keys = [call_key(op) for op in ops]
        for i in range(len(ops)):
            for j in range(len(ops)):
                assert (table.call[i] == table.call[j]) == (keys[i] == keys[j])
            assert table.calls[table.call[i]] is ops[keys.index(keys[i])]
        assert table.call_array.tolist() == table.call
        assert list(table.run) == _reference_run_order(ops)
        assert [op.index for op in ordered_ops(report)] == [ops[i].index for i in _reference_run_order(ops)]
        assert list(run_positions(report)) == list(table.run)
        start = table.floats("start_s")
        assert [None if math.isnan(v) else v for v in start.tolist()] == [op.start_s for op in ops]
        assert table.floats("time_s").tolist() == [op.time_s for op in ops]
        assert table.has_kernels().tolist() == [bool(op.kernels) for op in ops]
        mm_calls = [kind in ("mm", "addmm", "bmm") for kind in table.call_kind]
        assert table.positions(mm_calls) == [i for i, op in enumerate(ops) if op_kind(op.name) in ("mm", "addmm",
                                                                                                  "bmm")]
        assert table.run_of(mm_calls) == [i for i in _reference_run_order(ops)
                                          if op_kind(ops[i].name) in ("mm", "addmm", "bmm")]
        assert table.positions([False] * len(table.calls)) == []
        views = [kind == "view" for kind in table.call_kind]
        run = _reference_run_order(ops)
        assert list(table.run_skipping(views)) == [
            i for j, i in enumerate(run)
            if not views[table.call[i]] or j == 0 or ops[i].step != ops[run[j - 1]].step]
        _pin_step_spans(report)


def _pin_step_spans(report: Report) -> None:
    """step_spans against the per-op loop it replaced (profiled_time_s's and input-idle's)."""
    by_step: dict[int | None, list[int]] = {}
    for pos, op in enumerate(report.ops):
        if op.start_s is not None:
            by_step.setdefault(op.step, []).append(pos)
    spans = step_spans(report)
    assert spans.steps == list(by_step)
    for g, (step, positions) in enumerate(by_step.items()):
        ops = [report.ops[p] for p in positions]
        assert spans.positions[spans.bounds[g]:spans.bounds[g + 1]].tolist() == positions
        assert spans.earliest_start[g] == min(op.start_s for op in ops)
        assert spans.latest_end[g] == max(op.start_s + max(op.cpu_time_s, op.time_s) for op in ops)


def test_columns_match_each_op_on_a_made_up_report():
    report = _made_up_report()
    _pin_columns(report)
    with memoised():
        table = op_table(report)
        # mm (shared lists, no outputs), add_ (twice, its own equal lists: one call by value), view, mm with outputs
        assert len(table.calls) == 4
        assert not table.in_run_order
        spans = step_spans(report)
        assert spans.steps == [1, 0]
        assert spans.earliest_start.tolist() == [0.4, -0.1]
        assert spans.latest_end.tolist() == [0.8, 0.30000000000000004]


def test_columns_match_each_op_on_an_h200_trace():
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace
    from roofline.device import ceilings_for_device_name

    path = H200 / "bad_syncs_fwd_fp32.json.gz"
    if not path.exists():
        pytest.skip(f"fixture {path.name} not present")
    trace = load_trace(path)
    report = report_from_trace(trace, ceilings_for_device_name(trace.device_name))
    assert len(report.ops) > 50
    _pin_columns(report)
    with memoised():
        assert len(op_table(report).calls) < len(report.ops)  # identical calls share their argument lists


def test_kernel_table_and_an_empty_report():
    report = _made_up_report()
    kernels = KernelTable(report.kernels)
    assert kernels.start_s.tolist() == [0.3, 0.1] and kernels.dur_s.tolist() == [0.01, 0.0]
    empty = Report(kind="trace")
    with memoised():
        table = op_table(empty)
        assert table.calls == [] and list(table.run) == [] and table.positions([]) == []
        assert step_spans(empty).steps == []
    assert KernelTable([]).start_s.shape == (0,)
    assert np.isnan(op_table(_made_up_report()).floats("start_s")[3])


def test_a_float_column_reads_none_as_nan_and_numbers_as_they_are():
    from roofline.doctor.op_table import float_column

    kernels = [KernelRecord("a", 1.5, 2e-6), KernelRecord("b", 3.0, 1e-6)]
    assert float_column(kernels, "start_s").tolist() == [1.5, 3.0]
    ops = [OpRecord(name="aten::mm", start_s=0.25), OpRecord(name="aten::add", start_s=None)]
    column = float_column(ops, "start_s")
    assert column[0] == 0.25 and math.isnan(column[1]) and float_column([], "start_s").shape == (0,)


def test_float_columns_read_together_are_each_field_read_alone():
    from roofline.doctor.op_table import float_column, float_columns

    ops = [OpRecord(name="aten::mm", start_s=0.25, cpu_time_s=1e-5, time_s=2e-5),
           OpRecord(name="aten::add", start_s=0.5, cpu_time_s=3e-6, time_s=0.0)]
    fields = ["start_s", "cpu_time_s", "time_s"]
    together = float_columns(ops, fields)
    assert [c.tolist() for c in together] == [float_column(ops, f).tolist() for f in fields]
    assert all(c.flags.c_contiguous for c in together)
    ops[1].start_s = None  # a None anywhere: every column read again, NaN in its own
    start, cpu, time = float_columns(ops, fields)
    assert math.isnan(start[1]) and cpu.tolist() == [1e-5, 3e-6] and time.tolist() == [2e-5, 0.0]
    assert [c.shape for c in float_columns([], fields)] == [(0,)] * 3
    table = op_table(Report(kind="trace", ops=ops))
    assert table.float_fields("time_s", "start_s")[0] is table.floats("time_s")
