"""The built-in workloads: a name -> a model, seeded random inputs and a description of what runs.

Sizes default to what fills a GPU on CUDA and to what runs in seconds on a CPU; ``batch`` and ``seq`` override
them (for ``matmul`` and ``layernorm``, ``seq`` is the matrix size). The zoo workloads (torchvision,
transformers) import their package only when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from roofline.count.meta import canonical_dtype
from roofline.device.measure import memory_available
from roofline.device.resolve import resolve_device
from roofline.errors import RooflineError
from roofline.models.bad_syncs import BadSyncs
from roofline.models.llama import CONFIGS, build_llama

SEED = 0

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class Workload:
    name: str
    model: nn.Module
    inputs: tuple
    dtype: torch.dtype
    device: torch.device
    description: str
    loss_fn: Callable[[object], torch.Tensor] | None = None
    # The batch and sequence length its inputs were built with (None: the workload has no such dimension), which
    # `roofline predict --batch/--seq` projects from.
    batch: int | None = None
    seq: int | None = None


def recorded_sizes(workload: object) -> dict[str, int]:
    """``{"batch": B, "seq": S}`` as far as a workload knows them, for ``report.extra`` (a file.py:factory's
    model knows neither)."""
    return {label: value for label in ("batch", "seq") if (value := getattr(workload, label, None)) is not None}


@dataclass(frozen=True)
class _Size:
    batch: int
    seq: int


class MatMul(nn.Module):
    """``a @ b``: the workload that should sit on the compute roof."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return _DTYPES[canonical_dtype(dtype)]
    except KeyError:
        raise RooflineError(f"unknown dtype {dtype!r}; use one of float32, float16, bfloat16") from None


def _mean_square(output) -> torch.Tensor:
    tensor = output.last_hidden_state if hasattr(output, "last_hidden_state") else output
    return tensor.square().mean()


def _sizes(device: torch.device, cuda: _Size, cpu: _Size, batch: int | None, seq: int | None) -> _Size:
    default = cuda if device.type == "cuda" else cpu
    for label, value in (("batch", batch), ("seq", seq)):
        if value is not None and value < 1:
            raise RooflineError(f"--{label} must be a positive integer, got {value}")
    return _Size(batch or default.batch, seq or default.seq)


def _available(device: torch.device) -> tuple[int | None, str]:
    """(memory free for new tensors on ``device`` now, or None; the words that say where): the GPU's free memory, or
    what the host lets this process take (``measure.memory_available``)."""
    if device.type == "cuda":
        try:
            return int(torch.cuda.mem_get_info(device)[0]), "free on this GPU"
        except (RuntimeError, AssertionError):
            return None, ""
    if device.type != "cpu":
        return None, ""
    free, limited = memory_available()
    return free, ("left under this process's memory limit (container or job cgroup)" if limited
                  else "free on this host")


def _check_fits(name: str, needed_bytes: float, device: torch.device, what: str = "its tensors") -> None:
    """Refuse before allocating a workload whose tensors alone would not fit in the device's free memory."""
    free, where = _available(device)
    if free is not None and needed_bytes > 0.9 * free:
        raise RooflineError(
            f"{name} needs about {needed_bytes / 2**30:.1f} GiB for {what}, more than the {free / 2**30:.1f} GiB "
            f"{where}; use a smaller --batch/--seq"
        )


def _matmul(name, device, dtype, batch, seq) -> Workload:
    size = _sizes(device, _Size(1, 8192), _Size(1, 1024), batch, seq).seq
    _check_fits(name, size * size * (3 * _itemsize(dtype) + 4), device, f"a, b and a @ b ({size}x{size})")
    generator = torch.Generator(device="cpu").manual_seed(SEED)
    a = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
    b = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
    return Workload(name, MatMul(), (a, b), dtype, device, f"one square matmul a @ b, {size}x{size}x{size}")


def _layernorm(name, device, dtype, batch, seq) -> Workload:
    size = _sizes(device, _Size(1, 8192), _Size(1, 2048), batch, seq).seq
    _check_fits(name, size * size * (2 * _itemsize(dtype) + 4), device, f"the input and output ({size}x{size})")
    generator = torch.Generator(device="cpu").manual_seed(SEED)
    x = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
    model = nn.LayerNorm(size).to(device=device, dtype=dtype)
    return Workload(name, model, (x,), dtype, device, f"nn.LayerNorm({size}) over a {size}x{size} input")


def _llama(name, device, dtype, batch, seq) -> Workload:
    config = CONFIGS[name]
    size = _sizes(device, _Size(4, 512), _Size(1, 32) if name != "llama-tiny" else _Size(2, 64), batch, seq)
    if size.seq > config.max_seq_len:
        raise RooflineError(f"--seq {size.seq} is longer than {name}'s context of {config.max_seq_len}")
    n_params = config.n_layers * (
        config.dim * config.head_dim * (2 * config.n_heads + 2 * config.n_kv_heads) + 3 * config.dim * config.ffn_dim
    ) + 2 * config.vocab_size * config.dim
    _check_fits(name, n_params * _itemsize(dtype) + size.batch * size.seq * config.vocab_size * 4 * 2, device,
                "its weights and logits")
    model = build_llama(config, dtype=dtype, device=device, seed=SEED)
    generator = torch.Generator(device="cpu").manual_seed(SEED + 1)
    tokens = torch.randint(0, config.vocab_size, (size.batch, size.seq), generator=generator).to(device)
    targets = torch.randint(0, config.vocab_size, (size.batch, size.seq), generator=generator).to(device)

    def loss_fn(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())

    description = (
        f"{name}: LLaMA dim {config.dim}, {config.n_layers} layers, {config.n_heads} heads, {config.n_kv_heads} KV "
        f"heads, FFN {config.ffn_dim}, vocab {config.vocab_size}; random weights; forward on token ids "
        f"(batch {size.batch}, seq {size.seq}) -> logits"
    )
    return Workload(name, model, (tokens,), dtype, device, description, loss_fn, size.batch, size.seq)


def _resnet50(name, device, dtype, batch, seq) -> Workload:
    try:
        import torchvision
    except ImportError:
        raise RooflineError("the resnet50 workload needs torchvision: pip install 'roofline[zoo]'") from None
    size = _sizes(device, _Size(32, 224), _Size(2, 224), batch, None)
    # about 25.6 M weights; the largest activations of one image are about 40 MB in fp32
    _check_fits(name, 25.6e6 * _itemsize(dtype) + size.batch * 40e6 * _itemsize(dtype) / 4 * 3, device,
                "its weights and activations")
    torch.manual_seed(SEED)
    model = torchvision.models.resnet50(weights=None).to(device=device, dtype=dtype).eval()
    generator = torch.Generator(device="cpu").manual_seed(SEED + 1)
    images = torch.randn(size.batch, 3, 224, 224, generator=generator).to(device=device, dtype=dtype)
    targets = torch.randint(0, 1000, (size.batch,), generator=generator).to(device)

    def loss_fn(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), targets)

    description = f"torchvision resnet50(weights=None), input images ({size.batch}, 3, 224, 224)"
    return Workload(name, model, (images,), dtype, device, description, loss_fn, size.batch)


def _bert_base(name, device, dtype, batch, seq) -> Workload:
    try:
        from transformers import BertConfig, BertModel
    except ImportError:
        raise RooflineError("the bert-base workload needs transformers: pip install 'roofline[zoo]'") from None
    size = _sizes(device, _Size(16, 128), _Size(2, 64), batch, seq)
    config = BertConfig()
    if size.seq > config.max_position_embeddings:
        raise RooflineError(f"--seq {size.seq} is longer than BERT's {config.max_position_embeddings} positions")
    _check_fits(name, 110e6 * _itemsize(dtype) + size.batch * size.seq * (config.hidden_size * 8 * _itemsize(dtype)
                + config.num_attention_heads * size.seq * 4), device, "its weights and activations")
    torch.manual_seed(SEED)
    model = BertModel(config).to(device=device, dtype=dtype).eval()
    generator = torch.Generator(device="cpu").manual_seed(SEED + 1)
    ids = torch.randint(0, config.vocab_size, (size.batch, size.seq), generator=generator).to(device)
    mask = torch.ones(size.batch, size.seq, dtype=torch.long, device=device)
    description = (
        f"transformers BertModel(BertConfig()) base, random weights, input ids + attention mask "
        f"(batch {size.batch}, seq {size.seq})"
    )
    return Workload(name, model, (ids, mask), dtype, device, description, _mean_square, size.batch, size.seq)


def _bad_syncs(name, device, dtype, batch, seq) -> Workload:
    size = _sizes(device, _Size(8192, 1024), _Size(256, 1024), batch, None)
    _check_fits(name, size.batch * 1024 * (4 * _itemsize(dtype) + 4), device, "its activations")
    torch.manual_seed(SEED)
    model = BadSyncs(width=1024, iterations=10).to(device=device, dtype=dtype).eval()
    generator = torch.Generator(device="cpu").manual_seed(SEED + 1)
    x = torch.randn(size.batch, 1024, generator=generator).to(device=device, dtype=dtype)
    description = (
        f"Linear(1024, 1024) + ReLU applied 10 times to a ({size.batch}, 1024) input; each iteration calls "
        f".item() on a mean and round-trips the activation through .cpu().to(device)"
    )
    return Workload(name, model, (x,), dtype, device, description, _mean_square, size.batch)


_BUILDERS: dict[str, Callable[..., Workload]] = {
    "matmul": _matmul,
    "layernorm": _layernorm,
    "llama-tiny": _llama,
    "llama-1b": _llama,
    "llama-8b": _llama,
    "resnet50": _resnet50,
    "bert-base": _bert_base,
    "bad-syncs": _bad_syncs,
}


# A size a workload has no dimension for, and why (given, it would be ignored without a word).
_NO_SUCH_SIZE: dict[tuple[str, str], str] = {
    ("matmul", "batch"): "one square matrix product; --seq sets its size",
    ("layernorm", "batch"): "one square input; --seq sets its size",
    ("resnet50", "seq"): "its images are 3x224x224; --batch sets how many",
    ("bad-syncs", "seq"): "its input is (batch, 1024); --batch sets the rows",
}


def _check_sizes_apply(name: str, batch: int | None, seq: int | None) -> None:
    for label, value in (("batch", batch), ("seq", seq)):
        why = _NO_SUCH_SIZE.get((name, label))
        if why and value is not None and not (label == "batch" and value == 1):  # a batch of one is what it is
            raise RooflineError(f"--{label} does not apply to {name}: {why}")


def list_workloads() -> list[str]:
    return list(_BUILDERS)


def _did_you_mean(name: str) -> str:
    """' (did you mean 'llama-tiny'?)' for a typo, a prefix or another case of a workload's name; else ''."""
    import difflib

    lowered = {known.lower(): known for known in _BUILDERS}
    close = [lowered[name.lower()]] if name.lower() in lowered else []
    close = close or [known for known in _BUILDERS if name and known.startswith(name.lower())][:2]
    close = close or difflib.get_close_matches(name.lower(), list(_BUILDERS), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def _through_a_factory(name: str) -> str:
    """How to analyse a model that is not built in: a factory file; for a torchvision model's name, that factory
    spelled out (users try `--model vit_b_16`)."""
    try:
        import torchvision

        known = name in torchvision.models.list_models()
    except Exception:  # noqa: BLE001 - no torchvision, or one whose registry fails: the general advice
        known = False
    if known:
        return (f"; {name!r} is a torchvision model: analyse it through a factory, a file holding `def build(): "
                f"return torchvision.models.{name}(), torch.randn(1, 3, 224, 224)` (with its imports), then "
                "`roofline analyze FILE.py:build`")
    return "; or analyse your own model: `roofline analyze FILE.py:build`, where build() returns (model, inputs)"


def get_workload(
    name: str,
    *,
    batch: int | None = None,
    seq: int | None = None,
    dtype: str | torch.dtype = "float32",
    device: str | torch.device = "cpu",
    backward: bool = False,
) -> Workload:
    """Build a named workload on ``device`` in ``dtype``; with ``backward`` its parameters require grad."""
    if name not in _BUILDERS:
        raise RooflineError(f"unknown workload {name!r}{_did_you_mean(name)}; choose one of: {', '.join(_BUILDERS)}"
                            f"{_through_a_factory(name)}")
    _check_sizes_apply(name, batch, seq)
    torch_dtype, torch_device = parse_dtype(dtype), resolve_device(device)
    try:
        workload = _BUILDERS[name](name, torch_device, torch_dtype, batch, seq)
    except torch.OutOfMemoryError:
        raise RooflineError(f"{name} does not fit in {torch_device}'s memory at this size; use a smaller "
                            "--batch/--seq") from None
    except RuntimeError as exc:
        if "alloc" not in str(exc).lower():
            raise
        raise RooflineError(f"{name} could not allocate its tensors ({str(exc).splitlines()[0]}); use a smaller "
                            "--batch/--seq") from None
    workload.model.requires_grad_(backward)
    if backward:
        for tensor in workload.inputs:
            if tensor.is_floating_point():
                tensor.requires_grad_(True)
    return workload
