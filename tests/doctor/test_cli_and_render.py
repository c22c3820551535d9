import json
from pathlib import Path

from doctor_cases import ceilings, linear, op, report
from roofline.cli import main
from roofline.doctor import diagnose
from roofline.render.findings import render_findings

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _saved_report(tmp_path: Path) -> Path:
    ops = [linear([1, t, 64], time=t * 1e-5) for t in range(5, 12)]
    ops += [op("aten::_local_scalar_dense", [([1], "int64")], source="gen.py:41", time=1e-6,
               kernels=["Memcpy DtoH (Device -> Pageable)"]) for _ in range(7)]
    return report(ops, ceil=ceilings(device="cuda", device_name="test gpu")).save(tmp_path / "in.json")


def test_render_lists_findings_ranked_with_saving_method_and_fix():
    r = report([linear([1, t, 64], time=t * 1e-5) for t in range(5, 12)])
    text = render_findings(diagnose(r), total_time_s=r.summary.total_time_s)
    assert "recomputation" in text and "estimated saving:" in text and "fix:" in text
    assert render_findings([]) == "Doctor: no findings.\n"


def test_doctor_on_a_saved_report_prints_and_writes_findings(tmp_path, capsys):
    path = _saved_report(tmp_path)
    assert main(["doctor", str(path), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "recomputation" in out and "host-device-sync" in out
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    rules = [f["rule"] for f in written["findings"]]
    assert "recomputation" in rules
    savings = [f["estimated_savings_s"] for f in written["findings"]]
    assert savings == sorted(savings, reverse=True)


def test_doctor_rule_selection_and_fail_on(tmp_path, capsys):
    path = _saved_report(tmp_path)
    assert main(["doctor", str(path), "--rules", "host-device-sync"]) == 0
    out = capsys.readouterr().out
    assert "host-device-sync" in out and "recomputation" not in out
    assert main(["doctor", str(path), "--fail-on", "warning"]) == 1


def test_doctor_on_a_trace_file(capsys):
    trace = H200 / "bad_syncs_fwd_fp32.json.gz"
    assert main(["doctor", str(trace), "--top", "4"]) == 0
    out = capsys.readouterr().out
    # the trace's two planted bugs: an .item() and a .cpu().to('cuda') each iteration (the copy's blocking upload
    # is the host-to-device-copy rule's; the .item() and the .cpu() stay host-device syncs)
    assert "host-device-sync" in out and "host-to-device-copy" in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["doctor"]) == 2
    assert main(["doctor", str(tmp_path / "missing.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    assert main(["doctor", str(bad)]) == 2
    assert main(["doctor", str(_saved_report(tmp_path)), "--rules", "nope"]) == 2
    err = capsys.readouterr().err
    assert all(line.startswith("roofline: error:") for line in err.strip().splitlines())


def test_doctor_on_a_saved_report_diagnoses_with_the_collector_paused_and_restores_it(tmp_path, capsys, monkeypatch):
    import gc

    import roofline.doctor as doctor_package
    from roofline import quickexit

    path = _saved_report(tmp_path)
    seen = []

    def diagnose_noting_the_collector(report, rules=None):
        seen.append(gc.isenabled())
        return diagnose(report, rules=rules)

    monkeypatch.setattr(doctor_package, "diagnose", diagnose_noting_the_collector)
    assert gc.isenabled() and not quickexit.armed()
    assert main(["doctor", str(path)]) == 0
    assert seen == [False]
    assert gc.isenabled()  # main() is not the console command: the collector is back on
    assert "host-device-sync" in capsys.readouterr().out
