"""HTML pieces of the Html renderer: the inline stylesheet, a page's Markdown as HTML
(markdown-it, raw HTML off, so nothing from the book becomes markup), the bilingual source
column, and the notice of a page without a translation."""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from exports.book import ExportPage, page_notice

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
code { font-family: ui-monospace, "Noto Sans Mono", monospace; }
@media (max-width: 40rem) { .page.bilingual { grid-template-columns: minmax(0, 1fr); } }
@media print { nav { break-after: page; } .skip-link { display: none; } }
""".strip()


def _image_as_text(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]) -> str:
    """An image becomes its alt text: the document loads nothing from elsewhere."""
    return escape(self.renderInlineAsText(tokens[idx].children or [], options, env))


_markdown = MarkdownIt("commonmark", {"html": False})
_markdown.add_render_rule("image", _image_as_text)

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")


def markdown_html(markdown: str, *, heading_id: str | None = None) -> str:
    """A page's Markdown as HTML. Headings go one level down (`#` is `<h2>`: the book's
    title is the one `<h1>`); `heading_id` goes on the first heading (a chapter's title)."""
    tokens = _markdown.parse(markdown)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
    if heading_id is not None:
        first = next((token for token in tokens if token.type == "heading_open"), None)
        if first is not None:
            first.attrSet("id", heading_id)
    return _markdown.renderer.render(tokens, _markdown.options, {})


def source_html(text: str) -> str:
    """The source text as escaped paragraphs (blank lines part them; a line break stays)."""
    paragraphs = (part.strip() for part in _PARAGRAPH_BREAK.split(text or ""))
    return "".join(
        f"<p>{'<br>'.join(escape(line) for line in paragraph.splitlines())}</p>\n"
        for paragraph in paragraphs
        if paragraph
    )


def notice_html(page: ExportPage) -> str:
    """The visible notice of a failed or untranslated page (its text is English)."""
    return f'<p class="page-notice" role="note" lang="en" dir="ltr">{escape(page_notice(page))}</p>\n'
