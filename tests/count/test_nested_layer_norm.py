"""A layer norm on a nested tensor, from a trace: counted on the buffer its allocations show. nn.TransformerEncoder's
fast path (eval, with a padding mask) runs its layers on nested tensors; the trace records a nested operand with no
type or shape, so its two native_layer_norm calls a layer were unmodelled, 18-28% of a CPU trace's time."""

from __future__ import annotations

import json
import warnings

import torch
import torch.nn.functional as F

from count_recording import OpCollector

E, LENGTHS = 32, (6, 3, 10)


def _encoder_and_inputs():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=E, nhead=4, dim_feedforward=64, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    x = torch.randn(len(LENGTHS), max(LENGTHS), E)
    mask = torch.arange(max(LENGTHS))[None, :] >= torch.tensor(LENGTHS)[:, None]  # True: padding
    return encoder, x, mask


def _traced_ops(tmp_path, cpu_ceilings, run, edit=None):
    from roofline.analyze.pipeline import report_from_trace
    from roofline.capture.kineto import load_trace

    path = tmp_path / "nested.json"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        run()  # warm: a first call's own time is set-up
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            run()
    prof.export_chrome_trace(str(path))
    if edit is not None:
        trace = json.loads(path.read_text())
        edit(trace["traceEvents"])
        path.write_text(json.dumps(trace))
    return report_from_trace(load_trace(str(path)), cpu_ceilings).ops


def test_encoder_fast_path_layer_norms_are_counted_from_a_trace(tmp_path, cpu_ceilings):
    encoder, x, mask = _encoder_and_inputs()
    ops = _traced_ops(tmp_path, cpu_ceilings, lambda: encoder(x, src_key_padding_mask=mask))
    norms = [o for o in ops if o.name == "aten::native_layer_norm"]
    tokens = sum(LENGTHS)  # the nested buffer: the kept tokens only
    assert len(norms) == 4 and all(o.modeled for o in norms)
    # 5 FLOPs an element and the affine 2 (norm.py), over the kept tokens' elements, as the live formula counts them
    assert {(o.flops, o.dtype, tuple(o.input_shapes[0])) for o in norms} == {(7 * tokens * E, "float32", (tokens, E))}
    assert not [o for o in ops if o.name in ("aten::native_layer_norm", "aten::layer_norm") and not o.modeled]


def test_a_nested_layer_norm_counts_alike_live_and_from_a_trace(tmp_path, cpu_ceilings):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.randn(n, E) for n in LENGTHS])
    weight, bias = torch.randn(E), torch.randn(E)

    def run():
        return F.layer_norm(nested, (E,), weight, bias)

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        with OpCollector() as collector:
            run()
    (live,) = [op.cost() for op in collector.ops if op.name == "aten::native_layer_norm"]
    (traced,) = [o for o in _traced_ops(tmp_path, cpu_ceilings, run) if o.name == "aten::native_layer_norm"]
    assert live.modeled and (traced.flops, traced.bytes) == (live.flops, live.bytes) == (
        7 * sum(LENGTHS) * E, (2 * sum(LENGTHS) * E + 2 * E + 2 * sum(LENGTHS)) * 4)


def test_allocations_that_disagree_leave_it_unmodelled(tmp_path, cpu_ceilings):
    """The mean's allocation changed to one row more than the buffer holds: no buffer is read from it."""
    def one_more_row(events):
        inside = [e for e in events if e.get("name") == "aten::empty"
                  and e["args"].get("Concrete Inputs", [""])[0] == f"[{sum(LENGTHS)}]"]
        inside[0]["args"]["Concrete Inputs"][0] = f"[{sum(LENGTHS) + 1}]"

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.randn(n, E) for n in LENGTHS])
    ops = _traced_ops(tmp_path, cpu_ceilings, lambda: F.layer_norm(nested, (E,), torch.ones(E), torch.zeros(E)),
                      one_more_row)
    (norm,) = [o for o in ops if o.name == "aten::native_layer_norm"]
    assert not norm.modeled and norm.flops == 0
