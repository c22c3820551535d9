import dataclasses
import torch, torch.nn as nn

def mha_fast():
    m = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    class W(nn.Module):
        def __init__(s): super().__init__(); s.m = m
        def forward(s, x): return s.m(x, x, x, need_weights=False)[0]
    return W().eval(), torch.randn(2, 16, 32)

def gru():
    return nn.GRU(16, 32, num_layers=2, batch_first=True), torch.randn(2, 10, 16)

def conv1d():
    return nn.Sequential(nn.Conv1d(8, 16, 5, padding=2), nn.ReLU(), nn.Conv1d(16, 16, 3, groups=4)), torch.randn(2, 8, 64)

def conv3d():
    return nn.Sequential(nn.Conv3d(3, 8, 3), nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d(2)), torch.randn(1, 3, 8, 16, 16)

def embbag():
    return nn.EmbeddingBag(1000, 32, mode="mean"), (torch.randint(0, 1000, (64,)), torch.arange(0, 64, 8))

def sparse():
    class M(nn.Module):
        def __init__(s):
            super().__init__(); s.w = nn.Parameter(torch.randn(64, 32))
        def forward(s, x): return torch.sparse.mm(x, s.w)
    i = torch.randint(0, 64, (2, 100)); v = torch.randn(100)
    return M(), torch.sparse_coo_tensor(i, v, (64, 64)).coalesce()

def complex_():
    class M(nn.Module):
        def forward(s, x):
            y = torch.fft.rfft(x); y = y * torch.exp(1j * torch.angle(y)); return torch.fft.irfft(y).abs()
    return M(), torch.randn(4, 256)

def complex_mm():
    class M(nn.Module):
        def forward(s, x): return (x @ x.conj().T).real
    return M(), torch.randn(32, 32, dtype=torch.cfloat)

def qdyn():
    m = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
    q = torch.ao.quantization.quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
    return q, torch.randn(8, 64)

def compiled():
    m = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
    return torch.compile(m), torch.randn(4, 32)

@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    hidden: torch.Tensor

def dataclass_out():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(16, 8)
        def forward(s, x): h = s.l(x); return Out(logits=h.softmax(-1), hidden=h)
    return M(), torch.randn(4, 16)

def dict_out():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(16, 8)
        def forward(s, x, y=None): return {"a": s.l(x), "b": (s.l(x) * 2, [s.l(y)])}
    return M(), {"x": torch.randn(4, 16), "y": torch.randn(4, 16)}

def tuple_out_none():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(16, 8)
        def forward(s, x): return s.l(x), None, 3
    return M(), torch.randn(4, 16)

def int_only_out():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(16, 8)
        def forward(s, x): return s.l(x).argmax(-1)
    return M(), torch.randn(4, 16)

def tv_efficientnet():
    import torchvision
    return torchvision.models.efficientnet_b0().eval(), torch.randn(1, 3, 64, 64)

def tv_swin():
    import torchvision
    return torchvision.models.swin_t().eval(), torch.randn(1, 3, 64, 64)

def tv_shufflenet():
    import torchvision
    return torchvision.models.shufflenet_v2_x0_5().eval(), torch.randn(1, 3, 64, 64)

def tv_squeezenet():
    import torchvision
    return torchvision.models.squeezenet1_1().eval(), torch.randn(1, 3, 64, 64)

def tv_deeplab():
    import torchvision
    return torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None).eval(), torch.randn(1, 3, 64, 64)

def tv_r3d():
    import torchvision
    return torchvision.models.video.r3d_18().eval(), torch.randn(1, 3, 4, 32, 32)

def hf_t5():
    from transformers import T5Config, T5ForConditionalGeneration
    c = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=4)
    return T5ForConditionalGeneration(c).eval(), {"input_ids": torch.randint(0, 128, (1, 12)), "decoder_input_ids": torch.randint(0, 128, (1, 6))}

def hf_t5_labels():
    from transformers import T5Config, T5ForConditionalGeneration
    c = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=4)
    return T5ForConditionalGeneration(c), {"input_ids": torch.randint(0, 128, (1, 12)), "labels": torch.randint(0, 128, (1, 6))}

def hf_whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    c = WhisperConfig(vocab_size=128, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                      decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16,
                      max_source_positions=16, max_target_positions=16, pad_token_id=0, decoder_start_token_id=1)
    return WhisperForConditionalGeneration(c).eval(), {"input_features": torch.randn(1, 16, 32), "decoder_input_ids": torch.tensor([[1, 2, 3]])}

def hf_clip():
    from transformers import CLIPConfig, CLIPModel
    c = CLIPConfig(text_config=dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, max_position_embeddings=16),
                   vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, image_size=32, patch_size=8), projection_dim=16)
    return CLIPModel(c).eval(), {"input_ids": torch.randint(0, 100, (2, 8)), "pixel_values": torch.randn(2, 3, 32, 32)}

def hf_qwen2_gqa():
    from transformers import Qwen2Config, Qwen2ForCausalLM
    c = Qwen2Config(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2)
    return Qwen2ForCausalLM(c).eval(), {"input_ids": torch.randint(0, 128, (1, 16))}

def hf_mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM
    c = MixtralConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2)
    return MixtralForCausalLM(c).eval(), {"input_ids": torch.randint(0, 128, (1, 16))}

def hf_qwen2moe():
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM
    c = Qwen2MoeConfig(vocab_size=128, hidden_size=32, intermediate_size=64, moe_intermediate_size=32, shared_expert_intermediate_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2)
    return Qwen2MoeForCausalLM(c).eval(), {"input_ids": torch.randint(0, 128, (1, 16))}

def hf_llama_bf16():
    from transformers import LlamaConfig, LlamaForCausalLM
    c = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2)
    return LlamaForCausalLM(c).to(torch.bfloat16).eval(), {"input_ids": torch.randint(0, 128, (1, 16))}

def half_cpu():
    return nn.Linear(32, 32).half(), torch.randn(4, 32).half()

def transformer_enc_fast():
    l = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    return nn.TransformerEncoder(l, 2, enable_nested_tensor=False).eval(), torch.randn(2, 8, 32)

def autocast_model():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(32, 32)
        def forward(s, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return s.l(x).float().sum()
    return M(), torch.randn(4, 32)

def scalar_input():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(32, 32)
        def forward(s, x, scale: float = 1.0, flag=True): return s.l(x) * scale
    return M(), (torch.randn(4, 32), 0.5, False)

def list_input():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(32, 32)
        def forward(s, xs): return sum(s.l(x) for x in xs)
    return M(), ([torch.randn(4, 32), torch.randn(4, 32)],)

def nested_dict_input():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.l = nn.Linear(32, 32)
        def forward(s, batch): return s.l(batch["x"])
    return M(), ({"x": torch.randn(4, 32)},)

def requires_grad_input_nograd_model():
    return nn.Linear(8, 8), torch.randn(2, 8, requires_grad=True)

def inplace_input():
    class M(nn.Module):
        def forward(s, x): return x.add_(1).relu_()
    return M(), torch.randn(64, 64)

def rnn_packed():
    class M(nn.Module):
        def __init__(s): super().__init__(); s.r = nn.LSTM(8, 16, batch_first=True)
        def forward(s, x, lens):
            p = nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
            return nn.utils.rnn.pad_packed_sequence(s.r(p)[0], batch_first=True)[0]
    return M(), (torch.randn(3, 10, 8), torch.tensor([10, 7, 3]))

def no_params_zero_flops():
    class M(nn.Module):
        def forward(s, x): return x.view(-1).clone()
    return M(), torch.randn(8, 8)

def bool_tensor_model():
    class M(nn.Module):
        def forward(s, x): return (x > 0) & (x < 1)
    return M(), torch.randn(64, 64)

def int_model():
    class M(nn.Module):
        def forward(s, x): return (x * 3 + 1) // 2
    return M(), torch.randint(0, 100, (64, 64))

def channels_last_3d():
    return nn.Conv2d(3, 8, 3).to(memory_format=torch.channels_last), torch.randn(2, 3, 32, 32).to(memory_format=torch.channels_last)

def generate_hf():
    from transformers import LlamaConfig, LlamaForCausalLM
    c = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2)
    m = LlamaForCausalLM(c).eval()
    class G(nn.Module):
        def __init__(s): super().__init__(); s.m = m
        def forward(s, ids): return s.m.generate(ids, max_new_tokens=4, do_sample=False, pad_token_id=0)
    return G(), torch.randint(1, 128, (1, 6))
