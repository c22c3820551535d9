"""The user scripts gpu_sweep.py runs through `roofline profile`: one small training or inference loop a case, each
on a GPU-only path (or a path whose GPU kernels differ from the CPU's) that the CPU sweeps never profiled live.

Each script takes the device as its first argument; on "cpu" it runs tiny sizes (and bf16 where the GPU case
uses fp16 autocast), so that the flow can be checked on this machine. A case with ``gpu_only`` set is skipped on
CPU with that reason. Models are built from configs with random weights: nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADER = '''import sys, torch
DEV = sys.argv[1] if len(sys.argv) > 1 else "cuda"
CPU = DEV == "cpu"
torch.manual_seed(0)
'''


@dataclass(frozen=True)
class Case:
    name: str
    doc: str
    body: str
    gpu_only: str | None = None  # why the case cannot run on CPU
    timeout_s: int = 90  # the profile's limit on the GPU (trace and doctor get their own)
    profile_args: list[str] = field(default_factory=list)

    def script(self) -> str:
        return f'"""{self.doc}"""\n' + HEADER + self.body.strip() + "\n"


ATTENTION = '''
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
DT = torch.float32 if CPU else torch.float16
B, T = (2, 64) if CPU else (4, 1024)
class Attn(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.qkv = torch.nn.Linear(512, 1536); s.o = torch.nn.Linear(512, 512)
    def forward(s, x):
        b, t, _ = x.shape
        q, k, v = s.qkv(x).view(b, t, 3, 8, 64).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return s.o(y.transpose(1, 2).reshape(b, t, 512))
m = Attn().to(DEV, DT)
x = torch.randn(B, T, 512, device=DEV, dtype=DT)
'''
ATTENTION_TRAIN = ATTENTION + '''
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
with sdpa_kernel(SDPBackend.{backend}):
    for _ in range(12):
        m(x).float().square().mean().backward(); opt.step(); opt.zero_grad()
'''
ATTENTION_INFER = ATTENTION + '''
with sdpa_kernel(SDPBackend.{backend}), torch.no_grad():
    for _ in range(12):
        m(x)
'''

CASES: list[Case] = [
    Case("sdpa_flash_train", "SDPA forced to the flash backend (fp16, causal), training steps with SGD.",
         ATTENTION_TRAIN.format(backend="FLASH_ATTENTION")),
    Case("sdpa_efficient_infer", "SDPA forced to the memory-efficient backend (fp16, causal), inference.",
         ATTENTION_INFER.format(backend="EFFICIENT_ATTENTION"), gpu_only="the efficient SDPA backend is CUDA-only"),
    Case("sdpa_cudnn_train", "SDPA forced to the cuDNN backend (fp16, causal), training steps with SGD.",
         ATTENTION_TRAIN.format(backend="CUDNN_ATTENTION"), gpu_only="the cuDNN SDPA backend is CUDA-only"),
    Case("autocast_fp16_scaler", "A conv net + MLP trained under fp16 autocast with GradScaler (bf16, no scaler, on CPU).",
         '''
import torch.nn as nn
DT = torch.bfloat16 if CPU else torch.float16
B, S = (2, 32) if CPU else (64, 64)
m = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2, padding=1),
                  nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(1024, 512), nn.GELU(), nn.Linear(512, 10)).to(DEV)
opt = torch.optim.SGD(m.parameters(), lr=1e-2, momentum=0.9)
scaler = torch.amp.GradScaler(DEV, enabled=not CPU)
x, y = torch.randn(B, 3, S, S, device=DEV), torch.randint(0, 10, (B,), device=DEV)
for _ in range(12):
    with torch.autocast(DEV, dtype=DT):
        loss = nn.functional.cross_entropy(m(x), y)
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update(); opt.zero_grad()
'''),
    Case("autocast_bf16_transformer", "nn.TransformerEncoder (4 layers) trained under bf16 autocast with AdamW.",
         '''
import torch.nn as nn
B, T, D = (2, 32, 64) if CPU else (8, 512, 512)
layer = nn.TransformerEncoderLayer(D, 8, 4 * D, batch_first=True, norm_first=True)
m = nn.TransformerEncoder(layer, 4).to(DEV)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
x = torch.randn(B, T, D, device=DEV)
for _ in range(12):
    with torch.autocast(DEV, dtype=torch.bfloat16):
        loss = m(x).float().square().mean()
    loss.backward(); opt.step(); opt.zero_grad()
'''),
    Case("channels_last_resnet18", "torchvision resnet18 in channels_last, fp16 inference (fp32 on CPU).",
         '''
import torchvision
DT = torch.float32 if CPU else torch.float16
B, S = (2, 64) if CPU else (32, 224)
m = torchvision.models.resnet18(weights=None).to(DEV, DT).to(memory_format=torch.channels_last).eval()
x = torch.randn(B, 3, S, S, device=DEV, dtype=DT).to(memory_format=torch.channels_last)
with torch.no_grad():
    for _ in range(12):
        m(x)
'''),
    Case("tf32_mlp", "An fp32 MLP trained with TF32 matmuls on (torch.set_float32_matmul_precision('high')).",
         '''
import torch.nn as nn
torch.set_float32_matmul_precision("high")
B, D = (16, 64) if CPU else (4096, 2048)
m = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D), nn.LayerNorm(D)).to(DEV)
opt = torch.optim.Adam(m.parameters(), lr=1e-4, foreach=True)
x = torch.randn(B, D, device=DEV)
for _ in range(12):
    m(x).square().mean().backward(); opt.step(); opt.zero_grad()
'''),
    Case("fused_adamw", "An MLP trained with AdamW(fused=True) (one fused kernel for all parameters).",
         '''
import torch.nn as nn
B, D = (16, 64) if CPU else (1024, 1024)
m = nn.Sequential(*[nn.Sequential(nn.Linear(D, D), nn.ReLU()) for _ in range(6)]).to(DEV)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
x = torch.randn(B, D, device=DEV)
for _ in range(12):
    m(x).square().mean().backward(); opt.step(); opt.zero_grad()
'''),
    Case("cuda_graph_replay", "An MLP's forward captured once in a torch.cuda.CUDAGraph and replayed each step.",
         '''
import torch.nn as nn
class Graphed(nn.Module):
    def __init__(s, inner, x):
        super().__init__(); s.inner = inner; s.static_in = x.clone()
        side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                inner(s.static_in)
        torch.cuda.current_stream().wait_stream(side)
        s.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(s.graph), torch.no_grad():
            s.static_out = inner(s.static_in)
    def forward(s, x):
        s.static_in.copy_(x); s.graph.replay(); return s.static_out
inner = nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.GELU()) for _ in range(8)]).to(DEV, torch.float16)
x = torch.randn(64, 1024, device=DEV, dtype=torch.float16)
g = Graphed(inner, x)
for _ in range(12):
    g(x)
''', gpu_only="CUDA graphs"),
    Case("compile_default", "torch.compile (default mode, inductor) of an MLP block, training steps.",
         '''
import torch.nn as nn
B, D = (16, 64) if CPU else (2048, 1024)
m = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D)).to(DEV)
cm = torch.compile(m)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
x = torch.randn(B, D, device=DEV)
for _ in range(12):
    cm(x).square().mean().backward(); opt.step(); opt.zero_grad()
''', timeout_s=150),
    Case("compile_reduce_overhead", "torch.compile(mode='reduce-overhead') (CUDA graph trees) of an MLP, inference.",
         '''
import torch.nn as nn
m = nn.Sequential(*[nn.Sequential(nn.Linear(512, 512), nn.GELU()) for _ in range(6)]).to(DEV, torch.float16).eval()
cm = torch.compile(m, mode="reduce-overhead")
x = torch.randn(32, 512, device=DEV, dtype=torch.float16)
with torch.no_grad():
    for _ in range(12):
        cm(x)
''', gpu_only="reduce-overhead compiles to CUDA graphs", timeout_s=150),
    Case("cudnn_lstm", "A 2-layer LSTM (cuDNN on the GPU) trained with Adam on a sequence regression.",
         '''
import torch.nn as nn
B, T, H = (2, 16, 32) if CPU else (64, 256, 512)
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.rnn = nn.LSTM(H, H, num_layers=2, batch_first=True); s.head = nn.Linear(H, 1)
    def forward(s, x):
        return s.head(s.rnn(x)[0])
m = Net().to(DEV)
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
x, y = torch.randn(B, T, H, device=DEV), torch.randn(B, T, 1, device=DEV)
for _ in range(12):
    nn.functional.mse_loss(m(x), y).backward(); opt.step(); opt.zero_grad()
'''),
    Case("flex_attention_causal", "FlexAttention (compiled) with a causal BlockMask, fp16, forward and backward.",
         '''
from torch.nn.attention.flex_attention import flex_attention, create_block_mask
B, H, T, D = 4, 8, 1024, 64
flex = torch.compile(flex_attention)
mask = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, T, T, device=DEV)
class Attn(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.qkv = torch.nn.Linear(H * D, 3 * H * D)
    def forward(s, x):
        q, k, v = s.qkv(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
        return flex(q, k, v, block_mask=mask)
m = Attn().to(DEV, torch.float16)
x = torch.randn(B, T, H * D, device=DEV, dtype=torch.float16)
for _ in range(12):
    m(x).float().square().mean().backward()
''', gpu_only="FlexAttention's compiled kernels are Triton (GPU)", timeout_s=150),
    Case("fp8_scaled_mm", "Linear layers run as torch._scaled_mm on float8_e4m3fn with per-tensor scales, bf16 out.",
         '''
class Fp8Linear(torch.nn.Module):
    def __init__(s, n):
        super().__init__()
        w = torch.randn(n, n, device=DEV) / n ** 0.5
        s.w_scale = w.abs().max() / 448.0
        s.register_buffer("w8", (w / s.w_scale).to(torch.float8_e4m3fn))
    def forward(s, x):
        x_scale = x.abs().max().float() / 448.0
        x8 = (x / x_scale).to(torch.float8_e4m3fn)
        return torch._scaled_mm(x8, s.w8.t(), scale_a=x_scale, scale_b=s.w_scale, out_dtype=torch.bfloat16)
m = torch.nn.Sequential(*[Fp8Linear(4096) for _ in range(4)])
x = torch.randn(4096, 4096, device=DEV, dtype=torch.bfloat16)
with torch.no_grad():
    for _ in range(12):
        m(x)
''', gpu_only="fp8 _scaled_mm needs an sm89+ GPU"),
    Case("nested_jagged_sdpa", "Nested tensors (layout=torch.jagged, variable lengths) through Linear and SDPA.",
         '''
import torch.nn.functional as F
DT = torch.float32 if CPU else torch.float16
lengths = [5, 17, 9] if CPU else [100, 700, 350, 1000, 40, 512, 800, 230]
E, NH = (64, 4) if CPU else (512, 8)
class Attn(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.qkv = torch.nn.Linear(E, 3 * E); s.o = torch.nn.Linear(E, E)
    def forward(s, x):
        q, k, v = s.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.unflatten(-1, (NH, E // NH)).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return s.o(y.transpose(1, 2).flatten(-2))
m = Attn().to(DEV, DT)
x = torch.nested.nested_tensor([torch.randn(n, E) for n in lengths], layout=torch.jagged, device=DEV, dtype=DT)
with torch.no_grad():
    for _ in range(12):
        m(x)
''', gpu_only="torch's jagged SDPA asks cuDNN first, which raises on a CUDA build of torch on a machine with no "
              "GPU driver (torch 2.14 here)"),
    Case("hf_llama_sdpa_train", "LlamaForCausalLM from a small config, attn_implementation='sdpa', bf16, AdamW steps.",
         '''
from transformers import LlamaConfig, LlamaForCausalLM
small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             vocab_size=512)
big = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
           vocab_size=8000)
cfg = LlamaConfig(**(small if CPU else big), attn_implementation="sdpa")
m = LlamaForCausalLM(cfg).to(DEV, torch.bfloat16)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
B, T = (2, 32) if CPU else (8, 512)
ids = torch.randint(0, cfg.vocab_size, (B, T), device=DEV)
for _ in range(12):
    m(input_ids=ids, labels=ids).loss.backward(); opt.step(); opt.zero_grad()
'''),
    Case("hf_bert_sdpa_padded", "BertModel from a small config, sdpa attention with a padding mask, fp16 inference.",
         '''
from transformers import BertConfig, BertModel
DT = torch.float32 if CPU else torch.float16
cfg = BertConfig(hidden_size=64 if CPU else 512, num_hidden_layers=2 if CPU else 6, num_attention_heads=4 if CPU else 8,
                 intermediate_size=128 if CPU else 2048, vocab_size=1000, attn_implementation="sdpa")
m = BertModel(cfg).to(DEV, DT).eval()
B, T = (2, 32) if CPU else (16, 384)
ids = torch.randint(0, 1000, (B, T), device=DEV)
mask = torch.ones(B, T, dtype=torch.long, device=DEV)
mask[0, T // 2:] = 0
with torch.no_grad():
    for _ in range(12):
        m(input_ids=ids, attention_mask=mask)
'''),
    Case("hf_gpt2_generate", "GPT-2 from a small config (sdpa), greedy generate() of 24 tokens with the KV cache.",
         '''
from transformers import GPT2Config, GPT2LMHeadModel
DT = torch.float32 if CPU else torch.float16
cfg = GPT2Config(n_embd=64 if CPU else 512, n_layer=2 if CPU else 6, n_head=4 if CPU else 8, vocab_size=1000,
                 attn_implementation="sdpa")
m = GPT2LMHeadModel(cfg).to(DEV, DT).eval()
ids = torch.randint(0, 1000, (2 if CPU else 8, 16 if CPU else 128), device=DEV)
with torch.no_grad():
    out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False, pad_token_id=0)
print("generated", out.shape)
'''),
    Case("tv_fasterrcnn_eval", "torchvision fasterrcnn_mobilenet_v3_large_fpn (random weights) in eval mode.",
         '''
import torchvision
S = 128 if CPU else 512
m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None,
                                                                   min_size=S, max_size=S).to(DEV).eval()
images = [torch.rand(3, S, S, device=DEV) for _ in range(2 if CPU else 4)]
with torch.no_grad():
    for _ in range(12):
        m(images)
'''),
    Case("tv_maskrcnn_train_amp", "torchvision maskrcnn_resnet50_fpn training steps under fp16 autocast + GradScaler.",
         '''
import torchvision
S = 320
m = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, min_size=S, max_size=S,
                                                       num_classes=5).to(DEV).train()
opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
scaler = torch.amp.GradScaler(DEV)
def target():
    boxes = torch.tensor([[20.0, 30.0, 200.0, 220.0], [100.0, 50.0, 300.0, 160.0]], device=DEV)
    masks = torch.zeros(2, S, S, dtype=torch.uint8, device=DEV); masks[0, 30:220, 20:200] = 1; masks[1, 50:160, 100:300] = 1
    return {"boxes": boxes, "labels": torch.tensor([1, 3], device=DEV), "masks": masks}
images, targets = [torch.rand(3, S, S, device=DEV) for _ in range(2)], [target() for _ in range(2)]
for _ in range(12):
    with torch.autocast(DEV, dtype=torch.float16):
        loss = sum(m(images, targets).values())
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update(); opt.zero_grad()
''', gpu_only="fp16 autocast training with GradScaler (and a CPU run too slow for a sweep)", timeout_s=150),
    Case("two_streams", "Two branches of a module on two CUDA streams, joined, fp16 inference.",
         '''
import torch.nn as nn
class TwoBranch(nn.Module):
    def __init__(s):
        super().__init__()
        s.a = nn.Sequential(nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 2048))
        s.b = nn.Sequential(nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 2048))
        s.side = torch.cuda.Stream()
    def forward(s, x):
        s.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s.side):
            yb = s.b(x)
        ya = s.a(x)
        torch.cuda.current_stream().wait_stream(s.side)
        return ya + yb
m = TwoBranch().to(DEV, torch.float16)
x = torch.randn(2048, 2048, device=DEV, dtype=torch.float16)
with torch.no_grad():
    for _ in range(12):
        m(x)
''', gpu_only="CUDA streams"),
]
