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
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
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


def _tiny_plan():
    return runner.LabPlan(2, 8, 4, 1, 0, False, [1, 2], 8, 4,
                          config_overrides={"dim": 64, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_dim": 128,
                                            "vocab_size": 1024})


def test_a_stopped_lab_keeps_the_sections_it_finished(tmp_path, monkeypatch, wikitext_dir, cpu_ceilings):
    from roofline.lab import bench

    monkeypatch.setattr(runner, "make_plan", lambda model, device, quick: _tiny_plan())
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)

    def interrupted_sweep(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "batch_sweep", interrupted_sweep)
    out = tmp_path / "lab"
    assert main(["lab", "--quick", "--device", "cpu", "--no-doctor", "--data", str(wikitext_dir), "-o", str(out)]) == 130
    data = json.loads((out / "lab.json").read_text())
    assert data["pending"] == ["batch-size sweep"] and data["peak"] is not None and data["sweep"] is None
    assert len(data["stages"]) == 6
    markdown = (out / "lab.md").read_text()
    assert "**Partial result**: the run stopped before batch-size sweep." in markdown
    assert "memory 10 GB/s; float32 100 GFLOP/s" in markdown


def test_checkpoints_name_what_is_still_to_come_and_the_end_has_nothing_pending(wikitext_dir, cpu_ceilings,
                                                                                 monkeypatch):
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
    seen = []
    options = runner.LabOptions(device="cpu", data=str(wikitext_dir), doctor=False, plan=_tiny_plan())
    result = runner.run_lab(options, checkpoint=lambda partial: seen.append(list(partial.pending)))
    assert seen == [["batch-1 peak decode", "batch-size sweep"], ["batch-size sweep"], []]
    assert result.pending == [] and result.peak is not None and result.sweep is not None


def test_a_budget_that_is_not_positive_is_one_clear_error(tmp_path, wikitext_dir, capsys):
    assert main(["lab", "--quick", "--device", "cpu", "--budget", "0", "--data", str(wikitext_dir),
                 "-o", str(tmp_path / "o")]) == 2
    assert "--budget must be a positive number" in capsys.readouterr().err


def test_a_views_run_writes_three_tables_crediting_each_fix_against_the_compiled_model(tmp_path, monkeypatch,
                                                                                       wikitext_dir, cpu_ceilings):
    import dataclasses

    import torch

    from roofline.lab import bench
    from roofline.lab.generate import decode_one_token, recompute_one_token

    # Dynamo's eager backend stands in for Inductor (whose C++ build takes minutes here): the runner's whole
    # compiled path, its recompiles and its rendering, as the GPU runs them.
    monkeypatch.setattr(bench, "compile_decode", lambda device: torch.compile(
        decode_one_token, backend="eager", fullgraph=True))
    monkeypatch.setattr(runner, "compile_recompute", lambda: torch.compile(
        recompute_one_token, backend="eager", dynamic=True, fullgraph=True))
    plan = dataclasses.replace(_tiny_plan(), ablation=True, min_prompt_words=6, evidence_tokens=2, reps=3,
                               peak=False, sweep=False, compile=True, workload="a test workload")
    monkeypatch.setattr(runner, "make_plan", lambda model, device, quick: plan)
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, quick, progress: cpu_ceilings)
    out = tmp_path / "lab"
    assert main(["lab", "--quick", "--device", "cpu", "--no-doctor", "--data", str(wikitext_dir), "-o", str(out)]) == 0
    markdown = (out / "lab.md").read_text()
    for heading in ("## Cumulative", "## Isolated", "## Leave-one-out", "## Evidence per configuration",
                    "## Workload", "a test workload", "interquartile range"):
        assert heading in markdown
    assert "Leave-one-out puts each bug back into the fully fixed, compiled model" in markdown
    loo = markdown.split("## Leave-one-out")[1].split("Why, from the evidence")[0]
    assert loo.count("| fixed, compiled |") == 6 and "fixed, compiled, without KV cache" in loo
    assert "Inductor kernels, no CUDA graph" in markdown and "dynamic shapes" in markdown
    data = json.loads((out / "lab.json").read_text())
    assert len(data["ablation"]["configs"]) == 16 and data["stages"][-1]["title"].endswith("torch.compile decode step")
    assert data["peak"] is None and data["sweep"] is None and data["pending"] == []
    assert (out / "views.png").read_bytes()[:4] == b"\x89PNG"
