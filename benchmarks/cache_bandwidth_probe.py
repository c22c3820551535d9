"""Probe: copy and add bandwidth by buffer size on a GPU (does the L2 give more than DRAM, and up to what size?).

    python3 benchmarks/cache_bandwidth_probe.py OUT.json
"""
import json, sys, torch
res = []
for mib in [2, 4, 8, 16, 24, 32, 48, 64, 128, 1024]:
    n = mib * 2**20 // 4
    a = torch.empty(n, device="cuda"); b = torch.empty(n, device="cuda"); a.fill_(1)
    for kind in ["copy", "add"]:
        f = (lambda: b.copy_(a)) if kind == "copy" else (lambda: torch.add(a, 1.0, out=b))
        for _ in range(20): f()
        torch.cuda.synchronize()
        reps = max(20, int(2e4 / mib))
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(5):
            s.record()
            for _ in range(reps): f()
            e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3 / reps)
        t = sorted(ts)[2]
        res.append({"mib_per_buffer": mib, "kind": kind, "median_s": t, "bytes_per_s": 2 * n * 4 / t, "spread": [min(ts), max(ts)]})
        print(mib, kind, round(2 * n * 4 / t / 1e12, 2), "TB/s", flush=True)
json.dump({"device": torch.cuda.get_device_name(), "L2": torch.cuda.get_device_properties(0).L2_cache_size, "results": res}, open(sys.argv[1], "w"), indent=1)
