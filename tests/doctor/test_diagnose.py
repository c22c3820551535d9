import pytest

from doctor_cases import ceilings, linear, op, report
from roofline.doctor import RULES, diagnose
from roofline.doctor.registry import Rule
from roofline.errors import RooflineError
from roofline.report import Finding, Report


def _buggy():
    ops = [linear([1, t, 64], time=t * 1e-5) for t in range(5, 13)]
    for _ in range(8):
        ops.append(op("aten::_local_scalar_dense", [([1], "int64")], source="gen.py:41", time=1e-6,
                      kernels=["Memcpy DtoH (Device -> Pageable)"]))
    return report(ops, ceil=ceilings(device="cuda", device_name="test gpu"))


def test_findings_are_ranked_by_estimated_savings():
    findings = diagnose(_buggy())
    savings = [f.estimated_savings_s for f in findings]
    assert savings == sorted(savings, reverse=True)
    assert {"recomputation", "host-device-sync"} <= {f.rule for f in findings}
    for f in findings:
        assert f.savings_method and f.fix and f.title and f.category


def test_diagnose_is_pure():
    r = _buggy()
    before = r.to_json()
    diagnose(r)
    assert r.to_json() == before


def test_rule_selection_and_unknown_rules():
    assert {f.rule for f in diagnose(_buggy(), rules=["host-device-sync"])} == {"host-device-sync"}
    with pytest.raises(RooflineError, match="unknown doctor rule"):
        diagnose(_buggy(), rules=["no-such-rule"])


def test_a_failing_rule_becomes_an_info_finding_not_a_crash(monkeypatch):
    def broken(report: Report) -> list[Finding]:
        raise ValueError("odd evidence")

    monkeypatch.setitem(RULES, "broken", Rule("broken", broken, "always fails"))
    findings = diagnose(_buggy(), rules=["broken", "host-device-sync"])
    broken_findings = [f for f in findings if f.rule == "broken"]
    assert broken_findings[0].severity == "info" and "odd evidence" in broken_findings[0].evidence["error"]
    assert any(f.rule == "host-device-sync" for f in findings)


def test_an_empty_report_has_no_findings():
    assert diagnose(Report()) == []


def test_findings_survive_a_json_round_trip():
    r = _buggy()
    r.findings = diagnose(r)
    again = Report.from_dict(__import__("json").loads(r.to_json()))
    assert [f.rule for f in again.findings] == [f.rule for f in r.findings]
