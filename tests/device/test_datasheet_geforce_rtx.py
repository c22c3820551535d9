"""Datasheet entries for GeForce and RTX workstation cards beyond the RTX 3090/4090: each name as torch spells it
resolves to its own entry and never to a neighbour's (a 3080 Ti is not a 3080, a 4080 SUPER not a 4080, the 12 GB
RTX 3080 not the 10 GB one), laptop parts stay refused, and every entry's figures hang together as dense tensor
figures with FP32 accumulate: twice the FP32 rate on GeForce Ampere/Ada (which halve FP32-accumulate tensor math),
four times on the professional cards; a sparse or FP16-accumulate figure taken by mistake breaks that ratio."""

from __future__ import annotations

import pytest

from roofline.device.datasheet import DATASHEET, datasheet_key, datasheet_refusal, lookup_datasheet

T = 1e12
GB = 1e9
GEFORCE = ["RTX 3090", "RTX 4090", "RTX 3090 Ti", "RTX 3080 Ti", "RTX 3080", "RTX 4080"]
PROFESSIONAL = ["RTX A6000", "A40", "RTX A4000", "RTX PRO 6000 Blackwell"]
NEW = ["RTX 3090 Ti", "RTX 3080 Ti", "RTX 3080", "RTX 4080", "RTX A4000", "RTX PRO 6000 Blackwell"]


@pytest.mark.parametrize("name, memory, key", [
    ("NVIDIA GeForce RTX 3090 Ti", 25.4e9, "RTX 3090 Ti"),
    ("NVIDIA GeForce RTX 3090", 25.4e9, "RTX 3090"),  # the Ti pattern must not take the 3090
    ("NVIDIA GeForce RTX 3080 Ti", 12.6e9, "RTX 3080 Ti"),
    ("NVIDIA GeForce RTX 3080", 10.5e9, "RTX 3080"),
    ("NVIDIA GeForce RTX 3080", None, "RTX 3080"),  # no memory known: the card the name first belonged to
    ("NVIDIA GeForce RTX 3080", 12.6e9, None),  # the 12 GB card (8960 cores, 912 GB/s) has no entry of its own
    ("NVIDIA GeForce RTX 4080", 16.7e9, "RTX 4080"),
    ("NVIDIA GeForce RTX 4080 SUPER", 16.7e9, None),  # 10240 cores, 736 GB/s: not the 4080's figures
    ("NVIDIA GeForce RTX 4090", None, "RTX 4090"),
    ("NVIDIA RTX A4000", 16.9e9, "RTX A4000"),
    ("Quadro RTX 4000", None, None),  # Turing
    ("NVIDIA RTX 4000 Ada Generation", None, None),
    ("NVIDIA RTX 4000 SFF Ada Generation", None, None),
    ("NVIDIA RTX A5000", None, None),
    ("NVIDIA RTX 6000 Ada Generation", None, None),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 101.9e9, "RTX PRO 6000 Blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", None, None),  # 300 W: other clocks
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", None, None),
    ("NVIDIA GeForce RTX 5090", None, None),
    ("NVIDIA GeForce RTX 4070 Ti", None, None),
])
def test_names_resolve_to_their_own_entry_or_none(name, memory, key):
    assert datasheet_key(name, memory) == key


@pytest.mark.parametrize("name", [
    "NVIDIA GeForce RTX 4080 Laptop GPU",
    "NVIDIA GeForce RTX 3080 Ti Laptop GPU",
    "NVIDIA GeForce RTX 3080 Laptop GPU",
    "NVIDIA RTX A4000 Laptop GPU",
    "NVIDIA GeForce RTX 3080 with Max-Q Design",
])
def test_laptop_variants_of_the_new_cards_stay_refused(name):
    assert datasheet_key(name, 16e9) is None and lookup_datasheet(name) is None
    assert "laptop GPU" in datasheet_refusal(name)


def test_the_max_q_workstation_card_is_not_called_a_laptop_gpu():
    name = "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"
    assert datasheet_refusal(name) == "" and datasheet_key(name) is None


@pytest.mark.parametrize("key", NEW)
def test_each_new_entry_is_internally_consistent(key):
    entry = DATASHEET[key]
    peaks = entry.peak_flops_per_s
    assert entry.memory_bandwidth_bytes_per_s > 100 * GB and entry.memory_bytes >= 10 * GB
    assert entry.source and entry.name.startswith("NVIDIA")
    fp32, fp16 = peaks["float32"], peaks["float16"]
    assert fp16 >= fp32 and peaks["bfloat16"] == fp16  # tensor FP16 beats the FP32 pipes; BF16 runs at its rate
    if "tfloat32" in peaks:
        assert fp32 <= peaks["tfloat32"] <= fp16
    for low_precision in ("int8", "float8_e4m3fn"):
        if low_precision in peaks:
            assert peaks[low_precision] >= fp16


@pytest.mark.parametrize("key, ratio", [(k, 2) for k in GEFORCE] + [(k, 4) for k in PROFESSIONAL])
def test_dense_fp32_accumulate_tensor_rate_is_the_architectures_multiple_of_fp32(key, ratio):
    """A sparse figure (x2) or the GeForce FP16-accumulate one (x2) taken by mistake would break the ratio."""
    peaks = DATASHEET[key].peak_flops_per_s
    assert peaks["float16"] / peaks["float32"] == pytest.approx(ratio, rel=0.01)


@pytest.mark.parametrize("key, bandwidth_gb, fp32, fp16, memory_gb", [
    ("RTX 3090 Ti", 1008, 40, 80, 24),
    ("RTX 3080 Ti", 912, 34.1, 68, 12),
    ("RTX 3080", 760, 29.8, 59.5, 10),
    ("RTX 4080", 716.8, 48.7, 97.5, 16),
    ("RTX A4000", 448, 19.2, 76.7, 16),
    ("RTX PRO 6000 Blackwell", 1792, 125.95, 503.8, 96),
])
def test_figures_are_the_cited_ones(key, bandwidth_gb, fp32, fp16, memory_gb):
    entry = DATASHEET[key]
    assert entry.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth_gb * GB)
    assert entry.peak_flops_per_s["float32"] == pytest.approx(fp32 * T)
    assert entry.peak_flops_per_s["float16"] == pytest.approx(fp16 * T)
    assert entry.memory_bytes == pytest.approx(memory_gb * GB)
    assert f"{fp16:g}" in entry.source  # the source states the figure the entry uses


def test_entries_without_a_cited_figure_for_a_dtype_leave_it_out():
    for key in ("RTX 3080 Ti", "RTX 3080", "RTX 4080", "RTX A4000"):
        assert "tfloat32" not in DATASHEET[key].peak_flops_per_s
        assert "int8" not in DATASHEET[key].peak_flops_per_s
    assert "float8_e4m3fn" not in DATASHEET["RTX 4080"].peak_flops_per_s
