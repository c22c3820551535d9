"""Factories for `roofline analyze fac.py:NAME` (second sweep): each returns (model, inputs)."""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class _Block(nn.Module):
    def __init__(s, d=64):
        super().__init__(); s.a = nn.Linear(d, 4 * d); s.b = nn.Linear(4 * d, d)
    def forward(s, x): return x + s.b(F.gelu(s.a(x)))


class _Ckpt(nn.Module):
    def __init__(s, reentrant):
        super().__init__(); s.blocks = nn.ModuleList(_Block() for _ in range(2)); s.reentrant = reentrant
    def forward(s, x):
        for b in s.blocks:
            x = checkpoint(b, x, use_reentrant=s.reentrant)
        return x


def ckpt_reentrant():
    return _Ckpt(True), torch.randn(8, 64, requires_grad=True)

def ckpt_nonreentrant():
    return _Ckpt(False), torch.randn(8, 64)

def ckpt_none():  # the same model without checkpointing: the reference for FLOPs and step count
    m = _Ckpt(False); m.forward = lambda x: m.blocks[1](m.blocks[0](x)); return m, torch.randn(8, 64)

def jit_script():
    return torch.jit.script(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))), torch.randn(4, 32)

def jit_trace():
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    x = torch.randn(2, 3, 32, 32)
    return torch.jit.trace(m, x), x

def jit_frozen():
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).eval()
    return torch.jit.freeze(torch.jit.script(m)), torch.randn(2, 3, 32, 32)

def exported():
    m = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
    x = torch.randn(4, 32)
    return torch.export.export(m, (x,)).module(), x

class _Vmapped(nn.Module):
    def __init__(s):
        super().__init__(); s.l = nn.Linear(16, 16)
    def forward(s, x):  # per-sample function over the batch, through vmap and functional_call
        params = dict(s.l.named_parameters())
        f = lambda xi: torch.func.functional_call(s.l, params, (xi,)).tanh().sum()
        return torch.func.vmap(torch.func.grad(f))(x)

def func_vmap_grad():
    return _Vmapped(), torch.randn(8, 16)

def func_vmap():
    l = nn.Linear(16, 32)
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = l
        def forward(s, x): return torch.func.vmap(s.l)(x)
    return M(), torch.randn(8, 4, 16)

class _MyGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x); return x * torch.sigmoid(1.702 * x)
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors; s = torch.sigmoid(1.702 * x); return g * (s + 1.702 * x * s * (1 - s))

def custom_fn():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.a = nn.Linear(32, 64); s.b = nn.Linear(64, 8)
        def forward(s, x): return s.b(_MyGelu.apply(s.a(x)))
    return M(), torch.randn(4, 32)

def quant_static():
    import torch.ao.quantization as q
    torch.backends.quantized.engine = "x86" if "x86" in torch.backends.quantized.supported_engines else "fbgemm"
    class M(nn.Module):
        def __init__(s):
            super().__init__(); s.q = q.QuantStub(); s.c = nn.Conv2d(3, 16, 3); s.r = nn.ReLU()
            s.p = nn.AdaptiveAvgPool2d(1); s.f = nn.Flatten(); s.l = nn.Linear(16, 10); s.dq = q.DeQuantStub()
        def forward(s, x): return s.dq(s.l(s.f(s.p(s.r(s.c(s.q(x)))))))
    m = M().eval(); m.qconfig = q.get_default_qconfig(torch.backends.quantized.engine)
    q.fuse_modules(m, [["c", "r"]], inplace=True); q.prepare(m, inplace=True)
    for _ in range(4): m(torch.randn(2, 3, 32, 32))
    q.convert(m, inplace=True)
    return m, torch.randn(2, 3, 32, 32)

def frcnn():
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn
    m = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=5,
                                               min_size=160, max_size=160).eval()
    return m, ([torch.rand(3, 160, 160), torch.rand(3, 120, 160)],)

def maskrcnn():
    from torchvision.models.detection import maskrcnn_resnet50_fpn
    m = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=3, min_size=128, max_size=128,
                              box_detections_per_img=10).eval()
    return m, ([torch.rand(3, 128, 128)],)

def vit_fast():
    from torchvision.models import VisionTransformer
    m = VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128).eval()
    m.requires_grad_(False)  # the MHA fast path needs no autograd
    return m, torch.randn(2, 3, 64, 64)

def vit_b_16():
    from torchvision.models import vit_b_16
    m = vit_b_16(weights=None).eval(); m.requires_grad_(False)
    return m, torch.randn(1, 3, 224, 224)

def transformer_encdec():
    m = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=128,
                       batch_first=True)
    src, tgt = torch.randn(2, 12, 64), torch.randn(2, 9, 64)
    pad = torch.zeros(2, 12, dtype=torch.bool); pad[1, 8:] = True
    return m, {"src": src, "tgt": tgt, "tgt_mask": nn.Transformer.generate_square_subsequent_mask(9),
               "src_key_padding_mask": pad, "memory_key_padding_mask": pad, "tgt_is_causal": True}

class _Attn(nn.Module):
    def __init__(s, d=64, h=4, kvh=4, mode="causal"):
        super().__init__(); s.h, s.kvh, s.mode = h, kvh, mode; s.dh = d // h
        s.q = nn.Linear(d, d); s.kv = nn.Linear(d, 2 * kvh * s.dh); s.o = nn.Linear(d, d)
    def forward(s, x, mask=None):
        b, t, _ = x.shape
        q = s.q(x).view(b, t, s.h, s.dh).transpose(1, 2)
        k, v = s.kv(x).view(b, t, 2, s.kvh, s.dh).permute(2, 0, 3, 1, 4)
        p = 0.1 if s.training else 0.0
        if s.mode == "causal": y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        elif s.mode == "mask": y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        else: y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return s.o(y.transpose(1, 2).reshape(b, t, -1))

def sdpa_causal_train():
    return _Attn().train(), torch.randn(2, 32, 64)

def sdpa_mask_train():
    mask = torch.randn(2, 1, 32, 32)  # additive float mask
    return _Attn(mode="mask").train(), (torch.randn(2, 32, 64), mask)

def sdpa_boolmask():
    mask = torch.ones(32, 32, dtype=torch.bool).tril()
    return _Attn(mode="mask").eval(), (torch.randn(2, 32, 64), mask)

def sdpa_gqa():
    return _Attn(h=8, kvh=2, mode="gqa").eval(), torch.randn(2, 32, 64)

def nested_encoder():
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval(); enc.requires_grad_(False)
    pad = torch.zeros(4, 16, dtype=torch.bool); pad[1, 10:] = True; pad[2, 4:] = True; pad[3, 12:] = True
    return enc, {"src": torch.randn(4, 16, 64), "src_key_padding_mask": pad}

def nested_sdpa():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(32, 32)
        def forward(s, x):
            q = s.l(x).unflatten(-1, (4, 8)).transpose(1, 2)
            return F.scaled_dot_product_attention(q, q, q).transpose(1, 2).flatten(-2)
    nt = torch.nested.nested_tensor([torch.randn(n, 32) for n in (5, 9, 3)], layout=torch.jagged)
    return M().eval(), nt

class _Tied(nn.Module):
    def __init__(s, v=500, d=64):
        super().__init__(); s.emb = nn.Embedding(v, d); s.mid = nn.Linear(d, d); s.head = nn.Linear(d, v, bias=False)
        s.head.weight = s.emb.weight
    def forward(s, ids): return s.head(torch.tanh(s.mid(s.emb(ids))))

def tied():
    return _Tied(), torch.randint(0, 500, (4, 16))

class _LossOut(nn.Module):
    def __init__(s):
        super().__init__(); s.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 5))
    def forward(s, x, y): return F.cross_entropy(s.net(x), y)

def returns_loss():
    return _LossOut(), (torch.randn(8, 32), torch.randint(0, 5, (8,)))

def bn_train():
    m = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 16, 3), nn.BatchNorm2d(16))
    return m.train(), torch.randn(4, 3, 32, 32)

def channels_last_bf16():
    class M(nn.Module):
        def __init__(s):
            super().__init__(); s.c = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 16, 3))
        def forward(s, x):
            with torch.autocast("cpu", dtype=torch.bfloat16): return s.c(x).float().mean((2, 3))
    return M().to(memory_format=torch.channels_last), torch.randn(4, 3, 32, 32).to(memory_format=torch.channels_last)

# ---- Hugging Face, from configs, tiny
def _hf(cfg_cls, model_cls, **kw):
    import transformers as tf
    torch.manual_seed(0)
    cfg = getattr(tf, cfg_cls)(**kw)
    return getattr(tf, model_cls)(cfg).eval()

def hf_bert_tt():
    m = _hf("BertConfig", "BertForSequenceClassification", vocab_size=500, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, type_vocab_size=2)
    ids = torch.randint(0, 500, (2, 16)); tt = torch.zeros_like(ids); tt[:, 8:] = 1
    return m, {"input_ids": ids, "token_type_ids": tt, "attention_mask": torch.ones_like(ids),
               "labels": torch.tensor([0, 1])}

def hf_distilbert():
    m = _hf("DistilBertConfig", "DistilBertForMaskedLM", vocab_size=500, dim=64, n_layers=2, n_heads=4, hidden_dim=128)
    ids = torch.randint(0, 500, (2, 16))
    return m, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

def hf_neox():
    m = _hf("GPTNeoXConfig", "GPTNeoXForCausalLM", vocab_size=500, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, rotary_pct=0.25)
    ids = torch.randint(0, 500, (2, 16))
    return m, {"input_ids": ids, "labels": ids}

def hf_phi():
    m = _hf("PhiConfig", "PhiForCausalLM", vocab_size=500, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, partial_rotary_factor=0.5)
    ids = torch.randint(0, 500, (2, 16))
    return m, {"input_ids": ids}

def hf_gemma():
    m = _hf("GemmaConfig", "GemmaForCausalLM", vocab_size=500, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=1, head_dim=16, intermediate_size=128)
    ids = torch.randint(0, 500, (2, 16))
    return m, {"input_ids": ids}

def hf_bert_attn_out():
    m = _hf("BertConfig", "BertModel", vocab_size=500, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, attn_implementation="eager")
    ids = torch.randint(0, 500, (2, 16))
    return m, {"input_ids": ids, "output_attentions": True}

def _hf_ckpt(reentrant):
    m = _hf("LlamaConfig", "LlamaForCausalLM", vocab_size=500, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, intermediate_size=128)
    m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": reentrant})
    ids = torch.randint(0, 500, (2, 16))
    return m.train(), {"input_ids": ids, "labels": ids}

def hf_llama_gc_reentrant():
    return _hf_ckpt(True)

def hf_llama_gc():
    return _hf_ckpt(False)

def hf_llama_nogc():
    m, x = _hf_ckpt(False); m.gradient_checkpointing_disable(); return m, x

def ckpt_sequential():
    seq = nn.Sequential(*[_Block() for _ in range(4)])
    class M(nn.Module):
        def __init__(s): super().__init__(); s.seq = seq
        def forward(s, x): return torch.utils.checkpoint.checkpoint_sequential(s.seq, 2, x, use_reentrant=False)
    return M(), torch.randn(8, 64)

def ckpt_selective():
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    def policy(ctx, op, *args, **kwargs):  # save matmuls, recompute the rest
        return CheckpointPolicy.MUST_SAVE if op in (torch.ops.aten.addmm.default, torch.ops.aten.mm.default) \
            else CheckpointPolicy.PREFER_RECOMPUTE
    import functools
    ctx = functools.partial(create_selective_checkpoint_contexts, policy)
    class M(nn.Module):
        def __init__(s): super().__init__(); s.blocks = nn.ModuleList(_Block() for _ in range(2))
        def forward(s, x):
            for b in s.blocks: x = checkpoint(b, x, use_reentrant=False, context_fn=ctx)
            return x
    return M(), torch.randn(8, 64)

def save_on_cpu():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.blocks = nn.ModuleList(_Block() for _ in range(2))
        def forward(s, x):
            with torch.autograd.graph.save_on_cpu():
                for b in s.blocks: x = b(x)
            return x
    return M(), torch.randn(8, 64)

def user_hooks():
    m = _Ckpt(False)
    seen = []
    for mod in m.modules():
        mod.register_forward_hook(lambda mod, i, o: seen.append(1))
        if isinstance(mod, nn.Linear):
            mod.register_full_backward_hook(lambda mod, gi, go: seen.append(2))
    return m, torch.randn(8, 64)

def compiled_ckpt():
    m = _Ckpt(False)
    return torch.compile(m), torch.randn(8, 64)
