import pytest
import torch

from roofline.errors import RooflineError
from roofline.models import get_workload, list_workloads

TINY = {
    "matmul": {"seq": 64},
    "layernorm": {"seq": 64},
    "llama-tiny": {"batch": 2, "seq": 16},
    "bad-syncs": {"batch": 8},
    "bert-base": {"batch": 1, "seq": 16},
    "resnet50": {"batch": 1},
}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n == "bert-base" else n for n in TINY]
)
def test_workload_builds_and_runs_forward(name):
    workload = get_workload(name, **TINY[name])
    with torch.no_grad():
        output = workload.model(*workload.inputs)
    tensor = output.last_hidden_state if hasattr(output, "last_hidden_state") else output
    assert torch.isfinite(tensor).all()
    assert workload.description
    assert workload.device == torch.device("cpu")


def test_every_listed_workload_has_a_tiny_case_or_is_a_big_llama():
    assert set(list_workloads()) == set(TINY) | {"llama-1b", "llama-8b"}


def test_inputs_are_random_and_seeded():
    first = get_workload("matmul", seq=32)
    second = get_workload("matmul", seq=32)
    a = first.inputs[0]
    assert (a != 0).float().mean() > 0.99
    assert torch.equal(a, second.inputs[0])


def test_llama_outputs_logits_and_names_modules_like_the_reference():
    workload = get_workload("llama-tiny", batch=1, seq=8)
    with torch.no_grad():
        logits = workload.model(*workload.inputs)
    assert logits.shape == (1, 8, 32000)
    names = dict(workload.model.named_modules())
    assert "layers.3.attention.wq" in names and "layers.3.feed_forward.w1" in names


def test_backward_workload_gives_a_scalar_loss_with_gradients():
    workload = get_workload("llama-tiny", batch=1, seq=8, backward=True)
    loss = workload.loss_fn(workload.model(*workload.inputs))
    loss.backward()
    assert loss.dim() == 0
    assert workload.model.layers[0].attention.wq.weight.grad is not None


def test_half_precision_llama_builds_in_that_dtype():
    workload = get_workload("llama-tiny", batch=1, seq=8, dtype="bfloat16")
    assert all(p.dtype == torch.bfloat16 for p in workload.model.parameters())
    with torch.no_grad():
        assert workload.model(*workload.inputs).dtype == torch.bfloat16


def test_unknown_workload_lists_the_valid_ones():
    with pytest.raises(RooflineError, match="llama-tiny"):
        get_workload("gpt-9")


def test_bad_dtype_and_device_are_user_errors():
    with pytest.raises(RooflineError):
        get_workload("matmul", dtype="float7")
    if not torch.cuda.is_available():
        with pytest.raises(RooflineError, match="CUDA is not available"):
            get_workload("matmul", device="cuda")


@pytest.mark.parametrize("name, sizes, message", [
    ("resnet50", {"batch": 2, "seq": 128}, "--seq does not apply to resnet50"),
    ("bad-syncs", {"seq": 16}, "--seq does not apply to bad-syncs"),
    ("matmul", {"batch": 4, "seq": 32}, "--batch does not apply to matmul"),
    ("layernorm", {"batch": 2}, "--batch does not apply to layernorm"),
])
def test_a_size_the_workload_has_no_dimension_for_is_refused_not_ignored(name, sizes, message):
    with pytest.raises(RooflineError, match=message):
        get_workload(name, **sizes)


def test_a_batch_of_one_for_a_single_matrix_is_what_it_is():
    assert get_workload("matmul", batch=1, seq=32).inputs[0].shape == (32, 32)


def test_missing_zoo_package_says_which_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_torchvision(name, *args, **kwargs):
        if name.startswith("torchvision"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torchvision)
    with pytest.raises(RooflineError, match=r"roofline\[zoo\]"):
        get_workload("resnet50", batch=1)
