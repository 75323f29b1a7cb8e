"""Reading the lines of a stored page layout (docs/book-structure.md, "The page layout").

The structure functions work on lines: each line of each block of a page, with its box,
its text (its spans joined by one space, none before a glued span) and its font size (the largest of its spans).
A page without a layout (`{}`) has no lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Layout = Mapping[str, Any]


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


def page_lines(layout: Layout, *, page: int) -> list[PageLine]:
    """The lines of one page in the layout's reading order (blocks, then lines in a block)."""
    lines: list[PageLine] = []
    for block_index, block in enumerate(layout.get("blocks") or []):
        for line_index, line in enumerate(block.get("lines") or []):
            spans: Sequence[Mapping[str, Any]] = line.get("spans") or []
            text = spans_text(spans)
            if not text:
                continue
            x0, top, x1, bottom = (float(value) for value in line["bbox"])
            size = max((float(span.get("size") or 0.0) for span in spans), default=0.0) or bottom - top
            lines.append(
                PageLine(
                    ref=LineRef(page=page, block=block_index, line=line_index),
                    x0=x0,
                    top=top,
                    x1=x1,
                    bottom=bottom,
                    text=" ".join(text.split()),
                    size=size,
                )
            )
    return lines


def page_height(layout: Layout) -> float:
    """The page's height in the layout's unit; 0.0 for a page without a layout."""
    return float(layout.get("height") or 0.0)
