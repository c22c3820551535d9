from roofline.analyze.roofline import place_op
from roofline.render.png import plot_roofline, render_png
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
    data = render_png(synthetic_report())
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    path = plot_roofline(synthetic_report(), tmp_path / "sub" / "r.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_png_renderer_copes_with_an_empty_report():
    assert render_png(Report(ceilings=synthetic_report().ceilings))[:4] == b"\x89PNG"
