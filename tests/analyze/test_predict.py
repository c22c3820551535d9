"""The execution time estimator (issue 21): the learned efficiency table, shape projection, the two-stream
pipeline, `roofline predict` and its Python API. No timing is asserted: the figures are fed in."""

from __future__ import annotations

import json

import msgspec
import pytest

from roofline.analyze.efficiency import (EfficiencyTable, Entry, bucket, dram_roofline_time_s, learn_table, load_table,
                                         lookup, save_table)
from roofline.analyze.predict import predict
from roofline.analyze.project import Change, model_dtype, project_op
from roofline.analyze.whatif import predict_report
from roofline.cli import main
from roofline.errors import RooflineError
from roofline.report import Ceilings, HostCosts, OpRecord, Report, Timing
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # not `from conftest import`: tests/lab's conftest shadows it in a full run

H200_REPORT = REPO / "benchmarks/results/h200/llama_tiny_fp16_b4_s512/report.json.gz"

GPU = Ceilings(device="cuda", device_name="GPU X", memory_bandwidth_bytes_per_s=1e12,
               peak_flops_per_s={"float32": 1e13, "bfloat16": 1e14}, launch_overhead_s=5e-6)
CPU = Ceilings(device="cpu", device_name="CPU Y", memory_bandwidth_bytes_per_s=1e10,
               peak_flops_per_s={"float32": 1e11}, launch_overhead_s=2e-6)
HOST = HostCosts(device="cuda", dispatch_s={"mm": 10e-6, "mul": 4e-6, "item": 4e-6}, python_per_op_s=0.0,
                 module_call_s=0.0, backward_per_op_s=3e-6)


def _mm(m: int, k: int, n: int, time_s: float = 0.0, dtype: str = "float32", **kw) -> OpRecord:
    size = 2 if dtype == "bfloat16" else 4
    return OpRecord(name="aten::mm", dtype=dtype, flops=2.0 * m * k * n, bytes=float((m * k + k * n + m * n) * size),
                    time_s=time_s, input_shapes=[[m, k], [k, n]], input_dtypes=[dtype, dtype],
                    output_shapes=[[m, n]], output_dtypes=[dtype], **kw)


def test_the_learned_table_keeps_quartiles_of_roofline_time_over_measured_time_per_device_and_class():
    ops = [_mm(1024, 1024, 1024, time_s=t) for t in (0.5e-3, 1e-3, 2e-3)]  # roofline time 2.1e-4 s (compute)
    table = learn_table([("r", Report(ceilings=GPU, ops=ops))])
    rt = dram_roofline_time_s(ops[0], GPU)
    assert rt == pytest.approx(2 * 1024**3 / 1e13)
    entry = table.entries["GPU X"][f"mm|{bucket(rt)}|float32"]
    assert (entry.q50, entry.n) == (pytest.approx(rt / 1e-3), 3)
    assert entry.q25 < entry.q50 < entry.q75
    assert table.entries["cuda"]["matmul|" + bucket(rt)].n == 3
    # Another GPU falls back to the class's entries; a CPU finds none.
    other = Ceilings(device="cuda", device_name="GPU Z", memory_bandwidth_bytes_per_s=1e12, peak_flops_per_s={"float32": 1e13})
    assert lookup(table, other, ops[0], rt) == entry
    assert lookup(table, CPU, ops[0], rt) is None


def test_small_and_workless_ops_are_learned_as_times_not_efficiencies():
    tiny = OpRecord(name="aten::mul", dtype="float32", flops=64, bytes=768, time_s=3e-6)
    view = OpRecord(name="aten::view", dtype="float32", time_s=1e-6, count=2)
    table = learn_table([("r", Report(ceilings=GPU, ops=[tiny, view]))])
    assert table.entries["GPU X"]["mul|small|float32"].q50 == pytest.approx(3e-6)
    assert table.entries["GPU X"]["view"].q50 == pytest.approx(0.5e-6)  # per call


def test_the_shipped_table_has_h200_and_cpu_entries_and_a_user_table_overrides_it(tmp_path):
    shipped = load_table()
    assert "NVIDIA H200" in shipped.entries and "cpu" in shipped.entries
    key = next(iter(shipped.entries["NVIDIA H200"]))
    user = EfficiencyTable({"NVIDIA H200": {key: Entry(0.1, 0.2, 0.3, 1)}}, ["mine"])
    save_table(user, tmp_path / "t.json")
    merged = load_table(tmp_path / "t.json")
    assert merged.entries["NVIDIA H200"][key] == Entry(0.1, 0.2, 0.3, 1)
    assert len(merged.entries["NVIDIA H200"]) == len(shipped.entries["NVIDIA H200"])
    with pytest.raises(RooflineError):
        load_table(tmp_path / "missing.json")


def test_batch_scales_a_forward_matmul_rows_but_never_its_weight_even_when_a_side_equals_batch_times_seq():
    op = _mm(2048, 2048, 8192)  # rows = batch 4 x seq 512 = 2048, and the weight is 2048 x 8192
    new = project_op(op, Change(batch=(4, 16), seq=(512, 512)))
    assert new.input_shapes == [[8192, 2048], [2048, 8192]] and new.output_shapes == [[8192, 8192]]
    assert new.flops == pytest.approx(op.flops * 4)
    assert new.bytes == pytest.approx((8192 * 2048 + 2048 * 8192 + 8192 * 8192) * 4)


def test_seq_scales_attention_scores_both_ways_and_leaves_a_feature_dimension_equal_to_seq():
    scores = OpRecord(name="aten::bmm", dtype="float32", flops=2.0 * 16 * 512 * 512 * 64, bytes=1.0,
                      input_shapes=[[16, 512, 64], [16, 64, 512]], output_shapes=[[16, 512, 512]])
    new = project_op(scores, Change(batch=(2, 2), seq=(512, 2048)))
    assert new.output_shapes == [[16, 2048, 2048]] and new.flops == pytest.approx(scores.flops * 16)
    hidden = OpRecord(name="aten::mul", dtype="float32", flops=2 * 512 * 512, bytes=3 * 2 * 512 * 512 * 4.0,
                      input_shapes=[[2, 512, 512], [2, 512, 512]], output_shapes=[[2, 512, 512]])
    assert project_op(hidden, Change(seq=(512, 2048))).output_shapes == [[2, 2048, 512]]
    # batched products: batch x heads in the leading dimension
    assert project_op(scores, Change(batch=(2, 8))).input_shapes[0] == [64, 512, 64]


def test_a_dtype_change_halves_bytes_and_keeps_flops():
    op = _mm(256, 256, 256)
    new = project_op(op, Change(dtype=("float32", "bfloat16")))
    assert new.dtype == "bfloat16" and new.flops == op.flops and new.bytes == pytest.approx(op.bytes / 2)
    assert model_dtype([op, OpRecord(name="aten::arange", dtype="int64")]) == "float32"


def _ops(n: int, device_s: float, name: str = "aten::mul") -> list[OpRecord]:
    return [OpRecord(name=name, dtype="float32", flops=1.0, bytes=1e9, time_s=device_s) for _ in range(n)]


def test_a_gpu_step_is_bounded_by_the_slower_stream():
    host_bound = predict(Report(ceilings=GPU, ops=_ops(100, 1e-6)), table=EfficiencyTable(), host_costs=HOST)
    assert host_bound.bound == "host"
    assert host_bound.step_time_s == pytest.approx(100 * 4e-6 + 1e-6)  # the last op runs after it is issued
    device_bound = predict(Report(ceilings=GPU, ops=_ops(100, 1e-4)), table=EfficiencyTable(), host_costs=HOST)
    assert device_bound.bound == "device"
    assert device_bound.step_time_s == pytest.approx(4e-6 + 100 * 1e-4)
    assert device_bound.dominant[0].name == "aten::mul" and device_bound.dominant[0].calls == 100


def test_a_sync_makes_the_host_wait_for_the_device():
    long_kernel = _ops(1, 1e-3)
    after = _ops(50, 1e-6)
    sync = [OpRecord(name="aten::item", dtype="float32", time_s=0.0)]
    without = predict(Report(ceilings=GPU, ops=long_kernel + after), table=EfficiencyTable(), host_costs=HOST)
    with_sync = predict(Report(ceilings=GPU, ops=long_kernel + sync + after), table=EfficiencyTable(), host_costs=HOST)
    assert without.step_time_s == pytest.approx(4e-6 + 1e-3 + 50 * 1e-6)  # host issues the rest meanwhile
    assert with_sync.syncs == 1
    assert with_sync.step_time_s == pytest.approx(4e-6 + 1e-3 + 50 * 4e-6 + 1e-6)


def test_on_a_cpu_host_and_device_time_add_up():
    host = HostCosts(device="cpu", dispatch_s={"mul": 1e-6}, python_per_op_s=2e-6, module_call_s=1e-6)
    ops = [OpRecord(name="aten::mul", module="a.b", dtype="float32", flops=1.0, bytes=1e9, time_s=1e-5)
           for _ in range(10)]
    p = predict(Report(ceilings=CPU, ops=ops), table=EfficiencyTable(), host_costs=host)
    assert p.bound == "serial"
    # each op: its measured time (aten dispatch inside) + Python; two modules entered once
    assert p.step_time_s == pytest.approx(10 * (1e-5 + 2e-6) + 2 * 1e-6)


def test_as_measured_the_device_time_is_the_ops_measured_time_and_the_true_step_is_shown():
    report = Report(ceilings=GPU, ops=_ops(10, 2e-5), step_time=Timing(median_s=1e-3))
    p = predict_report(report, host_costs=HOST)
    assert p.device_time_s == pytest.approx(2e-4) and p.measured_step_time_s == 1e-3 and p.scenario == {}


def test_a_projection_keeps_a_big_ops_measured_efficiency_and_reports_its_scenario():
    op = _mm(4096, 4096, 4096, time_s=0.0)
    op.time_s = dram_roofline_time_s(op, GPU) / 0.8  # measured at 80% of its roof
    report = Report(ceilings=GPU, ops=[op], extra={"batch": 8, "seq": 512})
    entry = Entry(0.8, 0.8, 0.8, 10)
    table = EfficiencyTable({"GPU X": {"matmul|1e-02": entry, "matmul|1e-01": entry}})
    p = predict_report(report, batch=32, table=table, host_costs=HOST)
    assert p.scenario == {"batch": "8 -> 32"}
    assert p.device_time_s == pytest.approx(4 * op.time_s, rel=1e-6)


def test_predict_report_refuses_what_it_cannot_know():
    report = Report(ceilings=GPU, ops=_ops(1, 1e-6))
    with pytest.raises(RooflineError, match="--from-batch") as refused:
        predict_report(report, batch=8, host_costs=HOST)
    assert "from_batch=N in predict_report" in str(refused.value)  # the API's own spelling, for an API user
    with pytest.raises(RooflineError, match="cannot be told apart"):
        predict_report(report, batch=8, from_batch=64, from_seq=64, host_costs=HOST)
    with pytest.raises(RooflineError, match="no roofs"):
        predict_report(Report(ops=_ops(1, 1e-6)), host_costs=HOST)
    with pytest.raises(RooflineError, match="no ops"):
        predict_report(Report(ceilings=GPU), host_costs=HOST)


def test_a_report_with_a_prediction_round_trips_and_an_older_one_still_loads():
    report = Report(ceilings=GPU, ops=_ops(3, 1e-5))
    report.prediction = predict(report, table=EfficiencyTable(), host_costs=HOST)
    again = Report.from_json(report.to_json().encode())
    assert again.prediction == report.prediction
    data = json.loads(report.to_json())
    del data["prediction"]
    assert Report.from_dict(data).prediction is None


def test_cli_predict_projects_a_committed_h200_report_and_writes_json(tmp_path, capsys):
    out = tmp_path / "p.json"
    code = main(["predict", str(H200_REPORT), "--batch", "16", "--from-batch", "4", "--from-seq", "512",
                 "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "batch 4 -> 16" in text and "dominant ops" in text
    p = msgspec.json.decode(out.read_bytes())
    assert p["step_time_s"] > 0 and p["low_s"] <= p["step_time_s"] <= p["high_s"] and p["ops"] == 598
    saved = tmp_path / "with_prediction.json"
    assert main(["predict", str(H200_REPORT), "--device", "NVIDIA A100-SXM4-80GB", "--save", str(saved)]) == 0
    assert "A100" in capsys.readouterr().out
    assert "A100" in Report.load(saved).prediction.scenario["device"]


def test_cli_predict_learn_writes_a_user_table(tmp_path, capsys):
    table = tmp_path / "table.json"
    assert main(["predict", "--learn", str(H200_REPORT), "--table", str(table)]) == 0
    learned = msgspec.json.decode(table.read_bytes(), type=EfficiencyTable)
    assert learned.sources == [str(H200_REPORT)] and learned.entries["NVIDIA H200"]
    assert main(["predict", str(H200_REPORT), "--table", str(table)]) == 0
