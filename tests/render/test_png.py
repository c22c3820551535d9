from roofline.analyze.roofline import place_op
from png_checks import assert_roofline_png
from roofline.render.png import plot_roofline, render_png
from roofline.render.roofline_chart import COLORS
from roofline.report import Ceilings, OpRecord, Report


def synthetic_report() -> Report:
    c = Ceilings(device="cuda", device_name="Test GPU", memory_bandwidth_bytes_per_s=2e12,
                 peak_flops_per_s={"float16": 3e14, "float32": 2e13}, launch_overhead_s=5e-6)
    ops = [
        OpRecord(name="aten::mm", dtype="float16", flops=2e11, bytes=1e8, time_s=1e-3, module="mlp"),
        OpRecord(name="aten::layer_norm", dtype="float16", flops=5e7, bytes=4e7, time_s=4e-5, module="norm"),
        OpRecord(name="aten::add", dtype="float32", flops=1e3, bytes=1.2e4, time_s=3e-6),
        OpRecord(name="aten::copy_", dtype="float32", flops=0, bytes=1e6, time_s=1e-5),
    ]
    for op in ops:
        place_op(op, c)
    return Report(workload="synthetic", ceilings=c, ops=ops)


def test_png_renderer_draws_a_valid_png(tmp_path):
    report = synthetic_report()
    bounds = {op.bound for op in report.ops if op.flops > 0}
    assert {"compute", "memory", "launch"} <= bounds
    data = render_png(report)
    assert_roofline_png(data, bounds={"compute", "memory", "launch"}, absent={"unmodeled"})
    path = plot_roofline(synthetic_report(), tmp_path / "sub" / "r.png")
    assert_roofline_png(path.read_bytes(), bounds={"compute", "memory"})


def test_png_of_a_memory_bound_only_report_has_no_compute_colour():
    report = synthetic_report()
    report.ops = [op for op in report.ops if op.bound == "memory"]
    assert_roofline_png(render_png(report), bounds={"memory"}, absent={"compute", "launch"})


def test_png_renderer_copes_with_an_empty_report():
    data = render_png(Report(ceilings=synthetic_report().ceilings))
    assert_roofline_png(data, bounds=set(), absent=set(COLORS))


def test_a_long_roofs_method_is_cut_at_a_word_and_says_where_the_rest_is():
    """A CPU trace of an unnamed host has a 300-character method; the caption ended mid-word ("for roofs, wr")."""
    from roofline.render.roofline_chart import CAPTION_ROOFS_CHARS, _clipped

    method = ("no roofs: a CPU trace recorded on a host the trace does not name is not judged against this machine's "
              "CPU; for roofs, write them with `roofline ceilings --json FILE` on that machine")
    clipped = _clipped(method, CAPTION_ROOFS_CHARS)
    assert clipped == ("no roofs: a CPU trace recorded on a host the trace does not name is not judged against this "
                       "machine's CPU ... (whole in report.json: ceilings.method)")
    assert _clipped("measured", CAPTION_ROOFS_CHARS) == "measured"


def test_the_caption_is_broken_once_where_matplotlib_would_break_it():
    """png_of breaks a wrapped caption's lines itself (bisecting each line's words, not measuring every prefix at
    each draw): the lines are matplotlib's own, and the text is then drawn unwrapped."""
    import random

    import matplotlib.pyplot as plt

    from roofline.render.png import _wrapped_lines, chart_figure, draw_roofline, wrap_figure_texts

    fig = draw_roofline(synthetic_report())
    captions = [t for t in fig.texts if "ops drawn" in t.get_text()]
    assert captions and all(t.get_wrap() for t in captions)  # a Figure for the caller wraps as matplotlib does
    wrap_figure_texts(fig)
    assert not any(t.get_wrap() for t in captions)
    plt.close(fig)

    rng = random.Random(7)
    words = ("roofs: datasheet H200 (NVIDIA) measured 4.64 TB/s copy bandwidth, 989.4 TFLOP/s fp16 dense tensor; "
             "calls that land on the same spot are drawn as one point").split()
    for _ in range(40):
        caption = " ".join(rng.choice(words) for _ in range(rng.randint(1, 90)))
        fig = chart_figure()
        text = fig.text(rng.choice([0.01, 0.4]), 0.005, caption, fontsize=rng.choice([6, 9]), wrap=True)
        renderer = text._renderer = fig.canvas.get_renderer()
        x = text.get_transform().transform(text.get_position())[0]
        mine = _wrapped_lines(caption, fig.bbox.x1 - x, text.get_fontproperties(), renderer)
        assert "\n".join(mine) == text._get_wrapped_text()
        plt.close(fig)
