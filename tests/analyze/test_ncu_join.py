"""Nsight Compute counters joined to ops, on the H200 ncu fixtures (tests/data/ncu_h200, made by its ncu_ops.py).

The twelve streaming ops: the op's measured bytes are ncu's own figures and the modelled minimum is within 5% of
them; cross_entropy's softmax and the 16384^3 matmul move more than their minimum and say by how much. The HF Llama
forward's ncu kernels are joined to the Kineto trace of the same model (a separate process) by launch order."""

from __future__ import annotations

import json

import pytest
from ncu_cases import CASES, EXCESS, H200, NCU, report_of

from roofline.analyze.ncu_join import join_ncu, kernel_key
from roofline.capture.ncu_csv import parse_ncu_csv, read_ncu_csv
from roofline.report import Report


@pytest.mark.parametrize("name", sorted(CASES))
def test_streaming_ops_measure_what_ncu_measured_and_the_model_is_within_5_percent(name):
    ncu = read_ncu_csv(NCU / f"{name}.csv.gz")
    report = report_of(CASES[name], [k.name for k in ncu])
    summary = join_ncu(report, ncu)
    assert summary.kernels_joined == summary.kernels == len(ncu)
    measured = [op for op in report.ops if op.measured is not None]
    expected = sum(k.metrics["dram__bytes_read.sum"] + k.metrics["dram__bytes_write.sum"] for k in ncu)
    assert sum(op.measured.dram_bytes for op in measured) == expected
    assert summary.dram_bytes == expected
    manifest = json.loads((NCU / "MANIFEST.json").read_text())["ops"][name]
    assert expected == manifest["dram_read_bytes"] + manifest["dram_write_bytes"]
    for op in measured:
        assert 0.95 <= 1 / op.measured.excess_ratio <= 1.05, (op.name, op.bytes, op.measured.dram_bytes)


@pytest.mark.parametrize("name", sorted(EXCESS))
def test_ops_that_move_more_than_their_minimum_carry_the_excess_ratio(name):
    case, op_name, ratio = EXCESS[name]
    ncu = read_ncu_csv(NCU / f"{name}.csv.gz")
    report = report_of(case, [k.name for k in ncu])
    join_ncu(report, ncu)
    op = next(op for op in report.ops if op.name == op_name)
    assert op.measured.excess_ratio == pytest.approx(ratio, abs=0.01)
    assert op.measured.dram_intensity == pytest.approx(op.flops / op.measured.dram_bytes)
    row = next(g for g in report.ncu.by_op if g.name == op_name)
    assert row.excess_ratio == pytest.approx(ratio, abs=0.01)


def test_the_llama_forward_joins_its_kernels_to_the_kineto_trace_of_the_same_model():
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.report import Ceilings

    report = analyze_trace_file(H200 / "llama_tiny_fwd_fp16_b4_s512.json.gz")
    assert isinstance(report.ceilings, Ceilings)
    ncu = read_ncu_csv(NCU / "hf_llama_tiny_fwd_fp16_b4_s512.csv.gz")
    summary = join_ncu(report, ncu)
    assert summary.kernels == 343
    assert summary.joined_share >= 0.98
    assert summary.step_share >= 0.98
    # Every join pairs kernels of the same name, and every op of the step has its kernels measured.
    by_op = {}
    for k in report.kernels:
        if k.category == "kernel" and report.ops[k.op_index].step == report.ops[0].step:
            by_op[k.op_index] = by_op.get(k.op_index, 0) + 1
    for index, launched in by_op.items():
        measured = report.ops[index].measured
        assert measured is not None and measured.kernels == launched == measured.kernels_total
    # The README's figure: 1.21 GB of DRAM traffic in the whole forward, below the modelled minimum (L2 keeps small
    # outputs), and the report says why.
    assert summary.dram_bytes == pytest.approx(1.21e9, rel=0.01)
    assert summary.dram_bytes < summary.modelled_bytes
    assert any("L2" in note for note in summary.notes)
    assert sum(g.dram_bytes for g in summary.by_op) == pytest.approx(summary.dram_bytes)


def testreport_ofs_with_measured_traffic_round_trip_and_oldreport_ofs_load(tmp_path):
    ncu = read_ncu_csv(NCU / "mm.csv.gz")
    report = report_of(EXCESS["mm"][0], [k.name for k in ncu])
    join_ncu(report, ncu, source="mm.csv.gz")
    path = report.save(tmp_path / "r.json")
    again = Report.load(path)
    assert again.ops[0].measured == report.ops[0].measured
    assert again.ncu.source == "mm.csv.gz" and again.ncu.by_op[0].excess_ratio == report.ncu.by_op[0].excess_ratio
    old = json.loads(path.read_text())
    old.pop("ncu")
    for op in old["ops"]:
        op.pop("measured")
    assert Report.from_dict(old).ops[0].measured is None


def test_kernel_names_from_both_demanglers_share_a_key():
    assert kernel_key("void at::<unnamed>::distribution_elementwise_grid_stride_kernel<unsigned int, 4>(long)") == \
        "distribution_elementwise_grid_stride_kernel"
    assert kernel_key("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
                      "namespace)::OpaqueType<2>, unsigned int>(int)") == "CatArrayBatchedCopy"
    assert kernel_key("void unnamed>::cunn_SoftMaxForward<4, float>(T4 *, const T2 *, int)") == "cunn_SoftMaxForward"
    assert kernel_key("nvjet_sm90_hsh_128x64_64x8_1x2_h_bz_TNT") == "nvjet_sm90_hsh_128x64_64x8_1x2_h_bz_TNT"


def test_the_raw_page_layout_and_units_are_read():
    text = "\n".join([
        "==PROF== Connected to process 1",
        'some program output',
        '"ID","Process ID","Kernel Name","dram__bytes_read.sum","gpu__time_duration.sum","lts__t_sector_hit_rate.pct"',
        '"","","","Mbyte","usecond","%"',
        '"0","1","k1","1.5","2","50"',
        '"1","1","k2","1,024","3.5","n/a"',
    ])
    kernels = parse_ncu_csv(text)
    assert [k.name for k in kernels] == ["k1", "k2"]
    assert kernels[0].metrics == {"dram__bytes_read.sum": 1.5e6, "gpu__time_duration.sum": 2e-6,
                                  "lts__t_sector_hit_rate.pct": 50.0}
    assert kernels[1].metrics["dram__bytes_read.sum"] == 1024e6 and "lts__t_sector_hit_rate.pct" not in kernels[1].metrics


def test_output_without_a_table_is_one_clear_error(tmp_path):
    from roofline.errors import RooflineError

    with pytest.raises(RooflineError, match="no ncu CSV table"):
        parse_ncu_csv("==PROF== Disconnected from process 1\n==ERROR== ERR_NVGPUCTRPERM\n")
    with pytest.raises(RooflineError, match="ncu CSV file not found"):
        read_ncu_csv(tmp_path / "missing.csv")


def test_a_synthetic_join_pins_every_total_share_and_weighted_rate():
    """Two layers of one op each, two kernels per op matched (the second op launched a third ncu did not see); every
    figure computed by hand from the counters below."""
    from roofline.capture.ncu_csv import NcuKernel
    from roofline.report import KernelRecord, OpRecord

    ops = [OpRecord(name="aten::mm", module=f"model.layers.{i}.attn", flops=3e9, bytes=1e8, time_s=(i + 1) * 1e-3,
                    step=0) for i in range(2)]
    kernels = [KernelRecord(name=n, op_index=i) for i, names in enumerate((["kA", "kB"], ["kA", "kB", "kC"]))
               for n in names]
    kernels.insert(2, KernelRecord(name="Memcpy HtoD", category="memcpy"))
    kernels.append(KernelRecord(name="kD", op_index=None))

    def k(i, name, read, write, l2, hit, dur):
        return NcuKernel(i, name, {"dram__bytes_read.sum": read, "dram__bytes_write.sum": write,
                                   "lts__t_bytes.sum": l2, "lts__t_sector_hit_rate.pct": hit,
                                   "gpu__time_duration.sum": dur})

    ncu = [k(0, "kA", 4e7, 1e7, 1e8, 50.0, 1e-4), k(1, "kB", 2e7, 1e7, 3e8, 90.0, 1e-4),
           k(2, "kA", 3e7, 0.0, 2e8, 80.0, 1e-4), k(3, "kB", 1e7, 0.0, 2e8, 60.0, 1e-4)]
    report = Report(ops=ops, kernels=kernels)
    s = join_ncu(report, ncu)
    first, second = report.ops[0].measured, report.ops[1].measured
    assert (first.kernels, first.kernels_total, second.kernels, second.kernels_total) == (2, 2, 2, 3)
    assert first.dram_bytes == 8e7 and first.excess_ratio == pytest.approx(0.8)
    assert first.l2_bytes == 4e8 and first.l2_hit_rate == pytest.approx((50 * 1e8 + 90 * 3e8) / 4e8 / 100)
    assert first.l2_intensity == pytest.approx(7.5) and first.dram_intensity == pytest.approx(37.5)
    assert second.dram_bytes == 4e7 and second.l2_hit_rate == pytest.approx(0.7)
    # five op kernels in the step (memcpy and the op-less kernel left out), four matched
    assert (s.kernels, s.kernels_joined, s.joined_share) == (4, 4, 1.0)
    assert (s.step_kernels, s.step_kernels_measured, s.step_share) == (5, 4, pytest.approx(0.8))
    (group,) = s.by_module
    assert group.name == "model.layers.*.attn" and group.ops == 2 and group.time_s == pytest.approx(3e-3)
    assert (group.modelled_bytes, group.dram_bytes, group.l2_bytes) == (2e8, pytest.approx(1.2e8), pytest.approx(8e8))
    assert group.excess_ratio == pytest.approx(0.6) and group.l2_hit_rate == pytest.approx(0.75)
    assert s.notes == ["measured DRAM traffic (0.12 GB) is below the modelled minimum (0.2 GB): outputs that fit in "
                       "L2 are not written back while their kernel runs (ncu flushes caches before each kernel), so "
                       "DRAM writes undercount small outputs"]


def test_a_report_without_kernels_joins_nothing():
    from roofline.capture.ncu_csv import NcuKernel
    from roofline.report import OpRecord

    s = join_ncu(Report(ops=[OpRecord(name="aten::mm")]), [NcuKernel(0, "kA", {"dram__bytes_read.sum": 1.0})])
    assert (s.kernels, s.kernels_joined, s.joined_share, s.step_kernels, s.step_kernels_measured) == (1, 0, 0.0, 0, 0)
    assert s.notes[0].startswith("only 0 of 1 ncu kernels matched")
