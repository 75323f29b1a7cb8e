"""Blocks to XHTML for the EPUB chapters. Every piece of the book's text goes through
`_text` (XML-safe, escaped): nothing in a translation becomes markup.

Footnotes are EPUB 3's: a reference is `<a epub:type="noteref">` (raised) linking to its
note, a note an `<aside epub:type="footnote">` at the end of its chapter's document, which
reading systems show as a pop-up where they can (and as a note at the chapter's end where
they cannot), its mark first and a link back to the reference last."""

from __future__ import annotations

from html import escape

from exports.blocks import Block, Cell, Run, note_anchor, reference_anchor
from exports.renderers._epub_docx_text import xml_safe
from exports.toc import HeadingIds

STYLESHEET = """\
body { margin: 0 4%; line-height: 1.5; }
h1, h2, h3, h4, h5, h6 { line-height: 1.25; margin: 1.2em 0 0.6em 0; }
p { margin: 0 0 0.8em 0; }
blockquote { margin: 0 1.5em 0.8em 1.5em; }
pre { white-space: pre-wrap; font-size: 0.9em; }
hr { border: 0; border-top: 1px solid #999; margin: 1.2em 20%; }
.page-marker { text-align: center; color: #777; font-size: 0.8em; margin: 1.2em 0; }
.page-marker span::before { content: "\\2014\\00a0"; }
.page-marker span::after { content: "\\00a0\\2014"; }
.notice { color: #7a0014; background: #fdecea; border: 1px solid #b00020; padding: 0.4em 0.6em; }
.untranslated { color: #444; border-left: 0.3em solid #b00020; padding-left: 0.6em; }
.source { color: #555; font-size: 0.9em; margin: 0 0 0.3em 0; padding: 0 0.6em; border: 1px dotted #bbb; }
table { border-collapse: collapse; margin: 0.6em 0 1em 0; font-size: 0.9em; line-height: 1.35; max-width: 100%; }
th, td { border: 1px solid #aaa; padding: 0.25em 0.5em; vertical-align: top; text-align: start;
  overflow-wrap: break-word; word-wrap: break-word; }
thead th { background: #eee; font-weight: bold; border-bottom: 2px solid #777; }
thead { display: table-header-group; }
tr { page-break-inside: avoid; break-inside: avoid; }
.align-start { text-align: start; }
.align-center { text-align: center; }
.align-end { text-align: end; }
sup.noteref { font-size: 0.75em; line-height: 0; vertical-align: super; }
sup.noteref a { text-decoration: none; }
.footnotes { margin: 2em 0 0 0; padding-top: 0.4em; border-top: 1px solid #999; font-size: 0.85em; line-height: 1.4; }
aside.footnote p { margin: 0 0 0.5em 0; }
.note-mark { font-weight: bold; }
.backlink { text-decoration: none; }
"""


def _text(text: str) -> str:
    return escape(xml_safe(text), quote=True)


def _inline(runs: tuple[Run, ...]) -> str:
    parts: list[str] = []
    for run in runs:
        if run.note:  # a note reference: its mark, raised, linking to the note
            parts.append(
                f'<sup class="noteref"><a epub:type="noteref" role="doc-noteref" href="#{note_anchor(run.note)}" '
                f'id="{reference_anchor(run)}">{_text(run.text)}</a></sup>'
            )
            continue
        html = "<br/>".join(_text(line) for line in run.text.split("\n"))
        if run.code:  # code reads left to right, also inside right-to-left text
            html = f'<code dir="ltr">{html}</code>'
        if run.italic:
            html = f"<em>{html}</em>"
        if run.bold:
            html = f"<strong>{html}</strong>"
        parts.append(html)
    return "".join(parts)


# GFM's left and right read as start and end (mirrored in a right-to-left book).
_ALIGN_CLASSES = {"left": "align-start", "center": "align-center", "right": "align-end"}


def _cell(tag: str, cell: Cell, align: str) -> str:
    css = _ALIGN_CLASSES.get(align)
    attributes = (' scope="col"' if tag == "th" else "") + (f' class="{css}"' if css else "")
    return f"<{tag}{attributes}>{_inline(cell)}</{tag}>"


def table_xhtml(block: Block) -> str:
    """A table: its header row in <thead> (column headers), the rest in <tbody>."""
    if not block.rows:
        return ""
    head, body = (block.rows[0], block.rows[1:]) if block.header else (None, block.rows)
    parts = ["<table>"]
    if head is not None:
        cells = "".join(_cell("th", cell, block.align[column]) for column, cell in enumerate(head))
        parts.append(f"<thead><tr>{cells}</tr></thead>")
    if body:
        parts.append("<tbody>")
        for row in body:
            parts.append(
                f"<tr>{''.join(_cell('td', cell, block.align[column]) for column, cell in enumerate(row))}</tr>"
            )
        parts.append("</tbody>")
    parts.append("</table>")
    return "".join(parts)


class _Lists:
    """The lists open while a run of list items is written (a nested list sits in its
    parent's open <li>)."""

    def __init__(self, parts: list[str]) -> None:
        self._parts = parts
        self._open: list[str] = []  # "ul" / "ol", outermost first; each with an <li> open

    def item(self, block: Block) -> None:
        tag = "ol" if block.ordered else "ul"
        level = max(1, block.level)
        while len(self._open) > level:
            self._parts.append(f"</li></{self._open.pop()}>")
        if len(self._open) == level and self._open[-1] != tag:
            self._parts.append(f"</li></{self._open.pop()}>")
        if len(self._open) == level:
            self._parts.append("</li><li>")
        while len(self._open) < level:
            start = f' start="{block.number}"' if block.ordered and block.number not in (None, 1) else ""
            self._parts.append(f"<{tag}{start}><li>")
            self._open.append(tag)
        self._parts.append(_inline(block.runs))

    def close(self) -> None:
        while self._open:
            self._parts.append(f"</li></{self._open.pop()}>")


def blocks_xhtml(blocks: list[Block], heading_ids: HeadingIds | None = None) -> str:
    """The blocks as XHTML body content (lists nested, consecutive quotes in one blockquote);
    each heading gets the next of `heading_ids` as its id (the contents link to it)."""
    parts: list[str] = []
    lists = _Lists(parts)
    in_quote = False
    for block in blocks:
        if block.kind != "list_item":
            lists.close()
        if in_quote and block.kind != "quote":
            parts.append("</blockquote>")
            in_quote = False
        if block.kind == "heading":
            level = min(max(block.level, 1), 6)
            anchor = f' id="{heading_ids.next()}"' if heading_ids is not None else ""
            parts.append(f"<h{level}{anchor}>{_inline(block.runs)}</h{level}>")
        elif block.kind == "list_item":
            lists.item(block)
        elif block.kind == "quote":
            if not in_quote:
                parts.append("<blockquote>")
                in_quote = True
            parts.append(f"<p>{_inline(block.runs)}</p>")
        elif block.kind == "code":
            parts.append(f"<pre><code>{_text(block.text)}</code></pre>")
        elif block.kind == "rule":
            parts.append("<hr/>")
        elif block.kind == "table":
            parts.append(table_xhtml(block))
        else:
            parts.append(f"<p>{_inline(block.runs)}</p>")
    lists.close()
    if in_quote:
        parts.append("</blockquote>")
    return "".join(parts)


def notes_xhtml(notes: list[Block], *, back_label: str) -> str:
    """A page's notes, in order, for the end of its chapter (in a `<div class="footnotes">`):
    each an `<aside epub:type="footnote">` starting with its mark and, when the text refers
    to it, ending with a link back to the reference, named `back_label`."""
    parts = []
    for note in notes:
        back = ""
        if note.referenced:
            back = (
                f' <a class="backlink" role="doc-backlink" href="#{reference_anchor(Run("", note=note.note))}" '
                f'aria-label="{_text(back_label)}">\u21a9</a>'
            )
        parts.append(
            f'<aside epub:type="footnote" role="doc-footnote" class="footnote" id="{note_anchor(note.note)}">'
            f'<p><span class="note-mark">{_text(note.mark)}</span> {_inline(note.runs)}{back}</p></aside>'
        )
    return "".join(parts)


def source_xhtml(paragraph: str, *, language: str | None, rtl: bool, css_class: str = "source") -> str:
    """A source paragraph, in its own language and direction: shown before its translation
    ("source"), or as a failed page's original text ("untranslated")."""
    lang = _text(language or "und")
    direction = "rtl" if rtl else ("ltr" if language else "auto")
    return f'<p class="{css_class}" lang="{lang}" xml:lang="{lang}" dir="{direction}">{_text(paragraph)}</p>'


def notice_xhtml(text: str, *, language: str, rtl: bool) -> str:
    """A page without a translation, marked where it stands (page_notice's text, in the
    book's language)."""
    lang = _text(language)
    direction = "rtl" if rtl else "ltr"
    return f'<p class="notice" role="note" lang="{lang}" xml:lang="{lang}" dir="{direction}">{_text(text)}</p>'


def page_marker_xhtml(index: int) -> str:
    """The start of a book page: a pagebreak marker the nav's page-list points at."""
    return (
        f'<div class="page-marker"><span epub:type="pagebreak" role="doc-pagebreak" '
        f'id="page-{index}" title="{index}">{index}</span></div>'
    )
