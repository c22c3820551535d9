"""Issue 15's H200 check: `roofline doctor` on a script that calls HF generate() names its per-token syncs.

Runs `roofline doctor -o OUT/<arch> benchmarks/hf_generate.py --arch <arch>` for GPT-2 and Llama and writes
OUT/generate_syncs.json: per model, the exit code, the sync sites of the report and the host-device-sync
findings that say "in every forward" with a file:line location. Exit 0 when every model has one.

    PYTHONPATH=src python3 benchmarks/generate_syncs.py OUT [--device cuda] [--ceilings FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "hf_generate.py"
FILE_LINE = re.compile(r"\S+\.py:\d+$")


def per_token_sync_findings(report: dict) -> list[dict]:
    """host-device-sync findings that fire in every decode step and name a file:line."""
    return [f for f in report.get("findings", []) if f.get("rule") == "host-device-sync"
            and f.get("evidence", {}).get("every_forward") and any(FILE_LINE.match(loc) for loc in f.get("locations", []))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--device", default=None)
    parser.add_argument("--archs", nargs="+", default=["gpt2", "llama"])
    parser.add_argument("--ceilings", default=None, help="ceilings JSON (skips measuring them; syncs need no roofs)")
    args = parser.parse_args()
    out = Path(args.out)
    results = {}
    for arch in args.archs:
        target = out / arch
        device = ["--device", args.device] if args.device else []
        device += ["--ceilings", args.ceilings] if args.ceilings else []
        done = subprocess.run([sys.executable, "-m", "roofline", "doctor", *device, "-o", str(target), str(SCRIPT),
                               "--arch", arch], capture_output=True, text=True, timeout=400)
        entry: dict = {"rc": done.returncode, "stderr_tail": done.stderr.strip().splitlines()[-3:]}
        report_path = target / "report.json"
        if report_path.is_file():
            report = json.loads(report_path.read_text())
            entry["device"] = report.get("environment", {}).get("device_name")
            entry["step_source"] = report.get("extra", {}).get("profile", {}).get("step_source")
            entry["syncs"] = report.get("syncs", [])
            entry["per_token_findings"] = [{"title": f["title"], "locations": f["locations"]}
                                           for f in per_token_sync_findings(report)]
            entry["syncs_from_trace"] = report.get("extra", {}).get("profile", {}).get("syncs_from_trace", [])
        results[arch] = entry
        print(arch, json.dumps(entry.get("per_token_findings"), indent=None), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "generate_syncs.json").write_text(json.dumps(results, indent=1))
    return 0 if all(r.get("per_token_findings") for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
