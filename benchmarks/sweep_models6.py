"""Sixth model sweep: models and scripts users bring that sweeps 1-5 never tried, on CPU. torchvision detection and
segmentation models in eval (weights=None), TorchScript and torch.export modules, a dynamically quantized LSTM,
complex-valued ops, bf16/fp16 and channels_last models, forward hooks, nn.MultiheadAttention with a key padding mask,
F.scaled_dot_product_attention with enable_gqa and is_causal, forwards returning a dict / dataclass / None, in-place
ops on the inputs, torch.distributions; and user scripts: an AdamW step under CPU bf16 autocast with gradient
accumulation, a GAN's two optimizers, a VAE, DataLoader workers (fork and spawn), argparse, sys.exit and a raise.

    python benchmarks/sweep_models6.py OUT_DIR [NAME...]   # run the cases, write OUT_DIR/sweep.json and sweep6.md
    python benchmarks/sweep_models6.py --table OUT_DIR     # the table of a finished run

Factories (``FACTORIES``) run through `roofline analyze benchmarks/sweep_models6.py:NAME` (``BACKWARD``: with
--backward); scripts (``SCRIPTS``, written to OUT_DIR/scripts/NAME.py) through `roofline profile` (or `doctor`),
and the trace a profile wrote through `roofline trace`; two reports through `roofline diff`. Each script defines
step() and calls it in a loop unless SWEEP6_FCM is set, so the runner can import it and count one step() under
torch.utils.flop_counter.FlopCounterMode (it counts matrix products, convolutions and attention only; not
quantized, FFT or torchvision ops, nor the fused MHA). ``EXPECT_EXIT``: cases whose input is unusable, which must
exit 2 with one line. The checks: exit code, no traceback, no nan/inf/negative time, the unmodelled share, our
FLOPs per step against FlopCounterMode's, the findings' titles.
"""
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from sweep_models4 import _seeded  # a factory seeded at 0 on each call
from sweep_runner import Sweep

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent


def _detection(name, image=128, **kw):
    import torchvision.models.detection as D
    return getattr(D, name)(weights=None, weights_backbone=None, **kw).eval(), [torch.rand(3, image, image)]


@_seeded
def fasterrcnn_mnv3():
    """Faster R-CNN, MobileNetV3 FPN at 320: RPN, roi_align, batched nms."""
    return _detection("fasterrcnn_mobilenet_v3_large_320_fpn", 160)


@_seeded
def maskrcnn():
    """Mask R-CNN ResNet-50 FPN at 128 px: the mask head on every detection (random weights: 100 of them)."""
    return _detection("maskrcnn_resnet50_fpn", min_size=128, max_size=128)


@_seeded
def keypointrcnn():
    """Keypoint R-CNN ResNet-50 FPN at 128 px."""
    return _detection("keypointrcnn_resnet50_fpn", min_size=128, max_size=128)


@_seeded
def retinanet():
    """RetinaNet ResNet-50 FPN at 128 px: focal-loss heads, per-level top-k and nms."""
    return _detection("retinanet_resnet50_fpn", min_size=128, max_size=128)


@_seeded
def ssdlite():
    """SSDlite320 MobileNetV3."""
    return _detection("ssdlite320_mobilenet_v3_large", 160)


@_seeded
def deeplabv3():
    """DeepLabV3 MobileNetV3: atrous convs, ASPP's global pooling, bilinear upsampling."""
    import torchvision.models.segmentation as S
    return S.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None).eval(), torch.rand(1, 3, 96, 96)


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(64, 128), nn.Linear(128, 32)

    def forward(self, x):
        return self.b(F.relu(self.a(x)))


@_seeded
def jit_script():
    """torch.jit.script'd MLP: no module hooks (the module column is empty), the graph executor's nodes."""
    return torch.jit.script(_MLP()), torch.randn(8, 64)


@_seeded
def jit_trace():
    """torch.jit.trace'd MLP."""
    return torch.jit.trace(_MLP().eval(), torch.randn(8, 64)), torch.randn(8, 64)


@_seeded
def exported_module():
    """torch.export'd MLP, run through ExportedProgram.module()."""
    return torch.export.export(_MLP().eval(), (torch.randn(8, 64),)).module(), torch.randn(8, 64)


@_seeded
def exported_program():
    """The ExportedProgram itself as the model: not callable like a module, a one-line error (exit 2)."""
    return torch.export.export(_MLP().eval(), (torch.randn(8, 64),)), torch.randn(8, 64)


class _LSTMStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.out = nn.LSTM(32, 64, 2, batch_first=True), nn.Linear(64, 10)

    def forward(self, x):
        return self.out(self.lstm(x)[0])


@_seeded
def quantized_dynamic_lstm():
    """quantize_dynamic on an LSTM + Linear: quantized::linear_dynamic and the quantized LSTM."""
    m = torch.ao.quantization.quantize_dynamic(_LSTMStack().eval(), {nn.LSTM, nn.Linear}, dtype=torch.qint8)
    return m, torch.randn(4, 16, 32)


class _Complex(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 64, dtype=torch.cfloat) / 8)

    def forward(self, x):
        y = x @ self.w
        return torch.fft.ifft(y * torch.exp(1j * torch.angle(y))).abs()


@_seeded
def complex_ops():
    """A complex64 matmul, complex mul/exp/angle/abs and an inverse FFT (forward + backward)."""
    return _Complex(), torch.randn(8, 64, dtype=torch.cfloat)


@_seeded
def bf16_mlp():
    """An MLP cast to bfloat16 (CPU's bf16 GEMM path)."""
    return _MLP().to(torch.bfloat16), torch.randn(8, 64, dtype=torch.bfloat16)


@_seeded
def fp16_mlp():
    """An MLP cast to float16 on CPU."""
    return _MLP().to(torch.float16), torch.randn(8, 64, dtype=torch.float16)


@_seeded
def channels_last_resnet18():
    """ResNet-18 and its input in channels_last."""
    import torchvision
    m = torchvision.models.resnet18(num_classes=10).eval().to(memory_format=torch.channels_last)
    return m, torch.randn(2, 3, 64, 64).to(memory_format=torch.channels_last)


@_seeded
def forward_hooks():
    """A forward hook computing a norm of an activation, a pre-hook rescaling the next layer's input."""
    m, seen = _MLP(), []
    m.a.register_forward_hook(lambda mod, args, out: seen.append(out.norm()))
    m.b.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    return m, torch.randn(8, 64)


class _MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x, pad):
        return self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]


def _padded_batch():
    pad = torch.zeros(2, 12, dtype=torch.bool)
    pad[1, 8:] = True
    return torch.randn(2, 12, 32), pad


@_seeded
def mha_padmask_eval():
    """nn.MultiheadAttention with a key padding mask in eval: the fused _native_multi_head_attention."""
    return _MHA().eval(), _padded_batch()


@_seeded
def mha_padmask_train():
    """The same in train mode (forward + backward): in_proj, sdpa with a boolean mask, out_proj."""
    return _MHA().train(), _padded_batch()


class _GQA(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


@_seeded
def sdpa_gqa_causal():
    """F.scaled_dot_product_attention, 8 query heads over 2 kv heads, causal."""
    return _GQA(), (torch.randn(2, 8, 16, 16), torch.randn(2, 2, 16, 16), torch.randn(2, 2, 16, 16))


class _DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = _MLP()

    def forward(self, x):
        y = self.mlp(x)
        return {"logits": y, "aux": None, "pair": (y.sum(), None)}


@dataclass
class _Out:
    logits: torch.Tensor
    extra: object = None


class _DataclassOut(_DictOut):
    def forward(self, x):
        return _Out(self.mlp(x))


class _NoneOut(_DictOut):
    def forward(self, x):
        self.mlp(x)


class _InPlace(_DictOut):
    def forward(self, x):
        x.mul_(0.5).add_(1.0)
        return self.mlp(x)


def _mlp_case(name, model_class, doc):
    """A factory of ``model_class`` (an MLP inside) on an (8, 64) batch, named ``name``."""
    def make():
        return model_class(), torch.randn(8, 64)
    make.__name__, make.__doc__ = name, doc
    return _seeded(make)


dict_out = _mlp_case("dict_out", _DictOut, "A forward returning a dict holding a tensor, None and a tuple (forward "
                     "+ backward).")
dataclass_out = _mlp_case("dataclass_out", _DataclassOut, "A forward returning a dataclass (forward + backward).")
none_out = _mlp_case("none_out", _NoneOut, "A forward returning None.")
none_out_backward = _mlp_case("none_out_backward", _NoneOut, "A forward returning None, with --backward: no loss to "
                              "make, a one-line error (exit 2).")
inplace_on_inputs = _mlp_case("inplace_on_inputs", _InPlace, "In-place mul_/add_ on the input tensor (each timed "
                              "iteration rescales it again).")


class _Dist(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 8)

    def forward(self, x):
        mu = self.lin(x)
        normal = torch.distributions.Normal(mu, torch.ones_like(mu))
        z = normal.rsample()
        cat = torch.distributions.Categorical(logits=mu)
        prior = torch.distributions.Normal(0.0, 1.0)
        return (normal.log_prob(z).sum() + cat.entropy().sum()
                + torch.distributions.kl_divergence(normal, prior).sum())


@_seeded
def distributions():
    """torch.distributions: Normal.rsample/log_prob, Categorical.entropy, a KL divergence (forward + backward)."""
    return _Dist(), torch.randn(32, 16)


FACTORIES = [fasterrcnn_mnv3, maskrcnn, keypointrcnn, retinanet, ssdlite, deeplabv3, jit_script, jit_trace,
             exported_module, exported_program, quantized_dynamic_lstm, complex_ops, bf16_mlp, fp16_mlp,
             channels_last_resnet18, forward_hooks, mha_padmask_eval, mha_padmask_train, sdpa_gqa_causal, dict_out,
             dataclass_out, none_out, none_out_backward, inplace_on_inputs, distributions]
BACKWARD = {"jit_script", "complex_ops", "mha_padmask_train", "dict_out", "dataclass_out", "none_out_backward",
            "distributions"}

HEADER = '''import os, sys, torch
import torch.nn as nn
torch.manual_seed(0)
'''
LOOP = '''
if not os.environ.get("SWEEP6_FCM"):
    for _ in range(LOOPS):
        step()
'''

def _loader_script(context):
    """A linear classifier trained over a DataLoader with two workers (``context``: more DataLoader arguments)."""
    return f'''
from torch.utils.data import DataLoader, TensorDataset
model = nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 32), torch.randint(0, 4, (32,))
LOOPS = 0

def step():
    nn.functional.cross_entropy(model(x), y).backward(); opt.step(); opt.zero_grad()

if __name__ == "__main__" and not os.environ.get("SWEEP6_FCM"):
    ds = TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
    for x, y in DataLoader(ds, batch_size=32, num_workers=2{context}):
        step()
'''


def _ending_script(loops, ending):
    """``loops`` SGD steps of a Linear, then ``ending`` (sys.exit, raise) unless counted under FlopCounterMode."""
    return f'''
model = nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 64)
LOOPS = {loops}

def step():
    model(x).sum().backward(); opt.step(); opt.zero_grad()
''' + LOOP + f'''
if not os.environ.get("SWEEP6_FCM"):
    {ending}
'''


def _accumulating_script(context):
    """An MLP's AdamW step over 4 accumulated micro-batches, each forward under ``context``."""
    return f'''
import contextlib
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
LOOPS = 10

def step():
    for _ in range(4):
        with {context}:
            loss = nn.functional.cross_entropy(model(x), y) / 4
        loss.backward()
    opt.step()
    opt.zero_grad()
'''


SCRIPTS = {
    "train_amp_accum": ("AdamW step under torch.amp.autocast('cpu', bfloat16), 4 micro-batches accumulated",
                        _accumulating_script('torch.amp.autocast("cpu", dtype=torch.bfloat16)')),
    "train_fp32_accum": ("The same step in fp32 (the other side of the diff)",
                         _accumulating_script("contextlib.nullcontext()")),
    "gan_two_optimizers": ("A GAN: discriminator and generator steps, two Adam optimizers (the step: the one with "
                           "the most parameters, the generator's)", '''
G = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 64))
D = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
og, od = torch.optim.Adam(G.parameters(), 1e-3), torch.optim.Adam(D.parameters(), 1e-3)
bce = nn.BCEWithLogitsLoss()
real, z = torch.randn(32, 64), torch.randn(32, 16)
LOOPS = 10

def step():
    fake = G(z)
    ld = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    od.zero_grad(); ld.backward(); od.step()
    lg = bce(D(fake), torch.ones(32, 1))
    og.zero_grad(); lg.backward(); og.step()
'''),
    "vae_distributions": ("A VAE: Normal.rsample, kl_divergence, Adam", '''
from torch.distributions import Normal, kl_divergence

class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.dec = nn.Linear(64, 32), nn.Linear(16, 64)

    def forward(self, x):
        mu, logv = self.enc(x).chunk(2, -1)
        q = Normal(mu, (0.5 * logv).exp())
        rec = self.dec(q.rsample())
        prior = Normal(torch.zeros_like(mu), torch.ones_like(mu))
        return ((rec - x) ** 2).sum(-1).mean() + kl_divergence(q, prior).sum(-1).mean()

model, x = VAE(), torch.randn(32, 64)
opt = torch.optim.Adam(model.parameters(), 1e-3)
LOOPS = 10

def step():
    loss = model(x)
    opt.zero_grad(); loss.backward(); opt.step()
'''),
    "inference_direct_forward": ("inference_mode, the model called as model.forward(x) (its own hooks never run)",
                                 '''
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64)).eval()
x = torch.randn(16, 64)
LOOPS = 10

def step():
    with torch.inference_mode():
        model.forward(x)
'''),
    "loader_workers_fork": ("A DataLoader with num_workers=2 (fork) under if __name__ == '__main__'",
                            _loader_script("")),
    "loader_workers_spawn": ("A DataLoader with num_workers=2 and the spawn context (the workers import __main__)",
                             _loader_script(', multiprocessing_context="spawn"')),
    "argparse_argv": ("argparse with a required option, passed after the script", '''
import argparse
p = argparse.ArgumentParser()
p.add_argument("--width", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args() if not os.environ.get("SWEEP6_FCM") else p.parse_args(["--width", "48"])
assert sys.argv[0].endswith("argparse_argv.py"), sys.argv
model = nn.Linear(a.width, a.width)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, a.width)
LOOPS = a.steps

def step():
    model(x).sum().backward(); opt.step(); opt.zero_grad()
''', ["--width", "48", "--steps", "12"]),
    "sys_exit_0_after_loop": ("sys.exit(0) after ten steps", _ending_script(10, "sys.exit(0)"), ["--run-to-end"]),
    "sys_exit_0_too_few_steps": ("sys.exit(0) after five steps, fewer than the schedule needs: exit 2, one line",
                                 _ending_script(5, "sys.exit(0)")),
    "sys_exit_3": ("sys.exit(3) after ten steps with --run-to-end: the script failed, exit 2 naming it",
                   _ending_script(10, "sys.exit(3)"), ["--run-to-end"]),
    "raises_after_loop": ("raise ValueError after ten steps: stopped before it by default (exit 0)",
                          _ending_script(10, 'raise ValueError("a user bug after training")')),
    "raises_run_to_end": ("the same raise with --run-to-end: exit 2 naming it and its line",
                          _ending_script(10, 'raise ValueError("a user bug after training")'), ["--run-to-end"]),
}
DOCTOR = {"train_amp_accum"}  # also run `roofline doctor SCRIPT` (a profile and its findings in one command)
EXPECT_EXIT = {"exported_program": 2, "none_out_backward": 2, "sys_exit_0_too_few_steps": 2, "sys_exit_3": 2,
               "raises_run_to_end": 2}
DIFFS = [("train_fp32_accum", "train_amp_accum")]


SWEEP = Sweep(6, "Sixth", HERE, FACTORIES, SCRIPTS, HEADER, LOOP, BACKWARD, DOCTOR, EXPECT_EXIT, DIFFS)


if __name__ == "__main__":
    SWEEP.main(sys.argv[1:])
