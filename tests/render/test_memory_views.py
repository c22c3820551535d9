"""The memory-access PNG and the hierarchical roofline draw what the join set (renderers compute nothing)."""

from __future__ import annotations

from ncu_cases import DATA, H200

from roofline.analyze.ncu_join import join_ncu
from roofline.capture.ncu_csv import read_ncu_csv
from roofline.render.memory_png import render_memory_png
from roofline.render.png import draw_roofline
from roofline.render.roofline_chart import _measured_levels


def _llama():
    from roofline.analyze.trace_file import analyze_trace_file

    report = analyze_trace_file(H200 / "llama_tiny_fwd_fp16_b4_s512.json.gz")
    join_ncu(report, read_ncu_csv(DATA / "ncu_h200" / "hf_llama_tiny_fwd_fp16_b4_s512.csv.gz"))
    return report


def test_the_roofline_places_each_measured_op_at_its_dram_intensity():
    import matplotlib.pyplot as plt

    report = _llama()
    points = [op for op in report.ops if op.flops > 0 and op.bytes > 0 and op.time_s > 0
              and op.arithmetic_intensity > 0 and op.achieved_flops_per_s > 0]
    levels = _measured_levels(points)
    assert len(levels) >= 0.9 * len(points)
    for op, xs in levels:
        assert xs["dram"] == op.measured.dram_intensity == op.flops / op.measured.dram_bytes
    fig = draw_roofline(report)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    plt.close(fig)
    assert any(label.startswith("DRAM traffic measured by ncu") for label in labels)


def test_the_memory_view_is_a_png_and_groups_layers_by_site():
    report = _llama()
    assert render_memory_png(report)[:4] == b"\x89PNG"
    names = [g.name for g in report.ncu.by_module]
    assert any("LlamaDecoderLayer*" in n for n in names)
    assert len(names) == len(set(names))
