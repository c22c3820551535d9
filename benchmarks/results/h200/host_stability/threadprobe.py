import threading
_prev = [1]
def pytest_runtest_teardown(item):
    n = threading.active_count()
    if n != _prev[0]:
        print("\nTHREADS", n, item.nodeid, [t.name for t in threading.enumerate()][:8], flush=True)
        _prev[0] = n
