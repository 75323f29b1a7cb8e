"""Tables: the tables of a page found in its layout by the alignment of their text.

A table without ruling lines is found as pdfplumber's "text" strategy and Camelot's stream
mode find one (docs/book-structure.md, "Tables"): poppler gives each cell its own line
(or block), so a table is a run of text rows, close together, whose lines stand in at
least two columns separated by gutters no line crosses. The steps, on one page:

1. **Bands.** The page's lines are grouped into bands of lines at the same height
   (overlapping by `BAND_OVERLAP` of the smaller line); bands at most `ROW_GAP` line
   heights apart make a run. A one-line band that crosses two lines of the nearest band of
   several lines (a prose line between two tables) cuts a run; each stretch with a band of
   several lines is a candidate.
2. **Columns.** The gutters are the x-ranges (at least `MIN_GUTTER` line heights wide)
   that none of the candidate's lines covers; the columns lie between them. A line that
   alone covers a gutter (poppler joins a header's words into one line when they stand
   close: `Package Version Size`) spans columns and is split at its words, placed by
   their share of the line's characters; at most a third of the rows may have one. A
   one-line band just above the rows whose few words fall into the columns is such a
   header too.
3. **Rows.** A band with a cell in the first column and another anchors a row. The other
   bands continue wrapped cells: bands stacked one over another (at most `STACK_GAP` line
   heights apart, in the same column) make a chain, and a chain joins the row whose
   anchor stands within it (cells aligned at the middle), else the row above when it sits
   right under it (aligned at the top), else the row below (aligned at the bottom). A
   cell that wraps over several lines stays one cell.
4. **Refusals.** A candidate is a table only with at least `MIN_ROWS` rows, two cells in
   every row, cells in more than half of the rows in every column, and most lines of each
   column sharing their left edge, right edge or centre (`ALIGN`, `ALIGNED_SHARE`: words
   of justified prose that happen to stand apart do not line up); and it is not
   - a listing: every line in a monospace font (code keeps its layout as a code block);
   - an index or a table of contents: a dot leader (`. . . .`) in a cell, or, without a
     header, a last column of page numbers that never decreases;
   - a list: a first column of bullets or item numbers (`•`, `1.`, `a)`, `2.1`);
   - prose in columns: two or more columns whose median line holds `PROSE_WORDS` words;
   - two columns without a header: a definition list, a hanging-indent list, an API
     reference's `name ... [Function]` lines read the same; two columns are a table only
     under a header row.
5. **Header.** The first row is a header when its cells are bold and no other row's
   are, or when a column of numbers stands under a cell that is not one.

Each table gives its lines (`refs`, left out of the paragraphs), its top (to place it
among them), its cells' texts (`rows`) and each cell's lines (`cells`, parallel to `rows`:
what the original-layout Pdf replaces cell by cell); `Table.markdown()` writes it as a GFM
pipe table.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from bookstructure.lines import Layout, LineRef, PageLine, page_lines

ROW_GAP = 1.5  # line heights between two rows of a table, at most
STACK_GAP = 0.5  # line heights between two lines of one wrapped cell, at most
MIN_GUTTER = 0.3  # line heights: the narrowest gap between two columns
PROSE_WORDS = 7  # words in a column's median line that make it prose
BAND_OVERLAP = 0.5  # of the smaller line's height, for two lines to stand in one band
MIN_ROWS = 3  # a header and two rows, or three rows (pdfplumber's three words to a column)
ALIGN = 0.5  # line heights: how far the aligned edges of a column's cells may differ
ALIGNED_SHARE = 2 / 3  # of a column's cells that share their left, right or centre

_DOT_LEADER = re.compile(r"(?:\.\s?){4,}")
_LIST_MARKER = re.compile(
    r"^(?:[\u2022\u25e6\u25aa\u2023\u25cf\u25cb\u25a0\u25a1\u2013*-]|\(?[0-9a-zA-Z]{1,3}[.)]|[0-9]+(?:\.[0-9]+)+\.?)$"
)
_NUMBER = re.compile(r"^[-+\u2212]?[$\u20ac\u00a3]?\d[\d.,\u00a0 ]*(?:%|[kMGT]i?B?|[a-zA-Z]{0,3})?$")
_PAGE_NUMBER = re.compile(r"^\d{1,4}$")


@dataclass(frozen=True)
class CellLine:
    """A line of a cell: its ref and the share of the line's width that the cell's words
    take (`start` to `end`, 0 to 1). A line is all its cell's unless poppler joined the
    cells of a row into one line (a header whose words stand close): each cell then has
    its words' part, measured by their share of the line's characters."""

    ref: LineRef
    start: float = 0.0
    end: float = 1.0


Cell = tuple[CellLine, ...]


@dataclass(frozen=True)
class Table:
    """A table of a page: its layout lines, its top edge, its cells' texts row by row (the
    first row its header when `header`) and their lines (`cells`, parallel to `rows`)."""

    refs: frozenset[LineRef]
    top: float
    rows: tuple[tuple[str, ...], ...]
    header: bool
    cells: tuple[tuple[Cell, ...], ...] = ()
    repeats: tuple[tuple[Cell, ...], ...] = ()  # its header row's cells as each next page repeats it
    region: int = 0  # the part of its page it stands in (a column of a page in columns: `PageLine.region`)

    @property
    def place(self) -> tuple[int, float]:
        """Where it stands in its page's reading order."""
        return self.region, self.top

    @property
    def columns(self) -> int:
        return max(len(row) for row in self.rows)

    def continued_by(self, rest: Table) -> Table:
        """This table with the rows of `rest`, its part set on the next page, after its own;
        the header row the next page repeats is left out."""
        repeated = self.header and rest.rows[0] == self.rows[0]
        rows = rest.rows[1:] if repeated else rest.rows
        cells = rest.cells[1:] if repeated else rest.cells
        return Table(
            refs=self.refs | rest.refs,
            top=self.top,
            rows=self.rows + rows,
            header=self.header,
            cells=self.cells + cells,
            repeats=self.repeats + (rest.cells[:1] if repeated else ()) + rest.repeats,
            region=self.region,
        )

    def moved(self, pages: int) -> Table:
        """The table with its lines' page numbers moved by `pages` (a window's positions
        made book pages)."""

        def line_moved(line: CellLine) -> CellLine:
            return replace(line, ref=replace(line.ref, page=line.ref.page + pages))

        def rows_moved(rows: tuple[tuple[Cell, ...], ...]) -> tuple[tuple[Cell, ...], ...]:
            return tuple(tuple(tuple(line_moved(line) for line in cell) for cell in row) for row in rows)

        return replace(
            self,
            refs=frozenset(replace(ref, page=ref.page + pages) for ref in self.refs),
            cells=rows_moved(self.cells),
            repeats=rows_moved(self.repeats),
        )

    def markdown(self) -> str:
        """The table as a GFM pipe table; a row of blank cells heads a table without a
        header (GFM requires one)."""
        width = max(len(row) for row in self.rows)
        rows = [[_cell_markdown(cell) for cell in row] + [""] * (width - len(row)) for row in self.rows]
        head, body = (rows[0], rows[1:]) if self.header else ([""] * width, rows)
        lines = [_row_markdown(head), _row_markdown(["---"] * width), *(_row_markdown(row) for row in body)]
        return "\n".join(lines)


def number_like(text: str) -> bool:
    """Whether a cell holds numbers only (`1.79`, `4,5 1.16`, `64K`, `12%`): nothing to
    translate."""
    words = text.split()
    return bool(words) and all(_NUMBER.match(word) for word in words)


def table_continues(table: Table, following: Table) -> bool:
    """Whether `following`, the first thing on the page after the one `table` ends, is the
    rest of it: as many columns, and a header only where it repeats the table's own."""
    if following.columns != table.columns:
        return False
    return not following.header or (table.header and following.rows[0] == table.rows[0])


def tables_find(layout: Layout, *, page: int) -> list[Table]:
    """The tables of one page of a layout, top to bottom (`page` names the page in the
    lines' refs, as `page_lines` does)."""
    lines = page_lines(layout, page=page)
    if not lines:
        return []
    fonts = _line_fonts(layout)
    tables: list[Table] = []
    # A page in columns: each column (and each part set across the page) on its own.
    regions: dict[int, list[PageLine]] = {}
    for line in lines:
        regions.setdefault(line.region, []).append(line)
    for region, region_lines in sorted(regions.items()):
        for run in _candidate_runs(_bands(region_lines)):
            table = _table_read(run, fonts=fonts)
            if table is not None:
                tables.append(replace(table, region=region))
    return tables


# --- Bands and runs ---------------------------------------------------------------------------


@dataclass
class _Band:
    lines: list[PageLine]
    top: float
    bottom: float


def _bands(lines: Sequence[PageLine]) -> list[_Band]:
    bands: list[_Band] = []
    for line in sorted(lines, key=lambda item: (item.top, item.x0)):
        current = bands[-1] if bands else None
        overlap = min(line.bottom, current.bottom) - max(line.top, current.top) if current else 0.0
        if current is not None and overlap >= BAND_OVERLAP * min(line.height, current.bottom - current.top):
            current.lines.append(line)
            current.bottom = max(current.bottom, line.bottom)
        else:
            bands.append(_Band(lines=[line], top=line.top, bottom=line.bottom))
    for band in bands:
        band.lines.sort(key=lambda item: item.x0)
    return bands


def _candidate_runs(bands: list[_Band]) -> list[list[_Band]]:
    """Runs of close bands, cut at every one-line band that crosses the lines of the
    nearest band of several lines (a prose line between two tables); each stretch with a
    band of several lines is a candidate, with the band just before and just after it
    (a header read as one line, a wrapped cell's last line: `_edge_pieces` decides)."""
    runs: list[list[_Band]] = []
    current: list[_Band] = []
    for band in bands:
        if current and band.top - current[-1].bottom > ROW_GAP * _height(current[-1].lines + band.lines):
            runs.append(current)
            current = []
        current.append(band)
    if current:
        runs.append(current)
    candidates: list[list[_Band]] = []
    for run in runs:
        multi = [index for index, band in enumerate(run) if len(band.lines) >= 2]
        if not multi:
            continue
        breakers = [
            index for index, band in enumerate(run) if len(band.lines) == 1 and _crosses(band, run, multi, index)
        ]
        cuts = [-1, *breakers, len(run)]
        for start, end in pairwise(cuts):
            if any(start < index < end for index in multi):
                candidates.append(run[max(start, 0) : min(end + 1, len(run))])
    return candidates


def _crosses(band: _Band, run: list[_Band], multi: list[int], index: int) -> bool:
    nearest = run[min(multi, key=lambda other: abs(other - index))]
    line = band.lines[0]
    return sum(1 for other in nearest.lines if other.x1 > line.x0 and other.x0 < line.x1) >= 2


# --- Columns and cells --------------------------------------------------------------------------


@dataclass
class _Piece:
    """A line, or the part of a spanning line (`start` to `end` of its width), in one
    column of one band."""

    line: PageLine
    column: int
    text: str
    start: float = 0.0
    end: float = 1.0


@dataclass
class _Row:
    bands: list[int]
    pieces: list[_Piece] = field(default_factory=list)
    continuation: bool = False

    def columns(self) -> set[int]:
        return {piece.column for piece in self.pieces}


def _table_read(run: list[_Band], *, fonts: Mapping[tuple[int, int], tuple[bool, bool]]) -> Table | None:
    multi = [index for index, band in enumerate(run) if len(band.lines) >= 2]
    core = run[multi[0] : multi[-1] + 1]
    core_lines = [line for band in core for line in band.lines]
    height = _height(core_lines)
    spanning = _spanning_lines(core_lines, height=height)
    if len(spanning) > max(1, len(core) // 3):
        return None
    columns = _columns([line for line in core_lines if line not in spanning], height=height)
    if len(columns) < 2:
        return None
    band_pieces: list[list[_Piece]] = []
    for band in core:
        pieces: list[_Piece] = []
        for line in band.lines:
            placed = _place(line, columns, spanning=line in spanning)
            if placed is None:
                return None
            pieces.extend(placed)
        band_pieces.append(pieces)
    above = _header_pieces(run[: multi[0]], columns, height=height)
    below = _trailing_pieces(run[multi[-1] + 1 :], columns)
    band_pieces = [*([above] if above else []), *band_pieces, *below]
    edges = ({0} if above else set()) | set(range(len(band_pieces) - len(below), len(band_pieces)))
    # an edge band that joins no row (prose above or below the table) stays outside it
    rows = [
        row for row in _rows(band_pieces, height=height) if not (set(row.bands) <= edges and len(row.columns()) < 2)
    ]
    return _table_accept(rows, columns, fonts=fonts)


def _header_pieces(bands: Sequence[_Band], columns: Sequence[tuple[float, float]], *, height: float) -> list[_Piece]:
    """The one-line band just above the rows, when it is a header poppler read as one
    line (its few words fall into the columns); nothing otherwise."""
    if not bands or len(bands[-1].lines) != 1:
        return []
    line = bands[-1].lines[0]
    if line.x0 < columns[0][0] - height or len(line.text.split()) > 2 * len(columns):
        return []
    return _split(line, columns) or []


def _trailing_pieces(bands: Sequence[_Band], columns: Sequence[tuple[float, float]]) -> list[list[_Piece]]:
    """The one-line bands just below the rows that stand within one column (not the
    first): the last lines of a wrapped cell, if `_rows` finds them stacked under it."""
    trailing: list[list[_Piece]] = []
    for band in bands:
        line = band.lines[0]
        column = _column_of((line.x0 + line.x1) / 2, columns)
        if len(band.lines) != 1 or not column or line.x0 < columns[column][0] - 0.5:
            break
        if column + 1 < len(columns) and line.x1 >= columns[column + 1][0]:
            break
        trailing.append([_Piece(line=line, column=column, text=line.text)])
    return trailing


def _spanning_lines(lines: list[PageLine], *, height: float) -> list[PageLine]:
    """Lines that alone cover a gutter the other lines leave open."""
    gutters = len(_gutters(lines, height=height))
    return [
        line
        for line in lines
        if len(_gutters([other for other in lines if other is not line], height=height)) > gutters
        and len(line.text.split()) >= 2
    ]


def _gutters(lines: Iterable[PageLine], *, height: float) -> list[tuple[float, float]]:
    spans = sorted((line.x0, line.x1) for line in lines)
    if not spans:
        return []
    gutters: list[tuple[float, float]] = []
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= MIN_GUTTER * height:
            gutters.append((reach, x0))
        reach = max(reach, x1)
    return gutters


def _columns(lines: list[PageLine], *, height: float) -> list[tuple[float, float]]:
    if not lines:
        return []
    left = min(line.x0 for line in lines)
    right = max(line.x1 for line in lines)
    edges = [left]
    for start, end in _gutters(lines, height=height):
        edges.extend((start, end))
    edges.append(right)
    return [(edges[index], edges[index + 1]) for index in range(0, len(edges), 2)]


def _column_of(x: float, columns: Sequence[tuple[float, float]]) -> int | None:
    for index, (start, end) in enumerate(columns):
        if start - 0.5 <= x <= end + 0.5:
            return index
    return None


def _place(line: PageLine, columns: Sequence[tuple[float, float]], *, spanning: bool) -> list[_Piece] | None:
    """The line in its column, or a spanning line split at its words into the columns its
    words fall in (None when a word falls in a gutter or outside the columns)."""
    if not spanning:
        column = _column_of((line.x0 + line.x1) / 2, columns)
        return None if column is None else [_Piece(line=line, column=column, text=line.text)]
    return _split(line, columns)


def _split(line: PageLine, columns: Sequence[tuple[float, float]]) -> list[_Piece] | None:
    """The line's words by column, each piece with its words' share of the line (by
    characters)."""
    length = max(len(line.text), 1)
    step = (line.x1 - line.x0) / length
    pieces: list[_Piece] = []
    spans: list[list[int]] = []  # each piece's first and last character
    for match in re.finditer(r"\S+", line.text):
        centre = line.x0 + step * (match.start() + match.end()) / 2
        column = _column_of(centre, columns)
        if column is None:
            return None
        if pieces and pieces[-1].column == column:
            pieces[-1].text = f"{pieces[-1].text} {match.group()}"
            spans[-1][1] = match.end()
        elif pieces and pieces[-1].column > column:
            return None
        else:
            pieces.append(_Piece(line=line, column=column, text=match.group()))
            spans.append([match.start(), match.end()])
    for piece, (first, last) in zip(pieces, spans, strict=True):
        piece.start, piece.end = first / length, last / length
    return pieces if len(pieces) >= 2 else None


def _rows(band_pieces: list[list[_Piece]], *, height: float) -> list[_Row]:
    """Bands into rows. A band with a cell in the first column and another anchors a row;
    the other bands continue wrapped cells: those stacked one over another make a chain,
    and a chain joins the row whose anchor stands within it (a row aligned at its middle),
    else the row above it when it sits right under it (aligned at the top), else the row
    below (aligned at the bottom), else it is a row of its own."""
    rows: list[_Row] = []
    chains: list[_Row] = []
    for index, pieces in enumerate(band_pieces):
        columns = {piece.column for piece in pieces}
        if 0 in columns and len(columns) >= 2:
            rows.append(_Row(bands=[index], pieces=list(pieces)))
        elif chains and _stacked(chains[-1].pieces, pieces, height=height):
            chains[-1].bands.append(index)
            chains[-1].pieces.extend(pieces)
        else:
            chains.append(_Row(bands=[index], pieces=list(pieces), continuation=True))
    for chain in chains:
        top = min(piece.line.top for piece in chain.pieces)
        bottom = max(piece.line.bottom for piece in chain.pieces)
        inside = [row for row in rows if top <= _middle(row) <= bottom]
        above = [row for row in rows if row.bands[0] < chain.bands[0]]
        below = [row for row in rows if row.bands[0] > chain.bands[-1]]
        if inside:
            host = inside[0]
        elif above and _stacked(above[-1].pieces, chain.pieces, height=height):
            host = above[-1]
        elif below and _stacked(chain.pieces, below[0].pieces, height=height):
            host = below[0]
        else:
            rows.append(chain)
            continue
        host.bands.extend(chain.bands)
        host.pieces.extend(chain.pieces)
    return sorted(rows, key=lambda row: min(row.bands))


def _middle(row: _Row) -> float:
    return statistics.median((piece.line.top + piece.line.bottom) / 2 for piece in row.pieces)


def _stacked(upper: Sequence[_Piece], lower: Sequence[_Piece], *, height: float) -> bool:
    """Every piece of one side sits right under (or over) a piece of the same column."""
    lower_columns = {piece.column for piece in lower}
    upper_columns = {piece.column for piece in upper}
    shared = lower_columns & upper_columns
    if not shared or not (lower_columns <= upper_columns or upper_columns <= lower_columns):
        return False
    for column in shared:
        above = max((piece.line.bottom for piece in upper if piece.column == column), default=None)
        below = min((piece.line.top for piece in lower if piece.column == column), default=None)
        if above is None or below is None or below - above > STACK_GAP * height:
            return False
    return True


# --- Deciding -------------------------------------------------------------------------------------


def _table_accept(
    rows: list[_Row], columns: Sequence[tuple[float, float]], *, fonts: Mapping[tuple[int, int], tuple[bool, bool]]
) -> Table | None:
    width = len(columns)
    grid = [_row_cells(row, width) for row in rows]
    if len(grid) < MIN_ROWS or any(sum(1 for cell in cells if cell) < 2 for cells in grid):
        return None
    if any(sum(1 for cells in grid if cells[column]) * 2 <= len(grid) for column in range(width)):
        return None
    pieces = [piece for row in rows for piece in row.pieces]
    if not all(_aligned([piece for piece in pieces if piece.column == column]) for column in range(width)):
        return None  # words that happen to stand apart (justified prose), not columns
    if all(fonts.get((piece.line.ref.block, piece.line.ref.line), (False, False))[1] for piece in pieces):
        return None  # a listing: code keeps its own layout
    if any(_DOT_LEADER.search(cell) for cells in grid for cell in cells):
        return None  # an index or a table of contents
    if all(not cells[0] or _LIST_MARKER.match(cells[0]) for cells in grid):
        return None  # a list: bullets or item numbers in front of its items
    if sum(1 for column in range(width) if _column_words(rows, column) >= PROSE_WORDS) >= 2:
        return None  # prose set in columns
    header = _has_header(rows, grid, fonts=fonts)
    if width == 2 and not header:
        return None  # a definition list, a hanging-indent list, an API reference's lines
    if not header and _page_numbers(grid):
        return None  # a table of contents
    return Table(
        refs=frozenset(piece.line.ref for piece in pieces),
        top=min(piece.line.top for piece in pieces),
        rows=tuple(tuple(cells) for cells in grid),
        header=header,
        cells=tuple(_row_lines(row, width) for row in rows),
    )


def _aligned(pieces: Sequence[_Piece]) -> bool:
    """Most of a column's lines share their left edge, right edge or centre (a line
    split across columns has no edges of its own and is left out)."""
    lines = list({id(piece.line): piece.line for piece in pieces if piece.text == piece.line.text}.values())
    if len(lines) < 2:
        return True
    tolerance = ALIGN * _height(lines)
    for edge in (
        [line.x0 for line in lines],
        [line.x1 for line in lines],
        [(line.x0 + line.x1) / 2 for line in lines],
    ):
        ordered = sorted(edge)
        best = max(sum(1 for value in ordered if start <= value <= start + tolerance) for start in ordered)
        if best >= ALIGNED_SHARE * len(lines):
            return True
    return False


def _cell_pieces(row: _Row, column: int) -> list[_Piece]:
    return sorted(
        (piece for piece in row.pieces if piece.column == column),
        key=lambda piece: (round(piece.line.top, 1), piece.line.x0),
    )


def _row_cells(row: _Row, width: int) -> list[str]:
    return [" ".join(piece.text for piece in _cell_pieces(row, column)).strip() for column in range(width)]


def _row_lines(row: _Row, width: int) -> tuple[Cell, ...]:
    return tuple(
        tuple(CellLine(ref=piece.line.ref, start=piece.start, end=piece.end) for piece in _cell_pieces(row, column))
        for column in range(width)
    )


def _column_words(rows: Sequence[_Row], column: int) -> float:
    counts = [len(piece.text.split()) for row in rows for piece in row.pieces if piece.column == column]
    return statistics.median(counts) if counts else 0.0


def _has_header(
    rows: Sequence[_Row], grid: Sequence[Sequence[str]], *, fonts: Mapping[tuple[int, int], tuple[bool, bool]]
) -> bool:
    def bold(row: _Row) -> bool:
        return all(fonts.get((piece.line.ref.block, piece.line.ref.line), (False, False))[0] for piece in row.pieces)

    if bold(rows[0]) and not any(bold(row) for row in rows[1:]):
        return True
    for column in range(len(grid[0])):
        body = [cells[column] for cells in grid[1:] if cells[column]]
        head = grid[0][column]
        numbers = len(body) >= 2 and all(_NUMBER.match(cell) for cell in body)
        if head and numbers and not _NUMBER.match(head):
            return True
    return False


def _page_numbers(grid: Sequence[Sequence[str]]) -> bool:
    last = [cells[-1] for cells in grid]
    if not all(_PAGE_NUMBER.match(cell) for cell in last):
        return False
    numbers = [int(cell) for cell in last]
    return all(after >= before for before, after in pairwise(numbers))


# --- Reading the layout ---------------------------------------------------------------------------


def _line_fonts(layout: Layout) -> dict[tuple[int, int], tuple[bool, bool]]:
    """Per line (block and line index): (bold, mono), each true when every span of the
    line is."""
    fonts: dict[tuple[int, int], tuple[bool, bool]] = {}
    for block_index, block in enumerate(layout.get("blocks") or []):
        for line_index, line in enumerate(block.get("lines") or []):
            spans: Sequence[Mapping[str, Any]] = [
                span for span in line.get("spans") or [] if str(span.get("text", "")).strip()
            ]
            fonts[block_index, line_index] = (
                bool(spans) and all(span.get("bold") for span in spans),
                bool(spans) and all(span.get("mono") for span in spans),
            )
    return fonts


def _height(lines: Sequence[PageLine]) -> float:
    return max(statistics.median(line.height for line in lines), 1.0) if lines else 1.0


def _cell_markdown(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|")


def _row_markdown(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
