"""Pdf in the original layout: each page of the source PDF, its text replaced by the
translation (docs/exports.md, "The original layout").

For each included page, in order:
- its paragraphs are recomputed from the stored layouts with bookstructure
  (`pages_paragraphs`, the call normalize makes), each with its lines' boxes;
- its translation (Markdown) is split into blocks (`exports.blocks.blocks_of`) and aligned
  with the paragraphs: the same count and kinds pair one to one; otherwise the whole
  translation goes into one region, the union of the page's body paragraphs;
- the source text of the translated paragraphs is removed from the page's content stream
  (`_pdf_redact.text_remove`), code and tables and furniture staying as they were;
- the translation is set into each paragraph's box by reportlab on an overlay page of the
  same size (fonts per script, `_pdf_text`), fitted (`fitted`), and the overlay is put on
  the page with pikepdf as a Form XObject.
A paragraph carried over a page break is split between its two pages in proportion to its
lines on each (words; characters in text without spaces), when the next page is
translated too; otherwise its first page's block holds all of it.
A page that failed or is not translated is the source page untouched with a small mark in
its top margin. A page without a text layer that OCR read (a scan) keeps its scan, levelled,
with its translated paragraphs' lines covered in the paper's colour and the translation set
there (`_scan_make`, `_pdf_scan`); a scan without such a reading is marked.

Memory: the source is opened with pikepdf (qpdf reads objects lazily from the file) and
changed in place, page by page; the overlays are drawn OVERLAY_PAGES pages to a reportlab
file at a time, each file read back lazily by qpdf when the output is written.
"""

from __future__ import annotations

import io
import logging
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import img2pdf
import pikepdf
from PIL import Image
from reportlab.pdfgen.canvas import Canvas

from bookstructure.book import STRUCTURE_LOOKAHEAD_PAGES, STRUCTURE_WINDOW_PAGES, Carried, pages_paragraphs
from bookstructure.lines import LineRef, PageLine, page_lines
from bookstructure.paragraphs import PageText, Paragraph, ParagraphKind
from bookstructure.words import word_list
from exports.blocks import Block, Run, blocks_of
from exports.book import BookSource, ExportBook, ExportOptions, ExportPage, PageLayout, page_notice
from exports.renderers._pdf_align import (
    Groups,
    aligned,
    carried_pair,
    carried_split,
    split_shares,
    table_paired,
    translated,
)
from exports.renderers._pdf_fit import (
    BOTTOM_MARGIN,
    Region,
    clear_of,
    free_above,
    free_below,
    inside,
    mark,
    merged,
    region_draw,
    region_of,
    widened,
)
from exports.renderers._pdf_fonts import ensure_fonts, family
from exports.renderers._pdf_redact import Box, text_remove
from exports.renderers._pdf_scan import (
    border_colour,
    cover_pad,
    layout_in_points,
    page_level,
    paper_colour,
    scan_frame,
    upright_image,
)
from exports.renderers._pdf_table import table_regions

logger = logging.getLogger(__name__)

GROUP_PAGES = 8  # pages whose paragraphs are computed together (one window of layouts)
OVERLAY_PAGES = 50  # overlay pages drawn into one reportlab file
IMAGE_DPI = 150  # a page image's resolution when it states none (the resolution PDF pages are rendered at)
CHECKPOINT_PAGES = 100  # pages changed in memory before the output is saved to a temporary file and reopened
JUSTIFIED_SPREAD = 1.5  # points: how close together a justified paragraph's lines but its last end
SCANNED = "not translated in the original layout: a scanned page without its OCR reading is kept as it was"


def original_render(book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
    """Write the original-layout Pdf of `book` to `out` (`options.bilingual`: each source
    page, then its translated page)."""
    ensure_fonts()
    source = book.source
    if source is None:
        raise ValueError("The original-layout Pdf needs the book's source (exports.services.book_for).")
    with source.pdf() as path, tempfile.TemporaryDirectory() as folder:
        if path is None and source.page_image is None:
            raise ValueError("The original-layout Pdf needs a PDF source or the book's page images.")
        _pages_write(path, book, options, source, Path(folder), out)


def _pages_write(
    path: Path | None,
    book: ExportBook,
    options: ExportOptions,
    source: BookSource,
    folder: Path,
    out: BinaryIO,
) -> None:
    """The source at `path` changed page by page, then saved to `out`. qpdf keeps every
    object it has read or been given until its file is closed, so every CHECKPOINT_PAGES
    pages the output so far is saved to a temporary file and opened again (its objects read
    lazily once more): memory holds at most CHECKPOINT_PAGES pages' changes. A book of
    images (`path` None) starts from an empty file, each included page made from its image
    (`_image_page`) as it comes."""
    with ExitStack() as stack:
        part = stack.enter_context(ExitStack())  # the open output and its overlays' files
        pdf = part.enter_context(pikepdf.open(path) if path is not None else pikepdf.new())
        overlays = _Overlays(folder, part)
        source_count = len(pdf.pages) if path is not None else 0  # a book of images: only its included pages
        inserted = 0  # copies inserted before the current page (bilingual)
        included: set[int] = set()
        changed = 0
        for planned in _planned(book, source):
            page = planned.page
            if path is not None and page.index > source_count:
                break
            if changed >= CHECKPOINT_PAGES:
                overlays.apply()
                saved = folder / f"part-{len(included)}.pdf"
                pdf.save(saved)
                part.close()
                for earlier in [*folder.glob("part-*.pdf"), *folder.glob("image-*.pdf")]:  # now in `saved`
                    if earlier != saved:
                        earlier.unlink()
                part = stack.enter_context(ExitStack())
                pdf = part.enter_context(pikepdf.open(saved))
                overlays.stack = part
                changed = 0
            included.add(page.index)
            changed += 1
            if path is None:
                at = len(pdf.pages)
                pdf.pages.append(_image_page(part, source, page, folder / f"image-{page.index}.pdf"))
            else:
                at = page.index - 1 + inserted
            target = pdf.pages[at]
            if options.bilingual:
                pdf.pages.insert(at + 1, target)  # a copy: the source page stays before it
                target = pdf.pages[at + 1]
                inserted += 1
            _page_make(pdf, target, planned, book, overlays)
        overlays.apply()
        # Pages left out of the book are left out of the file too (from the last one, so that
        # the positions before it stay as they are).
        left_out, copies = [], 0
        for index in range(1, source_count + 1):
            if index not in included:
                left_out.append(index - 1 + copies)
            elif options.bilingual:
                copies += 1
        for position in reversed(left_out):
            del pdf.pages[position]
        pdf.save(out)


def _image_page(stack: ExitStack, source: BookSource, page: ExportPage, path: Path) -> pikepdf.Page:
    """A book of images' page: its stored image alone on a page of its size at its
    resolution (IMAGE_DPI when the image does not say), embedded by img2pdf as it is stored
    (PNG and JPEG data are not re-encoded). The one-page file is written to `path` and
    stays open in `stack` (qpdf reads the image from it when the output is saved)."""
    if source.page_image is None or not page.image_key:
        raise ValueError(f"Page {page.index} of a book of images has no stored image.")
    image = source.page_image(page.image_key)
    with Image.open(io.BytesIO(image)) as opened:
        stated = opened.info.get("dpi")
    layout = img2pdf.default_layout_fun if stated else img2pdf.get_fixed_dpi_layout_fun((IMAGE_DPI, IMAGE_DPI))
    with path.open("wb") as written:
        img2pdf.convert(image, layout_fun=layout, outputstream=written)
    return stack.enter_context(pikepdf.open(path)).pages[0]


class _Overlays:
    """Overlay pages drawn OVERLAY_PAGES to a reportlab file; each put on its page once the
    file is written (`apply`, also called when a file fills). The files stay open in
    `stack` (qpdf reads them when the output is saved)."""

    def __init__(self, folder: Path, stack: ExitStack) -> None:
        self.folder = folder
        self.stack = stack
        self.canvas: Canvas | None = None
        self.targets: list[tuple[pikepdf.Page, pikepdf.Rectangle]] = []
        self.files = 0

    def page(self, target: pikepdf.Page, width: float, height: float) -> Canvas:
        if self.canvas is None:
            self.files += 1
            self.path = self.folder / f"overlay-{self.files}.pdf"
            # The initial font is one we embed (reportlab would name Helvetica, not embedded);
            # types-reportlab types initialFontName as a float, reportlab takes a font's name.
            self.canvas = Canvas(
                str(self.path),
                pageCompression=1,
                initialFontName=family("latin").face(),  # type: ignore[arg-type]
            )
        self.canvas.setPageSize((width, height))
        self.targets.append((target, pikepdf.Rectangle(target.mediabox)))
        return self.canvas

    def done(self) -> None:
        assert self.canvas is not None
        self.canvas.showPage()
        if len(self.targets) >= OVERLAY_PAGES:
            self.apply()

    def apply(self) -> None:
        if self.canvas is None:
            return
        self.canvas.save()
        self.canvas = None
        drawn = self.stack.enter_context(pikepdf.open(self.path))
        for number, (target, rect) in enumerate(self.targets):
            target.add_overlay(drawn.pages[number], rect)
        self.targets = []


_Carry = Mapping[tuple[LineRef, ...], str]
_TablePair = tuple[Paragraph, Block]  # a table and its translation (`table_paired`)


@dataclass(frozen=True)
class _Planned:
    """An included page with its paragraphs (None: no text layer), its stored layout, the
    text its carried lines take from the previous page's paragraph (by line), whether the
    next page is translated, and its paragraphs aligned with its translation (None: they do
    not pair, or the page is not translated)."""

    page: ExportPage
    text: PageText | None
    layout: PageLayout | None
    carried: _Carry
    next_translated: bool
    pairs: Groups | None
    tables: tuple[_TablePair, ...] = ()  # tables of earlier pages that go on here, with their translations


def _planned(book: ExportBook, source: BookSource) -> Iterator[_Planned]:
    """Each included page, planned (`_Planned`): its paragraphs computed GROUP_PAGES pages
    at a time, as normalize computed them."""
    words = word_list(book.source_language or "en")
    pages = book.pages()
    pending: list[ExportPage] = []
    carried_text: dict[tuple[LineRef, ...], str] = {}
    carried_tables: list[_TablePair] = []  # tables that go on past the last page planned
    exhausted = False
    start = 1
    # The stored layouts of the window, kept from one group to the next (windows overlap):
    # each read once, and the same objects, whose lines bookstructure keeps (`page_lines`).
    stored: dict[int, PageLayout] = {}
    read_through = 0
    while not exhausted or pending:
        while not exhausted and len(pending) < GROUP_PAGES + 1:
            following = next(pages, None)
            if following is None:
                exhausted = True
            else:
                pending.append(following)
        if not pending:
            return
        group = pending[:GROUP_PAGES]
        start, through = group[0].index, group[-1].index
        first_index = max(1, start - STRUCTURE_WINDOW_PAGES)
        last = through + STRUCTURE_LOOKAHEAD_PAGES
        stored = {index: each for index, each in stored.items() if index >= first_index}
        stored.update((each.index, each) for each in source.layouts(max(first_index, read_through + 1), last))
        read_through = max(read_through, last)
        layouts = [
            _text_layout(stored[index].layout) if index in stored else {}
            for index in range(first_index, through + STRUCTURE_LOOKAHEAD_PAGES + 1)
        ]
        carried_in = {
            index: Carried(page=index, origin=each.carried_from, lines=each.carried_lines)
            for index, each in stored.items()
            # As normalize decides the window: only the pages an earlier, decided page took lines of.
            if each.carried_from is not None and index >= start and each.carried_from < start
        }
        window = range(first_index, through + STRUCTURE_LOOKAHEAD_PAGES + 1)
        texts = {
            text.page: text
            for text in pages_paragraphs(
                layouts,
                first_index=first_index,
                start=start,
                through=through,
                carried_in=carried_in,
                words=words,
                furniture=[stored[index].furniture if index in stored else () for index in window],
            )
        }
        # A blank page (Approved, nothing of its own to translate) may finish the previous
        # page's paragraph or table: their translation is set there too.
        translated = {each.index for each in pending if each.translated or each.blank}
        for page in group:
            text = texts.get(page.index) if stored.get(page.index) and _text_layout(stored[page.index].layout) else None
            taken = {refs: value for refs, value in carried_text.items() if refs[0].page == page.index}
            tables = tuple(pair for pair in carried_tables if _goes_on(pair, page.index - 1))
            next_translated = page.index + 1 in translated
            carried_text = {}
            pairs = aligned(page, text) if text is not None and page.translated else None
            if pairs is not None:
                carried_text = carried_split(pairs, next_translated=next_translated)
            own_tables = [pair for pair in map(table_paired, pairs or ()) if pair is not None]
            carried_tables = [pair for pair in [*tables, *own_tables] if next_translated and _goes_on(pair, page.index)]
            yield _Planned(page, text, stored.get(page.index), taken, next_translated, pairs, tables)
        pending = pending[GROUP_PAGES:]


def _justified(text: PageText, lines: Mapping[LineRef, PageLine], page: int) -> bool:
    """Whether the page's prose is set justified: most of its paragraphs of three lines or
    more end every line but the last at one right edge (within JUSTIFIED_SPREAD)."""
    votes = []
    for paragraph in text.paragraphs:
        own = [lines[ref] for ref in paragraph.lines if ref.page == page and ref in lines]
        if paragraph.kind != ParagraphKind.PARAGRAPH or len(own) < 3:
            continue
        ends = [line.x1 for line in own[:-1]]
        votes.append(max(ends) - min(ends) <= JUSTIFIED_SPREAD)
    return sum(votes) > len(votes) / 2


def _goes_on(pair: _TablePair, page: int) -> bool:
    """Whether the table goes on past `page` (its rows continued over the page break)."""
    return pair[0].end_page > page


def _text_layout(layout: Mapping[str, Any]) -> Mapping[str, Any]:
    """A text layer's layout ({} for an OCR layout or none: a scan)."""
    return layout if layout.get("source", "pdf") == "pdf" and layout.get("blocks") else {}


def _page_make(
    pdf: pikepdf.Pdf,
    target: pikepdf.Page,
    planned: _Planned,
    book: ExportBook,
    overlays: _Overlays,
) -> None:
    page, text, layout = planned.page, planned.text, planned.layout
    shown = _Shown.of(target)
    if not page.translated:
        if page.blank:
            if (planned.carried or planned.tables) and text is not None and layout is not None:
                _page_finish(pdf, target, planned, book, overlays, text, layout)
            return
        mark(
            overlays.page(target, shown.width, shown.height),
            page_notice(page, book.labels, source_follows=False),
            shown.width,
            shown.height,
        )
        overlays.done()
        return
    if text is None and layout is not None and _scan_make(target, page, layout, book, overlays):
        return
    if text is None or layout is None:
        mark(overlays.page(target, shown.width, shown.height), SCANNED, shown.width, shown.height)
        overlays.done()
        return
    _page_finish(pdf, target, planned, book, overlays, text, layout)


def _page_finish(
    pdf: pikepdf.Pdf,
    target: pikepdf.Page,
    planned: _Planned,
    book: ExportBook,
    overlays: _Overlays,
    text: PageText,
    layout: PageLayout,
) -> None:
    """A page with a text layer: the source text of what is translated removed, and the
    translation set in its place."""
    page, shown = planned.page, _Shown.of(target)
    lines = {line.ref: line for line in page_lines(layout.layout, page=page.index)}
    regions, removed = _regions(
        page, text, planned.pairs, lines, planned.carried, next_translated=planned.next_translated
    )
    for table in planned.tables:  # the rows set here of a table an earlier page began
        cells, cut = table_regions(*table, lines, page=page.index)
        regions += cells
        removed += cut
    if _justified(text, lines, page.index):  # set as the source is: both edges
        regions = [region if region.fixed else replace(region, align="justify") for region in regions]

    boxes = []
    for line in removed:
        corners = [
            shown.on_page(*shown.from_layout(x, y))
            for x in (line.x0 - 1, line.x1 + 1)
            for y in (line.top - 0.5, line.bottom + 0.5)
        ]
        xs, ys = [x for x, _ in corners], [y for _, y in corners]
        boxes.append(Box(min(xs), min(ys), max(xs), max(ys)))
    text_remove(pdf, target, boxes)
    page_bottom = shown.crop[3] - shown.crop[1] - BOTTOM_MARGIN
    all_lines = list(lines.values())
    replaced = {line.ref for line in removed}
    kept = [line for line in all_lines if line.ref not in replaced]
    canvas = overlays.page(target, shown.width, shown.height)
    body = [line for line in removed if not line.mono]
    for region in merged(regions):
        # A region grows to its own column's edge (a page in columns), never over the next one.
        column_body = [line for line in body if line.column == region.column]
        region.box = region.box if region.fixed else clear_of(widened(region.box, column_body, all_lines), kept)
        region.free_below = free_below(region, all_lines, page_bottom)
        region_draw(canvas, region, book, shown.from_layout)
    overlays.done()


@dataclass(frozen=True)
class _Shown:
    """A page as a reader sees it: its media box turned by its /Rotate (clockwise, a
    multiple of 90), `width` x `height` points, y up from its bottom-left corner, and its
    crop box in that frame (`crop`: x0, y0, x1, y1). Layouts are read in this frame (poppler
    reads a turned page as shown), and overlays are drawn in it: qpdf turns an overlay
    placed on a turned page (`add_overlay`) so that it stands upright as the page is shown.
    `matrix` takes a point of the frame to the page's own, unturned space (from the media
    box's bottom-left corner), where its content stream draws."""

    width: float
    height: float
    crop: tuple[float, float, float, float]
    matrix: tuple[float, float, float, float, float, float]
    origin: tuple[float, float]  # the media box's bottom-left corner in the page's space

    @classmethod
    def of(cls, target: pikepdf.Page) -> _Shown:
        media = [float(value) for value in target.mediabox]
        crop = [float(value) for value in target.obj.get("/CropBox", target.mediabox)]
        rotation = int(target.obj.get("/Rotate", 0)) % 360
        across, up = media[2] - media[0], media[3] - media[1]
        matrix = {
            90: (0.0, 1.0, -1.0, 0.0, across, 0.0),
            180: (-1.0, 0.0, 0.0, -1.0, across, up),
            270: (0.0, -1.0, 1.0, 0.0, 0.0, up),
        }.get(rotation, (1.0, 0.0, 0.0, 1.0, 0.0, 0.0))
        a, b, c, d, e, f = matrix

        def shown(x: float, y: float) -> tuple[float, float]:  # the matrix's inverse (a turn: its transpose)
            x, y = x - media[0] - e, y - media[1] - f
            return a * x + b * y, c * x + d * y

        corners = [shown(x, y) for x in (crop[0], crop[2]) for y in (crop[1], crop[3])]
        xs, ys = [x for x, _ in corners], [y for _, y in corners]
        turned = rotation in (90, 270)
        return cls(
            width=up if turned else across,
            height=across if turned else up,
            crop=(min(xs), min(ys), max(xs), max(ys)),
            matrix=matrix,
            origin=(media[0], media[1]),
        )

    def from_layout(self, x: float, y: float) -> tuple[float, float]:
        """A layout's point (from the shown crop box's top-left, y down) in the frame."""
        return self.crop[0] + x, self.crop[3] - y

    def on_page(self, x: float, y: float) -> tuple[float, float]:
        """A point of the frame in the page's space (where its content stream draws)."""
        a, b, c, d, e, f = self.matrix
        return a * x + c * y + e + self.origin[0], b * x + d * y + f + self.origin[1]


def _scan_make(
    target: pikepdf.Page, page: ExportPage, layout: PageLayout, book: ExportBook, overlays: _Overlays
) -> bool:
    """A scanned page (docs/exports.md, "Scanned pages"): the scan kept as it is, each
    translated paragraph's OCR lines covered with the paper colour around them and the
    translation set in its place, both in the scan's own upright and level frame. False
    (nothing drawn) when the OCR layout cannot be placed on the page or no page image is
    stored: the page is marked then."""
    shown = _Shown.of(target)
    frame = scan_frame(layout.layout, shown.width, shown.height)
    source = book.source
    if frame is None or source is None or source.page_image is None or not page.image_key:
        return False
    points = layout_in_points(layout.layout, frame)
    texts = pages_paragraphs(
        [points],
        first_index=page.index,
        start=page.index,
        through=page.index,
        carried_in={},
        words=word_list(book.source_language or "en"),
        furniture=[layout.furniture],
    )
    text = next((each for each in texts if each.page == page.index), None)
    if text is None:
        return False
    lines = {line.ref: line for line in page_lines(points, page=page.index)}
    regions, removed = _regions(page, text, aligned(page, text), lines, {}, next_translated=False)
    stored = source.page_image(page.image_key)
    page_level(target, frame, paper_colour(stored))
    image = upright_image(stored, frame)
    canvas = overlays.page(target, shown.width, shown.height)
    canvas.saveState()
    canvas.transform(*frame.matrix((shown.crop[0], shown.crop[1])))

    def to_frame(x: float, y: float) -> tuple[float, float]:
        return x, frame.height - y

    def in_pixels(line: PageLine) -> tuple[float, float, float, float]:
        return line.x0 * frame.scale, line.top * frame.scale, line.x1 * frame.scale, line.bottom * frame.scale

    page_pixels = [in_pixels(line) for line in lines.values()]
    placed = merged(regions)
    for region in placed:  # the covers first: a region's text may run over another's lines
        own = [line for line in removed if inside((line.x0, line.top, line.x1, line.bottom), region.box)]
        if not own:
            continue
        canvas.setFillColorRGB(*border_colour(image, [in_pixels(line) for line in own], page_pixels))
        for line in own:
            pad = cover_pad((line.x0, line.top, line.x1, line.bottom))
            x, y = to_frame(line.x0 - pad, line.bottom + pad)
            canvas.rect(x, y, line.x1 - line.x0 + 2 * pad, line.bottom - line.top + 2 * pad, stroke=0, fill=1)
    all_lines = list(lines.values())
    replaced = {line.ref for line in removed}
    kept = [line for line in all_lines if line.ref not in replaced]
    body = [line for line in removed if not line.mono]
    for region in placed:
        # A region grows to its own column's edge (a page in columns), never over the next one.
        column_body = [line for line in body if line.column == region.column]
        region.box = region.box if region.fixed else clear_of(widened(region.box, column_body, all_lines), kept)
        region.free_below = free_below(region, all_lines, frame.height - BOTTOM_MARGIN)
        # OCR lines are set further apart than the scan's (LEADING_MIN_READ): a region's
        # first line may not rise into the last of the region above.
        region.free_above = free_above(region, all_lines)
        region_draw(canvas, region, book, to_frame)
    canvas.restoreState()
    overlays.done()
    return True


def _regions(
    page: ExportPage,
    text: PageText,
    pairs: Groups | None,
    lines: Mapping[LineRef, PageLine],
    carried: _Carry,
    *,
    next_translated: bool,
) -> tuple[list[Region], list[PageLine]]:
    """Where the page's translation goes, and the source lines it replaces (`pairs`: its
    paragraphs aligned with its translation, None to set it as one region)."""
    regions: list[Region] = []
    removed: list[PageLine] = []
    for refs, rest in carried.items():
        # The lines this page finishes of the previous page's paragraph: its translation's rest.
        own = [lines[ref] for ref in refs if ref in lines]
        if own:
            regions.append(region_of(own, [Block(kind="paragraph", runs=(Run(rest),))]))
            removed += own
    if pairs is None:
        body = [
            lines[ref]
            for paragraph in text.paragraphs
            for ref in paragraph.lines
            if ref.page == page.index and ref in lines and page.translated  # a blank page keeps its own
        ]
        if body:
            blocks = [block for block in blocks_of(page.translation) if block.kind != "rule"]
            regions.append(region_of(body, blocks))
            removed += body
        return regions, removed
    carried_at = carried_pair(pairs)
    for index, (group, blocks) in enumerate(pairs):
        table = table_paired((group, blocks))
        if table is not None:  # set cell by cell (_pdf_table)
            cells, replaced = table_regions(*table, lines, page=page.index)
            regions += cells
            removed += replaced
            continue
        if not blocks or not translated((group, blocks)):
            continue  # code, a table, or a paragraph the translation has nothing for: kept
        own = [lines[ref] for paragraph in group for ref in paragraph.lines if ref.page == page.index and ref in lines]
        if not own:
            continue
        paragraph = group[-1]
        parts = _column_parts(own)
        carried_here = index == carried_at and len(own) < len(paragraph.lines) and next_translated
        if len(group) == 1 and len(blocks) == 1 and (carried_here or len(parts) > 1):
            # A paragraph set over two columns, or carried on to the next page: each column
            # (and the next page, `carried_split`) sets its share of the translation.
            block = blocks[0]
            shares = [len(part) / len(paragraph.lines) for part in parts]
            texts = split_shares(block.text, [*shares, 1 - sum(shares)] if carried_here else shares)
            for part, part_text in zip(parts, texts, strict=False):
                if part_text:
                    regions.append(region_of(part, [Block(kind=block.kind, runs=(Run(part_text),), level=block.level)]))
        else:
            regions.append(region_of(own, blocks))
        removed += own
    return regions, removed


def _column_parts(lines: Sequence[PageLine]) -> list[list[PageLine]]:
    """A paragraph's lines on a page, cut where they go on in another part of the page (a
    column of a page in columns)."""
    parts: list[list[PageLine]] = []
    for line in lines:
        if parts and parts[-1][-1].region == line.region:
            parts[-1].append(line)
        else:
            parts.append([line])
    return parts
