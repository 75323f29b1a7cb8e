"""EPUB 3 with ebooklib: metadata, a navigation document (with a page-list when page
markers are asked for) and an NCX, one XHTML chapter per detected chapter. The navigation's
titles, chapters named by their pages and the notices are in the book's language
(`exports.labels`); tables are XHTML tables (`_epub_xhtml.table_xhtml`).

The navigation and the NCX list the chapters and, nested under each, its sections: the
headings inside it down to `###` (`exports.toc`), each linking to its heading's id in the
chapter's XHTML (`chapter-0003.xhtml#p41-h2`), titled with the translation's heading text.

Chapters start at pages whose first block is a chapter heading, or every
`pages_per_chapter` pages in a book without them (see `ChapterCutter`). Arabic, Hebrew
and the other right-to-left languages get `dir="rtl"` and a right-to-left page
progression. A bilingual export interleaves each source paragraph, in its own language
and style, before its translation. A page's footnotes go to the end of its chapter's
document, as EPUB 3 footnotes (`_epub_xhtml.notes_xhtml`).

Memory: ebooklib writes the whole package at the end, so the chapters must exist before
`write`. Each chapter's XHTML is built as the pages stream and parked in a temporary file
(`_ChapterSpool`) as soon as the chapter closes; what stays in memory is one chapter's
text, the list of chapter items (titles and file offsets), the sections' titles and
anchors and, while ebooklib writes, one chapter's parsed tree. Measured: a 1,000-page
book grows the process by about 5 MB (tracemalloc peak 2.8 MB with a chapter per page),
and 3,000 pages by no more.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from typing import IO, Any, BinaryIO, TypeAlias

from ebooklib import epub

from exports.blocks import Block, Run, blocks_of, notes_apart
from exports.book import ExportBook, ExportOptions, ExportPage, page_notice, page_shows_notice
from exports.labels import Labels
from exports.renderers._epub_docx_text import (
    ChapterCutter,
    chapter_heading,
    interleave,
    source_paragraphs,
    translation_units,
    xml_safe,
)
from exports.renderers._epub_xhtml import (
    STYLESHEET,
    blocks_xhtml,
    notes_xhtml,
    notice_xhtml,
    page_marker_xhtml,
    source_xhtml,
)
from exports.toc import ChapterSections, Entry, HeadingIds, Section, page_sections

# What ebooklib's `book.toc` holds (ebooklib is untyped): a chapter, a link, or either with
# the items nested under it, `(chapter_or_link, [item, ...])`.
TocItem: TypeAlias = Any


class _ChapterSpool:
    """Chapter documents kept in one temporary file until ebooklib writes them."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by close()

    def put(self, data: bytes) -> tuple[int, int]:
        self._file.seek(0, 2)
        offset = self._file.tell()
        self._file.write(data)
        return offset, len(data)

    def get(self, span: tuple[int, int]) -> bytes:
        offset, length = span
        self._file.seek(offset)
        return self._file.read(length)

    def close(self) -> None:
        self._file.close()


class _SpooledChapter(epub.EpubHtml):  # type: ignore[misc]  # EbookLib ships no types: its classes are Any
    """An ebooklib chapter whose `content` lives in the spool, read back when written."""

    def __init__(self, *, spool: _ChapterSpool, **kwargs: Any) -> None:
        self._spool = spool
        self._span: tuple[int, int] | None = None
        super().__init__(**kwargs)

    @property
    def content(self) -> bytes:
        return self._spool.get(self._span) if self._span else b""

    @content.setter
    def content(self, value: bytes | str) -> None:
        data = value.encode("utf-8") if isinstance(value, str) else value
        self._span = self._spool.put(data) if data else None


class _ChapterWriter:
    """Collects one chapter's XHTML while its pages stream, then hands it to the book."""

    def __init__(
        self, *, book: epub.EpubBook, spool: _ChapterSpool, stylesheet: epub.EpubItem, rtl: bool, labels: Labels
    ) -> None:
        self._book = book
        self._labels = labels
        self._spool = spool
        self._stylesheet = stylesheet
        self._direction = "rtl" if rtl else "ltr"
        self.chapters: list[_SpooledChapter] = []
        self.toc: list[TocItem] = []  # the chapters, each with its sections nested under it
        self._sections = ChapterSections()
        self._parts: list[str] = []
        self._notes: list[str] = []  # the chapter's notes, written after its text
        self._title = ""
        self._first_page = self._last_page = 0

    def start(self, *, page_index: int, heading_text: str, heading_level: int = 0) -> None:
        self.close()
        self._sections = ChapterSections(heading_level)
        self._title = " ".join(xml_safe(heading_text).split())
        self._first_page = self._last_page = page_index

    def add(self, *, page_index: int, xhtml: str, sections: list[Section], notes: str = "") -> None:
        self._parts.append(xhtml)
        if notes:
            self._notes.append(notes)
        self._last_page = page_index
        for section in sections:
            self._sections.add(section)

    def close(self) -> None:
        if not self._parts:
            return
        number = len(self.chapters) + 1
        chapter = _SpooledChapter(
            spool=self._spool,
            uid=f"chapter-{number}",
            file_name=f"chapter-{number:04d}.xhtml",
            title=self._title or self._labels.page_label(self._first_page, self._last_page),
            lang=self._book.language,
            direction=self._direction,
        )
        notes = f'<div class="footnotes">{"".join(self._notes)}</div>' if self._notes else ""
        chapter.content = f"<html><body>{''.join(self._parts)}{notes}</body></html>".encode()
        chapter.add_item(self._stylesheet)
        self._book.add_item(chapter)
        self.chapters.append(chapter)
        entries = [self._toc_item(chapter, entry) for entry in self._sections.entries]
        self.toc.append((chapter, entries) if entries else chapter)  # a nav <ol> is never empty
        self._parts = []
        self._notes = []

    def _toc_item(self, chapter: _SpooledChapter, entry: Entry) -> TocItem:
        section = entry.section
        link = epub.Link(f"{chapter.file_name}#{section.anchor}", xml_safe(section.title), uid=f"toc-{section.anchor}")
        if not entry.children:
            return link
        return (link, [self._toc_item(chapter, child) for child in entry.children])


def _page_xhtml(book: ExportBook, options: ExportOptions, page: ExportPage, blocks: list[Block]) -> str:
    """The page's XHTML without its notes; its headings carry their ids
    (`exports.toc.heading_anchor`)."""
    heading_ids = HeadingIds(page.index)
    parts: list[str] = []
    if options.page_markers:
        parts.append(page_marker_xhtml(page.index))
    if page_shows_notice(page):
        notice = page_notice(page, book.labels, source_follows=not options.bilingual)
        parts.append(notice_xhtml(notice, language=book.language, rtl=book.rtl))
    if page.kept_source and not options.bilingual:  # a failed page keeps its original text
        parts.extend(
            source_xhtml(text, language=book.source_language, rtl=book.source_rtl, css_class="untranslated")
            for text in source_paragraphs(page.kept_source, book.source_language)
        )
    if options.bilingual:
        source = source_paragraphs(page.source_text, book.source_language)
        for source_part, unit in interleave(source, translation_units(blocks)):
            parts.extend(source_xhtml(text, language=book.source_language, rtl=book.source_rtl) for text in source_part)
            parts.append(blocks_xhtml(unit, heading_ids))
    else:
        parts.append(blocks_xhtml(blocks, heading_ids))
    return "".join(parts)


class EpubRenderer:
    format = "Epub"
    extension = "epub"
    mime_type = "application/epub+zip"

    def render(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
        """Write the book as an EPUB 3 package to `out` (left open)."""
        package = epub.EpubBook()
        package.set_identifier(book.identifier)
        package.set_title(xml_safe(book.title))
        package.set_language(book.language)
        if book.rtl:
            package.set_direction("rtl")
        stylesheet = epub.EpubItem(uid="style", file_name="book.css", media_type="text/css", content=STYLESHEET)
        package.add_item(stylesheet)

        spool = _ChapterSpool()
        try:
            writer = _ChapterWriter(book=package, spool=spool, stylesheet=stylesheet, rtl=book.rtl, labels=book.labels)
            cutter = ChapterCutter(options.pages_per_chapter)
            for page in book.pages():
                blocks, notes = notes_apart(
                    blocks_of(xml_safe(page.translation), page=page.index) if page.translated else []
                )
                heading = chapter_heading(blocks, chapter_level=book.chapter_level)
                starts = cutter.starts_chapter(heading)
                if starts:
                    writer.start(
                        page_index=page.index,
                        heading_text=heading.text if heading else "",
                        heading_level=heading.level if heading else 0,
                    )
                sections = page_sections(page.index, blocks, chapter_heading=starts and heading is not None)
                writer.add(
                    page_index=page.index,
                    xhtml=_page_xhtml(book, options, page, blocks),
                    sections=sections,
                    notes=notes_xhtml(notes, back_label=book.labels.back_to_text),
                )
            writer.close()
            if not writer.chapters:  # a book without pages still has a readable document
                title = book.title.strip() or book.identifier
                writer.start(page_index=0, heading_text=title)
                writer.add(page_index=0, xhtml=blocks_xhtml([Block("heading", (Run(title),), level=1)]), sections=[])
                writer.close()

            nav = epub.EpubNav(title=book.labels.contents, direction="rtl" if book.rtl else None)
            nav.add_item(stylesheet)
            package.add_item(nav)
            package.add_item(epub.EpubNcx())
            package.toc = writer.toc
            package.spine = ["nav", *writer.chapters]

            epub_writer = epub.EpubWriter(
                out,
                package,
                {
                    "mtime": datetime.now(UTC),
                    "epub3_pages": options.page_markers,
                    "epub2_guide": False,
                    "pages_title": book.labels.page_list,
                },
            )
            epub_writer.process()
            epub_writer.write()
        finally:
            spool.close()
