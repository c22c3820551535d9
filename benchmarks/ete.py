"""Validation of the execution time estimator (issue 21): predict, then measure, on workloads and what-if pairs.

    PYTHONPATH=src python3 benchmarks/ete.py OUT [--device cuda|cpu] [--rounds N] [--repeats N] [--only NAME,...]

Per workload: `analyze_model` profiles the step (per-op device times and host spans under torch.profiler),
`predict` turns the report into a step time (device and host streams, analyze/predict.py), then the true step time
is measured without any profiler. What-if pairs: the source configuration's report is projected (`predict_report`:
another batch, dtype or sequence length) and the target configuration's true step time is measured (the source's
too, to tell a projection's error from the source's). Every configuration is built once and kept; the sitting runs
in rounds, each profiling every configuration and predicting from that round's report, then timing every
configuration in `--repeats` alternating repeats (a few untimed steps before each). So the predictions' inputs and
the truth sample the same stretch of the host's load, and both take the same statistic: the prediction is the median
over the rounds, the truth the median of all repeats' medians, each with its interquartile range. (One profile and
one truth taken a minute apart on a host whose speed drifts: on the H200 on 2026-12-01 the same llama-tiny forward
gave a profiled host time of 8.6 to 14.4 ms and true times with IQRs up to 35%.) The old estimator (sum of per-op
roofline time + launch overhead, `Summary.predicted_total_s`) is shown beside. The predictor's host models run
on the same reports: `dispatch` (host time per op built from this machine's dispatch costs) and `profiled` (the
profiled steps' own host spans and gaps less the profiler's cost per top-level event, nested aten event and CUDA
runtime call, fitted on this machine over reference loops: ete.md lists them with the fit; when the fit is poor the
profiled column falls back to the dispatch model and says why) and `calibrated` (the profiled one with that cost
scaled per report so that the unchanged step replays at the step the report measured without the profiler; beside
it, measured/true: that measurement over the truth, the floor two measurements of one configuration leave); the
headline column is the predictor's default (`analyze/predict.py` DEFAULT_HOST_MODEL), each has its own ratio and
counts. `benchmarks/ete_offline.py OUT` re-predicts a finished run from its saved reports, no GPU.

What-ifs are compared two ways, both predictions from the source's report only: absolute (the projected target
against the target's true time, the issue's bar) and as a change (the projected target over the same report's
unchanged prediction, against the target's timing over its source's, the two timed back to back in each repeat, their
order alternating). The host's level moved by up to 2x within seconds on the lent H200 (2026-12-01); configurations
timed a second apart share it, a report and a timing a minute apart do not, so the change cancels it where source
and target are both host-bound (not where the change switches the bound: fp32 -> bf16 of a device-bound model).
ete_offline.py adds a third: each repeat's source timing as the report's unprofiled step (the calibrated host model's
anchor). Each what-if's target is also profiled once (first round, `--no-target-profiles` skips it), its report kept
only for the diagnosis: ete_offline.py sets the projection's device and host streams beside the target's own.
Per repeat the load average and CPU clock (`host_load`), and when each configuration was profiled and timed
(`profiled_at_s`, `true_at_s`), are kept to set the host's level against the profiler sessions; a last stage
(`--aftereffect-cycles`, about 10 s on the H200) times one host-bound configuration before and right after a profiler
session and with Python's GC off (`profiler_aftereffect`).

Writes OUT/ete.json and OUT/ete.md, OUT.tgz of both, OUT/reports.partNN.tar.xz (every round's report.json of every
configuration, in parts under `--part-limit-mb`: the next diagnosis needs no GPU) and OUT/traces.tgz (the first
round's profiler traces, gzipped, smallest first within a size budget; left out when the parts need its place: a
device run returns at most 8 files). Sizes: small on a CPU (a few minutes on two cores), realistic on a GPU (about
6 minutes on an H200). Anchor: Habitat (Yu et al., USENIX ATC 2021) reports 11.8% average error predicting training
iteration time across GPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

import msgspec  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roofline.analyze.efficiency import load_table  # noqa: E402
from roofline.analyze.host_costs import REFERENCE_FIELDS, get_host_costs  # noqa: E402
from roofline.analyze.live import analyze_model, make_step, time_steps  # noqa: E402
from roofline.analyze.predict import (DEFAULT_HOST_MODEL, HOST_MODELS, UNCHECKED_HOST_MODEL,  # noqa: E402
                                      profiler_fit_problem)
from roofline.analyze.whatif import predict_report  # noqa: E402
from roofline.device import get_ceilings  # noqa: E402
from roofline.device.host import host_probe_us  # noqa: E402
from roofline.io import atomic_write_text  # noqa: E402

from host_stability import pin_cpus  # noqa: E402
from ete_common import (MAX_OUT_FILES, PART_LIMIT, WHATIF_WITHIN, WITHIN, iqr, median, pack_reports,  # noqa: E402
                        paired, predicted_change, ratio, slug, within)

# Every host model, and the profiled one whatever its profiler-cost fit (the same as `profiled` when the fit is
# sound): a run then shows what the fallback rule kept from users.
MODELS = HOST_MODELS + (UNCHECKED_HOST_MODEL,)
HABITAT = "Habitat (Yu et al., USENIX ATC 2021): 11.8% average error predicting training iteration time across GPUs"


@dataclass
class Built:
    model: torch.nn.Module
    inputs: Any
    loss_fn: Callable | None = None


@dataclass
class Case:
    name: str
    build: Callable[[torch.device, torch.dtype, int, int], Built]
    batch: int
    seq: int
    dtype: str = "float32"
    backward: bool = False
    compiled: bool = False
    family: str = ""
    extra: dict = field(default_factory=dict)


_DT = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _ids(vocab: int, batch: int, seq: int, device: torch.device) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, vocab, (batch, seq), generator=g).to(device)


def llama_tiny(device, dtype, batch, seq) -> Built:
    from roofline.models.llama import CONFIGS, build_llama

    model = build_llama(CONFIGS["llama-tiny"], dtype=dtype, device=device, seed=0)
    return Built(model, (_ids(32000, batch, seq, device),), lambda logits: logits.float().square().mean())


def mlp(device, dtype, batch, seq) -> Built:
    dim = seq
    model = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim),
                                torch.nn.LayerNorm(dim)).to(device=device, dtype=dtype)
    return Built(model, (torch.randn(batch, 64, dim, device=device, dtype=dtype),))


def _tv(name: str, size: int) -> Callable:
    def build(device, dtype, batch, seq) -> Built:
        import torchvision

        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None).to(device=device, dtype=dtype).eval()
        return Built(model, (torch.randn(batch, 3, size, size, device=device, dtype=dtype),),
                     lambda out: out.float().square().mean())
    return build


def _hf(kind: str, layers: int, hidden: int, heads: int) -> Callable:
    def build(device, dtype, batch, seq) -> Built:
        import transformers as t

        torch.manual_seed(0)
        if kind == "gpt2":
            config = t.GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, vocab_size=8192,
                                  n_positions=max(seq, 1024))
            model = t.GPT2LMHeadModel(config)
        elif kind == "bert":
            config = t.BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                                  intermediate_size=4 * hidden, vocab_size=8192, max_position_embeddings=max(seq, 512))
            model = t.BertModel(config)
        else:
            config = t.LlamaConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                                   num_key_value_heads=heads, intermediate_size=4 * hidden, vocab_size=8192,
                                   max_position_embeddings=max(seq, 2048))
            model = t.LlamaForCausalLM(config)
        model = model.to(device=device, dtype=dtype).eval()
        return Built(model, {"input_ids": _ids(8192, batch, seq, device)})
    return build


def cases(device: torch.device) -> tuple[list[Case], list[tuple[str, Case, Case, dict]]]:
    gpu = device.type == "cuda"
    low = "bfloat16"
    s = (512 if gpu else 32)
    b = (8 if gpu else 2)
    hf_size = (12, 768, 12) if gpu else (2, 128, 4)
    workloads = [
        Case("llama-tiny forward", llama_tiny, b, s, family="built-in"),
        Case("llama-tiny forward bf16", llama_tiny, b, s, low, family="built-in"),
        Case("llama-tiny training", llama_tiny, b, s, backward=True, family="built-in"),
        Case("llama-tiny compiled", llama_tiny, b, s, compiled=True, family="built-in"),
        Case("mlp forward", mlp, b, 1024 if gpu else 256, family="built-in"),
        Case("resnet18 forward", _tv("resnet18", 224 if gpu else 64), 32 if gpu else 2, 0, family="torchvision"),
        Case("resnet18 training", _tv("resnet18", 224 if gpu else 64), 32 if gpu else 2, 0, backward=True,
             family="torchvision"),
        Case("mobilenet_v3_small forward", _tv("mobilenet_v3_small", 224 if gpu else 96), 32 if gpu else 2, 0,
             family="torchvision"),
        Case("hf gpt2 forward", _hf("gpt2", *hf_size), b, s, family="huggingface"),
        Case("hf bert forward", _hf("bert", *hf_size), b, s, family="huggingface"),
        Case("hf bert forward fp16", _hf("bert", *hf_size), b, s, "float16", family="huggingface"),
        Case("hf llama forward bf16", _hf("llama", *hf_size), b, s, low, family="huggingface"),
        Case("hf gpt2 training", _hf("gpt2", *hf_size), b, s, backward=True, family="huggingface"),
    ]
    small_b, big_b = 8, 32
    short, long_ = (512, 2048) if gpu else (128, 512)
    whatif = [
        ("llama-tiny batch 8 -> 32", Case("llama-tiny b8", llama_tiny, small_b, 64 if not gpu else 256),
         Case("llama-tiny b32", llama_tiny, big_b, 64 if not gpu else 256), {"batch": big_b}),
        ("hf gpt2 batch 8 -> 32", Case("gpt2 b8", _hf("gpt2", *hf_size), small_b, 64 if not gpu else 256),
         Case("gpt2 b32", _hf("gpt2", *hf_size), big_b, 64 if not gpu else 256), {"batch": big_b}),
        ("llama-tiny fp32 -> bf16", Case("llama-tiny fp32", llama_tiny, b, s),
         Case("llama-tiny bf16", llama_tiny, b, s, low), {"dtype": low}),
        ("mlp fp32 -> bf16", Case("mlp fp32", mlp, b, 1024 if gpu else 256),
         Case("mlp bf16", mlp, b, 1024 if gpu else 256, low), {"dtype": low}),
        (f"llama-tiny seq {short} -> {long_}", Case("llama-tiny short", llama_tiny, 1, short),
         Case("llama-tiny long", llama_tiny, 1, long_), {"seq": long_}),
        (f"hf llama seq {short} -> {long_}", Case("hf llama short", _hf("llama", *hf_size), 1, short),
         Case("hf llama long", _hf("llama", *hf_size), 1, long_), {"seq": long_}),
    ]
    return workloads, whatif


def build(case: Case, device: torch.device):
    built = case.build(device, _DT[case.dtype], case.batch, case.seq)
    if case.backward:
        built.model.train()
    model = torch.compile(built.model) if case.compiled else built.model
    return model, built


@dataclass
class Live:
    """A configuration built once and kept for the whole sitting: each round profiles the same model (a compiled
    one compiles once) and times the same step."""

    case: Case
    model: torch.nn.Module
    built: Built
    inputs: Any
    step: Callable


def prepare(case: Case, device: torch.device) -> Live:
    model, built = build(case, device)
    inputs = built.inputs if isinstance(built.inputs, dict) else tuple(built.inputs)
    step = make_step(model, inputs, backward=case.backward, loss_fn=built.loss_fn)
    return Live(case, model, built, inputs, step)


def profile(live: Live, device, ceilings, iters: int, warmup: int, trace_path: Path | None = None):
    case = live.case
    report = analyze_model(live.model, live.inputs, device=device, ceilings=ceilings, backward=case.backward,
                           loss_fn=live.built.loss_fn, warmup=warmup, iters=iters, workload=case.name,
                           trace_path=trace_path)
    report.extra.update(batch=case.batch, seq=case.seq or None)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds, each profiling every configuration then timing every one (default 3: a median "
                             "of 3 outlives one outlier)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="true-time repeats per round (default 5 GPU, 1 CPU: each what-if's source and target "
                             "are timed back to back in every repeat, and their paired ratio needs several)")
    parser.add_argument("--iters", type=int, default=None,
                        help="steps per true timing (default 12 GPU, 5 CPU: 5 shorter repeats sample the host's "
                             "level more often than 3 of 20 steps, in the same time)")
    parser.add_argument("--profile-iters", type=int, default=None,
                        help="profiled steps per round (default the smaller of --iters and 10)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed steps before each true timing (the previous configuration left other weights "
                             "in the caches and the allocator; default 2 GPU, 1 CPU)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU intra-op threads (default 1 on a CPU: a shared machine's other load then costs a "
                             "step a core, not a stalled thread pool; GPU runs leave torch's default)")
    parser.add_argument("--only", default="", help="comma-separated substrings of workload names to run")
    parser.add_argument("--pin", choices=("free", "node", "core"), default="free",
                        help="the process's CPU affinity for the whole run: free (as started), node (the CPUs local "
                             "to the GPU), core (one of them); benchmarks/host_stability.py measures which steadies "
                             "the host")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="no further round starts unless the last round's duration still fits in this many seconds "
                             "from the start (a device call has a time limit; the results are written either way)")
    parser.add_argument("--no-target-profiles", action="store_true",
                        help="skip profiling each what-if's target once (first round; about 10 s on the H200): its "
                             "report is only kept for the diagnosis (device and host side of a miss), never used to "
                             "predict")
    parser.add_argument("--aftereffect-cycles", type=int, default=None,
                        help="cycles of the last stage (default 3 on a GPU, 0 on a CPU; about 3 s each on the H200): "
                             "a host-bound configuration timed before and right after a profiler session, and with "
                             "Python's GC off: does profiling, or GC, move the host's level?")
    parser.add_argument("--trace-budget-mb", type=float, default=14.0,
                        help="gzipped profiler traces of the first round kept in OUT/traces.tgz up to this size")
    parser.add_argument("--part-limit-mb", type=float, default=PART_LIMIT / 2**20,
                        help="the reports go in OUT/reports.partNN.tar.xz, each under this size (a device run "
                             "returns files of at most 16 MiB)")
    args = parser.parse_args()
    device = torch.device(args.device)
    gpu = device.type == "cuda"
    if args.threads or not gpu:
        torch.set_num_threads(args.threads or 1)
    pinned = pin_cpus(args.pin, device)
    os.sched_setaffinity(0, pinned)
    iters = args.iters or (12 if gpu else 5)
    profile_iters = args.profile_iters or min(iters, 10)
    rounds = args.rounds or 3
    args.repeats = args.repeats or (5 if gpu else 1)
    args.warmup = args.warmup if args.warmup is not None else (2 if gpu else 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="ete-", dir=out))
    began = time.perf_counter()

    def say(what: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f}s] {what}", file=sys.stderr, flush=True)

    ceilings = get_ceilings(device, quick=not gpu)
    host_costs = get_host_costs(device)
    table = load_table()
    workloads, whatif = cases(device)
    if args.only:
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        workloads = [c for c in workloads if any(k in c.name for k in keys)]
        whatif = [w for w in whatif if any(k in w[0] for k in keys)]

    # Every configuration is built once; each round profiles each (a prediction per round and host model), then
    # times each (`--repeats` alternating repeats): the predictions' inputs and the truth are sampled over the same
    # sitting, and each is the median over its rounds or repeats.
    errors: dict[str, str] = {}
    lives: dict[str, Live] = {}
    profiled: dict[str, tuple[Live, dict]] = {}   # key -> (live, change)
    for case in workloads:
        _attempt(errors, case.name, lambda c=case: lives.__setitem__(c.name, prepare(c, device)))
        if case.name in lives:
            profiled[case.name] = (lives[case.name], {})
    for label, src, dst, change in whatif:
        for key, case in ((f"source:{label}", src), (f"whatif:{label}", dst)):
            _attempt(errors, label, lambda k=key, c=case: lives.__setitem__(k, prepare(c, device)))
        if f"source:{label}" in lives and f"whatif:{label}" in lives:
            profiled[f"source:{label}"] = (lives[f"source:{label}"], change)
        else:
            lives.pop(f"source:{label}", None)
            lives.pop(f"whatif:{label}", None)

    predictions: dict[str, list[dict]] = {key: [] for key in profiled}
    first_reports: dict[str, Any] = {}
    samples: dict[str, list[float]] = {key: [] for key in lives}
    sampled_at: dict[str, list[float]] = {key: [] for key in lives}   # seconds from the start, each repeat's end
    probes: dict[str, list[tuple[int, float]]] = {key: [] for key in lives}  # (round, host probe us) per repeat
    profiled_at: dict[str, list[float]] = {}
    targets = {f"whatif:{label}" for label, *_ in whatif if f"whatif:{label}" in lives}
    counts: dict[str, int] = {}
    traces = staging / "traces"
    traces.mkdir()
    done, last_round_s = 0, 0.0
    host_load: list[dict] = []
    for r in range(rounds):
        round_began = time.perf_counter()
        host_load.append(_host_load(r + 1, "start", round_began - began))
        if r > 0 and round_began - began + last_round_s > args.budget_s:
            say(f"stopping after {r} rounds: another ({last_round_s:.0f} s) would pass the {args.budget_s:.0f} s "
                "budget")
            break
        if r == 0 and not args.no_target_profiles:
            # The targets' own reports, for the diagnosis only (a miss's device and host side); no prediction reads
            # them. First, so that the sources' profiles stay as close to the timings as before.
            for key in sorted(targets):
                say(f"round 1/{rounds}: profiling {key} (diagnosis only)")
                try:
                    profile(lives[key], device, ceilings, profile_iters, 2, None).save(
                        staging / f"{slug(key)}.round1.report.json")
                    profiled_at.setdefault(key, []).append(round(time.perf_counter() - began, 2))
                except Exception as exc:  # noqa: BLE001 - a diagnosis aid must not lose the run
                    say(f"could not profile {key}: {type(exc).__name__}: {exc}"[:300])
        for key, (live, change) in profiled.items():
            say(f"round {r + 1}/{rounds}: profiling {key}")
            trace = traces / f"{slug(key)}.json" if r == 0 else None
            try:
                report = profile(live, device, ceilings, profile_iters,
                                 (3 if live.case.compiled else 2) if r == 0 else 1, trace)
            except Exception as exc:  # noqa: BLE001 - one workload failing must not lose the others' figures
                errors.setdefault(key.split(":", 1)[-1], f"{type(exc).__name__}: {exc}"[:300])
                continue
            profiled_at.setdefault(key, []).append(round(time.perf_counter() - began, 2))
            try:  # the files for a later diagnosis: losing them must not lose the figures
                report.save(staging / f"{slug(key)}.round{r + 1}.report.json")
                if trace is not None and trace.exists():
                    _gzip(trace)
            except OSError as exc:
                say(f"could not keep {key}'s report or trace: {exc}")
            try:
                both = {m: predict_report(report, table=table, host_costs=host_costs, batch=change.get("batch"),
                                          seq=change.get("seq"), dtype=change.get("dtype"), host_model=m)
                        for m in MODELS}
                same = ({m: predict_report(report, table=table, host_costs=host_costs, host_model=m) for m in MODELS}
                        if change else None)
            except Exception as exc:  # noqa: BLE001
                errors.setdefault(key.split(":", 1)[-1], f"{type(exc).__name__}: {exc}"[:300])
                continue
            first_reports.setdefault(key, report)
            predictions[key].append({"models": both, "same": same, "report": report, "round": r,
                                     "change": change})
        say(f"round {r + 1}/{rounds}: true step times, {args.repeats} alternating repeats of {len(lives)} steps")
        for i in range(args.repeats):
            host_load.append(_host_load(r + 1, f"repeat {i + 1}", time.perf_counter() - began))
            for key in _timing_order(list(lives), r * args.repeats + i):
                live = lives[key]
                try:
                    for _ in range(args.warmup):
                        live.step()
                    probe = host_probe_us()
                    step_s = time_steps(live.step, device, counts.get(key, iters)).median_s
                    samples[key].append(step_s)
                    probes[key].append((r, probe))
                    sampled_at[key].append(round(time.perf_counter() - began, 2))
                    counts.setdefault(key, _steps_for(step_s, iters))
                except Exception as exc:  # noqa: BLE001
                    errors.setdefault(key.split(":", 1)[-1], f"{type(exc).__name__}: {exc}"[:300])
        host_load.append(_host_load(r + 1, "end", time.perf_counter() - began))
        last_round_s = time.perf_counter() - round_began
        done = r + 1

    cycles = args.aftereffect_cycles if args.aftereffect_cycles is not None else (3 if gpu else 0)
    aftereffect = None
    if cycles > 0:
        # host-bound on the H200 (its level moved most); else the first configuration
        key = next((k for k in ("llama-tiny forward bf16", "mobilenet_v3_small forward") if k in lives),
                   next(iter(lives), None))
        if key:
            say(f"last stage: {key} timed before and after a profiler session, and with GC off ({cycles} cycles)")
            try:
                aftereffect = profiler_aftereffect(lives[key], device, ceilings, cycles, iters, args.warmup,
                                                   lambda: time.perf_counter() - began)
            except Exception as exc:  # noqa: BLE001 - a diagnosis aid must not lose the run
                say(f"aftereffect stage failed: {type(exc).__name__}: {exc}"[:300])

    rows: list[dict] = []
    for case in workloads:
        runs = predictions.get(case.name)
        if not runs:
            rows.append({"workload": case.name, "error": errors.get(case.name, "not profiled")})
            continue
        report = first_reports[case.name]
        rows.append({"workload": case.name, "family": case.family, "dtype": case.dtype,
                     "mode": "training" if case.backward else "forward", "compiled": case.compiled,
                     "batch": case.batch, "seq": case.seq, "ops": len(report.ops), "rounds": len(runs),
                     **_over_rounds(runs),
                     "old_estimator_s": median([x["report"].summary.predicted_total_s for x in runs]),
                     "profiled_step_s": median([x["report"].profiled_step_time.median_s for x in runs
                                                 if x["report"].profiled_step_time]),
                     # the step analyze_model timed without the profiler just before each round's profile: what the
                     # calibrated host model replays the unchanged step at
                     "measured_rounds_s": [x["report"].step_time.median_s for x in runs if x["report"].step_time],
                     "runtime_calls": sum(op.runtime_calls for op in report.ops),
                     "profiled_events": sum(op.profiled_events for op in report.ops),
                     "profiled_top_level": sum(op.profiled_top_level for op in report.ops),
                     "profiled_note": next((n for n in runs[0]["models"]["profiled"].notes
                                            if "profiled host model not used" in n), None),
                     "dominant": [g.name for g in runs[0]["models"][DEFAULT_HOST_MODEL].dominant[:3]]})
        if samples.get(case.name):
            _fill(rows[-1], samples[case.name])
            rows[-1]["true_at_s"] = sampled_at[case.name]
            _fill_host_speed(rows[-1], runs, probes[case.name], table, host_costs)
            rows[-1]["profiled_at_s"] = profiled_at.get(case.name, [])

    pairs: list[dict] = []
    for label, _src, _dst, _change in whatif:
        runs = predictions.get(f"source:{label}")
        if not runs:
            pairs.append({"pair": label, "error": errors.get(label, "not profiled")})
            continue
        p = runs[0]["models"][DEFAULT_HOST_MODEL]
        pairs.append({"pair": label, "rounds": len(runs), **_over_rounds(runs),
                      "source_predicted_s": median([x["same"][DEFAULT_HOST_MODEL].step_time_s for x in runs]),
                      **{f"{m}_source_rounds_s": [x["same"][m].step_time_s for x in runs] for m in MODELS},
                      "bound_changes": len(p.bound_changes), "scenario": p.scenario,
                      "source_profiled_at_s": profiled_at.get(f"source:{label}", []),
                      "source_measured_rounds_s": [x["report"].step_time.median_s for x in runs
                                                   if x["report"].step_time],
                      "target_profiled_at_s": profiled_at.get(f"whatif:{label}", [])})
        if samples.get(f"source:{label}"):
            pairs[-1]["source_true_s"] = statistics.median(samples[f"source:{label}"])
            pairs[-1]["source_true_repeats_s"] = samples[f"source:{label}"]
            pairs[-1]["source_true_at_s"] = sampled_at[f"source:{label}"]
            pairs[-1]["source_ratio"] = ratio(pairs[-1]["source_predicted_s"], pairs[-1]["source_true_s"])
        if samples.get(f"whatif:{label}"):
            _fill(pairs[-1], samples[f"whatif:{label}"])
            pairs[-1]["true_at_s"] = sampled_at[f"whatif:{label}"]
            _fill_change(pairs[-1])
            _fill_host_speed(pairs[-1], runs, probes[f"whatif:{label}"], table, host_costs)

    result = {"device": ceilings.device_name or str(device), "torch": str(torch.__version__),
              "threads": torch.get_num_threads() if not gpu else None, "pin": args.pin, "pinned_cpus": pinned,
              "python": platform.python_version(), "command": " ".join(sys.argv), "date": _now(),
              "rounds": done, "rounds_asked": rounds, "budget_s": args.budget_s, "repeats": args.repeats,
              "iters": iters, "profile_iters": profile_iters,
              "warmup": args.warmup, "steps_per_timing": counts,
              "host_costs": {"dispatch_median_s": statistics.median(host_costs.dispatch_s.values()),
                             "module_call_s": host_costs.module_call_s, "python_per_op_s": host_costs.python_per_op_s,
                             "backward_per_op_s": host_costs.backward_per_op_s, "spread": host_costs.spread,
                             "profiler_per_top_level_s": host_costs.profiler_per_top_level_s,
                             "profiler_per_nested_event_s": host_costs.profiler_per_nested_event_s,
                             "profiler_per_runtime_call_s": host_costs.profiler_per_runtime_call_s,
                             "profiler_per_step_s": host_costs.profiler_per_step_s,
                             "profiler_fit_residual": host_costs.profiler_fit_residual,
                             "profiler_fit_condition": host_costs.profiler_fit_condition,
                             "profiler_references": host_costs.profiler_references,
                             "profiler_reference_fields": list(REFERENCE_FIELDS),
                             "profiler_left_out": host_costs.profiler_left_out,
                             "profiler_fit_problem": profiler_fit_problem(host_costs)},
              # every figure of the host costs (dispatch per op kind included): benchmarks/ete_offline.py re-predicts
              # the saved reports with them exactly
              "host_costs_full": msgspec.to_builtins(host_costs),
              "host_model": DEFAULT_HOST_MODEL,
              "workloads": rows, "whatif": pairs, "summary": _summary(rows, pairs), "anchor": HABITAT,
              "host_load": host_load, "profiler_aftereffect": aftereffect, "wall_s": time.perf_counter() - began}
    atomic_write_text(out / "ete.json", json.dumps(result, indent=1) + "\n")
    atomic_write_text(out / "ete.md", render_md(result))
    _pack(staging, out, args.trace_budget_mb * 2**20, args.part_limit_mb * 2**20)
    print(render_md(result))
    return 0


# After its first repeat (``--iters`` steps), a short step is timed over more steps (up to 10x ``--iters``), so that
# each repeat's median spans at least this long: a 0.15 ms step's 20 samples span 3 ms, and one burst of other load
# on the host moves their median.
MIN_TIMING_S = 0.05


def _steps_for(step_s: float, iters: int) -> int:
    return max(iters, min(10 * iters, round(MIN_TIMING_S / max(step_s, 1e-9))))


AFTEREFFECT_TIMINGS = 5


def profiler_aftereffect(live: Live, device, ceilings, cycles: int, iters: int, warmup: int,
                         clock: Callable[[], float]) -> dict:
    """Per cycle: ``AFTEREFFECT_TIMINGS`` timings of ``live``'s step (``iters`` steps each), a profile of it (as a
    round's), as many timings right after, then as many with Python's GC disabled (re-enabled after, also on error)
    and the number of collections during the enabled ones. The hypotheses of WHATIF_DIAGNOSIS.md: the host stays
    slow after a profiler session (CUPTI or the profiler's memory); GC moves the level. Medians per phase."""
    import gc

    collections = [0]

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections[0] += 1

    def timings() -> list[float]:
        out = []
        for _ in range(AFTEREFFECT_TIMINGS):
            for _ in range(warmup):
                live.step()
            out.append(time_steps(live.step, device, iters).median_s)
        return out

    result: dict = {"config": live.case.name, "timings_per_phase": AFTEREFFECT_TIMINGS, "steps_per_timing": iters,
                    "cycles": []}
    gc.callbacks.append(count)
    try:
        for _ in range(cycles):
            cycle = {"at_s": round(clock(), 2)}
            collections[0] = 0
            cycle["before_s"] = timings()
            profile(live, device, ceilings, 5, 1, None)
            cycle["after_s"] = timings()
            cycle["gc_collections"] = collections[0]
            gc.disable()
            try:
                cycle["gc_off_s"] = timings()
            finally:
                gc.enable()
            result["cycles"].append(cycle)
    finally:
        gc.callbacks.remove(count)
    for phase in ("before_s", "after_s", "gc_off_s"):
        result[f"median_{phase}"] = median([x for c in result["cycles"] for x in c[phase]])
    # per cycle, against the adjacent phase (the level drifts between cycles), then the median over the cycles
    # (pooled medians and the median of per-cycle ratios can disagree in direction when the level moves between
    # cycles: 2026-12-01 17:35, 10.5 ms before and 9.63 after pooled, x1.19 per cycle; both are kept and shown)
    for c in result["cycles"]:
        c["after_over_before"] = ratio(median(c["after_s"]), median(c["before_s"]))
        c["gc_off_over_after"] = ratio(median(c["gc_off_s"]), median(c["after_s"]))
    result["after_over_before"] = median([c["after_over_before"] for c in result["cycles"]])
    result["gc_off_over_after"] = median([c["gc_off_over_after"] for c in result["cycles"]])
    return result


def _timing_order(keys: list[str], repeat: int) -> list[str]:
    """The configurations in ``keys``' order, each what-if's source and target back to back (``prepare`` adds
    them in that order) and, on every other repeat, target first: neither always gets the host's later moment."""
    if repeat % 2 == 0:
        return list(keys)
    out = list(keys)
    for i, key in enumerate(out):
        if key.startswith("source:") and i + 1 < len(out) and out[i + 1] == "whatif:" + key[len("source:"):]:
            out[i], out[i + 1] = out[i + 1], key
    return out


def _fill_host_speed(row: dict, runs: list[dict], probes: list[tuple[int, float]], table, host_costs) -> None:
    """A third comparison, the prediction at the host's speed of each timing: per repeat, the default host model's
    prediction from that round's report with the host's time per op scaled by the host probe taken just before the
    repeat over the one the report took when its step was timed (roofline.device.host.host_probe_us); the median
    over the repeats against the truth's median. Why: on the lent H200 the host's speed moved about 1.8x for tens of
    seconds at a time (benchmarks/results/h200/host_level_probe/), so a report and a timing seconds apart can see
    two hosts. The plain comparison (the issue's bar) stays the headline; this one says how much of a miss is the
    host's speed."""
    by_round = {x["round"]: x for x in runs}
    preds, speeds = [], []
    for r, probe in probes:
        run = by_round.get(r)
        report = run["report"] if run else None
        at = report.step_time.host_probe_us if report is not None and report.step_time else None
        if not at or probe <= 0:
            continue
        change = run.get("change") or {}
        try:
            p = predict_report(report, table=table, host_costs=host_costs, batch=change.get("batch"),
                               seq=change.get("seq"), dtype=change.get("dtype"), host_model=DEFAULT_HOST_MODEL,
                               host_speed=probe / at)
        except Exception:  # noqa: BLE001 - a diagnosis aid must not lose the run's figures
            continue
        preds.append(p.step_time_s)
        speeds.append(probe / at)
    if not preds:
        return
    row["host_speed_predicted_s"] = median(preds)
    row["host_speed_factors"] = [round(x, 3) for x in speeds]
    row["host_probe_us"] = [round(p, 4) for _, p in probes]
    row["report_host_probe_us"] = [round(x["report"].step_time.host_probe_us, 4) for x in runs
                                   if x["report"].step_time and x["report"].step_time.host_probe_us]
    row["host_speed_ratio"] = ratio(row["host_speed_predicted_s"], row.get("true_s"))


def _fill_change(pair: dict) -> None:
    """A what-if's second comparison, the change: the predicted target over the same report's unchanged prediction
    (per round, the median over the rounds; per host model) against the measured target over the source timed back
    to back in each repeat. The host's level, which moves between a report and a timing, mostly cancels in both where
    both are host-bound."""
    pair.update(paired(pair.get("source_true_repeats_s") or [], pair.get("true_repeats_s") or []))
    for model in MODELS:
        change = predicted_change(pair.get(f"{model}_rounds_s") or [], pair.get(f"{model}_source_rounds_s") or [])
        pair[f"{model}_predicted_change"] = change
        pair[f"{model}_change_ratio"] = ratio(change, pair.get("measured_change"))
    pair["predicted_change"] = pair[f"{DEFAULT_HOST_MODEL}_predicted_change"]
    pair["change_ratio"] = pair[f"{DEFAULT_HOST_MODEL}_change_ratio"]


def _host_load(round_: int, phase: str, at_s: float) -> dict:
    """The host's load average and mean CPU clock at a round's start and end (the H200 host's speed moved by up to 2x
    within seconds on 2026-12-01: the next diagnosis can set these beside the steps)."""
    import os

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    mhz = None
    try:
        clocks = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("cpu MHz")]
        mhz = statistics.mean(clocks) if clocks else None
    except (OSError, ValueError):
        pass
    return {"round": round_, "phase": phase, "at_s": round(at_s, 1), "loadavg": list(load) if load else None,
            "cpu_mhz_mean": mhz}


def _attempt(errors: dict[str, str], name: str, fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - one workload failing must not lose the others' figures
        errors.setdefault(name, f"{type(exc).__name__}: {exc}"[:300])


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _over_rounds(runs: list[dict]) -> dict:
    """Each host model's prediction as the median over the rounds (the truth's statistic over its repeats), with
    the rounds' own figures and their spread; the headline fields are the default host model's."""
    out: dict = {}
    for model in MODELS:
        ps = [x["models"][model] for x in runs]
        steps = [p.step_time_s for p in ps]
        mid = statistics.median(steps)
        nearest = min(ps, key=lambda p: abs(p.step_time_s - mid))
        out.update({f"{model}_predicted_s": mid, f"{model}_host_s": median([p.host_time_s for p in ps]),
                    f"{model}_bound": nearest.bound, f"{model}_rounds_s": steps,
                    f"{model}_host_rounds_s": [p.host_time_s for p in ps],
                    f"{model}_round_spread_s": iqr(steps)})
    ps = [x["models"][DEFAULT_HOST_MODEL] for x in runs]
    out.update({"predicted_s": out[f"{DEFAULT_HOST_MODEL}_predicted_s"], "low_s": median([p.low_s for p in ps]),
                "high_s": median([p.high_s for p in ps]), "bound": out[f"{DEFAULT_HOST_MODEL}_bound"],
                "host_s": out[f"{DEFAULT_HOST_MODEL}_host_s"],
                "device_s": median([p.device_time_s for p in ps]),
                "round_spread_s": out[f"{DEFAULT_HOST_MODEL}_round_spread_s"],
                "method": ps[0].method})
    return out


def _gzip(path: Path) -> None:
    import gzip
    import shutil

    with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()


def _pack(staging: Path, out: Path, trace_budget: float, part_limit: float = PART_LIMIT) -> None:
    """OUT/reports.partNN.tar.xz: every round's report.json, each part under ``part_limit`` bytes (a device run
    returns at most 8 files of at most 16 MiB); OUT/traces.tgz: the first round's gzipped traces, smallest first, up
    to ``trace_budget`` bytes, left out when the reports need its place among OUT's ``MAX_OUT_FILES`` files (ete.json,
    ete.md, the command's log); OUT.tgz (beside OUT): ete.json and ete.md. The staging folder is removed."""
    import shutil

    reports = sorted(staging.glob("*.report.json"))
    slots = MAX_OUT_FILES - 3
    parts, left = pack_reports(reports, out, part_limit, max_parts=slots)
    if len(parts) == slots:
        print(f"reports in {len(parts)} parts: no place left for traces.tgz", file=sys.stderr)
    if left:
        print(f"{len(left)} reports over the parts' budget, left out (listed in {parts[-1].name})", file=sys.stderr)
    kept, skipped, total = [], [], 0
    for path in sorted((staging / "traces").glob("*.gz"), key=lambda p: p.stat().st_size):
        if total + path.stat().st_size <= min(trace_budget, part_limit):
            kept.append(path)
            total += path.stat().st_size
        else:
            skipped.append(path.name)
    if len(parts) < slots:
        with tarfile.open(out / "traces.tgz", "w") as tar:
            for path in kept:
                tar.add(path, arcname=f"traces/{path.name}")
            if skipped:
                note = staging / "traces" / "NOT_KEPT.txt"
                note.write_text("over the size budget: " + ", ".join(skipped) + "\n")
                tar.add(note, arcname="traces/NOT_KEPT.txt")
    with tarfile.open(str(out) + ".tgz", "w:gz") as tar:
        for name in ("ete.json", "ete.md"):
            tar.add(out / name, arcname=f"{out.name}/{name}")
    shutil.rmtree(staging, ignore_errors=True)


def _fill(row: dict, values: list[float]) -> None:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else [ordered[0]] * 3
    row["true_s"] = statistics.median(ordered)
    row["true_repeats_s"] = list(values)
    row["true_spread_s"] = q[2] - q[0]
    row["ratio"] = ratio(row.get("predicted_s"), row["true_s"])
    if "old_estimator_s" in row:
        row["old_ratio"] = ratio(row["old_estimator_s"], row["true_s"])
    for model in MODELS:
        row[f"{model}_ratio"] = ratio(row.get(f"{model}_predicted_s"), row["true_s"])


def _summary(rows: list[dict], pairs: list[dict]) -> dict:
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    old = [r["old_ratio"] for r in rows if r.get("old_ratio")]
    what = [p["ratio"] for p in pairs if p.get("ratio")]
    changes = [p["change_ratio"] for p in pairs if p.get("change_ratio")]
    per_model = {}
    for model in MODELS:
        mr = [r[f"{model}_ratio"] for r in rows if r.get(f"{model}_ratio")]
        mw = [p[f"{model}_ratio"] for p in pairs if p.get(f"{model}_ratio")]
        mc = [p[f"{model}_change_ratio"] for p in pairs if p.get(f"{model}_change_ratio")]
        per_model[model] = {
            "change_pairs": len(mc), "change_within": sum(within(r, WHATIF_WITHIN) for r in mc),
            "within_15pct": sum(WITHIN[0] <= r <= WITHIN[1] for r in mr),
            "mean_abs_error": statistics.mean(abs(r - 1) for r in mr) if mr else None,
            "whatif_within": sum(WHATIF_WITHIN[0] <= r <= WHATIF_WITHIN[1] for r in mw),
            "whatif_mean_abs_error": statistics.mean(abs(r - 1) for r in mw) if mw else None,
        }
    return {
        "host_models": per_model,
        "workloads": len(ratios), "within_15pct": sum(WITHIN[0] <= r <= WITHIN[1] for r in ratios),
        "mean_abs_error": statistics.mean(abs(r - 1) for r in ratios) if ratios else None,
        "old_within_15pct": sum(WITHIN[0] <= r <= WITHIN[1] for r in old),
        "old_mean_abs_error": statistics.mean(abs(r - 1) for r in old) if old else None,
        "whatif_pairs": len(what), "whatif_within": sum(WHATIF_WITHIN[0] <= r <= WHATIF_WITHIN[1] for r in what),
        "whatif_mean_abs_error": statistics.mean(abs(r - 1) for r in what) if what else None,
        "change_pairs": len(changes), "change_within": sum(within(r, WHATIF_WITHIN) for r in changes),
        "change_mean_abs_error": statistics.mean(abs(r - 1) for r in changes) if changes else None,
        **_host_speed_summary(rows, pairs),
    }


def _host_speed_summary(rows: list[dict], pairs: list[dict]) -> dict:
    hr = [r["host_speed_ratio"] for r in rows if r.get("host_speed_ratio")]
    hp = [p["host_speed_ratio"] for p in pairs if p.get("host_speed_ratio")]
    return {"host_speed_workloads": len(hr), "host_speed_within_15pct": sum(WITHIN[0] <= r <= WITHIN[1] for r in hr),
            "host_speed_mean_abs_error": statistics.mean(abs(r - 1) for r in hr) if hr else None,
            "host_speed_pairs": len(hp),
            "host_speed_whatif_within": sum(WHATIF_WITHIN[0] <= r <= WHATIF_WITHIN[1] for r in hp),
            "host_speed_whatif_mean_abs_error": statistics.mean(abs(r - 1) for r in hp) if hp else None}


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1e3:.3g}"


def _r(x: float | None) -> str:
    return f"{x:.2f}" if x else "—"


def _round_spread(row: dict) -> str:
    return f"; ±{_ms(row['round_spread_s'])}" if row.get("rounds", 1) > 1 and "round_spread_s" in row else ""


def _host_speed_line(result: dict) -> str:
    """The third comparison (``_fill_host_speed``), said for what it is, with each row's ratio."""
    s = result["summary"]
    err = s.get("host_speed_mean_abs_error")
    werr = s.get("host_speed_whatif_mean_abs_error")
    per = "; ".join(f"{x.get('workload') or x.get('pair')} {_r(x.get('host_speed_ratio'))}"
                    for x in result["workloads"] + result["whatif"] if x.get("host_speed_ratio"))
    return (f"At each timing's host speed (not the issue's bar: the prediction of each repeat from its round's report "
            f"with the host's time per op scaled by a probe of the interpreter and dispatcher taken just before that "
            f"timing over the one the report took, roofline.device.host.host_probe_us; median over the repeats "
            f"against the truth): {s['host_speed_within_15pct']} of {s['host_speed_workloads']} workloads within "
            f"0.85-1.15" + (f" (mean |error| {err:.1%})" if err is not None else "")
            + f"; what-ifs {s['host_speed_whatif_within']} of {s['host_speed_pairs']} within 0.8-1.25"
            + (f" (mean |error| {werr:.1%})" if werr is not None else "") + f". Per row: {per}.")


def _profiler_fit_line(hc: dict) -> str:
    line = (f"Profiler cost measured here: {hc.get('profiler_per_top_level_s', 0.0) * 1e6:.2f} us per top-level "
            f"event, {hc.get('profiler_per_nested_event_s', hc.get('profiler_per_event_s', 0.0)) * 1e6:.2f} us per "
            f"nested aten event, {hc['profiler_per_runtime_call_s'] * 1e6:.2f} us per CUDA runtime call "
            f"(non-negative least squares of relative errors over the reference loops below; RMS relative residual "
            f"{hc['profiler_fit_residual']:.0%}, condition number {hc.get('profiler_fit_condition', 0.0):.3g})")
    if hc.get("profiler_per_step_s") is not None:
        line += (f"; and {hc['profiler_per_step_s'] * 1e6:.2f} us per profiled step before its first op (profiled "
                 "steps of two tiny adds: the first add's gap after the step began less the second's)")
    problem = hc.get("profiler_fit_problem")
    return line + (f". Profiled host model not used: {problem}; its column is the dispatch model's" if problem
                   else ". The profiled host model uses it")


def _measured_ratio(row: dict) -> float | None:
    """The reports' own step time measured without the profiler (median over the rounds) over the true time: two
    measurements of one configuration in one sitting, the floor under any model's error on this host."""
    return ratio(median(row.get("measured_rounds_s") or []), row.get("true_s"))


def render_md(result: dict) -> str:
    s = result["summary"]
    head = result.get("host_model", "dispatch")
    hc = result.get("host_costs", {})
    rounds = result.get("rounds", 1)
    lines = [f"# ETE validation on {result['device']} (torch {result['torch']})", "",
             f"{rounds} rounds, each profiling every configuration ({result.get('profile_iters', result['iters'])} "
             f"profiled steps) then timing every one ({result['repeats']} alternating repeats of {result['iters']} "
             f"steps the first time, then enough to span {MIN_TIMING_S * 1e3:.0f} ms, at most {10 * result['iters']}; "
             f"{result.get('warmup', 0)} untimed steps before each); true = median of the "
             f"{rounds * result['repeats']} repeats' medians, no profiler; spread = interquartile range over the "
             "repeats; predicted = median over the rounds' predictions (±: their interquartile range). Host models: "
             "dispatch = host time per op from this machine's dispatch costs; profiled = the profiled steps' host "
             "spans and gaps less the profiler's cost fitted over reference loops; calibrated = the same, that cost "
             "scaled per report so that the unchanged step replays at the step time the report measured without the "
             "profiler just before profiling (measured/true: that measurement's median over the rounds over the true "
             f"time); predicted = the default host model ({head})."
             + (f" The process ran pinned ({result['pin']}) to CPUs {result['pinned_cpus']}."
                if result.get("pin", "free") != "free" else "")
             + (f" Stopped after {rounds} of {result['rounds_asked']} rounds: another would have passed the "
                f"{result['budget_s']:.0f} s budget." if result.get("rounds_asked", rounds) > rounds else ""), "",
             "| workload | bound | predicted ms (range; ± over rounds) | true ms (spread) | predicted/true | "
             "profiled step ms | dispatch host ms | profiled host ms | dispatch/true | profiled/true | "
             "calibrated/true | measured/true | ops | runtime calls | old estimator/true |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["workloads"]:
        if "error" in r:
            lines.append(f"| {r['workload']} | error: {r['error']} | | | | | | | | | | | | | |")
            continue
        lines.append(f"| {r['workload']} | {r['bound']} | {_ms(r['predicted_s'])} ({_ms(r['low_s'])}-"
                     f"{_ms(r['high_s'])}{_round_spread(r)}) | "
                     f"{_ms(r.get('true_s'))} (±{_ms(r.get('true_spread_s'))}) | "
                     f"{_r(r.get('ratio'))} | {_ms(r.get('profiled_step_s'))} | {_ms(r.get('dispatch_host_s'))} | "
                     f"{_ms(r.get('profiled_host_s'))} | "
                     f"{_r(r.get('dispatch_ratio'))} | {_r(r.get('profiled_ratio'))} | "
                     f"{_r(r.get('calibrated_ratio'))} | {_r(_measured_ratio(r))} | {r.get('ops', '—')} | "
                     f"{r.get('runtime_calls', '—')} | {_r(r.get('old_ratio'))} |")
    lines += ["", "| what-if | predicted ms (range; ± over rounds) | measured ms (spread) | predicted/measured | "
                  "dispatch/measured | profiled/measured | calibrated/measured | ops changing bound | "
                  "source predicted/measured |",
              "|---|---|---|---|---|---|---|---|---|"]
    for p in result["whatif"]:
        if "error" in p:
            lines.append(f"| {p['pair']} | error: {p['error']} | | | | | | | |")
            continue
        lines.append(f"| {p['pair']} | {_ms(p['predicted_s'])} ({_ms(p['low_s'])}-{_ms(p['high_s'])}"
                     f"{_round_spread(p)}) | "
                     f"{_ms(p.get('true_s'))} (±{_ms(p.get('true_spread_s'))}) | {_r(p.get('ratio'))} | "
                     f"{_r(p.get('dispatch_ratio'))} | {_r(p.get('profiled_ratio'))} | "
                     f"{_r(p.get('calibrated_ratio'))} | {p['bound_changes']} | "
                     f"{_r(p.get('source_ratio'))} |")
    if any(p.get("measured_change") for p in result["whatif"]):
        lines += ["", "What-ifs, second comparison, the change: predicted = the projected target over the same "
                      "report's unchanged prediction (per round; median over the rounds); measured = the target's "
                      "step over its source's, timed back to back in each repeat (order alternating; median over the "
                      "repeats, ± their interquartile range). The host's level, which moves between a report and a "
                      "timing, mostly cancels in both where source and target are both host-bound (not where the "
                      "change switches the bound); the first table's absolute comparison keeps it. Both predictions "
                      "come from the source's report only; `ete_offline.py` adds a third comparison.", "",
                  "| what-if | predicted change | measured change (spread) | predicted/measured | "
                  "dispatch | profiled | calibrated | source ms at its profile (rounds) | source ms timed |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for p in result["whatif"]:
            if "error" in p or not p.get("measured_change"):
                continue
            lines.append(f"| {p['pair']} | {_r(p.get('predicted_change'))} | {_r(p['measured_change'])} "
                         f"(±{p.get('measured_change_spread', 0.0):.2f}) | {_r(p.get('change_ratio'))} | "
                         f"{_r(p.get('dispatch_change_ratio'))} | {_r(p.get('profiled_change_ratio'))} | "
                         f"{_r(p.get('calibrated_change_ratio'))} | "
                         f"{', '.join(_ms(x) for x in p.get('source_measured_rounds_s', [])) or '—'} | "
                         f"{_ms(p.get('source_true_s'))} |")
    mae = s["mean_abs_error"]
    lines += ["", f"Within 0.85-1.15: {s['within_15pct']} of {s['workloads']} workloads (old estimator: "
                  f"{s['old_within_15pct']}); mean |error| {mae:.1%}" if mae is not None else "no workload ran",
              f"What-if within 0.8-1.25: {s['whatif_within']} of {s['whatif_pairs']} pairs"
              + (f"; mean |error| {s['whatif_mean_abs_error']:.1%}" if s["whatif_mean_abs_error"] is not None else "")
              + (f" (absolute: predicted target against the target timed; the change, predicted against the paired "
                 f"timings: {s['change_within']} of {s['change_pairs']} within 0.8-1.25"
                 + (f", mean |error| {s['change_mean_abs_error']:.1%}" if s.get("change_mean_abs_error") is not None
                    else "") + ")" if s.get("change_pairs") else "")]
    for model, m in s.get("host_models", {}).items():
        err = f"; mean |error| {m['mean_abs_error']:.1%}" if m["mean_abs_error"] is not None else ""
        werr = f" (mean |error| {m['whatif_mean_abs_error']:.1%})" if m["whatif_mean_abs_error"] is not None else ""
        lines.append(f"Host model {model}: {m['within_15pct']} of {s['workloads']} workloads within 0.85-1.15{err}; "
                     f"what-ifs within 0.8-1.25: {m['whatif_within']} of {s['whatif_pairs']}{werr}"
                     + (f"; changes within 0.8-1.25: {m['change_within']} of {m['change_pairs']}"
                        if m.get("change_pairs") else ""))
    if s.get("host_speed_workloads"):
        lines += ["", _host_speed_line(result)]
    if hc.get("profiler_references"):
        lines += ["", _profiler_fit_line(hc), "",
                  "| profiler reference | plain us | profiled us | added us | top-level | nested | runtime calls | "
                  "device us | fit/added |", "|---|---|---|---|---|---|---|---|---|"]
        for name, r in hc["profiler_references"].items():
            added = r[1] - r[0]
            top = r[4] if len(r) > 4 else 0.0
            fitted = (top * hc.get("profiler_per_top_level_s", 0.0)
                      + (r[2] - top) * hc.get("profiler_per_nested_event_s", hc.get("profiler_per_event_s", 0.0))
                      + r[3] * hc.get("profiler_per_runtime_call_s", 0.0))
            left = hc.get("profiler_left_out", {}).get(name)
            lines.append(f"| {name} | {r[0] * 1e6:.2f} | {r[1] * 1e6:.2f} | {added * 1e6:+.2f} | {top:.3g} | "
                         f"{r[2] - top:.3g} | {r[3]:.3g} | {(r[5] if len(r) > 5 else 0.0) * 1e6:.2f} | "
                         + (f"left out: {left} |" if left else f"{fitted / added:.2f} |" if added > 0 else "— |"))
        lines.append("")
    after = result.get("profiler_aftereffect")
    if after and after.get("cycles"):
        lines += [f"Profiler aftereffect ({after['config']}, {len(after['cycles'])} cycles of "
                  f"{after['timings_per_phase']} timings of {after['steps_per_timing']} steps per phase): median "
                  f"{_ms(after['median_before_s'])} ms before a profiler session, {_ms(after['median_after_s'])} ms "
                  f"right after, {_ms(after['median_gc_off_s'])} ms with Python's GC off (per cycle, median over the "
                  f"cycles: after/before x{after['after_over_before']:.2f}, GC off/after "
                  f"x{after['gc_off_over_after']:.2f}; per cycle, before -> after ms: "
                  + ", ".join(f"{_ms(median(c['before_s']))} -> {_ms(median(c['after_s']))}" for c in after["cycles"])
                  + "); "
                  f"{sum(c['gc_collections'] for c in after['cycles'])} collections in the enabled timings.", ""]
    lines += [f"Anchor: {result['anchor']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
