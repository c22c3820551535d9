"""The batching study's files: batching.json (everything measured), batching.md (tables, method) and batching.png
(throughput and p99 latency over arrival rates, and throughput against p99 latency), written together."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from roofline.io import atomic_directory, atomic_write_bytes, atomic_write_text
from roofline.lab.studies.common import png
from roofline.report import finite_for_json

FILES = ("batching.json", "batching.md", "batching.png")
COLORS = {"static": "#dd8452", "continuous": "#4c72b0"}


def write_batching(result: dict[str, Any], out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    with atomic_directory(out, FILES) as tmp:
        atomic_write_text(tmp / "batching.json", json.dumps(finite_for_json(result), indent=1, allow_nan=False) + "\n")
        atomic_write_text(tmp / "batching.md", markdown(result))
        atomic_write_bytes(tmp / "batching.png", chart(result))
    return [out / name for name in FILES]


def _range(stat: dict | None, scale: float = 1.0, spec: str = ".3g") -> str:
    if stat is None:
        return "-"
    median, lo, hi = (scale * stat[k] for k in ("median", "min", "max"))
    if lo == hi:
        return f"{median:{spec}}"
    return f"{median:{spec}} ({lo:{spec}}-{hi:{spec}})"


def _med(stat: dict | None, scale: float = 1.0, spec: str = ".3g") -> str:
    return "-" if stat is None else f"{scale * stat['median']:{spec}}"


def headline(result: dict[str, Any]) -> str:
    comparison = result["comparison"]["latency_s"]
    row = comparison["headline"]
    if row is None:
        return "no static batching point to compare with"
    if row["continuous_tokens_per_s"] is None:
        return (f"continuous batching never reached static batching's p99 request latency of {row['p99_s']:.3g} s "
                f"(at {row['rate_per_s']:g} requests/s) at any swept rate: no comparison")
    bound = "at least " if row["how"] == "at least" else ""
    where = (f" (its highest in the sweep, at a p99 of only {row['continuous_p99_s']:.3g} s)" if bound else "")
    return (f"at equal p99 request latency ({row['p99_s']:.3g} s, static batching's at its highest throughput, "
            f"{row['rate_per_s']:g} requests/s): continuous batching {bound}{row['continuous_tokens_per_s']:,.0f} "
            f"tokens/s{where} vs static {row['static_tokens_per_s']:,.0f} tokens/s = {bound}{row['factor']:.2f}x")


def table(result: dict[str, Any]) -> str:
    lines = ["| rate (req/s) | scheduler | tokens/s | TTFT p50 / p99 (ms) | per-token p50 / p99 (ms) | "
             "latency p50 / p99 (s) | busy | prefill share | waste prefill / decode |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    points = result["points"]
    for i, rate in enumerate(result["rates_per_s"]):
        for name in ("static", "continuous"):
            p = points[name][i]
            if not p["runs"]:
                continue
            lines.append(
                f"| {rate:g} | {name} | {_range(p['throughput_tokens_per_s'], spec=',.0f')} | "
                f"{_med(p['ttft_s_p50'], 1e3)} / {_range(p['ttft_s_p99'], 1e3)} | "
                f"{_med(p['per_token_s_p50'], 1e3)} / {_range(p['per_token_s_p99'], 1e3)} | "
                f"{_med(p['latency_s_p50'])} / {_range(p['latency_s_p99'])} | "
                f"{_med(p['busy_share'], 100, '.0f')}% | {_med(p['prefill_share'], 100, '.0f')}% | "
                f"{_med(p['prefill_waste_share'], 100, '.0f')}% / {_med(p['decode_waste_share'], 100, '.0f')}% |")
    return "\n".join(lines)


def comparison_table(result: dict[str, Any], metric: str = "latency_s") -> str:
    comparison = result["comparison"][metric]
    lines = [f"| static rate (req/s) | static {comparison['metric']} (s) | static tokens/s | "
             "continuous: best tokens/s at p99 <= that (interpolated) | factor |", "|---:|---:|---:|---:|---:|"]
    for row in comparison["rows"]:
        cont = row["continuous_tokens_per_s"]
        bound = ">= " if row["how"] == "at least" else ""
        lines.append(f"| {row['rate_per_s']:g} | {row['p99_s']:.3g} | {row['static_tokens_per_s']:,.0f} | "
                     + (f"{bound}{cont:,.0f} | {bound}{row['factor']:.2f}x |" if cont is not None else
                        f"- ({row['how']}) | - |"))
    return "\n".join(lines)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.3g}"


def _decode_lines(result: dict[str, Any]) -> list[str]:
    decode = result.get("decode")
    if not decode:
        return []
    if decode["mode"] == "graphed":
        text = (f"Decode steps: CUDA-graphed, one graph per row count ({decode['graphs']} captured in "
                f"{decode['capture_s']:.2f} s before the calibration, outside the clock); attention reads all "
                f"{decode['max_len']} slots of each row ({decode['full_step_kv_bytes'] / 2**20:,.0f} MiB at "
                f"{decode['slots']} rows, {100 * decode['full_step_kv_bytes'] / decode['decode_weight_bytes']:.0f}% "
                "of the weights' bytes). Prefills run eagerly.")
    elif decode["fallback"]:
        text = f"Decode steps: eager, NOT CUDA-graphed: {decode['fallback']}."
    else:
        text = f"Decode steps: {decode['mode']}, not CUDA-graphed (see the method)."
    return [text, ""]


def _profile_section(result: dict[str, Any]) -> list[str]:
    if not result["profile"]:
        return []
    lines = ["## Where the time goes (profiled window)", "",
             "| scheduler | steps (prefill) | op time / wall | op time per step: prefill / decode (ms) | "
             "prefill: op time / wall | decode: op time / wall | op time on wasted positions (prefill / decode) | "
             "top ops |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    profiled = {name: prof for name, prof in result["profile"].items() if "error" not in prof}
    if not profiled:
        return []
    for name, prof in profiled.items():
        pre, dec = prof["prefill"], prof["decode"]
        top = ", ".join(f"{o['op']} {100 * o['share']:.0f}%" for o in prof["top_ops"][:4])
        lines.append(
            f"| {name} | {prof['steps']} ({pre['steps']}) | "
            f"{_pct(prof['op_time_over_wall'])} | "
            f"{_ms(pre['op_s_per_step'])} / {_ms(dec['op_s_per_step'])} | "
            f"{100 * pre['op_share']:.0f}% / "
            f"{100 * pre['wall_share']:.0f}% | {100 * dec['op_share']:.0f}% / {100 * dec['wall_share']:.0f}% | "
            f"{100 * prof['wasted_op_share']:.0f}% ({1e3 * pre['wasted_op_s']:.3g} / {1e3 * dec['wasted_op_s']:.3g} "
            f"ms) | {top} |")
    first = next(iter(profiled.values()))
    lines += ["", f"The window: {first['steps']} steps from the first prefill after the loop's first "
              f"{result['settings']['profile_skip_steps']} steps, at {result['profile_rate_per_s']:g} requests/s; the "
              "whole runs' shares of prefill, decode and waste are in the sweep table. "
              f"Op time: {first['ops_time_source']} of each op in roofline's Report of the window; wall: the "
              "profiled steps' wall time (the profiler adds to it); op time / wall on CUDA: the device's busy share in "
              "the window, a lower bound of the unprofiled loop's. Op time on wasted positions: each step's op time x "
              "its share of positions computed for padding, finished requests or free slots (a share of the work; "
              "a weight-bound decode step would cost about the same without them)."
              + (" A graphed decode step is one op in the Report, `batching::decode_step_cuda_graph` (the annotation "
                 "around the graph's replay, which gets the replayed kernels): the profiler sees no aten ops inside "
                 "a graph." if (result.get("decode") or {}).get("mode") == "graphed" else ""), ""]
    for name, prof in profiled.items():
        if prof["findings"]:
            lines.append(f"Doctor, {name} loop: " + "; ".join(prof["findings"]))
    return lines + [""]


def markdown(result: dict[str, Any]) -> str:
    s = result["settings"]
    w = s["workload"]
    cal = result["calibration"]
    lines = [
        f"# Static vs continuous batching: {result.get('model', '')} ({result.get('dtype', '')}) on "
        f"{result['device_name']}", "",
        f"{result['date']}, torch {result['torch_version']}"
        + (f", `{result['command']}`" if result.get("command") else ""),
        "",
        *[f"**{note}**" for note in result["notes"]],
        "",
        f"**Result:** {headline(result)}.", "",
        "## Workload and memory", "",
        f"{w['requests']} requests per run: prompts of {w['prompt_words'][0]}-{w['prompt_words'][1]} words of "
        f"running WikiText-2 test text, {w['new_tokens'][0]}-{w['new_tokens'][1]} new tokens (greedy; a request ends "
        f"there or at `<eos>`), lengths uniform, Poisson arrivals (seed {w['seed']}; every rate the same requests). "
        f"KV cache for both schedulers: {s['slots']} slots x {s['max_len']} positions = "
        f"{result['kv_cache_bytes'] / 2**20:,.1f} MiB. Static batching waits up to "
        f"{1e3 * result['static_timeout_s']:.3g} ms "
        f"({s['static_timeout_decode_steps']:g} full-batch decode steps) for a full batch.", "",
        f"Rates: {', '.join(f'{r:g}' for r in result['rates_per_s'])} requests/s = "
        f"{', '.join(f'{f:g}' for f in s['rate_fractions'])} x the estimated capacity "
        f"{cal['capacity_requests_per_s']:.3g} requests/s (a {cal['prefill_prompt_words']}-word prefill "
        f"{1e3 * cal['prefill_s']:.3g} ms + {cal['mean_new_tokens']:.0f} tokens x a {s['slots']}-row decode step "
        f"{1e3 * cal['decode_step_s']:.3g} ms / {s['slots']}; medians of 5 after one untimed call).", "",
        *_decode_lines(result),
        "## Method", "",
        *[f"- **{key}**: {text}" for key, text in result["method"].items()],
        "",
        "## Sweep (median over runs, min-max in brackets)", "",
        table(result), "",
        "## Throughput at equal p99 request latency", "",
        comparison_table(result, "latency_s"), "",
        "The same at equal p99 time to first token:", "",
        comparison_table(result, "ttft_s"), "",
        *_profile_section(result),
        "Chart: batching.png. Every figure is in batching.json (each run's figures under `runs`).", "",
    ]
    return "\n".join(lines)


def summary_lines(result: dict[str, Any]) -> list[str]:
    return ["", headline(result)]


def chart(result: dict[str, Any]) -> bytes:
    return png(lambda *axes: _draw(result, axes), figsize=(15, 4.4), ncols=3, dpi=110)


def _draw(result: dict[str, Any], axes) -> None:
    for name, points in result["points"].items():
        done = [p for p in points if p["runs"]]
        rates = [p["rate_per_s"] for p in done]
        color = COLORS[name]
        tps = [p["throughput_tokens_per_s"] for p in done]
        axes[0].errorbar(rates, [t["median"] for t in tps], marker="o", color=color, label=name, capsize=3,
                         yerr=[[t["median"] - t["min"] for t in tps], [t["max"] - t["median"] for t in tps]])
        for metric, style in (("latency_s_p99", "-"), ("ttft_s_p99", "--")):
            axes[1].plot(rates, [p[metric]["median"] for p in done], style, marker="o", color=color,
                         label=f"{name}, " + ("request latency" if metric == "latency_s_p99"
                                              else "time to first token"))
        axes[2].plot([p["latency_s_p99"]["median"] for p in done], [t["median"] for t in tps], marker="o",
                     color=color, label=name)
    row = result["comparison"]["latency_s"]["headline"]
    if row is not None and row["continuous_tokens_per_s"] is not None:
        axes[2].axvline(row["p99_s"], color="grey", lw=0.8, ls=":")
        axes[2].annotate("", xy=(row["p99_s"], row["continuous_tokens_per_s"]),
                         xytext=(row["p99_s"], row["static_tokens_per_s"]),
                         arrowprops={"arrowstyle": "->", "color": "grey"})
        axes[2].annotate(f"{'>= ' if row['how'] == 'at least' else ''}{row['factor']:.2f}x at static's p99",
                         (row["p99_s"], (row["continuous_tokens_per_s"] + row["static_tokens_per_s"]) / 2),
                         textcoords="offset points", xytext=(-8, 0), ha="right", fontsize=8)
    axes[0].set(xlabel="arrival rate (requests/s)", ylabel="generated tokens/s", title="throughput")
    axes[1].set(xlabel="arrival rate (requests/s)", ylabel="seconds", yscale="log", title="p99 latency")
    axes[2].set(xlabel="p99 request latency (s)", ylabel="generated tokens/s", xscale="log",
                title="throughput at equal p99 latency")
    from matplotlib.ticker import FormatStrFormatter

    axes[1].yaxis.set_major_formatter(FormatStrFormatter("%g"))
    axes[2].xaxis.set_major_formatter(FormatStrFormatter("%g"))
    axes[2].xaxis.set_minor_formatter(FormatStrFormatter("%g"))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].figure.suptitle(f"static vs continuous batching, {result.get('model', '')} on {result['device_name']} "
                 f"(same {result['settings']['slots']}-slot KV cache; median, min-max)", fontsize=10)
