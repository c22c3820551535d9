"""Writing a LabResult: lab.json, lab.md (the before/after table and the story), speedup.png, the doctor's reports.

Formatting only: every number comes from the LabResult.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import msgspec

from roofline.io import atomic_directory, atomic_write_bytes, atomic_write_text
from roofline.lab import views
from roofline.lab.runner import LabResult
from roofline.render.units import fmt_rate
from roofline.report import Report, finite_for_json

DOCTOR_RULES_OF_INTEREST = ("host-device-sync", "recomputation", "layout-copy", "precision-island", "unbatched-loop")


# What a lab run writes in its output folder: a checkpoint replaces all of them together (a previous run's
# views.png or doctor/ never sits beside this run's lab.json).
LAB_FILES = ("lab.json", "lab.md", "speedup.png", "views.png", "doctor")


def write_lab(result: LabResult, out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write the lab's files whole or not at all (roofline.io.atomic_directory): each checkpoint and the final
    write replace the folder's lab files together, so a run stopped at any moment leaves one consistent set."""
    out = Path(out_dir)
    with atomic_directory(out, LAB_FILES) as tmp:
        written = [
            atomic_write_text(tmp / "lab.json", json.dumps(lab_payload(result), indent=1, allow_nan=False) + "\n"),
            atomic_write_text(tmp / "lab.md", lab_markdown(result)),
        ]
        if result.stages:
            written.append(atomic_write_bytes(tmp / "speedup.png", speedup_png(result)))
        if result.ablation is not None and any(r.speedup is not None for r in result.ablation.rows):
            written.append(atomic_write_bytes(tmp / "views.png", views_png(result)))
        for name, report in (("naive", result.naive_report), ("fixed", result.fixed_report)):
            if report is not None:
                written += _write_report(report, tmp / "doctor" / name)
        written = [out / path.relative_to(tmp) for path in written]
    return written


def lab_payload(result: LabResult) -> dict[str, Any]:
    data = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
            if f.name not in ("naive_report", "fixed_report")}
    data = json.loads(json.dumps(data, default=lambda o: msgspec.to_builtins(o, enc_hook=str)
                                 if dataclasses.is_dataclass(o) or isinstance(o, msgspec.Struct) else str(o)))
    data["doctor"] = {
        name: msgspec.to_builtins(report.findings) if report is not None else None
        for name, report in (("naive", result.naive_report), ("fixed", result.fixed_report))
    }
    return finite_for_json(data)


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:{spec}}{unit}"


def stage_table(result: LabResult) -> str:
    lines = [
        "| stage | tokens/s | ms/token | speed-up vs previous | cumulative | syncs/token | bytes moved/token "
        "| % of memory roof | same tokens as first stage |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    agreement = {a.stage: a for a in result.agreement}
    for s in result.stages:
        agree = agreement.get(s.title)
        same = "-" if agree is None else ("yes" if agree.identical else _divergence(agree))
        lines.append(
            f"| {s.title} | {_fmt(s.tokens_per_s, ',.1f')} | {_fmt(s.ms_per_token, '.2f')} "
            f"| {_fmt(s.speedup_vs_previous, '.2f', 'x')} | {_fmt(s.speedup_cumulative, '.2f', 'x')} "
            f"| {_fmt(s.syncs_per_token, '.2f')} | {fmt_rate(s.bytes_per_token, 'B')} "
            f"| {_fmt(None if s.memory_roof_share is None else 100 * s.memory_roof_share, '.1f', '%')} | {same} |"
        )
    return "\n".join(lines)


def decode_rows_table(result: LabResult) -> str:
    """The batch-1 decode rows: the compiled step, the tuned one, and each hand-written variant (or why not)."""
    p = result.peak
    lines = ["| batch-1 decode step | tokens/s | ms/token | bytes/token | % of memory roof | same tokens |",
             "|---|---:|---:|---:|---:|---|"]
    lines.append(f"| fixed, {'compiled' if p.compiled else 'eager'} | {p.tokens_per_s:,.1f} | {p.ms_per_token:.3f} "
                 f"| {fmt_rate(p.bytes_per_token, 'B')} | {100 * p.share_of_memory_roof:.1f}% "
                 f"| {'(the tuned row compares with it)' if p.tuned is not None and not p.tuned.error else '-'} |")
    t = p.tuned
    if t is not None and not t.error:
        lines.append(f"| tuned (stacked, coordinate descent, graphed) | {t.tokens_per_s:,.1f} | {t.ms_per_token:.3f} "
                     f"| {fmt_rate(p.bytes_per_token, 'B')} | {100 * t.share_of_memory_roof:.1f}% "
                     f"| {t.same_tokens}/{t.compared_tokens} as the compiled step |")
    for r in p.fast:
        if r.skipped:
            lines.append(f"| {r.title} | - | - | - | - | {r.skipped} |")
            continue
        if r.first_divergence is None:
            same = f"yes, {r.compared_tokens}/{r.compared_tokens} as the eager fixed model"
        else:
            gap = "" if r.logit_gap_ulps is None else f"; the eager model's top-2 logits {r.logit_gap_ulps:.1f} ulp apart there"
            same = f"{r.same_tokens}/{r.compared_tokens}: first differs at token {r.first_divergence}{gap}"
        lines.append(f"| {r.title} | {_fmt(r.tokens_per_s, ',.1f')} | {_fmt(r.ms_per_token, '.3f')} "
                     f"| {fmt_rate(r.bytes_per_token, 'B')} "
                     f"| {_fmt(None if r.share_of_memory_roof is None else 100 * r.share_of_memory_roof, '.1f', '%')} "
                     f"| {same} |")
    return "\n".join(lines)


def kernel_class_tables(result: LabResult) -> str:
    """Per hand-written variant: each kernel class's time, kernels and bandwidth per token, then the gaps."""
    rows = [r for r in (result.peak.fast if result.peak else []) if r.breakdown is not None]
    if not rows:
        return ""
    lines = ["| variant | kernel class | us/token | kernels/token | bytes/token | achieved | % of roof |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        b = r.breakdown
        for c in b.classes:
            lines.append(f"| {r.title} | {c.name} | {1e6 * c.time_s:,.1f} | {c.kernels:,.1f} "
                         f"| {fmt_rate(c.bytes, 'B') if c.bytes is not None else '-'} "
                         f"| {fmt_rate(c.achieved_bytes_per_s, 'B/s') if c.achieved_bytes_per_s else '-'} "
                         f"| {_fmt(None if c.share_of_roof is None else 100 * c.share_of_roof, '.1f', '%')} |")
        lines.append(f"| {r.title} | between kernels, profiled Python loop | {1e6 * b.gaps_s:,.1f} | | | | |")
        if r.graphed_gap_s is not None:
            lines.append(f"| {r.title} | between kernels in the CUDA graph (graphed time - kernel time) "
                         f"| {1e6 * r.graphed_gap_s:,.1f} | | | | |")
        if b.overlapped_s > 0:
            lines.append(f"| {r.title} | ran under an earlier kernel (PDL) | {1e6 * b.overlapped_s:,.1f} | | | | |")
    return "\n".join(lines)


def _divergence(agree) -> str:
    text = f"diverge at token {agree.first_divergence}"
    if agree.logit_gap_ulps is not None:
        text += f" (top-2 logits {agree.logit_gap_ulps:.1f} ulp apart there)"
    return text


def sweep_table(result: LabResult) -> str:
    sweep = result.sweep
    if sweep is None:
        return ""
    lines = [
        "| batch | decode-matmul intensity (FLOP/B) | bound | tokens/s | ms/step | achieved GB/s (weights + KV) |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for p in sweep.points:
        lines.append(
            f"| {p.batch} | {p.arithmetic_intensity:.1f} | {p.bound} | {p.tokens_per_s:,.1f} | {p.ms_per_step:.2f} "
            f"| {p.achieved_bytes_per_s / 1e9:,.1f} |"
        )
    return "\n".join(lines)


def _findings_list(report: Report | None) -> str:
    if report is None:
        return "(not run)"
    if not report.findings:
        return "no findings"
    rows = []
    for rank, f in enumerate(report.findings, 1):
        where = ", ".join(f.locations[:2])
        rows.append(f"{rank}. **{f.rule}** ({f.severity}, est. saving {f.estimated_savings_s * 1e3:.2f} ms): "
                    f"{f.title} - at {where}")
    return "\n".join(rows)


def _prompts_text(result: LabResult) -> str:
    plan = result.plan
    return ("Prompts: " + (f"{len(result.prompts)} passages of WikiText-2 test text ({plan.min_prompt_words}-"
                           f"{plan.prompt_words} words)" if plan.min_prompt_words else
                           f"the first sentence of {len(result.prompts)} WikiText-2 test paragraphs (up to "
                           f"{plan.prompt_words} words)")
            + f", {plan.max_new_tokens} new tokens each, greedy")


def lab_markdown(result: LabResult) -> str:
    c = result.config
    ceil = result.ceilings
    plan = result.plan
    parts = [
        f"# roofline lab: {result.model} on {ceil.device_name or result.device} ({result.dtype})",
        "",
        f"Model: LLaMA dim {c['dim']}, {c['n_layers']} layers, {c['n_heads']} heads, {c['n_kv_heads']} KV heads, "
        f"FFN {c['ffn_dim']}, vocab {c['vocab_size']}, random weights (seeded). "
        + (_prompts_text(result) if result.prompts else
           f"Prompt: a seeded random prompt of {plan.sweep_context} tokens, then {plan.sweep_steps} greedy decode "
           "steps (--decode-only)")
        + f". torch {result.environment.torch_version}, {result.environment.timestamp}.",
        "",
        f"Ceilings ({ceil.source}): memory {fmt_rate(ceil.memory_bandwidth_bytes_per_s, 'B/s')}; "
        + ", ".join(f"{d} {fmt_rate(v, 'FLOP/s')}" for d, v in ceil.peak_flops_per_s.items()) + ".",
        "",
        *([f"**Partial result**: the run stopped before {', '.join(result.pending)}.", ""] if result.pending else []),
    ]
    if result.ablation is not None:
        parts += views_section(result)
    elif result.stages or "configurations" in result.pending:
        parts += [
            "## Stages (each fix added to the ones above it)", "", stage_table(result), "",
            f"Timing: {result.timing_method}; {plan.reps} timed run(s) per stage, median. tokens/s counts every "
            "generated token of every prompt; ms/token = 1000 / tokens/s. Syncs: roofline's SyncDetector over one "
            "run of the loop, tokens left on the device (the one final copy to the host not counted)"
            f"{' (on CPU: calls that would synchronise on a GPU)' if result.device == 'cpu' else ''}. "
            f"Bytes: {result.bytes_method}. % of memory roof = bytes/token x tokens/s / measured bandwidth.",
        ]
    if any(not a.identical for a in result.agreement):
        parts += [
            "",
            "Where a stage's tokens diverge: a fix that changes the arithmetic (norms in the model's dtype, another "
            "attention kernel, fused compiled kernels) rounds differently, and with random weights the two best "
            "logits are often nearly tied, so the argmax flips and every later token differs. The gap shown is the "
            "first stage's top-1 minus top-2 logit at that token (its model fed the reference tokens up to there), "
            f"in units of {result.dtype}'s rounding step at the top logit; a gap of a few ulp is a near-tie, not "
            "a bug. In float32 on CPU every stage gives the first stage's tokens exactly (tests/lab).",
        ]
    if result.peak is not None:
        p = result.peak
        parts += [
            "",
            "## Final decode against the memory roof (batch 1)",
            "",
            f"- decode: {p.tokens_per_s:,.1f} tokens/s ({p.ms_per_token:.3f} ms/token), "
            f"{'compiled' if p.compiled else 'eager'}, context {p.context} tokens",
            f"- bytes per token: {fmt_rate(p.bytes_per_token, 'B')}; at {fmt_rate(p.bandwidth_bytes_per_s, 'B/s')} the "
            f"roof allows {p.theoretical_tokens_per_s:,.1f} tokens/s: **{100 * p.share_of_memory_roof:.1f}% of the "
            "memory roof**",
            f"- prefill of a {p.context}-token prompt: {p.prefill_ms:.2f} ms ({p.prefill_tokens_per_s:,.0f} tokens/s)",
            f"- method: {p.method}",
        ]
        if p.tuned is not None:
            t = p.tuned
            parts.append(f"- tuned further ({'; '.join(t.changes)}): " + (
                f"failed, {t.error}" if t.error else
                f"{t.tokens_per_s:,.1f} tokens/s ({t.ms_per_token:.3f} ms/token): **{100 * t.share_of_memory_roof:.1f}%"
                f" of the memory roof**; the first {t.same_tokens} of {t.compared_tokens} tokens are the same as the "
                "plain compiled step's"))
        if p.fast:
            from roofline.lab.fast_rows import METHOD as FAST_METHOD

            parts += ["", "### Hand-written decode kernels (Triton), batch 1", "", decode_rows_table(result), "",
                      f"Method: {FAST_METHOD}."]
            tables = kernel_class_tables(result)
            if tables:
                parts += ["", "### Where each token's device time goes, by kernel class", "", tables, "",
                          f"Method: {next(r.breakdown.method for r in p.fast if r.breakdown is not None)}."]
    if result.sweep is not None:
        s = result.sweep
        crossing = f"batch {s.crossing_batch}" if s.crossing_batch else "beyond batch 65536"
        parts += [
            "",
            f"## Batch-size sweep of the fixed decode ({'compiled' if s.compiled else 'eager'}, {s.dtype})",
            "",
            sweep_table(result),
            "",
            f"Ridge point ({s.dtype}): {s.ridge_point:.1f} FLOP/byte; the decode matmuls turn compute-bound at "
            f"**{crossing}**. Method: {s.method}.",
        ]
    if result.stages or result.ablation is not None or result.naive_report or result.fixed_report:
        parts += [
            "",
            "## The doctor on the naive model",
            "",
            _findings_list(result.naive_report),
            "",
            "## The doctor on the fixed model",
            "",
            _findings_list(result.fixed_report),
        ]
    if result.sample_output:
        parts += ["", "## Sample", "", f"Prompt: {result.prompts[0]}", "", f"Greedy continuation (random weights): "
                  f"{result.sample_output}"]
    if result.notes:
        parts += ["", "## Notes", ""] + [f"- {n}" for n in result.notes]
    return "\n".join(parts) + "\n"


def _ms_range(c: views.Config) -> str:
    if not c.samples_s:
        return "not measured"
    return f"{c.ms_per_token():.3g} ({c.ms_per_token(0.25):.3g}-{c.ms_per_token(0.75):.3g})"


def _min_max(c: views.Config) -> str:
    if not c.samples_s or not c.tokens:
        return "-"
    return f"{1e3 * min(c.samples_s) / c.tokens:.3g}-{1e3 * max(c.samples_s) / c.tokens:.3g}"


def _speedup(row: views.Row) -> str:
    if row.speedup is None:
        return "-"
    text = f"{row.speedup:.2f}x ({row.low:.2f}-{row.high:.2f})"
    return f"{text}, within noise" if row.verdict == views.WITHIN_NOISE else text


VIEW_HEADINGS = {
    "cumulative": "Cumulative: each fix added to the ones before it",
    "isolated": "Isolated: the naive model with only that fix",
    "leave-one-out": "Leave-one-out: the fully fixed model with only that bug put back",
}


def view_table(result: LabResult, view: str) -> str:
    ablation = result.ablation
    configs = {c.key: c for c in ablation.configs}
    lines = ["| fix | before | after | ms/token before, median (IQR) | ms/token after | speed-up (range) "
             "| verdict | same tokens as naive (after) |", "|---|---|---|---:|---:|---:|---|---|"]
    for row in (r for r in ablation.rows if r.view == view):
        b, a = configs.get(row.before), configs.get(row.after)
        agree = a.agreement if a is not None else None
        same = "-" if agree is None else ("yes" if agree.identical else _divergence(agree))
        lines.append(f"| {views.SHORT[row.fix]} | {b.title if b else views.config_title(row.before.split('+'))} "
                     f"| {a.title if a else views.config_title(row.after.split('+'))} "
                     f"| {_ms_range(b) if b else 'not measured'} | {_ms_range(a) if a else 'not measured'} "
                     f"| {_speedup(row)} | {row.verdict} | {same} |")
    return "\n".join(lines)


def evidence_table(result: LabResult) -> str:
    lines = ["| configuration | timed runs | tokens/s (median) | ms/token, median (IQR) | min-max | syncs/token "
             "| kernel launches/token | bytes/token | FLOPs/token | floors launch / memory / compute (ms/token) "
             "| bound |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for c in result.ablation.configs:
        e = c.evidence
        f = views.floors(c, result.ceilings, result.dtype)
        floor_text = "-" if f is None else (f"{'-' if f.launch_ms is None else f'{f.launch_ms:.3g}'} / "
                                            f"{f.memory_ms:.3g} / {f.compute_ms:.3g}")
        lines.append(
            f"| {c.title} | {len(c.samples_s)} | {_fmt(c.tokens_per_s, ',.1f')} | {_ms_range(c)} "
            f"| {_min_max(c)} "
            f"| {_fmt(e.syncs_per_token if e else None, '.2f')} "
            f"| {c.launches_text or _fmt(e.launches_per_token if e else None, ',.0f')} "
            f"| {fmt_rate(e.bytes_per_token if e else None, 'B')} | {fmt_rate(e.flops_per_token if e else None, 'FLOP')} "
            f"| {floor_text} | {f.bound() if f else '-'} |")
    return "\n".join(lines)


def views_section(result: LabResult) -> list[str]:
    ablation = result.ablation
    c = result.ceilings
    parts = [
        "## Workload",
        "",
        ablation.workload or "(not stated)",
        "",
        "## Method",
        "",
        f"Every configuration is timed {ablation.reps} times, each run one whole generation of all prompts "
        f"({result.timing_method}), after one whole untimed warm-up run (the first pass through each sequence "
        "length grows the allocator's pool and picks kernels; for the compiled step it also compiles and captures "
        "the CUDA graphs, so neither is timed). Runs are interleaved: pass 1 warms up and times every "
        "configuration once, each later pass times every configuration once more, so a slow drift of the machine "
        f"hits all alike. ms/token = a run's time / the tokens it generated; median over the runs; "
        f"{views.SPREAD_METHOD}. Evidence (roofline's SyncDetector and per-op counts on the eager ops, over runs "
        f"of 1 and {ablation.evidence_tokens} new tokens of every prompt: their difference is one decode step, and "
        "a whole run is the first token plus the rest at that step's cost, so the prefill is spread over every "
        "new token; for the recomputing loop, whose steps grow with the context, this understates the later steps "
        "by about (new tokens / 2) / prompt length; "
        f"{' on CPU, syncs are calls that would synchronise on a GPU' if result.device == 'cpu' else 'tokens left on the device'}): syncs, kernel launches (aten "
        "ops that are not views), minimum bytes and FLOPs per generated token; a compiled configuration shows its eager "
        "twin's counts (compiled kernels fuse ops, so they move less; its launches are graph replays or Inductor's "
        "kernels). Floors = the least time per token "
        f"each resource needs on this device: launches x the measured launch overhead "
        f"({c.launch_overhead_s * 1e6:.3g} us), bytes / measured bandwidth, FLOPs / peak {result.dtype} FLOP/s; "
        "the largest names the bound. Time per kernel class is in the doctor's reports (doctor/) of the naive "
        "and fixed runs. " + (
            "Leave-one-out puts each bug back into the fully fixed, compiled model: the decode step "
            "(torch.compile, reduce-overhead: CUDA graphs) is recompiled for the bug's module classes or batch "
            "size; without the KV cache the recomputing step is compiled with dynamic shapes and without CUDA "
            "graphs (its shapes change every token, and a graph is captured for fixed shapes); every compile and "
            "capture happens in the warm-up run, and a timed run during which Dynamo compiled is noted on its "
            "configuration. torch.compile's own row is fixed eager vs fixed compiled (it compiles the KV-cache "
            "decode step, so it has no isolated row). Cumulative and isolated views are eager until the compiled "
            "stage. Configurations come in two tiers: the leave-one-out and cumulative ones first, each with all "
            "its runs, then the isolated view's one-prompt-at-a-time ones as the budget allows."
            if any("compiled" in r.after.split("+") for r in ablation.rows if r.view == "leave-one-out") else
            "Views are measured on eager configurations (no torch.compile in this run)."),
    ]
    if ablation.budget_s is not None:
        parts += ["", f"Budget: {ablation.budget_s:.0f} s for the configurations, {ablation.spent_s:.0f} s spent."]
    if ablation.cut:
        parts += ["", "**Cut by the budget or failed:**", ""] + [f"- {line}" for line in ablation.cut]
    for view in views.VIEWS:
        parts += ["", f"## {VIEW_HEADINGS[view]}", "", view_table(result, view), "", "Why, from the evidence:", ""]
        for row in (r for r in ablation.rows if r.view == view):
            parts.append(f"- **{views.SHORT[row.fix]}** ({row.verdict}): {row.explanation or 'not measured'}")
    parts += ["", "## Evidence per configuration", "", evidence_table(result), ""]
    parts += [f"- {c.title}: {c.note}" for c in ablation.configs if c.note] + ([""] if any(
        c.note for c in ablation.configs) else [])
    parts += [
              "Charts: views.png (speed-up of each fix in each view, with its range), speedup.png (cumulative).", ""]
    return parts


def _png(draw, figsize: tuple[float, float]) -> bytes:
    """A PNG of one matplotlib Axes drawn by ``draw(ax)`` (the studies' chart helper)."""
    from roofline.lab.studies.common import png

    return png(draw, figsize)


def views_png(result: LabResult) -> bytes:
    rows = result.ablation.rows
    fixes = list(dict.fromkeys(r.fix for r in rows))
    colors = {"cumulative": "#4c72b0", "isolated": "#dd8452", "leave-one-out": "#55a868"}

    def draw(ax) -> None:
        width = 0.8 / len(views.VIEWS)
        for j, view in enumerate(views.VIEWS):
            by_fix: dict[str, views.Row] = {}
            for r in rows:
                if r.view == view and r.speedup is not None:
                    by_fix.setdefault(r.fix, r)
            shown = [f for f in fixes if f in by_fix]
            ax.bar([fixes.index(f) + (j - 1) * width for f in shown], [by_fix[f].speedup for f in shown], width,
                   yerr=[[by_fix[f].speedup - by_fix[f].low for f in shown],
                         [by_fix[f].high - by_fix[f].speedup for f in shown]],
                   capsize=2, color=colors[view], label=view)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(fixes)))
        ax.set_xticklabels([views.SHORT[f] for f in fixes], rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("speed-up of the fix (tokens/s), IQR range")
        ax.legend(fontsize=8)
        ax.set_title(f"roofline lab, three views: {result.model}, {result.dtype}, "
                     f"{result.ceilings.device_name or result.device}")

    return _png(draw, (9, 4.8))


def speedup_png(result: LabResult) -> bytes:
    titles = [s.title for s in result.stages]
    values = [s.speedup_cumulative for s in result.stages]

    def draw(ax) -> None:
        bars = ax.bar(range(len(values)), values, color="#4c72b0")
        for bar, value in zip(bars, values):
            ax.annotate(f"{value:.1f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(titles)))
        ax.set_xticklabels(titles, rotation=25, ha="right", fontsize=8)
        ax.set_ylabel("cumulative speed-up over the first stage (tokens/s)")
        if max(values, default=1) > 20:
            ax.set_yscale("log")
        ax.set_title(f"roofline lab: {result.model}, {result.dtype}, {result.ceilings.device_name or result.device}")

    return _png(draw, (8, 4.5))


def _write_report(report: Report, directory: Path) -> list[Path]:
    from roofline.render.findings import render_findings
    from roofline.render.html import render_html

    written = [report.save(directory / "report.json")]
    written.append(atomic_write_text(directory / "findings.txt", render_findings(report.findings)))
    written.append(atomic_write_text(directory / "report.html", render_html(report)))
    return written
