"""Renderers: the report as console text, roofline.png, report.html, report.json, a Chrome trace."""

# How many findings every command prints by default (--findings N; 0 prints them all). Kept here rather than in
# render/findings.py so that building the CLI's parser does not import rich (~0.07 s before a command starts).
FINDINGS_SHOWN = 10
