"""Paragraphs: a book's body lines joined into paragraphs, across lines and across pages.

`book_text_build` reads the pages of a book in order, leaves out their furniture
(`furniture.py`) and joins the remaining lines (docs/book-structure.md, "Paragraphs" and
"Paragraphs across pages"):

- Within a block, a new paragraph starts at a line that
  - stands below the previous one by more than the block's line spacing (`GAP_FACTOR`
    times its usual line pitch, or a gap over `GAP_LINE_HEIGHTS` line heights),
  - starts with a bullet,
  - is indented (by over `INDENT_LINE_HEIGHTS` line heights) between two lines at the
    block's left edge, or
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
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise

from projects.structure.furniture import BookFurniture, furniture_detect
from projects.structure.lines import Layout, LineRef, PageLine, page_lines
from projects.structure.words import Vocabulary, WordList, hyphenation_resolve, vocabulary_collect

GAP_FACTOR = 1.4
GAP_LINE_HEIGHTS = 0.8
INDENT_LINE_HEIGHTS = 0.8
SHORT_LINE = 0.15
FONT_SIZE_CHANGE = 0.15

_BULLETS = ("\u2022", "\u25e6", "\u25aa", "\u2023", "\u25cf", "\u25cb", "\u25a0", "\u25a1", "\u2013")
_SENTENCE_END = re.compile("[.!?:\u3002\uff01\uff1f][\"'\u201d\u2019)\\]]*$")
_HYPHENS = ("-", "\u00ad", "\u2010")


class ParagraphKind(StrEnum):
    PARAGRAPH = "paragraph"


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

    @property
    def carried(self) -> bool:
        return self.end_page != self.page


@dataclass(frozen=True)
class PageText:
    """The paragraphs that start on a page, in reading order. `carried_from` is the page
    where the paragraph that this page's first body lines finish starts (None if none)."""

    page: int
    paragraphs: tuple[Paragraph, ...]
    carried_from: int | None


@dataclass(frozen=True)
class BookText:
    """The body text of a book, page by page."""

    pages: tuple[PageText, ...]


@dataclass
class _Draft:
    lines: list[PageLine]
    body_left: float  # the body text's left and right edges on the page of its last line
    body_right: float


def book_text_build(
    layouts: Sequence[Layout],
    *,
    words: WordList,
    furniture: BookFurniture | None = None,
) -> BookText:
    """The paragraphs of a book's pages (in book order), furniture left out; `furniture`
    defaults to `furniture_detect(layouts)`, `words` is the source language's word list
    (`words.word_list`)."""
    furniture = furniture if furniture is not None else furniture_detect(layouts)
    excluded = furniture.refs()
    bodies = [
        [line for line in page_lines(layout, page=index) if line.ref not in excluded]
        for index, layout in enumerate(layouts)
    ]
    vocabulary = vocabulary_collect(line.text for body in bodies for line in body)

    drafts_by_page: list[list[_Draft]] = []
    for body in bodies:
        body_left = min((line.x0 for line in body), default=0.0)
        body_right = max((line.x1 for line in body), default=0.0)
        drafts_by_page.append(
            [_Draft(lines=group, body_left=body_left, body_right=body_right) for group in _page_paragraphs(body)]
        )

    pages: list[PageText] = []
    carried_from: list[int | None] = [None] * len(layouts)
    open_draft: _Draft | None = None
    for index, drafts in enumerate(drafts_by_page):
        if open_draft is not None and drafts and _continues(open_draft, drafts[0]):
            carried_from[index] = open_draft.lines[0].ref.page
            open_draft.lines.extend(drafts[0].lines)
            open_draft.body_left, open_draft.body_right = drafts[0].body_left, drafts[0].body_right
            drafts = drafts[1:]
            drafts_by_page[index] = drafts
            if not drafts:
                continue
        open_draft = drafts[-1] if drafts else None

    for index, drafts in enumerate(drafts_by_page):
        pages.append(
            PageText(
                page=index,
                paragraphs=tuple(_paragraph(draft, vocabulary=vocabulary, words=words) for draft in drafts),
                carried_from=carried_from[index],
            )
        )
    return BookText(pages=tuple(pages))


def lines_join(texts: Sequence[str], *, vocabulary: Vocabulary, words: WordList) -> str:
    """The lines of one paragraph as one text: joined with a space, a word hyphenated at a
    line end rejoined or kept as `hyphenation_resolve` decides."""
    text = ""
    for line in texts:
        if not text:
            text = line
            continue
        head = text.rsplit(" ", 1)[-1]
        if head.endswith(_HYPHENS) and len(head) > 1:
            keep = hyphenation_resolve(head, line.split(" ", 1)[0], vocabulary=vocabulary, words=words)
            text = (text if keep else text[:-1]) + line
        else:
            text = f"{text} {line}"
    return text


def _paragraph(draft: _Draft, *, vocabulary: Vocabulary, words: WordList) -> Paragraph:
    return Paragraph(
        text=lines_join([line.text for line in draft.lines], vocabulary=vocabulary, words=words),
        kind=ParagraphKind.PARAGRAPH,
        page=draft.lines[0].ref.page,
        end_page=draft.lines[-1].ref.page,
        lines=tuple(line.ref for line in draft.lines),
    )


def _page_paragraphs(body: list[PageLine]) -> list[list[PageLine]]:
    blocks: dict[int, list[PageLine]] = {}
    for line in body:
        blocks.setdefault(line.ref.block, []).append(line)
    paragraphs: list[list[PageLine]] = []
    for lines in blocks.values():
        paragraphs.extend(_block_paragraphs(lines))
    return paragraphs


def _block_paragraphs(lines: list[PageLine]) -> list[list[PageLine]]:
    left = min(line.x0 for line in lines)
    right = max(line.x1 for line in lines)
    pitches = [current.top - previous.top for previous, current in pairwise(lines)]
    pitch = statistics.median(pitches) if len(pitches) >= 2 else None
    paragraphs: list[list[PageLine]] = [[lines[0]]]
    for index in range(1, len(lines)):
        previous, line = lines[index - 1], lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else None
        if _starts_paragraph(previous, line, following, left=left, right=right, pitch=pitch):
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
    if line.text.startswith(_BULLETS):
        return True
    if (
        line.x0 > left + indent
        and previous.x0 <= left + indent
        and following is not None
        and following.x0 <= left + indent
    ):
        return True
    ends_short = previous.x1 < right - SHORT_LINE * (right - left)
    return ends_short and _SENTENCE_END.search(previous.text) is not None and line.text[:1].isupper()


def _continues(draft: _Draft, following: _Draft) -> bool:
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
