"""The models of the ONNX consistency benchmark (benchmarks/onnx_consistency.py), as `roofline analyze` factories:
torchvision's ResNet-18 and a BERT-base encoder built from its config (random weights, nothing downloaded).

``ONNX_RESNET_SIZE`` (image side, default 224) and ``ONNX_BERT_LAYERS``/``ONNX_BERT_HIDDEN``/``ONNX_BERT_SEQ``
(default 12 / 768 / 128: BERT-base) shrink them for the test suite's CPU check.
"""

from __future__ import annotations

import os

import torch


def resnet18():
    import torchvision

    torch.manual_seed(0)
    side = int(os.environ.get("ONNX_RESNET_SIZE", "224"))
    return torchvision.models.resnet18().eval(), (torch.randn(1, 3, side, side),)


def bert_base():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    layers = int(os.environ.get("ONNX_BERT_LAYERS", "12"))
    hidden = int(os.environ.get("ONNX_BERT_HIDDEN", "768"))
    seq = int(os.environ.get("ONNX_BERT_SEQ", "128"))
    config = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=max(1, hidden // 64),
                        intermediate_size=4 * hidden, attn_implementation="eager")
    model = BertModel(config, add_pooling_layer=False).eval()
    return model, (torch.zeros(1, seq, dtype=torch.long),)
