"""A scanned page in the original-layout Pdf (docs/exports.md, "Scanned pages"): where its
OCR layout lies on the page, and the paper colour around a region.

A scanned page's layout (`source: "ocr"`, translation/engines/tesseract.py) is in pixels
of the page image turned upright and level: its quarter turn (`rotation`) and then its
skew (`skew`), both counter-clockwise about the image's centre, the image growing to hold
the turned page. The page's content is levelled first (`page_level`: turned by the skew
about the page's centre, over the paper's colour), so the translation is set level, as
text a reader's search and poppler read in whole lines; the quarter turn stays as the
page has it (text turned a quarter reads as well). `ScanFrame` maps the upright frame onto
the levelled page: the layout scaled to points (y down from the frame's top-left corner,
as text pages' layouts are) and the matrix that puts the frame, y up, on the page.
"""

from __future__ import annotations

import io
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pikepdf
from PIL import Image

SIZE_TOLERANCE = 0.03  # the upright image's height, as the page's size predicts it, within this share
COVER_PAD = 0.15  # a line's cover reaches this share of its height past its box (a word's box is its ink)
COVER_PAD_MIN = 1.5  # pixels
BORDER_STEP = 2  # pixels between the samples along a box's border

Box = tuple[float, float, float, float]  # x0, top, x1, bottom
Matrix = tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class ScanFrame:
    scale: float  # upright image pixels per point
    angle: float  # degrees the scan was turned counter-clockwise to be upright and level
    upright: tuple[float, float]  # the upright image's size in pixels
    page: tuple[float, float]  # the page's (crop box's) size in points
    rotation: int
    skew: float

    @property
    def height(self) -> float:
        """The upright frame's height in points."""
        return self.upright[1] / self.scale

    def matrix(self, origin: tuple[float, float]) -> Matrix:
        """The matrix (reportlab's `Canvas.transform`) from the upright frame in points, y up
        from its bottom-left corner, to the levelled page's overlay space, whose crop box's
        bottom-left corner lies at `origin`: both share their centre, the frame turned back
        by the quarter turn (the skew is the levelled page's own)."""

        def on_page(a: float, b: float) -> tuple[float, float]:
            # The upright frame's point, from its centre (y down), turned back by the quarter turn.
            across, down = a - self.upright[0] / self.scale / 2, (self.height - b) - self.height / 2
            cosine, sine = math.cos(math.radians(self.rotation)), math.sin(math.radians(self.rotation))
            x = self.page[0] / 2 + cosine * across - sine * down
            y = self.page[1] / 2 + sine * across + cosine * down
            return origin[0] + x, origin[1] + self.page[1] - y

        e, f = on_page(0.0, 0.0)
        right, up = on_page(1.0, 0.0), on_page(0.0, 1.0)
        return right[0] - e, right[1] - f, up[0] - e, up[1] - f, e, f


def scan_frame(layout: Mapping[str, Any], width: float, height: float) -> ScanFrame | None:
    """Where the OCR layout lies on a page of `width` x `height` points, or None when its
    sizes do not tell (a layout without its turn, or one read from another image)."""
    if layout.get("source") != "ocr" or not layout.get("blocks"):
        return None
    upright = float(layout.get("width") or 0.0), float(layout.get("height") or 0.0)
    if min(upright) <= 0 or width <= 0 or height <= 0:
        return None
    rotation, skew = int(layout.get("rotation", 0)), float(layout.get("skew", 0.0))
    angle = rotation + skew
    cosine, sine = abs(math.cos(math.radians(angle))), abs(math.sin(math.radians(angle)))
    scale = upright[0] / (width * cosine + height * sine)
    expected = scale * (width * sine + height * cosine)
    if abs(expected - upright[1]) > SIZE_TOLERANCE * upright[1]:
        return None
    return ScanFrame(scale=scale, angle=angle, upright=upright, page=(width, height), rotation=rotation, skew=skew)


def layout_in_points(layout: Mapping[str, Any], frame: ScanFrame) -> dict[str, Any]:
    """The OCR layout with its boxes and sizes in points of the upright frame (the text
    pages' unit, which the paragraphs and the fitting read)."""

    def scaled(box: Sequence[float]) -> list[float]:
        return [float(value) / frame.scale for value in box]

    blocks = [
        {
            **block,
            "bbox": scaled(block["bbox"]),
            "lines": [
                {
                    **line,
                    "bbox": scaled(line["bbox"]),
                    "spans": [
                        {**span, "size": float(span.get("size") or 0.0) / frame.scale}
                        for span in line.get("spans") or []
                    ],
                }
                for line in block.get("lines") or []
            ],
        }
        for block in layout.get("blocks") or []
    ]
    return {**layout, "width": frame.upright[0] / frame.scale, "height": frame.height, "blocks": blocks}


def upright_image(image: bytes, frame: ScanFrame) -> Image.Image:
    """The stored page image turned as the OCR turned it (RGB), at the upright frame's size."""
    with Image.open(io.BytesIO(image)) as opened:
        turned = opened.convert("RGB")
    if frame.rotation:
        turned = turned.rotate(frame.rotation, expand=True)
    if frame.skew:
        turned = turned.rotate(frame.skew, resample=Image.Resampling.BILINEAR, expand=True, fillcolor=(255, 255, 255))
    size = round(frame.upright[0]), round(frame.upright[1])
    return turned if turned.size == size else turned.resize(size, Image.Resampling.BILINEAR)


def cover_pad(box: Box) -> float:
    """How far past a line's box (in its own unit) its cover reaches."""
    return max(COVER_PAD * (box[3] - box[1]), 0.0)


def border_colour(image: Image.Image, region: Sequence[Box], lines: Sequence[Box]) -> tuple[float, float, float]:
    """The median colour (0..1 per channel) of the pixels along the border of the region's
    lines (`region`, pixels of `image`), past their covers, leaving out the pixels inside any
    line of the page (`lines`, each grown by its cover's reach): the paper around the
    region, not the ink of the lines above, below or beside it."""
    pixels = image.load()
    assert pixels is not None
    grown = [_grown(box, cover_pad(box) + 1) for box in lines]
    pad = max([cover_pad(box) for box in region], default=0.0) + COVER_PAD_MIN + 1
    x0, top, x1, bottom = _grown(
        (
            min(box[0] for box in region),
            min(box[1] for box in region),
            max(box[2] for box in region),
            max(box[3] for box in region),
        ),
        pad,
    )
    left, right = max(0, int(x0)), min(image.width - 1, math.ceil(x1))
    upper, lower = max(0, int(top)), min(image.height - 1, math.ceil(bottom))
    points = [(x, y) for x in range(left, right + 1, BORDER_STEP) for y in (upper, lower)]
    points += [(x, y) for y in range(upper, lower + 1, BORDER_STEP) for x in (left, right)]
    outside = [point for point in points if not any(_within(point, box) for box in grown)] or points
    samples: list[tuple[int, int, int]] = [pixels[point] for point in outside]  # type: ignore[misc]
    red, green, blue = (statistics.median_low(sample[channel] for sample in samples) / 255 for channel in range(3))
    return red, green, blue


def _grown(box: Box, by: float) -> Box:
    return box[0] - by, box[1] - by, box[2] + by, box[3] + by


def _within(point: tuple[int, int], box: Box) -> bool:
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def page_level(target: pikepdf.Page, frame: ScanFrame, paper: tuple[float, float, float]) -> None:
    """The page's content turned by the scan's skew about the crop box's centre (the scan
    level, as its OCR layout is), over a fill of the paper's colour (no white wedges at the
    corners). Nothing is done to a level scan."""
    if not frame.skew:
        return
    x0, y0, x1, y1 = (float(value) for value in target.obj.get("/CropBox", target.mediabox))
    centre_x, centre_y = (x0 + x1) / 2, (y0 + y1) / 2
    cosine, sine = math.cos(math.radians(frame.skew)), math.sin(math.radians(frame.skew))
    turn = (
        cosine,
        sine,
        -sine,
        cosine,
        centre_x - cosine * centre_x + sine * centre_y,
        centre_y - sine * centre_x - cosine * centre_y,
    )
    before = (
        f"q {paper[0]:.4f} {paper[1]:.4f} {paper[2]:.4f} rg {x0:.3f} {y0:.3f} {x1 - x0:.3f} {y1 - y0:.3f} re f Q\n"
        f"q {' '.join(f'{value:.6f}' for value in turn)} cm\n"
    )
    target.contents_add(before.encode(), prepend=True)
    target.contents_add(b"\nQ\n")


def paper_colour(image: bytes) -> tuple[float, float, float]:
    """The scan's paper: the median colour (0..1 per channel) of the page image reduced."""
    with Image.open(io.BytesIO(image)) as opened:
        reduced = opened.convert("RGB").reduce(8)
    channels = reduced.split()
    red, green, blue = (_histogram_median(channel.histogram()) / 255 for channel in channels)
    return red, green, blue


def _histogram_median(histogram: list[int]) -> int:
    """The lower median of an 8-bit channel from its histogram (what
    `statistics.median_low` gives of its pixels, without listing them)."""
    wanted, seen = (sum(histogram) - 1) // 2, 0
    for value, count in enumerate(histogram):
        seen += count
        if seen > wanted:
            return value
    return 0
