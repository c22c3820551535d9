"""Factories for `roofline analyze fac.py:NAME` (third sweep): each returns (model, inputs).

Nothing here repeats the first two sweeps' factories (sweep_2026-12-01/fac.py, sweep_models2_2026-12-01/fac.py):
generate() and training steps of encoder-decoders, a contrastive loss, eager vs sdpa attention in a decoder,
Mamba, MoE backward, detection training, optical flow, parametrizations, jacrev, a quantized LSTM, max-autotune."""
import torch, torch.nn as nn, torch.nn.functional as F

torch.manual_seed(0)


class _Gen(nn.Module):
    """generate() as the forward: what a user times when they time decoding."""
    def __init__(s, m, **kw):
        super().__init__(); s.m = m; s.kw = kw
    def forward(s, **inputs):
        return s.m.generate(**inputs, **s.kw)


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration
    c = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                 decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return T5ForConditionalGeneration(c)

def hf_t5_train():  # labels with the start token set: the loss and a backward (sweep 1 had it refused by the config)
    return _t5(), dict(input_ids=torch.randint(2, 128, (2, 12)), labels=torch.randint(2, 128, (2, 8)))

def hf_t5_generate():  # greedy, 6 new tokens, KV cache (EncoderDecoderCache)
    return _Gen(_t5().eval(), max_new_tokens=6, min_new_tokens=6, do_sample=False), dict(input_ids=torch.randint(2, 128, (2, 12)))

def _bart():
    from transformers import BartConfig, BartForConditionalGeneration
    c = BartConfig(vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                   decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                   pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)
    return BartForConditionalGeneration(c)

def hf_bart_train():
    m = _bart(); m.train()
    return m, dict(input_ids=torch.randint(3, 128, (2, 12)), attention_mask=torch.ones(2, 12, dtype=torch.long),
                   labels=torch.randint(3, 128, (2, 8)))

def hf_bart_beam():  # beam search, 2 beams: index_select / gather / topk on the cache
    return (_Gen(_bart().eval(), max_new_tokens=5, min_new_tokens=5, num_beams=2, do_sample=False),
            dict(input_ids=torch.randint(3, 128, (2, 12))))

def _whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    c = WhisperConfig(vocab_size=128, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                      decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                      max_source_positions=32, max_target_positions=32, decoder_start_token_id=1, pad_token_id=0,
                      eos_token_id=2, bos_token_id=1, begin_suppress_tokens=None, suppress_tokens=None)
    return WhisperForConditionalGeneration(c)

def hf_whisper_train():  # conv1d frontend + cross-attention, labels -> loss
    return _whisper(), dict(input_features=torch.randn(2, 16, 64), labels=torch.randint(3, 128, (2, 6)))

def hf_whisper_generate():
    return _Gen(_whisper().eval(), max_new_tokens=4, min_new_tokens=4, do_sample=False), dict(input_features=torch.randn(2, 16, 64))

def hf_clip_loss():  # both towers + the contrastive loss (logit_scale exp, two cross-entropies)
    from transformers import CLIPConfig, CLIPModel
    c = CLIPConfig(text_config=dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=16),
                   vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32, patch_size=8),
                   projection_dim=16)
    return CLIPModel(c), dict(input_ids=torch.randint(0, 100, (4, 10)), pixel_values=torch.randn(4, 3, 32, 32), return_loss=True)

def _mistral(impl):
    from transformers import MistralConfig, MistralForCausalLM
    torch.manual_seed(0)
    c = MistralConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, sliding_window=None)
    return MistralForCausalLM._from_config(c, attn_implementation=impl)

def hf_mistral_eager():
    return _mistral("eager"), dict(input_ids=torch.randint(0, 128, (2, 32)), labels=torch.randint(0, 128, (2, 32)))

def hf_mistral_sdpa():
    return _mistral("sdpa"), dict(input_ids=torch.randint(0, 128, (2, 32)), labels=torch.randint(0, 128, (2, 32)))

def hf_mamba():  # slow path on CPU (no mamba_ssm kernels): the selective scan as a Python loop
    from transformers import MambaConfig, MambaForCausalLM
    c = MambaConfig(vocab_size=128, hidden_size=32, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4)
    return MambaForCausalLM(c), dict(input_ids=torch.randint(0, 128, (2, 16)), labels=torch.randint(0, 128, (2, 16)))

def hf_mixtral_train():  # top-2 routing, index_add_ into the output, aux loss
    from transformers import MixtralConfig, MixtralForCausalLM
    c = MixtralConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                      num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, output_router_logits=True)
    return MixtralForCausalLM(c), dict(input_ids=torch.randint(0, 128, (2, 16)), labels=torch.randint(0, 128, (2, 16)))

def hf_qwen2moe_train():
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    c = Qwen2MoeConfig(vocab_size=128, hidden_size=32, intermediate_size=64, moe_intermediate_size=32,
                       shared_expert_intermediate_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                       num_experts=4, num_experts_per_tok=2, output_router_logits=True)
    return Qwen2MoeForCausalLM(c), dict(input_ids=torch.randint(0, 128, (2, 16)), labels=torch.randint(0, 128, (2, 16)))


class _DetTrain(nn.Module):
    """A detection model in train mode: forward(images, targets) -> dict of losses, summed."""
    def __init__(s, m):
        super().__init__(); s.m = m.train()
    def forward(s, images, boxes, labels, masks=None):
        t = [dict(boxes=b, labels=l) | ({} if masks is None else dict(masks=mk)) for b, l, mk in
             zip(boxes, labels, masks if masks is not None else [None] * len(boxes))]
        return sum(s.m(list(images), t).values())

def _det_inputs(masks=False):
    g = torch.Generator().manual_seed(0)
    imgs = torch.rand(2, 3, 128, 128, generator=g)
    boxes = torch.tensor([[[10., 12., 60., 70.], [40., 30., 110., 100.]], [[5., 5., 50., 40.], [70., 60., 120., 125.]]])
    labels = torch.tensor([[1, 2], [3, 1]])
    out = (imgs, boxes, labels)
    if masks:
        mk = torch.zeros(2, 2, 128, 128, dtype=torch.uint8)
        for i in range(2):
            for j in range(2):
                x0, y0, x1, y1 = boxes[i, j].long().tolist(); mk[i, j, y0:y1, x0:x1] = 1
        out += (mk,)
    return out

def tv_frcnn_train():
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_fpn
    m = fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None, num_classes=4, min_size=128, max_size=128)
    return _DetTrain(m), _det_inputs()

def tv_maskrcnn_train():
    from torchvision.models.detection import maskrcnn_resnet50_fpn
    m = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=4, min_size=128, max_size=128,
                              trainable_backbone_layers=5)
    return _DetTrain(m), _det_inputs(masks=True)

def tv_raft_small():  # optical flow: correlation pyramid (bmm), grid_sample lookups, ConvGRU, convex upsampling
    from torchvision.models.optical_flow import raft_small
    class Last(nn.Module):
        def __init__(s):
            super().__init__(); s.m = raft_small(weights=None)
        def forward(s, a, b): return s.m(a, b, num_flow_updates=3)[-1]
    return Last(), (torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128))

def tv_r3d_train():
    from torchvision.models.video import r3d_18
    return r3d_18(num_classes=8), torch.randn(1, 3, 4, 32, 32)

def tv_swin_train():
    from torchvision.models import swin_t
    return swin_t(num_classes=8), torch.randn(1, 3, 64, 64)

def tv_effnet_train():
    from torchvision.models import efficientnet_b0
    return efficientnet_b0(num_classes=8), torch.randn(2, 3, 64, 64)


class _GRUPacked(nn.Module):
    def __init__(s):
        super().__init__(); s.emb = nn.Embedding(50, 16); s.rnn = nn.GRU(16, 32, num_layers=2, batch_first=True, bidirectional=True); s.head = nn.Linear(64, 3)
    def forward(s, x, lengths):
        p = nn.utils.rnn.pack_padded_sequence(s.emb(x), lengths, batch_first=True, enforce_sorted=False)
        out, h = s.rnn(p)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return s.head(out.sum(1) / lengths[:, None].float())

def gru_packed_bidir():
    return _GRUPacked(), (torch.randint(0, 50, (4, 10)), torch.tensor([10, 7, 3, 9]))

def compiled_autotune():  # Inductor with max-autotune on the CPU (no CUDA graphs)
    m = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64), nn.LayerNorm(64))
    return torch.compile(m, mode="max-autotune-no-cudagraphs"), torch.randn(16, 64)


class _Jac(nn.Module):
    """A forward that takes a Jacobian (a PINN / Jacobian-regulariser pattern): jacrev of a small MLP per sample."""
    def __init__(s):
        super().__init__(); s.f = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 3))
    def forward(s, x):
        params = dict(s.f.named_parameters())
        f = lambda xi: torch.func.functional_call(s.f, params, (xi,))
        j = torch.func.vmap(torch.func.jacrev(f))(x)  # [B, 3, 4]
        return s.f(x).pow(2).mean() + j.pow(2).mean()

def func_jacrev():
    return _Jac(), torch.randn(8, 4)

def func_jacfwd_hessian():  # forward-mode over reverse-mode: hessian of a scalar per sample
    class H(nn.Module):
        def __init__(s):
            super().__init__(); s.f = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
        def forward(s, x):
            params = dict(s.f.named_parameters())
            f = lambda xi: torch.func.functional_call(s.f, params, (xi,)).squeeze()
            return torch.func.vmap(torch.func.hessian(f))(x).pow(2).mean()
    return H(), torch.randn(8, 4)

def param_weight_norm():
    from torch.nn.utils.parametrizations import weight_norm
    m = nn.Sequential(weight_norm(nn.Conv1d(8, 16, 3, padding=1)), nn.ReLU(), weight_norm(nn.Conv1d(16, 8, 3, padding=1)))
    return m, torch.randn(4, 8, 32)

def param_spectral_norm():  # power iteration in train mode: mv, normalize, vdot each forward
    from torch.nn.utils.parametrizations import spectral_norm
    m = nn.Sequential(spectral_norm(nn.Linear(32, 64)), nn.LeakyReLU(0.2), spectral_norm(nn.Linear(64, 1)))
    return m.train(), torch.randn(16, 32)

def param_orthogonal():  # matrix_exp / householder products under a parametrization
    from torch.nn.utils.parametrizations import orthogonal
    m = nn.Sequential(orthogonal(nn.Linear(16, 16)), nn.Tanh(), nn.Linear(16, 4))
    return m, torch.randn(8, 16)

def qdyn_lstm():  # int8 dynamic quantization of an LSTM (quantized_lstm) + Linear
    class M(nn.Module):
        def __init__(s):
            super().__init__(); s.rnn = nn.LSTM(16, 32, batch_first=True); s.head = nn.Linear(32, 4)
        def forward(s, x): return s.head(s.rnn(x)[0][:, -1])
    m = torch.ao.quantization.quantize_dynamic(M().eval(), {nn.LSTM, nn.Linear}, dtype=torch.qint8)
    return m, torch.randn(4, 10, 16)
