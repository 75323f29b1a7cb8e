"""HTML pieces of the Html renderer: the inline stylesheet, a page's Markdown as HTML
(markdown-it, raw HTML off, so nothing from the book becomes markup; GFM tables on;
footnotes: a reference is a superscript link to its note, the notes follow the page's text,
each with a link back), the bilingual source column, and the notice of a page without a
translation."""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin

from exports.blocks import Run, note_anchor, note_id, note_mark, reference_anchor
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
sup.noteref { line-height: 0; }
sup.noteref a { text-decoration: none; padding-inline: 0.1em; }
.footnotes { margin-block: 1.5rem 1rem; padding-block-start: 0.5rem; border-block-start: 1px solid #cfcfc8;
  font-size: 0.9rem; line-height: 1.5; }
.footnote { margin-block: 0.4rem; }
.footnote p { margin-block: 0.2rem; }
.note-mark { font-weight: 600; }
.footnote .backlink { text-decoration: none; }
.footnote:target { background: #fff8d6; }
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


def _note_reference(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]) -> str:
    """A note reference: the note's mark, raised, linking to the note (DPUB-ARIA's noteref)."""
    run = _reference_run(tokens[idx], env)
    return (
        f'<sup class="noteref"><a href="#{note_anchor(run.note)}" id="{reference_anchor(run)}" '
        f'role="doc-noteref">{escape(run.text)}</a></sup>'
    )


def _reference_run(token: Token, env: MutableMapping[str, Any]) -> Run:
    label = str(token.meta["label"])
    return Run(note_mark(label), note=note_id(env.get("page", 0), label), reference=int(token.meta.get("subId", 0)))


def _note_mark(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]) -> str:
    return f'<span class="note-mark">{escape(tokens[idx].content)}</span> '


def _note_backlink(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]) -> str:
    label = escape(env.get("back_label", ""))
    return f' <a class="backlink" href="#{tokens[idx].content}" role="doc-backlink" aria-label="{label}">\u21a9</a>'


_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
footnote_plugin(_markdown, inline=False, move_to_end=False)  # as exports.blocks reads them
_markdown.add_render_rule("footnote_ref", _note_reference)
_markdown.add_render_rule("note_mark", _note_mark)
_markdown.add_render_rule("note_backlink", _note_backlink)
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
    markdown: str,
    *,
    table_label: str,
    heading_id: str | None = None,
    heading_ids: HeadingIds | None = None,
    page: int = 0,
    back_label: str = "",
) -> str:
    """A page's Markdown as HTML. Headings go one level down (`#` is `<h2>`: the book's
    title is the one `<h1>`); `heading_id` goes on the first heading (a chapter's title),
    `heading_ids` gives the headings their ids in order (the contents link to them: a first
    heading with `heading_id` still takes its turn); a table's header cells are column
    headers, named regions by `table_label`. Footnotes (`page`: the page's number, which
    the notes' ids carry) follow the text in a `<div class="footnotes">`, each an `<aside
    role="doc-footnote">` starting with its mark and ending with a link back to the first
    reference to it, named `back_label`."""
    tokens = _markdown.parse(markdown)
    in_note = 0
    for token in tokens:
        if token.type in ("footnote_reference_open", "footnote_reference_close"):
            in_note += token.nesting
        if token.type == "heading_open" and heading_ids is not None and not in_note:
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
    env = {"table_label": table_label, "page": page, "back_label": back_label}
    body, notes = _notes_apart(tokens)
    html: str = _markdown.renderer.render(body, _markdown.options, env)
    if notes:
        html += _notes_html(notes, body, env)
    return html


def _notes_apart(tokens: list[Token]) -> tuple[list[Token], list[tuple[str, list[Token]]]]:
    """The tokens without the footnote definitions, and each definition's label and tokens."""
    body: list[Token] = []
    notes: list[tuple[str, list[Token]]] = []
    depth = 0
    for token in tokens:
        if token.type == "footnote_reference_open":
            depth += 1
            if depth == 1:
                notes.append((str(token.meta["label"]), []))
                continue
        elif token.type == "footnote_reference_close":
            depth -= 1
            if depth == 0:
                continue
        (notes[-1][1] if depth else body).append(token)
    return body, notes


def _notes_html(notes: list[tuple[str, list[Token]]], body: list[Token], env: dict[str, Any]) -> str:
    """The page's notes, in the order of their definitions: each its mark, its text and
    (when the text refers to it) a link back; a label defined twice keeps both notes, the
    second under an id of its own (as exports.blocks gives them)."""
    referenced = {
        str(child.meta["label"])
        for token in body + [token for _, inner in notes for token in inner]
        if token.type == "inline"
        for child in token.children or []
        if child.type == "footnote_ref"
    }
    parts = ['<div class="footnotes">\n']
    seen: set[str] = set()
    for label, inner in notes:
        note = note_id(env["page"], label)
        back = label in referenced and note not in seen
        while note in seen:
            note += "-again"
        seen.add(note)
        inlines = [token for token in inner if token.type == "inline"]
        mark = Token("note_mark", "", 0, content=note_mark(label))
        lead = ""
        if inner and inner[0].type == "paragraph_open" and inlines and inlines[0] is inner[1]:
            inlines[0].children = [mark, *(inlines[0].children or [])]
        else:  # a note starting with a list or code: its mark before it
            lead = _note_mark(None, [mark], 0, {}, env).rstrip() + "\n"
        tail = ""
        if back:
            backlink = Token("note_backlink", "", 0, content=reference_anchor(Run("", note=note)))
            if len(inner) >= 2 and inner[-1].type == "paragraph_close" and inner[-2].type == "inline":
                inner[-2].children = [*(inner[-2].children or []), backlink]
            else:
                tail = f"<p>{_note_backlink(None, [backlink], 0, {}, env).strip()}</p>\n"
        text = _markdown.renderer.render(inner, _markdown.options, env)
        parts.append(
            f'<aside class="footnote" id="{note_anchor(note)}" role="doc-footnote">\n{lead}{text}{tail}</aside>\n'
        )
    parts.append("</div>\n")
    return "".join(parts)


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
