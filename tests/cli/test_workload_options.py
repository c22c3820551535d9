"""--batch/--seq/--dtype/--backward build a built-in --model. `profile SCRIPT` and `doctor SCRIPT|report|trace`
used to accept them and ignore them without a word (`profile --batch 4 train.py` profiled the script's own batch);
now they are refused before anything runs, and --help says what they apply to."""

from __future__ import annotations

import pytest

from roofline.cli import build_parser, main
from roofline.cli.profile import _subparser
from roofline.report import OpRecord, Report


def _script(tmp_path):
    ran = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(f"open({str(ran)!r}, 'w').close()\n")
    return script, ran


@pytest.mark.parametrize("flags", [["--batch", "4"], ["--seq", "128"], ["--dtype", "fp16"], ["--backward"]])
def test_profile_of_a_script_refuses_a_workload_option_before_running_it(tmp_path, capsys, flags):
    script, ran = _script(tmp_path)
    assert main(["profile", *flags, "-o", str(tmp_path / "out"), str(script)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("roofline: error: ")
    assert flags[0] in err and "built-in --model" in err
    assert not ran.exists() and not (tmp_path / "out").exists()


def test_doctor_of_a_script_or_report_refuses_them_too(tmp_path, capsys):
    script, ran = _script(tmp_path)
    assert main(["doctor", "--batch", "2", "--dtype", "bf16", str(script)]) == 2
    assert "--batch, --dtype apply only to a built-in --model" in capsys.readouterr().err
    assert not ran.exists()
    report = tmp_path / "report.json"
    Report(workload="w", ops=[OpRecord(name="aten::mm", flops=1e6, bytes=1e3, time_s=1e-3)]).save(report)
    assert main(["doctor", str(report), "--seq", "64"]) == 2
    assert "--seq applies only" in capsys.readouterr().err
    assert main(["doctor", str(report)]) == 0


def test_help_says_which_target_each_option_sizes():
    parser = build_parser()
    profile = _subparser(parser, "profile").format_help()
    analyze = _subparser(parser, "analyze").format_help()
    assert "batch size of a built-in --model" in " ".join(profile.split())
    assert "file.py:factory" not in profile
    assert "a file.py:factory's model and inputs as it built them" in " ".join(analyze.split())
