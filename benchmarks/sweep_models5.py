"""Fifth model sweep: transformers 5.x families the earlier sweeps did not run, each as a user script through
`roofline profile` and the trace it wrote through `roofline trace` (sweeps 1-4 ran `analyze` on factories).

Families: Gemma2 and Gemma3 (sliding window, logit soft-capping, Gemma3's q/k norms and two rotary bases), Phi3
(fused qkv and gate_up projections), Bloom (ALiBi, baddbmm), GPT-J (interleaved rotary, parallel block), Qwen3
(q/k RMSNorm, GQA), Starcoder2 (sliding window, biases), OPT (learned positions), Mamba2 (the slow chunked scan
on CPU), ModernBERT (alternating local/global attention, unpadding), SigLIP (vision + text, sigmoid loss) and
DETR (ResNet backbone from a config, object queries). All built from small configs with random weights
(nothing downloaded).

    python benchmarks/sweep_models5.py OUT_DIR [NAME...]   # profile + trace + FLOPs against FlopCounterMode
    python benchmarks/sweep_models5.py --fcm NAME DIR      # one report against FlopCounterMode, op by op
    python benchmarks/sweep_models5.py --table OUT_DIR     # the table of a finished run

Each case is a script (written to OUT_DIR/scripts/NAME.py) that builds its model and batch and runs `step()` ten
times (a generate case runs under `profile --whole`: its forwards differ in length, so the whole script is one step): an AdamW training step (loss.backward) or a no_grad forward. With SWEEP5_FCM=1 in the environment it builds
and does not loop, so the runner can import it and count one `step()` under torch.utils.flop_counter.FlopCounterMode
(matrix products, convolutions, attention) to set against the report's FLOPs per step.
"""
import json
import os
import re
import runpy
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from sweep_models4 import ours_by_op, print_comparison  # the same report reading and table as sweep 4

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent

HEADER = '''import os, torch
import transformers as t
torch.manual_seed(0)
ids = torch.randint(3, 128, (2, 24))
LM = dict(input_ids=ids, labels=ids)
CALL = None  # a case's own inference step (generate), else model(**batch)
'''
FOOTER = '''
if TRAIN:
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
else:
    model.eval()

def step():
    if TRAIN:
        model(**batch).loss.backward()
        opt.step()
        opt.zero_grad()
    else:
        with torch.no_grad():
            CALL() if CALL else model(**batch)

if not os.environ.get("SWEEP5_FCM"):
    for _ in range(10):  # LOOPS
        step()
'''
TEXT = "vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4"

CASES = {
    "gemma2_train": ("Gemma2: sliding window on every other layer, attention and final logit soft-capping (eager "
                     "attention, as HF requires for soft-capping), GQA", f'''
model = t.Gemma2ForCausalLM(t.Gemma2Config({TEXT}, num_key_value_heads=2, head_dim=8, sliding_window=8,
                                             attn_implementation="eager"))
batch, TRAIN = LM, True
'''),
    "gemma3_bf16": ("Gemma3 text in bf16, inference: q/k RMSNorm, local/global layers with two rotary bases, "
                    "sdpa with a sliding-window mask", f'''
model = t.Gemma3ForCausalLM(t.Gemma3TextConfig({TEXT}, num_key_value_heads=2, head_dim=8, sliding_window=8,
                                                 layer_types=["sliding_attention", "full_attention"],
                                                 attn_implementation="sdpa")).to(torch.bfloat16)
batch, TRAIN = dict(input_ids=ids), False
'''),
    "phi3_train": ("Phi3: fused qkv_proj and gate_up_proj (chunk), GQA", f'''
model = t.Phi3ForCausalLM(t.Phi3Config({TEXT}, num_key_value_heads=2, pad_token_id=0))
batch, TRAIN = LM, True
'''),
    "bloom_train": ("Bloom: ALiBi biases through baddbmm, fused query_key_value, embedding LayerNorm", '''
model = t.BloomForCausalLM(t.BloomConfig(vocab_size=128, hidden_size=32, n_layer=2, n_head=4))
batch, TRAIN = LM, True
'''),
    "gptj_train": ("GPT-J: interleaved (rotate_every_two) rotary on part of the head, attention and MLP in "
                   "parallel from one LayerNorm", '''
model = t.GPTJForCausalLM(t.GPTJConfig(vocab_size=128, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64))
batch, TRAIN = LM, True
'''),
    "qwen3_train": ("Qwen3: q/k RMSNorm per head, GQA, sdpa", f'''
model = t.Qwen3ForCausalLM(t.Qwen3Config({TEXT}, num_key_value_heads=2, head_dim=8))
batch, TRAIN = LM, True
'''),
    "starcoder2_infer": ("Starcoder2 inference: sliding window, biased projections, GELU MLP (no gate)", f'''
model = t.Starcoder2ForCausalLM(t.Starcoder2Config({TEXT}, num_key_value_heads=2, sliding_window=8))
batch, TRAIN = dict(input_ids=ids), False
'''),
    "opt_train": ("OPT: learned positions (cumsum of the mask), pre-LN decoder", '''
model = t.OPTForCausalLM(t.OPTConfig(vocab_size=128, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                                     num_attention_heads=4, word_embed_proj_dim=32, max_position_embeddings=64))
batch, TRAIN = LM, True
'''),
    "mamba2_train": ("Mamba2 on its slow path (no mamba_ssm / causal_conv1d kernels on CPU): chunked SSD scan "
                     "with segsum, cumsum, exp and einsums, depthwise conv1d, gated RMSNorm", '''
model = t.Mamba2ForCausalLM(t.Mamba2Config(vocab_size=128, hidden_size=32, num_hidden_layers=2, state_size=8,
                                           expand=2, head_dim=8, num_heads=8, n_groups=1, chunk_size=8,
                                           conv_kernel=4))
batch, TRAIN = LM, True
'''),
    "modernbert_train": ("ModernBERT masked LM: alternating local (window 8) and global attention, GeGLU, "
                         "unpadded sequences with a padding mask", '''
model = t.ModernBertForMaskedLM(t.ModernBertConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                                                   num_hidden_layers=2, num_attention_heads=4, local_attention=8,
                                                   global_attn_every_n_layers=2, pad_token_id=0,
                                                   max_position_embeddings=64))
mask = torch.ones_like(ids); mask[1, 18:] = 0
batch, TRAIN = dict(input_ids=ids, attention_mask=mask, labels=ids), True
'''),
    "siglip_train": ("SigLIP: ViT + text towers, sigmoid contrastive loss (return_loss)", '''
cfg = t.SiglipConfig(text_config=dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, max_position_embeddings=24),
                     vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, image_size=32, patch_size=8))
model = t.SiglipModel(cfg)
batch, TRAIN = dict(input_ids=ids, pixel_values=torch.randn(2, 3, 32, 32), return_loss=True), True
'''),
    "detr_infer": ("DETR inference: a ResNet-shaped backbone from a config (no timm, no weights), frozen batch "
                   "norm, sine position embedding, encoder-decoder with object queries (the training loss needs "
                   "scipy's Hungarian matcher, not installed here)", '''
backbone = t.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                          layer_type="basic", out_features=["stage4"])
cfg = t.DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False, d_model=32,
                   encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                   encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10, num_labels=5)
model = t.DetrForObjectDetection(cfg)
batch, TRAIN = dict(pixel_values=torch.randn(2, 3, 64, 64)), False
'''),
    "deepseekv3_train": ("DeepSeek-V3: multi-head latent attention (low-rank q/kv with a split rotary part), "
                         "group-limited top-k routing over routed + shared experts", '''
model = t.DeepseekV3ForCausalLM(t.DeepseekV3Config(vocab_size=128, hidden_size=32, intermediate_size=64,
    moe_intermediate_size=16, num_hidden_layers=2, first_k_dense_replace=1, num_attention_heads=4,
    num_key_value_heads=4, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, n_group=2, topk_group=1,
    q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=8))
batch, TRAIN = LM, True
'''),
    "jamba_train": ("Jamba: Mamba layers (slow path) interleaved with attention, a sparse MoE on every other layer",
                    '''
model = t.JambaForCausalLM(t.JambaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, expert_layer_period=2,
    expert_layer_offset=1, attn_layer_period=2, attn_layer_offset=1, mamba_d_state=8, mamba_d_conv=4,
    mamba_expand=2, mamba_dt_rank=4, use_mamba_kernels=False))
batch, TRAIN = LM, True
'''),
    "gemma2_generate": ("Gemma2 greedy generation, 12 new tokens: the hybrid (sliding + full) KV cache, "
                        "soft-capped logits", f'''
model = t.Gemma2ForCausalLM(t.Gemma2Config({TEXT}, num_key_value_heads=2, head_dim=8, sliding_window=8,
                                             attn_implementation="eager"))
TRAIN = False
model.generation_config.pad_token_id = 0
batch = {{}}
CALL = lambda: model.generate(ids[:, :6], max_new_tokens=12, min_new_tokens=12, do_sample=False)
''', ["--whole"]),
    "deformable_detr_infer": ("Deformable DETR inference: multi-scale deformable attention (PyTorch's grid_sample "
                              "path on CPU), two-stage off, ResNet backbone from a config", '''
backbone = t.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                          layer_type="basic", out_features=["stage2", "stage3", "stage4"])
cfg = t.DeformableDetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                             d_model=32, encoder_layers=1, decoder_layers=2, encoder_attention_heads=4,
                             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10,
                             num_labels=5, num_feature_levels=3, encoder_n_points=2, decoder_n_points=2)
model = t.DeformableDetrForObjectDetection(cfg)
batch, TRAIN = dict(pixel_values=torch.randn(2, 3, 64, 64)), False
'''),
    "encodec_infer": ("EnCodec inference: SEANet conv1d encoder/decoder with LSTMs, residual vector quantiser "
                      "(cdist-like distances, argmin, embedding)", '''
model = t.EncodecModel(t.EncodecConfig(hidden_size=16, num_filters=4, num_residual_layers=1, upsampling_ratios=[4, 2],
                                       codebook_size=32, codebook_dim=16, num_lstm_layers=1, target_bandwidths=[20.0],
                                       sampling_rate=8000))
batch, TRAIN = dict(input_values=torch.randn(2, 1, 800)), False
'''),
    "dinov2_infer": ("DINOv2 inference at a size other than its config's: bicubic interpolation of the position "
                     "embeddings, LayerScale, SwiGLU off", '''
model = t.Dinov2Model(t.Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                     image_size=32, patch_size=8))
batch, TRAIN = dict(pixel_values=torch.randn(2, 3, 48, 48)), False
'''),
}


LOOPS = 10  # step() calls a script makes


def script_text(name):
    doc, body = CASES[name][:2]
    return f'"""{doc}"""\n' + HEADER + body.strip() + "\n" + FOOTER


def write_script(name, out_root):
    p = Path(out_root, "scripts", f"{name}.py")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(script_text(name))
    return p


def fcm_by_op(script):
    """FlopCounterMode's FLOPs by aten op over one step() of a case's script."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    os.environ["SWEEP5_FCM"] = "1"
    try:
        g = runpy.run_path(str(script))
    finally:
        del os.environ["SWEEP5_FCM"]
    g["step"]()  # the first step builds lazy state (AdamW's moments) outside the count
    with FlopCounterMode(display=False) as fc:
        g["step"]()
    torch.set_default_dtype(torch.float32)
    return {str(k).removeprefix("aten."): v for k, v in fc.get_flop_counts()["Global"].items()}


def compare(script, report_dir):
    print_comparison(ours_by_op(report_dir), fcm_by_op(script))


def report_facts(report_dir):
    r = json.loads(Path(report_dir, "report.json").read_text())
    steps = max(1, r.get("steps") or 1)
    s = r["summary"]
    unmodelled = defaultdict(float)
    for op in r["ops"]:
        if not op["modeled"]:
            unmodelled[op["name"][:40]] += op["time_s"] * (op.get("count") or 1)
    return dict(flops_per_step=sum((op["flops"] or 0) * (op.get("count") or 1) for op in r["ops"]) / steps,
                steps=r.get("steps"), unmodelled_share=s["unmodeled_time_share"],
                unmodelled_ops=sorted(unmodelled, key=unmodelled.get)[::-1][:5],
                notes=s["notes"], findings=[f"{f.get('rule')}: {f.get('title', '')[:140]}"
                                            for f in (r.get("findings") or [])][:8])


def _run(cmd, out_root, tag):
    env = dict(os.environ, PYTHONPATH=os.environ.get("SWEEP_SRC", str(REPO / "src")))
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    Path(out_root, f"{tag}.out").write_text(p.stdout)
    Path(out_root, f"{tag}.err").write_text(p.stderr)
    return p, round(time.monotonic() - t0, 1)


def run_case(name, out_root):
    script = write_script(name, out_root)
    prof, tr = Path(out_root, name), Path(out_root, f"{name}-trace")
    py = sys.executable
    extra = CASES[name][2] if len(CASES[name]) > 2 else []
    p1, w1 = _run([py, "-m", "roofline", "profile", *extra, "-o", str(prof), str(script)], out_root,
                  f"{name}.profile")
    res = dict(name=name, profile_rc=p1.returncode, profile_s=w1, traceback="Traceback" in p1.stderr,
               bad_numbers=re.findall(r"\b(?:nan|inf)\b|-\d[\d.]* ?(?:ms|us|s)\b", p1.stdout, re.I)[:3],
               stderr_tail=p1.stderr.strip().splitlines()[-1:] if p1.returncode else [])
    if p1.returncode:
        return res
    res["profile"] = report_facts(prof)
    p2, w2 = _run([py, "-m", "roofline", "trace", str(prof / "trace.json.gz"), "-o", str(tr)], out_root,
                  f"{name}.trace")
    res.update(trace_rc=p2.returncode, trace_s=w2, trace_traceback="Traceback" in p2.stderr)
    if p2.returncode == 0:
        res["trace"] = report_facts(tr)
    try:
        # --whole: the report's one step is the whole script, LOOPS step() calls (and the build, no products)
        fcm = sum(fcm_by_op(script).values()) * (LOOPS if "--whole" in extra else 1)
        res["fcm"], res["ratio_fcm"] = fcm, (res["profile"]["flops_per_step"] / fcm if fcm else None)
    except Exception as e:
        res["fcm_error"] = f"{type(e).__name__}: {str(e)[:160]}"
    return res


def table(out_root):
    rows = json.loads(Path(out_root, "sweep.json").read_text())["rows"]
    print(f"{'case':18s} {'prof':>4s} {'trace':>5s} {'FLOPs/step':>14s} {'xFCM':>6s} {'unmod':>6s} {'tr.unmod':>8s}  unmodelled ops")
    for r in rows:
        pf, tf = r.get("profile", {}), r.get("trace", {})
        print(f"{r['name']:18s} {r['profile_rc']:>4d} {r.get('trace_rc', -1):>5d} {pf.get('flops_per_step', 0):>14,.0f} "
              f"{(r.get('ratio_fcm') or float('nan')):>6.3f} {100 * pf.get('unmodelled_share', 0):>5.1f}% "
              f"{100 * tf.get('unmodelled_share', 0):>7.1f}%  {', '.join(pf.get('unmodelled_ops', []))}")


def main(argv):
    if argv and argv[0] == "--table":
        return table(argv[1])
    if argv and argv[0] == "--fcm":
        return compare(Path(argv[2]).parent / "scripts" / f"{argv[1]}.py", argv[2])
    out_root, only = Path(argv[0]), set(argv[1:])
    out_root.mkdir(parents=True, exist_ok=True)
    old = Path(out_root, "sweep.json")  # a run of some cases keeps the other cases' rows of an earlier run
    rows = [r for r in json.loads(old.read_text())["rows"] if only and r["name"] not in only] if old.exists() else []
    for name in CASES:
        if only and name not in only:
            continue
        rows.append(run_case(name, out_root))
        print(json.dumps(rows[-1]), flush=True)
    import torch
    rows.sort(key=lambda r: list(CASES).index(r["name"]))
    Path(out_root, "sweep.json").write_text(json.dumps(dict(date=time.strftime("%Y-%m-%d"), torch=torch.__version__,
                                                            rows=rows), indent=1))
    print()
    table(out_root)


if __name__ == "__main__":
    main(sys.argv[1:])
