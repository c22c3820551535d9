"""What a command imports before it starts its work: every command builds the whole parser first, so a heavy
import there (rich, matplotlib, torch) is paid by `roofline --version` and ahead of `roofline trace`'s read."""

import subprocess
import sys


def test_building_the_parser_imports_no_renderer_library():
    code = ("import sys, roofline.cli as c; c.build_parser(); "
            "print(sorted(m for m in ('rich', 'matplotlib', 'torch', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
