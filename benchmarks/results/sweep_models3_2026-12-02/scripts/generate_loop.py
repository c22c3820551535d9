"""T5 greedy decoding of 6 tokens, 10 batches, under inference_mode: a serving loop with no optimizer."""
import sys, torch
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent.parent))
import fac
gen, inputs = fac.hf_t5_generate()
with torch.inference_mode():
    for i in range(10):
        out = gen(**inputs)
print("batches", i + 1, "tokens", tuple(out.shape))
