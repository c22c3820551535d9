"""User factories (`analyze file.py:factory`): Hugging Face style dict inputs, backward without a loss_fn."""

from __future__ import annotations

import json
import textwrap

import pytest
import torch

from roofline.analyze.live import default_loss, make_step
from roofline.cli.targets import check_factory_result
from roofline.errors import RooflineError

HF_FACTORY = textwrap.dedent(
    """\
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel


    def gpt2(labels=False):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32))
        ids = torch.randint(0, 64, (1, 8))
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if labels:
            inputs["labels"] = ids
        return model, inputs


    def gpt2_labels():
        return gpt2(labels=True)
    """
)


class _Output(dict):
    """What a Hugging Face ModelOutput looks like to us: a dict whose keys are also attributes."""

    def __getattr__(self, name):
        return self.get(name)


def test_default_loss_prefers_the_models_own_loss_then_logits():
    w = torch.randn(3, requires_grad=True)
    own = (w * 2).sum()
    assert default_loss(_Output(loss=own, logits=w * 3)) is own
    logits = w * 3
    assert torch.equal(default_loss(_Output(loss=None, logits=logits)), logits.float().mean())
    assert torch.equal(default_loss((torch.ones(2), logits)), logits.float().mean()), "first tensor needing grad"
    with pytest.raises(RooflineError, match="no floating-point tensor"):
        default_loss({"ids": torch.ones(2, dtype=torch.long)})


def test_dict_inputs_are_keyword_arguments():
    class Keywords(torch.nn.Module):
        def forward(self, input_ids, scale=1.0):
            return input_ids * scale

    model, inputs = check_factory_result((Keywords(), {"input_ids": torch.ones(2), "scale": 3.0}), "f.py:f")
    assert torch.equal(make_step(model, inputs)(), torch.full((2,), 3.0))


def test_a_batch_dict_passed_as_one_argument_is_accepted():
    class TakesABatch(torch.nn.Module):
        def forward(self, batch):
            return batch["x"] * 2

    model, inputs = check_factory_result((TakesABatch(), ({"x": torch.ones(2)},)), "f.py:f")
    assert torch.equal(make_step(model, inputs)(), torch.full((2,), 2.0))


def test_args_and_kwargs_as_torch_export_takes_them_are_bound_to_the_forwards_names():
    class Mixed(torch.nn.Module):
        def forward(self, x, y, scale=1.0, **extra):
            return (x + y) * scale * extra.get("bias", 1.0)

    model, inputs = check_factory_result((Mixed(), (torch.ones(2), torch.ones(2)), {"scale": 3.0, "bias": 0.5}),
                                         "f.py:f")
    assert set(inputs) == {"x", "y", "scale", "bias"}
    assert torch.equal(make_step(model, inputs)(), torch.full((2,), 3.0))
    model, inputs = check_factory_result((Mixed(), torch.ones(2), {"y": torch.zeros(2)}), "f.py:f")
    assert torch.equal(make_step(model, inputs)(), torch.ones(2)), "one tensor is the one positional argument"


@pytest.mark.parametrize("made, message", [
    ((torch.nn.Linear(2, 2), (torch.ones(2), torch.ones(2)), {}), "do not fit Linear.forward"),
    ((torch.nn.Linear(2, 2), (torch.ones(2),), {"bias": torch.ones(2)}), "do not fit Linear.forward"),
    ((torch.nn.Linear(2, 2), 5, {}), "returned 5 as the positional arguments"),
])
def test_args_and_kwargs_that_do_not_fit_the_forward_are_one_clear_error(made, message):
    with pytest.raises(RooflineError, match=message):
        check_factory_result(made, "f.py:f")


@pytest.mark.parametrize("made, message", [
    ((42, torch.ones(1)), "returned 42 as the model"),
    ((torch.nn.Linear(2, 2), None), "returned None as the inputs"),
    ((torch.nn.Linear(2, 2), {"x": 1}), "no tensor"),
    ((torch.nn.Linear(2, 2), ({"x": [1, "a"]},)), "no tensor"),
    (torch.nn.Linear(2, 2), "must return \\(model, inputs\\)"),
    ((torch.nn.Linear(2, 2), {1: torch.ones(1)}), "keys are not all argument names"),
])
def test_junk_from_a_factory_is_one_clear_error(made, message):
    with pytest.raises(RooflineError, match=message):
        check_factory_result(made, "f.py:f")


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["gpt2", "gpt2_labels"])
def test_a_hugging_face_model_with_dict_inputs_runs_backward_without_a_loss_fn(tmp_path, factory, one_thread):
    pytest.importorskip("transformers")
    from roofline.cli import main

    path = tmp_path / "hf.py"
    path.write_text(HF_FACTORY)
    out = tmp_path / "out"
    assert main(["analyze", f"{path}:{factory}", "--backward", "--device", "cpu", "--iters", "1", "--warmup", "0",
                 "-o", str(out), "--no-html"]) == 0
    report = json.loads((out / "report.json").read_text())
    phases = {op["phase"] for op in report["ops"]}
    assert {"forward", "backward"} <= phases
    names = {op["name"] for op in report["ops"]}
    assert ("aten::nll_loss_forward" in names) == (factory == "gpt2_labels"), "the model's own loss when it has one"


def test_the_python_api_takes_dict_inputs_as_keyword_arguments(one_thread):
    from roofline.api import count_flops_per_op

    class Keywords(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, input_ids, scale):
            return self.lin(input_ids) * scale

    ops = count_flops_per_op(Keywords(), {"input_ids": torch.ones(2, 4), "scale": 2.0})
    assert [op.name for op in ops if op.name == "aten::addmm"] == ["aten::addmm"]


def test_packed_sequences_and_namedtuples_in_the_inputs_survive_the_move_to_the_device():
    """A packed RNN input (a namedtuple whose batch_sizes must stay on the CPU) and a user's namedtuple used to raise
    in the move ("Expected data to be a list or tuple of length 2")."""
    from collections import namedtuple

    from roofline.cli.targets import _to_device

    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.ones(3, 4, 2), torch.tensor([4, 2, 1]), batch_first=True)
    Pair = namedtuple("Pair", "left right")
    model, (moved, pair) = _to_device(torch.nn.GRU(2, 3, batch_first=True), (packed, Pair(torch.ones(1), 2)), "cpu",
                                      "f.py:f")
    assert isinstance(moved, torch.nn.utils.rnn.PackedSequence) and moved.batch_sizes.tolist() == [3, 2, 1, 1]
    assert isinstance(pair, Pair) and pair.right == 2
    assert model(moved)[0].data.shape == (7, 3)


CAST_FACTORY = textwrap.dedent(
    """\
    import torch


    def detector():
        model = torch.nn.Linear(4, 2)
        targets = [{"boxes": torch.ones(1, 4), "labels": torch.ones(1, dtype=torch.long)}]
        return model, (torch.ones(3, 4), torch.arange(3), targets)
    """
)


def test_dtype_casts_a_factorys_model_and_float_inputs_and_batch_is_refused(tmp_path, capsys):
    """--dtype on a factory used to be ignored silently (the report said float32 for an asked-for bf16 run); --batch
    and --seq cannot resize what a factory built, so they are refused in one line, exit 2."""
    from roofline.cli import main
    from roofline.cli.targets import load_target

    path = tmp_path / "f.py"
    path.write_text(CAST_FACTORY)
    workload = load_target(f"{path}:detector", None, dtype="bfloat16", device="cpu")
    x, ids, targets = workload.inputs
    assert workload.model.weight.dtype == torch.bfloat16 and x.dtype == torch.bfloat16
    assert ids.dtype == torch.int64 and targets[0]["labels"].dtype == torch.int64
    assert targets[0]["boxes"].dtype == torch.bfloat16
    kept = load_target(f"{path}:detector", None, dtype=None, device="cpu")
    assert kept.model.weight.dtype == torch.float32 and kept.inputs[0].dtype == torch.float32
    assert main(["analyze", f"{path}:detector", "--batch", "8", "--device", "cpu", "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--batch size a built-in --model" in err


def test_an_exported_program_as_the_model_is_told_to_return_its_module():
    """torch.export's ExportedProgram is no nn.Module (calling it is deprecated): the error says what to return."""
    ep = torch.export.export(torch.nn.Linear(4, 2), (torch.randn(3, 4),))
    with pytest.raises(RooflineError, match=r"returned ExportedProgram as the model: .*return its \.module\(\)"):
        check_factory_result((ep, torch.randn(3, 4)), "f.py:f")
    model, _ = check_factory_result((ep.module(), torch.randn(3, 4)), "f.py:f")
    assert isinstance(model, torch.nn.Module)
