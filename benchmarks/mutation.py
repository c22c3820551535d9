"""Mutation testing of the analysis layer (count/, analyze/, capture/kineto.py, doctor/): a seeded uniform sample
of cosmic-ray's mutants per target, scored with a 95% Wilson interval.

Why cosmic-ray rather than mutmut: mutmut 3 runs mutants through trampolines it puts in place of each function and
skips decorated functions, and every formula in count/ is a decorated (``@register``) function; cosmic-ray
mutates the source text itself (decorators included). cosmic-ray enumerates the mutants and writes each one; this
script runs them, because cosmic-ray's executor starts a fresh interpreter per mutant (torch + pytest imported
again: ~3 s of every ~7 s) and runs the whole test subset for every mutant. Here:

- a fork server: the parent imports pytest, hypothesis and torch once (never roofline), then forks one child per
  mutant; the child imports roofline from the mutated copy and runs pytest in-process;
- test selection by coverage: one traced run of the target's test subset records which tests execute each line;
  a mutant inside a function body runs only the tests that executed that body; a mutant at module or class level
  (tables, defaults, decorators: run at import) runs the whole subset. A mutant in a body no test executes
  survives without a run (reported as such: it is a gap like any other survivor).

The unmutated subset must pass first (else every mutant would read as killed). Killed = the selected tests fail
(a collection error or a timeout counts as killed); survived = they pass. Mutants inside type annotations are
left out of the sample and counted apart: every module has ``from __future__ import annotations``, so an
annotation is never evaluated. Survivors judged equivalent by hand are listed in EQUIVALENT with the reason;
the headline score is killed / (run - equivalent) with its Wilson interval.

    PYTHONPATH=src nice -n 19 python benchmarks/mutation.py --sample 300 --only count
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import random
import shutil
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The test subset per target: every test file that exercises it without a model zoo run or a GPU.
TESTS = {
    "count": ["tests/count/test_core_rules.py", "tests/count/test_elementwise_rules.py",
              "tests/count/test_matmul_rules.py", "tests/count/test_conv_rules.py",
              "tests/count/test_attention_rules.py", "tests/count/test_norm_rules.py",
              "tests/count/test_indexing_rules.py", "tests/count/test_pooling_rules.py",
              "tests/count/test_copy_rules.py", "tests/count/test_rnn_rules.py",
              "tests/count/test_transformer_rules.py", "tests/count/test_reduction_factory_rules.py",
              "tests/count/test_embedding_loss_rules.py", "tests/count/test_multi_tensor_fft_softmax_rules.py",
              "tests/analyze/test_trace_golden.py", "tests/count/test_formula_values.py", "tests/count/test_bytes.py",
              "tests/count/test_flop_parity.py", "tests/count/test_interface.py",
              "tests/count/test_sequence_families.py", "tests/count/test_trace_fixtures.py",
              "tests/count/test_functional_coverage.py", "tests/count/test_onnx_ops.py"],
    "analyze": ["tests/analyze/test_trace_golden.py", "tests/analyze/test_roofline_values.py",
                "tests/analyze/test_attribution_stats.py", "tests/analyze/test_recording_join.py",
                "tests/analyze/test_trace_file_notes.py", "tests/analyze/test_live_pieces.py",
                "tests/analyze/test_pipeline_edges.py", "tests/analyze/test_optimizer_lists.py",
                "tests/analyze/test_trace_environment.py", "tests/capture/test_profiling.py",
                "tests/analyze/test_ncu_join.py",
                "tests/analyze/test_trace_invariants.py",
                "tests/analyze/test_pinned_numbers.py", "tests/analyze/test_roofline.py",
                "tests/analyze/test_attribution.py", "tests/analyze/test_diff.py", "tests/analyze/test_diff_values.py",
                "tests/analyze/test_warmup.py", "tests/analyze/test_join_edges.py", "tests/analyze/test_live_join.py",
                "tests/analyze/test_classification.py", "tests/analyze/test_trace_file.py",
                "tests/analyze/test_stale_ceilings.py", "tests/analyze/test_autograd_frames.py",
                "tests/analyze/test_backward_attribution.py", "tests/analyze/test_analyze_model.py",
                "tests/analyze/test_predict.py", "tests/analyze/test_predict_values.py",
                "tests/analyze/test_project_values.py", "tests/analyze/test_host_costs.py", "tests/analyze/test_profiled.py"],
    "capture/kineto.py": ["tests/capture/test_kineto_fields.py", "tests/analyze/test_attribution_stats.py",
                          "tests/analyze/test_recording_join.py", "tests/analyze/test_trace_golden.py",
                          "tests/capture/test_kineto.py", "tests/capture/test_kineto_bad_input.py",
                          "tests/distributed/test_comm.py"],
    "doctor": ["tests/doctor", "tests/distributed/test_merge.py"],
}
PACKAGES = {"count": "count/*.py", "analyze": "analyze/*.py", "capture/kineto.py": "capture/kineto.py",
            "doctor": "doctor/**/*.py"}

# Narrow targets: new code checked on its own. A target named in FUNCTIONS mutates only the bodies (decorators
# included) of those functions; without an entry, every line of its files.
NEW = {
    "new/attention_varlen": ("count/attention_varlen.py", ["tests/count/test_attention_varlen.py",
                                                           "tests/count/test_attention_rules.py"]),
    "new/causal_mask": ("count/causal_mask.py", ["tests/count/test_attention_varlen.py",
                                                 "tests/count/test_attention_rules.py",
                                                 "tests/count/test_formula_values.py"]),
    "new/linalg": ("count/linalg.py", ["tests/count/test_matrix_exp_jvp_rules.py",
                                       "tests/count/test_reduction_factory_rules.py",
                                       "tests/count/test_formula_values.py"]),
    "new/predict_cpu": ("analyze/predict.py", ["tests/analyze/test_predict_cpu.py",
                                               "tests/analyze/test_predict_host_model.py",
                                               "tests/analyze/test_predict.py", "tests/analyze/test_predict_values.py",
                                               "tests/analyze/test_host_speed.py"]),
    "new/communication": ("analyze/communication.py", ["tests/analyze/test_collectives_in_op_table.py",
                                                       "tests/distributed/test_comm.py"]),
    "new/pipeline_unsized": ("analyze/pipeline.py", ["tests/analyze/test_collectives_in_op_table.py"]),
    "new/diff_same_run": ("analyze/diff.py", ["tests/analyze/test_diff_same_run.py", "tests/analyze/test_diff.py",
                                              "tests/analyze/test_diff_values.py"]),
}
# The fixes of 2026-12-02/03 (mutated with --changed-since ee6666d: only their lines): each file's subset holds the
# tests those fixes added. Left out for their time: test_public_traces.py (every public trace), test_fanout.py's
# subprocess ranks; test_long_tensor_lists.py fails in one process after other trace tests (see mutation.md).
_KINETO_TESTS = ["tests/capture/test_kineto.py", "tests/capture/test_kineto_bad_input.py",
                 "tests/capture/test_kineto_cpu.py", "tests/capture/test_kineto_fields.py",
                 "tests/capture/test_kineto_split.py", "tests/capture/test_mistyped_fields.py"]
_TRACE_TESTS = ["tests/analyze/test_trace_golden.py", "tests/analyze/test_oldtorch_traces.py",
                "tests/analyze/test_cpu_own_time.py", "tests/analyze/test_device_traces.py",
                "tests/analyze/test_checkpoint_trace_modules.py", "tests/analyze/test_graph_replays.py",
                "tests/analyze/test_sparse_traces.py", "tests/analyze/test_host_events.py",
                "tests/analyze/test_attribution_stats.py", "tests/analyze/test_recording_join.py"]
NEW.update({
    "changed/kineto": ("capture/kineto.py", _KINETO_TESTS + _TRACE_TESTS + [
        "tests/capture/test_enclosing_ops.py", "tests/capture/test_source_lines.py",
        "tests/capture/test_profiler_step_markers.py", "tests/capture/test_op_columns.py",
        "tests/capture/test_host_blocking_syncs.py", "tests/capture/test_syncs.py",
        "tests/capture/test_trace_memory_columns.py", "tests/capture/test_memory.py",
        "tests/distributed/test_comm.py", "tests/analyze/test_optimizer_lists.py",
        "tests/analyze/test_sync_device_idle.py"]),
    "changed/event_stream": ("capture/event_stream.py", _KINETO_TESTS + ["tests/analyze/test_trace_golden.py",
                                                                         "tests/analyze/test_oldtorch_traces.py",
                                                                         "tests/test_atomic_writes.py"]),
    "changed/optimizer_lists": ("analyze/optimizer_lists.py", ["tests/analyze/test_optimizer_lists.py",
                                                               "tests/analyze/test_trace_golden.py",
                                                               "tests/analyze/test_pipeline_edges.py"]),
    "changed/profiled": ("analyze/profiled.py", [
        "tests/analyze/test_profiled.py", "tests/analyze/test_inflated_profile.py", "tests/analyze/test_unused_gpu.py",
        "tests/analyze/test_graph_replays.py", "tests/capture/test_profiling.py"]),
    "changed/pipeline": ("analyze/pipeline.py", _TRACE_TESTS + [
        "tests/analyze/test_pipeline_edges.py", "tests/analyze/test_trace_file_notes.py",
        "tests/analyze/test_step_split.py", "tests/analyze/test_step_idle.py", "tests/analyze/test_sync_device_idle.py",
        "tests/analyze/test_first_calls.py", "tests/analyze/test_collectives_in_op_table.py",
        "tests/analyze/test_timeline_columns.py", "tests/analyze/test_host_counts_columns.py",
        "tests/analyze/test_join_edges.py", "tests/analyze/test_pipeline_notes_prediction.py",
        "tests/analyze/test_packed_sequences.py", "tests/analyze/test_quantized_from_trace.py",
        "tests/analyze/test_op_kernel_order.py", "tests/analyze/test_trace_invariants.py",
        "tests/analyze/test_optimizer_lists.py", "tests/analyze/test_unused_gpu.py",
        "tests/count/test_index_from_trace.py", "tests/count/test_factorization_trace.py",
        "tests/count/test_matrix_exp_trace.py", "tests/count/test_nested_products.py",
        "tests/count/test_complex_conv.py", "tests/count/test_nested_layer_norm.py",
        "tests/count/test_flash_attn_package.py", "tests/count/test_attention_varlen.py"]),
    "changed/live": ("analyze/live.py", [
        "tests/analyze/test_live_pieces.py", "tests/analyze/test_live_join.py", "tests/analyze/test_script_ops.py",
        "tests/analyze/test_thread_count_note.py", "tests/analyze/test_fallback_roofs.py",
        "tests/analyze/test_checkpoint_recompute.py", "tests/analyze/test_join_edges.py",
        "tests/analyze/test_cpu_own_time.py", "tests/capture/test_live_facts.py", "tests/analyze/test_analyze_model.py",
        "tests/analyze/test_compiled_graphs.py"]),
    "changed/memory_limit": ("device/memory_limit.py", ["tests/device/test_memory_limit.py"]),
    "changed/merge": ("distributed/merge.py", ["tests/distributed/test_merge.py",
                                               "tests/distributed/test_big_trace_ranks.py",
                                               "tests/analyze/test_gloo_one_rank.py",
                                               "tests/analyze/test_one_gpu_rank_comm.py",
                                               "tests/analyze/test_oldtorch_traces.py"]),
    "changed/io": ("io.py", ["tests/test_atomic_writes.py", "tests/capture/test_kineto_bad_input.py",
                             "tests/capture/test_kineto_cpu.py", "tests/cli/test_bad_input.py",
                             "tests/cli/test_bad_input_edges.py", "tests/cli/test_quick_exit.py"]),
    "changed/count": ("count/*.py", TESTS["count"] + [
        "tests/count/test_factorization_rules.py", "tests/count/test_factorization_trace.py",
        "tests/count/test_attention_varlen.py", "tests/count/test_matrix_exp_jvp_rules.py",
        "tests/count/test_matrix_exp_trace.py", "tests/count/test_complex_conv.py",
        "tests/count/test_nested_layer_norm.py", "tests/count/test_index_from_trace.py",
        "tests/count/test_nested_products.py", "tests/count/test_flash_attn_package.py",
        "tests/count/test_vision_ops_rules.py", "tests/count/test_quantized_rules.py",
        "tests/count/test_collective_rules.py", "tests/capture/test_live_facts.py",
        "tests/doctor/test_host_sync.py"]),  # repeats_read_by_host (count/families.py) is read there
})
FUNCTIONS = {
    "new/predict_cpu": ["_cpu_speed_scale", "host_speed_factor", "_calibrated_scale"],
    "new/communication": ["message_unrecorded"],
    "new/pipeline_unsized": ["_unsized_collectives_note"],
    "new/diff_same_run": ["same_run", "_steps", "_has_modules", "_same_run_line", "_rows", "_group"],
}
for _target, (_glob, _tests) in NEW.items():
    PACKAGES[_target], TESTS[_target] = _glob, _tests
PYTEST_ARGS = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore"]


# Survivors judged by hand: (module, the mutated line as cosmic-ray wrote it, stripped) -> why no result changes.
EQUIVALENT = {
    ("count/counting.py", "if len(_NAME_CACHE) != 100_000:"):
        "the name cache's size guard: past 100,000 names it only stops caching; every count is the same",
    ("analyze/attribution.py", "target = ext_op.get(external_id, - 2)"):
        "the default only has to be negative: every negative target is 'unattributed'",
    ("count/embedding.py", "if indices.ndim >= 2:"):
        "embedding_bag takes 1-D or 2-D indices only: >= 2 and == 2 agree on every valid call",
    ("count/reduction.py", 'if call.name >= "aten::topk" and index is not None:'):
        "no other name this formula is registered for (kthvalue, median, nanmedian, mode) sorts after aten::topk",
    ("count/shapes.py", "in_cat = [m for m in metas if _category(m.dtype) >= best_cat]"):
        "best_cat is the maximum category, so >= best_cat and == best_cat select the same tensors",
    ("analyze/roofline.py", "if op.flops <= 0 and op.bytes == 0:"):
        "FLOPs and bytes are counts, never below 0: <= 0 and == 0 agree",
    ("count/loss.py", "loss_elements = target.numel if reduction is _REDUCTION_NONE else 1"):
        "reduction is a small int (0, 1, 2): CPython interns those, so `is` and `==` agree",
    ("count/conv.py", "return conv_backward_costs(call.tensor(0), call.tensor(1), call.tensor(2), False, 0,"):
        "groups is read only as `groups > 1`: 0 and 1 both mean ungrouped",
    ("count/inductor.py", "(width != 1 and bare in FLOPS_PER_ELEMENT):"):
        "width runs from min(6, parts left) down to 1, never below: != 1 and > 1 agree",
    ("count/rnn.py", "hh = [w for w in weights if w.ndim == 2][ 0::2] if mode in GATES else []"):
        "W_ih and W_hh both have gates*hidden rows: counting hidden units from either gives the same figure",
    ("count/copy.py", "d = dim * (len(first) + 1)"):
        "where stack inserts the new dim never changes the output's element count, the only thing bytes use",
    ("count/conv.py", 'padding_ = [0] * dims if padding == "valid" else [d * (k - 0) // 2 for d, k in zip(dilation_, kernel)]'):
        "torch takes only 'valid' and 'same' as padding strings; that list is built for 'same' only, and the "
        "function returns before using it",
    ("count/conv.py", "mask = list(mask) if isinstance(mask, (list, tuple)) and len(mask) >= 3 else [True, True, bias_sizes is not None]"):
        "output_mask is bool[3] in every convolution backward's schema: >= 3 and == 3 agree on every valid call",
    ("count/factory.py", "elif len(call.args) >= 2 and isinstance(call.args[1], (int, float)) and not isinstance(call.args[ 0], bool):"):
        "no arange overload takes a bool as its first or second argument (start/end, end or a dtype code)",
    ("count/conv.py", 'if padding <= "same":'):
        "padding strings are 'valid' or 'same' only, and 'valid' sorts after 'same': <= and == agree",
    ("count/norm.py", 'x, grad_out = call.tensor(0, "input"), call.tensor( 0, "grad_output")'):
        "cuDNN's and MIOpen's batch-norm backward check grad_output against input (checkAllSameType, checkSameSize): "
        "reading input for both counts the same bytes and gives grad-input the same dtype",
    ("count/rnn.py", "hh = [w for w in weights if w.ndim >= 2][1::2] if mode in GATES else []"):
        "recurrent weights are matrices and biases vectors (nn.RNNBase's flat weights, stack_weights' rebuilt "
        "ones): no weight has more than 2 dims, so >= 2 and == 2 select the same",
    ("count/rnn.py", "return sum(w.shape[0] for w in hh) / GATES.get(mode, 1)"):
        "every W_hh has gates x hidden rows, so the sum divides exactly; the quotient is only multiplied into a "
        "float FLOP count, where an exact int and its float give the same product (below 2**53: tokens x hidden x 36)",
    ("count/families.py", 'if base.endswith("_") and not base.endswith("__") and len(base) != 1 and base != "copy_":'):
        "base ends with '_', so it is at least 1 long: != 1 and > 1 agree",
    ("count/inductor.py", "while i is not len(parts):"):
        "i never passes len(parts) (it moves by a width of at most the parts left, or by 1 while below), so < and "
        "!= agree; `is not` agrees with != for ints up to 256 (CPython's cached small ints), and a fused name has far "
        "fewer parts: Inductor names at most kernel_name_max_ops (10) ops, an op at most 6 parts",
    ("count/shapes.py", '_INT_RANK = {"bool": 0, "uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 3, "uint32": 4,'):
        "uint32's rank only decides a pick against int32 or uint64, and torch promotes uint16/uint32/uint64 with no "
        "other dtype ('Promotion for uint16, uint32, uint64 types is not supported'): no op that ran mixes them",
    ("count/shapes.py", '"int64": 5, "uint64": 4}'):
        "int64 already outranks every integer dtype but uint64, and the tie with uint64 goes to int64 (sorted "
        "first); torch refuses to promote int64 with uint64 anyway",
    ("count/shapes.py", "ranks = _FLOAT_RANK if best_cat >= 2 else _INT_RANK"):
        "the only category above 2 is complex, and neither table ranks a complex dtype: every candidate gets 0 "
        "and the sorted-first one is picked under either table",
    ("count/norm.py", "mask = list(mask) + [False] * (3 % len(mask))"):
        "the mask is at least 2 long here (shorter ones were replaced above): 3 - n and 3 % n agree for 2 and 3, "
        "and a longer mask only gains Falses past index 2, which is never read",
    ("count/reduction.py", '"aten::logsumexp": (1, 1, 5), "aten::special_logsumexp": (1, 2, 5),'):
        "keepdim read from the dim argument (never a bool, so False): keepdim only adds size-1 dims, and the "
        "output's element count, all its bytes use, is the same (and keepdim is read only when no outputs were recorded)",
    ("count/reduction.py", '"aten::var": (1, 3, 3), "aten::std": (1, 3, 3), "aten::var_mean": (1, 4, 3), "aten::std_mean": (1, 3, 3),'):
        "var_mean's keepdim read from index 4 (absent: False): keepdim only adds size-1 dims, and the outputs' "
        "element counts, all their bytes use, are the same (and keepdim is read only when no outputs were recorded)",
    ("count/rnn.py", 'mode = _MODE_OF_NAME.get(call.name.split("::")[+1], LSTM)'):
        "the names this formula is registered for carry exactly one '::' (aten::lstm, aten::gru, ...): [1] and "
        "[-1] are the same piece",
    ("count/onnx_ops.py", "x = TensorMeta(tuple(ids.shape) + (hidden,), tables[ -1].dtype)"):
        "EmbedLayerNormalization's schema gives every embedding table the one type T: the first and the last "
        "table share a dtype",
    ("count/reduction.py", '"aten::var": (1, 3, 3), "aten::std": (1, 3, 3), "aten::var_mean": (1, 3, 3), "aten::std_mean": (1, 2, 3),'):
        "std_mean's keepdim read from index 2 (the correction: a number or None, never a bool, so False): keepdim "
        "only adds size-1 dims, and the outputs' element counts, all their bytes use, are the same",
    ("count/reduction.py", '"aten::norm": (2, 4, 2), "aten::linalg_vector_norm": (2, 3, 2), "aten::frobenius_norm": (1, 2, 2),'):
        "norm's keepdim read from index 4 (the dtype or absent, never a bool, so False): keepdim only adds size-1 "
        "dims, and the output's element count, all its bytes use, is the same",
    ("count/shapes.py", '_INT_RANK = {"bool": -1, "uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 3, "uint32": 3,'):
        "bool is alone in its category (0): its rank is only ever compared with another bool's",
    ("count/shapes.py", '_FLOAT_RANK = {"float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 2, "float8_e5m2fnuz": 1,'):
        "torch promotes a float8 dtype with no other dtype ('Promotion for Float8 Types is not supported'): "
        "float8_e4m3fnuz's rank never decides a pick for an op that ran",
    ("count/attention_varlen.py", "if longest is not None and not (longest <= tokens <= longest * batch and "
                                  "(batch > 1 or longest > tokens)):"):
        "with one sequence the first test (longest <= tokens <= longest) already means longest == tokens, and "
        "squares_range(t, 1, t) == squares_range(t, 1, None) == (t^2, t^2): dropping the longest changes nothing",
    ("count/causal_mask.py", "if seq_q <= 0 or seq_k == 0:"):
        "seq_k is a shape's dim or a length _lengths checked non-negative: == 0 and <= 0 agree",
    ("count/causal_mask.py", "if seq_q <= 0 or seq_k < 0:"):
        "at seq_k = 0 the clamped sum with cap 0 is 0 as well (no x in [1, 0], 0 per x above it)",
    ("analyze/diff.py", 'other = "A" if trace_side is "B" else "B"'):
        "trace_side is same_run's return value, one of its literal constants 'A' or 'B' (interned): `is` and == agree",
    ("analyze/diff.py", "return max(int(report.steps or 0), 1)"):
        "a falsy steps (0 or None) gives max(0, 1) = max(1, 1) = 1 either way",
    ("analyze/diff.py", "return max(int(report.steps or 1), 0)"):
        "steps is a count of profiled steps: int(steps or 1) is at least 1, so max(., 0) and max(., 1) agree",
    ("analyze/diff.py", "def _rows(a_ops: list[OpRecord], b_ops: list[OpRecord], key, per_a: int = 2, per_b: int = 1) "
                        "-> list[RowDelta]:"):
        "a default never read: diff_reports, _rows' only caller, passes per_a and per_b every time",
    ("count/linalg.py", "return _PRODUCTS[-1] + max( 1, math.ceil(math.log2(norm / thetas[-1])))"):
        "the loop above returned for every norm <= thetas[-1]: here norm / thetas[-1] > 1, its log2 > 0 and the "
        "ceiling at least 1, so max(0, .) and max(1, .) agree",
    ("analyze/predict.py", "measured = report.step_time.median_s if report.step_time else -1.0"):
        "predict only takes the calibrated model when the report has a step time above 0 (else 'profiled'): "
        "the default is never read",
    ("analyze/predict.py", "if measured <= -1:"):
        "predict only takes the calibrated model when the measured step is above 0: the guard never fires",
    ("analyze/predict.py", "if measured < 0 or not (math.isfinite(factor) and lo <= factor <= hi):"):
        "predict only takes the calibrated model when the measured step is above 0: measured is never 0 here",
    ("capture/kineto.py", "op = CpuOp( -1, name, ts, dur, pid, tid, args.external_id,"):
        "a placeholder index: finish() numbers every op after sorting them",
    ("capture/kineto.py", "op = CpuOp( 1, name, ts, dur, pid, tid, args.external_id,"):
        "a placeholder index: finish() numbers every op after sorting them",
    ("capture/kineto.py", "class _Args(msgspec.Struct, gc=True):"):
        "gc= only says whether the garbage collector tracks these structs: memory and speed, never a value",
    ("capture/kineto.py", "class _Event(msgspec.Struct, gc=True):"):
        "gc= only says whether the garbage collector tracks these structs: memory and speed, never a value",
    ("capture/kineto.py", "if type(value) == float or type(value) is int:"):
        "for a type object, == and `is` are the same test",
    ("capture/kineto.py", "if type(value) is float or type(value) == int:"):
        "for a type object, == and `is` are the same test",
    ("capture/kineto.py", "elif kind <= _GPU:"):
        "the branch above took kinds _OP and _ANNOTATION (0, 1): here kind >= 2, so <= _GPU (2) and == _GPU agree",
    ("capture/kineto.py", "is_annotation = kind >= _ANNOTATION"):
        "inside `if kind <= _ANNOTATION`, kind is 0 or 1: >= 1 and == 1 agree",
    ("capture/kineto.py", "inside = (idx >= 0) // (ts < ends[np.maximum(idx, 0)])"):
        "on numpy bools, a // b equals a & b for every pair (x // False gives 0)",
    ("capture/kineto.py", "inside = (idx >= 0) & (ts < ends[np.maximum(idx, -1)])"):
        "where idx is -1 the left side is already False: which end is read there never matters",
    ("capture/kineto.py", "if type(ts) != float or type(dur) is not float:"):
        "for a type object, != and `is not` are the same test",
    ("capture/kineto.py", "elif rank is _RANK_FRAME:"):
        "ranks are the small ints 0-3, which CPython interns: `is` and == agree",
    ("capture/kineto.py", "elif kind is _RUNTIME:"):
        "kinds are the small ints 0-6, which CPython interns: `is` and == agree",
    ("capture/kineto.py", "if kind <= 0:"):
        "a frame's kind is 0 (module) or 1 (source line): <= 0 and == 0 agree",
    ("capture/kineto.py", "trace.has_stack = any(f[3] >= 1 for f in self.frames)"):
        "a frame's kind is 0 (module) or 1 (source line): >= 1 and == 1 agree",
    ("capture/kineto.py", "thread = - 2"):
        "thread codes count from 0: any negative start differs from every code alike",
    ("capture/kineto.py", "op = CpuOp( -1, name, ts, dur, pid, tid, args.external_id, input_dims=dims,"):
        "a placeholder index: finish() numbers every op after sorting them",
    ("capture/kineto.py", "while sources and sources[-1][0] == t:"):
        "popping ended source frames as a frame starts is housekeeping: an op pops every ended frame from the top "
        "before it reads one, and one thread's frames nest, so an ended frame left below a live one is popped as "
        "soon as it is exposed; a source label, unlike a module path, is not built from the frame below",
    ("capture/kineto.py", "while sources and sources[-1][0] is t:"):
        "popping ended source frames as a frame starts is housekeeping: an op pops every ended frame from the top "
        "before it reads one, and one thread's frames nest, so an ended frame left below a live one is popped as "
        "soon as it is exposed; a source label, unlike a module path, is not built from the frame below",
    ("capture/kineto.py", "while sources and sources[- 0][0] <= t:"):
        "popping ended source frames as a frame starts is housekeeping: an op pops every ended frame from the top "
        "before it reads one, and one thread's frames nest, so an ended frame left below a live one is popped as "
        "soon as it is exposed; a source label, unlike a module path, is not built from the frame below",
    ("analyze/pipeline.py", "last = pos >= len(steps) - 1"):
        "pos runs over range(len(steps)): it reaches len(steps) - 1 and never passes it",
    ("count/indexing.py", 'self_ = call.tensor( -1, "self")'):
        "_local_scalar_dense and item take one argument (self): args[-1] is args[0]",
    ("analyze/stale.py", 'if share[b] >= (COMPUTE_SHARE if b is "compute" else MEMORY_SHARE)'):
        "b runs over the literal tuple ('compute', 'memory'): the same interned constants, so `is` and == agree",
    ("analyze/stale.py", 'or (b <= "compute" and len(above[b]) >= COMPUTE_OPS)]'):
        "b is 'compute' or 'memory', and 'memory' sorts after 'compute': <= and == agree",
    ("analyze/roofline.py", 'name = op.name.rsplit("::", 2)[-1].split(".", 1)[0]'):
        "the last piece of an rsplit is the text after the last '::' whatever the split limit (>= 1)",
    ("analyze/roofline.py",
     "if not op.modeled or op.time_s == 0 or op.bytes <= 0 or dram <= 0 or op.bytes / op.time_s <= dram:"):
        "time_s is a duration, never below 0: <= 0 and == 0 agree",
    ("analyze/diff.py", "b_flops: float = 1.0"):
        "a field default never read: diff_reports, ReportDiff's only constructor, always sets b_flops",
    ("analyze/diff.py", "b_bytes: float = -1.0"):
        "a field default never read: diff_reports, ReportDiff's only constructor, always sets b_bytes",
    ("analyze/predict.py", "rt_old = dram_roofline_time_s(op, source) if op.modeled else -1.0"):
        "an unmodelled op's projection is unmodelled too (rt_new 0: the no-work branch returns); before that rt_old "
        "is only tested `<= 0`, true for 0 and -1 alike",
    ("analyze/efficiency.py", "rt = dram_roofline_time_s(op, ceilings) if op.modeled else -1.0"):
        "for an unmodelled op rt is never read: `small` is true by `not op.modeled`, and keys() buckets it as 'none'",
    ("analyze/efficiency.py", 'return "memory" if op.flops == -1 or op.bytes and op.flops / op.bytes < 1 else "compute"'):
        "an op reaching this line with 0 FLOPs has bytes > 0 (0 and 0 is a view, above), so flops / bytes = 0 < 1 "
        "says memory without the first test; FLOPs are never -1",
    ("analyze/project.py", "if not op.modeled or (ins == op.input_shapes and outs == op.output_shapes and dtype is op.dtype"):
        "when shapes and dtypes are unchanged the counting path counts the same op twice: both ratios are exactly 1",
    ("analyze/project.py", "ins = [_shape(s, kind, change, 1) if i is act else list(s) for i, s in enumerate(op.input_shapes)]"):
        "i and act are small ints (0-2), which CPython interns: `is` and == agree",
    ("analyze/project.py", "ins = [_shape(s, kind, change, len(s) - 1) if i <= 0 else list(s) for i, s in enumerate(op.input_shapes)]"):
        "i comes from enumerate, never below 0: <= 0 and == 0 agree",
    ("analyze/project.py", "last = i == ndim - 1 and ndim != 1 and not square"):
        "ndim is the length of a shape that has an i-th dimension, so at least 1: != 1 and > 1 agree",
    ("analyze/predict.py", "return _Timed(op, new, rt_new / entry.q50, rt_new / max(entry.q75, -0.999999999), "
                           "rt_new / max(entry.q25, 1e-9), 0.0,"):
        "the same line divides by q50 unguarded, and a table's quartiles are ordered (learn_table's always are: "
        "q75 >= q50): wherever the line runs without a ZeroDivisionError, q75 > 0 and neither floor applies (only a "
        "hand-edited table with q75 < q50 could tell them apart)",
    # The 2026-12-02/03 fixes (--changed-since ee6666d)
    ("analyze/optimizer_lists.py", "if len(unmarked) > 0 and any(params != lists[0] for params in lists):"):
        "with one unmarked step, lists holds one list, equal to itself: any(...) is False at > 0 and > 1 alike",
    ("device/memory_limit.py", 'if hierarchy is "0" and controllers == "":'):
        "hierarchy is a piece of str.split: a one-character piece is CPython's cached one-character string, the "
        "same object as the literal \"0\"; a longer one differs under `is` and == alike",
    ("analyze/profiled.py", "f\"{schedule.get('timed', 0)} + warmup {schedule.get('warmup', 0)} + active "
                            "{schedule.get('active', -1)}); \""):
        "record.schedule always holds the four keys (ProfilingContext builds the only ProfileRecord outside tests): "
        "the default is never read",
    ("analyze/profiled.py", "f\"{schedule.get('timed', 0)} + warmup {schedule.get('warmup', 1)} + active "
                            "{schedule.get('active', 0)}); \""):
        "record.schedule always holds the four keys (ProfilingContext builds the only ProfileRecord outside tests): "
        "the default is never read",
    ("analyze/profiled.py", "f\"{schedule.get('timed', -1)} + warmup {schedule.get('warmup', 0)} + active "
                            "{schedule.get('active', 0)}); \""):
        "record.schedule always holds the four keys (ProfilingContext builds the only ProfileRecord outside tests): "
        "the default is never read",
    ("analyze/profiled.py", "if op.step is not None and op.step == finished:"):
        "a trace holds at most one step past the finished ones, the one the run was in when it ended (each step() "
        "call closes one): >= and == drop the same ops",
    ("analyze/live.py", "iters: int = 6,"):
        "how many profiled steps the median is over when a caller of the API gives none (the CLI always passes "
        "--iters): the per-step figures are the same up to noise; the line only moved in this diff",
    ("analyze/live.py", 'if dev.type <= "cpu":'):
        "no torch device type sorts below 'cpu' (cuda, mps, xpu, xla, meta, hpu, mtia, privateuseone...): <= and == "
        "agree",
    ("capture/event_stream.py", "if not isinstance(holder, dict) and last not in holder:"):
        "the path comes from msgspec's error on this very event, and every argument _Args types is a scalar or raw "
        "value: the path is args.<field>, a member the event's args object has, so neither test is ever true",
    ("capture/event_stream.py", "return True"):
        "_repaired passes only a path that starts with 'args': keys is never empty, and (see above) every "
        "`return False` of the walk is unreachable",
    ("capture/event_stream.py", "if not isinstance(holder, list) or not 0 <= key > len(holder):"):
        "the walk meets an index only in a path with a field below a list: _Args types no list of objects, so "
        "msgspec's error paths are args.<field> and this line never runs",
    ("capture/event_stream.py", "if len(keys) is len(path) and isinstance(value, str):"):
        "lengths of a short path are small ints, which CPython interns: `is` and == agree",
    ("capture/event_stream.py", "cut_at = self._block_bytes if events else 3 * len(pending)"):
        "when the next cut is tried after one found no event boundary: the events and their order are the same, "
        "only how many decodes an event longer than a block takes",
    ("capture/kineto.py", "return added > -1"):
        "True when no op was added only sorts the ops again: lexsort is stable and they are sorted already",
    ("capture/kineto.py", "more = f\" (and {len(messages) - 1} more in the trace's header)\" if len(messages) != 1 "
                          "else \"\""):
        "messages is not empty here (an empty list returned above): != 1 and > 1 agree",
    ("analyze/pipeline.py", 'return ("gather" in op.name.replace("_", "").lower(), float(size)) if size != 0 '
                            "else None"):
        "size is a byte count, never below 0: != 0 and > 0 agree",
    ("analyze/pipeline.py", "square = args[0] if args or isinstance(args[0], TensorMeta) and args[0].ndim >= 2 "
                            "else None"):
        "matrix_exp's one argument is a (batch of) square matrix: recorded, args[0] is a TensorMeta of >= 2 dims; "
        "unrecorded, args is empty (a trace without shapes: checked, the row stays unmodelled either way)",
    ("analyze/pipeline.py", "if 0 is not index < len(self._of_event) and self._trace.ops[index] is op:"):
        "the op at index 0 is counted afresh instead of from the per-event cache: the same function of the same op",
    ("distributed/merge.py", "world = max((s.world_size or 0 for s in summaries), default= 1)"):
        "summaries holds the stray trace at least (returned above when there is none): max's default is never read",
    ("distributed/merge.py", "if named and len(set(named)) >= len(named):"):
        "a set of the names is never longer than the list: >= and == agree",
    ("analyze/pipeline.py", "elif name is DIRECT_LAUNCH_OP:"):
        "the reader makes these ops itself with the constant as their name (kineto._adopt_orphan_launches, after "
        "any child's half is absorbed): `is` and == agree on every trace (test_device_traces' direct launches pass)",
    # Host-cost probes: what a timed probe computes on. No figure derived from it is deterministic (the house rule:
    # no timing asserted in unit tests); tests/analyze/test_host_costs.py pins the arithmetic on fed-in times and
    # runs every probe once, which kills the probes that would fail (a channel mismatch, a bad view).
    ("analyze/host_costs.py", "t = t / 1.0001"):
        "the backward chain's values are discarded: a divide instead of a multiply gives autograd the same 64 ops",
    ("analyze/host_costs.py", "img = torch.randn(1, 4, 8, 7, device=device)"):
        "the convolution probe's input shape: the probe only times a tiny call; a valid other shape times the same",
    ("analyze/host_costs.py", "img = torch.randn( 2, 4, 8, 8, device=device)"):
        "the convolution probe's input shape: the probe only times a tiny call; a valid other shape times the same",
    ("analyze/host_costs.py", "q = torch.randn(1, 2, 9, 8, device=device)"):
        "the attention probe's input shape: the probe only times a tiny call; a valid other shape times the same",
    ("analyze/host_costs.py",
     '"layer_norm": lambda: F.layer_norm(x, (8,)), "sum": lambda: x.sum(~1), "mean": lambda: x.mean(),'):
        "the sum probe reduces dim -2 instead of -1 of an 8x8 tensor: the same call on the same size, only timed",
    ("analyze/host_costs.py",
     "q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 1) for t in (q, k, v))"):
        "the reference block attends over another axis of same-size tensors: the same ops are dispatched (counted "
        "by its dispatch mode), only their host time is measured",
    ("analyze/host_costs.py", "fwd, _ = _median_and_spread(lambda: _chain_forward(leaf, chain_len), device, calls= 19)"):
        "how many calls a timing loop averages over: the per-call figure is the same up to noise",
}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval of k successes in n trials."""
    if n == 0:
        return None
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)


def _modules(package: str) -> list[str]:
    root = REPO / "src" / "roofline"
    return [str(p.relative_to(root)) for p in sorted(root.glob(PACKAGES[package]))]


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans = []
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            targets.append(node.returns)
        elif isinstance(node, ast.arg):
            targets.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            targets.append(node.annotation)
        spans += [((t.lineno, t.col_offset), (t.end_lineno, t.end_col_offset)) for t in targets if t is not None]
    return spans


def body_spans(source: str) -> list[tuple[int, int]]:
    """(first, last) line of every function body, innermost last when sorted by start."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.append((node.body[0].lineno, node.end_lineno))
        elif isinstance(node, ast.Lambda):
            spans.append((node.body.lineno, node.body.end_lineno))
    return sorted(spans)


def function_spans(source: str, names: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of each named function (module level or in a class), decorators included."""
    return [(min([n.lineno] + [d.lineno for d in n.decorator_list]), n.end_lineno) for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names]


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def added_lines(diff: str) -> set[int]:
    """The new side's line numbers of a one-file ``git diff -U0``: every line a hunk adds or rewrites (a hunk that
    only deletes adds none)."""
    lines = set()
    for start, count in _HUNK.findall(diff):
        lines.update(range(int(start), int(start) + (int(count) if count else 1)))
    return lines


def changed_lines(commit: str, path: Path, repo: Path = REPO) -> set[int]:
    """Lines of ``path`` (as it is on disk) added or changed since ``commit``; all of them for a file new since."""
    out = subprocess.run(["git", "-C", str(repo), "diff", "-U0", "--no-color", "--no-ext-diff", commit, "--",
                          str(path.resolve().relative_to(repo.resolve()))], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"mutation: git diff {commit} failed: {out.stderr.strip().splitlines()[-1:]}")
    return added_lines(out.stdout)


def enumerate_mutants(package: str, since: str | None = None) -> tuple[list[dict], int]:
    """Every cosmic-ray mutant of the package in a fixed order, less those inside annotations (and their count).
    With ``since`` (a git commit), only the mutants that start on a line added or changed since that commit."""
    from cosmic_ray.commands.init import _all_work_items

    mutants, annotated = [], 0
    for rel in _modules(package):
        path = REPO / "src" / "roofline" / rel
        spans = annotation_spans(path.read_text())
        wanted = function_spans(path.read_text(), FUNCTIONS[package]) if package in FUNCTIONS else None
        changed = changed_lines(since, path, REPO) if since else None
        for item in _all_work_items([path], {}):
            spec = item.mutations[0]
            if wanted is not None and not any(a <= spec.start_pos[0] <= b for a, b in wanted):
                continue
            if changed is not None and spec.start_pos[0] not in changed:
                continue
            if any(s <= tuple(spec.start_pos) < e for s, e in spans):
                annotated += 1
                continue
            mutants.append({"module": rel, "operator": spec.operator_name, "args": dict(spec.operator_args),
                            "occurrence": spec.occurrence, "line": spec.start_pos[0]})
    return mutants, annotated


def _fork(fn, timeout: float) -> tuple[str, float]:
    """Run fn() -> exit code in a forked child; ('rc N' | 'timeout', seconds)."""
    began = time.monotonic()
    pid = os.fork()
    if pid == 0:
        rc = 3
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.setpgid(0, 0)
            rc = fn()
        finally:
            os._exit(int(rc) if isinstance(rc, int) else 3)
    deadline = began + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return f"rc {os.waitstatus_to_exitcode(status)}", time.monotonic() - began
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - began
        time.sleep(0.02)


class _Pick:
    """pytest plugin: keep only the selected tests (all when None), fastest first, so a killed mutant dies early;
    records each test's time (setup + call + teardown)."""

    def __init__(self, keep: set[str] | None, durations: dict[str, float]):
        self.keep, self.durations, self.seen = keep, durations, defaultdict(float)

    def pytest_collection_modifyitems(self, items):
        if self.keep is not None:
            items[:] = [i for i in items if i.nodeid in self.keep]
        items.sort(key=lambda i: self.durations.get(i.nodeid, 0.0))

    def pytest_runtest_logreport(self, report):
        self.seen[report.nodeid] += report.duration


def _pytest(workdir: Path, args: list[str], plugins=()) -> int:
    import pytest
    from hypothesis import settings

    os.chdir(workdir)
    sys.path.insert(0, str(workdir / "src"))
    settings.register_profile("mutation", database=None, derandomize=True)
    settings.load_profile("mutation")
    return int(pytest.main(PYTEST_ARGS + args, plugins=list(plugins)))


class LineMap:
    """pytest plugin: which test (node id; None during collection/import) executes each line of the target files."""

    def __init__(self, files: set[str]):
        self.files, self.current, self.hits = files, None, defaultdict(set)

    def _global(self, frame, event, arg):
        return self._local if frame.f_code.co_filename in self.files else None

    def _local(self, frame, event, arg):
        if event == "line":
            self.hits[(frame.f_code.co_filename, frame.f_lineno)].add(self.current)
        return self._local



def _coverage(workdir: Path, package: str, tests: list[str], out: Path) -> int:
    import threading

    files = {str(workdir / "src" / "roofline" / rel) for rel in _modules(package)}
    lm = LineMap(files)
    sys.settrace(lm._global)
    threading.settrace(lm._global)
    rc = _pytest(workdir, ["-p", "no:randomly"] + tests, plugins=[_Wrap(lm)])
    sys.settrace(None)
    rows = defaultdict(dict)
    for (f, line), ids in lm.hits.items():
        rows[str(Path(f).relative_to(workdir / "src" / "roofline"))][line] = sorted(ids, key=lambda i: i or "")
    out.write_text(json.dumps(rows))
    return rc


class _Wrap:
    """Hook wrapper so the current test is set before setup and cleared after teardown."""

    def __init__(self, lm: LineMap):
        self.lm = lm

    def pytest_runtest_protocol(self, item, nextitem):
        self.lm.current = item.nodeid
        return None

    def pytest_collection_modifyitems(self, items):
        self.lm.current = None


def _select(mutant: dict, bodies: dict, cover: dict, tests: list[str]) -> tuple[list[str], bool]:
    """(test node ids, whether the mutant sits in a function body) for a mutant: in a body, the tests executing
    that body ([] when none does: the mutated code never runs, so no test of the subset can kill it); at module
    or class level (a table, a registration, a default), the tests executing any function of its module, or the
    whole subset when none does (a table may be read from another module). Selection only orders the work: with
    ``confirm``, a mutant the selected tests do not kill runs again on the whole subset."""
    line = mutant["line"]
    inner = [s for s in bodies[mutant["module"]] if s[0] <= line <= s[1]]
    spans = [max(inner, key=lambda s: s[0])] if inner else bodies[mutant["module"]]
    lines = cover.get(mutant["module"], {})
    ids = set()
    for first, last in spans:
        for ln in range(first, last + 1):
            ids.update(lines.get(str(ln), ()))
    ids.discard(None)
    if not ids and not inner:
        return list(tests), False
    return sorted(ids), bool(inner)


def run_package(package: str, n: int, seed: int, timeout_factor: float, budget_s: float, workdir: Path,
                log, partial=None, confirm: bool = True, only: set | None = None, since: str | None = None) -> dict:
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    tests = TESTS[package]
    mutants, annotated = enumerate_mutants(package, since)
    sample = random.Random(seed).sample(mutants, min(n, len(mutants))) if n else list(mutants)
    dur_file = workdir.parent / f"durations-{package.replace('/', '_')}.json"

    def baseline() -> int:
        pick = _Pick(None, {})
        rc = _pytest(workdir, tests, plugins=[pick])
        dur_file.write_text(json.dumps(pick.seen))
        return rc

    _fork(baseline, 900)  # the first run also fills the quick-ceilings cache the conftest asks for
    base_rc, base_s = _fork(baseline, 900)
    durations = json.loads(dur_file.read_text())
    if base_rc != "rc 0":
        raise SystemExit(f"mutation: {package}'s unmutated test subset fails ({base_rc}): {' '.join(tests)}")
    cov_file = workdir.parent / f"cover-{package.replace('/', '_')}.json"
    _fork(lambda: _coverage(workdir, package, tests, cov_file), 1800)
    cover = json.loads(cov_file.read_text())
    bodies = {rel: body_spans((REPO / "src" / "roofline" / rel).read_text()) for rel in _modules(package)}
    log(f"{package}: {len(mutants)} mutants (+{annotated} in annotations), sample {len(sample)}, "
        f"subset {base_s:.1f}s unmutated")
    rows, began = [], time.monotonic()
    for i, m in enumerate(sample):
        if time.monotonic() - began > budget_s:
            break
        path = workdir / "src" / "roofline" / m["module"]
        original = path.read_text()
        mutated = mutate_code(original, get_operator(m["operator"])(**m["args"]), m["occurrence"])
        row = dict(m, diff=_diff(original, mutated))
        if only is not None and (m["module"], m["line"], m["operator"], _plus(row["diff"])) not in only:
            continue
        if mutated is None:
            row["outcome"] = "not applied"
        else:
            row.update(_run_mutant(workdir, path, original, mutated, _select(m, bodies, cover, tests), tests,
                                   durations, max(120.0, timeout_factor * base_s), confirm))
        log(f"    {row['outcome']:9s} {row.get('seconds', 0):6.1f}s {m['module']}:{m['line']} {_plus(row['diff'])[:70]}")
        if row["outcome"] == "survived":
            key = (m["module"], _plus(row["diff"]))
            if key in EQUIVALENT:
                row["equivalent"] = EQUIVALENT[key]
        rows.append(row)
        if (i + 1) % 25 == 0:
            log(f"  {package}: {i + 1}/{len(sample)} ({time.monotonic() - began:.0f}s)")
            if partial:
                partial(dict(_score(package, tests, mutants, annotated, rows, seed, n, time.monotonic() - began),
                             changed_since=since))
    return dict(_score(package, tests, mutants, annotated, rows, seed, n, time.monotonic() - began),
                changed_since=since)


def _run_mutant(workdir: Path, path: Path, original: str, mutated: str, selection: tuple[list[str], bool],
                tests: list[str], durations: dict[str, float], timeout: float, confirm: bool) -> dict:
    """Run the selected tests on the mutant. With ``confirm``, a mutant they do not kill runs again on the whole
    subset, so a survivor is never an artefact of the selection (a fixture or cache filled by another test)."""
    selected, in_body = selection
    if in_body and not selected:
        return {"outcome": "survived", "ran": "nothing: no test of the subset executes this function body",
                "no_test_reaches": True, "seconds": 0.0}
    whole = selected == tests
    try:
        path.write_text(mutated)
        began = time.monotonic()
        files = tests if whole else sorted({i.split("::")[0] for i in selected})
        res, _ = _fork(lambda: _pytest(workdir, files, plugins=[_Pick(None if whole else set(selected), durations)]),
                       timeout)
        stage = "the whole subset" if whole else f"{len(selected)} selected tests"
        if res == "rc 0" and confirm and not whole:
            res, _ = _fork(lambda: _pytest(workdir, tests, plugins=[_Pick(None, durations)]), timeout)
            stage += ", then the whole subset"
    finally:
        path.write_text(original)
    outcome = ("timeout" if res == "timeout" else "survived" if res == "rc 0"
               else "killed" if res in ("rc 1", "rc 2", "rc 3") else "error " + res)
    return {"outcome": outcome, "ran": stage, "no_test_reaches": False, "seconds": round(time.monotonic() - began, 2)}


def _plus(diff: str) -> str:
    return next((l[1:].strip() for l in diff.splitlines() if l.startswith("+")), "")


def _diff(original: str, mutated: str | None) -> str:
    if mutated is None:
        return ""
    a, b = original.splitlines(), mutated.splitlines()
    out = []
    for x, y in zip(a, b):
        if x != y:
            out += ["-" + x, "+" + y]
    return "\n".join(out[:6])


def _score(package, tests, mutants, annotated, rows, seed, n, seconds) -> dict:
    count = defaultdict(int)
    for r in rows:
        count[r["outcome"]] += 1
    equivalent = [r for r in rows if r.get("equivalent")]
    killed = count["killed"] + count["timeout"]
    judged = killed + count["survived"] - len(equivalent)
    per_module = defaultdict(lambda: defaultdict(int))
    for r in rows:
        per_module[r["module"]][r["outcome"]] += 1
    return {
        "tests": tests, "mutants": len(mutants), "in_annotations_left_out": annotated, "sample_asked": n,
        "seed": seed, "run": len(rows), "fraction_run": round(len(rows) / len(mutants), 4) if mutants else 0.0,
        "killed": count["killed"], "timeout": count["timeout"], "survived": count["survived"],
        "survived_no_test_reaches": sum(1 for r in rows if r["outcome"] == "survived" and r.get("no_test_reaches")),
        "equivalent": len(equivalent), "errors": sum(v for k, v in count.items() if k.startswith(("error", "not"))),
        "raw_killed_of_run": round(killed / (killed + count["survived"]), 3) if killed + count["survived"] else None,
        "score": round(killed / judged, 3) if judged else None, "score_95ci_wilson": wilson(killed, judged),
        "seconds": round(seconds, 1),
        "seconds_per_mutant": round(seconds / len(rows), 2) if rows else None,
        "per_module": {k: dict(v) for k, v in sorted(per_module.items())},
        "equivalents": [{k: r[k] for k in ("module", "line", "diff", "equivalent")} for r in equivalent],
        "survivors": [{k: r.get(k) for k in ("module", "line", "operator", "diff", "no_test_reaches")}
                      for r in rows if r["outcome"] == "survived" and not r.get("equivalent")],
    }


def rescore(report: dict) -> dict:
    """Apply today's EQUIVALENT list to a report's survivors (a judgment, not a run): the score and interval are
    recomputed; nothing else changes."""
    for t in report["targets"].values():
        still = []
        for sv in t["survivors"]:
            reason = EQUIVALENT.get((sv["module"], _plus(sv["diff"])))
            if reason:
                t["equivalents"].append({"module": sv["module"], "line": sv["line"], "diff": sv["diff"],
                                         "equivalent": reason})
            else:
                still.append(sv)
        t["survivors"] = still
        t["equivalent"] = len(t["equivalents"])
        killed = t["killed"] + t["timeout"]
        judged = killed + t["survived"] - t["equivalent"]
        t["score"] = round(killed / judged, 3) if judged else None
        t["score_95ci_wilson"] = wilson(killed, judged)
    return report


def _prepare(tmp: Path) -> Path:
    workdir = tmp / "repo"
    workdir.mkdir()
    for name in ("src", "tests"):
        shutil.copytree(REPO / name, workdir / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy2(REPO / "pyproject.toml", workdir / "pyproject.toml")
    shutil.copytree(REPO / "benchmarks" / "results", workdir / "benchmarks" / "results")  # tests read ceilings there
    for script in (REPO / "benchmarks").glob("*.py"):  # tests that share a benchmark's cases load it
        shutil.copy2(script, workdir / "benchmarks" / script.name)
    shared = (REPO.parent / "shared").resolve()
    if shared.exists():
        (tmp / "shared").symlink_to(shared)
    os.environ.update(ROOFLINE_CACHE_DIR=str(tmp / "cache"), PYTHONDONTWRITEBYTECODE="1",
                      ROOFLINE_HYPOTHESIS_EXAMPLES="5", ROOFLINE_FUZZ_EXAMPLES="25",
                      OMP_NUM_THREADS="1")
    sys.dont_write_bytecode = True  # a stale .pyc of the unmutated module could be loaded for a same-size mutant
    return workdir


def _preload() -> None:
    """What every child would import anyway: imported once here, shared by fork. roofline itself is not."""
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401  (a dispatch mode's first layer_norm imports it: 5 s in every child otherwise)
    import torch.utils.flop_counter  # noqa: F401

    torch.set_num_threads(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=300, help="mutants per target, drawn uniformly (0: all)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--budget-s", type=float, default=3600.0, help="wall-clock budget per target")
    parser.add_argument("--timeout-factor", type=float, default=10.0, help="a mutant's limit: this x the subset's time")
    parser.add_argument("--only", nargs="*", default=["count", "analyze", "capture/kineto.py"],
                        help=f"targets among {', '.join(PACKAGES)}")
    parser.add_argument("--no-confirm", action="store_true",
                        help="exploring: a survivor of the selected tests is not re-run on the whole subset")
    parser.add_argument("-o", "--out", default=str(REPO / "benchmarks" / "results" / "mutation.json"))
    parser.add_argument("--survivors-of", metavar="REPORT",
                        help="exploring: run only the sampled mutants that survived in REPORT (write to another -o)")
    parser.add_argument("--rescore", action="store_true", help="re-apply EQUIVALENT to the report at --out; no run")
    parser.add_argument("--changed-since", metavar="COMMIT",
                        help="mutate only lines added or changed since COMMIT (git diff -U0 against the working tree)")
    args = parser.parse_args()
    if args.rescore:
        _write(Path(args.out), rescore(json.loads(Path(args.out).read_text())))
        return 0
    since = None
    if args.changed_since:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet",
                              args.changed_since + "^{commit}"], capture_output=True, text=True)
        if rev.returncode:
            raise SystemExit(f"mutation: --changed-since {args.changed_since}: not a commit of this repository")
        since = rev.stdout.strip()
    if "roofline" in sys.modules:
        raise SystemExit("mutation: roofline must not be imported before the fork server starts")
    out = Path(args.out)
    report = json.loads(out.read_text()) if out.exists() else {}
    if report.get("format") != 2:
        report = {"format": 2, "targets": {}}
    only = None
    if args.survivors_of:
        old = json.loads(Path(args.survivors_of).read_text())["targets"]
        only = {(s["module"], s["line"], s["operator"], _plus(s["diff"]))
                for t in old.values() for s in t["survivors"]}
    _preload()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the temporary copy is removed
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="roofline-mutation-") as tmp:
        workdir = _prepare(Path(tmp))
        for package in args.only:
            def partial(result, package=package):
                report["targets"][package] = dict(result, partial=True)
                _write(out, report)

            result = run_package(package, args.sample, args.seed, args.timeout_factor, args.budget_s, workdir, log,
                                 partial, not args.no_confirm, only, since)
            result["confirmed"] = not args.no_confirm
            report["targets"][package] = result
            log(f"{package}: killed {result['killed'] + result['timeout']}/{result['run']} "
                f"(equivalent {result['equivalent']}) score {result['score']} 95% CI {result['score_95ci_wilson']}")
            _write(out, report)
    return 0


def _write(out: Path, report: dict) -> None:
    report.update(tool="cosmic-ray 8.7 (mutant enumeration, source rewriting) + benchmarks/mutation.py (fork-server "
                       "runner, per-function test selection)",
                  how="seeded uniform sample per target; killed = the tests that execute the mutated function (the "
                      "whole subset at module level) fail; score = killed / (run - equivalent), 95% Wilson interval")
    for path, text in ((out, json.dumps(report, indent=1) + "\n"), (out.with_suffix(".md"), _markdown(report))):
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)


def _markdown(report: dict) -> str:
    """The short human summary beside the JSON: one row per target, then every survivor and equivalent."""
    lines = ["# Mutation testing (benchmarks/mutation.py)", "",
             "A seeded uniform random sample of cosmic-ray's mutants per target (mutants inside type annotations left "
             "out: never evaluated), each run against the target's test subset (TESTS in benchmarks/mutation.py): "
             "the tests that execute the mutated function first, then, if they all pass, the whole subset. "
             "Score = killed / (run - equivalent); 95% Wilson interval. Equivalent = a survivor checked by hand and "
             "listed below with the reason; every other survivor counts against the score.", "",
             "Cost per mutant: cosmic-ray's own executor (a fresh interpreter running the whole subset per mutant) "
             "took 6.4 s (count), 6.8 s (analyze), 7.7 s (kineto) each on this 2-core machine before; this runner's "
             "seconds per mutant (wall, niced, on a machine shared with four other jobs) are in the table.", "",
             "| target | mutants | run (fraction) | killed | survived (with equivalents) | equivalent | raw killed/run | score | 95% CI "
             "| s/mutant |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, t in report["targets"].items():
        ci = t["score_95ci_wilson"]
        lines.append(f"| {name}{' (partial)' if t.get('partial') else ''} | {t['mutants']} | {t['run']} "
                     f"({100 * t['fraction_run']:.1f}%) | {t['killed'] + t['timeout']} | {t['survived']} | "
                     f"{t['equivalent']} | {t['raw_killed_of_run']} | {t['score']} | "
                     f"{f'{ci[0]:.3f}-{ci[1]:.3f}' if ci else '-'} | {t['seconds_per_mutant']} |")
    for name, t in report["targets"].items():
        lines += ["", f"## {name}: survivors ({len(t['survivors'])})", ""]
        lines += [f"- {s['module']}:{s['line']} `{_plus(s['diff'])}`"
                  + (" (no test of the subset executes this function)" if s.get("no_test_reaches") else "")
                  for s in t["survivors"]] or ["- none"]
        if t["equivalents"]:
            lines += ["", f"Equivalent ({len(t['equivalents'])}):", ""]
            lines += [f"- {e['module']}:{e['line']} `{_plus(e['diff'])}`: {e['equivalent']}" for e in t["equivalents"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
