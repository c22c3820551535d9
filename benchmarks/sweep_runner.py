"""The runner the model sweeps share (sweep_models6.py to sweep_models8.py): each case through the CLI in a
subprocess (factories through `roofline analyze`, scripts through `profile`, then `trace` of the trace it wrote, and
`doctor` where asked; pairs of reports through `diff`), the checks on each (exit code, traceback, nan/inf/negative
numbers in the console (not the words "inf check") and NaN/Infinity in report.json, the unmodelled share, FLOPs
against torch.utils.flop_counter.FlopCounterMode's, the findings' titles), and the results table. A sweep module
holds its cases and hands them to a ``Sweep``."""

import json
import os
import re
import runpy
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
BAD_NUMBER = r"\b(?:nan|inf)\b(?! check)|-\d[\d.]* ?(?:ms|us|s)\b"  # not GradScaler's "inf check" in a note


def _fcm(run):
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as fc:
        run()
    return sum(fc.get_flop_counts().get("Global", {}).values())

def _scalar(out):
    if isinstance(out, torch.Tensor):
        return out.float().sum()
    if isinstance(out, dict):
        out = list(out.values())
    elif hasattr(out, "__dataclass_fields__"):
        out = [getattr(out, f) for f in out.__dataclass_fields__]
    return sum(_scalar(o) for o in out if isinstance(o, (torch.Tensor, dict, list, tuple)))


@dataclass
class Sweep:
    number: int  # the sweep's number: its scripts read SWEEP<number>_FCM, its table is sweep<number>.md
    ordinal: str  # "Sixth"
    here: Path  # the sweep module, whose factories `roofline analyze` imports
    factories: list
    scripts: dict  # name -> (doc, body[, extra CLI arguments])
    header: str  # every script's first lines
    loop: str  # the loop calling step() appended to a script without its own
    backward: set = field(default_factory=set)
    doctor: set = field(default_factory=set)  # scripts also run through `roofline doctor`
    expect_exit: dict = field(default_factory=dict)
    diffs: list = field(default_factory=list)

    @property
    def fcm_env(self) -> str:
        return f"SWEEP{self.number}_FCM"

    def script_text(self, name):
        doc, body = self.scripts[name][:2]
        text = f'"""{doc}"""\n' + self.header + body.strip() + "\n"
        own_loop = "LOOPS = 0" in body or self.loop.strip() in body  # LOOPS = 0: it loops itself
        return text if own_loop else text + self.loop

    def write_script(self, name, out_root):
        p = Path(out_root, "scripts", f"{name}.py")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.script_text(name))
        return p

    def fcm_of_factory(self, fn, backward):
        model, inputs = fn()

        def run():
            out = model(**inputs) if isinstance(inputs, dict) else model(*(inputs if isinstance(inputs, tuple)
                                                                            else (inputs,)))
            if backward:
                _scalar(out).backward()
        if backward:
            return _fcm(run)
        with torch.no_grad():
            return _fcm(run)

    def fcm_of_script(self, script):
        os.environ[self.fcm_env] = "1"
        argv = sys.argv
        try:
            g = runpy.run_path(str(script), run_name=self.fcm_env.lower())
        finally:
            del os.environ[self.fcm_env]
            sys.argv = argv
        g["step"]()  # the first step builds lazy state (Adam's moments) outside the count
        return _fcm(g["step"])

    def report_facts(self, report_dir):
        text = Path(report_dir, "report.json").read_text()
        r = json.loads(text)
        steps = max(1, r.get("steps") or 1)
        unmodelled = defaultdict(float)
        for op in r["ops"]:
            if not op["modeled"]:
                unmodelled[op["name"][:40]] += op["time_s"] * (op.get("count") or 1)
        return dict(flops_per_step=sum((op["flops"] or 0) * (op.get("count") or 1) for op in r["ops"]) / steps,
                    steps=r.get("steps"), unmodelled_share=r["summary"]["unmodeled_time_share"],
                    unmodelled_ops=sorted(unmodelled, key=unmodelled.get)[::-1][:4],
                    findings=[f"{f.get('rule')}: {f.get('title', '')[:110]}" for f in (r.get("findings") or [])][:6],
                    nonfinite_in_json=len(re.findall(r"\bNaN\b|Infinity\b", text)))

    def _run(self, cmd, out_root, tag):
        env = dict(os.environ, PYTHONPATH=os.environ.get("SWEEP_SRC", str(REPO / "src")))
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        Path(out_root, f"{tag}.out").write_text(p.stdout)
        Path(out_root, f"{tag}.err").write_text(p.stderr)
        return p, round(time.monotonic() - t0, 1)

    def _row(self, name, kind, cmd, p, wall, out_dir):
        shown = " ".join(str(c).replace(str(REPO) + "/", "").replace(str(Path(out_dir).parent) + "/", "OUT/")
                         for c in cmd[2:])
        row = dict(name=name, kind=kind, command=f"roofline {shown.removeprefix('roofline ')}", rc=p.returncode,
                   expected_rc=self.expect_exit.get(name, 0), wall_s=wall, traceback="Traceback" in p.stderr,
                   bad_numbers=[] if kind == "diff" else re.findall(BAD_NUMBER, p.stdout, re.I)[:3],
                   error=p.stderr.strip().splitlines()[-1][:200] if p.returncode and p.stderr.strip() else "")
        if p.returncode == 0 and Path(out_dir, "report.json").exists():
            row.update(self.report_facts(out_dir))
        return row

    def run_factory(self, fn, out_root):
        name, out = fn.__name__, Path(out_root, fn.__name__)
        cmd = [sys.executable, "-m", "roofline", "analyze", f"{self.here}:{name}", "-o", str(out), "--iters", "3",
               "--warmup", "1", "--device", "cpu"] + (["--backward"] if name in self.backward else [])
        p, wall = self._run(cmd, out_root, name)
        row = self._row(name, "analyze", cmd, p, wall, out)
        if "flops_per_step" in row:
            try:
                row["fcm"] = self.fcm_of_factory(fn, name in self.backward)
            except Exception as e:  # FlopCounterMode may not run a model: say so, keep the case
                row["fcm_error"] = f"{type(e).__name__}: {str(e)[:120]}"
        return [row]

    def run_script(self, name, out_root):
        script = self.write_script(name, out_root)
        extra = self.scripts[name][2] if len(self.scripts[name]) > 2 else []
        options = [a for a in extra if a.startswith("--run")]
        args = [a for a in extra if a not in options]
        out = Path(out_root, name)
        cmd = [sys.executable, "-m", "roofline", "profile", *options, "-o", str(out), str(script), *args]
        p, wall = self._run(cmd, out_root, f"{name}.profile")
        rows = [self._row(name, "profile", cmd, p, wall, out)]
        if "flops_per_step" in rows[0]:
            try:
                rows[0]["fcm"] = self.fcm_of_script(script)
            except Exception as e:
                rows[0]["fcm_error"] = f"{type(e).__name__}: {str(e)[:120]}"
            tr = Path(out_root, f"{name}-trace")
            cmd = [sys.executable, "-m", "roofline", "trace", str(out / "trace.json.gz"), "-o", str(tr)]
            p, wall = self._run(cmd, out_root, f"{name}.trace")
            rows.append(self._row(name, "trace", cmd, p, wall, tr))
            rows[-1]["fcm"] = rows[0].get("fcm")
        if name in self.doctor:
            dr = Path(out_root, f"{name}-doctor")
            cmd = [sys.executable, "-m", "roofline", "doctor", "-o", str(dr), str(script), *args]
            p, wall = self._run(cmd, out_root, f"{name}.doctor")
            rows.append(self._row(name, "doctor", cmd, p, wall, dr))
            rows[-1]["fcm"] = rows[0].get("fcm")
        return rows

    def run_diff(self, a, b, out_root):
        cmd = [sys.executable, "-m", "roofline", "diff", str(Path(out_root, a, "report.json")),
               str(Path(out_root, b, "report.json"))]
        p, wall = self._run(cmd, out_root, f"diff-{a}-{b}")
        row = self._row(f"{a} vs {b}", "diff", cmd, p, wall, Path(out_root, "-"))
        row["findings"] = [ln.strip()[:110] for ln in p.stdout.splitlines() if ln.strip().startswith("[")][:6]
        return [row]

    def table(self, out_root):
        data = json.loads(Path(out_root, "sweep.json").read_text())
        lines = [f"# {self.ordinal} model sweep (CPU, {data['date']}, torch {data['torch']})", "",
                 f"`python benchmarks/{self.here.name} OUT_DIR`; OUT_DIR's report.json files are not committed. "
                 "xFCM: our FLOPs per step over torch.utils.flop_counter.FlopCounterMode's over one step (it counts "
                 "products, convolutions and attention only; '-': it counts nothing there).", "",
                 "| case | command | exit (expected) | unmodelled | FLOPs/step | FCM | xFCM | findings / error |",
                 "|---|---|---|---|---|---|---|---|"]
        for r in data["rows"]:
            fl, fcm = r.get("flops_per_step"), r.get("fcm")
            ratio = f"{fl / fcm:.3f}" if fl is not None and fcm else "-"
            bad = " TRACEBACK" if r.get("traceback") else ""
            bad += f" bad numbers {r['bad_numbers']}" if r.get("bad_numbers") and r["kind"] != "diff" else ""
            bad += f" NaN/inf x{r['nonfinite_in_json']} in report.json" if r.get("nonfinite_in_json") else ""
            tail = r["error"] if r.get("rc") else "; ".join(r.get("findings") or []) or "no findings"
            unmod = f"{100 * r['unmodelled_share']:.1f}%" if "unmodelled_share" in r else "-"
            lines.append(f"| {r['name']} | `{r['command'][:150]}` | {r['rc']} ({r['expected_rc']}){bad} | {unmod} "
                         f"| {'-' if fl is None else f'{fl:,.0f}'} | {'-' if fcm is None else f'{fcm:,.0f}'} | {ratio} "
                         f"| {tail.replace('|', '/')} |")
        text = "\n".join(lines) + "\n"
        Path(out_root, f"sweep{self.number}.md").write_text(text)
        print(text)

    def main(self, argv):
        if argv and argv[0] == "--table":
            return self.table(argv[1])
        out_root, only = Path(argv[0]).resolve(), set(argv[1:])
        out_root.mkdir(parents=True, exist_ok=True)
        old = Path(out_root, "sweep.json")  # a run of some cases keeps the other cases' rows of an earlier run
        rows = [r for r in json.loads(old.read_text())["rows"] if only and r["name"].split(" vs ")[0] not in only] \
            if old.exists() else []
        for fn in self.factories:
            if not only or fn.__name__ in only:
                rows += self.run_factory(fn, out_root)
                print(json.dumps(rows[-1]), flush=True)
        for name in self.scripts:
            if not only or name in only:
                rows += self.run_script(name, out_root)
                print(json.dumps(rows[-1]), flush=True)
        for a, b in self.diffs:
            if (not only or a in only or b in only) and Path(out_root, a, "report.json").exists() \
                    and Path(out_root, b, "report.json").exists():
                rows += self.run_diff(a, b, out_root)
        order = [f.__name__ for f in self.factories] + list(self.scripts)
        rows.sort(key=lambda r: order.index(r["name"].split(" vs ")[0]) + (0.5 if " vs " in r["name"] else 0))
        old.write_text(json.dumps(dict(date=time.strftime("%Y-%m-%d"), torch=torch.__version__, rows=rows), indent=1))
        self.table(out_root)
