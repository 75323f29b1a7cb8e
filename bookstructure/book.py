"""A book read in windows: each page's body decided once, in order, as its pages arrive.

Normalize prepares a book's pages in order, in tasks of NORMALIZE_TASK_PAGES, and a batch
may start as soon as its pages are prepared. The structure of a page depends on its
neighbours (furniture repeats over nearby pages; a paragraph may run on to the next page),
so `pages_structure` decides the pages from `start` on, given the layouts of the pages
around them, and only those far enough from the last page read (`ready_through`) that what
follows cannot change them. What it decided is stored with each page (docs/book-structure.md,
"From layout to the page's Markdown"): the page's Markdown, its furniture, and the pages a
carried paragraph took the first lines of (`carries_into`), which the next window is given
back (`carried_in`) so that every page break is decided once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from bookstructure.furniture import BookFurniture, FurnitureKind, FurnitureLine, PageFurniture, furniture_detect
from bookstructure.lines import Layout, LineRef, page_lines
from bookstructure.paragraphs import BookText, PageText, body_font_size, book_text_build
from bookstructure.words import WordList

# Pages of context before a page for its furniture (a header's place is learnt from the
# pages before: a short chapter's header repeats on too few pages to run), and the pages
# after it read before it is decided (a running header repeats within 2 pages).
STRUCTURE_WINDOW_PAGES = 10
STRUCTURE_LOOKAHEAD_PAGES = 2
# Normalize decides pages this many at a time (page 1 at once): each decision reads the
# window's layouts again.
STRUCTURE_GROUP_PAGES = 4
_WORD = re.compile(r"\w+(?:['\u2019-]\w+)*")


@dataclass(frozen=True)
class Carried:
    """Lines at the top of a page (`[block, line]` of its layout) that the paragraph of
    an earlier page (`origin`) took."""

    page: int
    origin: int
    lines: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PageBody:
    """What a page is, once decided: its body as Markdown (what is translated), its
    furniture lines ({kind, text}), the page whose paragraph its first lines finish, and
    the pages whose first lines its last paragraph takes (all 1-based book pages)."""

    index: int
    structured: bool  # it has a layout to read (else its text is read from its image)
    markdown: str
    furniture: tuple[Mapping[str, str], ...]
    carried_from: int | None
    carries_into: tuple[Carried, ...]

    @property
    def words(self) -> int:
        """Its words (Markdown's syntax, `##`, fences and table rules, is none)."""
        return len(_WORD.findall(self.markdown))


def pages_structure(
    layouts: Sequence[Layout],
    *,
    first_index: int,
    start: int,
    ready_through: int,
    carried_in: Mapping[int, Carried],
    words: WordList,
) -> list[PageBody]:
    """The bodies of the pages from `start` (1-based) on, in order, up to the last one that
    can be decided: `layouts` are the pages `first_index`, `first_index + 1`, ... (at least
    STRUCTURE_WINDOW_PAGES before `start` where the book has them), and a page is decided
    when it and the end of its last paragraph are at most `ready_through`. `carried_in`:
    pages whose first lines an earlier, decided page took -> those lines."""
    offset = start - first_index
    furniture, text = _window_text(layouts, first_index=first_index, start=start, carried_in=carried_in, words=words)
    carried = {page: taken for page, taken in carried_in.items() if page >= start}
    bodies: list[PageBody] = []
    for page_text in text.pages:
        index = start + page_text.page
        ends = [paragraph.end_page + start for paragraph in page_text.paragraphs]
        if index > ready_through or any(end > ready_through for end in ends):
            break
        lines = furniture.pages[page_text.page + offset].lines
        taken: dict[int, list[tuple[int, int]]] = {}
        for paragraph in page_text.paragraphs:
            for ref in paragraph.lines:
                if ref.page != page_text.page:
                    taken.setdefault(ref.page + start, []).append((ref.block, ref.line))
        bodies.append(
            PageBody(
                index=index,
                structured=bool(layouts[page_text.page + offset].get("blocks")),
                markdown=page_text.markdown,
                furniture=tuple({"kind": line.kind.value, "text": line.text} for line in lines),
                carried_from=carried[index].origin
                if index in carried
                else (None if page_text.carried_from is None else page_text.carried_from + start),
                carries_into=tuple(
                    Carried(page=page, origin=index, lines=tuple(refs)) for page, refs in sorted(taken.items())
                ),
            )
        )
    return bodies


def pages_paragraphs(
    layouts: Sequence[Layout],
    *,
    first_index: int,
    start: int,
    through: int,
    carried_in: Mapping[int, Carried],
    words: WordList,
    furniture: Sequence[Sequence[Mapping[str, str]]] | None = None,
) -> list[PageText]:
    """The paragraphs of pages `start` to `through` (1-based) as `pages_structure` decides
    them from the same layouts (the same call, pure): each `PageText.page` and each line's
    `LineRef.page` is a 1-based book page. `through` should leave STRUCTURE_LOOKAHEAD_PAGES
    of `layouts` after it (except at the book's end), as normalize's windows do.
    `furniture`: each page's furniture as `PageBody.furniture` stored it ({kind, text});
    given, a page's furniture is those lines (what normalize decided, with the window it
    had then), else it is detected again."""
    _, text = _window_text(
        layouts,
        first_index=first_index,
        start=start,
        carried_in=carried_in,
        words=words,
        furniture=None if furniture is None else _stored_furniture(layouts, furniture),
    )
    found: list[PageText] = []
    for page_text in text.pages:
        index = start + page_text.page
        if index > through:
            break
        found.append(
            PageText(
                page=index,
                paragraphs=tuple(paragraph.moved(start) for paragraph in page_text.paragraphs),
                carried_from=None if page_text.carried_from is None else page_text.carried_from + start,
            )
        )
    return found


def _window_text(
    layouts: Sequence[Layout],
    *,
    first_index: int,
    start: int,
    carried_in: Mapping[int, Carried],
    words: WordList,
    furniture: BookFurniture | None = None,
) -> tuple[BookFurniture, BookText]:
    """The furniture of the window's pages (detected unless given), and the body text of
    its pages from `start` on."""
    offset = start - first_index
    furniture = furniture if furniture is not None else furniture_detect(layouts)
    body_size = body_font_size(line for index, layout in enumerate(layouts) for line in page_lines(layout, page=index))
    carried = {page: taken for page, taken in carried_in.items() if page >= start}
    text = book_text_build(
        layouts[offset:],
        words=words,
        furniture=_shifted(furniture, offset),
        carried_in={page - start: taken.origin - start for page, taken in carried.items()},
        body_size=body_size,
        first_page=start == 1,
        excluded=frozenset(
            LineRef(page=page - start, block=block, line=line)
            for page, taken in carried.items()
            for block, line in taken.lines
        ),
    )
    return furniture, text


def _stored_furniture(layouts: Sequence[Layout], stored: Sequence[Sequence[Mapping[str, str]]]) -> BookFurniture:
    """The furniture the pages stored ({kind, text}), found again among their lines (each
    item once, the first line of its text)."""
    pages = []
    for index, (layout, items) in enumerate(zip(layouts, stored, strict=True)):
        lines = page_lines(layout, page=index)
        found: list[FurnitureLine] = []
        used: set[LineRef] = set()
        height = float(layout.get("height") or 0.0)
        for item in items:
            # Furniture stands at an edge: of the lines with its text, the one nearest an edge
            # (a page number "1" is not the mark "1" of an author's affiliation).
            line = min(
                (line for line in lines if line.text == item.get("text") and line.ref not in used),
                key=lambda line: min(line.top, height - line.bottom) if height else 0.0,
                default=None,
            )
            if line is not None:
                used.add(line.ref)
                found.append(FurnitureLine(ref=line.ref, kind=FurnitureKind(item["kind"]), text=line.text))
        pages.append(PageFurniture(page=index, lines=tuple(found)))
    return BookFurniture(pages=tuple(pages))


def _shifted(furniture: BookFurniture, offset: int) -> BookFurniture:
    """The furniture of the pages from `offset` on, numbered from 0 there."""
    return BookFurniture(
        pages=tuple(
            PageFurniture(
                page=page.page - offset,
                lines=tuple(replace(line, ref=replace(line.ref, page=line.ref.page - offset)) for line in page.lines),
            )
            for page in furniture.pages[offset:]
        )
    )
