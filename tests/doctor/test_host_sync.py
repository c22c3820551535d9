import pytest

from doctor_cases import ceilings, op, report
from roofline.doctor import diagnose
from roofline.report import ProfileInfo, SyncSite


DTOH = "Memcpy DtoH (Device -> Pageable)"


def _generation_loop(tokens: int, with_item: bool, device: str = "cpu"):
    """A decode loop's ops; on ``device="cuda"`` each .item() copies its value device -> host, as on a GPU."""
    ops = []
    for t in range(tokens):
        ops.append(op("aten::argmax", [([1, 100], "float32")], out=[1], source="gen.py:40", module=""))
        if with_item:
            ops.append(op("aten::_local_scalar_dense", [([1], "int64")], source="gen.py:41", module="", time=2e-6))
            if device == "cuda":
                ops[-1].kernels = [DTOH]
    return report(ops, ceil=ceilings(device=device, device_name="test gpu" if device == "cuda" else "test cpu"))


def test_item_in_generation_loop_on_a_gpu_is_found_with_count_and_line():
    findings = diagnose(_generation_loop(12, with_item=True, device="cuda"), rules=["host-device-sync"])
    assert len(findings) == 1
    f = findings[0]
    assert f.evidence["per_step"] == 12 and f.evidence["in_loop"] and f.severity == "warning"
    assert f.locations == ["gen.py:41"]
    assert f.title == "host-device sync (_local_scalar_dense) inside a loop: 12 per step at gen.py:41"
    assert f.estimated_savings_s == pytest.approx(12 * 2e-6)
    assert "device" in f.savings_method and f.fix.startswith("keep the value on the device")


def test_item_in_a_loop_on_a_cpu_only_run_is_a_read_not_a_sync():
    """On the CPU .item() waits for nothing: the ops are told as a read of a value at their own cost, not a sync."""
    (f,) = diagnose(_generation_loop(12, with_item=True), rules=["host-device-sync"])
    assert f.title.startswith(
        "tensor value read by the host (_local_scalar_dense) inside a loop: 12 per step at gen.py:41")
    assert f.evidence["waits_for_device"] is False and f.evidence["in_loop"]
    assert f.estimated_savings_s == pytest.approx(12 * 2e-6) and f.severity == "warning"  # 2e-5 of 1.4e-4: its cost
    for text in (f.title, f.fix, f.savings_method):
        assert "host-device sync" not in text and "cuda" not in text.lower()


def test_the_optimizers_step_counter_reads_on_a_cpu_only_run_are_no_finding():
    r = _generation_loop(12, with_item=True)
    for o in r.ops:
        if o.name == "aten::_local_scalar_dense":
            o.phase = "optimizer"
    assert diagnose(r, rules=["host-device-sync"]) == []


def test_sync_free_loop_is_silent():
    assert diagnose(_generation_loop(12, with_item=False), rules=["host-device-sync"]) == []


def test_sync_detector_sites_carry_stall_and_are_not_counted_twice():
    r = _generation_loop(4, with_item=True, device="cuda")
    r.syncs = [SyncSite(kind="item", location="gen.py:41", count=8, stall_s=3e-3, per_step=4.0)]
    r.steps = 2
    findings = diagnose(r, rules=["host-device-sync"])
    assert len(findings) == 1
    assert findings[0].estimated_savings_s == pytest.approx(3e-3)
    assert findings[0].evidence["per_step"] == 4.0
    assert "stall" in findings[0].savings_method


def test_on_a_gpu_report_a_scalar_read_of_a_cpu_tensor_is_not_a_sync():
    r = _generation_loop(4, with_item=True)
    r.ceilings.device = "cuda"
    assert diagnose(r, rules=["host-device-sync"]) == []
    for o in r.ops:
        if o.name == "aten::_local_scalar_dense":
            o.kernels = [DTOH]
    assert len(diagnose(r, rules=["host-device-sync"])) == 1


def test_a_sync_in_every_forward_is_the_finding_when_steps_are_forwards():
    """A generation loop profiled one decode step (one forward) per step: one sync per step is one per token."""
    r = _generation_loop(4, with_item=False, device="cuda")
    r.syncs = [SyncSite(kind="bool", location="transformers/generation/utils.py:396", count=4, stall_s=0.0,
                        per_step=1.0)]
    r.steps = 4
    assert diagnose(r, rules=["host-device-sync"]) == [], "once per training step and cheap: not a finding"
    r.profile = ProfileInfo(step_source="forward")
    (finding,) = diagnose(r, rules=["host-device-sync"])
    assert finding.evidence["every_forward"] and finding.severity == "warning"
    assert finding.locations == ["transformers/generation/utils.py:396"] and "every forward" in finding.title
    assert finding.estimated_savings_s == 0 and "a warning whatever this saving, as it sits in a loop" in \
        finding.savings_method, "a warning that saves 0.0% says why it is one"


def test_detector_sites_on_a_cpu_only_run_are_worded_as_reads_not_syncs():
    """The detector's sites on a CPU run (calls that would synchronise an accelerator) keep their place and count,
    but the finding says what the call is on the CPU and takes the severity of its own cost."""
    r = _generation_loop(4, with_item=False)
    r.syncs = [SyncSite(kind="bool", location="transformers/generation/utils.py:396", count=4, stall_s=4e-7,
                        per_step=1.0)]
    r.steps = 4
    r.profile = ProfileInfo(step_source="forward")
    (finding,) = diagnose(r, rules=["host-device-sync"])
    assert finding.evidence["every_forward"] and finding.evidence["waits_for_device"] is False
    assert finding.title.startswith("tensor value read by the host (bool) in every forward: 1 per forward at ")
    assert finding.severity == "info" and finding.estimated_savings_s == pytest.approx(4e-7)
    for text in (finding.title, finding.fix, finding.savings_method):
        assert "host-device sync" not in text and "cuda" not in text.lower()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_repeat_interleave_by_an_int_is_no_read_but_by_a_tensor_of_repeats_it_is(device):
    """GQA's k.repeat_interleave(n_rep, dim=1) knows its output size: doctor said 'tensor value read by the host
    (repeat_interleave) in every forward' for it (gpu_sweep batch 2). A tensor of repeats is read (its sum)."""
    def loop(inputs):
        ops = [op("aten::repeat_interleave", inputs, source="attn.py:7", kernels=["copy"] if device == "cuda" else None)
               for _ in range(4)]
        return report(ops, ceil=ceilings(device=device, device_name=f"test {device}"))

    assert diagnose(loop([([2, 2, 32, 16], "float32")]), rules=["host-device-sync"]) == []
    by_tensor = diagnose(loop([([2, 3], "float32"), ([2], "int64")]), rules=["host-device-sync"])
    repeats_only = diagnose(loop([([2], "int64")]), rules=["host-device-sync"])
    assert [f.locations for f in by_tensor + repeats_only] == [["attn.py:7 (model)"]] * 2


def test_a_syncs_saving_is_the_device_idle_time_inside_the_wait_not_the_wait():
    """The host blocked 10 us in each .item(), the device ran queued work for 8 us of it: 2 us each is saved."""
    r = _generation_loop(4, with_item=True, device="cuda")
    for o in r.ops:
        if o.name == "aten::_local_scalar_dense":
            o.cpu_time_s, o.device_idle_s = 10e-6, 2e-6
    (f,) = diagnose(r, rules=["host-device-sync"])
    assert f.estimated_savings_s == pytest.approx(4 * 2e-6)
    assert f.evidence["host_blocked_s"] == pytest.approx(4 * 10e-6)
    assert f.evidence["device_idle_s"] == pytest.approx(4 * 2e-6)
    assert "idle" in f.savings_method and "8 us of their 40 us" in f.savings_method


def test_a_sync_site_with_its_device_idle_time_saves_that_and_without_it_at_most_the_profiles_idle_time():
    r = _generation_loop(4, with_item=True, device="cuda")
    r.syncs = [SyncSite(kind="item", location="gen.py:41", count=8, stall_s=30e-6, per_step=4.0, device_idle_s=5e-6)]
    (f,) = diagnose(r, rules=["host-device-sync"])
    assert f.estimated_savings_s == pytest.approx(5e-6) and "of the 30 us the host waited" in f.savings_method
    r.syncs[0].device_idle_s = None
    r.summary.idle_time_s = 12e-6
    (f,) = diagnose(r, rules=["host-device-sync"])
    assert f.estimated_savings_s == pytest.approx(12e-6) and "capped at the device's idle time" in f.savings_method


def _two_reads_on_one_line(steps: int, per_step: int, device: str = "cpu"):
    """QuantStub's quantize_per_tensor: a float scale and an int64 zero point read on one line, ``per_step`` times
    each per step (1: once each, no loop)."""
    ops = []
    for s in range(steps):
        for _ in range(per_step):
            ops.append(op("aten::conv2d", [([2, 3, 8, 8], "float32")], source="m.py:9", step=s))
            for dtype in ("float32", "int64"):
                ops.append(op("aten::_local_scalar_dense", [([1], dtype)], source="m.py:5", module="quant",
                              time=2e-6, step=s, kernels=[DTOH] if device == "cuda" else None))
    return report(ops, ceil=ceilings(device=device, device_name="test gpu" if device == "cuda" else "test cpu"))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_two_different_reads_on_one_line_once_each_per_step_are_no_loop(device):
    """Sweep 7's static quantization: the doctor called QuantStub's scale and zero-point reads 'inside a loop: 2 per
    step'. Each runs once a step: no loop, and below a warning's cost no finding at all."""
    findings = diagnose(_two_reads_on_one_line(3, 1, device), rules=["host-device-sync"])
    assert not any(f.evidence["in_loop"] or "loop" in f.title for f in findings)
    r = _two_reads_on_one_line(3, 1, device)
    r.ops = [o for o in r.ops if o.name == "aten::_local_scalar_dense"]  # the reads are all the step: a warning
    (f,) = diagnose(r, rules=["host-device-sync"])
    assert not f.evidence["in_loop"] and f.evidence["same_read_per_step"] == 1 and f.evidence["per_step"] == 2
    assert "loop" not in f.title and "2 different reads per step, each once" in f.title


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_same_two_reads_repeated_in_a_loop_still_are_one(device):
    (f,) = diagnose(_two_reads_on_one_line(2, 6, device), rules=["host-device-sync"])
    assert f.evidence["in_loop"] and f.evidence["same_read_per_step"] == 6 and f.evidence["per_step"] == 12
    assert "inside a loop: 12 per step at m.py:5" in f.title


def test_reads_at_an_op_name_site_are_not_told_apart_nor_dropped():
    """A trace with no Python stacks (HTA's sampled ranks) puts every sync of one op at one site named by the op:
    reads of different shapes there may be one loop over ragged data or several sites, so the rule neither calls
    them different reads (and drops them below a warning's cost) nor claims a loop; they stay a finding, saying why."""
    ops = []
    for s in range(2):
        for n in (381, 72, 10):
            ops.append(op("aten::_to_copy", [([n], "int64")], source=None, module="", time=2e-6, step=s,
                              kernels=[DTOH]))
    ops += [op("aten::mm", [([512, 512], "float32"), ([512, 512], "float32")], time=1e-3, step=s) for s in range(2)]
    r = report(ops, ceil=ceilings(device="cuda", device_name="test gpu"))  # the reads: 1% of the time, 'info'
    (f,) = diagnose(r, rules=["host-device-sync"])
    assert f.severity == "warning" and f.evidence["in_loop"] and "same_read_per_step" not in f.evidence
    assert "3 per step at aten::_to_copy (the trace records no source line" in f.title and "inside a loop" not in f.title
