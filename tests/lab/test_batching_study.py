import json
import math

import pytest
import torch

from roofline.lab.data import load_wikitext
from roofline.lab.generate import generate
from roofline.lab.model import Fixes, configure
from roofline.lab.studies import batching
from roofline.lab.studies.batching_engine import SlotEngine
from roofline.lab.studies.batching_report import markdown as batching_report_markdown
from roofline.lab.studies.batching_report import write_batching
from roofline.lab.studies.batching_schedulers import (Request, Workload, make_requests, modelled, serve_continuous,
                                                      serve_static, summarize)

# A step costs 10 ms whatever its size (a launch-bound GPU step), so scheduling is deterministic.
FLAT = modelled(lambda kind, rows, positions: 0.01)
PROMPTS = [[5, 17, 33, 2, 9, 41, 7], [8, 3, 99], [101, 12, 250, 4, 4, 60], [77, 78, 79, 80, 81, 82, 83, 84, 85],
           [300, 301], [9, 8, 7, 6, 5, 4, 3, 2, 1, 11, 12]]
NEW = [5, 2, 7, 3, 6, 4]
NEVER = 511  # an end-of-text id these requests never reach (the counts below check it)


def _requests(arrivals):
    return [Request(i, tuple(p), n, t) for i, (p, n, t) in enumerate(zip(PROMPTS, NEW, arrivals))]


def _reference(model, requests, eos_id):
    configure(model, Fixes.all())
    return {r.id: generate(model, [list(r.prompt)], r.max_new, eos_id, Fixes.all())[0] for r in requests}


@pytest.mark.parametrize("scheduler", ["static", "continuous"])
def test_every_request_gets_the_tokens_of_its_own_greedy_generation(tiny_model, scheduler):
    requests = _requests([0.0, 0.001, 0.002, 0.035, 0.036, 0.05])
    free_run = _reference(tiny_model, requests, eos_id=0)
    # An end-of-text id that request 2 produces as its third token, so one request stops early.
    eos_id = free_run[2][2]
    reference = _reference(tiny_model, requests, eos_id)
    assert len(reference[2]) == 3 and any(len(t) == r.max_new for t, r in zip(reference.values(), requests))
    with SlotEngine(tiny_model, 3, 24) as engine:
        if scheduler == "static":
            run = serve_static(engine, requests, eos_id, timeout_s=0.02, timer=FLAT)
        else:
            run = serve_continuous(engine, requests, eos_id, timer=FLAT)
    assert run.complete
    assert sorted(s.id for s in run.served) == [r.id for r in requests]
    assert {s.id: s.tokens for s in run.served} == reference


def _quick_cpu_model():
    """The model of `--study batching --quick` on CPU (llama-tiny cut to batching.QUICK_CPU's shape)."""
    import dataclasses

    from roofline.models.llama import CONFIGS, build_llama

    config = dataclasses.replace(CONFIGS["llama-tiny"], **dict(batching.QUICK_CPU.config_overrides))
    return build_llama(config, dtype=torch.float32)


def _serve(engine, scheduler, requests, eos_id, **kwargs):
    if scheduler == "static":
        return serve_static(engine, requests, eos_id, timeout_s=0.02, **kwargs)
    return serve_continuous(engine, requests, eos_id, **kwargs)


@pytest.mark.parametrize("scheduler", ["static", "continuous"])
def test_the_static_shape_decode_step_gives_the_tokens_of_the_eager_one(scheduler):
    """What a CUDA graph captures (keys read over all max_len slots, inputs in fixed buffers, mask and positions
    built on the device), run eagerly on CPU: every request gets the same tokens, step for step."""
    model = _quick_cpu_model()
    requests = _requests([0.0, 0.001, 0.002, 0.035, 0.036, 0.05])
    runs = {}
    for mode in ("eager", "static"):
        with SlotEngine(model, 3, 24, decode=mode) as engine:
            assert engine.decode_mode == mode
            runs[mode] = _serve(engine, scheduler, requests, NEVER, timer=FLAT)
    eager, static = runs["eager"], runs["static"]
    assert static.complete and len(static.served) == 6
    assert {s.id: s.tokens for s in static.served} == {s.id: s.tokens for s in eager.served}
    assert [(st.kind, st.rows) for st in static.steps] == [(st.kind, st.rows) for st in eager.steps]
    # Rows of different contexts in one step: the mask, not the keys read, tells them apart.
    assert max(st.rows for st in static.steps if st.kind == "decode") == 3


def test_a_failed_graph_capture_falls_back_to_eager_decoding_and_the_study_says_so(tiny_model, wikitext_dir,
                                                                                   monkeypatch):
    def no_graphs():
        raise RuntimeError("capture is not supported here")

    monkeypatch.setattr(torch.cuda, "graph_pool_handle", no_graphs)

    class Graphed(SlotEngine):  # CPU has no CUDA graphs: the mode is forced, the capture fails at once
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "decode": "static"})
            self.decode_mode = "graphed"

    with Graphed(tiny_model, 2, 16) as engine:
        first = engine.decode([5, 9], [0, 0], [0, 0]).tolist()
        assert engine.decode_mode == "eager" and "RuntimeError: capture is not supported here" in engine.fallback
    with SlotEngine(tiny_model, 2, 16, decode="eager") as engine:
        assert engine.decode([5, 9], [0, 0], [0, 0]).tolist() == first
    monkeypatch.setattr(batching, "SlotEngine", Graphed)
    settings = batching.Settings(slots=2, workload=Workload(4, (3, 6), (2, 3), seed=1), rate_fractions=(1.0,),
                                 repeats=1, timeout_steps=4, profile_skip=0, profile_steps=2)
    result = batching.measure(tiny_model, load_wikitext(wikitext_dir), settings, timer=FLAT, profile=False)
    assert len(result["runs"]) == 2 and result["decode"]["mode"] == "eager" and result["decode"]["graphs"] == 0
    assert any(n.startswith("CUDA graphs NOT used: capturing the 1-row decode step") for n in result["notes"])
    markdown = batching_report_markdown(result)
    assert "Decode steps: eager, NOT CUDA-graphed" in markdown and "**CUDA graphs NOT used" in markdown


def test_the_method_states_how_decode_steps_ran_and_what_static_shapes_read(tiny_model, wikitext_dir):
    settings = batching.Settings(slots=2, workload=Workload(4, (3, 6), (2, 3), seed=1), rate_fractions=(1.0,),
                                 repeats=1, timeout_steps=4, profile_skip=0, profile_steps=2, decode="static")
    result = batching.measure(tiny_model, load_wikitext(wikitext_dir), settings, timer=FLAT, profile=False)
    decode = result["decode"]
    assert decode["mode"] == "static" and decode["fallback"] is None and result["settings"]["decode"] == "static"
    # 2 layers x (k, v) x 2 slots x 2 KV heads x 9 positions x 16 features x 4 bytes.
    assert decode["full_step_kv_bytes"] == 2 * 2 * 2 * 2 * 9 * 16 * 4
    assert "reads all 9 slots" in result["method"]["decode"] and "run eagerly" in result["method"]["decode"]
    graphed = batching.decode_method({**decode, "mode": "graphed", "graphs": 2, "capture_s": 1.25})
    assert "one graph per row count (1..2" in graphed and "captured" in graphed and "in 1.25 s" in graphed


def test_the_model_keeps_its_own_kv_cache_and_modules_after_the_engine(tiny_model):
    from roofline.lab.model import LlamaAttention

    configure(tiny_model, Fixes())
    tiny_model.setup_caches(2, 32)
    before = [layer.attention.kv_cache for layer in tiny_model.layers]
    with pytest.raises(ValueError, match="do not fit"):
        with SlotEngine(tiny_model, 2, 16) as engine:
            engine.prefill(0, [list(range(1, 20))], 0)
    assert [layer.attention.kv_cache for layer in tiny_model.layers] == before
    assert all(type(layer.attention) is LlamaAttention for layer in tiny_model.layers)


def test_continuous_batching_reuses_freed_slots_and_never_exceeds_them(tiny_model):
    requests = _requests([0.0] * 6)
    with SlotEngine(tiny_model, 2, 24) as engine:
        run = serve_continuous(engine, requests, NEVER, timer=FLAT)
    assert run.complete and len(run.served) == 6
    assert {s.slot for s in run.served} == {0, 1}
    for slot in (0, 1):
        mine = sorted((s for s in run.served if s.slot == slot), key=lambda s: s.first_token_s)
        assert all(a.finish_s <= b.first_token_s for a, b in zip(mine, mine[1:]))
    assert max(step.rows for step in run.steps if step.kind == "decode") == 2
    assert [len(s.tokens) for s in sorted(run.served, key=lambda s: s.id)] == NEW


def test_padding_waste_is_counted_per_position(tiny_model):
    """Prompts of 7, 3 and 6 tokens, outputs of 5, 2 and 7, all at t=0, three slots, no end-of-text."""
    requests = _requests([0.0, 0.0, 0.0])[:3]
    with SlotEngine(tiny_model, 3, 24) as engine:
        static = summarize(serve_static(engine, requests, NEVER, timeout_s=1.0, timer=FLAT))
        continuous = summarize(serve_continuous(engine, requests, NEVER, timer=FLAT))
    # Static: one prefill of 3 x 7 positions (5 of them padding); 6 decode steps of 3 rows, live rows 3,2,2,2,1,1.
    assert static["by_kind"]["prefill"] == {**static["by_kind"]["prefill"], "steps": 1, "computed_tokens": 21,
                                            "wasted_tokens": 5}
    assert static["by_kind"]["decode"]["steps"] == 6
    assert static["by_kind"]["decode"]["computed_tokens"] == 18 and static["by_kind"]["decode"]["wasted_tokens"] == 7
    # Continuous: three unpadded prefills; request 1 (slot 1) leaves after one decode step, but rows 0-2 still run
    # while request 2 (slot 2) decodes: holes 0,1,1,1,2,2.
    assert continuous["by_kind"]["prefill"]["wasted_tokens"] == 0
    assert continuous["by_kind"]["prefill"]["computed_tokens"] == 16
    assert continuous["by_kind"]["decode"]["computed_tokens"] == 18
    assert continuous["by_kind"]["decode"]["wasted_tokens"] == 7
    assert static["generated_tokens"] == continuous["generated_tokens"] == 14


def test_static_batching_waits_for_a_full_batch_or_its_timeout(tiny_model):
    with SlotEngine(tiny_model, 2, 24) as engine:
        late = serve_static(engine, _requests([0.0, 1.0])[:2], NEVER, timeout_s=0.5, timer=FLAT)
        soon = serve_static(engine, _requests([0.0, 0.2])[:2], NEVER, timeout_s=0.5, timer=FLAT)
    first = {s.id: s.first_token_s for s in late.served}
    # Nothing else is coming, but a server cannot know that: the second request also waits out the timeout.
    assert first[0] == pytest.approx(0.51) and first[1] == pytest.approx(1.51)
    assert [s.first_token_s for s in soon.served] == pytest.approx([0.21, 0.21])
    assert soon.steps[0].rows == 2


def test_requests_are_the_same_at_every_rate(wikitext_dir):
    corpus = load_wikitext(wikitext_dir)
    workload = Workload(20, (4, 30), (2, 9), seed=3)
    slow, fast = make_requests(corpus, workload, 1.0), make_requests(corpus, workload, 4.0, vocab_size=50)
    assert [len(r.prompt) for r in slow] == [len(r.prompt) for r in fast]
    assert [r.arrival_s / 4 for r in slow] == pytest.approx([r.arrival_s for r in fast])
    assert all(i < 50 for r in fast for i in r.prompt) and any(i >= 50 for r in slow for i in r.prompt)
    assert len({len(r.prompt) for r in slow}) > 5 and all(2 <= r.max_new <= 9 for r in slow)


def _point(rate, p99, tps):
    stat = lambda v: {"median": v, "min": v, "max": v}  # noqa: E731
    return {"rate_per_s": rate, "runs": 1, "latency_s_p99": stat(p99), "throughput_tokens_per_s": stat(tps)}


def test_throughput_is_compared_at_the_static_schedulers_p99_latency():
    points = {"static": [_point(1, 2.0, 100), _point(2, 6.0, 150), _point(3, 20.0, 160)],
              "continuous": [_point(1, 1.0, 100), _point(2, 2.0, 200), _point(3, 10.0, 300)]}
    result = batching.compare(points, "latency_s")
    rows = {r["rate_per_s"]: r for r in result["rows"]}
    assert rows[1]["continuous_tokens_per_s"] == pytest.approx(200) and rows[1]["factor"] == pytest.approx(2.0)
    assert rows[2]["continuous_tokens_per_s"] == pytest.approx(250) and rows[2]["how"] == "interpolated"
    assert rows[3]["how"] == "at least" and rows[3]["continuous_tokens_per_s"] == 300
    assert rows[3]["continuous_p99_s"] == 10.0 and rows[2]["continuous_p99_s"] == 6.0
    assert result["headline"]["rate_per_s"] == 3 and result["headline"]["factor"] == pytest.approx(300 / 160)


def test_the_study_measures_compares_profiles_and_writes(tiny_model, wikitext_dir, cpu_ceilings, tmp_path):
    corpus = load_wikitext(wikitext_dir)
    settings = batching.Settings(slots=3, workload=Workload(10, (3, 12), (2, 8), seed=1), rate_fractions=(0.6, 1.4),
                                 repeats=2, timeout_steps=4, profile_skip=2, profile_steps=4)
    flat = modelled(lambda kind, rows, positions: 0.01 if kind == "decode" else 0.001 * positions)
    result = batching.measure(tiny_model, corpus, settings, ceilings=cpu_ceilings, timer=flat)
    assert len(result["runs"]) == 2 * 2 * 2
    assert all(p["runs"] == 2 for name in ("static", "continuous") for p in result["points"][name])
    assert result["calibration"]["decode_step_s"] == 0.01
    # A decode step costs the same for 1 row or 3, so keeping slots full pays: continuous batching ends sooner.
    head = result["comparison"]["latency_s"]["headline"]
    assert head["factor"] > 1.0
    prof = result["profile"]["static"]
    assert prof["steps"] == 4 and prof["prefill"]["steps"] >= 1
    assert prof["prefill"]["steps"] + prof["decode"]["steps"] == 4
    assert prof["prefill"]["op_s"] + prof["decode"]["op_s"] > 0 and 0 < prof["op_time_over_wall"] <= 1.5
    assert result["profile"]["continuous"]["prefill"]["wasted_tokens"] == 0
    files = write_batching(result, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "batching.json").read_text())
    assert data["comparison"]["latency_s"]["headline"]["factor"] == pytest.approx(head["factor"])
    assert (tmp_path / "out" / "batching.png").read_bytes()[:4] == b"\x89PNG"
    markdown = (tmp_path / "out" / "batching.md").read_text()
    assert f"{head['factor']:.2f}x" in markdown and "## Where the time goes" in markdown
    assert [f.name for f in files] == ["batching.json", "batching.md", "batching.png"]
    assert not math.isnan(data["points"]["static"][0]["latency_s_p99"]["median"])


def test_cli_rejects_a_model_too_big_for_the_cpu(capsys, wikitext_dir, tmp_path):
    from roofline.cli import main

    code = main(["lab", "--study", "batching", "--device", "cpu", "--model", "llama-1b", "--data", str(wikitext_dir),
                 "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "too big for the CPU batching study" in err and "Traceback" not in err


@pytest.mark.parametrize("flags", [[], ["--no-graphs"]])
def test_roofline_lab_study_batching_quick_runs_end_to_end(tmp_path, monkeypatch, wikitext_dir, cpu_ceilings, capsys,
                                                           flags):
    from roofline.cli import main
    from roofline.lab import runner

    micro = batching.Settings(slots=2, workload=Workload(6, (3, 8), (2, 4), seed=0), rate_fractions=(0.7, 1.5),
                              repeats=1, timeout_steps=4, profile_skip=1, profile_steps=3, quick=True,
                              config_overrides=(("dim", 64), ("n_layers", 1), ("n_heads", 4), ("n_kv_heads", 2),
                                                ("ffn_dim", 128), ("vocab_size", 1024)))
    monkeypatch.setattr(batching, "QUICK_CPU", micro)
    monkeypatch.setattr(runner, "measured_ceilings", lambda device, ceilings_file, progress: cpu_ceilings)
    out = tmp_path / "study"
    assert main(["lab", "--study", "batching", "--quick", "--device", "cpu", "--data", str(wikitext_dir),
                 "-o", str(out), *flags]) == 0
    data = json.loads((out / "batching.json").read_text())
    assert data["model"] == "llama-tiny" and data["settings"]["config_overrides"]["dim"] == 64
    assert len(data["runs"]) == 4 and all(r["requests"] == 6 for r in data["runs"])
    assert data["notes"][0].startswith("NOT REPRESENTATIVE")
    # On CPU "auto" decodes eagerly; --no-graphs asks for that anywhere.
    assert data["decode"]["mode"] == "eager" and data["settings"]["decode"] == ("eager" if flags else "auto")
    printed = capsys.readouterr().out
    assert "| rate (req/s) | scheduler |" in printed and "p99 request latency" in printed.splitlines()[-2]


@pytest.mark.cuda
@pytest.mark.parametrize("scheduler", ["static", "continuous"])
def test_on_cuda_graphed_and_eager_decode_steps_give_the_same_tokens(tiny_config, scheduler):
    from roofline.models.llama import build_llama

    model = build_llama(tiny_config, dtype=torch.float32, device="cuda")
    requests = _requests([0.0, 0.001, 0.002, 0.035, 0.036, 0.05])
    runs = {}
    for mode in ("eager", "graphed"):
        with SlotEngine(model, 3, 24, decode=mode) as engine:
            if mode == "graphed":
                assert engine.capture_graphs() > 0 and engine.graph_count == 3 and engine.fallback is None
            runs[mode] = _serve(engine, scheduler, requests, NEVER)
            assert engine.decode_mode == mode
    assert runs["graphed"].complete
    assert {s.id: s.tokens for s in runs["graphed"].served} == {s.id: s.tokens for s in runs["eager"].served}


@pytest.mark.cuda
@pytest.mark.parametrize("scheduler", ["static", "continuous"])
def test_on_cuda_every_request_gets_the_tokens_of_its_own_greedy_generation(tiny_config, scheduler):
    from roofline.models.llama import build_llama

    model = build_llama(tiny_config, dtype=torch.float32, device="cuda")
    requests = _requests([0.0, 0.001, 0.002, 0.035, 0.036, 0.05])
    reference = _reference(model, requests, NEVER)
    with SlotEngine(model, 3, 24) as engine:
        run = (serve_static(engine, requests, NEVER, timeout_s=0.02) if scheduler == "static"
               else serve_continuous(engine, requests, NEVER))
    assert run.complete and {s.id: s.tokens for s in run.served} == reference
    assert all(step.seconds > 0 for step in run.steps)


def test_a_failed_profile_keeps_the_sweep_and_says_why(tiny_model, wikitext_dir, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no profiler here")

    monkeypatch.setattr(batching, "profile_window", broken)
    settings = batching.Settings(slots=2, workload=Workload(4, (3, 6), (2, 3), seed=1), rate_fractions=(1.0,),
                                 repeats=1, timeout_steps=4, profile_skip=0, profile_steps=2)
    result = batching.measure(tiny_model, load_wikitext(wikitext_dir), settings, timer=FLAT)
    assert len(result["runs"]) == 2
    assert result["profile"]["static"] == {"error": "RuntimeError: no profiler here"}
    assert "profiling the static loop failed: RuntimeError: no profiler here" in result["notes"]
    assert "Where the time goes" not in batching_report_markdown(result)


def test_a_spent_budget_stops_runs_and_the_files_still_say_what_ran(tiny_model, wikitext_dir, tmp_path):
    settings = batching.Settings(slots=2, workload=Workload(4, (3, 6), (2, 3), seed=1), rate_fractions=(0.5, 1.0),
                                 repeats=2, timeout_steps=4, profile_skip=0, profile_steps=2, budget_s=1e-9)
    result = batching.measure(tiny_model, load_wikitext(wikitext_dir), settings, timer=FLAT, profile=False)
    assert result["runs"] == [] and "budget 1e-09 s spent in pass 1 of 2" in result["notes"][0]
    assert result["comparison"]["latency_s"]["headline"] is None
    write_batching(result, tmp_path / "out")
    assert "no static batching point to compare with" in (tmp_path / "out" / "batching.md").read_text()
