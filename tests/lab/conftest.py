import os
from pathlib import Path

import pytest
import torch

from roofline.models.llama import LlamaConfig, build_llama

# A WikiText-2 excerpt kept in the repository (with its licence), so the lab tests run from a fresh clone;
# ROOFLINE_TEST_DATA points them at the full files instead.
WIKITEXT = Path(os.environ.get("ROOFLINE_TEST_DATA", Path(__file__).resolve().parents[1] / "data/wikitext-2-sample"))
# Grouped-query attention (4 heads over 2 KV heads) as in llama-1b/8b, at a size that runs in milliseconds.
TINY = LlamaConfig(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=128, vocab_size=512, max_seq_len=256)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    yield


@pytest.fixture(scope="session")
def wikitext_dir() -> Path:
    assert (WIKITEXT / "test.txt").is_file(), f"WikiText-2 test.txt missing in {WIKITEXT}"
    return WIKITEXT


@pytest.fixture(scope="session")
def tiny_config() -> LlamaConfig:
    return TINY


@pytest.fixture(scope="session")
def cpu_ceilings():
    """Round CPU-like roofs, so tests never spend time measuring the machine."""
    from roofline.report import Ceilings

    return Ceilings(device="cpu", device_name="test cpu", memory_bandwidth_bytes_per_s=10e9,
                    peak_flops_per_s={"float32": 1e11, "bfloat16": 2e11, "float16": 2e11}, launch_overhead_s=5e-6,
                    source="test")


@pytest.fixture
def tiny_model():
    return build_llama(TINY, dtype=torch.float32)


# Prompts of different lengths, so batching them needs padding.
PROMPTS = [[5, 17, 33, 2, 9, 41, 7], [8, 3, 99], [101, 12, 250, 4, 4, 60], [77, 78, 79, 80, 81, 82, 83, 84, 85]]


@pytest.fixture
def prompts() -> list[list[int]]:
    return [list(p) for p in PROMPTS]
