"""The model zoo the counting formulas are checked against: every torchvision classification model, Hugging Face
architectures built from tiny configs with random weights, nn.Transformer, recurrent and FFT models, and what
users bring beyond those: torchvision detectors and segmenters, torchvision.ops, int8 models (static FX and
dynamic), training steps, CPU autocast and channels_last.

``coverage(entry)`` runs one model's forward once under a dispatch mode that counts every aten op with our
formulas, and once under torch's FlopCounterMode, and returns the numbers the zoo test asserts and
benchmarks/model_zoo.py records:
- ``ops`` / ``unmodeled_ops``: op calls, and those without a formula (by name in ``unmodeled_names``);
- ``unmodeled_time_share``: the host time of unmodelled op calls over all op calls' (models run on real CPU
  tensors, one thread, each op timed around its dispatch; ``None`` on the meta device, where nothing runs);
- ``flops`` (ours) and ``flop_counter_flops`` (FlopCounterMode's total) and ``flops_comparable``: ours with
  causal attention counted in full as FlopCounterMode does (we count only the computed half, see
  count/attention.py) and a grouped convolution's weight gradient at FlopCounterMode's groups times its work
  (count/conv.py), the figure that must be >= FlopCounterMode's.
torchvision models run on the meta device (shapes only: a 632M-parameter ViT-H costs no memory and no time);
the others run on CPU at tiny sizes, so their time share is measured.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from roofline.count import count_op, normalize_op_name, to_meta

SEED = 0


@dataclass
class ZooEntry:
    name: str
    family: str
    build: Callable[[torch.device], tuple[nn.Module, tuple, dict]]  # -> model, args, kwargs
    device: str = "cpu"
    backward: bool = False


@dataclass
class Coverage:
    name: str
    family: str
    device: str
    ops: int = 0
    unmodeled_ops: int = 0
    unmodeled_names: dict[str, int] = field(default_factory=dict)
    time_s: float | None = None
    unmodeled_time_share: float | None = None
    flops: float = 0.0
    flops_comparable: float = 0.0
    flop_counter_flops: float | None = 0.0  # None: FlopCounterMode could not run the model (flop_counter_error)
    flop_counter_error: str = ""
    seconds: float = 0.0

    @property
    def unmodeled_op_share(self) -> float:
        return self.unmodeled_ops / self.ops if self.ops else 0.0


class _CountingMode(TorchDispatchMode):
    def __init__(self, timed: bool) -> None:
        super().__init__()
        self.timed = timed
        self.ops = 0
        self.unmodeled: Counter[str] = Counter()
        self.time_s = 0.0
        self.unmodeled_time_s = 0.0
        self.flops = 0.0
        self.causal_correction = 0.0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        start = time.perf_counter()
        out = func(*args, **kwargs)
        elapsed = time.perf_counter() - start if self.timed else 0.0
        name = normalize_op_name(func)
        outputs = out if isinstance(out, (list, tuple)) else [out]
        cost = count_op(name, to_meta(args), to_meta(kwargs), to_meta(list(outputs)))
        self.ops += 1
        self.time_s += elapsed
        self.flops += cost.flops
        if not cost.modeled:
            self.unmodeled[name] += 1
            self.unmodeled_time_s += elapsed
        elif "causal" in cost.note or cost.note.startswith("grouped"):
            theirs = flop_registry.get(func._overloadpacket)
            if theirs is not None:
                self.causal_correction += theirs(*args, **kwargs, out_val=out) - cost.flops
        return out


# torch's ModuleTracker (FlopCounterMode's) hooks every module's inputs for the backward, and asserts when an input
# that requires grad yields no autograd node: transformers 5.25's Mamba, whose hub-kernel layer (the `kernels`
# package) hands a parameter to a module call under no_grad, trips it. Our count (a plain dispatch mode) runs.
_MODULE_TRACKER_FAILURE = "Expected gradient function to be set"


def _flop_counter_flops(step: Callable[[], None]) -> tuple[float | None, str]:
    """FlopCounterMode's total for one ``step``, or None and why where torch's own module tracker cannot run the
    model (``_MODULE_TRACKER_FAILURE``); any other error is raised."""
    try:
        with FlopCounterMode(display=False) as counter:
            step()
    except AssertionError as exc:
        if _MODULE_TRACKER_FAILURE not in str(exc):
            raise
        return None, f"FlopCounterMode failed in torch's ModuleTracker: {exc}"
    return float(counter.get_total_flops()), ""


def coverage(entry: ZooEntry) -> Coverage:
    """Count one forward (and backward, if the entry asks) of ``entry``'s model: see the module docstring."""
    started = time.perf_counter()
    device = torch.device(entry.device)
    torch.manual_seed(SEED)
    with torch.device(device):
        model, args, kwargs = entry.build(device)
    model.eval() if not entry.backward else model.train()
    timed = device.type == "cpu"

    def step() -> None:
        out = model(*args, **kwargs)
        if entry.backward:
            _first_tensor(out).float().square().mean().backward()

    context = torch.no_grad() if not entry.backward else torch.enable_grad()
    with context:
        with _CountingMode(timed) as counting:
            step()
        reference, reference_error = _flop_counter_flops(step)
    result = Coverage(entry.name, entry.family, entry.device, ops=counting.ops,
                      unmodeled_ops=sum(counting.unmodeled.values()), unmodeled_names=dict(counting.unmodeled),
                      flops=counting.flops, flops_comparable=counting.flops + counting.causal_correction,
                      flop_counter_flops=reference, flop_counter_error=reference_error)
    if timed:
        result.time_s = counting.time_s
        result.unmodeled_time_share = counting.unmodeled_time_s / counting.time_s if counting.time_s else 0.0
    result.seconds = time.perf_counter() - started
    return result


def _first_tensor(out: Any) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "last_hidden_state") and out.last_hidden_state is not None:
        return out.last_hidden_state
    if hasattr(out, "logits") and out.logits is not None:
        return out.logits
    if isinstance(out, dict):
        out = list(out.values())
    for item in out:
        if isinstance(item, torch.Tensor):
            return item
        if isinstance(item, (list, tuple)):
            return _first_tensor(item)
    raise TypeError(f"no tensor in the model's output ({type(out).__name__})")


# --- torchvision: every classification model, on the meta device --------------------------------------------

_TORCHVISION_SIZE = {"inception_v3": 299}


def torchvision_entries() -> list[ZooEntry]:
    import torchvision

    entries = []
    for name in torchvision.models.list_models(module=torchvision.models):
        def build(device: torch.device, name: str = name):
            with _regnet_params_on_cpu(name):
                model = torchvision.models.get_model(name, weights=None)
            size = _TORCHVISION_SIZE.get(name, 224)
            return model, (torch.randn(1, 3, size, size),), {}

        entries.append(ZooEntry(name, "torchvision", build, device="meta"))
    return entries


@contextlib.contextmanager
def _regnet_params_on_cpu(name: str):
    """RegNet computes its stage widths with tensor ops and .tolist(): on the meta device there are no values,
    so that one classmethod runs on CPU (the model's weights stay on meta)."""
    if not name.startswith("regnet"):
        yield
        return
    from torchvision.models import regnet

    original = regnet.BlockParams.__dict__["from_init_params"]

    def on_cpu(cls, *args, **kwargs):
        with torch.device("cpu"):
            return original.__func__(cls, *args, **kwargs)

    regnet.BlockParams.from_init_params = classmethod(on_cpu)
    try:
        yield
    finally:
        regnet.BlockParams.from_init_params = original


# --- Hugging Face architectures from tiny configs, on CPU ------------------------------------------------------

def _tiny_decoder(config_cls: str, model_cls: str, **extra) -> Callable:
    def build(device: torch.device):
        import transformers

        config = getattr(transformers, config_cls)(
            vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, **extra)
        model = getattr(transformers, model_cls)(config)
        return model, (torch.randint(0, 128, (2, 12)),), {}

    return build


def _bert(device: torch.device):
    import transformers

    config = transformers.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64)
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 8:] = 0
    return transformers.BertModel(config), (torch.randint(0, 128, (2, 12)),), {"attention_mask": mask}


def _gpt2(device: torch.device):
    import transformers

    config = transformers.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return transformers.GPT2LMHeadModel(config), (torch.randint(0, 128, (2, 12)),), {}


def _t5(device: torch.device):
    import transformers

    config = transformers.T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                   decoder_start_token_id=0)
    ids = torch.randint(0, 128, (2, 12))
    return transformers.T5ForConditionalGeneration(config), (ids,), {"decoder_input_ids": ids[:, :6]}


def _vit_hf(device: torch.device):
    import transformers

    config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                    image_size=32, patch_size=8)
    return transformers.ViTModel(config), (torch.randn(2, 3, 32, 32),), {}


def _whisper(device: torch.device):
    import transformers

    config = transformers.WhisperConfig(vocab_size=128, d_model=32, encoder_layers=2, decoder_layers=2,
                                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                                        decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=16,
                                        max_target_positions=32, decoder_start_token_id=0, pad_token_id=0)
    features = torch.randn(1, 16, 32)
    return transformers.WhisperModel(config), (features,), {"decoder_input_ids": torch.randint(0, 128, (1, 6))}


def _clip(device: torch.device):
    import transformers

    text = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=16)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32,
                  patch_size=8)
    config = transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)
    return (transformers.CLIPModel(config), (),
            {"input_ids": torch.randint(0, 128, (2, 10)), "pixel_values": torch.randn(2, 3, 32, 32)})


_TEXT = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)


def _more_huggingface() -> dict[str, Callable[[], tuple[nn.Module, tuple, dict]]]:
    """Further architectures beyond the issue's list, each a different building block (MoE routing, selective
    scan, conv feature extractor with weight norm, relative-position attention, windowed attention...)."""
    import transformers as t

    ids = (torch.randint(0, 128, (2, 12)),)
    image = (torch.randn(1, 3, 32, 32),)
    return {
        "distilbert": lambda: (t.DistilBertModel(t.DistilBertConfig(vocab_size=128, dim=32, hidden_dim=64, n_layers=2,
                                                                    n_heads=4)), ids, {}),
        "roberta": lambda: (t.RobertaModel(t.RobertaConfig(**_TEXT, max_position_embeddings=64)), ids, {}),
        "bart": lambda: (t.BartModel(t.BartConfig(vocab_size=128, d_model=32, encoder_layers=1, decoder_layers=1,
                                                  encoder_attention_heads=4, decoder_attention_heads=4,
                                                  encoder_ffn_dim=64, decoder_ffn_dim=64,
                                                  max_position_embeddings=64)), ids, {}),
        "qwen2": lambda: (t.Qwen2ForCausalLM(t.Qwen2Config(**_TEXT, num_key_value_heads=2)), ids, {}),
        "phi": lambda: (t.PhiForCausalLM(t.PhiConfig(**_TEXT)), ids, {}),
        "gemma": lambda: (t.GemmaForCausalLM(t.GemmaConfig(**_TEXT, num_key_value_heads=2, head_dim=8)), ids, {}),
        "falcon": lambda: (t.FalconForCausalLM(t.FalconConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                                                              num_attention_heads=4)), ids, {}),
        "gpt_neox": lambda: (t.GPTNeoXForCausalLM(t.GPTNeoXConfig(**_TEXT)), ids, {}),
        "deberta_v2": lambda: (t.DebertaV2Model(t.DebertaV2Config(**_TEXT, max_position_embeddings=64)), ids, {}),
        "qwen3_moe": lambda: (t.Qwen3MoeForCausalLM(t.Qwen3MoeConfig(**_TEXT, num_key_value_heads=2, num_experts=4,
                                                                     num_experts_per_tok=2, moe_intermediate_size=32)),
                              ids, {}),
        "mamba": lambda: (t.MambaModel(t.MambaConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                                                     state_size=4)), ids, {}),
        "wav2vec2": lambda: (t.Wav2Vec2Model(t.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                              intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                                                              conv_kernel=(10, 3), num_conv_pos_embeddings=8,
                                                              num_conv_pos_embedding_groups=4)),
                             (torch.randn(1, 800),), {}),
        "swin (hf)": lambda: (t.SwinModel(t.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                                                       num_heads=[2, 2], window_size=4)), image, {}),
        "convnext (hf)": lambda: (t.ConvNextModel(t.ConvNextConfig(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)),
                                  image, {}),
    }


def huggingface_entries() -> list[ZooEntry]:
    more = [ZooEntry(name, "huggingface", lambda device, name=name: _more_huggingface()[name]())
            for name in ("distilbert", "roberta", "bart", "qwen2", "phi", "gemma", "falcon", "gpt_neox", "deberta_v2",
                         "qwen3_moe", "mamba", "wav2vec2", "swin (hf)", "convnext (hf)")]
    return more + [
        ZooEntry("bert", "huggingface", _bert),
        ZooEntry("gpt2", "huggingface", _gpt2),
        ZooEntry("t5", "huggingface", _t5),
        ZooEntry("llama", "huggingface", _tiny_decoder("LlamaConfig", "LlamaForCausalLM")),
        ZooEntry("mistral", "huggingface", _tiny_decoder("MistralConfig", "MistralForCausalLM")),
        ZooEntry("mixtral", "huggingface", _tiny_decoder("MixtralConfig", "MixtralForCausalLM", num_local_experts=4,
                                                         num_experts_per_tok=2)),
        ZooEntry("vit", "huggingface", _vit_hf),
        ZooEntry("whisper", "huggingface", _whisper),
        ZooEntry("clip", "huggingface", _clip),
    ]


# --- torch.nn: transformers, recurrent layers, FFT, and a few torchvision models timed on CPU -------------------

class FFTConv(nn.Module):
    """A global convolution done in frequency space (FNet/Hyena style): rfft, complex-by-real filter, irfft."""

    def __init__(self, channels: int = 16, length: int = 64) -> None:
        super().__init__()
        self.proj = nn.Linear(channels, channels)
        self.filter = nn.Parameter(torch.randn(length // 2 + 1, channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spectrum = torch.fft.rfft(self.proj(x), dim=1)
        mixed = torch.fft.irfft(spectrum * self.filter, n=x.shape[1], dim=1)
        return torch.fft.fft2(mixed.to(torch.complex64)).real + mixed


class Recurrent(nn.Module):
    def __init__(self, kind: type[nn.RNNBase]) -> None:
        super().__init__()
        self.rnn = kind(16, 32, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(64, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(x)[0][:, -1])


def _nn_transformer(device: torch.device):
    model = nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=64,
                           batch_first=True)
    return model, (torch.randn(2, 10, 32), torch.randn(2, 6, 32)), {}


def _encoder_fast_path(device: torch.device):
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), (torch.randn(2, 10, 32),), {}


def _encoder_nested(device: torch.device):
    """Eval with a padding mask: the encoder packs the batch into a nested (ragged) tensor."""
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    mask = torch.zeros(2, 10, dtype=torch.bool)
    mask[1, 6:] = True
    return nn.TransformerEncoder(layer, 2), (torch.randn(2, 10, 32),), {"src_key_padding_mask": mask}


def _torchvision_small(name: str, size: int, **kwargs) -> Callable:
    def build(device: torch.device):
        import torchvision

        return torchvision.models.get_model(name, weights=None, **kwargs), (torch.randn(1, 3, size, size),), {}

    return build


def _raft_small(device: torch.device):
    import torchvision

    frames = (torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128))
    return torchvision.models.optical_flow.raft_small(weights=None), frames, {"num_flow_updates": 2}


def _video(name: str, frames: int, size: int) -> Callable:
    def build(device: torch.device):
        import torchvision

        model = torchvision.models.get_model(name, weights=None)
        return model, (torch.randn(1, 3, frames, size, size),), {}

    return build


def torch_entries() -> list[ZooEntry]:
    return [
        ZooEntry("nn.Transformer", "torch.nn", _nn_transformer),
        ZooEntry("nn.TransformerEncoder (fast path)", "torch.nn", _encoder_fast_path),
        ZooEntry("nn.TransformerEncoder (nested, padding mask)", "torch.nn", _encoder_nested),
        ZooEntry("lstm", "torch.nn", lambda d: (Recurrent(nn.LSTM), (torch.randn(4, 20, 16),), {})),
        ZooEntry("gru", "torch.nn", lambda d: (Recurrent(nn.GRU), (torch.randn(4, 20, 16),), {})),
        ZooEntry("lstm (training)", "torch.nn", lambda d: (Recurrent(nn.LSTM), (torch.randn(4, 20, 16),), {}),
                 backward=True),
        ZooEntry("fft", "torch.nn", lambda d: (FFTConv(), (torch.randn(2, 64, 16),), {})),
        ZooEntry("vit_b_16 (cpu, 32px)", "torchvision", _torchvision_small("vit_b_16", 32, image_size=32)),
        ZooEntry("resnet18 (cpu, 64px)", "torchvision", _torchvision_small("resnet18", 64)),
        ZooEntry("mobilenet_v3_small (cpu, 64px)", "torchvision", _torchvision_small("mobilenet_v3_small", 64)),
        ZooEntry("raft_small (optical flow)", "torchvision", _raft_small),
        ZooEntry("r3d_18 (video)", "torchvision", _video("r3d_18", 8, 32), device="meta"),
        ZooEntry("mvit_v2_s (video)", "torchvision", _video("mvit_v2_s", 16, 224), device="meta"),
        ZooEntry("swin3d_t (video)", "torchvision", _video("swin3d_t", 8, 32), device="meta"),
    ]


# --- beyond classification: detection, segmentation, torchvision.ops, int8, training, autocast, channels_last --

def _detection(name: str, size: int, **kwargs) -> Callable:
    """A torchvision detector with random weights at a small size, eval (its post-processing: nms, roi_align on
    whatever boxes random weights propose; the seed fixes them). Runs on CPU: nms and the box filtering need
    values."""
    def build(device: torch.device):
        import torchvision

        model = torchvision.models.get_model(name, weights=None, weights_backbone=None, **kwargs)
        return model, ([torch.rand(3, size, size)],), {}

    return build


def _segmentation(name: str) -> Callable:
    return _torchvision_small(name, 64, weights_backbone=None)


class VisionOps(nn.Module):
    """torchvision.ops' kernels in one trainable module: a modulated deformable convolution, roi_align and
    roi_pool (plain and position-sensitive) over its output, and nms."""

    def __init__(self) -> None:
        super().__init__()
        import torchvision

        self.offsets = nn.Conv2d(8, 27, 3, padding=1)
        self.deform = torchvision.ops.DeformConv2d(8, 16, 3, padding=1)

    def forward(self, x: torch.Tensor, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        from torchvision import ops

        offsets = self.offsets(x)
        y = self.deform(x, offsets[:, :18], offsets[:, 18:].sigmoid())
        kept = boxes[ops.nms(boxes, scores, 0.5)]
        pooled = [ops.roi_align(y, [kept], 4, 1.0, 2), ops.roi_pool(y, [kept], 3),
                  ops.ps_roi_align(y, [kept], 2), ops.ps_roi_pool(y, [kept], 2)]
        return torch.cat([p.flatten(1) for p in pooled], 1)


def _vision_ops(device: torch.device):
    corners = torch.rand(12, 2) * 20
    boxes = torch.cat([corners, corners + torch.rand(12, 2) * 10 + 1], 1)
    return VisionOps(), (torch.randn(1, 8, 32, 32), boxes, torch.rand(12)), {}


class _ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(4)
        self.fc = nn.Linear(8 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(torch.relu(self.bn(self.conv(x)))).flatten(1))


def _fx_int8(device: torch.device):
    """Static int8 (torch.ao FX graph mode, x86 backend), calibrated on its one input: quantized::conv2d_relu,
    quantized::linear, quantize/dequantize."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    x = torch.randn(2, 3, 16, 16)
    prepared = prepare_fx(_ConvNet().eval(), get_default_qconfig_mapping("x86"), (x,))
    prepared(x)
    return convert_fx(prepared), (x,), {}


def _dynamic_int8(device: torch.device):
    """Dynamic int8 (quantize_dynamic) of an LSTM + Linear model: aten::quantized_lstm, quantized::linear_dynamic."""
    from torch.ao.quantization import quantize_dynamic

    model = quantize_dynamic(Recurrent(nn.LSTM).eval(), {nn.LSTM, nn.Linear}, dtype=torch.qint8)
    return model, (torch.randn(4, 20, 16),), {}


class Autocast(nn.Module):
    """The model's forward under CPU autocast (bfloat16 matmuls and convolutions, float32 weights)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args, **kwargs):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.model(*args, **kwargs)


def _autocast(build: Callable) -> Callable:
    def wrapped(device: torch.device):
        model, args, kwargs = build(device)
        return Autocast(model), args, kwargs

    return wrapped


def _channels_last(device: torch.device):
    import torchvision

    model = torchvision.models.resnet18(weights=None).to(memory_format=torch.channels_last)
    return model, (torch.randn(1, 3, 64, 64).to(memory_format=torch.channels_last),), {}


def _resnet_batch(device: torch.device):
    """Two images: training batch norm needs more than one value per channel after the last stage."""
    import torchvision

    return torchvision.models.resnet18(weights=None), (torch.randn(2, 3, 32, 32),), {}


def _labelled(build: Callable) -> Callable:
    """A Hugging Face LM built by ``build`` with labels, so a training step's loss is the model's own."""
    def wrapped(device: torch.device):
        model, (ids,), _ = build(device)
        return model, (), {"input_ids": ids, "labels": ids}

    return wrapped


def more_entries() -> list[ZooEntry]:
    """What users bring beyond the classifiers: detectors and segmenters, torchvision.ops, int8 models, training
    steps, autocast and channels_last."""
    small = dict(min_size=128, max_size=128)
    rcnn = dict(small, rpn_post_nms_top_n_test=100, box_detections_per_img=10)
    return [
        ZooEntry("fasterrcnn_mobilenet_v3_large_fpn", "detection", _detection("fasterrcnn_mobilenet_v3_large_fpn",
                                                                                 128, **rcnn)),
        ZooEntry("maskrcnn_resnet50_fpn", "detection", _detection("maskrcnn_resnet50_fpn", 128, **rcnn)),
        ZooEntry("retinanet_resnet50_fpn", "detection", _detection("retinanet_resnet50_fpn", 128, **small)),
        ZooEntry("ssdlite320_mobilenet_v3_large", "detection", _detection("ssdlite320_mobilenet_v3_large", 320)),
        ZooEntry("deeplabv3_mobilenet_v3_large", "segmentation", _segmentation("deeplabv3_mobilenet_v3_large"),
                 device="meta"),
        ZooEntry("fcn_resnet50", "segmentation", _segmentation("fcn_resnet50"), device="meta"),
        ZooEntry("lraspp_mobilenet_v3_large", "segmentation", _segmentation("lraspp_mobilenet_v3_large"),
                 device="meta"),
        ZooEntry("torchvision.ops (training)", "torchvision", _vision_ops, backward=True),
        ZooEntry("int8 static (fx)", "quantized", _fx_int8),
        ZooEntry("int8 dynamic (lstm, linear)", "quantized", _dynamic_int8),
        ZooEntry("resnet18 (training, 32px)", "training", _resnet_batch, backward=True),
        ZooEntry("vit (hf, training)", "training", _vit_hf, backward=True),
        ZooEntry("bert (training)", "training", _bert, backward=True),
        ZooEntry("llama (training, own loss)", "training", _labelled(_tiny_decoder("LlamaConfig", "LlamaForCausalLM")),
                 backward=True),
        ZooEntry("mamba (training)", "training", lambda d: _more_huggingface()["mamba"](), backward=True),
        ZooEntry("resnet18 (autocast bf16, 64px)", "autocast", _autocast(_torchvision_small("resnet18", 64))),
        ZooEntry("llama (autocast bf16)", "autocast", _autocast(_tiny_decoder("LlamaConfig", "LlamaForCausalLM"))),
        ZooEntry("resnet18 (channels_last, 64px)", "torchvision", _channels_last),
    ]


def all_entries() -> list[ZooEntry]:
    return torch_entries() + more_entries() + huggingface_entries() + torchvision_entries()
