"""The original-layout Pdf's text setting (docs/exports.md, "Fitting"): regions (a box and
the blocks set there), their boxes grown into the room around them, the translation fitted
to a region, and the margin mark of a page left as it was."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from reportlab.lib import colors
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import Flowable

from bookstructure.lines import PageLine
from exports.blocks import Block, Run
from exports.book import ExportBook
from exports.renderers._pdf_fonts import SourceFont, source_font
from exports.renderers._pdf_text import TextStyle, text_flowable

SIZE_FLOOR = 0.6  # the translation's size steps down to this share of the source's
SIZE_STEP = 0.25
SIZE_MIN = 4.0  # past the floor (in the grown box): smaller still, down to this
LEADING = 1.18  # a region's line spacing (a share of its size) when its source's is not known
LEADING_MAX = 1.6
# An OCR line's size is its ink's height (accents and descenders included), a little more
# than its type's: its pitch over that size understates the leading, and lines set at it
# touch. Such a region is set at least this far apart (its size steps down to fit).
LEADING_MIN_READ = 1.15
BOTTOM_MARGIN = 18.0  # a block grows down at most to this far above the page's bottom edge
MARK_SIZE = 7.0
MARK_COLOR = colors.HexColor("#8a1c1c")
_SPACE = re.compile(r"\s+")


@dataclass
class Region:
    """Where a translation is set: a box in layout space (points from the top-left), the
    source's size, the blocks (or the text) set there, the source's font (`font_of`: the
    translation is set in the face metric-compatible with it; None: the script fonts),
    and the source's line pitch and line height (`region_of`; 0: not known, LEADING)."""

    box: tuple[float, float, float, float]  # x0, top, x1, bottom
    size: float
    blocks: list[Block]
    free_below: float = 0.0
    free_above: float = math.inf  # how far its text may start above its box (`free_above`: a scan's)
    font: SourceFont | None = None
    leading: float = 0.0  # from one line's top to the next's, at `size`
    line_height: float = 0.0  # a line's box (its ink, about 0.9 of the size)
    align: str = "start"  # TextStyle.align: a table cell is aligned as its column is
    fixed: bool = False  # a table's cell: its box and free space are its cell's, never merged or grown
    column: int = 0  # the column of a page in columns its lines stand in (-1: across the page; `PageLine.column`)


def inside(box: tuple[float, float, float, float], outer: tuple[float, float, float, float]) -> bool:
    return (
        box[0] >= outer[0] - 0.5 and box[1] >= outer[1] - 0.5 and box[2] <= outer[2] + 0.5 and box[3] <= outer[3] + 0.5
    )


def union(lines: Sequence[PageLine]) -> tuple[float, float, float, float]:
    return (
        min(line.x0 for line in lines),
        min(line.top for line in lines),
        max(line.x1 for line in lines),
        max(line.bottom for line in lines),
    )


def size_of(lines: Sequence[PageLine]) -> float:
    sizes = sorted(line.size for line in lines if line.size > 0)
    return sizes[len(sizes) // 2] if sizes else 10.0


def font_of(lines: Sequence[PageLine]) -> SourceFont | None:
    """The font most of the lines' characters are set in (each line counted in its own
    font, `PageLine.font`), read as a kind and style (`source_font`); None when no line
    names its font (an OCR layout)."""
    counts: Counter[SourceFont] = Counter()
    for line in lines:
        font = source_font(line.font)
        if font is not None:
            counts[font] += len("".join(line.text.split()))
    return counts.most_common(1)[0][0] if counts else None


def pitch_of(lines: Sequence[PageLine]) -> float:
    """The distance from one line's top to the next's: the median over the lines that
    follow one another down a column (0.0 when there are none, a one-line paragraph)."""
    steps = sorted(
        after.top - before.top
        for before, after in pairwise(lines)
        if after.top >= before.bottom - 0.5 and after.top - before.top < 2 * max(before.height, after.height)
    )
    return steps[len(steps) // 2] if steps else 0.0


def region_of(lines: Sequence[PageLine], blocks: list[Block]) -> Region:
    """The region of a paragraph's lines (or of several paragraphs'): their box, and the
    source's size, font, line pitch and line height."""
    heights = sorted(line.height for line in lines)
    return Region(
        box=union(lines),
        size=size_of(lines),
        blocks=blocks,
        font=font_of(lines),
        leading=pitch_of(lines),
        line_height=heights[len(heights) // 2],
        column=lines[0].column,
    )


def _leading(region: Region) -> float:
    """The line spacing to set the region with, as a share of the size: the source's
    (between 1.0 and LEADING_MAX of its size; at least LEADING_MIN_READ where the size was
    read from the lines' ink, an OCR layout naming no font), else LEADING."""
    if region.leading <= 0 or region.size <= 0:
        return LEADING
    least = 1.0 if region.font is not None else LEADING_MIN_READ
    return min(max(region.leading / region.size, least), LEADING_MAX)


def _lead_in(region: Region) -> float:
    """The room a region's text starts above its box: the gap between two of the source's
    lines (a line set at the source's pitch takes its box and that gap, and reportlab
    puts the first baseline about a size below the top, where the source's lies about
    0.7 of it below its box's top). 0.0 when the line height is not known."""
    if region.line_height <= 0:
        return 0.0
    return min(max(0.0, region.size * _leading(region) - region.line_height), region.free_above)


def merged(regions: Sequence[Region]) -> list[Region]:
    """The regions, those whose boxes overlap joined into one (their blocks in order): a
    paragraph that ends inside a line the next one starts on (two layout blocks side by
    side on one baseline) shares its box with the next."""
    merged: list[Region] = []
    for region in regions:
        overlapping = None
        if not region.fixed:
            overlapping = next((other for other in merged if not other.fixed and _overlap(other.box, region.box)), None)
        if overlapping is None:
            merged.append(replace(region, blocks=list(region.blocks)))
            continue
        overlapping.box = _union_boxes(overlapping.box, region.box)
        overlapping.blocks += region.blocks
        overlapping.size = min(overlapping.size, region.size)
    return merged


def _overlap(first: tuple[float, float, float, float], second: tuple[float, float, float, float]) -> bool:
    return first[0] < second[2] and second[0] < first[2] and first[1] < second[3] - 1 and second[1] < first[3] - 1


def _union_boxes(
    first: tuple[float, float, float, float], second: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    return min(first[0], second[0]), min(first[1], second[1]), max(first[2], second[2]), max(first[3], second[3])


def widened(
    box: tuple[float, float, float, float], body: Sequence[PageLine], lines: Sequence[PageLine]
) -> tuple[float, float, float, float]:
    """The box out to its column's right edge (the rightmost body line replaced on the page
    that overlaps it across), short of any line beside it to its right (a running header's
    other half): a short line's translation is not squeezed into its width."""
    x0, top, x1, bottom = box
    right = max([x1, *(line.x1 for line in body if line.x0 < x1 and line.x1 > x0)])
    beside = [line.x0 - 2 for line in lines if line.top < bottom and line.bottom > top and line.x0 >= x1 - 0.5]
    return x0, top, max(x1, min([right, *beside])), bottom


def clear_of(box: tuple[float, float, float, float], kept: Sequence[PageLine]) -> tuple[float, float, float, float]:
    """The box cut to its tallest band, top to bottom, that no kept line (a line of the
    page that is not replaced) overlaps; the box as it is when none does, or when no band
    is free. A paragraph the structure read across a line it keeps (an API reference's
    `[Function]` label joined with its description, beside the function's kept name) is
    then not set over that line."""
    x0, top, x1, bottom = box
    blocking = sorted(
        (line.top, line.bottom)
        for line in kept
        if line.x0 < x1 and line.x1 > x0 and line.top < bottom - 0.5 and line.bottom > top + 0.5
    )
    if not blocking:
        return box
    bands: list[tuple[float, float]] = []
    edge = top
    for upper, lower in blocking:
        if upper > edge:
            bands.append((edge, upper))
        edge = max(edge, lower)
    if edge < bottom:
        bands.append((edge, bottom))
    if not bands:
        return box
    upper, lower = max(bands, key=lambda band: band[1] - band[0])
    return x0, upper, x1, lower


def free_below(region: Region, lines: Sequence[PageLine], page_bottom: float) -> float:
    """How far the region may grow down: to the next line below it (kept, or another
    region's) that overlaps it across, or to the page's bottom margin; a table's cell
    (`fixed`) keeps the room its table gave it. The text set below may start up to halfway
    into that space (`free_above`): past its floor, a region grows into its half."""
    if region.fixed:
        return region.free_below
    x0, _, x1, bottom = region.box
    below = [line.top for line in lines if line.top >= bottom - 0.5 and line.x0 < x1 and line.x1 > x0]
    return max(0.0, min([*below, page_bottom]) - bottom - 1.0)


def free_above(region: Region, lines: Sequence[PageLine]) -> float:
    """How far the region's text may start above its box: halfway to the line above it
    that overlaps it across (whose text may grow as far down, `free_below`); no limit when
    none."""
    x0, top, x1, _ = region.box
    above = [line.bottom for line in lines if line.bottom <= top + 0.5 and line.x0 < x1 and line.x1 > x0]
    return max(0.0, (top - max(above)) / 2) if above else math.inf


def _flowables(region: Region, size: float, book: ExportBook) -> list[Flowable]:
    style = TextStyle(
        size=size, leading=size * _leading(region), space_after=size * 0.4, source=region.font, align=region.align
    )
    made: list[Flowable] = []
    for block in region.blocks:
        runs: Sequence[Run] = block.runs
        each = style
        prefix = ""
        if block.kind == "heading":
            each = replace(style, bold=True)
        elif block.kind == "list_item":
            prefix = f"{block.number}." if block.ordered and block.number is not None else "\u2022"
        elif block.kind == "code":
            runs = [Run(block.text, code=True)]
        elif block.kind == "table":
            runs = [Run(" ".join(block.text.split()))]
        elif block.kind == "note":  # a footnote set where the source's was, its mark first
            prefix = block.mark
        flowable = text_flowable(runs, each, language=book.language, default_rtl=book.rtl, prefix=prefix)
        if flowable is not None:
            made.append(flowable)
    return made


def _height(flowables: Sequence[Flowable], width: float) -> float:
    total = 0.0
    for number, flowable in enumerate(flowables):
        _, height = flowable.wrap(width, 10_000)
        total += height + (flowable.getSpaceAfter() if number < len(flowables) - 1 else 0)
    return total


def fitted(region: Region, book: ExportBook) -> tuple[list[Flowable], float]:
    """The region's flowables at the largest size that fits (docs/exports.md, "Fitting"):
    from the source's size down to SIZE_FLOOR of it in the box; then, in the box grown down
    into the free space below it, from the source's size down to SIZE_MIN; what still does
    not fit is cut at its last whole line. The sizes are SIZE_STEP apart (the height of set
    text grows with its size): each size is set once, the search starts where the height
    at the source's size says the answer lies (set text's height goes about as its size
    squared) and halves from there."""
    x0, top, x1, bottom = region.box
    width = max(x1 - x0, 20.0)
    slack = min(2.0, region.free_below)  # a descender may pass the box's last line
    box_height = bottom - top + _lead_in(region)
    heights = (box_height + slack, box_height + max(slack, region.free_below / 2))
    floors = (region.size * SIZE_FLOOR, SIZE_MIN)
    set_at: dict[float, tuple[list[Flowable], float]] = {}

    def at(size: float) -> tuple[list[Flowable], float]:
        if size not in set_at:
            flowables = _flowables(region, size, book)
            set_at[size] = flowables, _height(flowables, width)
        return set_at[size]

    for room, floor in zip(heights, floors, strict=True):
        sizes = [region.size - step * SIZE_STEP for step in range(int((region.size - floor) / SIZE_STEP) + 1)]
        first, height = at(sizes[0])  # most paragraphs fit at the source's size
        if height <= room:
            return first, room
        found = _largest_fitting(sizes, room, height, at)
        if found is not None:
            return found, room
    flowables = _flowables(region, SIZE_MIN, book)
    kept: list[Flowable] = []
    left = heights[1]
    for flowable in flowables:
        _, height = flowable.wrap(width, left)
        if height <= left:
            kept.append(flowable)
            left -= height + flowable.getSpaceAfter()
            continue
        pieces = flowable.split(width, left)
        if pieces:
            kept.append(pieces[0])
        break
    return kept, heights[1]


def _largest_fitting(
    sizes: Sequence[float],
    room: float,
    first_height: float,
    at: Callable[[float], tuple[list[Flowable], float]],
) -> list[Flowable] | None:
    """The flowables at the largest of `sizes[1:]` (largest first) whose height fits `room`,
    or None; `sizes[0]` did not fit, at `first_height`. The first guess is the size at
    which the height would shrink to the room (as the square of the size); then its
    neighbour tells which way to go, and halving finds the rest."""
    low, high = 1, len(sizes) - 1  # sizes[low:high + 1] may hold the answer
    if low > high:
        return None
    guess = sizes[0] * math.sqrt(room / first_height)
    middle = min(high, max(low, math.ceil((sizes[0] - guess) / SIZE_STEP)))
    best: list[Flowable] | None = None
    probes = [middle, middle - 1 if at(sizes[middle])[1] <= room else middle + 1]
    while low <= high:
        middle = probes.pop(0) if probes else (low + high) // 2
        if not low <= middle <= high:
            continue
        flowables, height = at(sizes[middle])
        if height <= room:
            best, high = flowables, middle - 1
        else:
            low = middle + 1
    return best


def region_draw(
    canvas: Canvas, region: Region, book: ExportBook, to_pdf: Callable[[float, float], tuple[float, float]]
) -> None:
    flowables, _ = fitted(region, book)
    x0, top, x1, _ = region.box
    width = max(x1 - x0, 20.0)
    left, y = to_pdf(x0, top - _lead_in(region))
    for flowable in flowables:
        _, height = flowable.wrap(width, 10_000)
        y -= height
        flowable.drawOn(canvas, left, y)
        y -= flowable.getSpaceAfter()


def mark(canvas: Canvas, text: str, width: float, height: float) -> None:
    """A small mark in the page's top margin (the page itself untouched)."""
    flowable = text_flowable(
        [Run(_SPACE.sub(" ", text).strip())],
        TextStyle(size=MARK_SIZE, leading=MARK_SIZE * 1.2, italic=True, color=MARK_COLOR, space_after=0),
        language="en",
        default_rtl=False,
    )
    if flowable is None:
        return
    _, used = flowable.wrap(width - 24, 40)
    flowable.drawOn(canvas, 12, height - 4 - used)
