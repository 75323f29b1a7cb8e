"""Text helpers the Epub and Docx renderers share: text XML can hold, the source text's
paragraphs, the bilingual pairing of source and translation, and where chapters start.

(Candidates for exports/blocks.py once the other renderers want them too.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from exports.blocks import Block
from exports.labels import base_language

# XML 1.0 allows tab, line feed, carriage return and everything from U+0020 except the
# surrogates and U+FFFE/U+FFFF; lxml refuses the rest (OCR and PDF text layers carry
# form feeds and other control characters).
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

# Scripts written without spaces between words: a line break inside a paragraph joins
# with nothing rather than a space.
_UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})

# A chapter never holds more pages than this (or than pages_per_chapter, if larger): one
# chapter is one document a reader opens, and the unit the EPUB renderer holds in memory.
CHAPTER_PAGE_LIMIT = 100


def xml_safe(text: str) -> str:
    """The text without the characters XML 1.0 cannot hold."""
    return _XML_INVALID.sub("", text)


def source_paragraphs(text: str, language: str | None) -> list[str]:
    """The source text's paragraphs, split at blank lines. Line breaks inside a paragraph
    are the layout of the page (a PDF text layer, an OCR transcription), so they become
    spaces, or nothing in scripts written without spaces."""
    joiner = "" if base_language(language) in _UNSPACED_LANGUAGES else " "
    paragraphs: list[str] = []
    for chunk in re.split(r"\n[ \t\f\v]*\n", xml_safe(text)):
        lines = [line.strip() for line in chunk.splitlines() if line.strip()]
        if lines:
            paragraphs.append(joiner.join(lines))
    return paragraphs


def chapter_heading(blocks: list[Block], *, chapter_level: int = 2) -> Block | None:
    """`exports.blocks.first_heading` for a page already parsed: its first block when
    that is a heading of `chapter_level` or above (a chapter start). Parsing is most of a
    renderer's time, so each page is parsed once. Notes are not the page's start."""
    first = next((block for block in blocks if block.kind != "note"), None)
    if first is not None and first.kind == "heading" and first.level <= chapter_level:
        return first
    return None


def translation_units(blocks: list[Block]) -> list[list[Block]]:
    """The translation's blocks as a reader pairs them with the source: a run of list
    items is one unit, every other block a unit of its own."""
    units: list[list[Block]] = []
    for block in blocks:
        if block.kind == "list_item" and units and units[-1][-1].kind == "list_item":
            units[-1].append(block)
        else:
            units.append([block])
    return units


def interleave(source: list[str], units: list[list[Block]]) -> list[tuple[list[str], list[Block]]]:
    """Each translation unit with the source paragraphs shown before it. When the counts
    match, one source paragraph per unit; otherwise the source paragraphs are spread
    evenly over the units, in order, so that none is dropped and none moves after a
    later unit's. A page without translation keeps its source paragraphs alone."""
    if not units:
        return [(source, [])] if source else []
    count = len(units)
    pairs: list[tuple[list[str], list[Block]]] = []
    for position, unit in enumerate(units):
        start = -(-position * len(source) // count)  # ceiling division
        end = -(-(position + 1) * len(source) // count)
        pairs.append((source[start:end], unit))
    return pairs


@dataclass
class ChapterCutter:
    """Decides, page by page as the book streams, where chapters start: at every page
    whose first block is a chapter heading (`chapter_heading`); until the book's first
    such heading, also every `pages_per_chapter` pages (so a book without headings is
    cut evenly, and front matter before the first heading too); and a chapter never
    runs past max(CHAPTER_PAGE_LIMIT, pages_per_chapter) pages."""

    pages_per_chapter: int
    _pages_in_chapter: int = 0
    _heading_seen: bool = False

    def starts_chapter(self, heading: Block | None) -> bool:
        """Whether this page (whose chapter heading, if any, is `heading`) starts a chapter."""
        per_chapter = max(1, self.pages_per_chapter)
        start = (
            self._pages_in_chapter == 0
            or heading is not None
            or (not self._heading_seen and self._pages_in_chapter >= per_chapter)
            or self._pages_in_chapter >= max(CHAPTER_PAGE_LIMIT, per_chapter)
        )
        self._heading_seen = self._heading_seen or heading is not None
        self._pages_in_chapter = 1 if start else self._pages_in_chapter + 1
        return start
