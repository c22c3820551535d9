"""A first run on a CPU, as the README shows it: a built-in workload's report records its batch and seq, so
`roofline predict --batch N` works on it without --from-batch; `profile --help` names the files it writes; and a
run the harness made on the CPU carries no "no GPU kernels ... or the device's activity was not recorded" note."""

from __future__ import annotations

import json
from types import SimpleNamespace

from roofline.cli import build_parser, main
from roofline.cli.profile import _subparser
from roofline.device import save_ceilings
from roofline.models import get_workload
from roofline.models.workloads import recorded_sizes
from roofline.report import Ceilings, HostCosts


def _ceilings(tmp_path):
    given = Ceilings(device="cpu", device_name="given cpu", memory_bandwidth_bytes_per_s=12.5e9,
                     peak_flops_per_s={"float32": 321e9}, launch_overhead_s=3e-6, source="measured")
    return str(save_ceilings(given, tmp_path / "ceilings.json"))


def test_workloads_know_their_sizes():
    assert recorded_sizes(get_workload("llama-tiny", batch=1, seq=8)) == {"batch": 1, "seq": 8}
    assert recorded_sizes(get_workload("bad-syncs", batch=4)) == {"batch": 4}
    assert recorded_sizes(SimpleNamespace(name="file.py:factory")) == {}


def test_predict_projects_an_analyze_report_by_batch(tmp_path, capsys, monkeypatch):
    # this machine's host costs are measured once per cache (seconds); the projection needs only some
    costs = HostCosts(device="cpu", device_name="given cpu", dispatch_s={"*": 5e-6}, backward_per_op_s=5e-6,
                      method="given")
    monkeypatch.setattr("roofline.analyze.whatif.host_costs_for", lambda ceilings: costs)
    out = tmp_path / "out"
    assert main(["analyze", "--model", "llama-tiny", "--batch", "1", "--seq", "8", "--device", "cpu", "--iters", "1",
                 "--warmup", "0", "--no-html", "--ceilings", _ceilings(tmp_path), "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert (report["extra"]["batch"], report["extra"]["seq"]) == (1, 8)
    assert not [n for n in report["summary"]["notes"] if n.startswith("no GPU kernels")]
    capsys.readouterr()
    assert main(["predict", str(out / "report.json"), "--batch", "2", "--json", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text())["scenario"] == {"batch": "1 -> 2"}


def test_profile_of_a_builtin_model_records_its_batch_and_writes_what_its_help_says(tmp_path):
    out = tmp_path / "out"
    assert main(["profile", "--model", "bad-syncs", "--batch", "4", "--device", "cpu", "--wait", "1", "--warmup", "0",
                 "--active", "1", "--timed", "1", "--ceilings", _ceilings(tmp_path), "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["extra"]["batch"] == 4
    assert not [n for n in report["summary"]["notes"] if n.startswith("no GPU kernels")]
    written = sorted(p.name for p in out.iterdir())
    assert written == ["report.html", "report.json", "roofline.png", "trace.json.gz"]
    description = " ".join(_subparser(build_parser(), "profile").description.split())
    assert all(name in description for name in written), description


def test_profile_refuses_a_size_before_measuring_anything(monkeypatch, capsys):
    """On a fresh machine the ceilings take about 20 s: a --seq that bad-syncs has no dimension for is told first."""
    def measured(*args, **kwargs):
        raise AssertionError("the ceilings were measured before the size was checked")

    monkeypatch.setattr("roofline.cli.profile.run_ceilings", measured)
    assert main(["profile", "--model", "bad-syncs", "--seq", "4", "--device", "cpu", "-o", "unused"]) == 2
    assert "--seq does not apply to bad-syncs" in capsys.readouterr().err
