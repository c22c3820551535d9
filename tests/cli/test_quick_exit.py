"""The console entry point ends a command without freeing its report (roofline.quickexit): every file is still
written, stdout is complete through a pipe, and error and interrupt paths keep their exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
FIXTURE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "h200-traces" / "bad_syncs_fwd_fp32.json.gz"


def _roofline(*argv: str, code: str = "import runpy; runpy.run_module('roofline', run_name='__main__')",
              cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC), "ROOFLINE_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True, timeout=300)


def test_trace_writes_every_file_and_the_whole_summary_through_a_pipe(tmp_path):
    import pytest

    if not FIXTURE.exists():
        pytest.skip("the shared H200 fixtures are not here")
    out = tmp_path / "out"
    done = _roofline("trace", str(FIXTURE), "-o", str(out), cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json", "roofline.png", "trace.json.gz"]
    # the summary's last line names the output directory: nothing buffered was lost at the early exit
    assert done.stdout.endswith("\n")
    assert " ".join(done.stdout.split()).endswith(f"wrote {out}/report.json, {out}/roofline.png, "
                                                  f"{out}/trace.json.gz, {out}/report.html"), done.stdout[-500:]


def test_bad_input_still_exits_2_with_one_line(tmp_path):
    done = _roofline("trace", str(tmp_path / "missing.json"), "-o", str(tmp_path / "out"), cache=tmp_path / "cache")
    assert done.returncode == 2
    assert done.stderr.startswith("roofline: error:") and done.stderr.count("\n") == 1, done.stderr


def test_interrupt_still_exits_130(tmp_path):
    code = ("import roofline.cli as cli\n"
            "def interrupted(): raise KeyboardInterrupt\n"
            "cli.quiet_third_party = interrupted\n"
            "cli.run()")
    done = _roofline("trace", "whatever.json", code=code, cache=tmp_path / "cache")
    assert done.returncode == 130 and done.stderr == "roofline: interrupted\n"


def test_exit_now_runs_atexit_handlers_and_flushes_a_pipe(tmp_path):
    code = ("import atexit, sys\n"
            "from roofline import quickexit\n"
            "quickexit.arm()\n"
            "quickexit.keep_until_exit([1])\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "sys.stdout.write('x' * 100000)\n"
            "quickexit.finish(3)")
    done = _roofline(code=code, cache=tmp_path / "cache")
    assert done.returncode == 3
    assert done.stdout == "x" * 100000 + "atexit ran\n"


def test_main_callers_keep_nothing_and_get_the_collector_back(tmp_path):
    import gc

    import pytest

    from roofline import quickexit
    from roofline.cli import main

    if not FIXTURE.exists():
        pytest.skip("the shared H200 fixtures are not here")
    assert gc.isenabled()
    assert main(["trace", str(FIXTURE), "-o", str(tmp_path / "out"), "--no-html"]) == 0
    assert gc.isenabled() and not quickexit.armed()
    quickexit.keep_until_exit(object())
    assert quickexit._kept is None


def test_a_one_shot_trace_command_keeps_its_trace_until_exit_and_the_api_does_not(monkeypatch):
    """Freeing a 1 M-event Trace cost the console's main process 0.26 s on its critical path (issue 23); anyone
    calling the API gets the trace freed as usual."""
    import pytest

    from roofline import quickexit
    from roofline.analyze.trace_file import analyze_trace_file
    from roofline.capture.trace_model import Trace

    if not FIXTURE.exists():
        pytest.skip("the shared H200 fixtures are not here")
    monkeypatch.setattr(quickexit, "_kept", None)
    analyze_trace_file(FIXTURE)
    assert quickexit._kept is None
    monkeypatch.setattr(quickexit, "_kept", [])
    report = analyze_trace_file(FIXTURE)
    assert [type(kept) for kept in quickexit._kept] == [Trace] and report.ops


def test_a_replaced_outputs_old_files_are_removed_after_the_command_ends(tmp_path):
    """The previous run's files are renamed aside at once and removed by a detached process as the command exits
    (roofline.io.remove_tree after defer_tree_removals), so no hidden directory is left beside the output."""
    import time

    trace = Path(__file__).resolve().parents[1] / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz"
    out = tmp_path / "runs" / "out"
    for _ in range(2):
        done = _roofline("trace", str(trace), "-o", str(out), "--no-html", cache=tmp_path / "cache")
        assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 30
    while len(list(out.parent.iterdir())) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p.name for p in out.parent.iterdir()] == ["out"]
    assert (out / "report.json").stat().st_size > 0


def test_remove_tree_removes_at_once_unless_deferred(tmp_path):
    from roofline import io

    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "report.json").write_text("{}")
    assert io._deferred_removals is None  # only the console entry point defers
    io.remove_tree(tmp_path / "old")
    assert not (tmp_path / "old").exists()
