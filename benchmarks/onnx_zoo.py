"""`roofline ort` over a zoo of ONNX models users bring: which ONNX op types it cannot count yet, and how much of the
node time they hold.

    PYTHONPATH=src python benchmarks/onnx_zoo.py OUT_DIR [--models a,b] [--previous OLD.json] [--iters 3]

The zoo (random weights, small configurations, nothing downloaded; every model exported here with
torch.onnx.export, the TorchScript exporter at opset 17, falling back to the dynamo exporter where it fails):
- float: an LSTM/GRU/RNN tagger, torchvision's LRASPP-MobileNetV3 segmentation and SSDlite detection (small
  images), T5, the Whisper encoder, CLIP's vision tower, GPT-2 with its past key/values as inputs, Llama, and a
  model of the less common ops (Einsum, TopK, CumSum, ScatterND/Elements, GridSample, Instance/GroupNorm,
  DepthToSpace, ConvTranspose with groups and output_padding, Trilu, Range, Mod, ...);
- quantized with onnxruntime.quantization: the tagger dynamic (DynamicQuantizeLSTM), a ResNet-18 (64x64) static QDQ and static QOperator (a tiny
  calibration reader), BERT dynamic (MatMulInteger / DynamicQuantizeLinear), the ORT-optimised BERT dynamic
  (QAttention), Llama with int4 weight-only MatMulNBits;
- built with onnx.helper: the LLM decoder ops of ORT's model builder (GatherBlockQuantized, MatMulNBits,
  GroupQueryAttention with rotary, RotaryEmbedding, SkipSimplifiedLayerNormalization, QuickGelu, FastGelu), and a
  BERT layer in ORT's fused form (EmbedLayerNormalization, Attention, SkipLayerNormalization, BiasGelu), also
  quantized dynamically (QAttention);
- optimised with onnxruntime.transformers.optimizer: BERT, CLIP vision and GPT-2 (Attention, FastGelu/BiasGelu,
  SkipLayerNormalization, EmbedLayerNormalization).
Each model runs through the CLI (`python -m roofline ort MODEL --opt-level LEVEL`) at ORT's levels ``all`` and
``disable``; the unmodelled op types and their shares of node time come from report.json
(extra.onnx.unmodelled_share_by_op_type), a run that fails keeps its last stderr line.

``--previous OLD.json``: an earlier run's JSON (before new formulas), whose unmodelled counts fill the table's
"before" columns. Writes OUT_DIR/onnx_zoo_cpu.json (date, CPU, versions, command, per model and level: nodes,
unmodelled nodes and op types with shares, crash) and OUT_DIR/onnx_zoo_cpu.md; prints the table last.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LEVELS = ("all", "disable")
OPSET = 17


def _export(model: nn.Module, args: tuple, path: Path, names: list[str] | None = None,
            out_names: list[str] | None = None) -> str:
    """TorchScript exporter first (the classic op set: LSTM, Resize, NonMaxSuppression as single nodes), the
    dynamo exporter when it fails; returns which one wrote the file."""
    model.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=OPSET, input_names=names,
                              output_names=out_names, do_constant_folding=True)
            return "torchscript"
        except Exception as exc:  # noqa: BLE001 - any exporter failure: try the other exporter
            first = f"{type(exc).__name__}: {str(exc)[:200]}"
        try:
            torch.onnx.export(model, args, str(path), dynamo=True, input_names=names, output_names=out_names)
            return f"dynamo (torchscript failed: {first})"
        except Exception as exc:  # noqa: BLE001
            raise RuntimeError(f"both exporters failed; torchscript: {first}; dynamo: "
                               f"{type(exc).__name__}: {str(exc)[:200]}") from None


class Tagger(nn.Module):
    """Embedding -> bidirectional 2-layer LSTM -> GRU -> tanh RNN -> Linear."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.lstm = nn.LSTM(32, 32, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(64, 32, batch_first=True)
        self.rnn = nn.RNN(32, 16, batch_first=True)
        self.head = nn.Linear(16, 10)

    def forward(self, ids):
        x, _ = self.lstm(self.emb(ids))
        x, _ = self.gru(x)
        x, _ = self.rnn(x)
        return self.head(x)


class OddOps(nn.Module):
    """The less common ops in one graph."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.gnorm = nn.GroupNorm(2, 8)
        self.shuffle = nn.PixelShuffle(2)
        self.fc = nn.Linear(16, 16)

    def forward(self, x, grid):
        y = self.gnorm(self.inorm(self.up(x)))                       # ConvTranspose, InstanceNorm, GroupNorm
        y = self.shuffle(y)                                          # DepthToSpace
        y = nn.functional.pixel_unshuffle(y, 2)                      # SpaceToDepth
        y = nn.functional.interpolate(y, scale_factor=0.5, mode="bilinear", align_corners=False)  # Resize
        y = nn.functional.grid_sample(y, grid, align_corners=False)  # GridSample
        b, c, h, w = y.shape
        t = y.reshape(b, c, h * w)
        e = torch.einsum("bci,bdi->bcd", t, t)                       # Einsum
        vals, idx = torch.topk(e, 3, dim=-1)                         # TopK
        cs = torch.cumsum(vals, dim=-1)                              # CumSum
        am = torch.argmax(e, dim=-1, keepdim=True)                   # ArgMax
        tri = torch.triu(e)                                          # Trilu
        z = torch.where(tri > 0, torch.erf(tri), torch.sqrt(tri.abs()) ** 1.5)  # Where, Erf, Sqrt, Pow
        z = z.scatter(-1, am.expand(-1, -1, 2), 1.0)                 # ScatterElements
        z = z + torch.remainder(cs.sum(-1, keepdim=True), 3.0)       # Mod
        r = torch.arange(z.shape[-1], dtype=z.dtype)                 # Range
        z = z * r
        z = z.repeat(1, 2, 1)                                        # Tile
        g = self.fc(z.reshape(-1, 16))                               # Gemm
        return g, idx


def tagger(out: Path) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    files = {"model.onnx": _export(Tagger(), (torch.zeros(2, 12, dtype=torch.long),), out / "model.onnx", ["ids"])}
    quantize_dynamic(_preprocessed(out / "model.onnx"), str(out / "model_dyn.onnx"), weight_type=QuantType.QInt8)
    files["model_dyn.onnx"] = "quantize_dynamic (QInt8 weights): DynamicQuantizeLSTM, MatMulInteger"
    return files


def odd_ops(out: Path) -> dict:
    x, grid = torch.randn(1, 8, 8, 8), torch.rand(1, 8, 8, 2) * 2 - 1
    return {"model.onnx": _export(OddOps(), (x, grid), out / "model.onnx", ["x", "grid"])}


def lraspp(out: Path) -> dict:
    import torchvision

    class Seg(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                                num_classes=5)

        def forward(self, x):
            return self.m(x)["out"]

    return {"model.onnx": _export(Seg(), (torch.randn(1, 3, 96, 96),), out / "model.onnx", ["x"])}


def ssdlite(out: Path) -> dict:
    import torchvision

    class Det(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
                weights=None, weights_backbone=None, num_classes=4, detections_per_img=20, topk_candidates=50)

        def forward(self, x):
            d = self.m([x[0]])[0]
            return d["boxes"], d["scores"], d["labels"]

    return {"model.onnx": _export(Det().eval(), (torch.rand(1, 3, 160, 160),), out / "model.onnx", ["x"])}


def _hf_small(kind: str):
    import transformers as tf

    common = dict(attn_implementation="eager")
    if kind == "t5":
        cfg = tf.T5Config(vocab_size=200, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                          num_heads=4, **common)
        return tf.T5Model(cfg)
    if kind == "whisper":
        cfg = tf.WhisperConfig(vocab_size=200, d_model=64, encoder_layers=2, decoder_layers=1,
                               encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                               decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=50, pad_token_id=0,
                               bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, **common)
        return tf.WhisperModel(cfg).get_encoder()
    if kind == "clip":
        cfg = tf.CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                  image_size=64, patch_size=16, **common)
        return tf.CLIPVisionModel(cfg)
    if kind == "gpt2":
        cfg = tf.GPT2Config(vocab_size=200, n_embd=64, n_layer=2, n_head=4, n_positions=64, **common)
        return tf.GPT2LMHeadModel(cfg)
    if kind == "llama":
        cfg = tf.LlamaConfig(vocab_size=200, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, **common)
        return tf.LlamaForCausalLM(cfg)
    if kind == "bert":
        cfg = tf.BertConfig(vocab_size=200, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                            num_attention_heads=4, **common)
        return tf.BertModel(cfg, add_pooling_layer=False)
    raise ValueError(kind)


class _Outputs(nn.Module):
    """A HF model whose first output (a tensor) is returned: the TorchScript exporter wants tensors."""

    def __init__(self, model, key: str = "last_hidden_state", **fixed):
        super().__init__()
        self.model, self.key, self.fixed = model, key, fixed

    def forward(self, *args):
        return getattr(self.model(*args, **self.fixed), self.key)


def t5(out: Path) -> dict:
    model = _hf_small("t5").eval()

    class T5(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, dec):
            return self.model(input_ids=ids, decoder_input_ids=dec, use_cache=False).last_hidden_state

    ids = torch.zeros(1, 16, dtype=torch.long)
    files = {"model.onnx": _export(T5(), (ids, ids[:, :8]), out / "model.onnx", ["ids", "dec"])}
    files.update(_optimized(out, "t5"))
    return files


def _optimized(out: Path, model_type: str) -> dict:
    """model.onnx through onnxruntime.transformers.optimizer (the fusions its ``model_type`` knows), saved as
    model_opt.onnx; a failure is a row of the table, not the end of the model's runs."""
    from onnxruntime.transformers import optimizer

    try:
        opt = optimizer.optimize_model(str(out / "model.onnx"), model_type=model_type, num_heads=4, hidden_size=64,
                                       opt_level=0)
    except Exception as exc:  # noqa: BLE001 - the optimizer's failures are findings of the sweep
        return {"optimizer_error": f"{model_type}: {type(exc).__name__}: {exc}"[:300]}
    opt.save_model_to_file(str(out / "model_opt.onnx"))
    return {"model_opt.onnx": f"onnxruntime.transformers.optimizer ({model_type}): "
                              + json.dumps({k: v for k, v in opt.get_fused_operator_statistics().items() if v})}


def whisper_encoder(out: Path) -> dict:
    enc = _hf_small("whisper").eval()
    files = {"model.onnx": _export(_Outputs(enc), (torch.randn(1, 16, 100),), out / "model.onnx", ["mel"])}
    files.update(_optimized(out, "bert"))
    return files


def clip_vision(out: Path) -> dict:
    from onnxruntime.transformers import optimizer

    files = {"model.onnx": _export(_Outputs(_hf_small("clip").eval()), (torch.randn(1, 3, 64, 64),),
                                   out / "model.onnx", ["pixels"])}
    opt = optimizer.optimize_model(str(out / "model.onnx"), model_type="clip", num_heads=4, hidden_size=64,
                                   opt_level=0)
    opt.save_model_to_file(str(out / "model_opt.onnx"))
    files["model_opt.onnx"] = "onnxruntime.transformers.optimizer (clip): " + json.dumps(opt.get_fused_operator_statistics())
    return files


def gpt2_past(out: Path) -> dict:
    """One decode step: 1 new token against a past of 15, the past's key/values as inputs (a DynamicCache built
    from them inside the graph), logits and the new key/values as outputs."""
    from transformers import DynamicCache

    model = _hf_small("gpt2").eval()
    layers, heads, past, hd = 2, 4, 15, 16

    class Step(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, *kv):
            cache = DynamicCache()
            for i in range(layers):
                cache.update(kv[2 * i], kv[2 * i + 1], i)
            o = self.model(input_ids=ids, past_key_values=cache, use_cache=True)
            present = []
            for i in range(layers):
                layer = o.past_key_values.layers[i]
                present += [layer.keys, layer.values]
            return (o.logits, *present)

    kv = [torch.randn(1, heads, past, hd) for _ in range(2 * layers)]
    names = ["ids"] + [f"past_{i // 2}_{'kv'[i % 2]}" for i in range(2 * layers)]
    return {"model.onnx": _export(Step(), (torch.zeros(1, 1, dtype=torch.long), *kv), out / "model.onnx", names)}


def llama(out: Path) -> dict:
    model = _hf_small("llama").eval()
    files = {"model.onnx": _export(_Outputs(model, "logits", use_cache=False), (torch.zeros(1, 16, dtype=torch.long),),
                                   out / "model.onnx", ["ids"])}
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    import onnx

    q = MatMulNBitsQuantizer(onnx.load(str(out / "model.onnx")), block_size=32, is_symmetric=True)
    q.process()
    q.model.save_model_to_file(str(out / "model_int4.onnx"))
    files["model_int4.onnx"] = "MatMulNBitsQuantizer (int4 weight-only, block 32)"
    return files


def _bert_files(out: Path) -> None:
    _export(_Outputs(_hf_small("bert").eval()), (torch.zeros(1, 32, dtype=torch.long),), out / "model.onnx", ["ids"])


def _preprocessed(path: Path) -> str:
    """onnxruntime.quantization's pre-processing (shape inference, constants folded into initializers), which its
    quantizers need on TorchScript exports (a bias held by a Constant node fails quantize_static)."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    out = path.with_name(path.stem + "_pre.onnx")
    quant_pre_process(str(path), str(out), skip_symbolic_shape=True)
    return str(out)


def bert(out: Path) -> dict:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer

    _bert_files(out)
    files = {"model.onnx": "torchscript"}
    opt = optimizer.optimize_model(str(out / "model.onnx"), model_type="bert", num_heads=4, hidden_size=64,
                                   opt_level=0)
    opt.save_model_to_file(str(out / "model_opt.onnx"))
    files["model_opt.onnx"] = "onnxruntime.transformers.optimizer (bert): " + json.dumps(opt.get_fused_operator_statistics())
    quantize_dynamic(_preprocessed(out / "model.onnx"), str(out / "model_dyn.onnx"), weight_type=QuantType.QInt8)
    files["model_dyn.onnx"] = "quantize_dynamic (QInt8 weights)"
    import onnx

    quantize_dynamic(_preprocessed(out / "model_opt.onnx"), str(out / "model_opt_dyn.onnx"),
                     weight_type=QuantType.QInt8, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    files["model_opt_dyn.onnx"] = "optimizer then quantize_dynamic (QAttention wherever the optimizer fused Attention)"
    return files


def gpt2_opt(out: Path) -> dict:
    model = _hf_small("gpt2").eval().transformer  # GPT2Model
    _export(_Outputs(model, use_cache=False), (torch.zeros(1, 16, dtype=torch.long),), out / "model.onnx", ["ids"])
    return _optimized(out, "gpt2")


def resnet_quant(out: Path) -> dict:
    import torchvision
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    torch.manual_seed(0)
    _export(torchvision.models.resnet18(), (torch.randn(1, 3, 64, 64),), out / "model.onnx", ["x"])

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.batches = iter([{"x": rng.standard_normal((1, 3, 64, 64), dtype=np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    files = {"model.onnx": "torchscript (float, the quantized files' source)"}
    for fmt, name in ((QuantFormat.QDQ, "model_qdq.onnx"), (QuantFormat.QOperator, "model_qop.onnx")):
        quantize_static(_preprocessed(out / "model.onnx"), str(out / name), Reader(), quant_format=fmt,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        files[name] = f"quantize_static ({fmt.name}, uint8 activations, int8 weights, 4 calibration batches)"
    return files


def contrib_llm(out: Path) -> dict:
    """The decoder ops ORT's model builder emits for LLMs, which no exporter here writes: a block-quantized int4
    embedding (GatherBlockQuantized), SkipSimplifiedLayerNormalization, an int4 packed-QKV projection (MatMulNBits),
    GroupQueryAttention with its rotary embedding, RotaryEmbedding alone, QuickGelu and FastGelu; built with
    onnx.helper (com.microsoft domain), random weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    seq, hidden, heads, kv_heads, head_dim, vocab = 8, 64, 4, 2, 16, 200
    qkv = (heads + 2 * kv_heads) * head_dim

    def init(name, array):
        return numpy_helper.from_array(array, name)

    inits = [
        init("table", rng.integers(0, 255, (vocab, hidden // 2), dtype=np.uint8)),
        init("table_scales", rng.random((vocab, hidden // 32), dtype=np.float32)),
        init("gamma", np.ones(hidden, np.float32)),
        init("w_qkv", rng.integers(0, 255, (qkv, hidden // 32, 16), dtype=np.uint8)),
        init("w_qkv_scales", rng.random(qkv * hidden // 32, dtype=np.float32)),
        init("cos", rng.random((32, head_dim // 2), dtype=np.float32)),
        init("sin", rng.random((32, head_dim // 2), dtype=np.float32)),
        init("seqlens_k", np.array([seq - 1], np.int32)),
        init("total_len", np.array(seq, np.int32)),
        init("positions", np.arange(seq, dtype=np.int64).reshape(1, seq)),
        init("ffn_bias", np.zeros(hidden, np.float32)),
    ]
    ms = "com.microsoft"
    nodes = [
        helper.make_node("GatherBlockQuantized", ["table", "ids", "table_scales"], ["emb"], name="embed", domain=ms,
                         gather_axis=0, quantize_axis=1, block_size=32, bits=4),
        helper.make_node("SkipSimplifiedLayerNormalization", ["emb", "emb", "gamma"], ["norm"], name="norm",
                         domain=ms, epsilon=1e-5),
        helper.make_node("MatMulNBits", ["norm", "w_qkv", "w_qkv_scales"], ["qkv"], name="qkv_proj", domain=ms,
                         K=hidden, N=qkv, bits=4, block_size=32),
        helper.make_node("GroupQueryAttention", ["qkv", "", "", "", "", "seqlens_k", "total_len", "cos", "sin"],
                         ["attn", "present_k", "present_v"], name="gqa", domain=ms, num_heads=heads,
                         kv_num_heads=kv_heads, do_rotary=1),
        helper.make_node("RotaryEmbedding", ["attn", "positions", "cos", "sin"], ["rot"], name="rotary", domain=ms,
                         num_heads=heads),
        helper.make_node("QuickGelu", ["rot"], ["qg"], name="quick_gelu", domain=ms, alpha=1.702),
        helper.make_node("FastGelu", ["qg", "ffn_bias"], ["y"], name="fast_gelu", domain=ms),
    ]
    graph = helper.make_graph(nodes, "contrib_llm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)])
    model.ir_version = 8
    onnx.save(model, str(out / "model.onnx"))
    return {"model.onnx": "onnx.helper (com.microsoft contrib ops)"}


def contrib_bert(out: Path) -> dict:
    """A BERT layer in the fused form ORT's optimizer writes for BERT (EmbedLayerNormalization, Attention,
    SkipLayerNormalization, BiasGelu), built with onnx.helper because the optimizer fuses no Attention in
    transformers 5's BERT; and the same quantized with quantize_dynamic, which turns Attention into QAttention."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(0)
    seq, hidden, ffn = 16, 64, 128

    def w(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)

    inits = [w("word", 200, hidden), w("pos", 64, hidden), w("seg", 2, hidden), w("gamma", hidden),
             w("beta", hidden), w("w_qkv", hidden, 3 * hidden), w("b_qkv", 3 * hidden), w("w1", hidden, ffn),
             w("b1", ffn), w("w2", ffn, hidden), w("b2", hidden)]
    ms = "com.microsoft"
    nodes = [
        helper.make_node("EmbedLayerNormalization", ["ids", "segments", "word", "pos", "seg", "gamma", "beta"],
                         ["emb", "mask_index"], name="embed", domain=ms, epsilon=1e-12),
        helper.make_node("Attention", ["emb", "w_qkv", "b_qkv"], ["attn"], name="attention", domain=ms,
                         num_heads=4),
        helper.make_node("SkipLayerNormalization", ["attn", "emb", "gamma", "beta"], ["n1"], name="skip_ln1",
                         domain=ms),
        helper.make_node("MatMul", ["n1", "w1"], ["h"], name="ffn1"),
        helper.make_node("BiasGelu", ["h", "b1"], ["g"], name="bias_gelu", domain=ms),
        helper.make_node("MatMul", ["g", "w2"], ["o"], name="ffn2"),
        helper.make_node("SkipLayerNormalization", ["o", "n1", "gamma", "beta", "b2"], ["y"], name="skip_ln2",
                         domain=ms),
    ]
    ints = [helper.make_tensor_value_info(n, TensorProto.INT32, [1, seq]) for n in ("ids", "segments")]
    graph = helper.make_graph(nodes, "contrib_bert", ints,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)])
    model.ir_version = 8
    onnx.save(model, str(out / "model.onnx"))
    quantize_dynamic(str(out / "model.onnx"), str(out / "model_dyn.onnx"), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": TensorProto.FLOAT})
    return {"model.onnx": "onnx.helper (com.microsoft fused BERT ops)",
            "model_dyn.onnx": "quantize_dynamic (QInt8 weights): QAttention, MatMulInteger"}


MODELS = {"tagger": tagger, "odd_ops": odd_ops, "lraspp": lraspp, "ssdlite": ssdlite, "t5": t5,
          "whisper_encoder": whisper_encoder, "clip_vision": clip_vision, "gpt2_past": gpt2_past, "llama": llama,
          "bert": bert, "gpt2_opt": gpt2_opt, "resnet_quant": resnet_quant, "contrib_llm": contrib_llm,
          "contrib_bert": contrib_bert}


def roofline_ort(model: Path, level: str, out: Path, iters: int) -> dict:
    cmd = [sys.executable, "-m", "roofline", "ort", str(model), "--opt-level", level, "--iters", str(iters),
           "--warmup", "1", "--no-html", "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    began = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    row: dict = {"command": "roofline " + " ".join(cmd[3:]), "seconds": round(time.perf_counter() - began, 1)}
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        row["crash"] = f"exit {done.returncode}: {lines[-1] if lines else ''}"[:400]
        return row
    data = json.loads((out / "report.json").read_text())
    onnx = data["extra"]["onnx"]
    types: dict[str, int] = {}
    for node in onnx["nodes"]:
        types[node["op_type"]] = types.get(node["op_type"], 0) + 1
    row.update({
        "nodes": len(data["ops"]), "op_types": types,
        "unmodelled_nodes": sum(1 for op in data["ops"] if not op["modeled"]),
        "unmodelled_share_by_op_type": {k: round(v, 4) for k, v in onnx["unmodelled_share_by_op_type"].items()},
        "unmodelled_time_share": data["summary"]["unmodeled_time_share"],
        "unmodelled_notes": sorted({n["note"] for n, op in zip(onnx["nodes"], data["ops"]) if not op["modeled"]})[:20],
        "total_flops": data["summary"]["total_flops"], "total_bytes": data["summary"]["total_bytes"],
    })
    return row


def markdown(meta: dict, results: dict, previous: dict | None) -> str:
    lines = ["# `roofline ort` over an ONNX zoo (CPU)", "",
             f"{meta['date']}, {meta['cpu']}, torch {meta['torch']}, onnxruntime {meta['onnxruntime']}, "
             f"transformers {meta['transformers']}. " + "; ".join(f"`{c}`" for c in meta.get("commands", [meta["command"]]))
             + f". Each node's time: median of {meta['iters']} timed runs after {meta['warmup']} warm-up run.", "",
             "Nodes: the profiled nodes at that ORT optimisation level. Unmodelled: nodes without a formula "
             "(before: " + (f"{meta['previous']}" if previous else "no earlier run given") + "); the op types left "
             "with their shares of node time.", "",
             "FLOPs ratio: the run's total FLOPs over those of the model's first file at level disable (its float "
             "export as PyTorch wrote it): ORT's fusions keep the FLOPs (1.00 within the folded BatchNorms and the "
             "quantize/dequantize work), a counting error shows as a ratio off 1.", "",
             "| model | file | level | nodes | unmodelled before | unmodelled after | FLOPs ratio | unmodelled op types (share of node time) |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for name, model in results.items():
        if "export_error" in model:
            lines.append(f"| {name} | - | - | - | - | - | - | model not built: {model['export_error'][:160]} |")
            continue
        if "optimizer_error" in model.get("files", {}):
            lines.append(f"| {name} | model_opt.onnx | - | - | - | - | - | optimizer failed: "
                         f"{model['files']['optimizer_error'][:160]} |")
        for file, runs in model["runs"].items():
            for level, row in runs.items():
                old = (previous or {}).get(name, {}).get("runs", {}).get(file, {}).get(level, {})
                before = str(old["unmodelled_nodes"]) if "unmodelled_nodes" in old else "crash" if "crash" in old \
                    else "-"
                if "crash" in row:
                    lines.append(f"| {name} | {file} | {level} | - | {before} | crash | - | {row['crash'][:160]} |")
                    continue
                first = next(iter(model["runs"].values())).get("disable", {})
                ratio = (f"{row['total_flops'] / first['total_flops']:.3f}" if first.get("total_flops")
                         else "-")
                left = ", ".join(f"{k} {v:.1%}" for k, v in sorted(row["unmodelled_share_by_op_type"].items(),
                                                                    key=lambda kv: -kv[1])) or "none"
                lines.append(f"| {name} | {file} | {level} | {row['nodes']} | {before} | {row['unmodelled_nodes']} "
                             f"| {ratio} | {left} |")
    lines += ["", "Reading the ratios: at level all on the CPU, ORT's NCHWc transformer pads channel counts to its block "
              "size, and the padded nodes' shapes are what the profile records, so MobileNetV3 models (LRASPP, "
              "SSDlite) count the padding work ORT does; MatMulNBits adds the int4 weight's dequantisation (2 FLOPs "
              "a weight element, a 1/rows share of the products); QDQ models at level disable count every "
              "QuantizeLinear/DequantizeLinear (weights' included), which level all folds into QLinear* nodes; "
              "dynamic quantization adds the activations' DynamicQuantizeLinear. If/Loop/Scan stay unmodelled on "
              "purpose: their subgraphs' nodes are profiled and counted on their own."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--levels", default=",".join(LEVELS))
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--previous", type=Path, default=None, help="an earlier onnx_zoo_cpu.json: the 'before' column")
    parser.add_argument("--reuse", action="store_true", help="keep models already exported under OUT/models")
    parser.add_argument("--table-only", action="store_true", help="rewrite OUT/onnx_zoo_cpu.md from its json")
    parser.add_argument("--previous-label", default=None, help="what the --previous run was (the table says it)")
    # OUT/onnx_zoo_cpu.json's rows of models not run again are kept (a run of --models a,b updates those rows)
    args = parser.parse_args(argv)
    import onnxruntime as ort
    import transformers

    from roofline.device.host import cpu_name
    from roofline.io import atomic_write_text

    previous = json.loads(args.previous.read_text())["results"] if args.previous else None
    if args.table_only:
        data = json.loads((args.out / "onnx_zoo_cpu.json").read_text())
        if previous is not None:
            data["meta"]["previous"] = args.previous_label or str(args.previous)
        text = markdown(data["meta"], data["results"], previous)
        atomic_write_text(args.out / "onnx_zoo_cpu.md", text)
        print(text)
        return 0
    earlier = args.out / "onnx_zoo_cpu.json"
    results: dict = json.loads(earlier.read_text())["results"] if earlier.exists() else {}  # rows of other models kept
    for name in args.models.split(","):
        out = args.out / "models" / name
        out.mkdir(parents=True, exist_ok=True)
        stamp = out / "files.json"
        began = time.perf_counter()
        try:
            if args.reuse and stamp.exists():
                files = json.loads(stamp.read_text())
            else:
                torch.manual_seed(0)
                files = MODELS[name](out)
                stamp.write_text(json.dumps(files))
        except Exception as exc:  # noqa: BLE001 - a model that cannot be built is a row of the table
            results[name] = {"export_error": f"{type(exc).__name__}: {exc}"[:600],
                             "traceback": traceback.format_exc()[-1500:]}
            print(f"{name}: export failed: {exc}"[:300], file=sys.stderr, flush=True)
            continue
        results[name] = {"files": files, "export_seconds": round(time.perf_counter() - began, 1), "runs": {}}
        for file in [f for f in files if f.endswith(".onnx")]:
            for level in args.levels.split(","):
                row = roofline_ort(out / file, level, args.out / "runs" / name / file.removesuffix(".onnx") / level,
                                   args.iters)
                old = (previous or {}).get(name, {}).get("runs", {}).get(file, {}).get(level)
                if old:
                    row["before"] = {k: old[k] for k in ("unmodelled_nodes", "unmodelled_share_by_op_type", "crash")
                                     if k in old}
                results[name]["runs"].setdefault(file, {})[level] = row
                print(f"{name}/{file}/{level}: {row.get('crash') or row['unmodelled_share_by_op_type']}"[:400],
                      file=sys.stderr, flush=True)
    meta = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "cpu": cpu_name(),
            "torch": torch.__version__, "onnxruntime": ort.__version__, "transformers": transformers.__version__,
            "command": "python " + " ".join(sys.argv), "iters": args.iters, "warmup": 1,
            "previous": args.previous_label or (str(args.previous) if args.previous else None)}
    if earlier.exists():  # rows kept from earlier runs: their commands too
        before = json.loads(earlier.read_text())["meta"]
        meta["commands"] = before.get("commands", [before["command"]]) + [meta["command"]]
    atomic_write_text(args.out / "onnx_zoo_cpu.json", json.dumps({"meta": meta, "results": results}, indent=1))
    text = markdown(meta, results, previous)
    atomic_write_text(args.out / "onnx_zoo_cpu.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
