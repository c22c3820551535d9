"""An option that the target or the mode makes meaningless is refused with one line and exit 2 before any work,
never accepted and ignored without a word (doctor of a saved report once took --ceilings and --device and judged
nothing by them; profile --model took --whole, and --whole took --run-to-end, which it always does; lab --study
took the staged lab's options; trace took --warmup, which only an ONNX Runtime profile reads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.cli import main

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
TRACE = str(H200 / "bad_syncs_fwd_fp32.json.gz")


@pytest.fixture
def saved_report(tmp_path) -> str:
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema_version": 1, "workload": "w", "ops": [{"name": "aten::mm", "time_s": 1e-3}]}))
    return str(path)


@pytest.mark.parametrize("argv, said", [
    (["doctor", "REPORT", "--ceilings", "c.json"], "--ceilings does not apply to REPORT: a saved report keeps the roofs"),
    (["doctor", "REPORT", "--device", "cuda"], "--device does not apply to REPORT: a report or a trace names"),
    (["doctor", "REPORT", "--partial"], "--partial does not apply to REPORT: --partial reads a trace cut short"),
    (["doctor", TRACE, "--device", "cpu"], f"--device does not apply to {TRACE}: a report or a trace names"),
    (["doctor", "--model", "llama-tiny", "--partial"], "--partial does not apply to --model llama-tiny"),
    (["profile", "--model", "llama-tiny", "--whole", "--run-to-end"],
     "--whole, --run-to-end apply only to a script, not to --model llama-tiny"),
    (["profile", "--whole", "--active", "5", "--timed", "0", "-o", "OUT", "SCRIPT"],
     "--timed, --active set the step schedule, which --whole has none of"),
    (["profile", "--whole", "--run-to-end", "-o", "OUT", "SCRIPT"], "--run-to-end adds nothing to --whole"),
    (["lab", "--study", "attention", "--no-doctor", "-o", "OUT"],
     "--no-doctor applies to the staged lab, not to --study attention"),
    (["lab", "--study", "fp8", "--decode-only", "--no-tuned", "-o", "OUT"],
     "--decode-only, --no-tuned apply to the staged lab, not to --study fp8"),
    (["lab", "--no-graphs", "-o", "OUT"], "--no-graphs applies only to --study batching"),
    (["lab", "--study", "attention", "--data", "OUT", "-o", "OUT"], "--data does not apply to --study attention"),
    (["trace", TRACE, "--warmup", "3", "-o", "OUT"], "--warmup applies only with --onnx"),
])
def test_an_option_that_would_be_ignored_is_refused(argv, said, saved_report, tmp_path, capsys, monkeypatch):
    for command in ("doctor", "profile"):
        monkeypatch.setattr(f"roofline.cli.{command}.run_ceilings", lambda *a, **k: pytest.fail("measured first"))
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('ran')\n")
    argv = [{"REPORT": saved_report, "OUT": str(tmp_path / "out"), "SCRIPT": str(script)}.get(a, a) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error: " + said.replace("REPORT", saved_report)) and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_the_options_that_do_apply_still_run(saved_report, capsys):
    assert main(["doctor", saved_report]) == 0
    assert main(["doctor", TRACE, "--findings", "1"]) == 0
    assert "Doctor: 1 finding(s)" in capsys.readouterr().out


@pytest.mark.parametrize("command, after, shown", [("doctor", ["-o", "{tmp}/out"], "-o {tmp}/out"),
                                                    ("profile", ["--active=2", "-x"], "--active=2")])
def test_roofline_options_after_a_script_are_named_as_the_scripts(tmp_path, capsys, command, after, shown):
    """`roofline doctor train.py -o out` passed -o out to the script (everything after it is the script's, as
    with `python train.py -o out`): the doctor wrote no files and said nothing of it."""
    script = tmp_path / "train.py"
    script.write_text("import sys\nprint('argv', sys.argv[1:])\n")
    after = [word.format(tmp=tmp_path) for word in after]
    main([command, str(script), *after])
    out, err = capsys.readouterr()
    assert f"argv {after!r}" in out
    assert (f"roofline: note: '{shown.format(tmp=tmp_path)}' comes after train.py, so it is passed to the script "
            "(as `python train.py") in err
    assert not (tmp_path / "out").exists()


def test_a_scripts_own_words_after_it_bring_no_note(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("import sys\nprint('argv', sys.argv[1:])\n")
    main(["doctor", str(script), "--lr", "0.1", "data.txt"])
    assert "roofline: note" not in capsys.readouterr().err
