"""What the Markdown and PlainText renderers share: the title first, then every page in
order — its marker when asked, its text, or its notice when it has no translation (a failed
or untranslated page is marked, never dropped; a failed page keeps its original text after
its notice; a blank page stays blank). Each page is written as soon as it is read."""

from __future__ import annotations

import re
from typing import BinaryIO

from exports.book import ExportBook, ExportOptions, ExportPage

ENCODING = "utf-8"

# Punctuation that can start inline Markdown syntax (emphasis, code, links, raw HTML,
# entities, a heading's closing sequence); a backslash makes CommonMark read it as text.
_MARKDOWN_INLINE_SYNTAX = re.compile(r"([\\`*_\[\]<>&!#|~])")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
_LINE_SPACE = re.compile(r"[ \t\n\r\f\v]+")


def markdown_escape(text: str) -> str:
    """`text` as literal Markdown inline text, on one line (a no-break space stays: the
    French labels put one before a colon)."""
    return _MARKDOWN_INLINE_SYNTAX.sub(r"\\\1", _LINE_SPACE.sub(" ", text).strip(" "))


def trim_blank_lines(text: str) -> str:
    """`text` without blank lines around it (leading spaces of the first line are kept:
    they can mean an indented code block)."""
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


class TextRenderer:
    """Hooks a text format fills in: `title_of`, `marker_of`, `text_of`, `notice_of` (which
    also carries a failed page's original text, `ExportPage.kept_source`). A blank page is
    written as nothing (its marker, when asked)."""

    format: str
    extension: str
    mime_type: str

    def title_of(self, book: ExportBook) -> str:
        raise NotImplementedError

    def marker_of(self, page: ExportPage) -> str:
        raise NotImplementedError

    def text_of(self, page: ExportPage) -> str:
        raise NotImplementedError

    def notice_of(self, page: ExportPage, book: ExportBook) -> str:
        raise NotImplementedError

    def render(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
        out.write(f"{self.title_of(book)}\n".encode(ENCODING))
        for page in book.pages():
            parts = [self.marker_of(page)] if options.page_markers else []
            if page.translated:
                parts.append(self.text_of(page))
            elif not page.blank:
                parts.append(self.notice_of(page, book))
            chunk = "\n\n".join(part for part in parts if part)
            if chunk:
                out.write(f"\n{chunk}\n".encode(ENCODING))
