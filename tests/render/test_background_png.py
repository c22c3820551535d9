"""A big report's roofline.png is drawn in a forked child while the command goes on (render/outputs.py): the same
bytes as drawn in-process, and any failure in the child falls back to drawing it in-process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import roofline.render.outputs as outputs
from roofline.cli import main
from roofline.render.outputs import BackgroundRenderer, OutputSkipped, in_background

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")


class _ChildOnly:
    """Fails in the forked child only; in the parent it renders b"parent"."""

    file_name = "x.png"

    def __init__(self) -> None:
        self.parent = os.getpid()

    def render(self, report):
        if os.getpid() != self.parent:
            raise RuntimeError("child broke")
        return b"parent"


class _Skips:
    file_name = "x.png"

    def render(self, report):
        raise OutputSkipped("nothing to draw")


_FORKED = """
import sys
import roofline.render.outputs as outputs
from roofline.cli import main

import roofline.analyze.pipeline as pipeline
import roofline.forked as forked

outputs.BACKGROUND_PNG_MIN_OPS = 0
pipeline.SIDE_FORK_MIN_SYNCS = 0
started = []
init = outputs.BackgroundRenderer.__init__
outputs.BackgroundRenderer.__init__ = lambda self, r, rep: (started.append(type(r).__name__), init(self, r, rep))[1]
forks = []
fork_init = forked.Forked.__init__
forked.Forked.__init__ = lambda self, work, *args, **kw: (forks.append(work.__name__), fork_init(self, work, *args, **kw))[1]
code = main(["trace", sys.argv[1], "-o", sys.argv[2]])
print("STARTED", started, forks)
sys.exit(code)
"""


def test_the_trace_command_writes_the_same_files_with_png_and_doctor_in_the_background(tmp_path):
    """The forked run goes in a fresh interpreter: fork is refused while other threads live (in_background), and a
    full test session has some (Dask's offload pool, tqdm's monitor). Its doctor and its memory and sync analysis
    run in children too, and its report.html's op table in another, started when the ops were placed, before the
    rest of the report and the findings are known: the same files."""
    trace = str(H200 / "bad_syncs_fwd_fp32.json.gz")
    assert main(["trace", trace, "-o", str(tmp_path / "inline")]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(outputs.__file__).parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _FORKED, trace, str(tmp_path / "forked")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    # report.html's op table (ops_parts) is started as soon as the ops are placed, before the report is complete
    assert "STARTED ['PngRenderer'] ['_syncs_and_memory', 'ops_parts', '_rendered_apart', '_diagnose']" in run.stdout
    for name in ("roofline.png", "report.json", "report.html"):
        assert (tmp_path / "forked" / name).read_bytes() == (tmp_path / "inline" / name).read_bytes(), name
    inline = (tmp_path / "inline" / "report.json").read_bytes()
    assert b'"findings":[{' in inline and b'"syncs":[{' in inline and b'"peak_allocated_bytes":0' not in inline


def test_a_child_that_fails_is_redone_in_process():
    assert BackgroundRenderer(_ChildOnly(), report=None).render(None) == b"parent"


def test_a_skip_in_the_child_is_raised_in_the_parent():
    with pytest.raises(OutputSkipped, match="nothing to draw"):
        BackgroundRenderer(_Skips(), report=None).render(None)


def test_small_reports_stay_in_process():
    class Tiny:
        ops = [object()] * 10

    renderers = [outputs.JsonRenderer(), outputs.PngRenderer()]
    assert in_background(renderers, Tiny()) == renderers


_QUICK_IMPORT = """
import sys
import matplotlib.artist
kwdoc = matplotlib.artist.kwdoc
from roofline.render.outputs import import_matplotlib_without_property_docs
import_matplotlib_without_property_docs()
from matplotlib.lines import Line2D
print("png" if "roofline.render.png" in sys.modules else "-", matplotlib.artist.kwdoc is kwdoc,
      "antialiased" in (Line2D.set.__doc__ or ""))
"""


def test_the_png_childs_quick_import_skips_only_the_property_docs():
    """The PNG's child imports matplotlib without the property tables of its Artist docstrings (kwdoc) and puts
    kwdoc back; the chart's bytes are compared with an in-process one above (the forked run uses it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(outputs.__file__).parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _QUICK_IMPORT], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["png", "True", "False"]


class _Job:
    """A child's result, counting when it was asked for."""

    def __init__(self, value) -> None:
        self.value, self.asked = value, 0

    def result(self):
        self.asked += 1
        return self.value


def test_report_html_collects_the_early_op_table_only_when_it_renders_the_page():
    """prepare() must not wait for the op table's child: report.json is written meanwhile (issue 23)."""
    from roofline.render.html import ops_parts
    from roofline_synthetic import make_report

    report = make_report()
    job = _Job(ops_parts(report.ops))
    renderer = outputs.HtmlRenderer()
    renderer.prepare(report, job)
    assert job.asked == 0
    page = b"".join(renderer.render(report))
    assert job.asked == 1
    fresh = outputs.HtmlRenderer()
    fresh.prepare(report)
    assert b"".join(fresh.render(report)) == page
