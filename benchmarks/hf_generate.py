"""A user's script that calls Hugging Face generate() on a tiny random-weight GPT-2 or Llama (no download).

`roofline doctor benchmarks/hf_generate.py` should name generate()'s per-token host-device syncs with file:line
(issue 15). Runs on CUDA when present, else on the CPU, where the syncs are the ones that would happen on one.

    python benchmarks/hf_generate.py [--arch gpt2|llama] [--tokens N]
"""

from __future__ import annotations

import argparse

import torch


def build(arch: str) -> torch.nn.Module:
    if arch == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=256, max_position_embeddings=256)
        return LlamaForCausalLM(config)
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=256, n_positions=256))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", choices=("gpt2", "llama"), default="gpt2")
    parser.add_argument("--tokens", type=int, default=24)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = build(args.arch).to(device).eval()
    prompt = torch.randint(0, 256, (1, 8), device=device)
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=args.tokens,
                             min_new_tokens=args.tokens, do_sample=False, pad_token_id=0)
    print("generated", out.shape[1] - prompt.shape[1], "tokens")


if __name__ == "__main__":
    main()
