"""Words of a book whose pages have no text layer (scans, screenshots), estimated from the
pages themselves.

A few pages spread across the book (WORD_ESTIMATE_SAMPLE_PAGES, never the cover or the last
page when there are more to choose from) are rendered in grey at about 150 dpi and read
with Tesseract (the program the local engine uses, TESSERACT_COMMAND); their mean count of
words, times the page count, is the estimate. Only tokens with a letter or a digit count,
so scanning noise read as punctuation does not.

The work is bounded: all samples together get WORD_ESTIMATE_BUDGET_SECONDS (each program runs
with what is left as its timeout, one thread each), and the estimate is extrapolated from
the samples read in time. When none was (no Tesseract, no time, a failure), it falls back
to pages x WORDS_PER_PAGE_ESTIMATE, as it always did; a failure here never refuses a file.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from PIL import Image

logger = logging.getLogger(__name__)

# Renders of PDF pages for counting words: enough for Tesseract to read body text.
OCR_DPI = 150
# Larger images (300 dpi scans, retina screenshots) are scaled down to this long side first.
OCR_MAX_SIDE = 2200

# Gives a page as PNG bytes within the seconds it is given, or raises.
PageRender = Callable[[int, float], bytes]


@dataclass(frozen=True)
class WordEstimate:
    words: int
    sampled_pages: int  # pages read with Tesseract; 0: the words-per-page constant was used


def sample_indices(*, page_count: int, samples: int) -> list[int]:
    """0-based pages to sample: evenly spread, the middle of each of `samples` equal parts
    of the book (so neither the cover nor the last page when the book is longer)."""
    if page_count <= samples:
        return list(range(page_count))
    return sorted({int((part + 0.5) * page_count / samples) for part in range(samples)})


def words_count(text: str) -> int:
    """Whitespace-separated tokens holding at least one letter or digit."""
    return sum(1 for token in text.split() if any(character.isalnum() for character in token))


def image_words_estimate(*, page_count: int, render: PageRender) -> WordEstimate:
    """The book's words from a few of its pages read with Tesseract, within the time budget;
    pages x WORDS_PER_PAGE_ESTIMATE when none could be read. Never raises for a bad page."""
    fallback = WordEstimate(words=page_count * settings.WORDS_PER_PAGE_ESTIMATE, sampled_pages=0)
    tesseract = shutil.which(settings.TESSERACT_COMMAND)
    if tesseract is None or page_count < 1 or settings.WORD_ESTIMATE_SAMPLE_PAGES < 1:
        return fallback
    deadline = time.monotonic() + settings.WORD_ESTIMATE_BUDGET_SECONDS
    counts: list[int] = []
    for index in sample_indices(page_count=page_count, samples=settings.WORD_ESTIMATE_SAMPLE_PAGES):
        try:
            image = render(index, _left(deadline))
            counts.append(words_count(_tesseract(tesseract, image, timeout=_left(deadline))))
        except _OutOfTime:
            break
        except Exception as error:  # a page we cannot render or read: the others still count
            logger.info("word estimate: page %s not read: %r", index + 1, error)
    if not counts:
        return fallback
    return WordEstimate(words=round(sum(counts) / len(counts) * page_count), sampled_pages=len(counts))


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
            [tesseract, "stdin", "stdout", "--psm", "3"],
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


def pdf_page_render(target: str) -> PageRender:
    """Renders page `index` of a PDF (an absolute path) in grey at OCR_DPI."""
    tool = shutil.which("pdftoppm")

    def render(index: int, timeout: float) -> bytes:
        if tool is None:
            raise RuntimeError("pdftoppm (poppler-utils) is not installed")
        page = str(index + 1)
        try:
            completed = subprocess.run(  # noqa: S603 - a fixed program and arguments, no shell
                [tool, "-f", page, "-l", page, "-r", str(OCR_DPI), "-gray", "-png", target],
                capture_output=True,
                timeout=min(timeout, settings.PDF_TOOL_TIMEOUT_SECONDS),
                check=True,
            )
        except subprocess.TimeoutExpired:
            raise _OutOfTime from None
        return completed.stdout

    return render


def image_png(source: Image.Image) -> bytes:
    """A page image in grey, scaled down to OCR_MAX_SIDE, as PNG bytes for Tesseract."""
    image = source.convert("L")
    longest = max(image.size)
    if longest > OCR_MAX_SIDE:
        scale = OCR_MAX_SIDE / longest
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
