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
    batch: int = 1  # which sweep added it: `gpu_sweep.py --batch 2` runs only the second batch

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

# The second batch (2026-12-02): GPU paths the first one did not take. `gpu_sweep.py --batch 2` runs only these.
BATCH2: list[Case] = [
    Case("hf_llama_static_cache_compile",
         "LlamaForCausalLM (small config) greedy generate() of 8 tokens with a static KV cache and its forward under "
         "torch.compile(mode='reduce-overhead') (CUDA graph trees).",
         '''
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=2000, attn_implementation="sdpa")
m = LlamaForCausalLM(cfg).to(DEV, torch.bfloat16).eval()
m.forward = torch.compile(m.forward, mode="reduce-overhead", fullgraph=True)
ids = torch.randint(0, 2000, (2, 32), device=DEV)
with torch.no_grad():
    for _ in range(3):
        out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, do_sample=False, pad_token_id=0,
                         cache_implementation="static", disable_compile=True)  # the user's compile only
print("generated", out.shape)
''', gpu_only="reduce-overhead compiles to CUDA graphs", timeout_s=200, batch=2),
    Case("make_graphed_callables_mlp",
         "torch.cuda.make_graphed_callables on an MLP (forward and backward graphed), trained with SGD.",
         '''
import torch.nn as nn
m = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 1024)).to(DEV)
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device=DEV, requires_grad=True)
g = torch.cuda.make_graphed_callables(m, (x,))
for _ in range(12):
    g(x).square().mean().backward(); opt.step(); opt.zero_grad(set_to_none=True)
''', gpu_only="CUDA graphs", batch=2),
    Case("compile_max_autotune_nocg",
         "torch.compile(mode='max-autotune-no-cudagraphs') of a small MLP (tiny shapes: a short autotune), inference.",
         '''
import torch.nn as nn
D = 32 if CPU else 256
m = nn.Sequential(nn.Linear(D, 2 * D), nn.ReLU(), nn.Linear(2 * D, D)).to(DEV).eval()
cm = torch.compile(m, mode="max-autotune-no-cudagraphs")
x = torch.randn(16 if CPU else 128, D, device=DEV)
with torch.no_grad():
    for _ in range(12):
        cm(x)
''', timeout_s=240, batch=2),
    Case("compile_dynamic_batches", "torch.compile(dynamic=True) of an MLP trained on a different batch size each step.",
         '''
import torch.nn as nn
D = 32 if CPU else 512
m = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D)).to(DEV)
cm = torch.compile(m, dynamic=True)
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
sizes = [8, 12, 5, 16] if CPU else [256, 384, 100, 512]
for i in range(12):
    x = torch.randn(sizes[i % 4], D, device=DEV)
    cm(x).square().mean().backward(); opt.step(); opt.zero_grad()
''', timeout_s=200, batch=2),
    Case("sdpa_float_mask_gqa",
         "SDPA with an explicit float (additive) attn_mask, then grouped-query SDPA (enable_gqa=True), fp16 inference.",
         '''
import torch.nn.functional as F
DT = torch.float32 if CPU else torch.float16
B, T, HQ, HKV, D = (2, 32, 8, 2, 16) if CPU else (4, 1024, 16, 4, 64)
class Attn(torch.nn.Module):  # a step: one forward of this module
    def forward(s, q, k, v, bias):
        kk, vv = (t.repeat_interleave(HQ // HKV, dim=1) for t in (k, v))
        return (F.scaled_dot_product_attention(q, kk, vv, attn_mask=bias)
                + F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
q = torch.randn(B, HQ, T, D, device=DEV, dtype=DT)
k, v = (torch.randn(B, HKV, T, D, device=DEV, dtype=DT) for _ in range(2))
bias = torch.randn(B, 1, T, T, device=DEV, dtype=DT)  # an ALiBi-like additive bias
m = Attn()
with torch.no_grad():
    for _ in range(12):
        m(q, k, v, bias)
''', batch=2),
    Case("hf_qwen2_moe_infer", "Qwen2MoeForCausalLM from a tiny config (8 experts, top-2, shared expert), bf16 forward.",
         '''
from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
cfg = Qwen2MoeConfig(hidden_size=64 if CPU else 512, intermediate_size=128 if CPU else 1024,
                     moe_intermediate_size=32 if CPU else 256, shared_expert_intermediate_size=64 if CPU else 512,
                     num_experts=8, num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=1000, attn_implementation="sdpa")
m = Qwen2MoeForCausalLM(cfg).to(DEV, torch.bfloat16).eval()
ids = torch.randint(0, 1000, (2, 32) if CPU else (8, 256), device=DEV)
with torch.no_grad():
    for _ in range(12):
        m(input_ids=ids)
''', batch=2),
    Case("cudnn_gru", "A 2-layer bidirectional GRU (cuDNN on the GPU) classifier trained with Adam.",
         '''
import torch.nn as nn
B, T, H = (2, 16, 32) if CPU else (64, 200, 256)
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.rnn = nn.GRU(H, H, num_layers=2, batch_first=True, bidirectional=True)
        s.head = nn.Linear(2 * H, 5)
    def forward(s, x):
        return s.head(s.rnn(x)[0][:, -1])
m = Net().to(DEV)
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
x, y = torch.randn(B, T, H, device=DEV), torch.randint(0, 5, (B,), device=DEV)
for _ in range(12):
    nn.functional.cross_entropy(m(x), y).backward(); opt.step(); opt.zero_grad()
''', batch=2),
    Case("embedding_bag_sum", "nn.EmbeddingBag (mode='sum', offsets, per-sample weights) + MLP, a recsys-like train step.",
         '''
import torch.nn as nn
N, E, B, L = (1000, 16, 8, 5) if CPU else (200000, 128, 2048, 40)
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.bag = nn.EmbeddingBag(N, E, mode="sum")
        s.mlp = nn.Sequential(nn.Linear(E, 4 * E), nn.ReLU(), nn.Linear(4 * E, 1))
    def forward(s, ids, offsets, w):
        return s.mlp(s.bag(ids, offsets, per_sample_weights=w))
m = Net().to(DEV)
opt = torch.optim.Adagrad(m.parameters(), lr=1e-2)
ids = torch.randint(0, N, (B * L,), device=DEV)
offsets = torch.arange(0, B * L, L, device=DEV)
w = torch.rand(B * L, device=DEV)
y = torch.rand(B, 1, device=DEV)
for _ in range(12):
    nn.functional.binary_cross_entropy_with_logits(m(ids, offsets, w), y).backward(); opt.step(); opt.zero_grad()
''', batch=2),
    Case("sparse_mm_coo_csr", "torch.sparse.mm of a 1%-dense sparse matrix (COO, then CSR) with a dense one, a GCN-like layer.",
         '''
N, F_ = (256, 16) if CPU else (16384, 256)
idx = torch.randint(0, N, (2, N * N // 100), device=DEV)
adj = torch.sparse_coo_tensor(idx, torch.rand(idx.shape[1], device=DEV), (N, N)).coalesce()
csr = adj.to_sparse_csr()
lin = torch.nn.Linear(F_, F_).to(DEV)
x = torch.randn(N, F_, device=DEV)
with torch.no_grad():
    for _ in range(12):
        h = torch.relu(torch.sparse.mm(adj, lin(x)))
        h = torch.sparse.mm(csr, h)
''', batch=2),
    Case("checkpoint_train",
         "A 6-block MLP residual stack trained with torch.utils.checkpoint (use_reentrant=False) on every block.",
         '''
import torch.nn as nn
from torch.utils.checkpoint import checkpoint
D, B = (64, 16) if CPU else (1024, 2048)
class Block(nn.Module):
    def __init__(s):
        super().__init__(); s.n = nn.LayerNorm(D); s.f = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
    def forward(s, x):
        return x + s.f(s.n(x))
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.blocks = nn.ModuleList(Block() for _ in range(6))
    def forward(s, x):
        for b in s.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return x
m = Net().to(DEV)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
x = torch.randn(B, D, device=DEV)
for _ in range(12):
    m(x).square().mean().backward(); opt.step(); opt.zero_grad()
''', batch=2),
    Case("pinned_nonblocking_loader",
         "A dataloader-like loop: each step copies a pinned host batch to the device with non_blocking=True, then trains "
         "(no pinning on CPU).",
         '''
import torch.nn as nn
B, D = (16, 64) if CPU else (4096, 1024)
batches = [torch.randn(B, D) for _ in range(4)]
if not CPU:
    batches = [b.pin_memory() for b in batches]
m = nn.Sequential(nn.Linear(D, D), nn.ReLU(), nn.Linear(D, 10)).to(DEV)
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
for i in range(12):
    x = batches[i % 4].to(DEV, non_blocking=True)
    m(x).logsumexp(-1).mean().backward(); opt.step(); opt.zero_grad()
''', batch=2),
    Case("int8_int_mm", "torch._int_mm (int8 x int8 -> int32) matmuls with a per-row dequantise, inference.",
         '''
M, K, N = (32, 64, 64) if CPU else (4096, 4096, 4096)
class Int8Linear(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.register_buffer("w8", torch.randint(-128, 127, (K, N), dtype=torch.int8))
        s.register_buffer("scale", torch.rand(N))
    def forward(s, x8):
        return torch._int_mm(x8, s.w8).float() * s.scale
m = Int8Linear().to(DEV)
x8 = torch.randint(-128, 127, (M, K), dtype=torch.int8, device=DEV)
with torch.no_grad():
    for _ in range(12):
        m(x8)
''', batch=2),
    Case("flex_attention_document",
         "FlexAttention (compiled) with a document (block-diagonal) BlockMask over packed sequences, fp16, fwd+bwd.",
         '''
from torch.nn.attention.flex_attention import flex_attention, create_block_mask
B, H, T, D = 1, 8, 2048, 64
doc = torch.repeat_interleave(torch.arange(4, device=DEV), torch.tensor([300, 700, 512, 536], device=DEV))
flex = torch.compile(flex_attention)
mask = create_block_mask(lambda b, h, q, kv: doc[q] == doc[kv], None, None, T, T, device=DEV)
q, k, v = (torch.randn(B, H, T, D, device=DEV, dtype=torch.float16, requires_grad=True) for _ in range(3))
for _ in range(12):
    flex(q, k, v, block_mask=mask).float().square().mean().backward()
''', gpu_only="FlexAttention's compiled kernels are Triton (GPU); its CPU path compiles C++ for minutes here",
         timeout_s=200, batch=2),
    Case("unet_block_bf16_channels_last",
         "A UNet-ish up block (ConvTranspose2d, Conv2d, GroupNorm, SiLU, skip concat) trained under bf16 autocast in "
         "channels_last.",
         '''
import torch.nn as nn
B, C, S = (2, 16, 16) if CPU else (16, 128, 64)
class Up(nn.Module):
    def __init__(s):
        super().__init__()
        s.up = nn.ConvTranspose2d(2 * C, C, 2, stride=2)
        s.body = nn.Sequential(nn.Conv2d(2 * C, C, 3, padding=1), nn.GroupNorm(8, C), nn.SiLU(),
                               nn.Conv2d(C, C, 3, padding=1), nn.GroupNorm(8, C), nn.SiLU())
    def forward(s, x, skip):
        return s.body(torch.cat([s.up(x), skip], dim=1))
m = Up().to(DEV).to(memory_format=torch.channels_last)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
x = torch.randn(B, 2 * C, S // 2, S // 2, device=DEV).to(memory_format=torch.channels_last)
skip = torch.randn(B, C, S, S, device=DEV).to(memory_format=torch.channels_last)
for _ in range(12):
    with torch.autocast(DEV, dtype=torch.bfloat16):
        loss = m(x, skip).float().square().mean()
    loss.backward(); opt.step(); opt.zero_grad()
''', batch=2),
]
CASES += BATCH2

# The third batch (2026-12-02): paths neither batch took (attention fast paths, encoder-decoder, eager attention,
# user Triton kernels and custom ops, torch.func, double backward, DataLoader workers, FFT, 3-D convolution,
# launch-bound loops, sparse gradients, torch.distributed at world size 1, AOTInductor). `--batch 3` runs these.
TRITON_BIAS_GELU = '''
import triton, triton.language as tl
@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, y_ptr, n, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    h = tl.load(x_ptr + offs, mask=keep).to(tl.float32) + tl.load(b_ptr + offs % N, mask=keep).to(tl.float32)
    y = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=keep)
def bias_gelu(x, b):
    y = torch.empty_like(x)
    bias_gelu_kernel[(triton.cdiv(x.numel(), 1024),)](x, b, y, x.numel(), N=x.shape[-1], BLOCK=1024)
    return y
'''

BATCH3: list[Case] = [
    Case("vit_mha_fastpath",
         "A torchvision VisionTransformer (ViT-S/16-like config) in eval under no_grad, fp16: nn.MultiheadAttention's "
         "fast path (aten::_native_multi_head_attention).",
         '''
from torchvision.models.vision_transformer import VisionTransformer
DT = torch.float32 if CPU else torch.float16
S, P, L, H, D, B = (32, 8, 2, 4, 64, 2) if CPU else (224, 16, 6, 6, 384, 64)
m = VisionTransformer(image_size=S, patch_size=P, num_layers=L, num_heads=H, hidden_dim=D, mlp_dim=4 * D)
m = m.to(DEV, DT).eval()
x = torch.randn(B, 3, S, S, device=DEV, dtype=DT)
with torch.no_grad():
    for _ in range(12):
        m(x)
''', batch=3),
    Case("encoder_padding_nested_fastpath",
         "nn.TransformerEncoder in eval with a src_key_padding_mask: the fast path converts to a nested tensor and runs "
         "aten::_transformer_encoder_layer_fwd, fp16.",
         '''
import torch.nn as nn
DT = torch.float32 if CPU else torch.float16
B, T, D = (3, 16, 64) if CPU else (32, 512, 512)
layer = nn.TransformerEncoderLayer(D, 8, 4 * D, batch_first=True)
m = nn.TransformerEncoder(layer, 4, enable_nested_tensor=True).to(DEV, DT).eval()
x = torch.randn(B, T, D, device=DEV, dtype=DT)
lengths = torch.randint(T // 4, T + 1, (B,)); lengths[0] = T
pad = (torch.arange(T)[None] >= lengths[:, None]).to(DEV)  # True: padding
with torch.no_grad():
    for _ in range(12):
        m(x, src_key_padding_mask=pad)
''', batch=3),
    Case("hf_t5_train_bf16_autocast",
         "T5ForConditionalGeneration (encoder-decoder, relative position bias) from a small config, training steps "
         "under bf16 autocast with AdamW.",
         '''
from transformers import T5Config, T5ForConditionalGeneration
small = dict(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4, vocab_size=1000)
big = dict(d_model=512, d_kv=64, d_ff=2048, num_layers=4, num_decoder_layers=4, num_heads=8, vocab_size=8000)
cfg = T5Config(**(small if CPU else big), decoder_start_token_id=0, pad_token_id=0)
m = T5ForConditionalGeneration(cfg).to(DEV)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
B, TS, TT = (2, 24, 12) if CPU else (16, 512, 128)
src = torch.randint(1, cfg.vocab_size, (B, TS), device=DEV)
labels = torch.randint(1, cfg.vocab_size, (B, TT), device=DEV)
for _ in range(12):
    with torch.autocast(DEV, dtype=torch.bfloat16):
        loss = m(input_ids=src, labels=labels).loss
    loss.backward(); opt.step(); opt.zero_grad()
''', batch=3),
    Case("hf_llama_eager_generate",
         "LlamaForCausalLM (small config) with attn_implementation='eager' (matmul + fp32 softmax upcast), fp16, greedy "
         "generate() of 24 tokens.",
         '''
from transformers import LlamaConfig, LlamaForCausalLM
DT = torch.float32 if CPU else torch.float16
small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
big = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4)
cfg = LlamaConfig(**(small if CPU else big), vocab_size=2000, attn_implementation="eager")
m = LlamaForCausalLM(cfg).to(DEV, DT).eval()
ids = torch.randint(0, 2000, (2, 16) if CPU else (8, 256), device=DEV)
with torch.no_grad():
    out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False, pad_token_id=0)
print("generated", out.shape)
''', batch=3),
    Case("hf_llama_static_cache_eager",
         "LlamaForCausalLM (small config, sdpa) greedy generate() with cache_implementation='static' and no compile: "
         "index_copy_ into a preallocated KV cache, attention over the whole cache each token, bf16.",
         '''
from transformers import LlamaConfig, LlamaForCausalLM
small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
big = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4)
cfg = LlamaConfig(**(small if CPU else big), vocab_size=2000, attn_implementation="sdpa")
m = LlamaForCausalLM(cfg).to(DEV, torch.bfloat16).eval()
ids = torch.randint(0, 2000, (2, 16) if CPU else (8, 256), device=DEV)
with torch.no_grad():
    out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False, pad_token_id=0,
                     cache_implementation="static", disable_compile=True)
print("generated", out.shape)
''', batch=3),
    Case("triton_kernel_in_module",
         "A user @triton.jit bias+GELU kernel launched straight from a module's forward between two Linears (kernels "
         "with no aten op of their own above them), fp16 inference.",
         TRITON_BIAS_GELU + '''
import torch.nn as nn
D = 1024
class Mlp(nn.Module):
    def __init__(s):
        super().__init__(); s.fc1 = nn.Linear(D, 4 * D, bias=False); s.b1 = nn.Parameter(torch.zeros(4 * D))
        s.fc2 = nn.Linear(4 * D, D)
    def forward(s, x):
        return s.fc2(bias_gelu(s.fc1(x), s.b1))
m = nn.Sequential(*[Mlp() for _ in range(4)]).to(DEV, torch.float16)
x = torch.randn(8192, D, device=DEV, dtype=torch.float16)
with torch.no_grad():
    for _ in range(12):
        m(x)
''', gpu_only="a user Triton kernel", batch=3),
    Case("triton_custom_op_compiled",
         "The Triton bias+GELU kernel wrapped as a torch.library.custom_op with a register_fake impl, called eagerly "
         "and from a torch.compile'd module (an extern call in Inductor's graph), fp16 inference.",
         TRITON_BIAS_GELU + '''
import torch.nn as nn
@torch.library.custom_op("sweep::bias_gelu", mutates_args=())
def bias_gelu_op(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return bias_gelu(x, b)
@bias_gelu_op.register_fake
def _(x, b):
    return torch.empty_like(x)
D = 1024
class Mlp(nn.Module):
    def __init__(s):
        super().__init__(); s.fc1 = nn.Linear(D, 4 * D, bias=False); s.b1 = nn.Parameter(torch.zeros(4 * D))
        s.fc2 = nn.Linear(4 * D, D); s.norm = nn.LayerNorm(D)
    def forward(s, x):
        return x + s.fc2(bias_gelu_op(s.fc1(s.norm(x)), s.b1))
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.a = Mlp(); s.b = Mlp(); s.b_compiled = torch.compile(s.b, fullgraph=True)
    def forward(s, x):
        return s.b_compiled(s.a(x))
m = Net().to(DEV, torch.float16)
x = torch.randn(8192, D, device=DEV, dtype=torch.float16)
with torch.no_grad():
    for _ in range(12):
        m(x)
''', gpu_only="a user Triton kernel", timeout_s=150, batch=3),
    Case("func_vmap_per_sample_grads",
         "torch.func: vmap(grad(functional_call)) per-sample gradients, clipped per sample and averaged (DP-SGD-like), "
         "then SGD steps.",
         '''
import torch.nn as nn, torch.nn.functional as F
from torch.func import functional_call, grad, vmap
B, D, H = (8, 32, 64) if CPU else (256, 512, 1024)
m = nn.Sequential(nn.Linear(D, H), nn.Tanh(), nn.Linear(H, H), nn.Tanh(), nn.Linear(H, 10)).to(DEV)
params = {k: p.detach() for k, p in m.named_parameters()}  # share storage: opt.step() updates them too
def loss_one(p, x, y):
    return F.cross_entropy(functional_call(m, p, (x[None],)), y[None])
per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))
opt = torch.optim.SGD(m.parameters(), lr=1e-2)
x, y = torch.randn(B, D, device=DEV), torch.randint(0, 10, (B,), device=DEV)
for _ in range(12):
    g = per_sample(params, x, y)
    norm = torch.stack([t.flatten(1).norm(dim=1) for t in g.values()]).norm(dim=0)
    clip = (1.0 / (norm + 1e-6)).clamp(max=1.0)
    for k, p in m.named_parameters():
        p.grad = (g[k] * clip.view(-1, *[1] * (g[k].dim() - 1))).mean(0)
    opt.step(); opt.zero_grad()
''', batch=3),
    Case("double_backward_grad_penalty",
         "A WGAN-GP critic step: torch.autograd.grad(create_graph=True) for a gradient penalty, then backward through "
         "the gradient (double backward), Adam.",
         '''
import torch.nn as nn
B, D, H = (16, 32, 64) if CPU else (1024, 1024, 2048)
critic = nn.Sequential(nn.Linear(D, H), nn.SiLU(), nn.Linear(H, H), nn.SiLU(), nn.Linear(H, 1)).to(DEV)
opt = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
real, fake = torch.randn(B, D, device=DEV), torch.randn(B, D, device=DEV) + 1
for _ in range(12):
    a = torch.rand(B, 1, device=DEV)
    mix = (a * real + (1 - a) * fake).requires_grad_(True)
    g, = torch.autograd.grad(critic(mix).sum(), mix, create_graph=True)
    penalty = (g.norm(2, dim=1) - 1).square().mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    loss.backward(); opt.step(); opt.zero_grad()
''', batch=3),
    Case("dataloader_workers_pinned",
         "A DataLoader with num_workers=2 (forked while profiling), persistent workers and pin_memory=True (not on CPU) "
         "feeding an MLP's training steps with non_blocking copies.",
         '''
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
B, D = (16, 64) if CPU else (512, 1024)
class Synthetic(Dataset):
    def __len__(s):
        return 10 ** 6
    def __getitem__(s, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(D, generator=g), i % 10
loader = DataLoader(Synthetic(), batch_size=B, num_workers=2, pin_memory=not CPU, persistent_workers=True)
m = nn.Sequential(nn.Linear(D, 4 * D), nn.ReLU(), nn.Linear(4 * D, 10)).to(DEV)
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
for i, (x, y) in enumerate(loader):
    if i == 12:
        break
    x, y = x.to(DEV, non_blocking=True), y.to(DEV, non_blocking=True)
    nn.functional.cross_entropy(m(x), y).backward(); opt.step(); opt.zero_grad()
''', batch=3),
    Case("fno_rfft2_spectral",
         "A Fourier-neural-operator-like net: rfft2, a complex64 einsum with complex weights on the low modes, irfft2 "
         "(cuFFT on the GPU), trained with Adam.",
         '''
import torch.nn as nn, torch.nn.functional as F
B, C, S, M = (2, 8, 16, 4) if CPU else (32, 64, 128, 16)
class Spectral(nn.Module):
    def __init__(s):
        super().__init__(); s.w = nn.Parameter(torch.randn(C, C, M, M, dtype=torch.complex64) / C)
    def forward(s, x):
        X = torch.fft.rfft2(x)
        out = torch.zeros(x.shape[0], C, S, S // 2 + 1, dtype=torch.complex64, device=x.device)
        out[..., :M, :M] = torch.einsum("bixy,ioxy->boxy", X[..., :M, :M], s.w)
        return torch.fft.irfft2(out, s=(S, S))
class Fno(nn.Module):
    def __init__(s):
        super().__init__(); s.lift = nn.Conv2d(3, C, 1); s.proj = nn.Conv2d(C, 1, 1)
        s.spectral = nn.ModuleList(Spectral() for _ in range(4))
        s.local = nn.ModuleList(nn.Conv2d(C, C, 1) for _ in range(4))
    def forward(s, x):
        h = s.lift(x)
        for sp, lo in zip(s.spectral, s.local):
            h = F.gelu(sp(h) + lo(h))
        return s.proj(h)
m = Fno().to(DEV)
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
x, y = torch.randn(B, 3, S, S, device=DEV), torch.randn(B, 1, S, S, device=DEV)
for _ in range(12):
    F.mse_loss(m(x), y).backward(); opt.step(); opt.zero_grad()
''', batch=3),
    Case("knn_cdist_topk",
         "kNN retrieval: a projection, torch.cdist against a memory bank, topk(largest=False) and a gather, inference.",
         '''
import torch.nn as nn
N, Q, D, K = (2000, 32, 32, 8) if CPU else (100000, 1024, 128, 16)
class Knn(nn.Module):
    def __init__(s):
        super().__init__(); s.proj = nn.Linear(D, D); s.register_buffer("bank", torch.randn(N, D))
        s.register_buffer("labels", torch.randint(0, 100, (N,)))
    def forward(s, q):
        dist, idx = torch.cdist(s.proj(q), s.bank).topk(K, largest=False)
        return s.labels[idx].mode(dim=1).values, dist
m = Knn().to(DEV).eval()
q = torch.randn(Q, D, device=DEV)
with torch.no_grad():
    for _ in range(12):
        m(q)
''', batch=3),
    Case("r3d18_conv3d_autocast",
         "torchvision r3d_18 (3-D convolutions) training steps under fp16 autocast with GradScaler (bf16, no scaler, "
         "tiny clips on CPU).",
         '''
import torchvision
DT = torch.bfloat16 if CPU else torch.float16
B, T, S = (1, 4, 32) if CPU else (8, 16, 112)
m = torchvision.models.video.r3d_18(weights=None, num_classes=10).to(DEV)
opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
scaler = torch.amp.GradScaler(DEV, enabled=not CPU)
x, y = torch.randn(B, 3, T, S, S, device=DEV), torch.randint(0, 10, (B,), device=DEV)
for _ in range(12):
    with torch.autocast(DEV, dtype=DT):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update(); opt.zero_grad()
''', batch=3),
    Case("selective_scan_loop",
         "A Mamba-like selective scan written as a Python loop over 64 time steps (16 on CPU), two layers, trained: "
         "launch-bound, thousands of tiny kernels a step.",
         '''
import torch.nn as nn, torch.nn.functional as F
B, L, D, N = (2, 16, 32, 8) if CPU else (8, 64, 512, 16)
class Scan(nn.Module):
    def __init__(s):
        super().__init__(); s.inp = nn.Linear(D, 2 * D); s.xp = nn.Linear(D, D + 2 * N); s.out = nn.Linear(D, D)
        s.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1).float()).repeat(D, 1))
    def forward(s, x):
        u, z = s.inp(x).chunk(2, dim=-1)
        u = F.silu(u)
        dt, Bm, Cm = s.xp(u).split([D, N, N], dim=-1)
        dt, A = F.softplus(dt), -torch.exp(s.A_log)
        h, ys = torch.zeros(x.shape[0], D, N, device=x.device), []
        for t in range(x.shape[1]):
            h = torch.exp(dt[:, t, :, None] * A) * h + (dt[:, t] * u[:, t])[:, :, None] * Bm[:, t, None, :]
            ys.append((h * Cm[:, t, None, :]).sum(-1))
        return x + s.out(torch.stack(ys, dim=1) * F.silu(z))
m = nn.Sequential(Scan(), Scan()).to(DEV)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
x = torch.randn(B, L, D, device=DEV)
for _ in range(12):
    m(x).square().mean().backward(); opt.step(); opt.zero_grad()
''', batch=3),
    Case("sparse_embedding_sparseadam",
         "nn.Embedding(sparse=True) (sparse COO gradients) updated by torch.optim.SparseAdam, the MLP above it by Adam.",
         '''
import torch.nn as nn
N, E, B, L = (1000, 16, 8, 10) if CPU else (1000000, 128, 2048, 20)
emb = nn.Embedding(N, E, sparse=True).to(DEV)
mlp = nn.Sequential(nn.Linear(E, 4 * E), nn.ReLU(), nn.Linear(4 * E, 1)).to(DEV)
sparse_opt = torch.optim.SparseAdam(list(emb.parameters()), lr=1e-3)
dense_opt = torch.optim.Adam(mlp.parameters(), lr=1e-3)
ids, y = torch.randint(0, N, (B, L), device=DEV), torch.rand(B, 1, device=DEV)
for _ in range(12):
    loss = nn.functional.binary_cross_entropy_with_logits(mlp(emb(ids).mean(1)), y)
    loss.backward(); sparse_opt.step(); dense_opt.step(); sparse_opt.zero_grad(); dense_opt.zero_grad()
''', batch=3),
    Case("ddp_single_rank",
         "DistributedDataParallel around an MLP in a one-process group the script opens itself (nccl; gloo on CPU; "
         "MASTER_ADDR/PORT set in the script, no torchrun), training steps.",
         '''
import os, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29531")
dist.init_process_group("gloo" if CPU else "nccl", rank=0, world_size=1)
if not CPU:
    torch.cuda.set_device(0)
B, D = (16, 64) if CPU else (2048, 2048)
m = DDP(nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D)).to(DEV), device_ids=None if CPU else [0])
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
x = torch.randn(B, D, device=DEV)
for _ in range(12):
    m(x).square().mean().backward(); opt.step(); opt.zero_grad()
dist.destroy_process_group()
''', batch=3),
    Case("fsdp2_fully_shard_single_rank",
         "FSDP2 fully_shard on each block and the root with a bf16 MixedPrecisionPolicy, in a one-process group the "
         "script opens itself (nccl; gloo and fp32 on CPU), training steps.",
         '''
import os, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29532")
dist.init_process_group("gloo" if CPU else "nccl", rank=0, world_size=1)
if not CPU:
    torch.cuda.set_device(0)
B, D = (16, 64) if CPU else (4096, 1024)
m = nn.Sequential(*[nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
                    for _ in range(4)]).to(DEV)
mp = MixedPrecisionPolicy(param_dtype=torch.float32 if CPU else torch.bfloat16, reduce_dtype=torch.float32)
for block in m:
    fully_shard(block, mp_policy=mp)
fully_shard(m, mp_policy=mp)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
x = torch.randn(B, D, device=DEV)
for _ in range(12):
    m(x).float().square().mean().backward(); opt.step(); opt.zero_grad()
dist.destroy_process_group()
''', batch=3),
    Case("compile_fullgraph_autotune_block",
         "torch.compile(fullgraph=True, mode='max-autotune-no-cudagraphs') of a bf16 pre-norm transformer block "
         "(SDPA inside Inductor's graph, autotuned matmuls, fused norms), inference.",
         '''
import torch.nn as nn, torch.nn.functional as F
B, T, D, H = (2, 16, 64, 4) if CPU else (8, 512, 1024, 16)
class Block(nn.Module):
    def __init__(s):
        super().__init__(); s.n1 = nn.LayerNorm(D); s.qkv = nn.Linear(D, 3 * D); s.o = nn.Linear(D, D)
        s.n2 = nn.LayerNorm(D)
        s.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(approximate="tanh"), nn.Linear(4 * D, D))
    def forward(s, x):
        q, k, v = s.qkv(s.n1(x)).view(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        x = x + s.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D))
        return x + s.ff(s.n2(x))
m = nn.Sequential(Block(), Block()).to(DEV, torch.bfloat16).eval()
cm = torch.compile(m, fullgraph=True, mode="max-autotune-no-cudagraphs")
x = torch.randn(B, T, D, device=DEV, dtype=torch.bfloat16)
with torch.no_grad():
    for _ in range(12):
        cm(x)
''', timeout_s=240, batch=3),
    Case("aoti_package_run",
         "torch.export of a bf16 transformer-ish block, AOTInductor aoti_compile_and_package, aoti_load_package, and "
         "the loaded package run from a wrapper module that keeps the eager model (inference).",
         '''
import os, tempfile, torch.nn as nn, torch._inductor
D, T, B = 512, 256, 16
class Block(nn.Module):
    def __init__(s):
        super().__init__(); s.attn = nn.MultiheadAttention(D, 8, batch_first=True); s.n1 = nn.LayerNorm(D)
        s.n2 = nn.LayerNorm(D); s.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
    def forward(s, x):
        h = s.n1(x)
        x = x + s.attn(h, h, h, need_weights=False)[0]
        return x + s.ff(s.n2(x))
eager = nn.Sequential(Block(), Block()).to(DEV, torch.bfloat16).eval()
x = torch.randn(B, T, D, device=DEV, dtype=torch.bfloat16)
with torch.no_grad():
    ep = torch.export.export(eager, (x,))
    path = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tempfile.mkdtemp(), "block.pt2"))
runner = torch._inductor.aoti_load_package(path)
class Packaged(nn.Module):
    def __init__(s):
        super().__init__(); s.eager = eager  # the fallback a user keeps; the package runs
    def forward(s, x):
        return runner(x)
m = Packaged()
with torch.no_grad():
    for _ in range(12):
        m(x)
''', gpu_only="AOTInductor's CPU path compiles C++ for minutes on this machine", timeout_s=240, batch=3),
]
CASES += BATCH3
