"""Reading the lines of a stored page layout (docs/book-structure.md, "The page layout").

The structure functions work on lines: each line of each block of a page, with its box,
its text (its spans joined by one space, none before a glued span), its font size (the largest of its spans)
and its font (the one most of its prose is set in).
A page without a layout (`{}`) has no lines.

A monospace line keeps the runs of spaces inside it (a listing's aligned columns); other
lines' spaces are one. A line is monospace (code) when every span of it is, or when nearly
all of it is (a glyph of another font inside a listing's line: "lÃ" "a" "ers" in
shared-mime-info's example) and a line next to it in its block is wholly monospace: it
stays a line of its listing.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bookstructure.columns import LineBox, Region, page_regions
from core.markdown import code_span, markdown_escape

Layout = Mapping[str, Any]

# Layouts whose lines are kept (`page_lines`): a window of pages and its neighbours.
RECENT_LAYOUTS = 64
# A listing's line may hold this share of its characters in another font and stay code.
MONO_SHARE_MIN = 0.9
_SUBSET_PREFIX = re.compile(r"^[A-Z]{6}\+")
# A footnote's mark in a line (a number or a sign set smaller, glued to the word before it)
# is kept in a line's Markdown between these (private-use characters), with the text to
# show if no note of the page has that mark (`note_mark`); paragraphs.py makes it a
# footnote reference or that text, so they never leave the structure layer.
MARK_OPEN, MARK_SPLIT, MARK_CLOSE = "\ue000", "\ue001", "\ue002"
MARK_SIZE = 0.85  # a mark is set at most this much of the size of the text before it
_ONE_MARK = r"(?:\d{1,3}|[*\u2217\u2020\u2021\u00a7\u00b6?]{1,3})"
_MARK = re.compile(f"{_ONE_MARK}(?:,\\s?{_ONE_MARK})*")


@dataclass(frozen=True)
class LineRef:
    """Where a line is: its page (position in the book, 0-based), block and line indexes."""

    page: int
    block: int
    line: int


@dataclass(frozen=True)
class PageLine:
    """One line of a page layout, as the structure functions read it."""

    ref: LineRef
    x0: float
    top: float
    x1: float
    bottom: float
    text: str
    size: float
    bold: bool = False  # every span of the line is bold
    mono: bool = False  # the line is set in a monospace font (see the module's docstring)
    markdown: str = ""  # its text as Markdown: prose escaped, monospace runs as `code`
    font: str = ""  # the font most of its prose is set in (no subset prefix; see _dominant_font); "" when unnamed
    region: int = 0  # the part of the page it is read in (columns.py): its position in the page's reading order
    column: int = 0  # that part's column (0-based), -1 for a part set across a page in columns

    @property
    def height(self) -> float:
        return self.bottom - self.top


def spans_text(spans: Sequence[Mapping[str, Any]]) -> str:
    """A line's text: its spans joined by one space, but none before a span `glued` to the
    word before it ("bzip2" + "," -> "bzip2,")."""
    parts: list[str] = []
    for span in spans:
        text = str(span.get("text", "")).strip()
        if not text:
            continue
        if parts and not span.get("glued"):
            parts.append(" ")
        parts.append(text)
    return "".join(parts)


def note_mark(mark: str, *, shown: str) -> str:
    """A footnote's mark as a line's Markdown keeps it: `shown` unless a note of the page has it."""
    return f"{MARK_OPEN}{mark}{MARK_SPLIT}{shown}{MARK_CLOSE}"


def spans_markdown(spans: Sequence[Mapping[str, Any]]) -> str:
    """A line's text as Markdown: like `spans_text`, prose escaped and each run of
    monospace spans one code span (an option, a command, an identifier set as code).
    A footnote's mark glued to the word before it, in a smaller size, is a `note_mark`."""
    parts: list[str] = []
    code: list[str] = []
    before = 0.0

    def code_close() -> None:
        if code:
            parts.append(code_span("".join(code)))
            code.clear()

    for span in spans:
        text = " ".join(str(span.get("text", "")).split())
        if not text:
            continue
        gap = "" if span.get("glued") or not (parts or code) else " "
        size = float(span.get("size") or 0.0)
        if span.get("glued") and _MARK.fullmatch(text) and 0 < size <= MARK_SIZE * before:
            code_close()
            parts.append(note_mark(text, shown=markdown_escape(text)))
            continue
        before = size
        if span.get("mono"):
            if code:
                code.append(gap + text)
            else:
                parts.append(gap)
                code.append(text)
        else:
            code_close()
            parts.append(gap + markdown_escape(text))
    code_close()
    return "".join(parts)


_recent: OrderedDict[int, tuple[Layout, list[PageLine]]] = OrderedDict()
_recent_lock = threading.Lock()


def page_lines(layout: Layout, *, page: int) -> list[PageLine]:
    """The lines of one page in the layout's reading order (blocks, then lines in a block),
    each `LineRef` on page `page`.

    The structure functions read each page of a window several times (its body size, its
    furniture, its paragraphs, its tables) and windows overlap, so the lines of the
    RECENT_LAYOUTS layouts read last are kept, by the layout object itself (held with them,
    so its identity cannot pass to another): a layout must not be changed once read."""
    with _recent_lock:
        kept = _recent.get(id(layout))
        if kept is not None and kept[0] is layout:
            _recent.move_to_end(id(layout))
    if kept is not None and kept[0] is layout:
        lines = kept[1]
    else:
        lines = _lines_read(layout)
        with _recent_lock:
            _recent[id(layout)] = (layout, lines)
            while len(_recent) > RECENT_LAYOUTS:
                _recent.popitem(last=False)
    return [replace(line, ref=LineRef(page=page, block=line.ref.block, line=line.ref.line)) for line in lines]


def _lines_read(layout: Layout) -> list[PageLine]:
    """The page's lines, on page 0, in reading order (a page in columns column by column)."""
    page = 0
    lines: list[PageLine] = []
    blocks = layout.get("blocks") or []
    for region_index, region in enumerate(_regions(layout)):
        for block_index in region.blocks:
            lines += _block_lines(
                blocks[block_index], page=page, block_index=block_index, region=region_index, column=region.column
            )
    return lines


def _regions(layout: Layout) -> list[Region]:
    boxes = [
        [
            LineBox(*_box(line["bbox"]), words=len(spans_text(line.get("spans") or []).split()))
            for line in block.get("lines") or []
        ]
        for block in layout.get("blocks") or []
    ]
    return page_regions(boxes, width=float(layout.get("width") or 0.0))


def _box(bbox: Sequence[Any]) -> tuple[float, float, float, float]:
    x0, top, x1, bottom = (float(value) for value in bbox)
    return x0, top, x1, bottom


def _block_lines(block: Mapping[str, Any], *, page: int, block_index: int, region: int, column: int) -> list[PageLine]:
    """The block's lines with their text, fonts and place."""
    block_lines: list[tuple[PageLine, float]] = []
    for line_index, line in enumerate(block.get("lines") or []):
        spans: Sequence[Mapping[str, Any]] = line.get("spans") or []
        text = spans_text(spans)
        if not text:
            continue
        x0, top, x1, bottom = (float(value) for value in line["bbox"])
        size = max((float(span.get("size") or 0.0) for span in spans), default=0.0) or bottom - top
        inked = [span for span in spans if str(span.get("text", "")).strip()]
        block_lines.append(
            (
                PageLine(
                    ref=LineRef(page=page, block=block_index, line=line_index),
                    x0=x0,
                    top=top,
                    x1=x1,
                    bottom=bottom,
                    text=text if _mono(inked) else " ".join(text.split()),
                    size=size,
                    bold=_bold(inked),
                    mono=_mono(inked),
                    markdown=spans_markdown(inked),
                    font=_dominant_font(inked),
                    region=region,
                    column=column,
                ),
                _mono_share(inked),
            )
        )
    return _listing_lines_kept(block_lines)


def _bold(spans: Sequence[Mapping[str, Any]]) -> bool:
    """Every span of the line is bold, its code and a footnote's mark aside (a heading
    naming `asmeconf.bst`, a heading with a note)."""
    largest = max((float(span.get("size") or 0.0) for span in spans), default=0.0)
    prose = [
        span
        for span in spans
        if not span.get("mono")
        and not (
            _MARK.fullmatch(str(span.get("text", "")).strip()) and float(span.get("size") or 0.0) <= MARK_SIZE * largest
        )
    ] or spans
    return bool(prose) and all(span.get("bold") for span in prose)


def _mono(spans: Sequence[Mapping[str, Any]]) -> bool:
    return all(span.get("mono") for span in spans)


def _dominant_font(spans: Sequence[Mapping[str, Any]]) -> str:
    """The font name most of the spans' characters (spaces aside) are set in: of its prose
    when it has any (a name or an option set as code inside a sentence does not make the
    sentence's font), else of its code."""
    prose = [span for span in spans if not span.get("mono")]
    counts: Counter[str] = Counter()
    for span in prose or spans:
        counts[_SUBSET_PREFIX.sub("", str(span.get("font") or ""))] += len("".join(str(span.get("text", "")).split()))
    return counts.most_common(1)[0][0] if counts else ""


def _mono_share(spans: Sequence[Mapping[str, Any]]) -> float:
    """The share of a line's characters (spaces aside) set in a monospace font."""
    sizes = [(len("".join(str(span.get("text", "")).split())), bool(span.get("mono"))) for span in spans]
    total = sum(size for size, _ in sizes)
    return sum(size for size, mono in sizes if mono) / total if total else 0.0


def _listing_lines_kept(block_lines: list[tuple[PageLine, float]]) -> list[PageLine]:
    """The block's lines, a nearly monospace line next to a monospace one made monospace."""
    kept = []
    for index, (line, share) in enumerate(block_lines):
        neighbours = block_lines[max(0, index - 1) : index] + block_lines[index + 1 : index + 2]
        if not line.mono and share >= MONO_SHARE_MIN and any(other.mono for other, _ in neighbours):
            line = replace(line, mono=True)
        kept.append(line)
    return kept


def page_height(layout: Layout) -> float:
    """The page's height in the layout's unit; 0.0 for a page without a layout."""
    return float(layout.get("height") or 0.0)
