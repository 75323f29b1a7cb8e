"""A PDF page's layout from its text layer: blocks, lines and font runs with positions.

The format is docs/book-structure.md's (`Page.layout`). Two poppler tools read each chunk of
pages, the way the renderer reads the text layer:

- `pdftotext -bbox-layout` gives the structure: blocks of lines of words, in reading order
  (poppler's layout analysis, the one `pdftotext` itself uses), with their boxes;
- `pdftohtml -xml` gives the fonts: runs of text of one font with their boxes, and each
  font's name and size.

Each word takes the font of the run it lies in; a word two runs share ("bzip2," where the
comma is not in the monospace font) is cut where the second run starts. A line's words
of one font make a span. Text set past the page's right edge (a long listing line), which
pdftotext drops, is put back at the end of its line from pdftohtml's run, which keeps it.
See "Why this reader" in docs/book-structure.md for the choice and its measured cost.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from projects.errors import FileCorrupt
from projects.intake.poppler import pdftohtml_xml, pdftotext_bbox_layout, poppler_problems

LAYOUT_VERSION = 1
# pdftohtml writes whole pixels at its zoom; 3 (its largest) puts a run's edges within a
# third of a point and its size within a tenth.
_FONTS_ZOOM = 3
# A run shares a word only when it covers more of it than this (points): neighbours touch.
_OVERLAP_MIN = 0.3
# Words closer than this part of the line's font size are one word that pdftotext cut in
# two at a font change: poppler's own rule for a space between words (maxCharSpacing).
_WORD_GAP = 0.03
# A run that ends this far (points) past the page's right edge holds text pdftotext dropped.
_EDGE_SLACK = 0.5
# Reading order: a gutter is at least this wide (points), a column at least this part of
# the page wide, and a band with a block this part of its region wide is read on its own.
_GUTTER_MIN = 6.0
_COLUMN_MIN = 0.2
_WIDE_BAND = 0.6

_BBOX_ELEMENT = re.compile(
    r'<(page|block|line|word) (?:width="([^"]*)" height="([^"]*)"'
    r'|xMin="([^"]*)" yMin="([^"]*)" xMax="([^"]*)" yMax="([^"]*)")>(?:([^<]*)</word>)?'
)
_FONTS_ELEMENT = re.compile(
    r'<page number="(\d+)"[^>]*? height="([\d.]+)" width="([\d.]+)"'
    r'|<fontspec id="(\d+)" size="(-?[\d.]+)" family="([^"]*)"'
    r'|<text top="(-?\d+)" left="(-?\d+)" width="(-?\d+)" height="(-?\d+)" font="(\d+)">(.*?)</text>',
    re.DOTALL,
)
_TAG = re.compile(r"<[^>]*>")
_SUBSET_PREFIX = re.compile(r"^[A-Z]{6}\+")
_BOLD = re.compile(r"bold|black|heavy|semibold|demi|-medi|ultra|cmbx|cmb\d|sfbx|cmssbx", re.IGNORECASE)
_ITALIC = re.compile(
    r"italic|ital|oblique|obli|slant|cmti|cmsl|cmmi|cmbxti|cmbxsl|sfti|sfsl|sfit|[-,](bold)?it$", re.IGNORECASE
)
_MONO = re.compile(
    r"courier|mono|nimbusmon|typewriter|cmtt|cmsltt|cmitt|sftt|sfit|lmtt|code|consol|menlo|fixed|inconsolata"
    r"|cousine|cursor|lettergothic",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Font:
    """A run's font as the layout stores it."""

    name: str
    size: float
    bold: bool
    italic: bool
    mono: bool


@dataclass(frozen=True)
class _Run:
    """A run of one font from pdftohtml, in points."""

    x0: float
    y0: float
    x1: float
    y1: float
    font: Font
    text: str

    @property
    def middle(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclass
class _Word:
    box: tuple[float, float, float, float]
    text: str


@dataclass
class _Line:
    box: tuple[float, float, float, float]
    words: list[_Word] = field(default_factory=list)


@dataclass
class _Block:
    box: tuple[float, float, float, float]
    lines: list[_Line] = field(default_factory=list)


@dataclass
class _Page:
    width: float
    height: float
    blocks: list[_Block] = field(default_factory=list)


def font_read(name: str, size: float) -> Font:
    """A font from its PDF name: the subset prefix dropped, bold/italic/mono read from the name.

    Poppler's tools do not report a font's fixed-pitch flag, so monospace is told by name
    (Courier, *Mono*, Typewriter, TeX's CMTT and its kin, Consolas, Menlo, ...).
    """
    base = _SUBSET_PREFIX.sub("", name)
    return Font(
        name=base,
        size=round(size, 1),
        bold=bool(_BOLD.search(base)),
        italic=bool(_ITALIC.search(base)),
        mono=bool(_MONO.search(base)),
    )


def pdf_layouts(path: Path, *, first: int, last: int) -> list[dict[str, Any]]:
    """The layouts of pages first..last (1-based) of a checked PDF, one per page in order.

    A page without a text layer has `{}`. Raises ServiceError (file_corrupt, pdf_encrypted)
    when poppler cannot read the pages or their count does not match.
    """
    with poppler_problems("pdftotext -bbox-layout"):
        structure = pdftotext_bbox_layout(path, first=first, last=last)
    with poppler_problems("pdftohtml"):
        fonts = pdftohtml_xml(path, first=first, last=last, zoom=_FONTS_ZOOM)
    parsed = _structure_parse(structure)
    expected = last - first + 1
    if len(parsed) != expected:
        raise FileCorrupt(
            f"The layout of pages {first}-{last} does not match the page count ({len(parsed)} of {expected}).",
        )
    runs, shown = _runs_parse(fonts)
    for number, page in enumerate(parsed, start=first):
        # pdftotext places a turned page's (/Rotate 90 or 270) words as the page is shown but
        # gives the unturned page's size; pdftohtml gives the shown size (in whole pixels).
        across, down = shown.get(number, (page.width, page.height))
        if abs(across - page.width) > 1 and abs(across - page.height) <= 1 and abs(down - page.width) <= 1:
            page.width, page.height = page.height, page.width
    return [_page_layout(page, runs.get(number, [])) for number, page in enumerate(parsed, start=first)]


# --- Reading the tools' output --------------------------------------------------------------


def _structure_parse(output: str) -> list[_Page]:
    """pdftotext -bbox-layout's pages, blocks, lines and words (flows are only groups of blocks)."""
    pages: list[_Page] = []
    for match in _BBOX_ELEMENT.finditer(output):
        tag = match.group(1)
        if tag == "page":
            pages.append(_Page(width=float(match.group(2)), height=float(match.group(3))))
            continue
        if not pages:
            continue
        box = (float(match.group(4)), float(match.group(5)), float(match.group(6)), float(match.group(7)))
        page = pages[-1]
        if tag == "block":
            page.blocks.append(_Block(box))
        elif tag == "line" and page.blocks:
            page.blocks[-1].lines.append(_Line(box))
        elif tag == "word" and page.blocks and page.blocks[-1].lines:
            text = match.group(8) or ""
            page.blocks[-1].lines[-1].words.append(_Word(box, html.unescape(text) if "&" in text else text))
    return pages


def _runs_parse(output: str) -> tuple[dict[int, list[_Run]], dict[int, tuple[float, float]]]:
    """pdftohtml -xml's runs by page number, in points, each page's sorted by their middles,
    and each page's size as shown (width, height: a turned page's turned).

    Font ids are numbered across the whole output; a page lists only the fonts it adds.
    """
    fonts: dict[str, Font] = {}
    runs: dict[int, list[_Run]] = {}
    sizes: dict[int, tuple[float, float]] = {}
    page: list[_Run] = []
    scale = float(_FONTS_ZOOM)
    for match in _FONTS_ELEMENT.finditer(output):
        if match.group(1) is not None:
            page = runs.setdefault(int(match.group(1)), [])
            sizes[int(match.group(1))] = (float(match.group(3)) / scale, float(match.group(2)) / scale)
            continue
        if match.group(4) is not None:
            fonts[match.group(4)] = font_read(html.unescape(match.group(6)), float(match.group(5)) / scale)
            continue
        font = fonts.get(match.group(11))
        if font is None:
            continue
        top, left, width, height = (int(match.group(index)) / scale for index in range(7, 11))
        text = html.unescape(_TAG.sub("", match.group(12)))
        page.append(_Run(left, top, left + width, top + height, font, text))
    for page_runs in runs.values():
        page_runs.sort(key=lambda run: run.middle)
    return runs, sizes


# --- Merging ---------------------------------------------------------------------------------


def _page_layout(page: _Page, runs: list[_Run]) -> dict[str, Any]:
    if not any(line.words for block in page.blocks for line in block.lines):
        return {}
    _overflow_restore(page, runs)
    middles = [run.middle for run in runs]
    blocks = []
    for block in _reading_order(page.blocks, page.width):
        lines = []
        for line in block.lines:
            if not line.words:
                continue
            _, y0, _, y1 = line.box
            nearby = runs[bisect_left(middles, y0 - 1) : bisect_right(middles, y1 + 1)]
            spans = _line_spans(line, nearby, _page_font(runs, middles, (y0 + y1) / 2))
            lines.append({"bbox": _box(line.box, page), "spans": spans})
        if lines:
            blocks.append({"bbox": _box(block.box, page), "lines": lines})
    return {
        "version": LAYOUT_VERSION,
        "source": "pdf",
        "width": round(page.width, 1),
        "height": round(page.height, 1),
        "blocks": blocks,
    }


def _overflow_restore(page: _Page, runs: list[_Run]) -> None:
    """Put back the text set past the page's right edge at the end of its line.

    pdftotext keeps only the characters that start inside the page (a long line of a
    listing loses its end: "/lib/ld-linu" for "/lib/ld-linux.so.2"); pdftohtml keeps the
    whole run. The run's text after the line's last word is that word's clipped end (no
    space before it) and the words after it, placed on the run's character grid.
    """
    for run in sorted(runs, key=lambda run: run.x0):
        if run.x1 <= page.width + _EDGE_SLACK:
            continue
        line = _line_at(page, run)
        if line is None:
            continue
        end = _run_covered_end(line, run)
        if end is None:
            continue
        step = (run.x1 - run.x0) / max(len(run.text), 1)
        last = line.words[-1]
        # A run of its own past the edge continues the last word when it touches it ("gz" ",").
        joined = not run.text[end - 1].isspace() if end > 0 else run.x0 - last.box[2] < _WORD_GAP * run.font.size
        for match in re.finditer(r"\S+", run.text[end:]):
            start, stop = end + match.start(), end + match.end()
            if start == end and joined:
                last.text += match.group()
                last.box = (last.box[0], last.box[1], run.x0 + stop * step, last.box[3])
                continue
            box = (run.x0 + start * step, last.box[1], run.x0 + stop * step, last.box[3])
            last = _Word(box, match.group())
            line.words.append(last)
        line.box = (line.box[0], line.box[1], max(line.box[2], last.box[2]), line.box[3])


def _line_at(page: _Page, run: _Run) -> _Line | None:
    """The line a run lies on: its middle within the line's height, the line nearest its end."""
    lines = [
        line
        for block in page.blocks
        for line in block.lines
        if line.words and line.box[1] <= run.middle <= line.box[3] and line.box[0] < run.x1
    ]
    return max(lines, key=lambda line: line.box[2], default=None)


def _run_covered_end(line: _Line, run: _Run) -> int | None:
    """Where in the run's text the line's words end: just after the line's last word, found
    nearest to where its box puts it (a word may start in a run before this one); 0 when the
    run starts after the line's last word; None when the words cannot be found in the run."""
    last = line.words[-1]
    if last.box[2] <= run.x0 + _OVERLAP_MIN:
        return 0
    estimate = len(run.text) * (last.box[2] - run.x0) / max(run.x1 - run.x0, 0.1)
    ends = [
        end
        for end in range(1, len(run.text) + 1)
        if run.text[:end].endswith(last.text) or _word_tail(run.text[:end], last.text)
    ]
    if not ends:  # the word ends where the run starts, to the rounding of pdftohtml's pixels
        return 0 if last.box[2] < (run.x0 + run.x1) / 2 else None
    return min(ends, key=lambda end: abs(end - estimate))


def _word_tail(head: str, word: str) -> bool:
    """Whether the run's text up to here is the end of the word (the word began in a run before)."""
    piece = head.lstrip()
    return bool(piece) and not any(character.isspace() for character in piece) and word.endswith(piece)


def _reading_order(blocks: list[_Block], page_width: float) -> list[_Block]:
    """The blocks in reading order: columns whole, left to right (a recursive XY cut).

    Poppler reads a two-column index row by row where headings of both columns stand at the
    same height; here a region is cut first at a gutter no block crosses when both sides are
    columns (each at least COLUMN_MIN of the page wide), else into bands at the horizontal
    gaps (narrow bands in a row stay together, so aligned gaps inside columns do not cut
    them); what cannot be cut keeps poppler's order.
    """
    order = {id(block): position for position, block in enumerate(blocks)}

    def arrange(region: list[_Block]) -> list[_Block]:
        if len(region) < 2:
            return region
        columns = _columns_split(region, page_width)
        if columns is None:
            columns = _bands_split(region)
        if columns is None:
            return sorted(region, key=lambda block: order[id(block)])
        return [block for part in columns for block in arrange(part)]

    return arrange(list(blocks))


def _columns_split(region: list[_Block], page_width: float) -> list[list[_Block]] | None:
    """Left and right of the widest gutter no block crosses, when both sides are columns."""
    edges = sorted(region, key=lambda block: block.box[0])
    reach = edges[0].box[2]
    best: tuple[float, float] | None = None
    for block in edges[1:]:
        gap = block.box[0] - reach
        if gap >= _GUTTER_MIN and (best is None or gap > best[1]):
            best = (reach + gap / 2, gap)
        reach = max(reach, block.box[2])
    if best is None:
        return None
    left = [block for block in region if block.box[2] <= best[0]]
    right = [block for block in region if block.box[0] >= best[0]]
    for side in (left, right):
        if max(b.box[2] for b in side) - min(b.box[0] for b in side) < _COLUMN_MIN * page_width:
            return None
    return [left, right]


def _bands_split(region: list[_Block]) -> list[list[_Block]] | None:
    """Horizontal bands between gaps, top to bottom; consecutive bands without a block as wide
    as most of the region stay one band (they may be two columns with aligned gaps)."""
    x0 = min(block.box[0] for block in region)
    x1 = max(block.box[2] for block in region)
    bands: list[list[_Block]] = []
    bottom = float("-inf")
    for block in sorted(region, key=lambda block: block.box[1]):
        if not bands or block.box[1] > bottom:
            bands.append([])
        bands[-1].append(block)
        bottom = max(bottom, block.box[3])
    grouped: list[list[_Block]] = []
    previous_wide = True
    for band in bands:
        wide = any(block.box[2] - block.box[0] >= _WIDE_BAND * (x1 - x0) for block in band)
        if grouped and not wide and not previous_wide:
            grouped[-1].extend(band)
        else:
            grouped.append(list(band))
        previous_wide = wide
    return grouped if len(grouped) > 1 else None


def _page_font(runs: list[_Run], middles: list[float], y: float) -> Font | None:
    """The font of the run nearest to height `y`: for a line no run of its own lies on."""
    if not runs:
        return None
    index = bisect_left(middles, y)
    nearest = min(
        (runs[position] for position in (index - 1, index) if 0 <= position < len(runs)),
        key=lambda run: abs(run.middle - y),
    )
    return nearest.font


def _line_spans(line: _Line, runs: list[_Run], page_font: Font | None) -> list[dict[str, Any]]:
    """The line's runs of one font; a span that continues the word before it is `glued`.
    Words of a monospace span are as many spaces apart as their gap holds characters (a
    listing's aligned columns), other words one space."""
    spans: list[dict[str, Any]] = []
    current: Font | None = None
    previous: Font | None = None
    edge = float("-inf")
    glue_below = 0.0
    for word in line.words:
        pieces = list(_word_pieces(word, runs))
        if not pieces:
            fallback = previous or _nearest_font(word, runs) or page_font or _unknown_font(word)
            pieces = [(word.text, fallback)]
        # pdftotext cuts a word where the font changes ("(FILE*" "s)"): no gap, no space. Its
        # text has a space between two words when the gap is 3% of the line's first font size.
        glue_below = glue_below or _WORD_GAP * pieces[0][1].size
        touching = word.box[0] - edge < glue_below
        spaces = _spaces(word, word.box[0] - edge)
        edge = word.box[2]
        for position, (text, font) in enumerate(pieces):
            glued = position > 0 or touching
            if spans and font == current:
                spans[-1]["text"] += text if glued else (spaces if font.mono else " ") + text
                continue
            span: dict[str, Any] = {
                "text": text,
                "font": font.name,
                "size": font.size,
                "bold": font.bold,
                "italic": font.italic,
                "mono": font.mono,
            }
            if glued:
                span["glued"] = True
            spans.append(span)
            current = font
        previous = pieces[-1][1]
    return spans


def _spaces(word: _Word, gap: float) -> str:
    """The spaces a gap before a word holds, in the word's own character width (one at least)."""
    width = (word.box[2] - word.box[0]) / max(len(word.text), 1)
    return " " * max(1, round(gap / width)) if width > 0 and gap < float("inf") else " "


def _word_pieces(word: _Word, runs: list[_Run]) -> Iterator[tuple[str, Font]]:
    """The word cut where a run of another font starts inside it; nothing when no run covers it."""
    x0, _, x1, _ = word.box
    covering = sorted(
        (run for run in runs if min(run.x1, x1) - max(run.x0, x0) > _OVERLAP_MIN),
        key=lambda run: run.x0,
    )
    if not covering:
        return
    text = word.text
    start = 0
    font = covering[0].font
    for run in covering[1:]:
        if run.font == font or run.x0 <= x0 + _OVERLAP_MIN:
            continue
        cut = _cut_find(text, start, estimate=round(len(text) * (run.x0 - x0) / max(x1 - x0, 0.1)), run=run)
        if cut is None:
            continue
        yield text[start:cut], font
        start, font = cut, run.font
    yield text[start:], font


def _cut_find(text: str, start: int, *, estimate: int, run: _Run) -> int | None:
    """Where in `text` (after `start`) the run begins: the position nearest to `estimate` whose
    rest agrees with the run's own text, else the estimate itself; None for no room."""
    if len(text) - start < 2:
        return None
    positions = sorted(range(start + 1, len(text)), key=lambda position: abs(position - estimate))
    head = run.text.lstrip()
    for position in positions:
        rest = text[position:]
        if head and (rest.startswith(head) or head.startswith(rest)):
            return position
    return positions[0]


def _nearest_font(word: _Word, runs: list[_Run]) -> Font | None:
    if not runs:
        return None
    middle = (word.box[0] + word.box[2]) / 2
    return min(runs, key=lambda run: abs((run.x0 + run.x1) / 2 - middle)).font


def _unknown_font(word: _Word) -> Font:
    return Font(name="", size=round(word.box[3] - word.box[1], 1), bold=False, italic=False, mono=False)


def _box(box: tuple[float, float, float, float], page: _Page) -> list[float]:
    """A box rounded to 0.1 point and kept inside the page."""
    x0, y0, x1, y1 = box
    return [
        round(min(max(x0, 0.0), page.width), 1),
        round(min(max(y0, 0.0), page.height), 1),
        round(min(max(x1, 0.0), page.width), 1),
        round(min(max(y1, 0.0), page.height), 1),
    ]
