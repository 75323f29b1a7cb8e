"""The book's table of contents, shared by every renderer that has navigation (Epub's nav
and NCX, the Docx contents, the Pdf outline, the Html contents list).

A chapter starts at a page whose first block is a chapter heading (`ExportBook.chapter_level`;
or every `pages_per_chapter` pages, see `ChapterCutter`). Inside a chapter, every other heading down
to `TOC_DEPTH` (`###`) is a section of the contents, nested under the nearest heading before
it of a higher level (a smaller number), or directly under its chapter. A heading inside a
chapter at the chapter heading's own level or above (a chapter-sized "Table of Contents"
before the chapter's sections, a short chapter starting mid-page) is listed directly under
the chapter and nests nothing: the sections after it stay the chapter's. Titles are the
translation's heading text as plain text (no Markdown, whitespace collapsed); each heading
has an anchor (`heading_anchor`: the page and the heading's place among the page's
headings), the same in every format, so a renderer can put the id on the heading as it
writes the page and the contents link to it.

Memory: what the contents hold is each section's title, level and anchor, never the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from exports.blocks import Block

TOC_DEPTH = 3  # headings `#`..`###` are listed; `####` and deeper are not


def heading_anchor(page_index: int, ordinal: int) -> str:
    """The id of a page's heading: `ordinal` counts the page's headings from 0, all of
    them (listed or not), in the order the page's blocks have them."""
    return f"p{page_index}-h{ordinal}"


def heading_title(block: Block) -> str:
    """A heading's text as a contents entry shows it: plain, on one line."""
    return " ".join(block.text.split())


@dataclass(frozen=True)
class Section:
    title: str
    level: int  # the heading's level, 1-6
    anchor: str  # heading_anchor of the heading
    block: int  # the heading's position in the page's blocks


def page_sections(page_index: int, blocks: list[Block], *, chapter_heading: bool) -> list[Section]:
    """The page's headings the contents list, in order: those down to TOC_DEPTH with a
    title. `chapter_heading`: the page's first block is its chapter's heading, which names
    the chapter and is not a section of it."""
    sections: list[Section] = []
    ordinal = 0
    for position, block in enumerate(blocks):
        if block.kind != "heading":
            continue
        title = heading_title(block)
        if title and block.level <= TOC_DEPTH and not (chapter_heading and position == 0):
            sections.append(Section(title, block.level, heading_anchor(page_index, ordinal), position))
        ordinal += 1
    return sections


@dataclass
class Entry:
    """A section of the contents with the sections nested under it."""

    section: Section
    children: list[Entry] = field(default_factory=list)


@dataclass
class ChapterSections:
    """A chapter's sections, nested as they come: a section goes under the last one of a
    higher level (smaller number) still open, or at the chapter's top. `level`: the
    chapter heading's (0 for a chapter without one); a section at that level or above
    goes at the top and nothing nests under it."""

    level: int = 0
    entries: list[Entry] = field(default_factory=list)
    _open: list[Entry] = field(default_factory=list)

    def add(self, section: Section) -> int:
        """Nest the section; its depth under the chapter (0: directly under it)."""
        entry = Entry(section)
        if section.level <= self.level:
            self._open.clear()
            self.entries.append(entry)
            return 0
        while self._open and self._open[-1].section.level >= section.level:
            self._open.pop()
        (self._open[-1].children if self._open else self.entries).append(entry)
        self._open.append(entry)
        return len(self._open) - 1


@dataclass
class HeadingIds:
    """Hands out a page's heading ids in order as a renderer writes its headings (the
    same ids `page_sections` links to, when the renderer writes every heading it parsed)."""

    page_index: int
    _count: int = 0

    def next(self) -> str:
        anchor = heading_anchor(self.page_index, self._count)
        self._count += 1
        return anchor
