"""Issue 19's old-vs-new kernel comparison in one table: gpu_suite.py issue19-kernels' last stage.

    PYTHONPATH=src python3 benchmarks/issue19_kernels_summary.py SUITE_DIR

Reads what the suite's stages wrote under SUITE_DIR (attention_ctx*/decode_attention_context.json: the attention
kernel alone, current "new" vs version 2 "v2", each at its fastest slots per program; decode_fast_llama-1b.json:
the llama-1b decode per variant, alternating runs; lab_decode/<model>/lab.json: the lab's hand-written decode rows,
its 2,048-slot cache, each row timed on its own) and writes SUITE_DIR/summary.md and summary.json. A stage that
failed or left nothing is a line saying so, not an error. For gpu_suite.py issue19-prefetch (no attention stages:
that section is left out) it adds the deep-prefetch step against PDL + attention v2: the difference per token, the
tokens against the old step's, and each product's tile before and after with its time under PDL in the tuning.
For gpu_suite.py issue19-persist: the persistent kernel's smoke test in one line first, the persistent step against
deep prefetch, and the persistent tuning's choice and candidates as a note.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

V1_LABEL = "+ Triton GEMV + PDL"
V2_LABEL = "+ Triton GEMV + PDL + attention v2"
PREFETCH_LABEL = "+ Triton GEMV + PDL + attention v2 + deep prefetch"
L2_LABEL = PREFETCH_LABEL + " + L2 prefetch"
PERSIST_LABEL = PREFETCH_LABEL + " + persistent"


def _load(path: Path) -> dict:
    """A stage's JSON; {} where it is unreadable (a stage killed mid-write leaves its rows out, not the summary)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def attention_rows(suite: Path) -> list[dict]:
    from decode_attention_context import best_per_kernel

    rows = []
    for path in sorted(suite.glob("attention_ctx*/decode_attention_context.json")):
        data = _load(path)
        if "rows" not in data:
            continue
        for max_seq, best in best_per_kernel(data).items():
            new, v2 = best.get("new"), best.get("v2")
            errors = sorted({r["error"][:80] for r in data["rows"] if r.get("kernel") == "v2" and "error" in r})
            rows.append({"context": data["context"], "max_seq": max_seq, "new_us": new and new[0],
                         "new_t_per_split": new and new[1], "v2_us": v2 and v2[0], "v2_t_per_split": v2 and v2[1],
                         "v2_over_new": v2[0] / new[0] if new and v2 else None, "v2_errors": errors})
    return rows


def decode_rows(suite: Path) -> tuple[list[dict], list[str]]:
    rows, notes = [], []
    for path in sorted(suite.glob("decode_fast_*.json")):
        data = _load(path)
        for model, row in data.get("models", {}).items():
            notes += [f"{model}: {n}" for n in row.get("notes", [])] + ([f"{model}: {row['error']}"] if "error" in row else [])
            for label, v in row.get("variants", {}).items():
                classes = v.get("breakdown", {}).get("classes", {})
                tokens = v.get("tokens") or {}
                runs = v.get("runs_tokens_per_s") or [v["tokens_per_s"]]
                rows.append({
                    "model": model, "variant": label, "tokens_per_s": v["tokens_per_s"],
                    "tokens_per_s_min_max": [min(runs), max(runs)], "us_per_token": 1e3 * v["ms_per_token"],
                    "share_of_roof": v["share_of_memory_roof"],
                    "matmul_us": classes.get("matmul", {}).get("us_per_token"),
                    "matmul_bytes_per_s": classes.get("matmul", {}).get("achieved_bytes_per_s"),
                    "attention_us": classes.get("attention", {}).get("us_per_token"),
                    "other_us": classes.get("other", {}).get("us_per_token"),
                    "between_us": v.get("breakdown", {}).get("gap_us_per_token"),
                    "same_tokens": tokens.get("same"), "compared": tokens.get("compared"),
                    "first_divergence": tokens.get("first_divergence"), "logit_gap_ulps": tokens.get("logit_gap_ulps")})
            variants = row.get("variants", {})
            old_tokens = variants.get(V2_LABEL, {}).get("generated_tokens")
            new_tokens = variants.get(PREFETCH_LABEL, {}).get("generated_tokens")
            if old_tokens and new_tokens:
                same = next((i for i, (a, b) in enumerate(zip(old_tokens, new_tokens)) if a != b), len(old_tokens))
                notes.append(f"{model}: deep prefetch's tokens: {same}/{len(old_tokens)} the same as PDL + attention "
                             "v2's" + ("" if same == len(old_tokens) else f" (first differs at {same})"))
            deep = row.get("fast", {}).get("prefetch") or {}
            steps = deep.get("candidates_us", {}).get("attention early launch")
            if steps:
                notes.append(f"{model}: deep prefetch's attention early launch: "
                             f"{'on' if deep.get('attention_early_launch') else 'off'} (a step "
                             + ", ".join(f"{_f(c['us'], '.1f')} us {'with' if c['early_launch'] else 'without'}"
                                         for c in steps) + " in the tuning)")
            l2 = row.get("fast", {}).get("l2_prefetch")
            if l2:
                notes.append(f"{model}: L2 prefetch from attention tuned to {l2['bytes'] / 2**20:.1f} MB a layer "
                             f"in {l2.get('chunk', 0) >> 10} KB requests (a step "
                             + ", ".join(f"{_f(c['us'], '.1f')} us at {c['l2_prefetch_bytes'] / 2**20:.1f} MB"
                                         f"/{c.get('chunk', 0) >> 10} KB"
                                         for c in l2.get("candidates_us", [])) + " in the tuning)")
                if "evict_first" in l2:
                    notes.append(f"{model}: evict-first weight loads kept for: {', '.join(l2['evict_first']) or 'none'}"
                                 " (a step without/with: " + "; ".join(
                                     f"{r.split()[0]} " + "/".join(_f(u, '.1f') for u in us)
                                     for r, us in l2.get("evict_first_us", {}).items()) + ")")
            persistent = row.get("fast", {}).get("persistent")
            if persistent:
                notes.append(f"{model}: {persistent_line(persistent)}")
            if "attention_v2" in row.get("fast", {}):
                notes.append(f"{model}: attention v2 tuned to {row['fast']['attention_v2']['t_per_split']} slots a "
                             f"program (v1: {row['fast']['tuning'].get('attention_t_per_split')})")
    return rows, notes


def prefetch_tiles(suite: Path) -> list[dict]:
    """Each product's tile before (PDL + attention v2's) and after the deep-prefetch tuning: its us per product
    timed alone under PDL, and the whole step's us at that role's turn (where the tuning timed whole steps)."""
    rows = []
    for path in sorted(suite.glob("decode_fast_*.json")):
        for model, row in _load(path).get("models", {}).items():
            fast = row.get("fast", {})
            before = (fast.get("tuning") or {}).get("configs", {})
            after = (fast.get("prefetch") or {}).get("configs", {})
            timed = (fast.get("prefetch") or {}).get("candidates_us", {})
            for role, config in after.items():
                def us(cfg, key):
                    found = [c["us"] for c in timed.get(key, []) if {k: v for k, v in c.items() if k != "us"} == cfg]
                    return found[0] if found else None
                old = {**before.get(role, {}), "prefetch": 1, "early_launch": False}
                stepped = f"{role} in the step" in timed
                rows.append({"model": model, "role": role, "before": old, "after": config,
                             "before_us": us(old, f"{role} prefetch"),
                             "after_us": us({**config, "early_launch": False}, f"{role} prefetch"),
                             "before_step_us": us(old, f"{role} in the step") if stepped else None,
                             "after_step_us": us(config, f"{role} early launch") if stepped else None})
    return rows


def _tile(c: dict) -> str:
    return (f"{c.get('block_n')}x{c.get('block_k')} w{c.get('num_warps')}"
            + (f" split {c['split_k']}" if c.get("split_k", 1) > 1 else "")
            + (f" stages {c['stages']}" if c.get("stages", 1) > 1 else "")
            + (f" prefetch {c['prefetch']}" if c.get("prefetch", 1) > 1 else "")
            + (" early launch" if c.get("early_launch") else ""))


def lab_rows(suite: Path) -> list[dict]:
    rows = []
    for path in sorted(suite.glob("lab_decode/*/lab.json")):
        peak = _load(path).get("peak") or {}
        for r in peak.get("fast") or []:
            classes = {c["name"]: c for c in (r.get("breakdown") or {}).get("classes", [])}
            per_token = lambda name: (1e6 * classes[name]["time_s"] if name in classes else None)  # noqa: E731
            rows.append({"model": path.parent.name, "variant": r["title"], "tokens_per_s": r.get("tokens_per_s"),
                         "share_of_roof": r.get("share_of_memory_roof"), "skipped": r.get("skipped") or "",
                         "matmul_us": per_token("matrix products"), "attention_us": per_token("attention"),
                         "matmul_bytes_per_s": classes.get("matrix products", {}).get("achieved_bytes_per_s"),
                         "same_tokens": r.get("same_tokens"), "compared": r.get("compared_tokens"),
                         "logit_gap_ulps": r.get("logit_gap_ulps")})
    return rows


def _f(x, fmt: str, none: str = "-") -> str:
    return none if x is None else format(x, fmt)


def render(attention: list[dict], decode: list[dict], notes: list[str], lab: list[dict] = (),
           tiles: list[dict] = (), with_attention: bool = True) -> str:
    lines = [] if not with_attention else ["attention alone (llama-1b heads, 22 launches a CUDA graph; each kernel at its fastest slots/program):", "",
             "| context | cache slots | current us (slots) | v2 us (slots) | v2/current |", "|---:|---:|---:|---:|---:|"]
    for r in attention:
        lines.append(f"| {r['context']} | {r['max_seq']} | {_f(r['new_us'], '.2f', 'failed')} ({r['new_t_per_split']}) | "
                     f"{_f(r['v2_us'], '.2f', 'failed')} ({r['v2_t_per_split']}) | {_f(r['v2_over_new'], '.2f')} |")
        if r["v2_errors"]:
            lines.append(f"| | | v2 errors: {'; '.join(r['v2_errors'])} | | |")
    if not attention and with_attention:
        lines.append("| (no attention results: see logs/) | | | | |")
    lines += [""] * with_attention + [
              "decode (fp16, batch 1, context 256, 64 tokens, CUDA graphs, median of alternating runs):", "",
              "| model | variant | tok/s (min-max) | us/token | % of roof | products us (TB/s) | attention us | other us "
              "| between us | same tokens as eager |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in decode:
        same = (f"{r['same_tokens']}/{r['compared']}" if r["compared"] else "-") + (
            f" (first differs at {r['first_divergence']}, eager top-2 gap {_f(r['logit_gap_ulps'], '.1f')} ulp)"
            if r["first_divergence"] is not None else "")
        bw = r["matmul_bytes_per_s"]
        lines.append(f"| {r['model']} | {r['variant']} | {r['tokens_per_s']:,.1f} ({r['tokens_per_s_min_max'][0]:,.1f}-"
                     f"{r['tokens_per_s_min_max'][1]:,.1f}) | {r['us_per_token']:.1f} | {100 * r['share_of_roof']:.1f}% | "
                     f"{_f(r['matmul_us'], ',.0f')} ({_f(bw and bw / 1e12, '.2f')}) | {_f(r['attention_us'], ',.0f')} | "
                     f"{_f(r['other_us'], ',.0f')} | {_f(r['between_us'], ',.0f')} | {same} |")
    if not decode:
        lines.append("| (no decode results: see logs/) | | | | | | | | | |")
    by = {(r["model"], r["variant"]): r for r in decode}
    for model in dict.fromkeys(r["model"] for r in decode):
        old, new = by.get((model, V1_LABEL)), by.get((model, V2_LABEL))
        if old and new:
            lines.append(f"\n{model}: attention v2 {new['us_per_token'] - old['us_per_token']:+.1f} us/token, "
                         f"{100 * new['share_of_roof']:.1f}% of roof vs {100 * old['share_of_roof']:.1f}% (aim 65%)")
        for name, before, after in (("deep prefetch", V2_LABEL, PREFETCH_LABEL),
                                    ("L2 prefetch", PREFETCH_LABEL, L2_LABEL),
                                    ("persistent", PREFETCH_LABEL, PERSIST_LABEL)):
            a, b = by.get((model, before)), by.get((model, after))
            if a and b:
                products = b["matmul_us"] and a["matmul_us"] and b["matmul_us"] - a["matmul_us"]
                lines.append(f"{model}: {name} {b['us_per_token'] - a['us_per_token']:+.1f} us/token "
                             f"(products {_f(products, '+.0f')} us), "
                             f"{100 * b['share_of_roof']:.1f}% of roof vs {100 * a['share_of_roof']:.1f}% (aim 65%)")
    if tiles:
        lines += ["", "products' tiles, PDL + attention v2 (before) and deep prefetch (after), from the tuning: us per "
                  "product alone under PDL (all layers' weights back to back, a CUDA graph), and us per whole step "
                  "at that product's turn (the products before it at their new tiles):", "",
                  "| model | product | before | after | us alone | us a step |", "|---|---|---|---|---:|---:|"]
        for t in tiles:
            lines.append(f"| {t['model']} | {t['role']} | {_tile(t['before'])} | {_tile(t['after'])} | "
                         f"{_f(t['before_us'], '.2f')} -> {_f(t['after_us'], '.2f')} | "
                         f"{_f(t['before_step_us'], '.1f')} -> {_f(t['after_step_us'], '.1f')} |")
    if lab:
        lines += ["", "roofline lab --decode-only (2,048-slot cache, each row timed alone, median of the lab's runs):", "",
                  "| model | row | tok/s | % of roof | products us (TB/s) | attention us | same tokens as eager |",
                  "|---|---|---:|---:|---:|---:|---|"]
        for r in lab:
            if r["skipped"] or r["tokens_per_s"] is None:
                lines.append(f"| {r['model']} | {r['variant']} | {r['skipped'] or 'no figures'} | | | | |")
                continue
            bw = r["matmul_bytes_per_s"]
            same = f"{r['same_tokens']}/{r['compared']}" + (
                f" (eager top-2 gap {r['logit_gap_ulps']:.1f} ulp there)" if r["logit_gap_ulps"] is not None else "")
            lines.append(f"| {r['model']} | {r['variant']} | {r['tokens_per_s']:,.1f} | {100 * r['share_of_roof']:.1f}% | "
                         f"{_f(r['matmul_us'], ',.0f')} ({_f(bw and bw / 1e12, '.2f')}) | {_f(r['attention_us'], ',.0f')} | "
                         f"{same} |")
    for model in dict.fromkeys(r["model"] for r in lab):
        timed = [r for r in lab if r["model"] == model and r["share_of_roof"] is not None and not r["skipped"]]
        if timed:
            best = max(timed, key=lambda r: r["share_of_roof"])
            deep = next((r for r in timed if r["variant"] == PREFETCH_LABEL), None)
            lines.append(f"lab {model}: best row {best['variant']} at {100 * best['share_of_roof']:.1f}% of roof"
                         + (f"; deep prefetch {100 * deep['share_of_roof']:.1f}%" if deep else "")
                         + (" (aim 65%)" if model == "llama-1b" else " (must stay >= 80%)" if model == "llama-8b"
                            else ""))
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines)


def l2_smoke_line(smoke: dict) -> str:
    """gpu_suite.py issue19-l2's first stage (l2_prefetch_smoke.py) in one line."""
    if "skipped" in smoke:
        return f"L2 prefetch smoke: skipped ({smoke['skipped']})"
    read = smoke.get("read_us", {})
    us = lambda k: (f"{read[k]['median']:.1f} us ({read[k]['min']:.1f}-{read[k]['max']:.1f})"  # noqa: E731
                    if k in read else "-")
    return (f"L2 prefetch smoke: 64 MB prefetch ran: {smoke.get('prefetch_64mb_runs', False)}; "
            f"a {smoke.get('read_mb')} MB "
            f"read after an L2 flush {us('without')} without, {us('with')} with a prefetch first in 32 KB requests, "
            f"{us('with 4 KB')} in 4 KB ones (median, min-max); "
            f"attention v2 with prefetch programs bit-identical: {smoke.get('attention_same')}; "
            f"L2 {smoke.get('l2_bytes')} bytes")


def persistent_line(found: dict) -> str:
    """decode_fast.py's persistent tuning (row["fast"]["persistent"]) in one line: the choice and each candidate."""
    def name(c: dict) -> str:
        if c.get("persistent", 0) is None:
            return "three kernels"
        return (f"{'/'.join('x'.join(map(str, c[r])) for r in ('wo', 'w13', 'w2'))} w{c['num_warps']} "
                f"{c['per_sm']}/SM")
    chosen = found.get("config")
    return (f"persistent kernel after attention: chosen {name(chosen) if chosen else 'three kernels'} "
            f"(programs resident a multiprocessor: {found.get('resident_per_sm')}; a step "
            + ", ".join(f"{_f(c['us'], '.1f')} us {name(c)}" for c in found.get("candidates_us", []))
            + " in the tuning)")


def persist_smoke_line(smoke: dict) -> str:
    """gpu_suite.py issue19-persist's first stage (persistent_smoke.py) in one line."""
    if "skipped" in smoke:
        return f"persistent kernel smoke: skipped ({smoke['skipped']})"
    cases = smoke.get("cases", [])
    return (f"persistent kernel smoke: passed {smoke.get('passed')} ({len(cases)} cases, "
            f"{sum(bool(c.get('bit_identical_to_gemv')) for c in cases)} bit-identical to the three gemv kernels, "
            f"largest relative error to torch {max((c.get('torch_rel_error', 0) for c in cases), default=0):.2g}, "
            f"barriers that gave up: {sum(bool(c.get('barrier_gave_up')) for c in cases)})"
            + "".join(f"; {f}" for f in smoke.get("failures", [])))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("issue19_kernels_summary.py: error: give the suite's output folder", file=sys.stderr)
        return 2
    suite = Path(argv[0])
    attention = attention_rows(suite)
    decode, notes = decode_rows(suite)
    lab = lab_rows(suite)
    tiles = prefetch_tiles(suite)
    text = render(attention, decode, notes, lab, tiles, with_attention=bool(list(suite.glob("attention_ctx*"))))
    smoke = _load(suite / "l2_smoke" / "l2_prefetch_smoke.json")
    if smoke:
        text = l2_smoke_line(smoke) + "\n\n" + text
    persist = _load(suite / "persist_smoke" / "persistent_smoke.json")
    if persist:
        text = persist_smoke_line(persist) + "\n\n" + text
    stage_json = [_load(p) for p in sorted(suite.glob("attention_ctx*/decode_attention_context.json"))
                  + sorted(suite.glob("decode_fast_*.json"))]
    meta = {k: next((d[k] for d in stage_json if k in d), None) for k in ("gpu", "torch", "triton")}
    (suite / "summary.json").write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S"), **meta,
                                                    "command": " ".join(sys.argv), "attention": attention,
                                                    "decode": decode, "lab": lab, "tiles": tiles,
                                                    "notes": notes}, indent=1))
    (suite / "summary.md").write_text(text + "\n")
    (suite / "table.md").write_text(text + "\n")  # the same table under the name the issue's drivers give it
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
