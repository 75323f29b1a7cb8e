"""Columns: a page's reading order from its geometry (docs/book-structure.md, "Pages in columns").

A page set in two or three columns is read column by column: the parts set across the
page (a title, the authors, an abstract, a wide figure or table) where they stand, and
between two of them each column top to bottom, left to right. A part across the page
between two runs of columns splits the flow there: the columns above it are read before
it, the columns below it after.

The columns are found where the text leaves a gutter: the text's box is cut into strips
across and rows down, and a strip at least `GUTTER_MIN` of the page wide that no line
crosses along `GUTTER_HEIGHT` of the text's height, and that lines cover at most
`GUTTER_COVER` as much as the median strip (a figure above a column leaves that column
free for a long stretch too, but its text covers the rest), is a gutter. The columns it
parts must be text set to the column's measure (lines at least `FULL_LINE` of the column
wide: justified prose, an index's leaders), of widths within `COLUMN_RATIO` of each other (a
margin of notes or headings beside the text is not a column) and each at least
`COLUMN_MIN` of the text's width. So a table's columns, a listing's aligned parts, or a
picture's labels on a one-column page do not make columns: such a page keeps its order.

A block lies in the column its middle is in, unless it crosses a gutter (from one column
into the next): then it is set across the page.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

Box = tuple[float, float, float, float]  # x0, top, x1, bottom


class LineBox(NamedTuple):
    """A line as the columns are found from: its box and how many words it holds."""

    x0: float
    top: float
    x1: float
    bottom: float
    words: int


GUTTER_MIN = 0.012  # of the page's width (7 points on a Letter page)
GUTTER_HEIGHT = 0.3  # of the text's height: how long a gutter runs free of any line
GUTTER_COVER = 0.5  # of the rows the page's text covers in the middle strip of its width, at most
FULL_LINE = 0.8  # of the column's width: a line set to the column's measure
FULL_SHARE = 0.15  # of a column's lines that are set to its measure, at least
FULL_LINES_MIN = 5  # lines set to the measure, at least, in each column
PROSE_WORDS = 5  # words in the median line set to a column's measure: prose (or an index)
COLUMN_MIN = 0.2  # of the text's width
COLUMN_RATIO = 1.8  # the widest column over the narrowest
_BINS = 300  # the text's width cut into this many strips to find the gutters
_ROWS = 200  # and its height into this many rows


@dataclass(frozen=True)
class Region:
    """A part of the page read as one: its blocks (indexes in the layout), in reading
    order. `column` is its column (0-based, left to right) or -1 for a part set across the
    page; `columns` how many columns the page is set in (1: none found)."""

    blocks: tuple[int, ...]
    column: int
    columns: int


@dataclass(frozen=True)
class _Column:
    x0: float
    x1: float


def page_regions(blocks: Sequence[Sequence[LineBox]], *, width: float) -> list[Region]:
    """The page's regions in reading order, from its blocks (each given as its lines'
    boxes, in the layout's order). A page without columns is one region, its blocks in
    the order given."""
    indexes = [index for index, lines in enumerate(blocks) if lines]
    columns = _columns_find([box for lines in blocks for box in lines], width=width)
    if len(columns) < 2:
        return [Region(blocks=tuple(indexes), column=0, columns=1)] if indexes else []
    boxes = {index: _union(blocks[index]) for index in indexes}
    across = sorted(
        (index for index in indexes if _crosses(boxes[index], columns)),
        key=lambda index: (boxes[index][1], boxes[index][0]),
    )
    cuts = [(boxes[index][1] + boxes[index][3]) / 2 for index in across]
    placed: dict[tuple[int, int], list[int]] = {}
    for index in indexes:
        if index in across:
            continue
        box = boxes[index]
        middle = (box[1] + box[3]) / 2
        segment = sum(1 for cut in cuts if cut < middle)
        placed.setdefault((segment, _column_of(box, columns)), []).append(index)
    regions: list[Region] = []
    for segment in range(len(across) + 1):
        for column in range(len(columns)):
            found = placed.get((segment, column))
            if found:
                found.sort(key=lambda index: (boxes[index][1], boxes[index][0]))
                regions.append(Region(blocks=tuple(found), column=column, columns=len(columns)))
        if segment < len(across):
            block = across[segment]
            if regions and regions[-1].column == -1:
                regions[-1] = Region(blocks=(*regions[-1].blocks, block), column=-1, columns=len(columns))
            else:
                regions.append(Region(blocks=(block,), column=-1, columns=len(columns)))
    return regions


def reading_order(blocks: Sequence[Sequence[LineBox]], *, width: float) -> list[int] | None:
    """The blocks' indexes in reading order when the page is set in columns; None when it
    is not (its order is left as it was)."""
    regions = page_regions(blocks, width=width)
    if not regions or regions[0].columns < 2:
        return None
    return [index for region in regions for index in region.blocks]


def _columns_find(lines: Sequence[LineBox], *, width: float) -> list[_Column]:
    """The page's columns, left to right; fewer than two when it has none."""
    if len(lines) < 2 * FULL_LINES_MIN or width <= 0:
        return []
    left = min(box[0] for box in lines)
    right = max(box[2] for box in lines)
    top = min(box[1] for box in lines)
    bottom = max(box[3] for box in lines)
    if right <= left or bottom <= top:
        return []
    step, pitch = (right - left) / _BINS, (bottom - top) / _ROWS
    taken = [[False] * _ROWS for _ in range(_BINS)]
    for x0, y0, x1, y1, _ in lines:
        rows = range(max(0, int((y0 - top) / pitch)), min(_ROWS - 1, int((y1 - top) / pitch)) + 1)
        for position in range(max(0, int((x0 - left) / step)), min(_BINS - 1, int((x1 - left) / step)) + 1):
            for row in rows:
                taken[position][row] = True
    strips = [
        (left + start * step, left + end * step, free / _ROWS)
        for start, end, free in _gutters(taken, step=step, width=width)
    ]
    # All the gutters found (three columns), else each alone, the widest first (a table's
    # or a picture's gaps beside the page's gutter).
    singles = sorted(([strip] for strip in strips), key=lambda chosen: chosen[0][0] - chosen[0][1])
    for chosen in [strips, *singles] if len(strips) > 1 else [strips]:
        columns = _columns_between([(start, end) for start, end, _ in chosen], lines)
        if len(columns) >= 2 and _columns_hold_text(columns, lines, text_width=right - left):
            return columns
    return []


def _columns_between(strips: Sequence[tuple[float, float]], lines: Sequence[LineBox]) -> list[_Column]:
    """The columns the gutters part: each the extent of the lines between two gutters'
    middles that cross neither (a column's lines may reach into the strip found free)."""
    middles = sorted((start + end) / 2 for start, end in strips)
    bounds = [float("-inf"), *middles, float("inf")]
    columns = []
    for low, high in pairwise(bounds):
        inside = [box for box in lines if box[0] >= low and box[2] <= high]
        if not inside:
            return []
        columns.append(_Column(x0=min(box[0] for box in inside), x1=max(box[2] for box in inside)))
    return columns


def _gutters(taken: Sequence[Sequence[bool]], *, step: float, width: float) -> list[tuple[int, int, int]]:
    """The strips (first bin, bin after the last, the rows it runs free) inside the text that no line crosses
    along at least GUTTER_HEIGHT of its height and that lines cover far less than the
    page's text does (GUTTER_COVER of the median strip), at least GUTTER_MIN of the page wide."""
    # A gutter is covered far less than the columns beside it (a figure above a column
    # leaves that column free for a long stretch too, but its text covers the rest).
    cover = [sum(column) for column in taken]
    level = statistics.median([value for value in cover if value] or [0])
    tall = [
        value <= GUTTER_COVER * level and _longest_free(column) >= GUTTER_HEIGHT * _ROWS
        for value, column in zip(cover, taken, strict=True)
    ]
    gutters: list[tuple[int, int, int]] = []
    position = 0
    while position < len(tall):
        if not tall[position]:
            position += 1
            continue
        start = position
        while position < len(tall) and tall[position]:
            position += 1
        if start == 0 or position == len(tall) or (position - start) * step < GUTTER_MIN * width:
            continue
        # The middle of the strip (a column's ragged edge aside) is free along one stretch.
        middle = range(start + (position - start) // 4, position - (position - start) // 4)
        shared = [all(not taken[bin_][row] for bin_ in middle) for row in range(_ROWS)]
        free = _longest_free([not free for free in shared])
        if free >= GUTTER_HEIGHT * _ROWS:
            gutters.append((start, position, free))
    return gutters


def _longest_free(rows: Sequence[bool]) -> int:
    longest = current = 0
    for taken in rows:
        current = 0 if taken else current + 1
        longest = max(longest, current)
    return longest


def _columns_hold_text(columns: Sequence[_Column], lines: Sequence[LineBox], *, text_width: float) -> bool:
    """Whether the columns are a page's columns: of like widths, each holding prose set to
    the column's measure (a table's columns, a list beside a paragraph are not)."""
    widths = [column.x1 - column.x0 for column in columns]
    if min(widths) < COLUMN_MIN * text_width or max(widths) > COLUMN_RATIO * min(widths):
        return False
    prose = 0
    for column in columns:
        inside = [box for box in lines if box[0] >= column.x0 - 1 and box[2] <= column.x1 + 1]
        if len(inside) < FULL_LINES_MIN:
            return False
        full = [box for box in inside if box[2] - box[0] >= FULL_LINE * (column.x1 - column.x0)]
        if (
            len(full) >= FULL_LINES_MIN
            and len(full) >= FULL_SHARE * len(inside)
            and statistics.median(box.words for box in full) >= PROSE_WORDS
        ):
            prose += 1
    return prose == len(columns)


def _crosses(box: Box, columns: Sequence[_Column]) -> bool:
    """Whether a block reaches from one column into the next, over the gutter between them."""
    return any(box[0] < before.x1 and box[2] > after.x0 for before, after in pairwise(columns))


def _column_of(box: Box, columns: Sequence[_Column]) -> int:
    middle = (box[0] + box[2]) / 2
    for index, column in enumerate(columns[:-1]):
        if middle < (column.x1 + columns[index + 1].x0) / 2:
            return index
    return len(columns) - 1


def _union(boxes: Sequence[LineBox]) -> Box:
    return (
        min(box[0] for box in boxes),
        min(box[1] for box in boxes),
        max(box[2] for box in boxes),
        max(box[3] for box in boxes),
    )
