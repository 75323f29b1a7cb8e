"""HTML pieces of the Html renderer: the inline stylesheet, a page's Markdown as HTML
(markdown-it, raw HTML off, so nothing from the book becomes markup; GFM tables on), the
bilingual source column, and the notice of a page without a translation."""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from exports.book import ExportBook, ExportPage, page_notice
from exports.toc import HeadingIds

STYLESHEET = """
body { margin: 0 auto; max-width: 46rem; padding: 1.5rem 1rem 4rem; color: #1a1a1a; background: #fff;
  font-family: "Noto Serif", Georgia, "Times New Roman", serif; line-height: 1.65; }
body.bilingual { max-width: 80rem; }
:lang(ja), :lang(zh), :lang(ko) { line-height: 1.85; }
h1, h2, h3, h4, h5, h6 { line-height: 1.25; }
a { color: #0b4f9c; }
.skip-link { position: absolute; inset-inline-start: -100vw; }
.skip-link:focus { position: static; }
nav { margin-block: 2rem; padding: 1rem 1.5rem; background: #f6f6f4; border-radius: 0.4rem; }
nav ol { margin: 0; padding-inline-start: 1.5rem; }
.chapter { margin-block: 2.5rem; }
.page-marker { display: block; margin-block: 1.5rem; text-align: center; color: #555; font-size: 0.9rem; }
.page-notice { margin-block: 1rem; padding: 0.75rem 1rem; border-inline-start: 0.3rem solid #b45309;
  background: #fff4e5; color: #5c2d00; font-family: system-ui, sans-serif; }
.page.bilingual { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0 2.5rem; }
.page.bilingual > .page-marker { grid-column: 1 / -1; }
.source { color: #444; }
.untranslated { color: #444; border-inline-start: 0.3rem solid #b45309; padding-inline-start: 1rem; }
blockquote { margin-inline: 1rem 0; padding-inline-start: 1rem; border-inline-start: 0.2rem solid #ccc; }
pre { overflow-x: auto; }
.table-wrap { margin-block: 1rem 1.25rem; overflow-x: auto; }
.table-wrap:focus-visible { outline: 0.15rem solid #0b4f9c; outline-offset: 0.15rem; }
table { border-collapse: collapse; font-size: 0.95rem; line-height: 1.45; }
th, td { padding: 0.35rem 0.7rem; border: 1px solid #cfcfc8; vertical-align: top; text-align: start; }
thead th { background: #f0efeb; font-weight: 600; border-bottom: 2px solid #9b9b93; }
tbody tr:nth-child(even) { background: #fafaf8; }
.align-start { text-align: start; }
.align-center { text-align: center; }
.align-end { text-align: end; }
code { font-family: ui-monospace, "Noto Sans Mono", monospace; unicode-bidi: plaintext; }
@media (max-width: 40rem) { .page.bilingual { grid-template-columns: minmax(0, 1fr); } }
@media print { nav { break-after: page; } .skip-link { display: none; } }
""".strip()


def _image_as_text(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]) -> str:
    """An image becomes its alt text: the document loads nothing from elsewhere."""
    return escape(self.renderInlineAsText(tokens[idx].children or [], options, env))


def _table_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]) -> str:
    """A table in a region of its own that scrolls sideways when wider than the text (and
    is named, and reachable by keyboard, so that it can be scrolled without a mouse)."""
    label = escape(env.get("table_label", ""))
    return f'<div class="table-wrap" role="region" tabindex="0" aria-label="{label}">\n<table>\n'


def _table_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]) -> str:
    return "</table>\n</div>\n"


_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
_markdown.add_render_rule("image", _image_as_text)
_markdown.add_render_rule("table_open", _table_open)
_markdown.add_render_rule("table_close", _table_close)
# GFM alignment becomes a class (no style attributes: the stylesheet says how). Left and
# right are read as start and end, as the translation keeps the source's table syntax: a
# right-to-left book mirrors them.
_ALIGN_CLASSES = {
    "text-align:left": "align-start",
    "text-align:center": "align-center",
    "text-align:right": "align-end",
}

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")


def markdown_html(
    markdown: str, *, table_label: str, heading_id: str | None = None, heading_ids: HeadingIds | None = None
) -> str:
    """A page's Markdown as HTML. Headings go one level down (`#` is `<h2>`: the book's
    title is the one `<h1>`); `heading_id` goes on the first heading (a chapter's title),
    `heading_ids` gives the headings their ids in order (the contents link to them: a first
    heading with `heading_id` still takes its turn); a table's header cells are column
    headers, named regions by `table_label`."""
    tokens = _markdown.parse(markdown)
    for token in tokens:
        if token.type == "heading_open" and heading_ids is not None:
            token.attrSet("id", heading_ids.next())
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
        elif token.type in ("th_open", "td_open"):
            align = _ALIGN_CLASSES.get(str(token.attrGet("style") or ""))
            token.attrs.pop("style", None)
            if align:
                token.attrSet("class", align)
            if token.type == "th_open":
                token.attrSet("scope", "col")
    if heading_id is not None:
        first = next((token for token in tokens if token.type == "heading_open"), None)
        if first is not None:
            first.attrSet("id", heading_id)
    html: str = _markdown.renderer.render(tokens, _markdown.options, {"table_label": table_label})
    return html


def source_html(text: str) -> str:
    """The source text as escaped paragraphs (blank lines part them; a line break stays)."""
    paragraphs = (part.strip() for part in _PARAGRAPH_BREAK.split(text or ""))
    return "".join(
        f"<p>{'<br>'.join(escape(line) for line in paragraph.splitlines())}</p>\n"
        for paragraph in paragraphs
        if paragraph
    )


def notice_html(book: ExportBook, page: ExportPage, *, source_follows: bool = True) -> str:
    """The visible notice of a failed or untranslated page, in the book's language."""
    direction = "rtl" if book.rtl else "ltr"
    return (
        f'<p class="page-notice" role="note" lang="{escape(book.language)}" dir="{direction}">'
        f"{escape(page_notice(page, book.labels, source_follows=source_follows))}</p>\n"
    )
