"""Word (.docx) with python-docx, in Word's own styles so that the reader can restyle the
book and navigate it: Title, Heading 1-6, Normal, List Bullet / List Number (2, 3 when
nested), Quote, plus three of ours — "Source Text", "Page Marker" and "Translation
Notice" (a boxed, shaded paragraph where a page has no translation, in the book's
language). A table is a real Word table ("Table Grid", its header row repeated on every
page it runs over; see `_docx_table`).

Right-to-left languages get right-to-left paragraphs and runs and a right-to-left
section; complex scripts (Arabic, Hebrew, Devanagari...) their complex-script language
and bold/italic; Chinese, Japanese and Korean an East Asian font and language (see
`_docx_script`). A chapter (a page whose first block is a chapter heading) starts on a
new page.

Contents: the title is followed by a table of contents, Word's TOC field over Heading 1-3
with its result written out (every heading of levels 1-3, in the "toc N" styles, linked to a
bookmark on its heading), so that it reads right before any update and Word or LibreOffice
add page numbers when it is updated (`_docx_toc`). The headings are only known once the
body is written, so the title and the contents are assembled at the end, before the body.

Footnotes: Word's own (`_docx_notes`): a reference is a raised mark that is a
`w:footnoteReference` (the book's mark, not Word's numbering), its note goes to
`/word/footnotes.xml`, and Word or LibreOffice set it at the foot of the page where the
reference falls. A second reference to the same note is its mark alone; a note the text
does not refer to stays at the end of its page, in the footnote text style. The notes are
spooled like the body and copied into their part when the package is written.

Bilingual: each source paragraph, in the "Source Text" style and its own language and
direction, comes before its translation (the pairing of `interleave`). Interleaving, not
a two-column table, because Word lays out a long table cell badly across pages, the
headings stay in the Navigation Pane, each paragraph keeps its own direction, and a
reader can hide or restyle every source paragraph at once through its style.

Memory: python-docx keeps the whole document as one lxml tree until `save`, which grew
with the book (about 23 MiB of RSS for 1,000 pages of ~1,800 characters, almost all of it
libxml2's). So the body is written as it goes instead: python-docx still makes the
package (styles, numbering, settings, properties) with an empty body, each paragraph is
built as a detached element, serialized to a spool file as soon as the next one starts,
and dropped; at the end the package is written zip entry by entry in python-docx's order,
`word/document.xml` copied from the spool between the body's opening and its final
section properties. Only the current paragraph exists as a tree at any time.
"""

from __future__ import annotations

import tempfile
import zipfile
from datetime import UTC, datetime
from io import BytesIO
from typing import BinaryIO, cast

from docx import Document
from docx.document import Document as DocumentObject
from docx.enum.style import WD_STYLE_TYPE
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml.ns import qn
from docx.oxml.text.paragraph import CT_P
from docx.shared import Pt, RGBColor
from docx.styles.style import ParagraphStyle
from docx.text.paragraph import Paragraph
from lxml import etree
from lxml.etree import _Element

from exports.blocks import Block, Run, blocks_of, notes_apart
from exports.book import ExportBook, ExportOptions, ExportPage, page_notice, page_shows_notice
from exports.renderers._docx_notes import (
    FIRST_ID,
    PART_END,
    PART_START,
    footnote_element,
    mark_run,
    note_paragraph,
    notes_set_up,
)
from exports.renderers._docx_script import (
    Script,
    default_language_set,
    paragraph_element,
    paragraph_shading_set,
    run_element,
    script_for,
    section_rtl_set,
)
from exports.renderers._docx_table import table_element
from exports.renderers._docx_toc import (
    CONTENTS_HEADING_STYLE,
    bookmark_add,
    bookmark_name,
    contents_elements,
    toc_styles_add,
)
from exports.renderers._epub_docx_text import (
    chapter_heading,
    interleave,
    source_paragraphs,
    translation_units,
    xml_safe,
)
from exports.toc import TOC_DEPTH, HeadingIds, heading_title

FOOTNOTES_PART = "/word/footnotes.xml"
SOURCE_STYLE = "Source Text"
MARKER_STYLE = "Page Marker"
NOTICE_STYLE = "Translation Notice"
CODE_FONT = "Courier New"
CODE_SCRIPT = script_for("en")


def _styles_add(document: DocumentObject) -> None:
    styles = document.styles
    normal = styles["Normal"]

    source = cast(ParagraphStyle, styles.add_style(SOURCE_STYLE, WD_STYLE_TYPE.PARAGRAPH))
    source.base_style = normal
    source.quick_style = True
    source.font.size = Pt(9.5)
    source.font.color.rgb = RGBColor(0x59, 0x59, 0x59)
    source.paragraph_format.keep_with_next = True  # a source paragraph stays with its translation
    source.paragraph_format.space_after = Pt(4)

    marker = cast(ParagraphStyle, styles.add_style(MARKER_STYLE, WD_STYLE_TYPE.PARAGRAPH))
    marker.base_style = normal
    marker.quick_style = True
    marker.font.size = Pt(8)
    marker.font.color.rgb = RGBColor(0x80, 0x80, 0x80)
    marker.paragraph_format.alignment = WD_ALIGN_PARAGRAPH.CENTER
    marker.paragraph_format.space_before = Pt(12)
    marker.paragraph_format.keep_with_next = True

    notice = cast(ParagraphStyle, styles.add_style(NOTICE_STYLE, WD_STYLE_TYPE.PARAGRAPH))
    notice.base_style = normal
    notice.quick_style = True
    notice.font.bold = True
    notice.font.color.rgb = RGBColor(0x7A, 0x00, 0x14)
    paragraph_shading_set(notice.element.get_or_add_pPr(), fill="FDECEA", border="B00020")
    toc_styles_add(document)


class _Numbering:
    """A fresh numbering instance for each numbered list, so that every list starts at
    its own first number instead of continuing the previous list's (python-docx gives
    all "List Number" paragraphs one shared instance)."""

    def __init__(self, document: DocumentObject) -> None:
        self._numbering = document.part.numbering_part.element
        self._abstract_ids: dict[str, int] = {}

    def list_start(self, style: ParagraphStyle, start: int) -> int:
        """A new numbering instance of the style's list, starting at `start`; its id."""
        name = style.name or ""
        if name not in self._abstract_ids:
            num_id = style.element.pPr.numPr.numId.val
            self._abstract_ids[name] = self._numbering.num_having_numId(num_id).abstractNumId.val
        num = self._numbering.add_num(self._abstract_ids[name])
        num.add_lvlOverride(ilvl=0).add_startOverride(start)
        return int(num.numId)


class _DocxWriter:
    """Adds the book to the document paragraph by paragraph, as the pages stream."""

    def __init__(self, document: DocumentObject, book: ExportBook, options: ExportOptions) -> None:
        self._document = document
        self._book = book
        self._options = options
        self._script = script_for(book.language)
        self._source_script = script_for(book.source_language)
        section = document.sections[0]
        text_width = (section.page_width or 0) - (section.left_margin or 0) - (section.right_margin or 0)
        self._text_width = int(text_width) // 635  # EMU -> twentieths of a point
        self._numbering = _Numbering(document)
        self._styles: dict[str, ParagraphStyle] = {}
        self._list_ids: dict[int, int | None] = {}  # list level -> numbering id (None: bulleted)
        self._break_pending = False
        self._pages_written = 0
        self._body = document._body
        self._pending: _Element | None = None  # the paragraph built last, not yet written
        self._out: BinaryIO | None = None
        self._declared = {prefix: uri for prefix, uri in document.element.nsmap.items() if prefix}
        self._heading_ids = HeadingIds(0)
        self.contents: list[tuple[int, str, str]] = []  # the headings listed: level, title, bookmark
        self._notes: dict[str, Block] = {}  # the page's notes, by id
        self._notes_written: set[str] = set()  # the page's notes already made footnotes
        self._in_note = False  # building a note's text (Word has no references inside a note)
        self._notes_out: BinaryIO | None = None
        self.footnotes = 0  # footnotes written
        self._notes_styled = False  # the footnote styles are in the document

    def write_to(self, out: BinaryIO, notes: BinaryIO) -> None:
        """Where the body's paragraphs go, serialized one by one, and the footnotes."""
        self._out = out
        self._notes_out = notes

    def flush(self) -> None:
        """Serialize the last paragraph built (it may still be changed until the next one
        starts: list numbering, alignment) and let it go."""
        if self._pending is None:
            return
        assert self._out is not None
        self._out.write(element_xml(self._pending, self._declared))
        self._pending = None

    def _style(self, name: str) -> ParagraphStyle:
        if name not in self._styles:
            self._styles[name] = cast(ParagraphStyle, self._document.styles[name])
        return self._styles[name]

    def _paragraph(self, style: str, script: Script, runs: tuple[Run, ...] = ()) -> Paragraph:
        # Built as detached elements and written out as the next starts (see the module's
        # "Memory"): Document.add_paragraph would keep every paragraph in the tree.
        self.flush()
        element = paragraph_element(
            style_id=None if style == "Normal" else self._style(style).style_id,
            page_break_before=self._break_pending,
            rtl=script.rtl,
        )
        self._break_pending = False
        for run in runs:
            element.append(self._run(run, script))
        self._pending = element
        return Paragraph(cast(CT_P, element), self._body)  # the parser builds a w:p as a CT_P

    def _run(self, run: Run, script: Script, *, bold: bool = False) -> _Element:
        if run.note:
            return self._reference(run, script)
        if run.code:  # code is written left to right, in no natural language
            return run_element(
                xml_safe(run.text), CODE_SCRIPT, bold=run.bold or bold, italic=run.italic, font=CODE_FONT
            )
        return run_element(xml_safe(run.text), script, bold=run.bold or bold, italic=run.italic)

    def _reference(self, run: Run, script: Script) -> _Element:
        """A note reference: the first to a note of the page makes it a footnote; another
        (or one inside a note) is its mark alone."""
        note = self._notes.get(run.note)
        if note is None or self._in_note or run.note in self._notes_written:
            return mark_run(xml_safe(run.text), script)
        assert self._notes_out is not None
        self._notes_written.add(run.note)
        footnote_id = FIRST_ID + self.footnotes
        self.footnotes += 1
        self._notes_out.write(element_xml(footnote_element(footnote_id, self._note_paragraph(note)), self._declared))
        return mark_run(xml_safe(run.text), script, footnote_id=footnote_id)

    def _note_paragraph(self, note: Block) -> _Element:
        self._in_note = True
        try:
            runs = [self._run(run, self._script) for run in note.runs]
        finally:
            self._in_note = False
        return note_paragraph(xml_safe(note.mark), runs, self._script)

    def _notes_left(self) -> None:
        """The page's notes no reference made footnotes, at the end of the page."""
        for note in self._notes.values():
            if note.note not in self._notes_written:
                self.flush()
                self._pending = self._note_paragraph(note)
        self._notes = {}

    def _after_table(self) -> None:
        """An empty paragraph after a table that would otherwise touch another table (Word
        joins them into one) or end the body (Word ends it with a paragraph)."""
        if self._pending is not None and self._pending.tag == qn("w:tbl"):
            self._paragraph("Normal", self._script)

    def finish(self) -> None:
        """Write what is left of the body."""
        self._after_table()
        self.flush()

    def _table(self, block: Block) -> None:
        self._after_table()
        self.flush()
        self._pending = table_element(
            block,
            text_width=self._text_width,
            script=self._script,
            run_element=lambda run, bold: self._run(run, self._script, bold=bold),
        )

    def _list_item(self, block: Block) -> None:
        level = min(max(block.level, 1), 3)
        style_name = ("List Number" if block.ordered else "List Bullet") + ("" if level == 1 else f" {level}")
        for deeper in [known for known in self._list_ids if known > level]:
            del self._list_ids[deeper]
        paragraph = self._paragraph(style_name, self._script, block.runs)
        if not block.ordered:
            self._list_ids[level] = None
            return
        if self._list_ids.get(level) is None:
            self._list_ids[level] = self._numbering.list_start(self._style(style_name), block.number or 1)
        # Made by python-docx's ZeroOrOne("w:numPr"), which its annotations do not declare.
        numbering = paragraph._p.get_or_add_pPr().get_or_add_numPr()  # type: ignore[attr-defined]
        numbering.get_or_add_ilvl().val = 0
        numbering.get_or_add_numId().val = self._list_ids[level]

    def blocks(self, blocks: list[Block]) -> None:
        for block in blocks:
            if block.kind != "list_item":
                self._list_ids.clear()
            if block.kind == "heading":
                self._heading(block)
            elif block.kind == "list_item":
                self._list_item(block)
            elif block.kind == "quote":
                self._paragraph("Quote", self._script, block.runs)
            elif block.kind == "code":
                self._paragraph("Normal", self._script, (Run(block.text, code=True),))
            elif block.kind == "rule":
                rule = self._paragraph("Normal", self._script, (Run("* * *"),))
                rule.alignment = WD_ALIGN_PARAGRAPH.CENTER
            elif block.kind == "table":
                self._table(block)
            else:
                self._paragraph("Normal", self._script, block.runs)
        self._list_ids.clear()

    def _heading(self, block: Block) -> None:
        """A heading in Word's Heading N style; one the contents list gets a bookmark."""
        level = min(max(block.level, 1), 9)
        paragraph = self._paragraph(f"Heading {level}", self._script, block.runs)
        anchor = self._heading_ids.next()
        title = xml_safe(heading_title(block))
        if title and level <= TOC_DEPTH:
            name = bookmark_name(anchor)
            bookmark_add(paragraph._p, name=name, bookmark_id=len(self.contents))
            self.contents.append((level, title, name))

    def front_xml(self) -> bytes:
        """The title and the table of contents, which come before the body."""
        title = xml_safe(self._book.title).strip()
        elements = []
        if title:
            element = paragraph_element(
                style_id=self._style("Title").style_id, page_break_before=False, rtl=self._script.rtl
            )
            element.append(self._run(Run(title), self._script))
            elements.append(element)
        elements += contents_elements(
            self.contents,
            heading_style_id=self._style(CONTENTS_HEADING_STYLE).style_id or "",
            label=self._book.labels.contents,
            script=self._script,
        )
        return b"".join(element_xml(element, self._declared) for element in elements)

    def page(self, page: ExportPage) -> None:
        blocks, notes = notes_apart(blocks_of(xml_safe(page.translation), page=page.index) if page.translated else [])
        if notes and not self._notes_styled:
            notes_set_up(self._document)
            self._notes_styled = True
        self._notes = {note.note: note for note in notes}
        self._notes_written = set()
        self._heading_ids = HeadingIds(page.index)
        if self._pages_written and chapter_heading(blocks, chapter_level=self._book.chapter_level) is not None:
            self._break_pending = True  # a chapter starts on a new page
        self._pages_written += 1
        if self._options.page_markers:
            self._paragraph(MARKER_STYLE, self._script, (Run(f"— {page.index} —"),))
        if page_shows_notice(page):
            notice = page_notice(page, self._book.labels, source_follows=not self._options.bilingual)
            self._paragraph(NOTICE_STYLE, self._script, (Run(notice),))
        if not self._options.bilingual:
            for text in source_paragraphs(page.kept_source, self._book.source_language):  # a failed page's
                self._paragraph(SOURCE_STYLE, self._source_script, (Run(text),))
            self.blocks(blocks)
            self._notes_left()
            return
        source = source_paragraphs(page.source_text, self._book.source_language)
        for source_part, unit in interleave(source, translation_units(blocks)):
            for text in source_part:
                self._paragraph(SOURCE_STYLE, self._source_script, (Run(text),))
            self.blocks(unit)
        self._notes_left()


def _document_set_up(document: DocumentObject, book: ExportBook) -> None:
    now = datetime.now(UTC)
    properties = document.core_properties
    properties.title = xml_safe(book.title)
    properties.language = book.language
    properties.identifier = book.identifier
    properties.author = ""
    properties.last_modified_by = ""
    properties.comments = ""
    properties.created = now
    properties.modified = now
    properties.revision = 1

    script = script_for(book.language)
    defaults = document.styles.element.find(qn("w:docDefaults"))
    run_defaults = defaults.find(f"{qn('w:rPrDefault')}/{qn('w:rPr')}") if defaults is not None else None
    if run_defaults is not None:
        default_language_set(run_defaults, script)
    if script.rtl:
        for section in document.sections:
            section_rtl_set(section._sectPr)
    _styles_add(document)


class DocxRenderer:
    format = "Docx"
    extension = "docx"
    mime_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

    def render(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
        """Write the book as a Word document to `out` (left open)."""
        document = Document()
        _document_set_up(document, book)
        writer = _DocxWriter(document, book, options)
        with tempfile.TemporaryFile() as body, tempfile.TemporaryFile() as notes:
            writer.write_to(body, notes)
            for page in book.pages():
                writer.page(page)
            writer.finish()
            body.seek(0)
            notes.seek(0)
            if writer.footnotes:
                footnotes = Part(PackURI(FOOTNOTES_PART), CONTENT_TYPE.WML_FOOTNOTES, b"", document.part.package)
                document.part.relate_to(footnotes, RELATIONSHIP_TYPE.FOOTNOTES)
            _package_write(document, writer.front_xml(), body, out, notes=notes if writer.footnotes else None)


def element_xml(element: _Element, declared: dict[str, str]) -> bytes:
    """The element as UTF-8 XML without the namespace declarations its start tag repeats
    from the document element (`declared`: prefix -> uri)."""
    data = etree.tostring(element, encoding="utf-8", xml_declaration=False)
    end = data.index(b">")
    start = data[:end]
    for prefix, uri in declared.items():
        start = start.replace(f' xmlns:{prefix}="{uri}"'.encode(), b"")
    return start + data[end:]


def _package_write(
    document: DocumentObject, front: bytes, body: BinaryIO, out: BinaryIO, *, notes: BinaryIO | None = None
) -> None:
    """The package python-docx makes of `document` (whose body holds only its section
    properties), with `front` (the title and contents) and then the body's paragraphs
    copied from `body` into word/document.xml; `notes`: the footnotes, copied into
    word/footnotes.xml after its separators."""
    skeleton = BytesIO()
    document.save(skeleton)
    main_part = document.part.partname.membername  # "word/document.xml"
    xml = document.part.blob
    opening = xml.index(b"<w:sectPr")
    with (
        zipfile.ZipFile(skeleton) as source,
        zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as target,
    ):
        for info in source.infolist():
            if notes is not None and info.filename == FOOTNOTES_PART.lstrip("/"):
                with target.open(info.filename, "w", force_zip64=True) as entry:
                    entry.write(PART_START)
                    while block := notes.read(1 << 20):
                        entry.write(block)
                    entry.write(PART_END)
                continue
            if info.filename != main_part:
                target.writestr(info.filename, source.read(info), compress_type=zipfile.ZIP_DEFLATED)
                continue
            with target.open(main_part, "w", force_zip64=True) as entry:
                entry.write(xml[:opening])
                entry.write(front)
                while block := body.read(1 << 20):
                    entry.write(block)
                entry.write(xml[opening:])
