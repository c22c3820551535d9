import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
H200 = DATA / "h200"
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Measured ceilings go to a throwaway cache, never the user's."""
    if "ROOFLINE_CACHE_DIR" not in os.environ:
        os.environ["ROOFLINE_CACHE_DIR"] = str(tmp_path_factory.mktemp("roofline-cache"))
    yield


@pytest.fixture(scope="session")
def cpu_ceilings():
    """Quick measured CPU ceilings, shared by tests that need realistic roofs."""
    from roofline.device import get_ceilings

    return get_ceilings("cpu", quick=True)


@pytest.fixture(autouse=True, scope="session")
def _quick_ceilings_for_cli(_isolated_cache):
    """CLI runs in tests reuse the quick CPU measurement instead of a full one (test speed, not accuracy)."""
    from roofline.device import cache_path, get_ceilings, save_ceilings

    quick = get_ceilings("cpu", quick=True)
    full = cache_path(quick.device_name)
    if not full.exists():
        save_ceilings(quick, full)
    yield


@pytest.fixture
def one_thread():
    """torch on one thread for the test (the 2-core CI machine runs tests and torch's pool side by side)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@pytest.fixture(autouse=True, scope="session")
def _no_tqdm_monitor():
    """tqdm's monitor thread (torch.compile shows a progress bar) outlives the test that started it, and a process
    running another thread refuses to fork: the split trace read and the fan-out tests after it would not run
    their forked path."""
    try:
        from tqdm import tqdm
    except ImportError:
        yield
        return
    before = tqdm.monitor_interval
    tqdm.monitor_interval = 0
    yield
    tqdm.monitor_interval = before
