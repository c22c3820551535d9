import json

import pytest

from roofline.cli import main
from roofline.lab import runner

FIVE = {"host-device-sync", "recomputation", "layout-copy", "precision-island", "unbatched-loop"}


@pytest.mark.slow
def test_roofline_lab_quick_writes_table_chart_and_doctor_reports(tmp_path, monkeypatch, wikitext_dir, cpu_ceilings):
    tiny = runner.LabPlan(3, 10, 5, 1, 0, False, [1, 4], 8, 4,
                          config_overrides={"dim": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_dim": 128,
                                            "vocab_size": 2048})
    monkeypatch.setattr(runner, "make_plan", lambda model, device, quick: tiny)
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, quick, progress: cpu_ceilings)
    out = tmp_path / "lab"
    assert main(["lab", "--quick", "--device", "cpu", "--data", str(wikitext_dir), "-o", str(out)]) == 0
    data = json.loads((out / "lab.json").read_text())
    assert [s["title"] for s in data["stages"]][0] == "naive" and len(data["stages"]) == 6
    assert all(a["identical"] for a in data["agreement"])
    assert FIVE <= {f["rule"] for f in data["doctor"]["naive"]}
    assert not FIVE & {f["rule"] for f in data["doctor"]["fixed"]}
    assert data["sweep"]["crossing_batch"] >= 1 and len(data["sweep"]["points"]) == 2
    assert (out / "speedup.png").read_bytes()[:4] == b"\x89PNG"
    assert "| naive |" in (out / "lab.md").read_text()
    assert (out / "doctor" / "naive" / "report.json").is_file()


def test_lab_without_data_is_one_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ROOFLINE_DATA", raising=False)
    assert main(["lab", "--quick", "--device", "cpu", "--data", str(tmp_path), "-o", str(tmp_path / "o")]) == 2
    assert "WikiText-2" in capsys.readouterr().err
