"""Fourth model sweep: models from libraries users bring that sweeps 1-3 (torchvision, transformers) did not try:
timm, diffusers and torchaudio, all built from small configs with random weights (no downloads).

Each factory returns (model, inputs) for `roofline analyze benchmarks/sweep_models4.py:NAME`. Run as a script it
runs the sweep's cases (benchmarks/results/sweep_models4_2026-12-02.md says what each checks):

    python benchmarks/sweep_models4.py OUT_DIR [NAME...]        # analyze each factory, check, compare FLOPs
    python benchmarks/sweep_models4.py --fcm NAME REPORT_DIR [--backward]   # one report against FlopCounterMode
    python benchmarks/sweep_models4.py --table OUT_DIR          # the table of a finished run, from its reports

Needs timm, diffusers and torchaudio (pip install timm diffusers torchaudio; none is a roofline dependency).
The checks per case: exit code, the files written, no traceback on stderr, no nan/inf/negative time in the console,
the unmodelled share and op names, and the report's FLOPs per step against torch.utils.flop_counter.FlopCounterMode
over one step of the same factory, op by op (FCM counts matrix products, convolutions and attention only)."""
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn as nn

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent


def _seeded(fn):
    def make():
        torch.manual_seed(0)
        return fn()
    make.__name__ = fn.__name__
    make.__doc__ = fn.__doc__
    return make


# ---------------------------------------------------------------- timm: its own attention, norms and blocks

def _timm(name, **kw):
    import timm
    return timm.create_model(name, pretrained=False, **kw)


@_seeded
def timm_vit():
    """ViT (timm's Attention: fused qkv Linear, F.scaled_dot_product_attention), 2 blocks, 32 px, patch 8."""
    return _timm("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2, num_classes=10), torch.randn(2, 3, 32, 32)


@_seeded
def timm_deit_distilled():
    """DeiT with its distillation token and two heads (the train-mode forward returns both logits)."""
    m = _timm("deit_tiny_distilled_patch16_224", img_size=32, patch_size=8, depth=2, num_classes=10)
    return m, torch.randn(2, 3, 32, 32)


@_seeded
def timm_convnextv2():
    """ConvNeXt-V2 atto: depthwise 7x7 convolutions, LayerNorm2d, GRN (global response normalisation)."""
    return _timm("convnextv2_atto", num_classes=10), torch.randn(2, 3, 64, 64)


@_seeded
def timm_efficientnet():
    """timm's EfficientNet-B0 (its own BatchNormAct2d, SqueezeExcite, drop path), 64 px."""
    return _timm("efficientnet_b0", num_classes=10, drop_path_rate=0.1), torch.randn(2, 3, 64, 64)


@_seeded
def timm_swin():
    """timm's Swin (window attention with relative position bias, shifted windows, patch merging), 2 stages."""
    m = _timm("swin_tiny_patch4_window7_224", img_size=56, window_size=7, embed_dim=32, depths=(2, 2),
              num_heads=(2, 4), num_classes=10)
    return m, torch.randn(2, 3, 56, 56)


@_seeded
def timm_maxvit():
    """MaxViT (MBConv + block and grid attention with relative position MLP bias), nano at 64 px."""
    return _timm("maxvit_rmlp_nano_rw_256", img_size=64, num_classes=10), torch.randn(1, 3, 64, 64)


@_seeded
def timm_eva02():
    """EVA-02 (rotary position embedding, SwiGLU MLP), 2 blocks, 56 px, patch 14."""
    return _timm("eva02_tiny_patch14_224", img_size=56, depth=2, num_classes=10), torch.randn(2, 3, 56, 56)


# ---------------------------------------------------------------- diffusers: UNet, VAE, DiT

@_seeded
def df_unet():
    """UNet2DConditionModel from a small config: ResNet blocks with GroupNorm, timestep embedding, cross-attention
    transformer blocks (GEGLU), down/up sampling. Inputs: a latent, a timestep, text states."""
    from diffusers import UNet2DConditionModel
    m = UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                             block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                             up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                             attention_head_dim=8, norm_num_groups=8)
    return m, dict(sample=torch.randn(2, 4, 16, 16), timestep=torch.tensor([10, 500]),
                   encoder_hidden_states=torch.randn(2, 8, 32), return_dict=False)


class _VAERoundTrip(nn.Module):
    """encode -> sample the latent -> decode: what a user times around a VAE."""
    def __init__(s, vae):
        super().__init__(); s.vae = vae

    def forward(s, x):
        z = s.vae.encode(x).latent_dist.sample(generator=torch.Generator().manual_seed(0))
        return s.vae.decode(z).sample


@_seeded
def df_vae():
    """AutoencoderKL from a small config: encoder, DiagonalGaussian sampling, decoder (mid-block attention)."""
    from diffusers import AutoencoderKL
    vae = AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(32, 64), latent_channels=4,
                        norm_num_groups=16, layers_per_block=1, sample_size=32)
    return _VAERoundTrip(vae), torch.randn(1, 3, 32, 32)


@_seeded
def df_dit():
    """DiT (DiTTransformer2DModel: patchify, adaLN-Zero, class label embedding), 2 layers, 16x16 latent."""
    from diffusers import DiTTransformer2DModel
    m = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
                              num_layers=2, sample_size=16, patch_size=2, num_embeds_ada_norm=10, norm_num_groups=8)
    return m, dict(hidden_states=torch.randn(2, 4, 16, 16), timestep=torch.tensor([3, 700]),
                   class_labels=torch.tensor([1, 7]), return_dict=False)


# ---------------------------------------------------------------- torchaudio: wav2vec2, conformer, emformer

@_seeded
def ta_wav2vec2():
    """torchaudio's wav2vec2: a 7-layer conv feature extractor (GroupNorm), weight-normed positional conv (groups
    16, kernel 128), 2 transformer layers; 0.25 s of 16 kHz audio, batch 2, with lengths."""
    from torchaudio.models import wav2vec2_model
    m = wav2vec2_model(extractor_mode="group_norm", extractor_conv_layer_config=None, extractor_conv_bias=False,
                       encoder_embed_dim=64, encoder_projection_dropout=0.0, encoder_pos_conv_kernel=128,
                       encoder_pos_conv_groups=16, encoder_num_layers=2, encoder_num_heads=4,
                       encoder_attention_dropout=0.0, encoder_ff_interm_features=128,
                       encoder_ff_interm_dropout=0.0, encoder_dropout=0.0, encoder_layer_norm_first=False,
                       encoder_layer_drop=0.0, aux_num_out=32)
    return m, (torch.randn(2, 4000), torch.tensor([4000, 3200]))


@_seeded
def ta_conformer():
    """torchaudio's Conformer: macaron feed-forwards, MHA with a padding mask, depthwise conv1d module with GLU and
    BatchNorm; 2 layers over 50 frames of 80-dim features."""
    from torchaudio.models import Conformer
    m = Conformer(input_dim=80, num_heads=4, ffn_dim=128, num_layers=2, depthwise_conv_kernel_size=15)
    return m, (torch.randn(2, 50, 80), torch.tensor([50, 41]))


@_seeded
def ta_emformer():
    """torchaudio's Emformer (streaming transformer: segments, right context, memory bank) in training mode."""
    from torchaudio.models import Emformer
    m = Emformer(input_dim=64, num_heads=4, ffn_dim=128, num_layers=2, segment_length=8, right_context_length=2,
                 max_memory_size=4)
    return m, (torch.randn(2, 34, 64), torch.tensor([34, 30]))


@_seeded
def ta_emformer_rnnt():
    """torchaudio's Emformer RNN-T (transcriber, LSTM predictor, joiner): the training forward's 4-D logits."""
    from torchaudio.models import emformer_rnnt_model
    m = emformer_rnnt_model(input_dim=40, encoding_dim=64, num_symbols=32, segment_length=4, right_context_length=2,
                            time_reduction_input_dim=40, time_reduction_stride=2, transformer_num_heads=4,
                            transformer_ffn_dim=128, transformer_num_layers=2, transformer_dropout=0.0,
                            transformer_activation="gelu", transformer_left_context_length=8,
                            transformer_max_memory_size=0, transformer_weight_init_scale_strategy="depthwise",
                            transformer_tanh_on_mem=True, symbol_embedding_dim=32, num_lstm_layers=2,
                            lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-5, lstm_dropout=0.0)
    feats = torch.randn(2, 26, 40)
    return m, (feats, torch.tensor([26, 22]), torch.randint(1, 32, (2, 6)), torch.tensor([6, 5]))


class _TimmCompiled(nn.Module):
    """torch.compile (default mode) of timm's ViT: Inductor's CPU kernels in place of aten ops."""
    def __init__(s, m):
        super().__init__(); s.m = m; s.c = torch.compile(m)

    def forward(s, x):
        return s.c(x)


@_seeded
def timm_vit_compiled():
    m, x = timm_vit()
    return _TimmCompiled(m.eval()), x


FACTORIES = ("timm_vit", "timm_deit_distilled", "timm_convnextv2", "timm_efficientnet", "timm_swin", "timm_maxvit",
             "timm_eva02", "df_unet", "df_vae", "df_dit", "ta_wav2vec2", "ta_conformer", "ta_emformer",
             "ta_emformer_rnnt", "timm_vit_compiled")
BACKWARD = {"timm_convnextv2", "timm_swin", "timm_eva02", "df_unet", "df_dit", "ta_conformer", "ta_wav2vec2"}


# ---------------------------------------------------------------- checks

def _call(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    return model(*(inputs if isinstance(inputs, tuple) else (inputs,)))


def _scalar(out):
    """A scalar to call backward on, from whatever a model returns (a tensor, a tuple, a ModelOutput)."""
    while not isinstance(out, torch.Tensor):
        out = out[0]
    return out if out.ndim == 0 else out.float().mean()


def fcm_by_op(name, backward):
    """FlopCounterMode's FLOPs by aten op over one step (forward, and backward when asked) of a factory."""
    from torch.utils.flop_counter import FlopCounterMode
    model, inputs = globals()[name]()
    with FlopCounterMode(display=False) as fc:
        out = _call(model, inputs)
        if backward:
            _scalar(out).backward()
    return {str(k).removeprefix("aten."): v for k, v in fc.get_flop_counts()["Global"].items()}


def ours_by_op(report_dir):
    r = json.loads(Path(report_dir, "report.json").read_text())
    steps = max(1, r.get("steps") or 1)
    ours = defaultdict(float)
    for op in r["ops"]:
        ours[op["name"].removeprefix("aten::")] += (op["flops"] or 0) * (op.get("count") or 1) / steps
    return ours


def compare(name, report_dir, backward):
    return print_comparison(ours_by_op(report_dir), fcm_by_op(name, backward))


def print_comparison(ours, ref):
    """Our FLOPs and FlopCounterMode's per op, the largest first, then both totals; returns the totals."""
    for k in sorted(set(ours) | set(ref), key=lambda k: -max(ours.get(k, 0), ref.get(k, 0))):
        if ours.get(k, 0) or ref.get(k, 0):
            print(f"{k:50s} {ours.get(k, 0):>16,.0f} {ref.get(k, 0):>16,.0f}")
    tot, fcm = sum(ours.values()), sum(ref.values())
    print(f"{'TOTAL':50s} {tot:>16,.0f} {fcm:>16,.0f}  ratio {tot / fcm if fcm else float('nan'):.3f}")
    return tot, fcm


def run_case(name, out_root):
    """`roofline analyze` one factory; returns the checks' outcome as a dict."""
    out = Path(out_root, name)
    cmd = [sys.executable, "-m", "roofline", "analyze", f"{HERE}:{name}", "-o", str(out), "--iters", "2",
           "--warmup", "1"] + (["--backward"] if name in BACKWARD else [])
    env = dict(os.environ, PYTHONPATH=os.environ.get("SWEEP_SRC", str(REPO / "src")))  # SWEEP_SRC: a snapshot
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    Path(out_root, f"{name}.out").write_text(p.stdout)
    Path(out_root, f"{name}.err").write_text(p.stderr)
    res = dict(name=name, backward=name in BACKWARD, rc=p.returncode, wall_s=round(time.monotonic() - t0, 1),
               traceback="Traceback" in p.stderr, files=sorted(os.listdir(out)) if out.exists() else [],
               bad_numbers=re.findall(r"\b(?:nan|inf)\b|-\d[\d.]* ?(?:ms|us|s)\b", p.stdout, re.I)[:3],
               unmodelled=next((ln.strip() for ln in p.stdout.splitlines() if "unmodel" in ln.lower()), ""),
               stderr_tail=p.stderr.strip().splitlines()[-1:] if p.returncode else [])
    if p.returncode == 0:
        res.update(report_facts(out))
        flops = res["flops_per_step"]
        try:
            fcm = sum(fcm_by_op(name, name in BACKWARD).values())
            res["fcm"], res["ratio_fcm"] = fcm, (flops / fcm if fcm else None)
        except Exception as e:  # FCM itself may not run a model (a compiled one): say so, keep the case
            res["fcm_error"] = f"{type(e).__name__}: {str(e)[:120]}"
    return res


def report_facts(report_dir):
    """What the sweep's table shows of one report: FLOPs a step, the unmodelled share and ops, the notes that
    say a recorded op found no event, the true step time."""
    r = json.loads(Path(report_dir, "report.json").read_text())
    steps = max(1, r.get("steps") or 1)
    s = r["summary"]
    unmodelled = defaultdict(float)
    for op in r["ops"]:
        if not op["modeled"]:
            unmodelled[op["name"][:40]] += op["time_s"] * (op.get("count") or 1)
    return dict(flops_per_step=sum((op["flops"] or 0) * (op.get("count") or 1) for op in r["ops"]) / steps,
                unmodelled_share=s["unmodeled_time_share"], unmodelled_ops=sorted(unmodelled, key=unmodelled.get)[::-1],
                no_event_notes=[n for n in s["notes"] if "found no event" in n],
                step_time_s=(r.get("step_time") or {}).get("median_s"),
                nonfinite=any(isinstance(v, float) and v != v for op in r["ops"] for v in (op["flops"], op["time_s"])))


def table(out_root):
    rows = json.loads(Path(out_root, "sweep.json").read_text())["rows"]
    print(f"{'case':20s} {'rc':>3s} {'FLOPs/step':>15s} {'xFCM':>6s} {'unmod':>6s} {'step':>9s}  unmodelled ops / notes")
    for r in rows:
        f = report_facts(Path(out_root, r["name"])) if r["rc"] == 0 else {}
        print(f"{r['name']:20s} {r['rc']:>3d} {f.get('flops_per_step', 0):>15,.0f} {(r.get('ratio_fcm') or float('nan')):>6.3f} "
              f"{100 * f.get('unmodelled_share', 0):>5.1f}% {1e3 * (f.get('step_time_s') or 0):>7.1f}ms  "
              f"{', '.join(f.get('unmodelled_ops', []))} {' '.join(f.get('no_event_notes', []))}")


def main(argv):
    if argv and argv[0] == "--table":
        table(argv[1])
        return
    if argv and argv[0] == "--fcm":
        compare(argv[1], argv[2], "--backward" in argv)
        return
    out_root, only = Path(argv[0]), set(argv[1:])
    out_root.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in FACTORIES:
        if only and name not in only:
            continue
        rows.append(run_case(name, out_root))
        print(json.dumps(rows[-1]), flush=True)
    Path(out_root, "sweep.json").write_text(json.dumps(dict(date=time.strftime("%Y-%m-%d"), torch=torch.__version__,
                                                            rows=rows), indent=1))
    print()
    table(out_root)


if __name__ == "__main__":
    main(sys.argv[1:])
