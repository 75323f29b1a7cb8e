"""Words of a book whose pages have no text layer (scans, screenshots), estimated from the
pages themselves, at no charge and without reading the whole book.

A ratio estimator. Two measures of the pages:
- ink, cheap, on many pages: every page when the book has at most WORD_ESTIMATE_INK_PAGES,
  else that many spread evenly (plus the sample pages below). A page is scaled down to
  INK_SIDE pixels on its long side in grey (a PDF page rendered so by pdftoppm, a JPEG
  decoded at a reduced scale with Image.draft); a pixel is ink when it differs from the
  page's background (its commonest grey) by more than INK_CONTRAST, and the page's ink is
  the number of places where a row of pixels enters ink: about the letters' strokes.
  Measured on Debian's PDF manuals, it follows a page's words far more closely than dark
  pixels or text lines do (see docs/intake.md);
- words, dear, on a few: WORD_ESTIMATE_SAMPLE_PAGES pages spread across the book (never the
  cover or the last page when there are more to choose from), rendered in grey at about
  150 dpi and read with Tesseract (TESSERACT_COMMAND). Only tokens with a letter or a
  digit count, so scanning noise read as punctuation does not.
The estimate is (words of the sample pages / their ink) x the mean ink of the measured
pages x the page count, so a dense contents page the samples miss still counts.

The work is bounded: all of it gets WORD_ESTIMATE_BUDGET_SECONDS, of which the ink may take
INK_BUDGET_SHARE (each program runs with what is left as its timeout, Tesseract with one
thread); what was measured in time counts. Without sample words (no Tesseract, no time) the
ink alone gives the words at WORDS_PER_INK; with no ink either, pages x
WORDS_PER_PAGE_ESTIMATE, as it always did. A failure here never refuses a file.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from PIL import Image, ImageChops

from core.images import image_errors
from projects.intake.poppler import PopplerRefused, PopplerTimedOut, pdftoppm_pgm, pdftoppm_pgm_files, pgm_files

logger = logging.getLogger(__name__)

# Renders of PDF pages for counting words: enough for Tesseract to read body text.
OCR_DPI = 150
# Larger images (300 dpi scans, retina screenshots) are scaled down to this long side first.
OCR_MAX_SIDE = 2200
# Long side of the grey page the ink is measured on (about 70 dpi for a letter page).
INK_SIDE = 800
# How far from the background's grey a pixel must be to be ink (out of 255): above JPEG and
# scanner noise, below the grey of thin strokes scaled down.
INK_CONTRAST = 60
# Vertical strokes this tall (in rows of the INK_SIDE page) are lines, not letters.
INK_LINE_ROWS = 32
# Words per unit of ink when no page could be read: measured 0.021-0.028 on Debian's manuals
# (10-point letter pages; clean, scanned, screenshots) and 0.0205 on 12-point Helvetica, so
# within about a fifth on such pages (see docs/intake.md).
WORDS_PER_INK = 0.023
# The part of WORD_ESTIMATE_BUDGET_SECONDS the ink may take; Tesseract has the rest.
INK_BUDGET_SHARE = 0.4

# Gives a page as image bytes (PGM) for Tesseract within the seconds it is given, or raises.
PageRender = Callable[[int, float], bytes]
# Gives the small grey images (INK_SIDE) of some pages, with their index, within the seconds
# it is given; pages it cannot render are left out, and it stops (_OutOfTime) when time is up.
InkPages = Generator[tuple[int, Image.Image], None, None]
InkRender = Callable[[Sequence[int], float], InkPages]
# Opens page `index` of an image book (the caller closes it); its size was checked by
# source_inspect.
PageOpen = Callable[[int], Image.Image]


@dataclass(frozen=True)
class PageSource:
    render: PageRender
    ink: InkRender


@dataclass(frozen=True)
class WordEstimate:
    words: int
    sampled_pages: int  # pages read with Tesseract; 0: a constant was used (words per ink or per page)
    ink_pages: int = 0  # pages whose ink was measured


def sample_indices(*, page_count: int, samples: int) -> list[int]:
    """0-based pages to sample: evenly spread, the middle of each of `samples` equal parts
    of the book (so neither the cover nor the last page when the book is longer)."""
    if samples < 1:
        return []
    if page_count <= samples:
        return list(range(page_count))
    return sorted({int((part + 0.5) * page_count / samples) for part in range(samples)})


def words_count(text: str) -> int:
    """Whitespace-separated tokens holding at least one letter or digit."""
    return sum(1 for token in text.split() if any(character.isalnum() for character in token))


def page_ink(image: Image.Image) -> int:
    """Where a row of pixels enters ink, counted over a small grey page (see the module)."""
    histogram = image.histogram()
    background = max(range(256), key=histogram.__getitem__)
    ink = image.point([255 if abs(level - background) > INK_CONTRAST else 0 for level in range(256)])
    ink = ImageChops.subtract(ink, _vertical_lines(ink))
    entries = ImageChops.subtract(ink, ImageChops.offset(ink, 1, 0))
    return entries.histogram()[255]


def _vertical_lines(ink: Image.Image) -> Image.Image:
    """The ink of vertical strokes taller than INK_LINE_ROWS: page edges, scanner shadows,
    table borders, which would otherwise count as a letter's stroke on every row."""
    lines, rows = ink, 1
    while rows < INK_LINE_ROWS:  # erosion: ink on `rows` rows below and including a pixel
        lines = ImageChops.darker(lines, ImageChops.offset(lines, 0, -rows))
        rows *= 2
    grown = 1
    while grown < rows:  # dilation back over the same rows
        lines = ImageChops.lighter(lines, ImageChops.offset(lines, 0, grown))
        grown *= 2
    return lines


def image_words_estimate(*, page_count: int, pages: PageSource) -> WordEstimate:
    """The book's words from the ink of many of its pages and the words Tesseract reads on a
    few, within the time budget (see the module). Never raises for a bad page."""
    if page_count < 1:
        return WordEstimate(words=0, sampled_pages=0)
    started = time.monotonic()
    budget = settings.WORD_ESTIMATE_BUDGET_SECONDS
    read = sample_indices(page_count=page_count, samples=settings.WORD_ESTIMATE_SAMPLE_PAGES)
    spread = sample_indices(page_count=page_count, samples=settings.WORD_ESTIMATE_INK_PAGES)
    if len(spread) == page_count:  # every page, in order (one pdftoppm call for a PDF)
        measured = spread
    else:
        # The sample pages first (their ink makes the ratio), then the others in an order whose
        # every prefix is spread over the book, so running out of time leaves a fair sample.
        measured = read + [index for index in _spread_order(spread) if index not in read]
    inks = _inks(pages.ink, measured, deadline=started + budget * INK_BUDGET_SHARE)
    words = _words(pages.render, read, deadline=started + budget)
    return _combined(page_count=page_count, inks=inks, words=words)


def _combined(*, page_count: int, inks: dict[int, int], words: dict[int, int]) -> WordEstimate:
    mean_ink = sum(inks.values()) / len(inks) if inks else 0.0
    paired = [index for index in words if index in inks]
    paired_ink = sum(inks[index] for index in paired)
    if paired_ink > 0:
        ratio = sum(words[index] for index in paired) / paired_ink
        return WordEstimate(words=round(ratio * mean_ink * page_count), sampled_pages=len(words), ink_pages=len(inks))
    if words:  # no ink to weigh them by: their mean
        return WordEstimate(
            words=round(sum(words.values()) / len(words) * page_count), sampled_pages=len(words), ink_pages=len(inks)
        )
    if mean_ink > 0:
        return WordEstimate(words=round(WORDS_PER_INK * mean_ink * page_count), sampled_pages=0, ink_pages=len(inks))
    return WordEstimate(words=page_count * settings.WORDS_PER_PAGE_ESTIMATE, sampled_pages=0)


def _inks(ink: InkRender, indices: list[int], *, deadline: float) -> dict[int, int]:
    inks: dict[int, int] = {}
    if not indices:
        return inks
    try:
        with contextlib.closing(ink(indices, _left(deadline))) as images:
            for index, image in images:
                with image:
                    inks[index] = page_ink(image)
                _left(deadline)
    except _OutOfTime:
        pass
    except Exception as error:  # the ink is a refinement: without it the samples still count
        logger.info("word estimate: ink not measured: %r", error)
    return inks


def _words(render: PageRender, indices: list[int], *, deadline: float) -> dict[int, int]:
    words: dict[int, int] = {}
    tesseract = shutil.which(settings.TESSERACT_COMMAND)
    if tesseract is None:
        return words
    for index in indices:
        try:
            image = render(index, _left(deadline))
            words[index] = words_count(_tesseract(tesseract, image, timeout=_left(deadline)))
        except _OutOfTime:
            break
        except Exception as error:  # a page we cannot render or read: the others still count
            logger.info("word estimate: page %s not read: %r", index + 1, error)
    return words


def _spread_order(indices: list[int]) -> list[int]:
    """`indices` (sorted) reordered by the bit-reversed position (0, 1/2, 1/4, 3/4, ...)."""

    def reversed_bits(position: int) -> float:
        value, weight = 0.0, 0.5
        while position:
            value += weight * (position & 1)
            position >>= 1
            weight /= 2
        return value

    return [indices[position] for position in sorted(range(len(indices)), key=reversed_bits)]


class _OutOfTime(Exception):
    pass


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _OutOfTime
    return left


def _tesseract(tesseract: str, image: bytes, *, timeout: float) -> str:
    try:
        completed = subprocess.run(  # noqa: S603 - a fixed program and arguments, no shell
            # Sparse text (11): all the words it finds, in no order. The layout analysis of
            # the default (3) drops much of a two-column index (a third of its words, measured).
            [tesseract, "stdin", "stdout", "--psm", "11"],
            input=image,
            capture_output=True,
            timeout=timeout,
            check=True,
            # One thread: OpenMP's spinning threads make Tesseract several times slower on a
            # busy machine, and the budget is per request.
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )
    except subprocess.TimeoutExpired:
        raise _OutOfTime from None
    return completed.stdout.decode("utf-8", errors="replace")


# --- PDF pages --------------------------------------------------------------------------------


def pdf_pages(path: Path) -> PageSource:
    """The pages of a PDF, rendered with pdftoppm."""

    def render(index: int, timeout: float) -> bytes:
        try:
            # PGM, not PNG: compressing a noisy scan costs seconds, Tesseract reads either. A
            # page over IMAGE_MAX_PIXELS (one byte a pixel, and a short header) is not read.
            return pdftoppm_pgm(
                path, page=index + 1, dpi=OCR_DPI, timeout=timeout, output_limit=settings.IMAGE_MAX_PIXELS + 64
            )
        except PopplerTimedOut:
            raise _OutOfTime from None

    def ink(indices: Sequence[int], timeout: float) -> InkPages:
        deadline = time.monotonic() + timeout
        with tempfile.TemporaryDirectory(prefix="ink-") as folder:
            # One call for each run of following pages (the whole book when every page is
            # measured); its pages come out as prefix-<page number>.pgm.
            for number, (first, last) in enumerate(_runs(indices)):
                prefix = Path(folder) / f"run{number}"
                try:
                    pdftoppm_pgm_files(
                        path, prefix, first=first + 1, last=last + 1, scale_to=INK_SIDE, timeout=_left(deadline)
                    )
                except PopplerTimedOut:
                    # The pages written in time count; the last may be incomplete.
                    yield from _pgm_pages(prefix, complete=False)
                    raise _OutOfTime from None
                except PopplerRefused as error:
                    logger.info("word estimate: pages %s-%s not rendered: %r", first + 1, last + 1, error)
                    continue
                yield from _pgm_pages(prefix, complete=True)

    return PageSource(render=render, ink=ink)


def _runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Runs of consecutive indices, in the given order: [0, 1, 2, 7] -> [(0, 2), (7, 7)]."""
    runs: list[tuple[int, int]] = []
    for index in indices:
        if runs and index == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def _pgm_pages(prefix: Path, *, complete: bool) -> InkPages:
    written = pgm_files(prefix)
    for number, path in written if complete else written[:-1]:
        image = Image.open(path)
        image.load()
        yield number - 1, image


# --- Image pages ------------------------------------------------------------------------------


def image_pages(open_page: PageOpen) -> PageSource:
    """The pages of an image book (an image, a zip or a folder of images)."""

    def render(index: int, timeout: float) -> bytes:
        with open_page(index) as image, image_errors():
            return ocr_pgm(image)

    def ink(indices: Sequence[int], timeout: float) -> InkPages:
        for index in indices:
            try:
                with open_page(index) as image, image_errors():
                    small = ink_image(image)
            except Exception as error:  # a page we cannot decode: the others still count
                logger.info("word estimate: page %s not measured: %r", index + 1, error)
                continue
            yield index, small

    return PageSource(render=render, ink=ink)


def ink_image(source: Image.Image) -> Image.Image:
    """A page image in grey with INK_SIDE pixels on its long side at most, decoded cheaply
    (a JPEG at a reduced scale)."""
    scale = min(1.0, INK_SIDE / max(source.size))
    size = (max(1, round(source.width * scale)), max(1, round(source.height * scale)))
    if source.format == "JPEG":
        source.draft("L", size)
    image = source.convert("L")
    if max(image.size) > INK_SIDE:
        image.thumbnail((INK_SIDE, INK_SIDE), Image.Resampling.BOX)
    return image


def ocr_pgm(source: Image.Image) -> bytes:
    """A page image in grey, scaled down to OCR_MAX_SIDE, as PGM bytes for Tesseract."""
    image = source.convert("L")
    longest = max(image.size)
    if longest > OCR_MAX_SIDE:
        scale = OCR_MAX_SIDE / longest
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    buffer = io.BytesIO()
    image.save(buffer, format="PPM")
    return buffer.getvalue()
