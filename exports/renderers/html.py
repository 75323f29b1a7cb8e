"""Html: one self-contained HTML5 document — `lang`/`dir` from the book's language, inline
CSS only, a `<nav>` table of contents, one `<section>` per chapter inside `<main>`; its own
words (the skip link, "Contents", chapters named by their pages, notices) in the book's
language (`exports.labels`), tables as `<table>` in a scrolling region, a page's footnotes
after its text, linked both ways with their references (`_html`).

Two passes over `book.pages()`, neither holding the book: the first finds where chapters
start and their sections (the headings inside a chapter down to `###`, nested as in every
format's contents: `exports.toc`), keeping only their titles, and writes the table of
contents, each chapter's sections in an `<ol>` under it linking to their headings' ids; the
second writes the pages, the headings with those ids. A chapter
starts at a page whose first block is a chapter heading (`first_heading`); a book without
any is cut every `options.pages_per_chapter` pages, and pages before the first heading form
a chapter of their own. Both passes decide chapter starts with the same function, so the
contents' links and the sections' ids agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import BinaryIO

from exports.blocks import blocks_of, first_heading
from exports.book import ExportBook, ExportOptions, ExportPage, page_shows_notice
from exports.renderers._epub_docx_text import chapter_heading
from exports.renderers._html import STYLESHEET, markdown_html, notice_html, source_html
from exports.toc import ChapterSections, Entry, HeadingIds, heading_title, page_sections

ENCODING = "utf-8"


@dataclass
class _Chapters:
    """What the first pass learnt: small (a few numbers per chapter at most)."""

    by_heading: bool = False
    front: tuple[int, int] | None = None  # first and last page before the first heading
    ranges: list[tuple[int, int]] = field(default_factory=list)  # no headings: every N pages


def _chapter_title(page: ExportPage, *, chapter_level: int) -> str | None:
    """The heading that starts a chapter at this page, if any ("" for an empty heading)."""
    if not page.translated:
        return None
    heading = first_heading(page.translation, chapter_level=chapter_level)
    return None if heading is None else heading.text.strip()


def _chapter_id(number: int) -> str:
    return f"chapter-{number}"


def _entries_html(entries: list[Entry]) -> str:
    """A chapter's sections as a nested list of links to their headings ("" when none)."""
    if not entries:
        return ""
    items = "".join(
        f'<li><a href="#{entry.section.anchor}">{escape(entry.section.title)}</a>{_entries_html(entry.children)}</li>\n'
        for entry in entries
    )
    return f"\n<ol>\n{items}</ol>\n"


class HtmlRenderer:
    format = "Html"
    extension = "html"
    mime_type = "text/html; charset=utf-8"

    def render(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
        title = escape(book.title)
        labels = book.labels
        body_class = ' class="bilingual"' if options.bilingual else ""
        out.write(
            (
                "<!DOCTYPE html>\n"
                f'<html lang="{escape(book.language)}" dir="{"rtl" if book.rtl else "ltr"}">\n'
                "<head>\n"
                '<meta charset="utf-8">\n'
                '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                f"<title>{title}</title>\n"
                f"<style>\n{STYLESHEET}\n</style>\n"
                "</head>\n"
                f"<body{body_class}>\n"
                f'<a class="skip-link" href="#content">{escape(labels.skip_to_text)}</a>\n'
                f"<header><h1>{title}</h1></header>\n"
                '<nav aria-labelledby="contents-title">\n'
                f'<h2 id="contents-title">{escape(labels.contents)}</h2>\n'
                "<ol>\n"
            ).encode(ENCODING)
        )
        chapters = self._write_contents(book, options, out)
        out.write('</ol>\n</nav>\n<main id="content">\n'.encode(ENCODING))
        self._write_pages(book, options, chapters, out)
        out.write("</main>\n</body>\n</html>\n".encode(ENCODING))

    def _write_contents(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> _Chapters:
        """First pass: one `<li>` per chapter with its sections nested under it, written once
        the next chapter starts (what is kept is the open chapter's section titles, and
        until the first heading the page ranges' and the front matter's)."""
        chapters = _Chapters()
        per_chapter = max(1, options.pages_per_chapter)
        number = 0
        open_chapter: tuple[str, ChapterSections] | None = None  # started at a heading, not yet written
        by_pages: list[ChapterSections] = []  # the sections of each chapter of `ranges`
        front = ChapterSections()  # the sections before the first heading
        first_index: int | None = None
        previous_index = 0

        def entry(label: str, sections: ChapterSections) -> None:
            nonlocal number
            number += 1
            item = f'<li><a href="#{_chapter_id(number)}">{escape(label)}</a>{_entries_html(sections.entries)}</li>\n'
            out.write(item.encode(ENCODING))

        for position, page in enumerate(book.pages()):
            blocks = blocks_of(page.translation) if page.translated else []
            heading = chapter_heading(blocks, chapter_level=book.chapter_level)
            if heading is not None:
                if open_chapter is not None:
                    entry(*open_chapter)
                elif first_index is not None:  # the first heading: the pages before it are a chapter
                    chapters.front = (first_index, previous_index)
                    entry(book.labels.page_label(*chapters.front), front)
                chapters.by_heading, chapters.ranges, by_pages = True, [], []
                title = heading_title(heading) or book.labels.page_label(page.index, page.index)
                open_chapter = (title, ChapterSections(heading.level))
            elif not chapters.by_heading:
                if position % per_chapter == 0:
                    chapters.ranges.append((page.index, page.index))
                    by_pages.append(ChapterSections())
                else:
                    chapters.ranges[-1] = (chapters.ranges[-1][0], page.index)
            for section in page_sections(page.index, blocks, chapter_heading=heading is not None):
                if open_chapter is not None:
                    open_chapter[1].add(section)
                else:  # which of the two the book has is known at its first heading, or its end
                    front.add(section)
                    by_pages[-1].add(section)
            if first_index is None:
                first_index = page.index
            previous_index = page.index
        if open_chapter is not None:
            entry(*open_chapter)
        for pages, sections in zip(chapters.ranges, by_pages, strict=True):
            entry(book.labels.page_label(*pages), sections)
        return chapters

    def _write_pages(self, book: ExportBook, options: ExportOptions, chapters: _Chapters, out: BinaryIO) -> None:
        """Second pass: the sections and their pages, one write per page."""
        per_chapter = max(1, options.pages_per_chapter)
        number = 0
        for position, page in enumerate(book.pages()):
            html: list[str] = []
            heading_id = None
            title = _chapter_title(page, chapter_level=book.chapter_level) if chapters.by_heading else None
            if title is not None or (position == 0 if chapters.by_heading else position % per_chapter == 0):
                if number:
                    html.append("</section>\n")
                number += 1
                chapter_id = _chapter_id(number)
                if title:
                    heading_id = f"{chapter_id}-title"
                    html.append(f'<section class="chapter" id="{chapter_id}" aria-labelledby="{heading_id}">\n')
                else:
                    pages = (page.index, page.index) if title is not None else self._pages_of(chapters, number)
                    label = book.labels.page_label(*(pages or (page.index, page.index)))
                    html.append(f'<section class="chapter" id="{chapter_id}" aria-label="{escape(label)}">\n')
            html.append(self._page_html(book, options, page, heading_id))
            out.write("".join(html).encode(ENCODING))
        if number:
            out.write(b"</section>\n")

    @staticmethod
    def _pages_of(chapters: _Chapters, number: int) -> tuple[int, int] | None:
        """The pages of a chapter that does not start at a heading (None if the book
        changed between the passes)."""
        if chapters.by_heading:
            return chapters.front
        return chapters.ranges[number - 1] if number <= len(chapters.ranges) else None

    def _page_html(self, book: ExportBook, options: ExportOptions, page: ExportPage, heading_id: str | None) -> str:
        marker = ""
        if options.page_markers:
            marker = (
                f'<span class="page-marker" id="page-{page.index}" role="doc-pagebreak" '
                f'aria-label="{escape(book.labels.page.format(n=page.index))}">— {page.index} —</span>\n'
            )
        source_language = book.source_language or ""
        source_dir = "rtl" if book.source_rtl else ("ltr" if source_language else "auto")
        if page.translated:
            text = markdown_html(
                page.translation,
                table_label=book.labels.table,
                heading_id=heading_id,
                heading_ids=HeadingIds(page.index),
                page=page.index,
                back_label=book.labels.back_to_text,
            )
        else:
            text = notice_html(book, page, source_follows=not options.bilingual) if page_shows_notice(page) else ""
        if not options.bilingual:
            if page.kept_source:  # a failed page keeps its original text, marked as untranslated
                text += (
                    f'<div class="untranslated" lang="{escape(source_language)}" dir="{source_dir}">\n'
                    f"{source_html(page.kept_source)}</div>\n"
                )
            return f'<div class="page">\n{marker}{text}</div>\n'

        return (
            f'<div class="page bilingual">\n{marker}'
            f'<div class="source" lang="{escape(source_language)}" dir="{source_dir}">\n'
            f"{source_html(page.source_text)}</div>\n"
            f'<div class="translation" lang="{escape(book.language)}" dir="{"rtl" if book.rtl else "ltr"}">\n'
            f"{text}</div>\n</div>\n"
        )
