"""SyncDetector: each patched call found at the user's line, silence on sync-free code, nothing left patched."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import pytest
import torch

from roofline.capture.syncs import SyncDetector, SyncWarning, syncs_from_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "h200"


def _here() -> str:
    """file:line of the caller's line, spelled as the detector spells locations."""
    frame = inspect.currentframe().f_back
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"


def _sites(detector: SyncDetector) -> dict[tuple[str, str], int]:
    return {(s.kind, Path(s.location.rpartition(":")[0]).name + ":" + s.location.rpartition(":")[2]): s.count
            for s in detector.sites()}


CALLS = {
    "item": lambda x: x.sum().item(),
    "tolist": lambda x: x.tolist(),
    "numpy": lambda x: x.numpy(),
    "cpu": lambda x: x.cpu(),
    "to(cpu)": lambda x: x.to("cpu"),
    "bool": lambda x: bool(x.sum() > 0),
    "int": lambda x: int(x.sum()),
    "float": lambda x: float(x.sum()),
    "nonzero": lambda x: torch.nonzero(x),
    "masked_select": lambda x: x.masked_select(x > 0),
    "boolean-mask indexing": lambda x: x[x > 0],
    "boolean-mask assignment": lambda x: x.__setitem__(x > 0, 0.0),
    "repeat_interleave": lambda x: torch.repeat_interleave(torch.tensor([1, 2]), torch.tensor([2, 1])),
    "multinomial": lambda x: torch.multinomial(x.abs() + 0.1, 2),
    "unique": lambda x: torch.unique(x),
}


@pytest.mark.parametrize("kind", sorted(CALLS))
def test_each_listed_call_is_found_at_the_users_line(kind: str) -> None:
    x = torch.randn(8)
    with SyncDetector("silent", simulated=True) as detector:
        CALLS[kind](x)
    line = f"test_syncs.py:{CALLS[kind].__code__.co_firstlineno}"
    assert _sites(detector).get((kind, line)) == 1, detector.sites()


def test_item_in_a_loop_counts_per_call_and_per_step() -> None:
    x = torch.randn(4)
    with SyncDetector("silent", simulated=True) as detector:
        for _ in range(3):
            for _ in range(5):
                x.mean().item(); line = _here()  # noqa: E702
            detector.mark_step()
    (site,) = detector.sites()
    assert (site.kind, site.count, site.per_step) == ("item", 15, 5.0)
    assert site.location.endswith(line.split(":")[1]) and site.stall_s >= 0.0


def test_to_a_dtype_or_the_same_device_by_dtype_is_not_a_sync() -> None:
    x = torch.randn(4)
    with SyncDetector("silent", simulated=True) as detector:
        x.to(torch.float16)
        x.repeat_interleave(2, output_size=8)
        x.repeat_interleave(2)  # an int's output size is known: no read (GQA's K/V expansion)
        torch.repeat_interleave(x, repeats=3, dim=0)
        x[0:2]
        x[torch.tensor([0, 1])]
    assert detector.sites() == []


def test_repeat_interleave_by_a_tensor_of_repeats_is_a_sync() -> None:
    x = torch.randn(2)
    with SyncDetector("silent", simulated=True) as detector:
        x.repeat_interleave(torch.tensor([1, 2])); first = _here()  # noqa: E702
        torch.repeat_interleave(x, repeats=torch.tensor(2)); second = _here()  # noqa: E702
    assert _sites(detector) == {("repeat_interleave", first): 1, ("repeat_interleave", second): 1}


def test_to_where_the_data_already_is_is_not_a_sync_but_to_cpu_is() -> None:
    x, y = torch.randn(4), torch.randn(4)
    with SyncDetector("silent", simulated=True) as detector:
        x.to(y.device)
        x.to(y)
        x.to(device=y.device, dtype=torch.float16)
        x.to("cpu"); line = _here()  # noqa: E702
    assert _sites(detector) == {("to(cpu)", line): 1}


def test_a_simulated_to_cpu_counts_only_where_the_line_spells_cpu() -> None:
    # A script run on CPU with DEV = "cpu" moves its batches with x.to(DEV): on a GPU that is the copy *to* the
    # device (no wait), so only a literal "cpu" target is the device-to-host copy that would synchronise.
    x = torch.randn(4)
    DEV = "cpu"
    with SyncDetector("silent", simulated=True) as detector:
        x.to(DEV, non_blocking=True)
        x.to(device=DEV)
        x.to('cpu:0'); single = _here()  # noqa: E702
        x.to(device="cpu"); keyword = _here()  # noqa: E702
    assert _sites(detector) == {("to(cpu)", single): 1, ("to(cpu)", keyword): 1}


def test_explicit_cuda_synchronize_calls_are_recorded() -> None:
    with SyncDetector("silent", simulated=True) as detector:
        line = ""
        try:
            line = _here(); torch.cuda.synchronize()  # noqa: E702
        except RuntimeError:  # no GPU here: the call is still recorded before torch refuses it
            pass
    assert _sites(detector).get(("cuda.synchronize", line)) == 1, detector.sites()


def test_event_and_stream_synchronize_are_patched() -> None:
    with SyncDetector("silent", simulated=True):
        assert torch.cuda.Event.synchronize.__name__ == "synchronize"
        assert "synchronize" in vars(torch.cuda.Event) and "synchronize" in vars(torch.cuda.Stream)
        assert torch.cuda.Event.synchronize is not _ORIGINAL["Event"]


_ORIGINAL = {"Event": torch.cuda.Event.synchronize, "Stream": torch.cuda.Stream.synchronize}


def test_silent_on_a_sync_free_model() -> None:
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 10))
    x = torch.randn(2, 3, 8, 8)
    with SyncDetector("error", simulated=True) as detector:
        for _ in range(2):
            loss = torch.nn.functional.cross_entropy(model(x), torch.tensor([1, 2]))
            loss.backward()
    assert detector.sites() == []


def _snapshot() -> dict[str, object]:
    names = ["item", "tolist", "numpy", "cpu", "to", "__bool__", "__int__", "__float__", "__getitem__",
             "__setitem__", "nonzero", "masked_select", "multinomial", "unique", "repeat_interleave"]
    snap: dict[str, object] = {f"Tensor.{n}": vars(torch.Tensor).get(n) for n in names}
    snap.update({f"torch.{n}": getattr(torch, n) for n in ("nonzero", "masked_select", "multinomial", "unique",
                                                            "repeat_interleave")})
    snap["cuda.synchronize"] = torch.cuda.synchronize
    snap["Event.synchronize"] = vars(torch.cuda.Event).get("synchronize")
    snap["Stream.synchronize"] = vars(torch.cuda.Stream).get("synchronize")
    if torch.cuda.is_available():
        snap["sync_debug"] = torch.cuda.get_sync_debug_mode()
    return snap


def test_no_patch_left_behind_after_an_exception() -> None:
    before = _snapshot()
    with pytest.raises(ZeroDivisionError):
        with SyncDetector("silent", simulated=True):
            assert _snapshot() != before
            torch.ones(1).item()
            1 / 0
    assert _snapshot() == before


def test_error_mode_raises_before_the_sync_and_restores() -> None:
    before = _snapshot()
    with pytest.raises(SyncWarning, match="item at .*test_syncs.py"):
        with SyncDetector("error", simulated=True):
            torch.ones(1).item()
    assert _snapshot() == before


def test_warn_mode_warns_once_per_site() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SyncDetector("warn", simulated=True):
            for _ in range(4):
                torch.ones(1).item()
    sync_warnings = [w for w in caught if issubclass(w.category, SyncWarning)]
    assert len(sync_warnings) == 1
    assert Path(sync_warnings[0].filename).name == "test_syncs.py"


def test_not_simulated_cpu_tensors_are_not_syncs() -> None:
    with SyncDetector("error", simulated=False) as detector:
        torch.ones(1).item()
        torch.ones(3).cpu()
    assert detector.sites() == []


def test_bad_mode_is_refused() -> None:
    with pytest.raises(ValueError):
        SyncDetector("loud")


def test_h200_bad_syncs_trace_has_its_syncs_per_step() -> None:
    sites = syncs_from_trace(DATA / "bad_syncs_fwd_fp32.json.gz")
    by_kind = {s.kind: s for s in sites}
    assert by_kind["item"].per_step == 10 and by_kind["item"].count == 20
    assert by_kind["copy to host"].per_step == 10
    assert by_kind["copy to device"].per_step == 10
    assert all(s.location.startswith("record_traces.py:") for s in sites)
    assert all(s.stall_s > 0 for s in sites)


def test_trace_without_sync_events_has_no_sites() -> None:
    assert syncs_from_trace({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1,
                                              "pid": 1, "tid": 1, "args": {"External id": 1}}]}) == []


def test_h200_bad_syncs_through_load_trace_matches_the_raw_reading() -> None:
    kineto = pytest.importorskip("roofline.capture.kineto")
    from_trace = syncs_from_trace(kineto.load_trace(DATA / "bad_syncs_fwd_fp32.json.gz"))
    by_kind = {s.kind: s.per_step for s in from_trace}
    assert by_kind == {"item": 10, "copy to host": 10, "copy to device": 10}
    assert {s.location for s in from_trace} == {"record_traces.py:84"}


@pytest.mark.cuda
def test_cuda_syncs_are_real_not_simulated_and_implicit_ones_are_caught() -> None:
    x = torch.randn(64, device="cuda")
    with SyncDetector("silent") as detector:
        assert not detector.simulated
        x.sum().item(); item_line = _here()  # noqa: E702
        torch.ones(1).item()  # a CPU tensor: no sync on a CUDA machine
        torch.equal(x, x + 1); equal_line = _here()  # noqa: E702 - syncs inside torch, no Python entry point
    sites = _sites(detector)
    assert sites.get(("item", item_line)) == 1
    assert sites.get(("implicit (inside torch)", equal_line)) == 1, sites
    assert sum(sites.values()) == 2, sites


def test_user_location_without_a_python_frame_is_unknown():
    """A CUDA backward runs dispatch hooks on autograd's device thread, where nothing is below the hook's frame."""
    from roofline.capture.syncs import user_location

    assert user_location(None, unknown=None) is None
    assert user_location(None) == "<unknown>"
    assert user_location().startswith("tests")


def test_trace_frames_and_live_frames_spell_a_file_alike(tmp_path, monkeypatch):
    """torch's Python tracer writes files relative to their sys.path entry; sync sites relative to the cwd."""
    from roofline.capture.source_paths import local_trace_path, short_path

    package = tmp_path / "src" / "mypkg"
    package.mkdir(parents=True)
    (package / "model.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    expected = str(Path("src") / "mypkg" / "model.py")
    assert short_path(str(package / "model.py")) == expected
    assert local_trace_path("mypkg/model.py") == expected
    assert local_trace_path("otherpkg/elsewhere.py") == "otherpkg/elsewhere.py"
    assert local_trace_path(str(package / "model.py")) == expected
    installed = tmp_path / ".venv" / "lib" / "site-packages"
    (installed / "thirdparty").mkdir(parents=True)
    (installed / "thirdparty" / "layers.py").write_text("y = 2\n")
    monkeypatch.syspath_prepend(str(installed))
    assert local_trace_path("thirdparty/layers.py") == "thirdparty/layers.py"


def _user_code_cases() -> list[tuple[str, bool]]:
    import os
    import sysconfig

    import roofline

    package = os.path.dirname(roofline.__file__)
    return [
        ("/home/u/.venv/lib/python3.12/site-packages/transformers/generation/utils.py", True),
        ("transformers/generation/utils.py", True),  # a trace's spelling, from its sys.path entry
        ("/home/u/proj/train.py", True),
        ("roofline/models/llama.py", True),  # roofline's built-in workloads are the code being profiled
        (os.path.join(package, "lab", "generate.py"), True),
        (torch.nn.modules.module.__file__, False),
        ("torch/nn/modules/module.py", False),
        (os.path.join(package, "cli", "trace.py"), False),
        ("roofline/cli/trace.py", False),
        (os.path.join(sysconfig.get_paths()["stdlib"], "threading.py"), False),
        ("threading.py", False),
        ("<string>", False),
        ("<frozen runpy>", False),
        ("/home/u/.venv/bin/roofline", False),
    ]


def test_live_frames_and_trace_frames_share_one_user_code_rule():
    """The live walk (sync sites, recorded ops) and the trace's frames name the same files as user code: an
    installed package's file is, as issue 15's generate() syncs need, in either spelling; torch, roofline's
    machinery, the standard library and generated code are not."""
    import sys

    from roofline.capture.kineto import _classify_frame
    from roofline.capture.source_paths import is_user_file, short_path
    from roofline.capture.syncs import user_location

    here = f"{short_path(__file__)}:"
    for filename, user in _user_code_cases():
        assert is_user_file(filename) is user, filename
        assert (_classify_frame(f"{filename}(12): forward") is not None) is user, filename
        namespace: dict = {}
        exec(compile("\n\ndef inner(locate):\n    return locate()\n", filename, "exec"), namespace)
        where = namespace["inner"](lambda: user_location(sys._getframe(1)))
        if user:
            assert where == f"{short_path(filename)}:4", filename
        else:
            assert where.startswith(here), (filename, where)


def test_an_absolute_trace_frame_this_machine_lacks_keeps_its_spelling_whatever_the_working_directory(tmp_path):
    from roofline.capture.source_paths import _local_trace_path

    recorded = "/tmp/torchinductor_root/sh/not-on-this-machine.py"
    assert _local_trace_path(recorded, str(tmp_path / "repo")) == recorded
    assert _local_trace_path(recorded, "/tmp/clone") == recorded


@pytest.mark.parametrize("optimizer", [torch.optim.AdamW, torch.optim.Adam, torch.optim.SGD])
def test_optimizer_step_counters_are_not_would_be_syncs_but_the_users_item_is(optimizer) -> None:
    model = torch.nn.Linear(8, 4)
    opt = optimizer(model.parameters(), lr=1e-3, **({"momentum": 0.9} if optimizer is torch.optim.SGD else {}))
    with SyncDetector("silent", simulated=True) as det:
        for _ in range(3):
            loss = model(torch.randn(2, 8)).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
        loss.item()
    sites = det.sites()
    assert [s.kind for s in sites] == ["item"] and sites[0].count == 1


def test_adafactors_own_step_counter_reads_are_not_syncs_but_its_norm_reads_are() -> None:
    """Adafactor reads its step counter itself (``step_t.item()``), not through ``_get_value``: the counter is one
    of the ``state_steps`` it was passed, kept on the host, no sync on a device either. Its reads of the norms of
    each parameter and update do sync on a GPU and stay counted."""
    if not hasattr(torch.optim, "Adafactor"):
        pytest.skip("this torch has no Adafactor")
    model = torch.nn.Linear(8, 4)
    opt = torch.optim.Adafactor(model.parameters(), lr=1e-2)
    with SyncDetector("silent", simulated=True) as det:
        for _ in range(3):
            model(torch.randn(2, 8)).square().mean().backward()
            opt.step()
            opt.zero_grad()
    sites = det.sites()
    counted = sum(s.count for s in sites)
    assert counted > 0 and {s.kind for s in sites} == {"item"}
    with SyncDetector("silent", simulated=True) as again:
        model(torch.randn(2, 8)).square().mean().backward()
        opt.step()
    # per step: the two norms of each of the two parameters, none of its two step counters
    assert sum(s.count for s in again.sites()) == 4, [(s.kind, s.location, s.count) for s in again.sites()]
