"""What a roofline PNG must show, checked on its pixels: the figure's size, the black roofs, and a point of each
bound's colour (drawn at alpha 0.65 over white)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib import image

from roofline.render.roofline_chart import COLORS

SIZE = (715, 1100)  # figsize 10 x 6.5 inches at 110 dpi


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)


def colour_present(pixels: np.ndarray, hex_colour: str, tol: float = 14.0) -> bool:
    base = _rgb(hex_colour)
    for shade in (base, 0.65 * base + 0.35 * 255):
        if (np.abs(pixels - shade).max(axis=-1) <= tol).sum() >= 4:
            return True
    return False


def decode(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(io.BytesIO(data), format="png")
    return (pixels[..., :3] * 255).astype(float)


def _chromatic(bound: str) -> bool:
    """Grey (launch-bound) points cannot be told from anti-aliased text and grid lines, so are not checked."""
    rgb = _rgb(COLORS[bound])
    return rgb.max() - rgb.min() > 40


def assert_roofline_png(data: bytes, bounds: set[str], absent: set[str] = frozenset()) -> None:
    bounds = {b for b in bounds if _chromatic(b)}
    absent = {b for b in absent if _chromatic(b)}
    pixels = decode(data)
    assert pixels.shape[:2] == SIZE
    assert (pixels.max(axis=-1) < 40).sum() > 500, "no black roof lines drawn"
    for bound in bounds:
        assert colour_present(pixels, COLORS[bound]), f"no {bound}-bound point ({COLORS[bound]})"
    for bound in absent:
        assert not colour_present(pixels, COLORS[bound]), f"unexpected {bound}-bound colour"
