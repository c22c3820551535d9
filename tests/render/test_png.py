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
