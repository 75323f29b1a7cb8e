"""Paragraphs: a book's body lines joined into paragraphs, across lines and across pages.

`book_text_build` reads the pages of a book in order, leaves out their furniture
(`furniture.py`) and joins the remaining lines (docs/book-structure.md, "Paragraphs" and
"Paragraphs across pages"):

- Within a block, a new paragraph starts at a line that
  - stands below the previous one by more than the block's line spacing (`GAP_FACTOR`
    times its usual line pitch, or a gap over `GAP_LINE_HEIGHTS` line heights),
  - starts with a bullet,
  - is indented (by over `INDENT_LINE_HEIGHTS` line heights) between two lines at the
    block's left edge (but not under a list item's first line when it is the item wrapped
    with a hanging indent: the next line starts another item or stands apart; a wrapped
    item's lines that the PDF set in a block of their own join it too), or
  - starts with a capital after a line that ends a sentence well short of the block's
    right edge (`SHORT_LINE` of its width).
- Lines of a paragraph are joined with a space; a word hyphenated at a line end is
  rejoined or keeps its hyphen as `words.hyphenation_resolve` decides.
- A page's last paragraph is carried onto the next page when it does not end a sentence,
  its last line runs to the body's right edge, and the next page's first paragraph does
  not start like a new one (bullet, indented first line, another font size). The carried
  paragraph is one paragraph, whole, on the page where it starts; the next page records
  that its first lines were carried (`PageText.carried_from`) and its own paragraphs
  start after them. A paragraph may run over several pages; a page without body text
  stops it.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import pairwise

from bookstructure.furniture import BookFurniture, furniture_detect
from bookstructure.lines import MARK_CLOSE, MARK_OPEN, MARK_SPLIT, Layout, LineRef, PageLine, note_mark, page_lines
from bookstructure.tables import Table, table_continues, tables_find
from bookstructure.words import Vocabulary, WordList, hyphenation_resolve, vocabulary_collect
from core.markdown import block_start_escape

GAP_FACTOR = 1.4
GAP_LINE_HEIGHTS = 0.8
INDENT_LINE_HEIGHTS = 0.8
HANGING_LINE_HEIGHTS = 4.0  # how far right of its bullet a list item's wrapped lines may start
SHORT_LINE = 0.15
FONT_SIZE_CHANGE = 0.15
HEADING_MAX_LINES = 3
FULL_PAGE_LINES = 5  # a page with fewer body lines takes the body's right edge from the fuller pages
HEADING_MAX_CHARS = 160
CODE_GAP_LINE_HEIGHTS = 2.5
SUPERSCRIPT_SIZE = 0.85  # a line of only a number set this much smaller than the body is a footnote's mark
NOTE_SIZE = 0.92  # a footnote is set at most this much of the body's size
NOTES_MAX = 6  # footnotes at the foot of one column or page, at most (more: a list in small type)
FIGURE_TEXT_WIDTH = 0.5  # of its column: every line of a figure's labels is narrower
FIGURE_TEXT_LINES = 3
EQUATION_EDGE = 0.05  # of its column's width: how near its right edge an equation's number is set
EQUATION_PROSE = 0.8  # of its column's width: a line this wide is text, not a display equation's
EQUATION_GAP = 0.4  # line heights between two stacked parts of a display equation, at most
FRONT_PROSE_LINES = 3  # a paragraph of this many lines is prose: the front matter has ended
NAMES_SHARE = 0.85  # of a line's words that are names or initials, for a line of authors
ROW_OVERLAP = 0.5  # lines whose tops are within half a line height are one row of a listing
ROW_JOIN_LINE_HEIGHTS = 2.0  # a line's part set apart by at most this much space (a section number, a justified word)

_BULLETS = ("\u2022", "\u25e6", "\u25aa", "\u2023", "\u25cf", "\u25cb", "\u25a0", "\u25a1", "\u2013")
_SENTENCE_END = re.compile("[.!?:\u3002\uff01\uff1f][\"'\u201d\u2019)\\]]*$")
_HYPHENS = ("-", "\u00ad", "\u2010")
# A contents or index line: dot leaders and a page number (or the leaders alone, the numbers
# standing in a column of their own).
_LEADERS = re.compile(r"(?:(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)|(?:\.\s?){6,})$")
_FOOTNOTE_MARK = re.compile(r"\d{1,3}|[*\u2020\u2021]")
_SUPERSCRIPT_DIGITS = str.maketrans("0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
_LEADER_DOTS = re.compile(r"\s*(?:\.\s?){4,}\s*")
_CODE_SPANS_MET = re.compile(r"(?<=[^`\s])` `(?=[^`\s])")
# A section's number: `2`, `2.1`, `A.1`, and a paper's `IV.` and `B.` (roman numerals and
# letters with their point).
_SECTION_NUMBER = re.compile(r"(\d+(?:\.\d+)*|[A-Z](?:\.\d+)+|[IVX]{1,5}(?=\.)|[A-Z](?=\.))\.?\s+\S")
_SECTION_WORD = re.compile(
    r"(?:abstract|introduction|summary|contents|keywords|key words|preface|foreword|background|overview"
    r"|r[ée]sum[ée]|zusammenfassung|resumen|einleitung)\b",
    re.IGNORECASE,
)
_DATE = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?:\d{1,2},?\s+)?(?:1[89]|20)\d\d\b",
    re.IGNORECASE,
)
_NAME_MARKS = re.compile(
    r"\[\^[^\]]*\]|\([^)]*\)|[\d*\u2217\u2020\u2021\u22c6\u00a7\u00b6?\u2070-\u209f\u00b9\u00b2\u00b3]"
)
_NAME_SPLIT = re.compile(r"[\s,;&]+|\band\b")
_INITIALS = re.compile(r"(?:[A-Z][a-z]?\.-?)+")
_NAME_PARTICLES = frozenset(
    {"van", "von", "de", "der", "den", "da", "di", "del", "du", "la", "le", "of", "y", "bin", "al"}
)
_REFERENCES_HEADING = re.compile(
    r"(?:\d+\.?\s+|[IVX]+\.\s+)?(?:references|bibliography|literature cited|works cited|literatur|bibliographie"
    r"|r[ée]f[ée]rences|referencias|bibliograf[íi]a)",
    re.IGNORECASE,
)
_REFERENCE_LABEL = re.compile(r"\[\d{1,3}[a-z]?\]\s|\d{1,3}\.\s|\(\d{1,3}\)\s")
_EQUATION_NUMBER = re.compile(r"\((?:[A-Z]?\d+(?:[.-]\d+)*[a-z]?|[A-Z]\.\d+)\)")
_CAPTION = re.compile(
    r"(?:fig(?:ure)?|table|tab|algorithm|listing|scheme|chart|plate|exhibit)\.?\s*(?:\d+|[ivx]+|[a-z])(?:[.-]\d+)*"
    r"(?:\s*[.:|]|\s+(?-i:[A-Z]))",
    re.IGNORECASE,
)
# A footnote's mark where the note starts: a number or a sign, then the note's text.
_NOTE_START = re.compile(r"(\d{1,3}|[*\u2217\u2020\u2021\u00a7\u00b6?]{1,3})\s*(?=[^\s\d.,;:)\]])")
_NOTE_LABELS = {
    "*": "star",
    "\u2217": "star",
    "\u2020": "dagger",
    "\u2021": "ddagger",
    "\u00a7": "section",
    "\u00b6": "pilcrow",
    "?": "star",  # a sign whose glyph the PDF does not name (a TeX star, most often)
}
_MARKED = re.compile(f"{MARK_OPEN}([^{MARK_SPLIT}]*){MARK_SPLIT}([^{MARK_CLOSE}]*){MARK_CLOSE}")


class ParagraphKind(StrEnum):
    PARAGRAPH = "paragraph"
    HEADING = "heading"
    LIST_ITEM = "list_item"
    CODE = "code"
    TABLE = "table"
    NOTE = "note"  # a footnote: a Markdown footnote's definition when its mark is found in the page's text


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of body text: its text (lines joined), its kind, and its lines in order.

    `page` is the page it starts on and belongs to; `end_page` the page it ends on (the
    same page unless it is carried over a page break)."""

    text: str
    kind: ParagraphKind
    page: int
    end_page: int
    lines: tuple[LineRef, ...]
    markdown: str = ""  # the paragraph as a Markdown block (heading, list item, fenced code, prose)
    level: int = 0  # a heading's level (1-4)
    table: Table | None = None  # a table's cells and their lines
    note: str = ""  # a footnote's mark (kind NOTE)

    @property
    def carried(self) -> bool:
        return self.end_page != self.page

    def moved(self, pages: int) -> Paragraph:
        """The paragraph with every page number in it moved by `pages` (a window's
        positions made book pages)."""
        return replace(
            self,
            page=self.page + pages,
            end_page=self.end_page + pages,
            lines=tuple(replace(ref, page=ref.page + pages) for ref in self.lines),
            table=None if self.table is None else self.table.moved(pages),
        )


@dataclass(frozen=True)
class PageText:
    """The paragraphs that start on a page, in reading order. `carried_from` is the page
    where the paragraph that this page's first body lines finish starts (None if none)."""

    page: int
    paragraphs: tuple[Paragraph, ...]
    carried_from: int | None

    @property
    def markdown(self) -> str:
        """The page's body as Markdown: its paragraphs' blocks, a blank line apart."""
        return "\n\n".join(paragraph.markdown for paragraph in self.paragraphs if paragraph.markdown)


@dataclass(frozen=True)
class BookText:
    """The body text of a book, page by page."""

    pages: tuple[PageText, ...]


@dataclass
class _Draft:
    lines: list[PageLine]
    body_left: float  # the body text's left and right edges on the page of its last line
    body_right: float
    kind: ParagraphKind = ParagraphKind.PARAGRAPH
    level: int = 0


def book_text_build(
    layouts: Sequence[Layout],
    *,
    words: WordList,
    furniture: BookFurniture | None = None,
    carried_in: Mapping[int, int] | None = None,
    body_size: float | None = None,
    excluded: frozenset[LineRef] = frozenset(),
    first_page: bool = False,
) -> BookText:
    """The paragraphs of a book's pages (in book order), furniture left out; `furniture`
    defaults to `furniture_detect(layouts)`, `words` is the source language's word list
    (`words.word_list`). `carried_in` maps pages (positions in `layouts`) whose first
    lines were already carried onto an earlier page, outside `layouts`, to that page: no
    paragraph before them is carried on (a book read in windows decides each page break
    once), and the caller leaves those lines out (`excluded`). `body_size` is the body text's font size
    (default: the most common in `layouts`); `excluded` lines are left out too (tables).
    `first_page`: `layouts[0]` is the book's first page, whose front matter (the authors
    under the title) is read as such."""
    furniture = furniture if furniture is not None else furniture_detect(layouts)
    carried_in = carried_in or {}
    # A table whose lines an earlier page took (its rest, `excluded` as carried) is not found again.
    tables = [
        [table for table in tables_find(layout, page=index) if not table.refs & excluded]
        for index, layout in enumerate(layouts)
    ]
    excluded = furniture.refs() | excluded | frozenset(ref for found in tables for table in found for ref in table.refs)
    # A line of combining marks alone (an accent poppler could not place on its letter) is
    # no text of the body.
    bodies = [
        [line for line in page_lines(layout, page=index) if line.ref not in excluded and not _marks_only(line.text)]
        for index, layout in enumerate(layouts)
    ]
    vocabulary = vocabulary_collect(line.text for body in bodies for line in body)
    body_size = body_size or body_font_size(line for body in bodies for line in body)

    # A page of a line or two (a title page, a chapter's last lines) ends where the book's
    # full pages end: its last line does not run to the body's edge because it is the body.
    full_pages = [body for body in bodies if len(body) >= FULL_PAGE_LINES]
    book_right = statistics.median(max(line.x1 for line in body) for body in full_pages) if full_pages else 0.0
    drafts_by_page: list[list[_Draft]] = []
    notes_by_page: list[list[_Note]] = []
    asides_by_page: list[list[_Draft]] = []
    in_references = False
    for index, body in enumerate(bodies):
        edges = _region_edges(body)
        if len(edges) == 1 and len(body) < FULL_PAGE_LINES:
            (region, (left, right)), *_ = edges.items()
            edges[region] = (left, max(right, book_right))
        equations = _equations_find(body, edges)
        taken = {line.ref for equation in equations for line in equation}
        drafts = [
            _Draft(lines=group, body_left=edges[group[0].region][0], body_right=edges[group[0].region][1])
            for group in _page_paragraphs([line for line in body if line.ref not in taken])
        ]
        for draft in drafts:
            draft.kind, draft.level = _kind(draft.lines, body_size=body_size)
        if equations:
            # A display equation is kept as it is set, a block of its own in its place.
            drafts += [
                _Draft(
                    lines=equation,
                    body_left=edges[equation[0].region][0],
                    body_right=edges[equation[0].region][1],
                    kind=ParagraphKind.CODE,
                )
                for equation in equations
            ]
            drafts.sort(key=_place)
        if first_page and index == 0:
            _front_matter_read(drafts)
        in_references = _references_read(drafts, in_references=in_references)
        drafts, notes, asides = _notes_split(_footnote_marks_placed(drafts, body_size=body_size), body_size=body_size)
        asides_by_page.append(asides)
        drafts_by_page.append(_columns_joined(drafts))
        notes_by_page.append(notes)

    pages: list[PageText] = []
    carried_from: list[int | None] = [None] * len(layouts)
    open_draft: _Draft | None = None
    open_table: tuple[int, int] | None = None  # (page, position) of a table that ends its page
    for index, drafts in enumerate(drafts_by_page):
        page_tables = tables[index]
        table_first = bool(page_tables) and (not drafts or page_tables[0].place < _place(drafts[0]))
        if index in carried_in:
            carried_from[index] = carried_in[index]
            open_draft, open_table = None, None
            if not drafts and not page_tables:
                continue
        elif (
            open_table is not None
            and table_first
            and table_continues(tables[open_table[0]][open_table[1]], page_tables[0])
        ):
            owner, position = open_table
            tables[owner][position] = tables[owner][position].continued_by(page_tables.pop(0))
            carried_from[index] = owner
            if not drafts and not page_tables:
                continue  # the table goes on over the next page break too
        elif (
            open_draft is not None
            and (following := _first_text(drafts)) is not None
            and not (table_first and page_tables[0].place < _place(drafts[following]))
            and _continues(open_draft, drafts[following])
        ):
            # The first text of the page (a figure's labels or a caption at its top aside).
            carried_from[index] = open_draft.lines[0].ref.page
            rest = drafts.pop(following)
            open_draft.lines.extend(rest.lines)
            open_draft.body_left, open_draft.body_right = rest.body_left, rest.body_right
            drafts_by_page[index] = drafts
            if not drafts and not page_tables:
                continue
        last = _last_text(drafts)
        table_last = bool(page_tables) and (last is None or page_tables[-1].place > _place(drafts[last]))
        open_draft = drafts[last] if last is not None and not table_last else None
        open_table = (index, len(page_tables) - 1) if table_last else None

    for index, drafts in enumerate(drafts_by_page):
        placed = [(_place(draft), _paragraph(draft, vocabulary=vocabulary, words=words)) for draft in drafts]
        placed.extend((table.place, _table_paragraph(table, page=index)) for table in tables[index])
        ordered = [paragraph for _, paragraph in sorted(placed, key=lambda item: item[0])]
        ordered += [_paragraph(aside, vocabulary=vocabulary, words=words) for aside in asides_by_page[index]]
        page_notes = [_note_paragraph(note, vocabulary=vocabulary, words=words) for note in notes_by_page[index]]
        pages.append(
            PageText(page=index, paragraphs=tuple(notes_linked(ordered, page_notes)), carried_from=carried_from[index])
        )
    return BookText(pages=tuple(pages))


def _place(draft: _Draft) -> tuple[int, float]:
    """Where a draft starts in its page's reading order (its part of the page, its top)."""
    first = draft.lines[0]
    return first.region, first.top


def _equations_find(body: Sequence[PageLine], edges: Mapping[int, tuple[float, float]]) -> list[list[PageLine]]:
    """The page's numbered display equations, each its lines in reading order: an equation's
    number (`(3)`, `(2.4)`, `(A1)`) set alone at the right edge of its column, and the lines
    on its row and those stacked above and below them (a fraction's parts, a sum's limits)
    that are not text set to the column's measure."""
    equations: list[list[PageLine]] = []
    taken: set[LineRef] = set()
    for number in body:
        left, right = edges[number.region]
        width = max(right - left, 1.0)
        if not _EQUATION_NUMBER.fullmatch(number.text) or right - number.x1 > EQUATION_EDGE * width:
            continue
        if number.x0 < left + width / 2 or number.ref in taken:
            continue
        region = [line for line in body if line.region == number.region and line.ref not in taken]
        measure = [line for line in region if line.x1 - line.x0 >= EQUATION_PROSE * width]
        found = [number]
        top, bottom = number.top, number.bottom
        grown = True
        while grown:
            grown = False
            for line in region:
                if line in found or line in measure or line.mono:
                    continue
                height = max(line.height, number.height, 1.0)
                if line.bottom >= top - EQUATION_GAP * height and line.top <= bottom + EQUATION_GAP * height:
                    found.append(line)
                    top, bottom = min(top, line.top), max(bottom, line.bottom)
                    grown = True
        if len(found) > 1:
            found.sort(key=lambda line: (line.top, line.x0))
            equations.append(found)
            taken.update(line.ref for line in found)
    return equations


def _marks_only(text: str) -> bool:
    return all(unicodedata.category(character) in ("Mn", "Me", "Zs") for character in text)


def lines_join(texts: Sequence[str], *, vocabulary: Vocabulary, words: WordList) -> str:
    """The lines of one paragraph as one text: joined with a space, a word hyphenated at a
    line end rejoined or kept as `hyphenation_resolve` decides."""
    text = ""
    for line in texts:
        if not text:
            text = line
            continue
        head, tail = text.rsplit(" ", 1)[-1], line.split(" ", 1)[0]
        if line.startswith(MARK_OPEN):  # a footnote's mark set at the head of the next line
            text += line
        elif head.endswith(tuple(f"{hyphen}`" for hyphen in _HYPHENS)) and tail.startswith("`") and len(head) > 2:
            # Code broken after a hyphen is one code span: an option keeps its hyphen
            # (`--show-leak-` + `kinds` -> `--show-leak-kinds`), a name the typesetter
            # hyphenated does not (`as-` + `mejour.bst` -> `asmejour.bst`, the book's word).
            keep = hyphenation_resolve(head.strip("`"), tail.strip("`"), vocabulary=vocabulary, words=words)
            text = (text[:-1] if keep else text[:-2]) + line[1:]
        elif _url_continues(head.strip("`").lstrip("([{<\"'`"), tail.strip("`")):
            # A URL broken at a line end is one URL (one code span when set as code).
            glued = head.endswith("`") and tail.startswith("`") and not head.endswith("``")
            text = text[:-1] + line[1:] if glued else text + line
        elif head.endswith(_HYPHENS) and len(head) > 1:
            keep = hyphenation_resolve(head, tail, vocabulary=vocabulary, words=words)
            text = (text if keep else text[:-1]) + line
        else:
            text = f"{text} {line}"
    return text


def _url_continues(head: str, tail: str) -> bool:
    """A line that ends inside a URL (after a dot, a slash, ...) and a next line that goes on with it."""
    if re.fullmatch(r"[a-z]+:/{0,2}", head) and tail.startswith("/"):  # "https:" + "//www..."
        return True
    return (
        ("://" in head or head.startswith("www."))
        and head.endswith((".", "/", "-", "_", "?", "=", "&", "#", "~"))
        and tail[:1].isalnum()
    )


@dataclass
class _Note:
    """A footnote at the foot of a column or page: its mark, its label (the mark made a
    Markdown footnote label) and its lines (the first starting with the mark)."""

    mark: str
    label: str
    lines: list[PageLine]


def _region_edges(body: Sequence[PageLine]) -> dict[int, tuple[float, float]]:
    """The left and right edges of each part of the page (a column) its body lines are in."""
    edges: dict[int, tuple[float, float]] = {}
    for line in body:
        left, right = edges.get(line.region, (line.x0, line.x1))
        edges[line.region] = (min(left, line.x0), max(right, line.x1))
    return edges or {0: (0.0, 0.0)}


def _is_float(draft: _Draft) -> bool:
    """Whether a draft stands outside the run of the text: a caption (`Figure 2:`, `TABLE
    1.`), or a figure's labels (a few short lines, no sentence)."""
    if draft.kind is ParagraphKind.HEADING:
        return False
    if _CAPTION.match(draft.lines[0].text):
        return True
    width = max(draft.body_right - draft.body_left, 1.0)
    return (
        len(draft.lines) <= FIGURE_TEXT_LINES
        and all(line.x1 - line.x0 < FIGURE_TEXT_WIDTH * width for line in draft.lines)
        and not any(_SENTENCE_END.search(line.text) for line in draft.lines)
        and draft.kind is not ParagraphKind.LIST_ITEM
    )


def _first_text(drafts: Sequence[_Draft]) -> int | None:
    """The first draft that is text (not a float), when only floats stand before it."""
    return next((index for index, draft in enumerate(drafts) if not _is_float(draft)), None)


def _last_text(drafts: Sequence[_Draft]) -> int | None:
    """The last draft that is text, when only floats stand after it."""
    return next((index for index in range(len(drafts) - 1, -1, -1) if not _is_float(drafts[index])), None)


def _columns_joined(drafts: list[_Draft]) -> list[_Draft]:
    """A paragraph that a column ends is joined by the rest of it at the head of the next
    column (a figure's labels or a caption between them aside), as a page's last paragraph
    is carried on to the next page."""
    joined: list[_Draft] = []
    # Only a column's text goes on in the next column: a part across the page (a title, an
    # abstract) or a short part above the columns (an "Abstract" label) is not continued.
    sizes: dict[int, int] = {}
    for draft in drafts:
        sizes[draft.lines[0].region] = sizes.get(draft.lines[0].region, 0) + len(draft.lines)
    for draft in drafts:
        region = draft.lines[0].region
        last = _last_text(joined)
        previous = joined[last] if last is not None else None
        if (
            last is not None
            and previous is not None
            and previous.lines[-1].region < region
            and min(previous.lines[-1].column, draft.lines[0].column) >= 0
            and sizes.get(previous.lines[-1].region, 0) >= FULL_PAGE_LINES
            and not any(not _is_float(other) and other.lines[0].region == region for other in joined[last + 1 :])
            and not _is_float(draft)
            and _continues(previous, draft)
        ):
            previous.lines.extend(draft.lines)
            previous.body_left, previous.body_right = draft.body_left, draft.body_right
            continue
        joined.append(draft)
    return joined


def _notes_split(drafts: list[_Draft], *, body_size: float) -> tuple[list[_Draft], list[_Note], list[_Draft]]:
    """The page's drafts without its footnotes and asides, its footnotes, and its asides.
    Footnotes stand at the foot of a column (or of the page), after the text, set smaller
    than the body, each starting with its mark (a number or a sign); a note's lines that do
    not start with a mark go on the note before them. On a page in columns, small type at
    the foot of a column that starts with no mark (a copyright or a publisher's box) is an
    aside: it leaves the columns' flow, so that the text goes on past it, and stands at the
    end of the page. A column set wholly in small type (a list of references) has neither."""
    notes: list[_Note] = []
    asides: list[_Draft] = []
    kept: list[_Draft] = []
    in_columns = any(line.column != 0 for draft in drafts for line in draft.lines)
    regions: dict[int, list[_Draft]] = {}
    for draft in drafts:
        regions.setdefault(draft.lines[0].region, []).append(draft)
    for region_drafts in regions.values():
        start = len(region_drafts)
        while start > 0 and _small(region_drafts[start - 1], body_size=body_size):
            start -= 1
        foot = region_drafts[start:]
        found = _notes_read(foot) if start > 0 and region_drafts[start - 1].kind is not ParagraphKind.HEADING else []
        if found and len(found) <= NOTES_MAX:
            notes.extend(found)
            kept.extend(region_drafts[:start])
        elif in_columns and foot and start > 0 and region_drafts[0].lines[0].column >= 0 and not found:
            asides.extend(foot)
            kept.extend(region_drafts[:start])
        else:
            kept.extend(region_drafts)
    kept.sort(key=lambda draft: (draft.lines[0].region, drafts.index(draft)))
    return kept, notes, asides


def _small(draft: _Draft, *, body_size: float) -> bool:
    return (
        body_size > 0
        and draft.kind in (ParagraphKind.PARAGRAPH, ParagraphKind.LIST_ITEM)
        and max(line.size for line in draft.lines) <= NOTE_SIZE * body_size
    )


def _notes_read(foot: Sequence[_Draft]) -> list[_Note]:
    """The notes of a column's foot, or none when its first line starts with no mark."""
    notes: list[_Note] = []
    for line in (line for draft in foot for line in draft.lines):
        start = _NOTE_START.match(line.text)
        if start is not None and (notes or line is foot[0].lines[0]):
            mark = start.group(1)
            notes.append(_Note(mark=mark, label=_note_label(mark), lines=[line]))
        elif notes:
            notes[-1].lines.append(line)
        else:
            return []
    return notes


def _note_label(mark: str) -> str:
    """A Markdown footnote label for a mark: a number as it is, a sign by its name, as
    often as it is set (`††`: `daggerdagger`; the exports show the sign again)."""
    if mark.isdigit():
        return mark
    return _NOTE_LABELS.get(mark[0], "star") * len(mark)


def _note_paragraph(note: _Note, *, vocabulary: Vocabulary, words: WordList) -> Paragraph:
    first, *rest = note.lines
    head = first.markdown or first.text
    start = _NOTE_START.match(_MARKED.sub(lambda found: found.group(2), head))
    body = head
    if start is not None:
        # The mark leaves the note's text: a footnote's definition carries it as its label.
        plain = _MARKED.sub(lambda found: found.group(2), head)
        body = plain[start.end() :] if plain.startswith(start.group(0)) else head
    texts = [body, *(line.markdown or line.text for line in rest)]
    inline = _CODE_SPANS_MET.sub(" ", lines_join(texts, vocabulary=vocabulary, words=words))
    text = lines_join([line.text for line in note.lines], vocabulary=vocabulary, words=words)
    return Paragraph(
        text=text,
        kind=ParagraphKind.NOTE,
        page=first.ref.page,
        end_page=note.lines[-1].ref.page,
        lines=tuple(line.ref for line in note.lines),
        markdown=f"[^{note.label}]: {inline}",
        level=0,
        note=note.mark,
    )


def notes_linked(paragraphs: Sequence[Paragraph], notes: Sequence[Paragraph]) -> list[Paragraph]:
    """The page's paragraphs, then its notes: a footnote's mark in the text becomes a
    reference to the page's note with that mark (`[^4]`), glued to a word or a sign and
    not followed by a letter or digit (a subscript is not a mark); a note whose mark is
    found nowhere is a paragraph that starts with its mark, as the page shows it. Marks
    without a note read as the page sets them."""
    labels = {note.note: note.markdown[2 : note.markdown.index("]")] for note in notes}
    linked: set[str] = set()

    def link(found: re.Match[str]) -> str:
        marks, shown = found.group(1).split(","), found.group(2)
        after = found.string[found.end() : found.end() + 1]
        before = found.string[found.start() - 1 : found.start()] if found.start() else ""
        glued = before.strip() and not before.isdigit() and not after.isalnum()
        if not glued or not any(mark.strip() in labels for mark in marks):
            return shown
        linked.update(mark.strip() for mark in marks)
        # Marks set together ("1,3") each refer to their note; a mark without one stays as set.
        return ",".join(f"[^{labels[mark.strip()]}]" if mark.strip() in labels else mark for mark in marks)

    result = [replace(paragraph, markdown=_MARKED.sub(link, paragraph.markdown)) for paragraph in paragraphs]
    for note in notes:
        if note.note in linked:
            result.append(note)
        else:
            text = note.markdown[note.markdown.index("]: ") + 3 :]
            shown = block_start_escape(f"{note.note} {text}")
            result.append(replace(note, kind=ParagraphKind.PARAGRAPH, markdown=shown))
    return result


def _references_read(drafts: Sequence[_Draft], *, in_references: bool) -> bool:
    """A list of references (under a heading References, Bibliography, ...) is a list: each
    entry that starts with its label (`[12]`, `12.`, `(12)`) a list item. Whether the
    list goes on after these drafts (on the next page)."""
    for draft in drafts:
        text = draft.lines[0].text
        named = _REFERENCES_HEADING.fullmatch(text.strip(" .:")) is not None and len(draft.lines) == 1
        if named and draft.kind is ParagraphKind.PARAGRAPH:  # "REFERENCES" set in the body's size
            draft.kind, draft.level = ParagraphKind.HEADING, 2
        if draft.kind is ParagraphKind.HEADING:
            in_references = named
        elif in_references and draft.kind is ParagraphKind.PARAGRAPH and _REFERENCE_LABEL.match(text):
            draft.kind = ParagraphKind.LIST_ITEM
    return in_references


def _front_matter_read(drafts: Sequence[_Draft]) -> None:
    """The book's first page: under its title (its largest heading), up to the first
    section (a numbered heading, an Abstract, an Introduction, ...) or the first prose, a
    line set large that names people (the authors, with their affiliations' marks) or gives
    a date is front matter, a paragraph, not a heading."""
    headings = [draft for draft in drafts if draft.kind is ParagraphKind.HEADING]
    if not headings:
        return
    largest = max(max(line.size for line in draft.lines) for draft in headings)
    title = next(draft for draft in headings if max(line.size for line in draft.lines) >= 0.95 * largest)
    for draft in drafts[drafts.index(title) + 1 :]:
        text = " ".join(line.text for line in draft.lines)
        if draft.kind is ParagraphKind.HEADING and (_names_like(text) or _DATE.search(text)):
            draft.kind, draft.level = ParagraphKind.PARAGRAPH, 0
        elif _front_matter_ends(draft, text):
            return


def _front_matter_ends(draft: _Draft, text: str) -> bool:
    """A section's heading, or prose: sentences over a few lines (an address is no sentence)."""
    if draft.kind is ParagraphKind.HEADING:
        return bool(_SECTION_NUMBER.match(text) or _SECTION_WORD.match(text))
    return (
        draft.kind is ParagraphKind.PARAGRAPH
        and len(draft.lines) >= FRONT_PROSE_LINES
        and _SENTENCE_END.search(text) is not None
    )


def _names_like(text: str) -> bool:
    """Whether a line names people (and their places): at least two words, nearly all of
    them capitalised names or initials (`J.K.`), affiliation marks and a few particles
    aside; no colon, nothing in capitals only (a title set in capitals is a title)."""
    if ":" in text:
        return False
    words = [word for word in _NAME_SPLIT.split(_NAME_MARKS.sub(" ", text)) if word]
    words = [word for word in words if len(word) > 1 or word.isupper()]  # `a`, `c`: affiliations' letters
    words = [f"{word}." if len(word) == 1 else word for word in words]  # `V`, a name's last letter
    if len(words) < 2:
        return False
    named = sum(
        1
        for word in words
        if _INITIALS.fullmatch(word) or (word[0].isupper() and not word.isupper()) or word in _NAME_PARTICLES
    )
    return named >= NAMES_SHARE * len(words)


def _footnote_marks_placed(drafts: list[_Draft], *, body_size: float) -> list[_Draft]:
    """A footnote's mark that the PDF sets on a line of its own (a small number) ends the
    paragraph before it, as a superscript (``toys :-)`` + ``1`` -> ``toys :-) ¹``)."""
    placed: list[_Draft] = []
    for draft in drafts:
        (line, *rest) = draft.lines
        mark = not rest and _FOOTNOTE_MARK.fullmatch(line.text) and line.size < SUPERSCRIPT_SIZE * body_size
        if mark and placed and placed[-1].kind is ParagraphKind.PARAGRAPH:
            superscript = line.text.translate(_SUPERSCRIPT_DIGITS)
            marked = note_mark(line.text, shown=superscript)
            placed[-1].lines.append(replace(line, text=superscript, markdown=marked))
        else:
            placed.append(draft)
    return placed


def body_font_size(lines: Iterable[PageLine]) -> float:
    """The body text's font size: the size most of the (non-monospace) text is set in."""
    weight: Counter[float] = Counter()
    for line in lines:
        if not line.mono and line.size > 0:
            weight[round(line.size, 1)] += len(line.text)
    return weight.most_common(1)[0][0] if weight else 0.0


def _kind(lines: Sequence[PageLine], *, body_size: float) -> tuple[ParagraphKind, int]:
    """A draft's kind (and a heading's level): code when every line is monospace; a heading
    when it is short, of one to three lines, ends no sentence, and is set larger than the
    body (the more, the higher) or bold with a section number; a list item after a bullet."""
    if all(line.mono for line in lines):
        return ParagraphKind.CODE, 0
    text = " ".join(line.text for line in lines)
    numbered = _SECTION_NUMBER.match(text)
    size = max(line.size for line in lines)
    ratio = size / body_size if body_size > 0 else 1.0
    heading_like = (
        len(lines) <= HEADING_MAX_LINES
        and len(text) <= HEADING_MAX_CHARS
        and not re.search(r"[.,;]$", text)
        and any(character.isalpha() for character in text)
    )
    if heading_like and ratio >= 1 + FONT_SIZE_CHANGE:
        level = 1 if ratio >= 1.6 else 2 if ratio >= 1.3 else 3
        if numbered:
            level = max(level, min(_section_depth(numbered.group(1)), 4))
        return ParagraphKind.HEADING, level
    if heading_like and all(line.bold for line in lines) and numbered and ratio > 1 - FONT_SIZE_CHANGE:
        return ParagraphKind.HEADING, min(_section_depth(numbered.group(1)) + 1, 4)
    if text.startswith(_BULLETS):
        return ParagraphKind.LIST_ITEM, 0
    return ParagraphKind.PARAGRAPH, 0


def _section_depth(number: str) -> int:
    """How deep a section's number goes: `2` 1, `2.1` 2, `A.1` 2; a paper's roman `IV` 1
    and its letter `B` (a subsection of a roman section) 2."""
    if number.isalpha():
        return 1 if len(number) > 1 or number in "IVX" else 2
    return number.count(".") + 1


def _paragraph(draft: _Draft, *, vocabulary: Vocabulary, words: WordList) -> Paragraph:
    text = lines_join([line.text for line in draft.lines], vocabulary=vocabulary, words=words)
    if draft.kind is ParagraphKind.CODE:
        markdown = code_block(draft.lines)
    else:
        inline = lines_join([line.markdown or line.text for line in draft.lines], vocabulary=vocabulary, words=words)
        # Code broken at a line's end is one code span (a line's own runs are one already).
        inline = _CODE_SPANS_MET.sub(" ", inline)
        if _LEADERS.search(text):  # a contents line: its dot leaders are one ellipsis
            inline = _LEADER_DOTS.sub(" \u2026 ", inline).rstrip()
        if draft.kind is ParagraphKind.HEADING:
            markdown = f"{'#' * draft.level} {inline}"
        elif draft.kind is ParagraphKind.LIST_ITEM:
            markdown = f"- {block_start_escape(inline.lstrip(''.join(_BULLETS)).lstrip())}"
        else:
            markdown = block_start_escape(inline)
    return Paragraph(
        text=text,
        kind=draft.kind,
        page=draft.lines[0].ref.page,
        end_page=draft.lines[-1].ref.page,
        lines=tuple(line.ref for line in draft.lines),
        markdown=markdown,
        level=draft.level,
    )


def _table_paragraph(table: Table, *, page: int) -> Paragraph:
    return Paragraph(
        text="\n".join(" | ".join(row) for row in table.rows),
        kind=ParagraphKind.TABLE,
        page=page,
        end_page=max(ref.page for ref in table.refs),
        lines=tuple(sorted(table.refs, key=lambda ref: (ref.page, ref.block, ref.line))),
        markdown=table.markdown(),
        table=table,
    )


def code_block(lines: Sequence[PageLine]) -> str:
    """Monospace lines as a fenced code block, set as on the page: lines side by side (the
    columns of a preformatted table, which the PDF's layout analysis reads as separate
    blocks) make one row, each at its column (its x offset over the font's character
    width); a listing's line numbers are left out."""
    widths = [(line.x1 - line.x0) / len(line.text) for line in lines if len(line.text) >= 4]
    char_width = statistics.median(widths) if widths else 6.0
    left = min(line.x0 for line in lines)
    rows: list[list[PageLine]] = []
    for line in sorted(lines, key=lambda line: (line.top, line.x0)):
        if rows and line.top < rows[-1][0].top + ROW_OVERLAP * max(rows[-1][0].height, 1.0):
            rows[-1].append(line)
        else:
            rows.append([line])
    texts: list[str] = []
    for row in rows:
        text = ""
        for line in sorted(row, key=lambda line: line.x0):
            column = max(0, round((line.x0 - left) / char_width))
            text = text.ljust(column) if len(text) < column else (text + " " if text else text)
            text += line.text
        texts.append(text.rstrip())
    texts = _line_numbers_removed(texts)
    body = "\n".join(texts)
    longest = max((len(run) for run in re.findall("`{3,}", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{body}\n{fence}"


def _line_numbers_removed(texts: list[str]) -> list[str]:
    """A listing whose lines start with numbers counting up by one loses them."""
    numbers = [re.match(r"\s*(\d+)(\s|$)", text) for text in texts]
    if len(texts) < 3 or not all(numbers):
        return texts
    values = [int(match.group(1)) for match in numbers if match]
    if any(b - a != 1 for a, b in pairwise(values)):
        return texts
    stripped = [text[match.end() :] if match else text for text, match in zip(texts, numbers, strict=True)]
    indent = min((len(text) - len(text.lstrip()) for text in stripped if text.strip()), default=0)
    return [text[indent:] for text in stripped]


def _page_paragraphs(body: list[PageLine]) -> list[list[PageLine]]:
    blocks: dict[int, list[PageLine]] = {}
    for line in body:
        blocks.setdefault(line.ref.block, []).append(line)
    paragraphs: list[list[PageLine]] = []
    for lines in _rows_joined(blocks).values():
        for run in _runs_by_font(lines):
            if run[0].mono:
                if paragraphs and paragraphs[-1][-1].mono and _adjacent(paragraphs[-1], run):
                    paragraphs[-1].extend(run)
                else:
                    paragraphs.append(run)
            else:
                found = _block_paragraphs(run)
                if paragraphs and _item_wrapped(paragraphs[-1], found[0]):
                    paragraphs[-1].extend(found.pop(0))
                paragraphs.extend(found)
    return paragraphs


def _rows_joined(blocks: dict[int, list[PageLine]]) -> dict[int, list[PageLine]]:
    """The blocks, a block of one line that goes on a line of another block (on its row,
    right after it, in its part of the page) put into that block after that line, or one
    that a line of another block goes on (a number before a title) put before that line:
    poppler parts a line at a wide space, so a section's number and its title ("2"
    "Template Overview") or a justified heading's words stand in blocks of their own."""
    joined = {block: list(lines) for block, lines in blocks.items()}
    owner = {line.ref: block for block, lines in blocks.items() for line in lines}
    for block, lines in blocks.items():
        if len(lines) != 1 or lines[0].mono or block not in joined:
            continue
        line = lines[0]
        others = [other for key, others in joined.items() if key != block for other in others]
        for host, after in ((_row_host(line, others, before=True), 1), (_row_host(line, others, before=False), 0)):
            if host is not None:
                target = joined[owner[host.ref]]
                target.insert(target.index(host) + after, line)
                owner[line.ref] = owner[host.ref]
                del joined[block]
                break
    return joined


def _row_host(line: PageLine, others: Sequence[PageLine], *, before: bool) -> PageLine | None:
    """The line that `line` goes on (`before`: the line ends at most ROW_JOIN_LINE_HEIGHTS
    before it; else the line starts as near after it), on its row (sharing most of the
    smaller height), in its part of the page: the nearest."""
    best: PageLine | None = None
    best_gap = float("inf")
    for other in others:
        height = min(line.height, other.height)
        shared = min(line.bottom, other.bottom) - max(line.top, other.top)
        gap = line.x0 - other.x1 if before else other.x0 - line.x1
        if (
            other.region == line.region
            and not other.mono
            and shared >= ROW_OVERLAP * max(height, 1.0)
            and -0.5 <= gap <= ROW_JOIN_LINE_HEIGHTS * max(line.height, other.height, 1.0)
            and gap < best_gap
        ):
            best, best_gap = other, gap
    return best


def _item_wrapped(item: list[PageLine], lines: list[PageLine]) -> bool:
    """Whether `lines`, a block's first paragraph, are the list item before it wrapped with
    a hanging indent into a block of their own (as some PDFs set each line of a list): the
    item's first line starts with a bullet, and these start right below its last line, to
    the right of its bullet, in its font size, without a bullet of their own."""
    first, last, head = item[0], item[-1], lines[0]
    height = max(last.height, head.height, 1.0)
    return (
        first.text.startswith(_BULLETS)
        and not last.mono
        and not head.text.startswith(_BULLETS)
        and first.x0 < head.x0 <= first.x0 + HANGING_LINE_HEIGHTS * height
        and 0 <= head.top - last.bottom <= GAP_LINE_HEIGHTS * height
        and abs(head.size - last.size) <= FONT_SIZE_CHANGE * max(head.size, last.size)
    )


def _runs_by_font(lines: list[PageLine]) -> list[list[PageLine]]:
    """A block's lines cut where monospace lines start or end, and where the font size changes."""
    runs: list[list[PageLine]] = [[lines[0]]]
    previous = lines[0]
    for line in lines[1:]:
        if _FOOTNOTE_MARK.fullmatch(line.text) and line.size < SUPERSCRIPT_SIZE * previous.size and not previous.mono:
            # A footnote's mark the PDF set as a line of its own inside a paragraph.
            superscript = line.text.translate(_SUPERSCRIPT_DIGITS)
            runs[-1].append(replace(line, text=superscript, markdown=note_mark(line.text, shown=superscript)))
            continue
        resized = abs(line.size - previous.size) > FONT_SIZE_CHANGE * max(line.size, previous.size)
        previous_line, previous = previous, line
        if line.mono != previous_line.mono or resized:
            runs.append([line])
        else:
            runs[-1].append(line)
    return runs


def _adjacent(listing: list[PageLine], run: list[PageLine]) -> bool:
    """Monospace lines that belong to the listing before them, which the PDF's layout
    analysis put in another block: below it by at most a few lines, or beside it (a
    column of a preformatted table)."""
    top, bottom = min(line.top for line in listing), max(line.bottom for line in listing)
    height = max(listing[-1].height, 1.0)
    return top - height <= run[0].top <= bottom + CODE_GAP_LINE_HEIGHTS * height


def _block_paragraphs(lines: list[PageLine]) -> list[list[PageLine]]:
    left = min(line.x0 for line in lines)
    right = max(line.x1 for line in lines)
    # Lines on one row (a line poppler parted, joined back by `_rows_joined`) give no pitch.
    pitches = [
        current.top - previous.top
        for previous, current in pairwise(lines)
        if current.top - previous.top > ROW_OVERLAP * max(previous.height, 1.0)
    ]
    pitch = statistics.median(pitches) if len(pitches) >= 2 else None
    paragraphs: list[list[PageLine]] = [[lines[0]]]
    for index in range(1, len(lines)):
        previous, line = lines[index - 1], lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else None
        # A list of references: each entry starts at its label (`[3]`), wherever the line stands.
        listed = _REFERENCE_LABEL.match(line.text) is not None and _REFERENCE_LABEL.match(lines[0].text) is not None
        if listed or _starts_paragraph(previous, line, following, left=left, right=right, pitch=pitch):
            paragraphs.append([line])
        else:
            paragraphs[-1].append(line)
    return paragraphs


def _starts_paragraph(
    previous: PageLine,
    line: PageLine,
    following: PageLine | None,
    *,
    left: float,
    right: float,
    pitch: float | None,
) -> bool:
    height = max(previous.height, line.height, 1.0)
    indent = INDENT_LINE_HEIGHTS * height
    if pitch is not None and line.top - previous.top > GAP_FACTOR * pitch:
        return True
    if line.top - previous.bottom > GAP_LINE_HEIGHTS * height:
        return True
    if line.text.startswith(_BULLETS) or _LEADERS.search(previous.text):  # a contents entry ends at its leaders
        return True
    if (
        line.x0 > left + indent
        and previous.x0 <= left + indent
        and following is not None
        and following.x0 <= left + indent
        and not _hanging(previous, line, following)
    ):
        return True
    ends_short = previous.x1 < right - SHORT_LINE * (right - left)
    return ends_short and _SENTENCE_END.search(previous.text) is not None and line.text[:1].isupper()


def _hanging(previous: PageLine, line: PageLine, following: PageLine) -> bool:
    """Whether `line`, indented under a list item's first line, is that item's text wrapped
    with a hanging indent: the line after it starts another item, or stands apart from it
    (a paragraph whose first line is indented goes on at the left edge right below)."""
    if not previous.text.startswith(_BULLETS):
        return False
    height = max(line.height, following.height, 1.0)
    return following.text.startswith(_BULLETS) or following.top - line.bottom > GAP_LINE_HEIGHTS * height


def _continues(draft: _Draft, following: _Draft) -> bool:
    if draft.kind not in (ParagraphKind.PARAGRAPH, ParagraphKind.LIST_ITEM) or following.kind is not (
        ParagraphKind.PARAGRAPH
    ):
        return False
    last, first = draft.lines[-1], following.lines[0]
    if _SENTENCE_END.search(last.text):
        return False
    ends_short = last.x1 < draft.body_right - SHORT_LINE * (draft.body_right - draft.body_left)
    if ends_short and not last.text.endswith(_HYPHENS):
        return False
    if first.text.startswith(_BULLETS):
        return False
    if abs(first.size - last.size) > FONT_SIZE_CHANGE * max(first.size, last.size):
        return False
    block_lines = following.lines
    if len(block_lines) >= 2:
        block_left = min(line.x0 for line in block_lines)
        if first.x0 > block_left + INDENT_LINE_HEIGHTS * max(first.height, 1.0):
            return False
    return True
