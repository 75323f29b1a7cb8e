"""Markdown to blocks: the one parser every renderer shares (markdown-it-py, CommonMark
with GFM pipe tables and Pandoc/GFM footnotes, mdit-py-plugins' footnote plugin).

A page's translation becomes a list of blocks — headings, paragraphs, list items, block
quotes, code, rules, tables, notes — each carrying inline runs with bold/italic/code flags
(a table: rows of cells, each cell its runs). Renderers lay blocks out in their own format
(python-docx paragraphs and tables, reportlab flowables, XHTML for EPUB); the HTML
renderer may use markdown-it's own HTML output instead.

Footnotes: a reference in the text (`micro-sphere (WGM)[^4] of`) is a run of its own whose
text is the note's mark as the book sets it (`4`, `*` for a label `star`) and whose `note`
is the note's id in the book (`p12-4`: a label is unique within a page only); a definition
(`[^4]: WGM occur at ...`) is a "note" block where it stands (the page's end, as the
structure layer writes them), its runs its text. Text that a contents entry, a word count
or an alignment reads (`Block.text`, `cell_text`) leaves the references' marks out.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin

_parser = MarkdownIt("commonmark", {"html": False}).enable("table")
# Definitions stay where they are (the plugin's tail would move them and drop those no
# reference points to: nothing of the book is dropped); `^[inline notes]` are not a
# footnote syntax the structure layer writes.
footnote_plugin(_parser, inline=False, move_to_end=False)

Cell = tuple["Run", ...]


@dataclass(frozen=True)
class Run:
    """A run of text with its emphasis: part of a block, or all of a line the PDF sets itself
    (a title, a page marker, a notice)."""

    text: str
    bold: bool = False
    italic: bool = False
    code: bool = False
    note: str = ""  # a note reference: its note's id in the book (`p12-4`); `text` is the note's mark
    reference: int = 0  # a note reference: how many references to the same note come before it on its page


@dataclass(frozen=True)
class Block:
    kind: str  # "heading", "paragraph", "list_item", "quote", "code", "rule", "table", "note"
    runs: tuple[Run, ...] = ()
    level: int = 0  # heading level 1-6; list nesting depth (1-based) for list items
    ordered: bool = False  # list items: numbered
    number: int | None = None  # list items: the item's number when ordered
    rows: tuple[tuple[Cell, ...], ...] = ()  # tables: every row has one cell per column
    header: bool = False  # tables: the first row is the header row
    align: tuple[str, ...] = ()  # tables: per column "left", "center", "right" or "" (as written)
    note: str = ""  # notes: the note's id in the book (`p12-4`), as its references give it
    mark: str = ""  # notes: the mark the book sets it with ("4", "*", "†")
    referenced: bool = False  # notes: a reference on the page points to it (a back link has a target)

    @property
    def text(self) -> str:
        """The block's text, without the marks of note references in it."""
        if self.kind == "table":
            return "\n".join(" ".join(cell_text(cell) for cell in row) for row in self.rows)
        return "".join(run.text for run in self.runs if not run.note)

    @property
    def columns(self) -> int:
        return len(self.rows[0]) if self.rows else 0


def cell_text(cell: Cell) -> str:
    return "".join(run.text for run in cell if not run.note).strip()


# The words a label spells a typographic mark with (Markdown labels are made of safe
# characters: the structure layer writes `[^star]` for a note marked `*`).
NOTE_MARK_WORDS = {
    "star": "*",
    "asterisk": "*",
    "dagger": "\u2020",
    "ddagger": "\u2021",
    "doubledagger": "\u2021",
    "section": "\u00a7",
    "pilcrow": "\u00b6",
    "paragraph": "\u00b6",
    "parallel": "\u2016",
}
_MARK_WORDS = re.compile("|".join(sorted(NOTE_MARK_WORDS, key=len, reverse=True)))
_UNSAFE_IN_ID = re.compile(r"[^A-Za-z0-9_-]")


def note_mark(label: str) -> str:
    """The mark a note's label stands for: its digits or letters as they are, a mark's word
    as the mark (`star` is `*`, `dagger` `†`, `dagger-dagger` or `daggerdagger` `††`)."""
    words = label.lower().replace("-", "").replace("_", "")
    if words and _MARK_WORDS.sub("", words) == "":
        return "".join(NOTE_MARK_WORDS[word] for word in _MARK_WORDS.findall(words))
    return label


def note_id(page: int, label: str) -> str:
    """A note's id in the book: its page and its label (`p12-4`), in characters every
    format's ids take (another character as `_` and its code point)."""
    safe = _UNSAFE_IN_ID.sub(lambda found: f"_{ord(found.group()):x}", label)
    return f"p{page}-{safe}"


def note_anchor(note: str) -> str:
    """Where a note is (HTML and EPUB ids, PDF destinations, Docx bookmarks): `fn-p12-4`."""
    return f"fn-{note}"


def reference_anchor(run: Run) -> str:
    """Where a note reference is (the note's back link points at its first one): `fnref-p12-4`,
    then `fnref-p12-4-2`... for later references to the same note."""
    return f"fnref-{run.note}" + (f"-{run.reference + 1}" if run.reference else "")


def notes_apart(blocks: list[Block]) -> tuple[list[Block], list[Block]]:
    """The blocks without their notes, and the notes (for renderers that set notes at the
    end of a page or chapter)."""
    return [block for block in blocks if block.kind != "note"], [block for block in blocks if block.kind == "note"]


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
class _Note:
    """A note definition being read: its label and its runs so far."""

    label: str
    runs: list[Run] = field(default_factory=list)

    def add(self, runs: tuple[Run, ...] | list[Run]) -> None:
        """A paragraph (or list item, or code) of the note: after a line break when not its first."""
        if runs and self.runs:
            self.runs.append(Run("\n"))
        self.runs.extend(runs)


@dataclass
class _State:
    page: int
    blocks: list[Block] = field(default_factory=list)
    lists: list[list[int | bool]] = field(default_factory=list)  # [ordered, next number]
    quote: int = 0
    table: _Table | None = None
    note: _Note | None = None  # inside a footnote definition
    referenced: set[str] = field(default_factory=set)  # the labels the page's references point to


def _runs(inline: Token, state: _State) -> tuple[Run, ...]:
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
        elif child.type == "footnote_ref":
            label = str(child.meta["label"])
            state.referenced.add(label)
            runs.append(
                Run(
                    note_mark(label),
                    bold=bold,
                    italic=italic,
                    note=note_id(state.page, label),
                    reference=int(child.meta.get("subId", 0)),
                )
            )
    merged: list[Run] = []
    for run in runs:
        if (
            merged
            and not (run.note or merged[-1].note)
            and (merged[-1].bold, merged[-1].italic, merged[-1].code) == (run.bold, run.italic, run.code)
        ):
            merged[-1] = Run(merged[-1].text + run.text, run.bold, run.italic, run.code)
        else:
            merged.append(run)
    return tuple(merged)


def blocks_of(markdown: str, *, page: int = 0) -> list[Block]:
    """The blocks of a Markdown text, in order (links keep their text; raw HTML is text).
    `page`: the page's number in the book, which its notes' ids carry."""
    state = _State(page)
    tokens = _parser.parse(markdown or "")
    pending: str | None = None  # what the next inline belongs to
    heading_level = 0
    notes: list[tuple[int, _Note]] = []  # where each note goes among the blocks
    for token in tokens:
        if token.type == "footnote_reference_open":
            state.note = _Note(str(token.meta["label"]))
        elif token.type == "footnote_reference_close" and state.note is not None:
            notes.append((len(state.blocks), state.note))
            state.note = None
        elif token.type == "heading_open":
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
            _table_token(state.table, token, state)
        elif token.type == "table_close" and state.table is not None:
            table = state.table.block()
            if state.note is not None:  # a table in a note: its rows as lines
                state.note.add([Run(" | ".join(cell_text(cell) for cell in row)) for row in table.rows if any(row)])
            else:
                state.blocks.append(table)
            state.table = None
        elif token.type == "inline" and pending is not None:
            _inline_block(state, pending, _runs(token, state), heading_level)
            pending = None
        elif token.type in ("fence", "code_block"):
            code = Run(token.content.rstrip("\n"), code=True)
            if state.note is not None:
                state.note.add([code])
            else:
                state.blocks.append(Block("code", (code,)))
        elif token.type == "hr" and state.note is None:
            state.blocks.append(Block("rule"))
        elif token.type == "html_block":
            text = Run(token.content.strip())
            if state.note is not None:
                state.note.add([text])
            else:
                state.blocks.append(Block("paragraph", (text,)))
    return _notes_placed(state, notes)


def notes_renamed(markdown: str, *, page: int) -> str:
    """The Markdown with its footnotes' labels made the notes' ids in the book (`[^4]`
    and `[^4]:` on page 12 become `[^p12-4]` and `[^p12-4]:`), so that the pages of a book
    make one Markdown file whose notes stay apart; code (blocks and spans) is left as it is.
    A text without footnote definitions is returned unchanged."""
    if "[^" not in (markdown or ""):  # no footnote: the text is not parsed (the Markdown export parses nothing else)
        return markdown
    tokens = _parser.parse(markdown)
    labels = {str(token.meta["label"]) for token in tokens if token.type == "footnote_reference_open"}
    if not labels:
        return markdown
    code_lines: set[int] = set()
    for token in tokens:
        if token.type in ("fence", "code_block") and token.map:
            code_lines.update(range(*token.map))
    names = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    reference = re.compile(rf"(?P<code>(`+).+?(?<!`)\2(?!`))|(?<!\\)\[\^(?P<label>{names})\]")

    def renamed(found: re.Match[str]) -> str:
        if found.group("label") is None:
            return found.group()
        return f"[^{note_id(page, found.group('label'))}]"

    lines = markdown.split("\n")
    return "\n".join(
        line if number in code_lines else reference.sub(renamed, line) for number, line in enumerate(lines)
    )


def _inline_block(state: _State, pending: str, runs: tuple[Run, ...], heading_level: int) -> None:
    """The block an inline's runs make (or, inside a note, the note's next lines)."""
    if pending == "list_item":
        ordered, number = bool(state.lists[-1][0]), int(state.lists[-1][1])
        if ordered:
            state.lists[-1][1] = number + 1
        if state.note is not None:
            state.note.add([Run(f"{number}. " if ordered else "\u2022 "), *runs])
        else:
            state.blocks.append(
                Block("list_item", runs, level=len(state.lists), ordered=ordered, number=number if ordered else None)
            )
    elif state.note is not None:
        state.note.add(runs)
    elif pending == "heading":
        state.blocks.append(Block("heading", runs, level=heading_level))
    else:
        state.blocks.append(Block(pending, runs))


def _notes_placed(state: _State, notes: list[tuple[int, _Note]]) -> list[Block]:
    """The blocks with each note where its definition stood. A label defined twice on a
    page keeps both notes, the second under an id of its own (references point to the first)."""
    if not notes:
        return state.blocks
    blocks: list[Block] = []
    seen: set[str] = set()
    position = 0
    for at, note in notes:
        blocks += state.blocks[position:at]
        position = at
        identifier = note_id(state.page, note.label)
        referenced = note.label in state.referenced and identifier not in seen
        while identifier in seen:
            identifier += "-again"
        seen.add(identifier)
        blocks.append(
            Block("note", tuple(note.runs), note=identifier, mark=note_mark(note.label), referenced=referenced)
        )
    return blocks + state.blocks[position:]


def _table_token(table: _Table, token: Token, state: _State) -> None:
    if token.type == "thead_open":
        table.header = True
    elif token.type == "tr_open":
        table.rows.append([])
    elif token.type in ("th_open", "td_open") and len(table.rows) == 1:
        table.align.append(_ALIGNMENTS.get(str(token.attrGet("style") or ""), ""))
    elif token.type == "inline" and table.rows:
        table.rows[-1].append(_runs(token, state))


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


def plain_text_of(markdown: str, *, page: int = 0) -> str:
    """The text without Markdown syntax: blocks separated by blank lines, list items
    bulleted or numbered, a note reference as its mark in brackets (`[4]`), and the notes
    after the text, each starting with its mark (the PlainText export and the bilingual
    source column)."""
    lines: list[str] = []
    body, notes = notes_apart(blocks_of(markdown, page=page))
    for block in body:
        if block.kind == "list_item":
            marker = f"{block.number}." if block.ordered else "•"
            lines.append(f"{'  ' * (block.level - 1)}{marker} {plain_runs(block.runs)}")
        elif block.kind == "rule":
            lines.append("* * *")
        elif block.kind == "table":
            lines.append(table_plain_text(block))
        elif block.kind == "code":
            lines.append(block.text)
        else:
            lines.append(plain_runs(block.runs))
    lines.extend(f"[{note.mark}] {plain_runs(note.runs)}" for note in notes)
    return "\n\n".join(lines)


def plain_runs(runs: tuple[Run, ...]) -> str:
    """Runs as plain text, a note reference as its mark in brackets (`[4]`)."""
    return "".join(f"[{run.text}]" if run.note else run.text for run in runs)


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
    rows = [[" ".join(plain_runs(cell).split()) for cell in row] for row in block.rows]
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
    blocks, _notes = notes_apart(blocks_of(markdown))
    if blocks and blocks[0].kind == "heading" and blocks[0].level <= chapter_level:
        return blocks[0]
    return None
