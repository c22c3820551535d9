"""Inference loop of an int8 dynamically quantized LSTM + Linear (quantize_dynamic), 12 batches."""
import sys, torch
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent.parent))
import fac
m, x = fac.qdyn_lstm()
with torch.no_grad():
    for i in range(12):
        y = m(x)
print("batches", i + 1, tuple(y.shape))
