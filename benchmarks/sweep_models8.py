"""Eighth model sweep: models and scripts users bring that sweeps 1-7 never tried, on CPU. A torch.fx GraphModule,
pruning masks (torch.nn.utils.prune), a custom autograd.Function with tensor and module backward hooks, forward-mode
AD (torch.autograd.forward_ad), a TorchScript model frozen and optimized for inference, metric-learning and
regression losses (triplet, cosine embedding, margin ranking, Huber, smooth L1, multi-margin, Poisson and Gaussian
NLL, kl_div with log targets, pdist), special functions (erfinv, digamma, lgamma, i0e, cumprod, cummax, logaddexp,
xlogy), linear algebra beyond Cholesky (QR, slogdet, lstsq, norms), the pooling and normalisation layers no sweep ran
(fractional/LP/adaptive max pooling, MaxUnpool, InstanceNorm, LocalResponseNorm, nn.Bilinear, antialiased
interpolation), an Embedding with max_norm, attention with masks of odd shapes, torchvision's deform_conv2d,
transformers ALBERT, SegFormer, ViTMAE, Longformer, RWKV and GPTBigCode from tiny configs, torchvision MaxViT,
Swin-V2 and RegNet/MobileNetV3 training; and user scripts: AdamW(foreach=False) with clip_grad_norm_ and an EMA by
torch._foreach ops under OneCycleLR, the optimizers no sweep stepped (RMSprop, NAdam, RAdam, Adamax, Adagrad,
Adafactor, fused AdamW on CPU), SWA (AveragedModel, SWALR, update_bn) and a CPU fp16 autocast loop with
torch.amp.GradScaler('cpu').

    python benchmarks/sweep_models8.py OUT_DIR [NAME...]   # run the cases, write OUT_DIR/sweep.json and sweep8.md
    python benchmarks/sweep_models8.py --table OUT_DIR     # the table of a finished run

The runner is sweep_runner.Sweep: factories through `roofline analyze` (``BACKWARD``: with --backward), scripts
through `roofline profile` then `roofline trace` of the trace it wrote (``DOCTOR``: also `roofline doctor`). Checks:
exit code, no traceback, no nan/inf/negative time, the unmodelled share, our FLOPs per step against
FlopCounterMode's, the findings' titles.
"""
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from sweep_models4 import _seeded  # a factory seeded at 0 on each call
from sweep_runner import Sweep

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent


class _ConvMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 8 * 8, 64)
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.out(F.gelu(self.fc(torch.flatten(h, 1))))


@_seeded
def fx_graph_module():
    """torch.fx.symbolic_trace of a conv + BN + MLP into a GraphModule, a node rewritten (gelu -> silu), forward +
    backward."""
    gm = torch.fx.symbolic_trace(_ConvMLP())
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is F.gelu:
            node.target = F.silu
    gm.recompile()
    return gm, torch.randn(8, 3, 16, 16)


class _Pruned(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 32, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        h = F.relu(self.c2(F.relu(self.c1(x))))
        return self.fc(h.mean((2, 3)))


@_seeded
def pruned_convnet():
    """torch.nn.utils.prune: l1_unstructured on a conv, ln_structured (channels) on another, random_unstructured on
    the Linear: each forward remakes weight = weight_orig * weight_mask in a pre-hook. Forward + backward."""
    from torch.nn.utils import prune
    m = _Pruned()
    prune.l1_unstructured(m.c1, "weight", amount=0.5)
    prune.ln_structured(m.c2, "weight", amount=0.25, n=2, dim=0)
    prune.random_unstructured(m.fc, "weight", amount=0.3)
    return m, torch.randn(4, 3, 32, 32)


class _STERound(torch.autograd.Function):
    """Straight-through rounding: round in forward, identity gradient."""

    @staticmethod
    def forward(ctx, x, scale):
        return torch.round(x * scale) / scale

    @staticmethod
    def backward(ctx, g):
        return g, None


class _SiLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * s * (1 + x * (1 - s))


class _CustomFn(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 128), nn.Linear(128, 64)
        self.a.register_full_backward_hook(lambda mod, gin, gout: None)

    def forward(self, x):
        h = _SiLUFn.apply(self.a(x))
        if h.requires_grad:
            h.register_hook(lambda g: g.clamp(-1, 1))
        return self.b(_STERound.apply(h, 16.0))


@_seeded
def custom_function_hooks():
    """Two custom autograd.Functions (a SiLU with save_for_backward, a straight-through round), a tensor grad hook
    clamping the gradient, a full backward hook on a Linear. Forward + backward."""
    return _CustomFn(), torch.randn(32, 64)


class _ForwardAD(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 32), nn.Softplus())

    def forward(self, x):
        import torch.autograd.forward_ad as fwAD
        with fwAD.dual_level():
            dual = fwAD.make_dual(x, torch.ones_like(x))
            out = self.net(dual)
            primal, tangent = fwAD.unpack_dual(out)
        return primal, tangent


@_seeded
def forward_ad_jvp():
    """Forward-mode AD: torch.autograd.forward_ad dual tensors through an MLP (a Jacobian-vector product in one
    pass)."""
    return _ForwardAD().eval(), torch.randn(16, 32)


class _ConvBNReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.body(x)


@_seeded
def jit_frozen_optimized():
    """torch.jit.script, torch.jit.freeze and torch.jit.optimize_for_inference (conv-BN folding, MKLDNN layouts on
    CPU): the ops a frozen CPU deployment runs."""
    m = torch.jit.script(_ConvBNReLU().eval())
    m = torch.jit.optimize_for_inference(torch.jit.freeze(m))
    return m, torch.randn(4, 3, 32, 32)


class _Losses(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(32, 16)

    def forward(self, a, p, n, y):
        ea, ep, en = self.embed(a), self.embed(p), self.embed(n)
        sign = y.sign()
        loss = F.triplet_margin_loss(ea, ep, en, margin=0.5)
        loss = loss + F.triplet_margin_with_distance_loss(ea, ep, en, distance_function=nn.PairwiseDistance())
        loss = loss + F.cosine_embedding_loss(ea, en, sign)
        loss = loss + F.margin_ranking_loss(ea[:, 0], en[:, 0], sign)
        loss = loss + F.huber_loss(ea, ep, delta=0.5) + F.smooth_l1_loss(ea, en, beta=0.2)
        loss = loss + F.multi_margin_loss(ea, (y.abs() * 7).long() % 16)
        loss = loss + F.poisson_nll_loss(ea, ep.abs()) + F.gaussian_nll_loss(ea, ep, en.exp())
        loss = loss + F.kl_div(ea.log_softmax(-1), en.log_softmax(-1), reduction="batchmean", log_target=True)
        loss = loss + F.cosine_similarity(ea, ep).mean() + F.pairwise_distance(ea, en).mean()
        loss = loss + F.pdist(ea).mean() + F.soft_margin_loss(ea, sign[:, None].expand_as(ea))
        loss = loss + F.hinge_embedding_loss(F.pairwise_distance(ea, ep), sign)
        loss = loss + F.multilabel_soft_margin_loss(ea, (en > 0).float())
        return loss


@_seeded
def metric_losses():
    """Metric-learning and regression losses (forward + backward): triplet (plain and with a distance function),
    cosine embedding, margin ranking, Huber, smooth L1, multi-margin, Poisson and Gaussian NLL, kl_div with log
    targets, cosine similarity, pairwise distance, pdist, soft margin, hinge embedding, multilabel soft margin."""
    return _Losses(), (torch.randn(64, 32), torch.randn(64, 32), torch.randn(64, 32), torch.randn(64))


class _Special(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        h = self.proj(x)
        u = torch.sigmoid(h) * 0.98 + 0.01
        a = torch.erfinv(2 * u - 1) + torch.special.ndtri(u)
        b = torch.digamma(h.exp() + 1) + torch.lgamma(h.abs() + 1) + torch.special.i0e(h) + torch.special.i1e(h)
        c = torch.cumprod(u, -1) + torch.cummax(h, -1).values + torch.cummin(h, -1).values
        d = torch.logaddexp(h, a) + torch.xlogy(u, u) + torch.special.entr(u) + torch.special.log_ndtr(h)
        e = torch.diff(h, dim=-1, prepend=h[:, :1]) + torch.roll(h, 3, -1) + F.logsigmoid(h) + F.mish(h)
        f = F.celu(h) + F.selu(h) + F.softmin(h, -1) + F.hardtanh(h) + F.softshrink(h) + F.tanhshrink(h)
        return a + b + c + d + e + f + torch.special.expit(h) * torch.special.erfcx(h.abs())


@_seeded
def special_functions():
    """Special functions and scans (forward + backward): erfinv, ndtri, digamma, lgamma, i0e/i1e, cumprod, cummax,
    cummin, logaddexp, xlogy, entr, log_ndtr, diff, roll, logsigmoid, mish, celu, selu, softmin, softshrink,
    tanhshrink, erfcx."""
    return _Special(), torch.randn(128, 32)


class _Linalg(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 64) / 8 + torch.eye(64))

    def forward(self, b):
        q, r = torch.linalg.qr(self.w)
        sign, logdet = torch.linalg.slogdet(self.w)
        x = torch.linalg.lstsq(self.w, b).solution
        x2 = torch.linalg.solve(self.w, b)
        n = torch.linalg.matrix_norm(self.w) + torch.linalg.vector_norm(x, ord=3) + torch.linalg.matrix_norm(r, 1)
        return (q @ x).sum() + logdet * sign + n + x2.sum() + torch.det(self.w[:8, :8])


@_seeded
def linalg_extras():
    """Linear algebra beyond sweep 7's Cholesky (forward + backward): linalg.qr, slogdet, lstsq, solve, det,
    matrix and vector norms, on a 64x64 matrix and 16 right-hand sides."""
    return _Linalg(), torch.randn(64, 16)


class _Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.lrn = nn.LocalResponseNorm(3)
        self.frac = nn.FractionalMaxPool2d(2, output_ratio=0.5)
        self.lp = nn.LPPool2d(2, 2)
        self.amax = nn.AdaptiveMaxPool2d(4)
        self.pool = nn.MaxPool2d(2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2)
        self.bil = nn.Bilinear(16, 16, 8)
        self.drop = nn.Dropout2d(0.1)
        self.pad = nn.ZeroPad2d((1, 2, 0, 1))

    def forward(self, x):
        h = self.drop(self.lrn(self.inorm(self.conv(x))))
        p, idx = self.pool(h)
        h = h + self.unpool(p, idx)
        a = self.amax(self.frac(h)) + self.amax(self.lp(h))
        s = F.softmax(self.pad(h), dim=1)  # Softmax2d
        z = F.interpolate(h, scale_factor=0.5, mode="bilinear", antialias=True)
        v = F.max_pool3d(h.unsqueeze(1), 2).flatten(1)
        w = F.avg_pool1d(h.flatten(2), 4)
        f = self.bil(a.flatten(2).mean(1), a.flatten(2).amax(1))
        return f.sum() + s.mean() + z.mean() + v.mean() + w.mean()


@_seeded
def pooling_norm_zoo():
    """The pooling and norm layers no sweep ran (forward + backward): InstanceNorm2d, LocalResponseNorm, Dropout2d,
    MaxPool2d with indices + MaxUnpool2d, FractionalMaxPool2d, LPPool2d, AdaptiveMaxPool2d, ZeroPad2d, channel
    softmax, antialiased bilinear downsampling, max_pool3d, avg_pool1d, nn.Bilinear."""
    return _Pools().train(), torch.randn(4, 3, 32, 32)


class _EmbMaxNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 32, max_norm=1.0, padding_idx=0, scale_grad_by_freq=True)
        self.head = nn.Linear(32, 1000)

    def forward(self, ids):
        return F.cross_entropy(self.head(self.emb(ids)).flatten(0, 1), ids.flatten(), label_smoothing=0.1,
                               ignore_index=0)


@_seeded
def embedding_max_norm():
    """nn.Embedding(max_norm=1.0, padding_idx, scale_grad_by_freq): embedding_renorm_ on every forward, then a
    label-smoothed cross entropy with ignore_index. Forward + backward."""
    return _EmbMaxNorm(), torch.randint(0, 1000, (16, 32))


class _OddMasks(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)
        self.qkv = nn.Linear(d, 3 * d)
        self.heads = heads

    def forward(self, x, pad):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        keep = ~pad[:, None, None, :]  # (B,1,1,S) boolean, broadcast over heads and queries
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        bias = torch.randn(s, s).tril()  # (L,S) float, broadcast over batch and heads
        c = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=0.1)
        per_head = torch.zeros(b * self.heads, s, s).masked_fill(torch.rand(b * self.heads, s, s) > 0.9, float("-inf"))
        per_head.diagonal(dim1=1, dim2=2).zero_()  # (B*H, L, S) 3-d mask, no row all -inf
        m, w = self.mha(x, x, x, attn_mask=per_head, need_weights=True, average_attn_weights=False)
        return (a + c).transpose(1, 2).reshape(b, s, d) + m, w


@_seeded
def attention_odd_masks():
    """Attention with masks of odd shapes (forward + backward): SDPA with a (B,1,1,S) boolean mask, SDPA with an
    (L,S) float mask and dropout, nn.MultiheadAttention with a (B*H,L,S) mask returning per-head weights."""
    pad = torch.zeros(4, 24, dtype=torch.bool)
    pad[1, 20:] = True
    pad[3, 10:] = True
    return _OddMasks().train(), (torch.randn(4, 24, 64), pad)


class _Deform(nn.Module):
    def __init__(self):
        super().__init__()
        from torchvision.ops import DeformConv2d
        self.offset = nn.Conv2d(16, 2 * 9, 3, padding=1)
        self.mask = nn.Conv2d(16, 9, 3, padding=1)
        self.dconv = DeformConv2d(16, 32, 3, padding=1)
        self.stem = nn.Conv2d(3, 16, 3, padding=1)

    def forward(self, x):
        h = F.relu(self.stem(x))
        return self.dconv(h, self.offset(h), torch.sigmoid(self.mask(h)))


@_seeded
def deform_conv():
    """torchvision.ops.DeformConv2d (DCNv2: offsets and a modulation mask predicted by convs), forward + backward."""
    return _Deform(), torch.randn(2, 3, 32, 32)


@_seeded
def hf_albert():
    """transformers ALBERT masked LM: factorized embedding (128 -> 64), one layer's weights shared by 3 layers,
    forward + backward."""
    from transformers import AlbertConfig, AlbertForMaskedLM
    cfg = AlbertConfig(vocab_size=256, embedding_size=32, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                       intermediate_size=128, max_position_embeddings=64)
    return AlbertForMaskedLM(cfg), {"input_ids": torch.randint(0, 256, (2, 24)),
                                     "labels": torch.randint(0, 256, (2, 24))}


@_seeded
def hf_segformer():
    """transformers SegFormer semantic segmentation: overlapping patch embeddings, efficient attention with spatial
    reduction (strided conv), Mix-FFN's depthwise conv, the all-MLP decode head upsampling each stage."""
    from transformers import SegformerConfig, SegformerForSemanticSegmentation
    cfg = SegformerConfig(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[4, 2], hidden_sizes=[16, 32],
                          patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                          decoder_hidden_size=32, num_labels=5)
    return SegformerForSemanticSegmentation(cfg).eval(), torch.randn(2, 3, 64, 64)


@_seeded
def hf_vitmae():
    """transformers ViTMAE pre-training (forward + backward): random masking (noise argsort, gather of the kept
    patches), an encoder on 25% of the patches, a decoder with mask tokens, the pixel loss on masked patches."""
    from transformers import ViTMAEConfig, ViTMAEForPreTraining
    cfg = ViTMAEConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                       image_size=32, patch_size=4, decoder_hidden_size=32, decoder_num_hidden_layers=1,
                       decoder_num_attention_heads=4, decoder_intermediate_size=64, mask_ratio=0.75)
    return ViTMAEForPreTraining(cfg), torch.randn(2, 3, 32, 32)


@_seeded
def hf_longformer():
    """transformers Longformer: sliding-window attention by overlapping chunks (as_strided, einsum, diagonal
    padding), one global token, on 128 tokens with a window of 16."""
    from transformers import LongformerConfig, LongformerModel
    cfg = LongformerConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=128, attention_window=16, max_position_embeddings=200)
    ids = torch.randint(0, 256, (2, 128))
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    return LongformerModel(cfg).eval(), {"input_ids": ids, "global_attention_mask": glob}


@_seeded
def hf_rwkv():
    """transformers RWKV (v4): the WKV recurrence in pure torch on CPU (a loop over 32 tokens of exp/max/mul), time
    and channel mixing."""
    from transformers import RwkvConfig, RwkvForCausalLM
    cfg = RwkvConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, attention_hidden_size=64,
                     intermediate_size=128, context_length=64)
    return RwkvForCausalLM(cfg).eval(), torch.randint(0, 256, (2, 32))


@_seeded
def hf_gpt_bigcode():
    """transformers GPTBigCode (StarCoder 1): multi-query attention (one key/value head), learned positions,
    forward + backward with labels."""
    from transformers import GPTBigCodeConfig, GPTBigCodeForCausalLM
    cfg = GPTBigCodeConfig(vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=64, multi_query=True,
                           bos_token_id=0, eos_token_id=0)
    ids = torch.randint(0, 256, (2, 32))
    return GPTBigCodeForCausalLM(cfg), {"input_ids": ids, "labels": ids}


@_seeded
def hf_bigbird():
    """transformers BigBird (block-sparse attention: random, window and global blocks gathered by index) on 512
    tokens, blocks of 16."""
    from transformers import BigBirdConfig, BigBirdModel
    cfg = BigBirdConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=1024, attention_type="block_sparse",
                        block_size=16, num_random_blocks=2)
    return BigBirdModel(cfg).eval(), torch.randint(0, 256, (1, 512))


@_seeded
def hf_reformer():
    """transformers Reformer: LSH self-attention (random rotations, argsort into buckets, chunked attention,
    undo-sort gather) alternating with local attention, axial position embeddings."""
    from transformers import ReformerConfig, ReformerModel
    cfg = ReformerConfig(vocab_size=256, hidden_size=64, num_attention_heads=2, attention_head_size=32,
                         attn_layers=["lsh", "local"], feed_forward_size=128, axial_pos_shape=[8, 16],
                         axial_pos_embds_dim=[32, 32], max_position_embeddings=128, lsh_attn_chunk_length=16,
                         local_attn_chunk_length=16, num_buckets=4, num_hashes=2, is_decoder=False)
    return ReformerModel(cfg).eval(), torch.randint(0, 256, (2, 128))


@_seeded
def hf_xlnet():
    """transformers XLNet: two-stream relative attention, its products written as einsums (ibnd,jbnd->bnij),
    relative shift by reshape, forward + backward."""
    from transformers import XLNetConfig, XLNetModel
    cfg = XLNetConfig(vocab_size=256, d_model=64, n_layer=2, n_head=4, d_inner=128)
    return XLNetModel(cfg), torch.randint(0, 256, (2, 32))


@_seeded
def hf_fnet():
    """transformers FNet: token mixing by a 2-d FFT (torch.fft.fftn over hidden and sequence, real part kept)."""
    from transformers import FNetConfig, FNetModel
    cfg = FNetConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, intermediate_size=128,
                     max_position_embeddings=128, use_tpu_fourier_optimizations=False)
    return FNetModel(cfg).eval(), torch.randint(0, 256, (2, 64))


@_seeded
def hf_funnel():
    """transformers Funnel Transformer: the sequence pooled between blocks (strided mean pooling of the queries),
    relative position attention, the upsampling decoder."""
    from transformers import FunnelConfig, FunnelModel
    cfg = FunnelConfig(vocab_size=256, d_model=64, n_head=4, d_head=16, d_inner=128, block_sizes=[1, 1],
                       num_decoder_layers=1)
    return FunnelModel(cfg).eval(), torch.randint(0, 256, (2, 32))


@_seeded
def hf_mobilevit():
    """transformers MobileViT: inverted residuals, then unfold into patches, a transformer over them, fold back."""
    from transformers import MobileViTConfig, MobileViTModel
    cfg = MobileViTConfig(image_size=64, patch_size=2, hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 16, 24, 32,
                          40, 48, 96], num_attention_heads=2)
    return MobileViTModel(cfg).eval(), torch.randn(2, 3, 64, 64)


@_seeded
def hf_autoformer():
    """transformers Autoformer (time series): series decomposition by moving average, auto-correlation by rfft /
    irfft, top-k delays and their gather, forward + backward with past values and time features."""
    from transformers import AutoformerConfig, AutoformerModel
    cfg = AutoformerConfig(prediction_length=8, context_length=16, lags_sequence=[1, 2, 3], d_model=32,
                           encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                           encoder_ffn_dim=32, decoder_ffn_dim=32, num_time_features=1)
    past = 16 + 3
    return AutoformerModel(cfg), {"past_values": torch.randn(2, past), "past_time_features": torch.randn(2, past, 1),
                                  "past_observed_mask": torch.ones(2, past),
                                  "future_values": torch.randn(2, 8), "future_time_features": torch.randn(2, 8, 1)}


@_seeded
def tv_maxvit_t():
    """torchvision maxvit_t (weights=None) at 224 px, eval: MBConv with squeeze-excitation, block and grid attention
    with relative position bias."""
    from torchvision.models import maxvit_t
    return maxvit_t(weights=None).eval(), torch.randn(1, 3, 224, 224)


@_seeded
def tv_swin_v2_t():
    """torchvision swin_v2_t (weights=None) at 128 px, eval: scaled cosine attention, the log-spaced continuous
    position bias MLP, shifted windows with padding."""
    from torchvision.models import swin_v2_t
    return swin_v2_t(weights=None).eval(), torch.randn(1, 3, 128, 128)


class _TwoNets(nn.Module):
    def __init__(self):
        super().__init__()
        from torchvision.models import mobilenet_v3_small, regnet_y_400mf
        self.a, self.b = regnet_y_400mf(weights=None, num_classes=10), mobilenet_v3_small(weights=None, num_classes=10)

    def forward(self, x):
        return self.a(x) + self.b(x)


@_seeded
def tv_regnet_mnv3_train():
    """torchvision regnet_y_400mf + mobilenet_v3_small (weights=None) training at 64 px (forward + backward): grouped
    convs, squeeze-excitation, hardswish/hardsigmoid, BatchNorm in train mode."""
    return _TwoNets().train(), torch.randn(4, 3, 64, 64)


FACTORIES = [fx_graph_module, pruned_convnet, custom_function_hooks, forward_ad_jvp, jit_frozen_optimized,
             metric_losses, special_functions, linalg_extras, pooling_norm_zoo, embedding_max_norm,
             attention_odd_masks, deform_conv, hf_albert, hf_segformer, hf_vitmae, hf_longformer, hf_rwkv,
             hf_gpt_bigcode, hf_bigbird, hf_reformer, hf_xlnet, hf_fnet, hf_funnel, hf_mobilevit, hf_autoformer,
             tv_maxvit_t, tv_swin_v2_t, tv_regnet_mnv3_train]
BACKWARD = {"fx_graph_module", "pruned_convnet", "custom_function_hooks", "metric_losses", "special_functions",
            "linalg_extras", "pooling_norm_zoo", "embedding_max_norm", "attention_odd_masks", "deform_conv",
            "hf_albert", "hf_vitmae", "hf_gpt_bigcode", "hf_xlnet", "hf_autoformer", "tv_regnet_mnv3_train"}

HEADER = '''import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
'''
LOOP = '''
if not os.environ.get("SWEEP8_FCM"):
    for _ in range(LOOPS):
        step()
'''

SCRIPTS = {
    "ema_foreach_clip": ("AdamW(foreach=False), clip_grad_norm_(foreach=True), an EMA of the weights by "
                         "torch._foreach_lerp_, OneCycleLR", '''
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 256), nn.GELU(),
                      nn.Linear(256, 10))
ema = [p.detach().clone() for p in model.parameters()]
opt = torch.optim.AdamW(model.parameters(), 1e-3, foreach=False)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=100)
x, y = torch.randn(128, 64), torch.randint(0, 10, (128,))
LOOPS = 10

def step():
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
    opt.step(); sched.step()
    with torch.no_grad():
        torch._foreach_lerp_(ema, [p.detach() for p in model.parameters()], 0.01)
'''),
    "optimizer_zoo": ("Seven optimizers on seven MLP blocks, one step each per step: RMSprop (centered, momentum), "
                      "NAdam, RAdam, Adamax, Adagrad, Adafactor, AdamW(fused=True) on CPU", '''
blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64)) for _ in range(7))
opts = [torch.optim.RMSprop(blocks[0].parameters(), 1e-3, momentum=0.9, centered=True),
        torch.optim.NAdam(blocks[1].parameters(), 1e-3),
        torch.optim.RAdam(blocks[2].parameters(), 1e-3, decoupled_weight_decay=True, weight_decay=0.01),
        torch.optim.Adamax(blocks[3].parameters(), 1e-3),
        torch.optim.Adagrad(blocks[4].parameters(), 1e-2),
        torch.optim.Adafactor(blocks[5].parameters(), 1e-2),
        torch.optim.AdamW(blocks[6].parameters(), 1e-3, fused=True)]
x = torch.randn(64, 64)
LOOPS = 10

def step():
    h = x
    for b in blocks:
        h = b(h) + h
    loss = h.pow(2).mean()
    for o in opts:
        o.zero_grad()
    loss.backward()
    for o in opts:
        o.step()
'''),
    "swa_averaged_model": ("SWA: AveragedModel (and an EMA one by get_ema_multi_avg_fn), SWALR, update_bn over a "
                           "loader at the end", '''
from torch.optim.swa_utils import AveragedModel, SWALR, get_ema_multi_avg_fn, update_bn
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(16, 10))
swa, ema = AveragedModel(model), AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
opt = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
sched = SWALR(opt, swa_lr=0.05, anneal_epochs=3)
x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
LOOPS = 10

def step():
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    swa.update_parameters(model); ema.update_parameters(model)

if not os.environ.get("SWEEP8_FCM"):
    for _ in range(LOOPS):
        step()
    update_bn([(x, y)], swa)
'''),
    "cpu_fp16_gradscaler": ("CPU fp16 autocast with torch.amp.GradScaler('cpu'): scale, unscale_ before clipping, "
                            "step, update", '''
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
LOOPS = 10

def step():
    with torch.autocast("cpu", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
'''),
    "odd_ops_train": ("A training step over the ops sweep 8 found without a formula, so that `trace` counts them from "
                      "the trace's recorded arguments: QR, lstsq, slogdet, pdist, multi-margin loss, nn.Bilinear, "
                      "fractional max pooling + MaxUnpool, an Embedding with max_norm, entr", '''
class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(500, 16, max_norm=1.0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.frac = nn.FractionalMaxPool2d(2, output_size=8)
        self.pool, self.unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
        self.bil = nn.Bilinear(16, 8, 10)
        self.w = nn.Parameter(torch.randn(32, 16) / 4)

    def forward(self, ids, img):
        e = self.emb(ids).mean(1)                                   # (B, 16)
        h = torch.relu(self.conv(img))
        p, idx = self.pool(h)
        f = self.frac(h + self.unpool(p, idx)).mean((2, 3))         # (B, 8)
        logits = self.bil(e, f)
        q, r = torch.linalg.qr(self.w)
        sol = torch.linalg.lstsq(self.w, e.T.detach()[:16].repeat(2, 1)).solution
        logdet = torch.linalg.slogdet(r[:16] + 2 * torch.eye(16)).logabsdet
        spread = torch.pdist(e).mean() + torch.special.entr(torch.sigmoid(logits)).mean()
        return logits, q.sum() + sol.sum() + logdet + spread

model = Odd()
opt = torch.optim.SGD(model.parameters(), 0.01)
ids, img, y = torch.randint(0, 500, (16, 12)), torch.randn(16, 3, 16, 16), torch.randint(0, 10, (16,))
LOOPS = 10

def step():
    logits, extra = model(ids, img)
    loss = nn.functional.multi_margin_loss(logits, y) + 0.01 * extra
    opt.zero_grad(); loss.backward(); opt.step()
'''),
}
DOCTOR = {"ema_foreach_clip", "optimizer_zoo", "cpu_fp16_gradscaler"}
EXPECT_EXIT = {}
DIFFS = []


SWEEP = Sweep(8, "Eighth", HERE, FACTORIES, SCRIPTS, HEADER, LOOP, BACKWARD, DOCTOR, EXPECT_EXIT, DIFFS)


if __name__ == "__main__":
    SWEEP.main(sys.argv[1:])
