"""Pdf: the book typeset with reportlab platypus (`layout: original`, the source PDF's own
pages with their text replaced, is `pdf_original`) — a title page, then every page's blocks
(headings, paragraphs, lists, quotes, code, tables) in fonts embedded per script
(`_pdf_fonts`, docs/exports-pdf-fonts.md) and laid out per script (`_pdf_text`: Arabic and
Hebrew shaped and right-to-left, Devanagari shaped, CJK broken between characters).

A chapter (a page starting with a level 1-2 heading) starts on a new sheet and gets an
outline entry; a book without headings gets one entry per `pages_per_chapter` pages. The
outline nests a chapter's sections under it as the Epub's navigation does (`exports.toc`:
the headings down to `###`, each under the last one of a higher level), every entry
pointing at its heading.
Page numbers sit in the footer; the document carries the title, the language and the
author "Book Translation Service". A page without a translation shows its notice; page
markers ("— 12 —") when asked; `bilingual` puts the source text and the translation side
by side, one table per page, each column in its own fonts and direction.

Footnotes: a reference is its mark, raised and smaller, linking to its note; a page's notes
follow its text (the translation's column in a bilingual file) under a short rule, in a
smaller size, each starting with its mark, its wrapped lines hanging under its text.

A table of the book is a reportlab `Table` as wide as the text (`_Story._table`): columns
shared by `exports.blocks.column_widths`, cells wrapped, the header row repeated on every
sheet, columns from the right in a right-to-left book. The words the renderer writes itself
(chapter names in the outline, notices, the subject) are the book's (`exports.labels`).

Memory: the story is generated page by page as platypus consumes it (`_BookTemplate`
tops up the flowable list from a generator), so only a few pages' flowables exist at a
time. Each finished sheet's content is compressed at once and moved to a spool file
(`_SpooledStream`: read back only while the file is written), and the file is written
object by object to the output (`_StreamingDocument`) instead of being assembled in
memory. What reportlab still keeps per sheet is its page object and outline entry (a few
hundred bytes); see docs/exports-pdf-fonts.md, "Memory".
"""

from __future__ import annotations

import re
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import replace
from itertools import count
from typing import IO, Any, BinaryIO

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfdoc
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import (
    BaseDocTemplate,
    Flowable,
    Frame,
    HRFlowable,
    PageBreak,
    PageTemplate,
    Spacer,
    Table,
    TableStyle,
)

from exports.blocks import Block, Run, blocks_of, column_widths, note_anchor, notes_apart
from exports.book import ExportBook, ExportOptions, ExportPage, page_notice
from exports.renderers._epub_docx_text import chapter_heading
from exports.renderers._pdf_fonts import ensure_fonts, family
from exports.renderers._pdf_text import TextStyle, code_spaces_kept, text_flowable
from exports.renderers.pdf_original import original_render
from exports.toc import ChapterSections, page_sections

AUTHOR = "Book Translation Service"
PAGE_SIZE = A4
MARGIN = 20 * mm
COLUMN_GAP = 8 * mm
LOOKAHEAD = 40  # flowables kept ahead of platypus (keep-with-next needs a few)

TITLE = TextStyle(size=24, leading=34, bold=True, align="center", space_before=60, space_after=18)
HEADINGS = {
    1: TextStyle(size=18, leading=27, bold=True, space_before=6, space_after=10, keep_with_next=True),
    2: TextStyle(size=15, leading=23, bold=True, space_before=6, space_after=8, keep_with_next=True),
    3: TextStyle(size=13, leading=20, bold=True, space_before=4, space_after=6, keep_with_next=True),
}
BODY = TextStyle(size=11, leading=18, space_after=6)
LIST_ITEM = TextStyle(size=11, leading=18, space_after=2)
QUOTE = TextStyle(size=11, leading=18, italic=True, indent=18, space_after=6, color=colors.HexColor("#444444"))
# A failed page's original text, set apart from the translation around it.
UNTRANSLATED = TextStyle(size=10.5, leading=17, indent=18, space_after=6, color=colors.HexColor("#555555"))
CODE = TextStyle(size=9.5, leading=15, space_after=6, color=colors.HexColor("#222222"))
MARKER = TextStyle(size=9, leading=14, align="center", space_before=6, space_after=6, color=colors.grey)
NOTICE = TextStyle(
    size=10.5,
    leading=16,
    italic=True,
    space_before=8,
    space_after=12,
    color=colors.HexColor("#8a1c1c"),
    background=colors.HexColor("#fdf1e6"),
)
# A page's notes, after its text.
NOTE = TextStyle(size=9, leading=12.5, space_after=3, color=colors.HexColor("#333333"))
FOOTER_SIZE = 9
# Table cells: smaller type as a table has more columns, so that a wide table still fits.
TABLE_CELL = TextStyle(size=9.5, leading=13.5, space_after=0)
TABLE_SIZES = ((4, 9.5), (6, 8.5), (9, 7.5))  # up to N columns -> points; more: TABLE_SIZE_MIN
TABLE_SIZE_MIN = 6.5
TABLE_PADDING = 4
TABLE_HEADER_FILL = colors.HexColor("#f0efeb")
TABLE_RULE = colors.HexColor("#9b9b93")
# GFM's left and right read as the table's start and end: mirrored in a right-to-left
# book, whatever the direction of a cell's own text (a command in an Arabic table sits
# at the right like the Arabic cells around it).
TABLE_ALIGN = {"left": "left", "center": "center", "right": "right"}
TABLE_ALIGN_RTL = {"left": "right", "center": "center", "right": "left"}


class PdfRenderer:
    format = "Pdf"
    extension = "pdf"
    mime_type = "application/pdf"

    def render(self, book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
        """Write the book as PDF to `out` (`options.original`: the source's pages with their
        text replaced, `pdf_original`). Raises FontsMissing when the fonts are not
        installed (see docs/exports-pdf-fonts.md)."""
        if options.original:
            original_render(book, options, out)
            return
        ensure_fonts()
        with tempfile.TemporaryFile() as spool:
            document = _BookTemplate(out, book=book, latin_font=family("latin").face(), spool=spool)
            document.build_streamed(_Story(book, options).flowables())


class _SpooledStream(pdfdoc.PDFStream):
    """A finished sheet's compressed content, kept in the spool file until it is written."""

    def __init__(self, spool: IO[bytes], content: bytes) -> None:
        super().__init__()
        self.dictionary["Filter"] = pdfdoc.PDFName("FlateDecode")  # already applied
        self._spool = spool
        spool.seek(0, 2)
        self._offset = spool.tell()
        self._length = len(content)
        spool.write(content)

    def format(self, document: Any) -> bytes:
        self._spool.seek(self._offset)
        self.content: bytes | None = self._spool.read(self._length)
        try:
            formatted: bytes = super().format(document)
        finally:
            self.content = None
        return formatted


class _OutputFile(pdfdoc.PDFFile):
    """reportlab's output collector, writing each piece to the output as it comes (it
    only needs the running offset) instead of keeping them all to join at the end."""

    def __init__(self, out: BinaryIO, pdf_version: Any) -> None:
        self._out = out
        super().__init__(pdf_version)  # collects the header
        header: list[bytes] = self.strings
        for piece in header:
            out.write(piece)
        header.clear()
        self.write = self._write_out

    def _write_out(self, data: bytes) -> None:
        self._out.write(data)

    def format(self, document: Any) -> bytes:
        return b""  # already written


class _StreamingDocument(pdfdoc.PDFDocument):
    """reportlab's document whose `format` writes to the output object by object (the
    same steps as PDFDocument.format, with `_OutputFile` as the collector)."""

    _out: BinaryIO
    # Set by PDFDocument.__init__; reportlab's stubs leave them out.
    Catalog: pdfdoc.PDFCatalog
    _pdfVersion: tuple[int, int]  # noqa: N815 (reportlab's name)

    def SaveToFile(self, filename: Any, canvas: Any) -> None:  # noqa: N802 (reportlab's name)
        self._out = filename  # always the renderer's stream here
        super().SaveToFile(filename, canvas)

    def format(self) -> bytes:
        self.encrypt.prepare(self)
        self.Reference(self.Catalog)
        self.Reference(self.info)
        counter = 0
        ids = []
        self.__accum__ = output = _OutputFile(self._out, self._pdfVersion)
        while True:
            counter += 1
            if counter not in self.numberToId:
                break
            oid = self.numberToId[counter]
            indirect = pdfdoc.PDFIndirectObject(oid, self.idToObject[oid])
            self.idToOffset[oid] = output.add(indirect.format(self))
            ids.append(oid)
        del self.__accum__
        if counter - 1 != len(self.numberToId):
            raise ValueError(f"object counter {counter} does not match {len(self.numberToId)} objects")
        xref = pdfdoc.PDFCrossReferenceTable()
        xref.addsection(0, ids)
        xref_offset = output.add(xref.format(self))
        trailer = pdfdoc.PDFTrailer(
            startxref=xref_offset,
            Size=len(self.numberToId) + 1,
            Root=self.Reference(self.Catalog),
            Info=self.Reference(self.info),
            Encrypt=None,
            ID=self.ID(),
        )
        output.add(trailer.format(self))
        return output.format(self)


class _Canvas(Canvas):
    """reportlab's canvas on a `_StreamingDocument` (only methods differ, so the document
    the canvas made is switched to the subclass before anything is drawn)."""

    _doc: pdfdoc.PDFDocument  # set by Canvas.__init__; reportlab's stubs leave it out

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._doc.__class__ = _StreamingDocument


class _BookTemplate(BaseDocTemplate):
    """One frame per sheet, the page number in the footer, and the story pulled from a
    generator as platypus needs it (platypus itself wants a list it can look ahead in)."""

    def __init__(self, out: BinaryIO, *, book: ExportBook, latin_font: str, spool: IO[bytes]) -> None:
        super().__init__(
            out,
            pagesize=PAGE_SIZE,
            leftMargin=MARGIN,
            rightMargin=MARGIN,
            topMargin=MARGIN,
            bottomMargin=MARGIN,
            title=" ".join(book.title.split()),
            author=AUTHOR,
            creator=AUTHOR,
            subject=f"{book.labels.translation} ({book.language})",
            lang=book.language,
            pageCompression=1,
            initialFontName=latin_font,
        )
        self._footer_font = latin_font
        self._spool = spool
        self._rtl = book.rtl
        self._stream: Iterator[Flowable] = iter(())
        self._story: list[Flowable] = []
        frame = Frame(
            self.leftMargin,
            self.bottomMargin,
            self.width,
            self.height,
            leftPadding=0,
            rightPadding=0,
            topPadding=0,
            bottomPadding=0,
            id="text",
        )
        self.addPageTemplates([PageTemplate(id="page", frames=[frame], onPage=self._decorate)])

    def build_streamed(self, stream: Iterator[Flowable]) -> None:
        self._stream = stream
        self._story = []
        self._top_up(self._story)
        self.build(self._story, canvasmaker=_Canvas)

    def _top_up(self, flowables: list[Flowable]) -> None:
        if flowables is not self._story:  # platypus's own lists (pending page events)
            return
        while len(flowables) < LOOKAHEAD:
            flowable = next(self._stream, None)
            if flowable is None:
                return
            flowables.append(flowable)

    def handle_flowable(self, flowables: list[Flowable]) -> None:
        self._top_up(flowables)
        super().handle_flowable(flowables)
        self._top_up(flowables)

    def handle_pageEnd(self) -> None:  # noqa: N802 (reportlab's hook)
        super().handle_pageEnd()
        _spool_finished_page(self.canv, self._spool)

    def handle_documentBegin(self) -> None:  # noqa: N802 (reportlab's hook)
        super().handle_documentBegin()
        self.canv.setViewerPreference("Direction", "R2L" if self._rtl else "L2R")
        self.canv.showOutline()

    def _decorate(self, canvas: Any, document: BaseDocTemplate) -> None:
        canvas.saveState()
        canvas.setFont(self._footer_font, FOOTER_SIZE)
        canvas.setFillColor(colors.grey)
        canvas.drawCentredString(PAGE_SIZE[0] / 2, MARGIN / 2, str(canvas.getPageNumber()))
        canvas.restoreState()


def _spool_finished_page(canvas: Any, spool: IO[bytes]) -> None:
    """reportlab keeps every finished page's content stream, uncompressed, until it writes
    the file; it is compressed now and kept in the spool file instead."""
    pages = canvas._doc.Pages.pages
    page = pages[-1] if pages else None
    if page is None or page.Contents or not page.stream:
        return
    page.Contents = _SpooledStream(spool, zlib.compress(page.stream.encode("utf-8")))
    page.stream = None


class _Destination(Flowable):
    """A named destination here (zero size; kept with what follows), `above` points over it."""

    def __init__(self, name: str, *, above: float) -> None:
        super().__init__()
        self.name = name
        self.above = above
        self.keepWithNext = 1
        self.width = self.height = 0

    def wrap(self, availWidth: float, availHeight: float) -> tuple[float, float]:  # noqa: N803 (reportlab)
        return 0, 0

    def draw(self) -> None:
        _x, top = self.canv.absolutePosition(0, 0)
        self.canv.bookmarkPage(self.name, fit="XYZ", left=0, top=top + self.above)


class _Bookmark(_Destination):
    """An outline entry pointing here."""

    _keys = count(1)

    def __init__(self, title: str, level: int) -> None:
        super().__init__(f"bts-outline-{next(self._keys)}", above=24)
        self.title = " ".join(title.split())
        self.level = level
        self.key = self.name

    def draw(self) -> None:
        super().draw()
        self.canv.addOutlineEntry(self.title, self.key, level=self.level)


class _NoteRule(Flowable):
    """The short rule over a page's notes, on the side the text starts (drawn by itself:
    a table cell, the bilingual translation column, ignores a flowable's hAlign)."""

    SHARE = 0.25  # of the width

    def __init__(self, *, rtl: bool) -> None:
        super().__init__()
        self.rtl = rtl
        self.spaceBefore = 6
        self.spaceAfter = 5
        self.keepWithNext = 1

    def wrap(self, availWidth: float, availHeight: float) -> tuple[float, float]:  # noqa: N803 (reportlab)
        self.width = availWidth
        return availWidth, 0.5

    def draw(self) -> None:
        length = self.width * self.SHARE
        start = self.width - length if self.rtl else 0.0
        self.canv.saveState()
        self.canv.setLineWidth(0.5)
        self.canv.setStrokeColor(colors.grey)
        self.canv.line(start, 0, start + length, 0)
        self.canv.restoreState()


class _NoteAnchor(_Destination):
    """Where a note is: the destination its references link to (kept with the note that follows)."""

    def __init__(self, name: str) -> None:
        super().__init__(name, above=NOTE.leading)


class _Story:
    """The flowables of the book, page by page."""

    def __init__(self, book: ExportBook, options: ExportOptions) -> None:
        self.book = book
        self.options = options
        self.outline_level = -1  # of the last outline entry
        self.chapters_seen = False
        self.sections = ChapterSections()  # the current chapter's, nested
        self.sheet_has_content = False
        self.column_width = (PAGE_SIZE[0] - 2 * MARGIN) / 2

    def flowables(self) -> Iterator[Flowable]:
        book = self.book
        title = self._text([Run(book.title)], TITLE)
        if title is not None:
            yield _Bookmark(book.title, 0)
            self.outline_level = 0
            yield title
            yield PageBreak()
        else:
            yield Spacer(0, 1)  # a PDF needs a page, even for a book without title or pages
        for page in book.pages():
            yield from self._page(page)

    def _page(self, page: ExportPage) -> Iterator[Flowable]:
        blocks, notes = notes_apart(blocks_of(page.translation, page=page.index) if page.translated else [])
        opens_chapter = chapter_heading(blocks, chapter_level=self.book.chapter_level) is not None
        if opens_chapter:
            if self.sheet_has_content:
                yield PageBreak()
            self.chapters_seen = True
            self.sections = ChapterSections(blocks[0].level)
        elif not self.chapters_seen and (page.index - 1) % max(self.options.pages_per_chapter, 1) == 0:
            last = min(page.index + self.options.pages_per_chapter - 1, self.book.page_count)
            yield self._bookmark(self.book.labels.page_label(page.index, last), 0)
            self.sections = ChapterSections()
        sections = {
            section.block: section for section in page_sections(page.index, blocks, chapter_heading=opens_chapter)
        }
        self.sheet_has_content = True
        if self.options.page_markers:
            yield from self._maybe(self._text([Run(f"— {page.index} —")], MARKER, rtl=False))
        if page.blank:
            return
        if not page.translated:
            if self.options.bilingual and page.source_text.strip():
                yield self._columns(self._source_flowables(page), [self._notice(page, source_follows=False)])
            else:
                yield self._notice(page)
                yield from self._source_flowables(page, page.kept_source, UNTRANSLATED)  # its original text
            return
        translation: list[Flowable] = []
        width = self.column_width - COLUMN_GAP / 2 if self.options.bilingual else PAGE_SIZE[0] - 2 * MARGIN
        for position, block in enumerate(blocks):
            bookmark = None
            if opens_chapter and position == 0:
                bookmark = self._bookmark(block.text, 0)
            elif position in sections:
                section = sections[position]
                bookmark = self._bookmark(section.title, 1 + self.sections.add(section))
            if bookmark is not None:
                if self.options.bilingual:
                    yield bookmark
                else:
                    translation.append(bookmark)
            translation.extend(self._block(block, width))
        translation.extend(self._notes(notes))
        if self.options.bilingual:
            yield self._columns(self._source_flowables(page), translation)
        else:
            yield from translation

    def _bookmark(self, title: str, level: int) -> _Bookmark:
        level = max(0, min(level, self.outline_level + 1))  # an entry nests at most one deeper
        self.outline_level = level
        return _Bookmark(title, level)

    def _block(self, block: Block, width: float) -> list[Flowable]:
        """A block's flowables; `width`: what the text may take (a table is made to fit it)."""
        if block.kind == "rule":
            return [HRFlowable(width="40%", thickness=0.5, color=colors.grey, spaceBefore=6, spaceAfter=10)]
        if block.kind == "table":
            return self._maybe(self._table(block, width))
        spans = list(block.runs)
        prefix = ""
        if block.kind == "heading":
            style = HEADINGS.get(block.level, HEADINGS[3])
        elif block.kind == "list_item":
            style = replace(LIST_ITEM, indent=14 * block.level)
            prefix = f"{block.number}." if block.ordered else "•"
        elif block.kind == "quote":
            style = QUOTE
        elif block.kind == "code":
            style = CODE
            spans = [replace(span, text=code_spaces_kept(span.text)) for span in spans]
        else:
            style = BODY
        return self._maybe(self._text(spans, style, prefix=prefix))

    def _notes(self, notes: list[Block]) -> list[Flowable]:
        """A page's notes under a short rule, each its mark and its text (with the
        destination its references link to)."""
        if not notes:
            return []
        flowables: list[Flowable] = [_NoteRule(rtl=self.book.rtl)]
        for note in notes:
            flowables.append(_NoteAnchor(note_anchor(note.note)))
            flowables.extend(self._maybe(self._text(list(note.runs), NOTE, prefix=note.mark)))
        flowables.append(Spacer(0, 6))
        return flowables

    def _table(self, block: Block, width: float) -> Table | None:
        """A table as wide as the text: columns in proportion to their text, cells wrapped
        (a long word is cut), the header row bold on a shaded ground and repeated on every
        sheet the table runs over; columns from the right in a right-to-left book."""
        if not block.rows or not block.columns:
            return None
        size = next((points for columns, points in TABLE_SIZES if block.columns <= columns), TABLE_SIZE_MIN)
        widths = column_widths(block, width, char_width=size * 0.6, padding=2 * TABLE_PADDING + 1)
        data: list[list[list[Flowable] | str]] = []
        for number, row in enumerate(block.rows):
            header = block.header and number == 0
            cells: list[list[Flowable] | str] = []
            for column, cell in enumerate(row):
                style = replace(
                    TABLE_CELL,
                    size=size,
                    leading=size * 1.42,
                    bold=header,
                    align=(TABLE_ALIGN_RTL if self.book.rtl else TABLE_ALIGN)[block.align[column] or "left"],
                )
                spans = list(cell)
                cells.append(self._maybe(self._text(spans, style)) or "")
            data.append(cells[::-1] if self.book.rtl else cells)
        table = Table(
            data,
            colWidths=widths[::-1] if self.book.rtl else widths,
            repeatRows=1 if block.header else 0,
            splitInRow=1,
            hAlign="RIGHT" if self.book.rtl else "LEFT",
            spaceBefore=4,
            spaceAfter=10,
        )
        commands: list[tuple[Any, ...]] = [
            ("FONT", (0, 0), (-1, -1), family("latin").face()),  # not Helvetica (unembedded)
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ("GRID", (0, 0), (-1, -1), 0.4, colors.lightgrey),
            ("BOX", (0, 0), (-1, -1), 0.6, TABLE_RULE),
            ("LEFTPADDING", (0, 0), (-1, -1), TABLE_PADDING),
            ("RIGHTPADDING", (0, 0), (-1, -1), TABLE_PADDING),
            ("TOPPADDING", (0, 0), (-1, -1), TABLE_PADDING - 1),
            ("BOTTOMPADDING", (0, 0), (-1, -1), TABLE_PADDING),
        ]
        if block.header:
            commands += [
                ("BACKGROUND", (0, 0), (-1, 0), TABLE_HEADER_FILL),
                ("LINEBELOW", (0, 0), (-1, 0), 0.8, TABLE_RULE),
            ]
        table.setStyle(TableStyle(commands))
        return table

    def _notice(self, page: ExportPage, *, source_follows: bool = True) -> Flowable:
        flowable = self._text([Run(page_notice(page, self.book.labels, source_follows=source_follows))], NOTICE)
        assert flowable is not None  # a notice always has text
        return flowable

    def _source_flowables(self, page: ExportPage, text: str | None = None, style: TextStyle = BODY) -> list[Flowable]:
        """The page's source text (or `text`), paragraph by paragraph, in its language."""
        language = self.book.source_language or "en"
        source = page.source_text if text is None else text
        paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", source)]
        flowables: list[Flowable] = []
        for paragraph in paragraphs:
            flowable = text_flowable([Run(paragraph)], style, language=language, default_rtl=self.book.source_rtl)
            flowables.extend(self._maybe(flowable))
        return flowables

    def _columns(self, source: list[Flowable], translation: list[Flowable]) -> Table:
        table = Table(
            [[source or "", translation or ""]],
            colWidths=[self.column_width, self.column_width],
            splitInRow=1,
            hAlign="LEFT",
        )
        table.setStyle(
            TableStyle(
                [
                    ("VALIGN", (0, 0), (-1, -1), "TOP"),
                    ("FONT", (0, 0), (-1, -1), family("latin").face()),  # not Helvetica (unembedded)
                    ("LEFTPADDING", (0, 0), (-1, -1), 0),
                    ("RIGHTPADDING", (0, 0), (-1, -1), COLUMN_GAP / 2),
                    ("LEFTPADDING", (1, 0), (1, -1), COLUMN_GAP / 2),
                    ("RIGHTPADDING", (1, 0), (1, -1), 0),
                    ("TOPPADDING", (0, 0), (-1, -1), 0),
                    ("BOTTOMPADDING", (0, 0), (-1, -1), 0),
                    ("LINEAFTER", (0, 0), (0, -1), 0.25, colors.lightgrey),
                ]
            )
        )
        return table

    def _text(
        self, spans: list[Run], style: TextStyle, *, prefix: str = "", rtl: bool | None = None
    ) -> Flowable | None:
        default_rtl = self.book.rtl if rtl is None else rtl
        return text_flowable(
            spans, style, language=self.book.language, default_rtl=default_rtl, prefix=prefix, note_links=True
        )

    @staticmethod
    def _maybe(flowable: Flowable | None) -> list[Flowable]:
        return [] if flowable is None else [flowable]
