"""Checks shared by the report tests: a PNG decodes and is not blank; the page's images are embedded."""

from __future__ import annotations

import base64
import io
from html.parser import HTMLParser

import numpy as np
from PIL import Image


def png_stats(data: bytes) -> tuple[tuple[int, int], float, int]:
    """(size, pixel standard deviation, number of distinct colours) of a PNG; raises if it does not decode."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        rgb = np.asarray(im.convert("RGB"))
    packed = (rgb[..., 0].astype(np.int32) << 16) | (rgb[..., 1].astype(np.int32) << 8) | rgb[..., 2]
    colours = len(np.unique(packed))
    return (rgb.shape[1], rgb.shape[0]), float(rgb.std()), colours


def assert_nontrivial_png(data: bytes, what: str, min_colours: int = 20) -> None:
    size, std, colours = png_stats(data)
    assert size[0] >= 200 and size[1] >= 150, f"{what}: image too small {size}"
    assert std > 5.0, f"{what}: nearly a single colour (pixel std {std:.2f})"
    assert colours >= min_colours, f"{what}: only {colours} distinct colours"


def saturated_fraction(data: bytes) -> float:
    """Share of pixels that are clearly coloured (channel spread > 60): figures are, text and tables are not."""
    with Image.open(io.BytesIO(data)) as im:
        rgb = np.asarray(im.convert("RGB")).astype(np.int16)
    return float(((rgb.max(axis=-1) - rgb.min(axis=-1)) > 60).mean())


class Images(HTMLParser):
    """Collects every <img> src and every other URL-bearing attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[str] = []
        self.urls: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if tag == "img" and name == "src":
                self.imgs.append(value or "")
            elif name in ("src", "href", "srcset", "data") and value:
                self.urls.append((tag, name, value))


def embedded_pngs(html: str) -> list[bytes]:
    """Decode every <img> of the page; each must be a base64 PNG data URI."""
    p = Images()
    p.feed(html)
    assert not p.urls, f"page refers to other resources: {p.urls}"
    out = []
    for src in p.imgs:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix), f"<img> is not an embedded PNG: {src[:60]!r}"
        payload = src[len(prefix) :]
        assert payload, "empty data URI"
        out.append(base64.b64decode(payload, validate=True))
    return out
