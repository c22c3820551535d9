"""roofline.png of a big trace drawn by a process forked before the trace is read (render/png_drawer.py): the same
bytes as drawn in-process; a drawer that died leaves the PNG to the command; a drawer nobody wants is stopped and
reaped, also when the command fails. Each case runs in a fresh interpreter: fork is refused while other threads
live, and a full test session has some."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import roofline.render.outputs as outputs
from roofline.cli import main

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")

_PRELUDE = """
import os, signal, sys
import roofline.render.outputs as outputs
import roofline.render.png_drawer as png_drawer
from roofline.cli import main

outputs.BACKGROUND_PNG_MIN_OPS = 0
outputs.DRAWER_MIN_BYTES = 0
drawn = []
png = png_drawer.PngDrawer.png
png_drawer.PngDrawer.png = lambda self: (lambda out: (drawn.append(out is not None), out)[1])(png(self))


def no_children_left():
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False
"""

_RUN_THE_COMMAND = """
code = 1
try:
    code = main(["trace", sys.argv[1], "-o", sys.argv[2]])
finally:
    print("DRAWN", drawn, "CLEAN", no_children_left())
sys.exit(code)
"""

_COMMAND = _PRELUDE + _RUN_THE_COMMAND

_DIED = _PRELUDE + """
from roofline.analyze.trace_file import analyze_trace_file
from roofline.render.png import render_png

report = analyze_trace_file(sys.argv[1])
drawer = png_drawer.PngDrawer.start()
os.kill(drawer._pid, signal.SIGKILL)
out = outputs.DrawnPngRenderer(drawer, report).render(report)
print("SAME", out == render_png(report), "DRAWN", drawn, "CLEAN", no_children_left())
"""

# The child that sends the chart calls and works out report.html's op table dies halfway through the calls: the
# drawer reads a cut pickle and fails, so the command draws the PNG itself, and works out the op table itself.
_SENDER_DIED = _PRELUDE + """
def half_then_die(report, calls_fd):
    os.write(calls_fd, b"\\x80\\x05garbage")
    os._exit(3)

png_drawer._send_calls = half_then_die
""" + _RUN_THE_COMMAND

_STOPPED = _PRELUDE + """
drawer = png_drawer.PngDrawer.start()
drawer.stop()
drawer.stop()
print("CLEAN", no_children_left())
"""


_WAITS_FOR_GO = _PRELUDE + """
import time
from pathlib import Path

def drew_or_imported(pid):
    return "ft2font" in Path(f"/proc/{pid}/maps").read_text()

drawer = png_drawer.PngDrawer.start()
time.sleep(1.0)
before = drew_or_imported(drawer._pid)
drawer.go()
drawer.go()
for _ in range(300):
    if drew_or_imported(drawer._pid):
        break
    time.sleep(0.1)
after = drew_or_imported(drawer._pid)
drawer.stop()
print("BEFORE", before, "AFTER", after, "CLEAN", no_children_left())
"""


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(outputs.__file__).parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("script, drawn", [(_COMMAND, True), (_SENDER_DIED, False)],
                         ids=["the drawer draws it", "the chart's sender died: the command draws it"])
def test_the_command_with_the_drawer_writes_the_same_files_as_in_process(tmp_path, script, drawn):
    """roofline.png, report.json and report.html as the command writes them without the drawer and its children:
    drawn by the drawer, or, where the child that sends the chart's calls (and works out report.html's op table)
    dies halfway through them, by the command itself, which works out the op table itself too."""
    trace = str(H200 / "bad_syncs_fwd_fp32.json.gz")
    assert main(["trace", trace, "-o", str(tmp_path / "inline")]) == 0
    run = _run(script, trace, str(tmp_path / "drawn"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"DRAWN [{drawn}] CLEAN True" in run.stdout
    for name in ("roofline.png", "report.json", "report.html"):
        assert (tmp_path / "drawn" / name).read_bytes() == (tmp_path / "inline" / name).read_bytes(), name


def test_a_drawer_that_died_leaves_the_png_to_the_command():
    run = _run(_DIED, str(H200 / "bad_syncs_fwd_fp32.json.gz"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "SAME True DRAWN [False] CLEAN True" in run.stdout


def test_a_drawer_nobody_wants_is_stopped_and_reaped():
    run = _run(_STOPPED)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "CLEAN True" in run.stdout


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
def test_the_drawer_imports_matplotlib_only_once_told_the_trace_is_read():
    """Before ``go`` the drawer only waits: the trace's reading has both cores (niced instead, it could never be
    raised again for the real chart)."""
    run = _run(_WAITS_FOR_GO)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "BEFORE False AFTER True CLEAN True" in run.stdout


def test_a_failed_command_leaves_no_drawer_behind(tmp_path):
    bad = tmp_path / "cut.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1, "dur"')
    run = _run(_COMMAND, str(bad), str(tmp_path / "out"))
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert "DRAWN [] CLEAN True" in run.stdout


def test_the_warm_up_chart_draws_every_kind_of_mark_a_real_chart_has():
    """The drawer's throwaway chart (drawn while the trace is read) must itself draw: its errors are swallowed, so a
    broken warm-up would only show as a slower PNG."""
    from roofline.render.png import png_of
    from roofline.render.png_drawer import warm_up_report
    from roofline.render.roofline_chart import chart_calls

    calls = chart_calls(warm_up_report())
    labels = [call.kwargs.get("label", "") for call in calls if call.method == "scatter"]
    for mark in ("compute-bound", "memory-bound", "launch-bound", "above the roof", "served from cache"):
        assert any(label.startswith(mark) for label in labels), (mark, labels)
    assert png_of(calls).startswith(b"\x89PNG")


def test_a_chart_drawn_on_the_drawers_prepared_figure_is_the_same_png():
    """The drawer draws the real chart on a figure whose renderer already parsed every decade's tick label
    (``_figure_with_decade_labels``): the same bytes as on a new figure, for charts of different ranges."""
    from roofline.render.png import png_of
    from roofline.render.png_drawer import _figure_with_decade_labels, warm_up_report
    from roofline.render.roofline_chart import chart_calls
    from roofline_synthetic import make_report

    for report in (warm_up_report(), make_report(n_ops=200), make_report(n_ops=40, seed=3)):
        calls = chart_calls(report)
        figure = _figure_with_decade_labels()
        assert figure is not None and not figure.axes
        assert png_of(calls, figure) == png_of(calls)
