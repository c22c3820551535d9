"""A report loaded back from its JSON is diagnosed like the one analysis handed over: the same calls, the same
findings (JSON keeps no shared argument lists; the doctor answers once per call)."""

from pathlib import Path

import msgspec
import pytest

from roofline.doctor import diagnose
from roofline.doctor.op_table import OpTable
from roofline.report import OpRecord, Report

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _live_report(name: str) -> Report:
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace
    from roofline.device import ceilings_for_device_name

    path = H200 / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"fixture {path.name} not present")
    trace = load_trace(path)
    return report_from_trace(trace, ceilings_for_device_name(trace.device_name))


@pytest.mark.parametrize("name", ["llama_tiny_train_fp16_b2_s256", "bad_syncs_fwd_fp32"])
def test_a_saved_report_has_the_live_reports_calls_and_findings(name):
    live = _live_report(name)
    loaded = Report.from_json(live.json_bytes())
    live_table, loaded_table = OpTable(live.ops), OpTable(loaded.ops)
    assert len(live_table.calls) < len(live.ops)
    assert loaded_table.call == live_table.call
    assert msgspec.json.encode(diagnose(loaded)) == msgspec.json.encode(diagnose(live))


def test_decoding_shares_equal_argument_lists_and_keeps_their_values():
    def op(name: str, shapes: list, strides: list, outputs: list | None = None) -> OpRecord:
        return OpRecord(name=name, input_shapes=shapes, input_dtypes=["float"] * len(shapes), input_strides=strides,
                        output_shapes=outputs or [])

    report = Report(kind="trace", ops=[op("aten::add", [[2, 3], [2, 3]], [[3, 1], [3, 1]]),
                                       op("aten::mul", [[2, 3], [2, 3]], [[3, 1], [3, 1]]),
                                       op("aten::add", [[2, 3], [2, 3]], [[1, 2], [3, 1]]),
                                       op("aten::add", [[2, 3], [2, 3]], [[3, 1], [3, 1]], outputs=[[2, 3]]),
                                       op("aten::add", [[2, 3], [2, 3]], [[3, 1], [3, 1]])])
    for loaded in (Report.from_json(report.json_bytes()), Report.from_dict(report.to_dict())):
        ops = loaded.ops
        assert [msgspec.to_builtins(o) for o in ops] == [msgspec.to_builtins(o) for o in report.ops]
        assert ops[1].input_shapes is ops[0].input_shapes and ops[1].input_strides is ops[0].input_strides
        assert ops[4].input_dtypes is ops[0].input_dtypes
        assert ops[2].input_strides is not ops[0].input_strides  # other strides: lists of their own
        assert ops[3].output_shapes is not ops[0].output_shapes
        assert OpTable(ops).call == OpTable(report.ops).call == [0, 1, 2, 3, 0]  # names, strides, outputs differ


def test_decoding_pauses_the_collector_and_restores_it(monkeypatch):
    import gc

    import roofline.report as report_module

    seen = []
    share = report_module.share_equal_argument_lists

    def share_noting_the_collector(ops):
        seen.append(gc.isenabled())
        share(ops)

    monkeypatch.setattr(report_module, "share_equal_argument_lists", share_noting_the_collector)
    report = Report(kind="trace", ops=[OpRecord(name="aten::add", input_shapes=[[2]])])
    assert Report.from_json(report.json_bytes()).ops[0].input_shapes == [[2]]
    assert seen == [False] and gc.isenabled()
