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
  same size (fonts per script, `_pdf_text`), fitted (`_fitted`), and the overlay is put on
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

import logging
import math
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pikepdf
from reportlab.lib import colors
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import Flowable

from bookstructure.book import STRUCTURE_LOOKAHEAD_PAGES, STRUCTURE_WINDOW_PAGES, Carried, pages_paragraphs
from bookstructure.lines import LineRef, PageLine, page_lines
from bookstructure.paragraphs import PageText, Paragraph, ParagraphKind
from bookstructure.words import word_list
from exports.blocks import Block, Run, blocks_of
from exports.book import BookSource, ExportBook, ExportOptions, ExportPage, PageLayout, page_notice
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
from exports.renderers._pdf_text import TextStyle, text_flowable

logger = logging.getLogger(__name__)

GROUP_PAGES = 8  # pages whose paragraphs are computed together (one window of layouts)
OVERLAY_PAGES = 50  # overlay pages drawn into one reportlab file
CHECKPOINT_PAGES = 100  # pages changed in memory before the output is saved to a temporary file and reopened
SIZE_FLOOR = 0.6  # the translation's size steps down to this share of the source's
SIZE_STEP = 0.25
SIZE_MIN = 4.0  # past the floor (in the grown box): smaller still, down to this
LEADING = 1.18
BOTTOM_MARGIN = 18.0  # a block grows down at most to this far above the page's bottom edge
MARK_SIZE = 7.0
MARK_COLOR = colors.HexColor("#8a1c1c")
SCANNED = (
    "not translated in the original layout: a scanned page without its OCR reading, or a turned page, is kept as it was"
)
KEPT_KINDS = frozenset({ParagraphKind.CODE, ParagraphKind.TABLE})
# Pairings the alignment weighs: (paragraphs, blocks, penalty).
_PAIRINGS = ((1, 1, 0.0), (2, 1, 1.0), (1, 2, 1.0), (1, 0, 3.0), (0, 1, 3.0))
ALIGNMENT_COST_MAX = 1.5  # per paragraph or block: a page scoring worse is set as one region
# Kinds as the alignment compares them: prose of any kind (a paragraph, a list item, a
# quote) pairs with prose (the Markdown of a paragraph inside a list item reads either way).
_KINDS = {"heading": "heading", "code": "code", "table": "table"}
_SPACE = re.compile(r"\s+")


@dataclass
class _Region:
    """Where a translation is set: a box in layout space (points from the top-left), the
    source's size, and the blocks (or the text) set there."""

    box: tuple[float, float, float, float]  # x0, top, x1, bottom
    size: float
    blocks: list[Block]
    free_below: float = 0.0


def original_render(book: ExportBook, options: ExportOptions, out: BinaryIO) -> None:
    """Write the original-layout Pdf of `book` to `out` (`options.bilingual`: each source
    page, then its translated page)."""
    ensure_fonts()
    source = book.source
    if source is None:
        raise ValueError("The original-layout Pdf needs the book's source (exports.services.book_for).")
    with source.pdf() as path, tempfile.TemporaryDirectory() as folder:
        if path is None:
            raise ValueError("The original-layout Pdf needs a PDF source.")
        _pages_write(path, book, options, source, Path(folder), out)


def _pages_write(
    path: Path,
    book: ExportBook,
    options: ExportOptions,
    source: BookSource,
    folder: Path,
    out: BinaryIO,
) -> None:
    """The source at `path` changed page by page, then saved to `out`. qpdf keeps every
    object it has read or been given until its file is closed, so every CHECKPOINT_PAGES
    pages the output so far is saved to a temporary file and opened again (its objects read
    lazily once more): memory holds at most CHECKPOINT_PAGES pages' changes."""
    with ExitStack() as stack:
        part = stack.enter_context(ExitStack())  # the open output and its overlays' files
        pdf = part.enter_context(pikepdf.open(path))
        overlays = _Overlays(folder, part)
        source_count = len(pdf.pages)
        inserted = 0  # copies inserted before the current page (bilingual)
        included: set[int] = set()
        changed = 0
        for page, text, layout, carried, next_translated in _planned(book, source):
            if page.index > source_count:
                break
            if changed >= CHECKPOINT_PAGES:
                overlays.apply()
                saved = folder / f"part-{len(included)}.pdf"
                pdf.save(saved)
                part.close()
                for earlier in folder.glob("part-*.pdf"):
                    if earlier != saved:
                        earlier.unlink()
                part = stack.enter_context(ExitStack())
                pdf = part.enter_context(pikepdf.open(saved))
                overlays.stack = part
                changed = 0
            included.add(page.index)
            changed += 1
            at = page.index - 1 + inserted
            target = pdf.pages[at]
            if options.bilingual:
                pdf.pages.insert(at + 1, target)  # a copy: the source page stays before it
                target = pdf.pages[at + 1]
                inserted += 1
            _page_make(pdf, target, page, text, layout, carried, next_translated, book, overlays)
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


def _planned(
    book: ExportBook, source: BookSource
) -> Iterator[tuple[ExportPage, PageText | None, PageLayout | None, _Carry, bool]]:
    """Each included page with its paragraphs (None: no text layer) and layout, and the
    text its carried lines take from the previous page's paragraph (by line)."""
    words = word_list(book.source_language or "en")
    pages = book.pages()
    pending: list[ExportPage] = []
    carried_text: dict[tuple[LineRef, ...], str] = {}
    exhausted = False
    start = 1
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
        stored = {each.index: each for each in source.layouts(first_index, through + STRUCTURE_LOOKAHEAD_PAGES)}
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
        translated = {each.index for each in pending if each.translated}
        for page in group:
            text = texts.get(page.index) if stored.get(page.index) and _text_layout(stored[page.index].layout) else None
            taken = {refs: value for refs, value in carried_text.items() if refs[0].page == page.index}
            next_translated = page.index + 1 in translated
            carried_text = {}
            if text is not None and page.translated:
                carried_text = _carried_split(page, text, next_translated=next_translated)
            yield page, text, stored.get(page.index), taken, next_translated
        pending = pending[GROUP_PAGES:]


def _text_layout(layout: Mapping[str, Any]) -> Mapping[str, Any]:
    """A text layer's layout ({} for an OCR layout or none: a scan)."""
    return layout if layout.get("source", "pdf") == "pdf" and layout.get("blocks") else {}


def _kind_of(paragraph: Paragraph) -> str:
    return _KINDS.get(paragraph.kind.value, "paragraph")


def _aligned(page: ExportPage, text: PageText) -> list[tuple[list[Paragraph], list[Block]]] | None:
    """The page's paragraphs grouped with its translation's blocks, in order, or None when
    they do not pair well enough (one region then). The alignment of sentence aligners
    (Gale and Church): dynamic programming over pairings of one paragraph with one block,
    two with one and one with two (prose only; two paragraphs an engine joined, or one it
    split), and one left alone, each scored by how far its length ratio is from the page's
    and by a penalty per kind of pairing; headings pair only with headings, code with code,
    tables with tables. A block left alone joins the group before it (the first one's
    after it); a paragraph left alone keeps its source text."""
    blocks = [block for block in blocks_of(page.translation) if block.kind != "rule"]
    paragraphs = list(text.paragraphs)
    if not blocks or not paragraphs:
        return None
    ratio = sum(len(block.text) + 1 for block in blocks) / sum(len(paragraph.text) + 1 for paragraph in paragraphs)
    count, total = len(paragraphs), len(blocks)
    cost = [[math.inf] * (total + 1) for _ in range(count + 1)]
    step_of: dict[tuple[int, int], tuple[int, int]] = {}
    cost[0][0] = 0.0
    for here in range(count + 1):
        for there in range(total + 1):
            if cost[here][there] == math.inf:
                continue
            for taken, given, penalty in _PAIRINGS:
                if here + taken > count or there + given > total:
                    continue
                paired = _pairing_cost(paragraphs[here : here + taken], blocks[there : there + given], ratio)
                if cost[here][there] + penalty + paired < cost[here + taken][there + given]:
                    cost[here + taken][there + given] = cost[here][there] + penalty + paired
                    step_of[(here + taken, there + given)] = (taken, given)
    if cost[count][total] > ALIGNMENT_COST_MAX * max(count, total):
        logger.info("Page %s: its translation does not pair with its paragraphs; set as one region", page.index)
        return None
    groups: list[tuple[list[Paragraph], list[Block]]] = []
    here, there = count, total
    while here or there:
        taken, given = step_of[(here, there)]
        groups.append((paragraphs[here - taken : here], blocks[there - given : there]))
        here, there = here - taken, there - given
    groups.reverse()
    return _strays_joined(groups)


def _pairing_cost(paragraphs: Sequence[Paragraph], blocks: Sequence[Block], ratio: float) -> float:
    if not paragraphs or not blocks:
        return 0.0
    kinds = [_kind_of(paragraph) for paragraph in paragraphs]
    block_kinds = [_KINDS.get(block.kind, "paragraph") for block in blocks]
    if len(kinds) + len(block_kinds) > 2 and set(kinds + block_kinds) != {"paragraph"}:
        return math.inf
    if kinds[0] != block_kinds[0]:
        return math.inf
    source = sum(len(paragraph.text) + 1 for paragraph in paragraphs)
    target = sum(len(block.text) + 1 for block in blocks)
    return abs(math.log(target / (source * ratio)))


def _strays_joined(groups: list[tuple[list[Paragraph], list[Block]]]) -> list[tuple[list[Paragraph], list[Block]]]:
    """The groups, a block paired with no paragraph joined to the translated group before it
    (or after it, before the first)."""
    kept: list[tuple[list[Paragraph], list[Block]]] = []
    waiting: list[Block] = []
    for paragraphs, blocks in groups:
        translated = bool(blocks) and _translated((paragraphs, blocks))
        if not paragraphs:
            target = next((group for group in reversed(kept) if group[0] and group[1] and _translated(group)), None)
            if target is None:
                waiting += blocks
            else:
                target[1].extend(blocks)
            continue
        if translated and waiting:
            blocks = [*waiting, *blocks]
            waiting = []
        kept.append((list(paragraphs), list(blocks)))
    return kept


def _translated(group: tuple[list[Paragraph], list[Block]]) -> bool:
    return all(paragraph.kind not in KEPT_KINDS for paragraph in group[0])


def _carried_split(page: ExportPage, text: PageText, *, next_translated: bool) -> dict[tuple[LineRef, ...], str]:
    """The share of the carried paragraph's translation set on the next page, keyed by its
    lines there. Empty when nothing is carried or the next page is not translated."""
    pairs = _aligned(page, text)
    if not pairs or not next_translated:
        return {}
    group, blocks = pairs[-1]
    paragraph = group[-1]
    if len(group) != 1 or not paragraph.carried or paragraph.kind in KEPT_KINDS or len(blocks) != 1:
        return {}
    block = blocks[0]
    here = [ref for ref in paragraph.lines if ref.page == paragraph.page]
    there = [ref for ref in paragraph.lines if ref.page != paragraph.page]
    _, rest = _split(block.text, len(here) / len(paragraph.lines))
    return {tuple(there): rest} if there and rest else {}


def _split(text: str, share: float) -> tuple[str, str]:
    """`text` cut after `share` of its words (of its characters when it has no spaces)."""
    words = text.split()
    if len(words) > 1:
        cut = max(1, round(len(words) * share))
        return " ".join(words[:cut]), " ".join(words[cut:])
    cut = max(1, round(len(text) * share))
    return text[:cut], text[cut:]


def _page_make(
    pdf: pikepdf.Pdf,
    target: pikepdf.Page,
    page: ExportPage,
    text: PageText | None,
    layout: PageLayout | None,
    carried: _Carry,
    next_translated: bool,
    book: ExportBook,
    overlays: _Overlays,
) -> None:
    media = [float(value) for value in target.mediabox]
    crop = [float(value) for value in target.obj.get("/CropBox", target.mediabox)]
    width, height = media[2] - media[0], media[3] - media[1]
    if not page.translated:
        if page.blank:
            return
        _mark(overlays.page(target, width, height), page_notice(page, book.labels, source_follows=False), width, height)
        overlays.done()
        return
    rotated = int(target.obj.get("/Rotate", 0)) % 360
    if text is None and layout is not None and not rotated and _scan_make(target, page, layout, book, overlays):
        return
    if text is None or layout is None or rotated:
        _mark(overlays.page(target, width, height), SCANNED, width, height)
        overlays.done()
        return
    lines = {line.ref: line for line in page_lines(layout.layout, page=page.index)}
    regions, removed = _regions(page, text, lines, carried, next_translated=next_translated)

    # Layout space (from the crop box's top-left, y down) -> the overlay's space (the media box, y up).
    def to_pdf(x: float, y: float) -> tuple[float, float]:
        return crop[0] - media[0] + x, crop[3] - media[1] - y

    boxes = []
    for line in removed:
        x0, y1 = to_pdf(line.x0 - 1, line.top - 0.5)
        x1, y0 = to_pdf(line.x1 + 1, line.bottom + 0.5)
        boxes.append(Box(x0 + media[0], y0 + media[1], x1 + media[0], y1 + media[1]))
    text_remove(pdf, target, boxes)
    page_bottom = crop[3] - crop[1] - BOTTOM_MARGIN
    all_lines = list(lines.values())
    canvas = overlays.page(target, width, height)
    body = [line for line in removed if not line.mono]
    for region in _merged(regions):
        region.box = _widened(region.box, body, all_lines)
        region.free_below = _free_below(region, all_lines, page_bottom)
        _region_draw(canvas, region, book, to_pdf)
    overlays.done()


def _scan_make(
    target: pikepdf.Page, page: ExportPage, layout: PageLayout, book: ExportBook, overlays: _Overlays
) -> bool:
    """A scanned page (docs/exports.md, "Scanned pages"): the scan kept as it is, each
    translated paragraph's OCR lines covered with the paper colour around them and the
    translation set in its place, both in the scan's own upright and level frame. False
    (nothing drawn) when the OCR layout cannot be placed on the page or no page image is
    stored: the page is marked then."""
    media = [float(value) for value in target.mediabox]
    crop = [float(value) for value in target.obj.get("/CropBox", target.mediabox)]
    frame = scan_frame(layout.layout, crop[2] - crop[0], crop[3] - crop[1])
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
    regions, removed = _regions(page, text, lines, {}, next_translated=False)
    stored = source.page_image(page.image_key)
    page_level(target, frame, paper_colour(stored))
    image = upright_image(stored, frame)
    canvas = overlays.page(target, media[2] - media[0], media[3] - media[1])
    canvas.saveState()
    canvas.transform(*frame.matrix((crop[0] - media[0], crop[1] - media[1])))

    def to_frame(x: float, y: float) -> tuple[float, float]:
        return x, frame.height - y

    def in_pixels(line: PageLine) -> tuple[float, float, float, float]:
        return line.x0 * frame.scale, line.top * frame.scale, line.x1 * frame.scale, line.bottom * frame.scale

    page_pixels = [in_pixels(line) for line in lines.values()]
    merged = _merged(regions)
    for region in merged:  # the covers first: a region's text may run over another's lines
        own = [line for line in removed if _inside((line.x0, line.top, line.x1, line.bottom), region.box)]
        if not own:
            continue
        canvas.setFillColorRGB(*border_colour(image, [in_pixels(line) for line in own], page_pixels))
        for line in own:
            pad = cover_pad((line.x0, line.top, line.x1, line.bottom))
            x, y = to_frame(line.x0 - pad, line.bottom + pad)
            canvas.rect(x, y, line.x1 - line.x0 + 2 * pad, line.bottom - line.top + 2 * pad, stroke=0, fill=1)
    all_lines = list(lines.values())
    body = [line for line in removed if not line.mono]
    for region in merged:
        region.box = _widened(region.box, body, all_lines)
        region.free_below = _free_below(region, all_lines, frame.height - BOTTOM_MARGIN)
        _region_draw(canvas, region, book, to_frame)
    canvas.restoreState()
    overlays.done()
    return True


def _inside(box: tuple[float, float, float, float], outer: tuple[float, float, float, float]) -> bool:
    return (
        box[0] >= outer[0] - 0.5 and box[1] >= outer[1] - 0.5 and box[2] <= outer[2] + 0.5 and box[3] <= outer[3] + 0.5
    )


def _regions(
    page: ExportPage,
    text: PageText,
    lines: Mapping[LineRef, PageLine],
    carried: _Carry,
    *,
    next_translated: bool,
) -> tuple[list[_Region], list[PageLine]]:
    """Where the page's translation goes, and the source lines it replaces."""
    regions: list[_Region] = []
    removed: list[PageLine] = []
    for refs, rest in carried.items():
        # The lines this page finishes of the previous page's paragraph: its translation's rest.
        own = [lines[ref] for ref in refs if ref in lines]
        if own:
            regions.append(
                _Region(box=_union(own), size=_size(own), blocks=[Block(kind="paragraph", runs=(Run(rest),))])
            )
            removed += own
    pairs = _aligned(page, text)
    if pairs is None:
        body = [
            lines[ref]
            for paragraph in text.paragraphs
            for ref in paragraph.lines
            if ref.page == page.index and ref in lines
        ]
        if body:
            blocks = [block for block in blocks_of(page.translation) if block.kind != "rule"]
            regions.append(_Region(box=_union(body), size=_size(body), blocks=blocks))
            removed += body
        return regions, removed
    for index, (group, blocks) in enumerate(pairs):
        if not blocks or not _translated((group, blocks)):
            continue  # code, a table, or a paragraph the translation has nothing for: kept
        own = [lines[ref] for paragraph in group for ref in paragraph.lines if ref.page == page.index and ref in lines]
        if not own:
            continue
        paragraph = group[-1]
        last = index == len(pairs) - 1
        if len(group) == 1 and paragraph.carried and last and len(blocks) == 1 and len(own) < len(paragraph.lines):
            block = blocks[0]
            first, rest = _split(block.text, len(own) / len(paragraph.lines))
            if rest and next_translated:  # the next page sets the rest (`_carried_split`)
                blocks = [Block(kind=block.kind, runs=(Run(first),), level=block.level)]
        regions.append(_Region(box=_union(own), size=_size(own), blocks=blocks))
        removed += own
    return regions, removed


def _union(lines: Sequence[PageLine]) -> tuple[float, float, float, float]:
    return (
        min(line.x0 for line in lines),
        min(line.top for line in lines),
        max(line.x1 for line in lines),
        max(line.bottom for line in lines),
    )


def _size(lines: Sequence[PageLine]) -> float:
    sizes = sorted(line.size for line in lines if line.size > 0)
    return sizes[len(sizes) // 2] if sizes else 10.0


def _merged(regions: Sequence[_Region]) -> list[_Region]:
    """The regions, those whose boxes overlap joined into one (their blocks in order): a
    paragraph that ends inside a line the next one starts on (two layout blocks side by
    side on one baseline) shares its box with the next."""
    merged: list[_Region] = []
    for region in regions:
        overlapping = next((other for other in merged if _overlap(other.box, region.box)), None)
        if overlapping is None:
            merged.append(_Region(box=region.box, size=region.size, blocks=list(region.blocks)))
            continue
        overlapping.box = _union_boxes(overlapping.box, region.box)
        overlapping.blocks += region.blocks
        overlapping.size = min(overlapping.size, region.size)
    return merged


def _overlap(first: tuple[float, float, float, float], second: tuple[float, float, float, float]) -> bool:
    return first[0] < second[2] and second[0] < first[2] and first[1] < second[3] - 1 and second[1] < first[3] - 1


def _union_boxes(
    first: tuple[float, float, float, float], second: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    return min(first[0], second[0]), min(first[1], second[1]), max(first[2], second[2]), max(first[3], second[3])


def _widened(
    box: tuple[float, float, float, float], body: Sequence[PageLine], lines: Sequence[PageLine]
) -> tuple[float, float, float, float]:
    """The box out to its column's right edge (the rightmost body line replaced on the page
    that overlaps it across), short of any line beside it to its right (a running header's
    other half): a short line's translation is not squeezed into its width."""
    x0, top, x1, bottom = box
    right = max([x1, *(line.x1 for line in body if line.x0 < x1 and line.x1 > x0)])
    beside = [line.x0 - 2 for line in lines if line.top < bottom and line.bottom > top and line.x0 >= x1 - 0.5]
    return x0, top, max(x1, min([right, *beside])), bottom


def _free_below(region: _Region, lines: Sequence[PageLine], page_bottom: float) -> float:
    """How far the region may grow down: to the next line below it (kept, or another
    region's) that overlaps it across, or to the page's bottom margin."""
    x0, _, x1, bottom = region.box
    below = [line.top for line in lines if line.top >= bottom - 0.5 and line.x0 < x1 and line.x1 > x0]
    limit = min([*below, page_bottom])
    return max(0.0, limit - bottom - 1.0)


def _flowables(region: _Region, size: float, book: ExportBook) -> list[Flowable]:
    style = TextStyle(size=size, leading=size * LEADING, space_after=size * 0.4)
    made: list[Flowable] = []
    for block in region.blocks:
        runs: Sequence[Run] = block.runs
        each = style
        prefix = ""
        if block.kind == "heading":
            each = TextStyle(size=size, leading=size * LEADING, space_after=size * 0.4, bold=True)
        elif block.kind == "list_item":
            prefix = f"{block.number}." if block.ordered and block.number is not None else "\u2022"
        elif block.kind == "code":
            runs = [Run(block.text, code=True)]
        elif block.kind == "table":
            runs = [Run(" ".join(block.text.split()))]
        flowable = text_flowable(runs, each, language=book.language, default_rtl=book.rtl, prefix=prefix)
        if flowable is not None:
            made.append(flowable)
    return made


def _height(flowables: Sequence[Flowable], width: float) -> float:
    total = 0.0
    for number, flowable in enumerate(flowables):
        _, height = flowable.wrap(width, 10_000)
        total += height + (flowable.getSpaceAfter() if number < len(flowables) - 1 else 0)
    return total


def _fitted(region: _Region, book: ExportBook) -> tuple[list[Flowable], float]:
    """The region's flowables at the largest size that fits (docs/exports.md, "Fitting"):
    from the source's size down to SIZE_FLOOR of it in the box; then, in the box grown down
    into the free space below it, from the source's size down to SIZE_MIN; what still does
    not fit is cut at its last whole line. The sizes are SIZE_STEP apart (the height of set
    text grows with its size): each size is set once, the search starts where the height
    at the source's size says the answer lies (set text's height goes about as its size
    squared) and halves from there."""
    x0, top, x1, bottom = region.box
    width = max(x1 - x0, 20.0)
    heights = (bottom - top + 2.0, bottom - top + 2.0 + region.free_below)
    floors = (region.size * SIZE_FLOOR, SIZE_MIN)
    set_at: dict[float, tuple[list[Flowable], float]] = {}

    def at(size: float) -> tuple[list[Flowable], float]:
        if size not in set_at:
            flowables = _flowables(region, size, book)
            set_at[size] = flowables, _height(flowables, width)
        return set_at[size]

    for room, floor in zip(heights, floors, strict=True):
        sizes = [region.size - step * SIZE_STEP for step in range(int((region.size - floor) / SIZE_STEP) + 1)]
        first, height = at(sizes[0])  # most paragraphs fit at the source's size
        if height <= room:
            return first, room
        found = _largest_fitting(sizes, room, height, at)
        if found is not None:
            return found, room
    flowables = _flowables(region, SIZE_MIN, book)
    kept: list[Flowable] = []
    left = heights[1]
    for flowable in flowables:
        _, height = flowable.wrap(width, left)
        if height <= left:
            kept.append(flowable)
            left -= height + flowable.getSpaceAfter()
            continue
        pieces = flowable.split(width, left)
        if pieces:
            kept.append(pieces[0])
        break
    return kept, heights[1]


def _largest_fitting(
    sizes: Sequence[float],
    room: float,
    first_height: float,
    at: Callable[[float], tuple[list[Flowable], float]],
) -> list[Flowable] | None:
    """The flowables at the largest of `sizes[1:]` (largest first) whose height fits `room`,
    or None; `sizes[0]` did not fit, at `first_height`. The first guess is the size at
    which the height would shrink to the room (as the square of the size); then its
    neighbour tells which way to go, and halving finds the rest."""
    low, high = 1, len(sizes) - 1  # sizes[low:high + 1] may hold the answer
    if low > high:
        return None
    guess = sizes[0] * math.sqrt(room / first_height)
    middle = min(high, max(low, math.ceil((sizes[0] - guess) / SIZE_STEP)))
    best: list[Flowable] | None = None
    probes = [middle, middle - 1 if at(sizes[middle])[1] <= room else middle + 1]
    while low <= high:
        middle = probes.pop(0) if probes else (low + high) // 2
        if not low <= middle <= high:
            continue
        flowables, height = at(sizes[middle])
        if height <= room:
            best, high = flowables, middle - 1
        else:
            low = middle + 1
    return best


def _region_draw(
    canvas: Canvas, region: _Region, book: ExportBook, to_pdf: Callable[[float, float], tuple[float, float]]
) -> None:
    flowables, _ = _fitted(region, book)
    x0, top, x1, _ = region.box
    width = max(x1 - x0, 20.0)
    left, y = to_pdf(x0, top)
    for flowable in flowables:
        _, height = flowable.wrap(width, 10_000)
        y -= height
        flowable.drawOn(canvas, left, y)
        y -= flowable.getSpaceAfter()


def _mark(canvas: Canvas, text: str, width: float, height: float) -> None:
    """A small mark in the page's top margin (the page itself untouched)."""
    flowable = text_flowable(
        [Run(_SPACE.sub(" ", text).strip())],
        TextStyle(size=MARK_SIZE, leading=MARK_SIZE * 1.2, italic=True, color=MARK_COLOR, space_after=0),
        language="en",
        default_rtl=False,
    )
    if flowable is None:
        return
    _, used = flowable.wrap(width - 24, 40)
    flowable.drawOn(canvas, 12, height - 4 - used)
