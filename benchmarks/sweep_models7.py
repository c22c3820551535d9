"""Seventh model sweep: models and scripts users bring that sweeps 1-6 never tried, on CPU. Mixture-of-experts
(transformers Mixtral and a hand-written top-2 router with index_add_), Whisper (conv front end + encoder-decoder),
a GRU and a bidirectional LSTM over packed sequences, a DLRM-like recommender (EmbeddingBag with offsets, a pairwise
bmm interaction), pure-torch graph message passing (index_select / index_add_ / scatter_reduce_), a spatial
transformer (affine_grid, grid_sample, bilinear/bicubic interpolate), a Conv3d/ConvTranspose3d UNet block with
depthwise-separable and grouped 2-d convs, an einsum Perceiver, torch.func.functional_call + vmap over an ensemble,
unfold/fold patch ops, torch.nested jagged tensors, a static-quantized (torch.ao, x86) conv model, a
torch.compile(inductor) MLP, a Gaussian process (cholesky, triangular solves), a ranking loss (sort, argsort,
logcumsumexp, searchsorted, bucketize), an upscaler with reflection/replication/circular padding and PixelShuffle,
and an STFT mask with istft; and user scripts: a CTC-loss training step and a DLRM training step.

    python benchmarks/sweep_models7.py OUT_DIR [NAME...]   # run the cases, write OUT_DIR/sweep.json and sweep7.md
    python benchmarks/sweep_models7.py --table OUT_DIR     # the table of a finished run

The runner is sweep_models6.py's (see its docstring): factories through `roofline analyze` (``BACKWARD``: with
--backward), scripts through `roofline profile` then `roofline trace` of the trace it wrote (``DOCTOR``: also
`roofline doctor` of the report). Checks: exit code, no traceback, no nan/inf/negative time, the unmodelled share,
our FLOPs per step against FlopCounterMode's, the findings' titles.
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


@_seeded
def mixtral_moe():
    """transformers Mixtral, 2 layers, 4 experts top-2: the sparse MoE block's router, topk, one_hot, index_add_."""
    from transformers import MixtralConfig, MixtralForCausalLM
    cfg = MixtralConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                        max_position_embeddings=64)
    return MixtralForCausalLM(cfg).eval(), torch.randint(0, 256, (2, 16))


class _TopKMoE(nn.Module):
    """A hand-written top-2 MoE: softmax router, per-expert index_select of its tokens, index_add_ of the outputs."""

    def __init__(self, d=64, experts=4):
        super().__init__()
        self.router = nn.Linear(d, experts)
        self.w1 = nn.Parameter(torch.randn(experts, d, 4 * d) / 8)
        self.w2 = nn.Parameter(torch.randn(experts, 4 * d, d) / 16)

    def forward(self, x):
        t = x.reshape(-1, x.shape[-1])
        weights, chosen = self.router(t).softmax(-1).topk(2, dim=-1)
        out = torch.zeros_like(t)
        for e in range(self.w1.shape[0]):
            rows, slot = torch.where(chosen == e)
            h = F.silu(t.index_select(0, rows) @ self.w1[e]) @ self.w2[e]
            out.index_add_(0, rows, h * weights[rows, slot, None])
        aux = torch.zeros(self.w1.shape[0]).scatter_add_(0, chosen.flatten(), torch.ones(chosen.numel()))
        return out.reshape(x.shape), aux


@_seeded
def topk_moe_train():
    """The hand-written top-2 MoE, forward + backward (index_add_'s backward: index_select; scatter_add_)."""
    return _TopKMoE(), torch.randn(4, 32, 64)


@_seeded
def whisper():
    """transformers Whisper, tiny config: two Conv1d over 80 mel bins, encoder, decoder with cross-attention."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    cfg = WhisperConfig(vocab_size=256, num_mel_bins=80, d_model=64, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                        decoder_ffn_dim=128, max_source_positions=100, max_target_positions=32,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    model = WhisperForConditionalGeneration(cfg).eval()
    return model, dict(input_features=torch.randn(1, 80, 200), decoder_input_ids=torch.randint(0, 256, (1, 8)))


class _PackedRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(32, 48, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(96, 32, batch_first=True)
        self.out = nn.Linear(32, 5)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = self.gru(h)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True)
        return self.out(h)


@_seeded
def packed_bilstm_gru():
    """A 2-layer bidirectional LSTM then a GRU over pack_padded_sequence (unsorted lengths), forward + backward."""
    return _PackedRNN(), (torch.randn(6, 20, 32), torch.tensor([20, 5, 13, 20, 9, 2]))


class _DLRM(nn.Module):
    def __init__(self, tables=4, rows=1000, d=16):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, d, mode="sum") for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, d), nn.ReLU())
        pairs = (tables + 1) * tables // 2
        self.top = nn.Sequential(nn.Linear(d + pairs, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        feats = torch.stack([x] + [bag(indices[i], offsets[i]) for i, bag in enumerate(self.bags)], 1)
        z = torch.bmm(feats, feats.transpose(1, 2))
        li, lj = torch.tril_indices(feats.shape[1], feats.shape[1], offset=-1)
        return torch.sigmoid(self.top(torch.cat([x, z[:, li, lj]], 1)))


def _dlrm_batch(batch=32, tables=4, rows=1000):
    lengths = torch.randint(1, 6, (tables, batch))
    offsets = torch.cat([torch.zeros(tables, 1, dtype=torch.long), lengths.cumsum(1)[:, :-1]], 1)
    indices = [torch.randint(0, rows, (int(n),)) for n in lengths.sum(1)]
    return torch.randn(batch, 13), indices, offsets


@_seeded
def dlrm():
    """A DLRM-like recommender: 4 EmbeddingBag(sum) with offsets, bottom/top MLPs, a bmm pairwise interaction and
    tril_indices gather (forward + backward)."""
    return _DLRM(), _dlrm_batch()


class _GNN(nn.Module):
    """Two message-passing layers: gather source features, scatter-add to targets (mean by degree), a max-pool
    readout by scatter_reduce_."""

    def __init__(self, d=32):
        super().__init__()
        self.msg = nn.ModuleList(nn.Linear(d, d) for _ in range(2))
        self.upd = nn.ModuleList(nn.Linear(2 * d, d) for _ in range(2))

    def forward(self, x, edges, graph):
        src, dst = edges
        deg = torch.zeros(x.shape[0]).index_add_(0, dst, torch.ones(dst.numel())).clamp_(min=1)
        for msg, upd in zip(self.msg, self.upd):
            m = msg(x.index_select(0, src))
            agg = torch.zeros_like(x).index_add_(0, dst, m) / deg[:, None]
            x = F.relu(upd(torch.cat([x, agg], -1)))
        pooled = torch.zeros(int(graph.max()) + 1, x.shape[1]).scatter_reduce_(
            0, graph[:, None].expand_as(x), x, reduce="amax", include_self=False)
        return pooled


@_seeded
def gnn_message_passing():
    """Pure-torch GNN (forward + backward): index_select, index_add_, scatter_reduce_(amax), 500 nodes/4000 edges."""
    return _GNN(), (torch.randn(500, 32), torch.randint(0, 500, (2, 4000)), torch.arange(500) // 50)


class _STN(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(3, 8, 5, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                                 nn.Linear(128, 6))
        self.head = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3) + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
        grid = F.affine_grid(theta, x.shape, align_corners=False)
        warped = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
        small = F.interpolate(self.head(warped), scale_factor=0.5, mode="bilinear", align_corners=True)
        big = F.interpolate(small, size=(96, 96), mode="bicubic", align_corners=False)
        near = F.grid_sample(big, grid.repeat(1, 2, 2, 1).clamp(-1, 1), mode="nearest", align_corners=True)
        return near


@_seeded
def spatial_transformer():
    """affine_grid + grid_sample (bilinear/border, nearest) + interpolate (bilinear align_corners, bicubic),
    forward + backward."""
    return _STN(), torch.randn(2, 3, 48, 48)


class _UNet3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Sequential(nn.Conv3d(2, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU(),
                                  nn.Conv3d(16, 32, 3, stride=2, padding=1))
        self.up = nn.ConvTranspose3d(32, 16, 2, stride=2)
        self.dw = nn.Conv2d(16 * 8, 16 * 8, 3, padding=1, groups=16 * 8)  # depthwise over (C*D) planes
        self.pw = nn.Conv2d(16 * 8, 32, 1)
        self.grouped = nn.Conv2d(32, 32, 3, padding=1, groups=4)

    def forward(self, x):
        h = self.up(self.down(x))
        b, c, d, hh, w = h.shape
        p = self.pw(self.dw(h.reshape(b, c * d, hh, w)))
        return self.grouped(F.relu(p))


@_seeded
def conv3d_unet_block():
    """Conv3d + GroupNorm + strided Conv3d + ConvTranspose3d, then a depthwise-separable and a grouped Conv2d."""
    return _UNet3D(), torch.randn(2, 2, 8, 24, 24)


class _Perceiver(nn.Module):
    """Latents cross-attend to the input and self-attend, every product an einsum."""

    def __init__(self, d=64, latents=16, heads=4):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(latents, d))
        self.q, self.kv, self.o = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.w = nn.Parameter(torch.randn(heads, d // heads, d // heads) / 4)
        self.heads = heads

    def attend(self, lat, x):
        b, h = x.shape[0], self.heads
        q = self.q(lat).view(b, -1, h, lat.shape[-1] // h)
        k, v = self.kv(x).view(b, x.shape[1], 2, h, -1).unbind(2)
        a = torch.einsum("bqhd,bkhd->bhqk", q, k).mul(q.shape[-1] ** -0.5).softmax(-1)
        out = torch.einsum("bhqk,bkhd->bqhd", a, v)
        out = torch.einsum("bqhd,hde->bqhe", out, self.w)
        return lat + self.o(out.reshape(b, -1, lat.shape[-1]))

    def forward(self, x):
        lat = self.latents.expand(x.shape[0], -1, -1)
        lat = self.attend(lat, x)
        lat = self.attend(lat, lat)
        return torch.einsum("bld,bld->b", lat, lat)


@_seeded
def perceiver_einsum():
    """A tiny Perceiver: cross- and self-attention written as einsums (bqhd,bkhd->bhqk etc.), forward + backward."""
    return _Perceiver(), torch.randn(2, 128, 64)


class _Ensemble(nn.Module):
    """Eight MLPs' parameters stacked, run at once by torch.func.vmap over functional_call."""

    def __init__(self, n=8):
        super().__init__()
        from torch.func import stack_module_state
        members = [nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)) for _ in range(n)]
        params, buffers = stack_module_state(members)
        self.params = nn.ParameterDict({k.replace(".", "_"): nn.Parameter(v) for k, v in params.items()})
        self.names = list(params)
        self.base = [members[0].to("meta")]

    def forward(self, x):
        from torch.func import functional_call, vmap
        stacked = {n: self.params[n.replace(".", "_")] for n in self.names}
        return vmap(lambda p, x: functional_call(self.base[0], p, (x,)), in_dims=(0, None))(stacked, x)


@_seeded
def vmap_ensemble():
    """torch.func.vmap over functional_call of 8 stacked MLPs (batched matmuls), forward + backward."""
    return _Ensemble(), torch.randn(16, 32)


class _Patches(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3 * 8 * 8, 3 * 8 * 8)

    def forward(self, x):
        p = F.unfold(x, kernel_size=8, stride=4)  # overlapping patches
        p = self.proj(p.transpose(1, 2)).transpose(1, 2)
        y = F.fold(p, x.shape[-2:], kernel_size=8, stride=4)
        ones = F.fold(F.unfold(torch.ones_like(x), 8, stride=4), x.shape[-2:], 8, stride=4)
        return y / ones


@_seeded
def unfold_fold():
    """F.unfold (im2col) of overlapping 8x8 patches, a Linear over them, F.fold back and an overlap count."""
    return _Patches(), torch.randn(2, 3, 64, 64)


class _Jagged(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(32, 64), nn.Linear(64, 32)

    def forward(self, x):
        return self.b(F.gelu(self.a(x)))


@_seeded
def nested_jagged():
    """A Linear-GELU-Linear over a torch.nested jagged tensor (3 sequences of lengths 7, 30, 12)."""
    nt = torch.nested.nested_tensor([torch.randn(n, 32) for n in (7, 30, 12)], layout=torch.jagged)
    return _Jagged().eval(), nt


class _QConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = torch.ao.quantization.QuantStub(), torch.ao.quantization.DeQuantStub()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.relu, self.pool, self.fc = nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Linear(32, 10)

    def forward(self, x):
        x = self.quant(x)
        x = self.pool(self.c2(self.relu(self.c1(x))))
        return self.dequant(self.fc(torch.flatten(x, 1)))


@_seeded
def static_quant_conv():
    """Eager-mode static quantization (x86): quantized::conv2d, conv2d_relu fused, linear, adaptive avg pool."""
    q = torch.ao.quantization
    torch.backends.quantized.engine = "x86"
    m = _QConv().eval()
    m.qconfig = q.get_default_qconfig("x86")
    m = q.fuse_modules(m, [["c1", "relu"]])
    m = q.prepare(m)
    with torch.no_grad():
        for _ in range(4):
            m(torch.randn(2, 3, 32, 32))
    return q.convert(m), torch.randn(2, 3, 32, 32)


@_seeded
def compiled_mlp():
    """torch.compile(backend='inductor') of an MLP on CPU: Inductor's C++ kernels are not modelled; the report
    should say where the time went."""
    m = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 64))
    return torch.compile(m.eval(), backend="inductor"), torch.randn(32, 64)


class _GP(nn.Module):
    """An exact Gaussian process's negative log marginal likelihood: RBF kernel by cdist, Cholesky, a triangular
    solve, the log-determinant from the factor's diagonal."""

    def __init__(self):
        super().__init__()
        self.log_len, self.log_noise = nn.Parameter(torch.zeros(())), nn.Parameter(torch.tensor(-2.0))

    def forward(self, x, y):
        k = torch.exp(-0.5 * torch.cdist(x, x).pow(2) / self.log_len.exp() ** 2)
        k = k + self.log_noise.exp() * torch.eye(x.shape[0])
        chol = torch.linalg.cholesky(k)
        alpha = torch.cholesky_solve(y[:, None], chol)
        z = torch.linalg.solve_triangular(chol, y[:, None], upper=False)
        return 0.5 * (y[:, None] * alpha).sum() + chol.diagonal().log().sum() + 0.5 * z.pow(2).sum()


@_seeded
def gp_cholesky():
    """A GP's marginal likelihood (forward + backward): cdist, linalg.cholesky, cholesky_solve, solve_triangular."""
    return _GP(), (torch.randn(256, 8), torch.randn(256))


class _Ranking(nn.Module):
    """A listwise ranking loss (ListMLE) and a soft histogram: sort, gather, logcumsumexp, cumsum, searchsorted,
    bucketize, topk, argsort."""

    def __init__(self):
        super().__init__()
        self.score = nn.Linear(32, 1)

    def forward(self, x, rel):
        s = self.score(x).squeeze(-1)
        order = rel.argsort(dim=-1, descending=True)
        ranked = s.gather(-1, order)
        mle = (ranked.flip(-1).logcumsumexp(-1).flip(-1) - ranked).sum()
        sorted_s, _ = s.sort(dim=-1)
        edges = torch.linspace(-3, 3, 17)
        counts = torch.bucketize(s.detach(), edges).flatten().bincount(minlength=18)
        pos = torch.searchsorted(sorted_s.detach().contiguous(), s.detach().contiguous())
        top = s.topk(5, dim=-1).values.sum() + sorted_s.cumsum(-1).mean()
        return mle + top + counts.float().sum() * 0 + pos.float().mean() * 0


@_seeded
def ranking_sort_ops():
    """ListMLE over 64 lists of 100 items (forward + backward): argsort, gather, flip, logcumsumexp, sort, cumsum,
    topk, bucketize, bincount, searchsorted."""
    return _Ranking(), (torch.randn(64, 100, 32), torch.rand(64, 100))


class _SuperRes(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(nn.ReflectionPad2d(2), nn.Conv2d(3, 32, 5))
        self.body = nn.Sequential(nn.ReplicationPad2d(1), nn.Conv2d(32, 32, 3), nn.PReLU(32))
        self.up = nn.Sequential(nn.Conv2d(32, 3 * 16, 3, padding=1, padding_mode="circular"), nn.PixelShuffle(4))
        self.down = nn.PixelUnshuffle(2)

    def forward(self, x):
        h = self.body(self.head(x))
        return self.down(self.up(h) + F.interpolate(x, scale_factor=4, mode="nearest"))


@_seeded
def super_resolution_pads():
    """An ESPCN-like upscaler (forward + backward): reflection/replication/circular padding, PReLU, PixelShuffle,
    PixelUnshuffle, nearest upsampling."""
    return _SuperRes(), torch.randn(2, 3, 32, 32)


class _Spectrogram(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(256))
        self.mask = nn.Sequential(nn.Linear(129, 129), nn.Sigmoid())

    def forward(self, wav):
        spec = torch.stft(wav, 256, hop_length=64, window=self.window, return_complex=True)
        mag = spec.abs().transpose(1, 2)
        masked = spec * self.mask(torch.log1p(mag)).transpose(1, 2)
        return torch.istft(masked, 256, hop_length=64, window=self.window, length=wav.shape[-1])


@_seeded
def stft_mask_istft():
    """A spectral-mask denoiser (forward + backward): torch.stft, complex abs/mul, a Linear mask, torch.istft."""
    return _Spectrogram(), torch.randn(4, 16000)


FACTORIES = [mixtral_moe, topk_moe_train, whisper, packed_bilstm_gru, dlrm, gnn_message_passing,
             spatial_transformer, conv3d_unet_block, perceiver_einsum, vmap_ensemble, unfold_fold, nested_jagged,
             static_quant_conv, compiled_mlp, gp_cholesky, ranking_sort_ops, super_resolution_pads, stft_mask_istft]
BACKWARD = {"topk_moe_train", "packed_bilstm_gru", "dlrm", "gnn_message_passing", "spatial_transformer",
            "perceiver_einsum", "vmap_ensemble", "unfold_fold", "gp_cholesky", "ranking_sort_ops",
            "super_resolution_pads", "stft_mask_istft"}

HEADER = '''import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
'''
LOOP = '''
if not os.environ.get("SWEEP7_FCM"):
    for _ in range(LOOPS):
        step()
'''

SCRIPTS = {
    "ctc_train": ("A CTC-loss training step: Conv1d front end, bidirectional GRU, log_softmax, F.ctc_loss, AdamW", '''
class ASR(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(40, 64, 5, stride=2, padding=2), nn.GELU())
        self.rnn = nn.GRU(64, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, 29)

    def forward(self, x):
        h = self.front(x).transpose(1, 2)
        return self.out(self.rnn(h)[0]).log_softmax(-1)

model = ASR()
opt = torch.optim.AdamW(model.parameters(), 1e-3)
x = torch.randn(4, 40, 120)
targets = torch.randint(1, 29, (4, 20))
in_lens, tgt_lens = torch.full((4,), 60), torch.tensor([20, 15, 18, 10])
LOOPS = 10

def step():
    logp = model(x).transpose(0, 1)
    loss = nn.functional.ctc_loss(logp, targets, in_lens, tgt_lens, zero_infinity=True)
    opt.zero_grad(); loss.backward(); opt.step()
'''),
    "dlrm_train": ("A DLRM training step: EmbeddingBag(sum, offsets) sparse gradients on SGD, the MLPs on Adam", '''
class DLRM(nn.Module):
    def __init__(self):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(5000, 16, mode="sum", sparse=True) for _ in range(3))
        self.bottom = nn.Sequential(nn.Linear(13, 16), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(16 + 6, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, dense, idx, off):
        x = self.bottom(dense)
        f = torch.stack([x] + [b(idx[i], off[i]) for i, b in enumerate(self.bags)], 1)
        z = torch.bmm(f, f.transpose(1, 2))
        li, lj = torch.tril_indices(4, 4, offset=-1)
        return self.top(torch.cat([x, z[:, li, lj]], 1)).squeeze(1)

model = DLRM()
sparse = torch.optim.SGD([p for b in model.bags for p in b.parameters()], lr=0.1)
dense_opt = torch.optim.Adam(list(model.bottom.parameters()) + list(model.top.parameters()), 1e-3)
dense = torch.randn(64, 13)
idx = [torch.randint(0, 5000, (200,)) for _ in range(3)]
off = torch.arange(0, 200, 200 // 64)[:64].repeat(3, 1)
y = torch.rand(64).round()
LOOPS = 10

def step():
    loss = nn.functional.binary_cross_entropy_with_logits(model(dense, idx, off), y)
    sparse.zero_grad(); dense_opt.zero_grad(); loss.backward(); sparse.step(); dense_opt.step()
'''),
}
DOCTOR = {"ctc_train"}
EXPECT_EXIT = {}
DIFFS = []


SWEEP = Sweep(7, "Seventh", HERE, FACTORIES, SCRIPTS, HEADER, LOOP, BACKWARD, DOCTOR, EXPECT_EXIT, DIFFS)


if __name__ == "__main__":
    SWEEP.main(sys.argv[1:])
