"""The original-layout Pdf's tables (docs/exports.md, "Tables in the original layout"): a
table translated cell by cell in its own grid.

A table paragraph paired with a table block (`_pdf_align.table_paired`) whose grid is the
table's (as many rows and columns; a header row the translation added to a table without
one is left out) has each translatable cell's lines removed and the cell's translation set
in its place: in its column's width, aligned as the column is, growing down at most to its
row's lowest line. A cell is kept as it is when it is empty, holds numbers only, is set in a
monospace font or translated as code, or its translation is its text. A table whose grid
is not the translation's is kept whole, and logged: its cells cannot be told apart.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import pairwise

from bookstructure.lines import LineRef, PageLine
from bookstructure.paragraphs import Paragraph
from bookstructure.tables import ALIGN, Cell, CellLine, Table, number_like
from exports.blocks import Block, Run, cell_text
from exports.renderers._pdf_fit import Region, region_of

logger = logging.getLogger(__name__)

CELL_MARGIN = 2.0  # points a cell's text keeps from the middle of the gutter beside it

Box = tuple[float, float, float, float]


def table_regions(
    paragraph: Paragraph, block: Block, lines: Mapping[LineRef, PageLine], *, page: int
) -> tuple[list[Region], list[PageLine]]:
    """The regions of a table's translated cells on `page` and the source lines (or, for a
    line poppler joined over several cells, the cell's part of it) they replace; none when
    the translation's grid is not the table's."""
    table = paragraph.table
    if table is None or not table.cells:
        return [], []
    translated = _grid(table, block)
    if translated is None:
        logger.info(
            "Page %s: a table of %sx%s cells translated as %sx%s; kept as it was",
            page,
            len(table.rows),
            table.columns,
            len(block.rows),
            block.columns,
        )
        return [], []
    # Each row's cells with the row of the translation they take: the table's rows, then
    # its header as the pages it goes on to repeat it (the header's translation).
    rows = [*((cells, index) for index, cells in enumerate(table.cells)), *((cells, 0) for cells in table.repeats)]
    pieces = [[_pieces(cell, lines) for cell in cells] for cells, _ in rows]
    spans = _column_spans(pieces, table.columns)
    aligns = [_column_align([part for row in pieces for part in row[column]]) for column in range(table.columns)]
    limits = _row_bottoms(pieces)
    regions: list[Region] = []
    removed: list[PageLine] = []
    for row_index, row in enumerate(pieces):
        cells, of = rows[row_index]
        for column, own in enumerate(row):
            cell = translated[of][column]
            source = table.rows[of][column]
            if not own or len(own) < len(cells[column]) or not _translatable(source, own, cell):
                continue  # kept: nothing to translate, or a cell partly on another page
            bold = all(line.bold for line in own)
            runs = tuple(replace(run, bold=run.bold or bold) for run in cell)
            regions.append(
                replace(
                    region_of(own, [Block(kind="paragraph", runs=runs)]),
                    box=_cell_box(own, spans[column], aligns[column]),
                    free_below=max(0.0, limits[row_index] - max(line.bottom for line in own)),
                    align=_STYLE_ALIGN[aligns[column]],
                    fixed=True,
                )
            )
            removed += own
    return regions, removed


def _grid(table: Table, block: Block) -> tuple[tuple[tuple[Run, ...], ...], ...] | None:
    """The translation's cells row by row when its grid is the table's, else None."""
    if block.kind != "table":
        return None
    rows = block.rows
    if block.header and not table.header and len(rows) == len(table.rows) + 1:
        rows = rows[1:]  # the translation named the columns of a table that had no header
    if len(rows) != len(table.rows) or block.columns != table.columns:
        return None
    return rows


def _pieces(cell: Cell, lines: Mapping[LineRef, PageLine]) -> list[PageLine]:
    """The cell's lines on this page, each cut to its words' part of it."""
    return [_part(lines[part.ref], part) for part in cell if part.ref in lines]


def _part(line: PageLine, part: CellLine) -> PageLine:
    if part.start <= 0 and part.end >= 1:
        return line
    width = line.x1 - line.x0
    return replace(line, x0=line.x0 + width * part.start, x1=line.x0 + width * part.end)


def _translatable(source: str, own: Sequence[PageLine], cell: tuple[Run, ...]) -> bool:
    text = cell_text(cell)
    written = [run for run in cell if run.text.strip()]
    return (
        bool(source.strip())
        and bool(text)
        and not number_like(source)
        and not all(line.mono for line in own)
        and not all(run.code for run in written)
        and " ".join(text.split()) != " ".join(source.split())
    )


def _column_spans(pieces: Sequence[Sequence[Sequence[PageLine]]], columns: int) -> list[tuple[float, float]]:
    """Each column's room across: its lines' extent, out to CELL_MARGIN short of the middle
    of the gutter on each side (the outer columns out as far as the narrowest gutter lets
    the inner ones)."""
    extents: list[tuple[float, float] | None] = []
    for column in range(columns):
        own = [line for row in pieces for line in row[column]]
        extents.append((min(line.x0 for line in own), max(line.x1 for line in own)) if own else None)
    present = [extent for extent in extents if extent is not None]
    outer = min(
        (max(0.0, (after[0] - before[1]) / 2 - CELL_MARGIN) for before, after in pairwise(present)),
        default=0.0,
    )
    spans: list[tuple[float, float]] = []
    for column, extent in enumerate(extents):
        if extent is None:
            spans.append((0.0, 0.0))
            continue
        x0, x1 = extent
        before = next((other for other in reversed(extents[:column]) if other is not None), None)
        after = next((other for other in extents[column + 1 :] if other is not None), None)
        left = (before[1] + x0) / 2 + CELL_MARGIN if before else x0 - outer
        right = (x1 + after[0]) / 2 - CELL_MARGIN if after else x1 + outer
        spans.append((min(x0, left), max(x1, right)))
    return spans


def _column_align(own: Sequence[PageLine]) -> str:
    """How a column's cells stand in it, "left", "right" or "centre": the edge most of its
    lines share (within ALIGN of their height), left when they tie."""
    if len(own) < 2:
        return "left"
    tolerance = ALIGN * statistics.median(line.height for line in own)
    best, found = 0, "left"
    for name, edges in (
        ("left", [line.x0 for line in own]),
        ("right", [line.x1 for line in own]),
        ("centre", [(line.x0 + line.x1) / 2 for line in own]),
    ):
        shared = max(sum(1 for value in edges if start <= value <= start + tolerance) for start in edges)
        if shared > best:
            best, found = shared, name
    return found


_STYLE_ALIGN = {"left": "start", "right": "end", "centre": "center"}


def _cell_box(own: Sequence[PageLine], span: tuple[float, float], align: str) -> Box:
    """The cell's box: its lines' height; across, from where its text starts to its
    column's far side (a left-aligned column), from its column's near side to where its
    text ends (right), or about its centre as far as the column allows each way (centre)."""
    x0, top = min(line.x0 for line in own), min(line.top for line in own)
    x1, bottom = max(line.x1 for line in own), max(line.bottom for line in own)
    if align == "left":
        return x0, top, max(x1, span[1]), bottom
    if align == "right":
        return min(x0, span[0]), top, x1, bottom
    centre = (x0 + x1) / 2
    half = max((x1 - x0) / 2, min(centre - span[0], span[1] - centre))
    return centre - half, top, centre + half, bottom


def _row_bottoms(pieces: Sequence[Sequence[Sequence[PageLine]]]) -> list[float]:
    """How far down each row's cells may grow: to the row's lowest line (the room another
    cell's wrapped lines leave), never into the space between rows, where a ruled table
    draws its rules."""
    return [max((line.bottom for own in row for line in own), default=0.0) for row in pieces]
