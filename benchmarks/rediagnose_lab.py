"""Re-diagnose a `roofline lab` folder's committed doctor reports with this checkout's rules, on any machine.

The doctor reads only the report (analysis, no device): the H200 reports under docs/lab/h200/<model>/doctor/ can be
re-diagnosed here after a rule changes, without the GPU that recorded them. For each of doctor/naive and
doctor/fixed: the findings in report.json.gz and findings.txt are replaced, and so are lab.json's "doctor" field
and lab.md's two doctor sections. The ops, times and every other figure stay as recorded. Prints what changed.

    PYTHONPATH=src python benchmarks/rediagnose_lab.py docs/lab/h200/llama-1b docs/lab/h200/llama-tiny
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec

from roofline.doctor import diagnose
from roofline.io import atomic_write_text
from roofline.lab.render import _findings_list
from roofline.render.findings import render_findings
from roofline.report import Report

SECTIONS = {"naive": "## The doctor on the naive model", "fixed": "## The doctor on the fixed model"}


def rediagnose(folder: Path) -> list[str]:
    changes: list[str] = []
    lab_json = folder / "lab.json"
    lab_md = folder / "lab.md"
    payload = json.loads(lab_json.read_text())
    markdown = lab_md.read_text()
    for name, heading in SECTIONS.items():
        path = folder / "doctor" / name / "report.json.gz"
        if not path.exists():
            continue
        report = Report.load(path)
        before = [f"{f.rule} ({f.severity}): {f.title}" for f in report.findings]
        report.findings = diagnose(report)
        after = [f"{f.rule} ({f.severity}): {f.title}" for f in report.findings]
        changes += [f"{folder.name}/{name}: - {t}" for t in before if t not in after]
        changes += [f"{folder.name}/{name}: + {t}" for t in after if t not in before]
        report.save(path)
        atomic_write_text(path.parent / "findings.txt", render_findings(report.findings))
        payload["doctor"][name] = msgspec.to_builtins(report.findings)
        markdown = _replace_section(markdown, heading, _findings_list(report))
    atomic_write_text(lab_json, json.dumps(payload, indent=1, allow_nan=False) + "\n")
    atomic_write_text(lab_md, markdown)
    return changes


def _replace_section(markdown: str, heading: str, body: str) -> str:
    """``markdown`` with the text between ``heading`` and the next '## ' heading replaced by ``body``."""
    start = markdown.index(heading) + len(heading)
    end = markdown.find("\n## ", start)
    end = len(markdown) if end < 0 else end
    return markdown[:start] + "\n\n" + body + "\n" + markdown[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for folder in args.folders:
        for line in rediagnose(folder) or [f"{folder.name}: no finding changed"]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
