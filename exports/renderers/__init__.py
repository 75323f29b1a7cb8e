"""One renderer per format. A renderer writes the whole book to a binary stream, page by
page, never holding the book in memory (see exports/book.py):

    class Renderer(Protocol):
        format: str      # "Markdown", "PlainText", "Html", "Epub", "Docx", "Pdf"
        extension: str   # "md", "txt", "html", "epub", "docx", "pdf"
        mime_type: str
        def render(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None: ...

The Archive (every format, the page images and a JSON manifest) is assembled by
exports.services from the others.
"""

from __future__ import annotations

from typing import BinaryIO, Protocol

from django.utils.module_loading import import_string

from exports.book import ExportBook, ExportOptions


class Renderer(Protocol):
    format: str
    extension: str
    mime_type: str

    def render(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None: ...


RENDERERS = {
    "Markdown": "exports.renderers.markdown.MarkdownRenderer",
    "PlainText": "exports.renderers.plaintext.PlainTextRenderer",
    "Html": "exports.renderers.html.HtmlRenderer",
    "Epub": "exports.renderers.epub.EpubRenderer",
    "Docx": "exports.renderers.docx.DocxRenderer",
    "Pdf": "exports.renderers.pdf.PdfRenderer",
}


def renderer_for(export_format: str) -> Renderer:
    """The renderer of a single format (not Archive or All)."""
    renderer: Renderer = import_string(RENDERERS[export_format])()
    return renderer


def media_types() -> list[str]:
    """The MIME types (without parameters) the single formats are served as."""
    return [import_string(path).mime_type.split(";")[0] for path in RENDERERS.values()]
