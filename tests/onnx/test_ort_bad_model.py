"""`roofline ort` of a file that is no ONNX model: one line on stderr and exit 2, none of ORT's own log lines."""

from __future__ import annotations

import pytest

from roofline.cli import main

pytest.importorskip("onnxruntime")


def test_a_file_that_is_no_onnx_model_gets_one_line(tmp_path, capfd):
    not_onnx = tmp_path / "train.py"
    not_onnx.write_text("import torch\n")
    assert main(["ort", str(not_onnx), "-o", str(tmp_path / "out")]) == 2
    err = [line for line in capfd.readouterr().err.splitlines() if not line.startswith("roofline: [")]
    assert len(err) == 1, err
    assert err[0].startswith(f"roofline: error: onnxruntime cannot load {not_onnx}: ")
    assert not (tmp_path / "out").exists()
