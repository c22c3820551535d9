"""A Report shows as its HTML page in Jupyter and IPython.

The Report itself (roofline.report, the bottom layer) knows nothing of renderers; IPython is told here, above
them, to display it with render/html.py. ``import roofline`` (which any ``roofline.*`` import runs) registers the
display when IPython is running; ``%load_ext roofline`` does it by hand.
"""

from __future__ import annotations

from typing import Any


def report_html(report: Any) -> str:
    """The report's page in an iframe, so its ids, CSS and scripts cannot collide with the notebook's."""
    from roofline.render.html import render_html

    return render_html(report, embed=True)


def register(shell: Any = None) -> bool:
    """Display Reports as HTML in ``shell`` (the running IPython, by default); False when there is none."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    # by name, so registering imports nothing: the Report class is looked up when a Report is displayed
    shell.display_formatter.formatters["text/html"].for_type_by_name("roofline.report", "Report", report_html)
    return True
