"""Markdown: the book as one CommonMark file — the title as a level-1 heading, then each
page's translation as written, `<!-- page 12 -->` before each page when asked, and a
quoted notice for a page without a translation (with a failed page's original text).
A page's footnotes stay Markdown footnotes, their labels made the notes' ids in the book
(`[^4]` on page 12 is `[^p12-4]`): a label is unique within its page only."""

from __future__ import annotations

from exports.blocks import notes_renamed
from exports.book import ExportBook, ExportPage, page_notice
from exports.renderers._epub_docx_text import source_paragraphs
from exports.renderers._text import TextRenderer, markdown_escape, trim_blank_lines


class MarkdownRenderer(TextRenderer):
    format = "Markdown"
    extension = "md"
    mime_type = "text/markdown; charset=utf-8"

    def title_of(self, book: ExportBook) -> str:
        return f"# {markdown_escape(book.title)}"

    def marker_of(self, page: ExportPage) -> str:
        return f"<!-- page {page.index} -->"

    def text_of(self, page: ExportPage) -> str:
        return trim_blank_lines(notes_renamed(page.translation, page=page.index))

    def notice_of(self, page: ExportPage, book: ExportBook) -> str:
        """A quote: the notice, then a failed page's original text, marked as untranslated."""
        parts = [page_notice(page, book.labels), *source_paragraphs(page.kept_source, book.source_language)]
        return "\n>\n".join(f"> {markdown_escape(part)}" for part in parts)
