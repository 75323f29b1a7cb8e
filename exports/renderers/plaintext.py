"""PlainText: the book without Markdown syntax — the title, then each page's text
(`plain_text_of`: headings and paragraphs as lines, list items bulleted or numbered, a
note reference as its mark in brackets, `[4]`, and the page's notes after its text),
`— 12 —` before each page when asked, and the notice of a page without a translation."""

from __future__ import annotations

from exports.blocks import plain_text_of
from exports.book import ExportBook, ExportPage, page_notice
from exports.renderers._epub_docx_text import source_paragraphs
from exports.renderers._text import TextRenderer


class PlainTextRenderer(TextRenderer):
    format = "PlainText"
    extension = "txt"
    mime_type = "text/plain; charset=utf-8"

    def title_of(self, book: ExportBook) -> str:
        return " ".join(book.title.split())

    def marker_of(self, page: ExportPage) -> str:
        return f"— {page.index} —"

    def text_of(self, page: ExportPage) -> str:
        return plain_text_of(page.translation, page=page.index)

    def notice_of(self, page: ExportPage, book: ExportBook) -> str:
        return "\n\n".join([page_notice(page, book.labels), *source_paragraphs(page.kept_source, book.source_language)])
