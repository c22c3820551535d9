"""Fuzzing the command line: any subcommand with any mix of argument values ends in exit 0 or 2, no traceback.

Runs in-process through roofline.cli.main with small budgets (a 16x16 matmul, one timed step); the values mix
good ones with the bad kinds issue 15 found (zero and negative counts, empty or unknown names, paths that are a
directory, an existing file or missing, reports and traces that are not what they claim).
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.cli import main

GOOD_COUNTS = st.sampled_from(["1", "2"])
COUNTS = st.one_of(GOOD_COUNTS, st.sampled_from(["-3", "-1", "0", "abc", "", "1.5", "99999999999999999999"]))
DEVICES = st.one_of(st.just("cpu"), st.sampled_from(["", "bogus", "cuda:7", "meta", "CPU"]))
MODELS = st.one_of(st.just("matmul"), st.sampled_from(["nope", "", "layernorm"]))
PATHS = st.sampled_from(["DIR", "FILE", "MISSING", "REPORT", "BAD_REPORT", "JUNK", "EMPTY", "SCRIPT", "FACTORY",
                         "FACTORY_JUNK", "NEW_DIR"])
OUTPUTS = st.sampled_from(["DIR", "FILE", "NEW_DIR", "FILE/below", ""])

# (option, values) a subcommand takes; the small model size is fixed so no example runs for long.
OPTIONS = {
    "analyze": [("--iters", COUNTS), ("--warmup", COUNTS), ("--top", COUNTS), ("--batch", COUNTS),
                ("--device", DEVICES), ("--model", MODELS), ("-o", OUTPUTS), ("--dtype", st.sampled_from(["fp16", "x"]))],
    "profile": [("--wait", COUNTS), ("--warmup", COUNTS), ("--active", COUNTS), ("--timed", COUNTS),
                ("--nproc", st.sampled_from(["0", "-1", "x"])), ("--device", DEVICES), ("--model", MODELS),
                ("-o", OUTPUTS)],
    "doctor": [("--top", COUNTS), ("--device", DEVICES), ("--rules", st.sampled_from(["", "nope", "host-device-sync"])),
               ("-o", OUTPUTS)],
    "trace": [("--top", COUNTS), ("-o", OUTPUTS), ("--ceilings", PATHS)],
    "diff": [("--top", COUNTS), ("--html", OUTPUTS), ("--fail-above", st.sampled_from(["-1", "x", "5"]))],
    "view": [("-o", OUTPUTS)],
    "merge": [("-o", OUTPUTS), ("--threshold", st.sampled_from(["-1", "x", "0.1"]))],
    "ceilings": [("--json", OUTPUTS), ("--device", st.sampled_from(["", "bogus", "cuda:7"]))],
    "predict": [("--batch", COUNTS), ("--seq", COUNTS), ("--from-batch", COUNTS), ("--dtype", st.sampled_from(["bf16", "x"])),
                ("--device", st.sampled_from(["", "bogus", "H200", "NVIDIA A100-SXM4-80GB"])), ("--ceilings", PATHS),
                ("--json", OUTPUTS), ("--table", PATHS)],
}
POSITIONALS = {"analyze": 1, "profile": 1, "doctor": 1, "trace": 1, "diff": 2, "view": 1, "merge": 1, "ceilings": 0,
               "predict": 1}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    (root / "DIR").mkdir()
    (root / "FILE").write_text("x")
    report = {"schema_version": 1, "workload": "w", "ops": [{"name": "aten::mm", "time_s": 1e-3, "flops": 1e6}]}
    (root / "REPORT.json").write_text(json.dumps(report))
    (root / "BAD_REPORT.json").write_text(json.dumps(dict(report, ops="many")))
    (root / "JUNK.json").write_text("{not json")
    (root / "EMPTY.json").write_text("")
    (root / "SCRIPT.py").write_text("import sys\nsys.exit(3)\n")
    (root / "FACTORY.py").write_text("import torch\n\ndef f():\n    return torch.nn.Linear(4, 4), torch.randn(2, 4)\n")
    (root / "FACTORY_JUNK.py").write_text("def f():\n    return 42, None\n")
    return root


def _path(root, name: str, positional_of: str = "") -> str:
    if name == "":
        return ""
    suffix = {"REPORT": ".json", "BAD_REPORT": ".json", "JUNK": ".json", "EMPTY": ".json", "SCRIPT": ".py",
              "FACTORY": ".py:f", "FACTORY_JUNK": ".py:f"}.get(name, "")
    return str(root / f"{name}{suffix}")


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(sorted(OPTIONS)))
    argv = [command]
    for _ in range(POSITIONALS[command] if draw(st.booleans()) else 0):
        argv.append(("PATH", draw(PATHS)))
    for option, values in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=3, unique_by=lambda o: o[0])):
        value = draw(values)
        argv += [option, ("PATH", value) if values in (PATHS, OUTPUTS) else value]
    return argv


@settings(max_examples=int(os.environ.get('FUZZ_EXAMPLES', '40')), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=command_lines())
def test_any_command_line_exits_0_or_2_without_a_traceback(argv, files, monkeypatch):
    monkeypatch.chdir(files / "DIR")
    real = [_path(files, a[1]) if isinstance(a, tuple) else a for a in argv]
    if real[0] in ("analyze", "profile") and "--model" in real:
        real += ["--seq", "16", "--device", "cpu"] if "--device" not in real else ["--seq", "16"]
    if real[0] == "ceilings":
        real += ["--quick"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(real)
        except SystemExit as exc:  # --help and friends
            code = exc.code
    assert "Traceback" not in err.getvalue(), real
    assert code in (0, 2), (real, code, err.getvalue()[-500:])
    if code == 2:
        assert [line for line in err.getvalue().splitlines() if line.startswith("roofline: error:")], real


@pytest.mark.parametrize("argv", [["analyze", "--model", "matmul", "--iters", "99999999999999999999"],
                                  ["profile", "--model", "matmul", "--active", "100001"],
                                  ["analyze", "--model", "matmul", "--warmup", "100001"]])
def test_a_step_count_that_would_run_for_hours_is_refused_at_once(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and "at most 100,000 steps" in capsys.readouterr().err
