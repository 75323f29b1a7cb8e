"""Markdown to blocks: the one parser every renderer shares (markdown-it-py, CommonMark
with GFM pipe tables).

A page's translation becomes a list of blocks — headings, paragraphs, list items, block
quotes, code, rules, tables — each carrying inline runs with bold/italic/code flags (a
table: rows of cells, each cell its runs). Renderers lay blocks out in their own format
(python-docx paragraphs and tables, reportlab flowables, XHTML for EPUB); the HTML
renderer may use markdown-it's own HTML output instead.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

_parser = MarkdownIt("commonmark", {"html": False}).enable("table")

Cell = tuple["Run", ...]


@dataclass(frozen=True)
class Run:
    """A run of text with its emphasis: part of a block, or all of a line the PDF sets itself
    (a title, a page marker, a notice)."""

    text: str
    bold: bool = False
    italic: bool = False
    code: bool = False


@dataclass(frozen=True)
class Block:
    kind: str  # "heading", "paragraph", "list_item", "quote", "code", "rule", "table"
    runs: tuple[Run, ...] = ()
    level: int = 0  # heading level 1-6; list nesting depth (1-based) for list items
    ordered: bool = False  # list items: numbered
    number: int | None = None  # list items: the item's number when ordered
    rows: tuple[tuple[Cell, ...], ...] = ()  # tables: every row has one cell per column
    header: bool = False  # tables: the first row is the header row
    align: tuple[str, ...] = ()  # tables: per column "left", "center", "right" or "" (as written)

    @property
    def text(self) -> str:
        if self.kind == "table":
            return "\n".join(" ".join(cell_text(cell) for cell in row) for row in self.rows)
        return "".join(run.text for run in self.runs)

    @property
    def columns(self) -> int:
        return len(self.rows[0]) if self.rows else 0


def cell_text(cell: Cell) -> str:
    return "".join(run.text for run in cell).strip()


_ALIGNMENTS = {"text-align:left": "left", "text-align:center": "center", "text-align:right": "right"}


@dataclass
class _Table:
    """A table being read: its rows so far, the columns' alignment, whether a head came."""

    rows: list[list[Cell]] = field(default_factory=list)
    align: list[str] = field(default_factory=list)
    header: bool = False

    def block(self) -> Block:
        """The table as a block; a header row with nothing in it (a table without
        headings, written as GFM must have one) is left out."""
        rows = self.rows
        header = self.header
        if header and rows and not any(cell_text(cell) for cell in rows[0]):
            rows, header = rows[1:], False
        width = max((len(row) for row in rows), default=0)
        padded = tuple(tuple(row) + ((),) * (width - len(row)) for row in rows)
        align = tuple(self.align[:width]) + ("",) * (width - len(self.align))
        return Block("table", rows=padded, header=header, align=align)


@dataclass
class _State:
    blocks: list[Block] = field(default_factory=list)
    lists: list[list[int | bool]] = field(default_factory=list)  # [ordered, next number]
    quote: int = 0
    table: _Table | None = None


def _runs(inline: Token) -> tuple[Run, ...]:
    runs: list[Run] = []
    bold = italic = False
    for child in inline.children or []:
        if child.type == "strong_open":
            bold = True
        elif child.type == "strong_close":
            bold = False
        elif child.type == "em_open":
            italic = True
        elif child.type == "em_close":
            italic = False
        elif child.type == "text":
            runs.append(Run(child.content, bold=bold, italic=italic))
        elif child.type == "code_inline":
            runs.append(Run(child.content, bold=bold, italic=italic, code=True))
        elif child.type in ("softbreak", "hardbreak"):
            runs.append(Run("\n" if child.type == "hardbreak" else " ", bold=bold, italic=italic))
        elif child.type == "image":
            runs.append(Run(child.content or "", bold=bold, italic=italic))
    merged: list[Run] = []
    for run in runs:
        if merged and (merged[-1].bold, merged[-1].italic, merged[-1].code) == (run.bold, run.italic, run.code):
            merged[-1] = Run(merged[-1].text + run.text, run.bold, run.italic, run.code)
        else:
            merged.append(run)
    return tuple(merged)


def blocks_of(markdown: str) -> list[Block]:
    """The blocks of a Markdown text, in order (links keep their text; raw HTML is text)."""
    state = _State()
    tokens = _parser.parse(markdown or "")
    pending: str | None = None  # what the next inline belongs to
    heading_level = 0
    for token in tokens:
        if token.type == "heading_open":
            pending, heading_level = "heading", int(token.tag[1])
        elif token.type == "paragraph_open":
            pending = "list_item" if state.lists else ("quote" if state.quote else "paragraph")
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            start = int(token.attrGet("start") or 1) if token.type == "ordered_list_open" else 0
            state.lists.append([token.type == "ordered_list_open", start])
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            state.lists.pop()
        elif token.type == "blockquote_open":
            state.quote += 1
        elif token.type == "blockquote_close":
            state.quote -= 1
        elif token.type == "table_open":
            state.table = _Table()
        elif state.table is not None and token.type != "table_close":
            _table_token(state.table, token)
        elif token.type == "table_close" and state.table is not None:
            state.blocks.append(state.table.block())
            state.table = None
        elif token.type == "inline" and pending is not None:
            runs = _runs(token)
            if pending == "heading":
                state.blocks.append(Block("heading", runs, level=heading_level))
            elif pending == "list_item":
                ordered, number = bool(state.lists[-1][0]), int(state.lists[-1][1])
                state.blocks.append(
                    Block(
                        "list_item", runs, level=len(state.lists), ordered=ordered, number=number if ordered else None
                    )
                )
                if ordered:
                    state.lists[-1][1] = number + 1
            else:
                state.blocks.append(Block(pending, runs))
            pending = None
        elif token.type in ("fence", "code_block"):
            state.blocks.append(Block("code", (Run(token.content.rstrip("\n"), code=True),)))
        elif token.type == "hr":
            state.blocks.append(Block("rule"))
        elif token.type == "html_block":
            state.blocks.append(Block("paragraph", (Run(token.content.strip()),)))
    return state.blocks


def _table_token(table: _Table, token: Token) -> None:
    if token.type == "thead_open":
        table.header = True
    elif token.type == "tr_open":
        table.rows.append([])
    elif token.type in ("th_open", "td_open") and len(table.rows) == 1:
        table.align.append(_ALIGNMENTS.get(str(token.attrGet("style") or ""), ""))
    elif token.type == "inline" and table.rows:
        table.rows[-1].append(_runs(token))


_LONG_CELL = 40  # characters: a longer cell wraps rather than widening its column further
# What a line cannot break inside: a run of characters other than spaces and the wide
# (CJK) characters, between which a line may break; or one wide character.
_UNBREAKABLE = re.compile(
    r"[^\s\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]+|\S"
)


def column_widths(block: Block, width: float, *, char_width: float, padding: float) -> list[float]:
    """How to share `width` between a table's columns (the Docx and Pdf tables), given
    the average width of a character and a cell's padding (left and right together).
    Each column gets at least its longest word (so that words are not cut, as far as the
    width allows) and the rest in proportion to its longest cell (up to _LONG_CELL
    characters): a column of short values stays narrow, one of sentences takes the room."""
    columns = block.columns
    words = [
        max(
            (_display_width(word) for row in block.rows for word in _UNBREAKABLE.findall(cell_text(row[column]))),
            default=1,
        )
        for column in range(columns)
    ]
    cells = [
        max(min(max((_display_width(cell_text(row[column])) for row in block.rows), default=1), _LONG_CELL), 1)
        for column in range(columns)
    ]
    minimum = [word * char_width + padding for word in words]
    if sum(minimum) > width:  # the words cannot all be whole: each column gives up in proportion
        minimum = [least * width / sum(minimum) for least in minimum]
    desired = [max(cell * char_width + padding, least) for cell, least in zip(cells, minimum, strict=True)]
    if sum(desired) <= width:
        return [want * width / sum(desired) for want in desired]
    spare = width - sum(minimum)
    growth = [want - least for want, least in zip(desired, minimum, strict=True)]
    return [least + spare * grow / (sum(growth) or 1) for least, grow in zip(minimum, growth, strict=True)]


def plain_text_of(markdown: str) -> str:
    """The text without Markdown syntax: blocks separated by blank lines, list items
    bulleted or numbered (the PlainText export and the bilingual source column)."""
    lines: list[str] = []
    for block in blocks_of(markdown):
        if block.kind == "list_item":
            marker = f"{block.number}." if block.ordered else "•"
            lines.append(f"{'  ' * (block.level - 1)}{marker} {block.text}")
        elif block.kind == "rule":
            lines.append("* * *")
        elif block.kind == "table":
            lines.append(table_plain_text(block))
        else:
            lines.append(block.text)
    return "\n\n".join(lines)


PLAIN_TABLE_WIDTH = 100  # a table wider than this is written row by row, not in columns


def _display_width(text: str) -> int:
    """Columns a monospace terminal gives the text (wide CJK characters take two,
    combining marks none)."""
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text
    )


def _padded(text: str, width: int, align: str) -> str:
    gap = width - _display_width(text)
    if align == "right":
        return " " * gap + text
    if align == "center":
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap


def table_plain_text(block: Block) -> str:
    """A table as plain text: aligned columns under a ruled header row when it fits in
    PLAIN_TABLE_WIDTH columns of a monospace font; otherwise each row as its own group of
    lines, "heading: cell" (or the cells one per line when the table has no header)."""
    rows = [[" ".join(cell_text(cell).split()) for cell in row] for row in block.rows]
    if not rows:
        return ""
    widths = [max(_display_width(row[column]) for row in rows) for column in range(block.columns)]
    if sum(widths) + 2 * (len(widths) - 1) <= PLAIN_TABLE_WIDTH:
        lines = [
            "  ".join(_padded(cell, widths[column], block.align[column]) for column, cell in enumerate(row)).rstrip()
            for row in rows
        ]
        if block.header:
            lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(lines)
    head, body = (rows[0], rows[1:]) if block.header else (None, rows)
    groups = []
    for row in body:
        if head is None:
            groups.append("\n".join(cell for cell in row if cell))
        else:
            groups.append(
                "\n".join(f"{name}: {cell}" if name else cell for name, cell in zip(head, row, strict=True) if cell)
            )
    return "\n\n".join(groups)


def first_heading(markdown: str, *, chapter_level: int = 2) -> Block | None:
    """The page's first block when it is a heading of `chapter_level` or above (a chapter
    start; ExportBook.chapter_level)."""
    blocks = blocks_of(markdown)
    if blocks and blocks[0].kind == "heading" and blocks[0].level <= chapter_level:
        return blocks[0]
    return None
