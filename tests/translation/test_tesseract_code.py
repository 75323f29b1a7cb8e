"""Code on a scan is code (translation/engines/tesseract.py, docs/book-structure.md "Code on a
scan"): a listing of the bzip2 manual, scanned, is read monospace from its words' ink, set
as a fenced code block in the page's Markdown and marked `mono` in its layout, so the book
structure makes it code; a scanned page of prose has no line marked."""

from __future__ import annotations

import re
import shutil

import pytest

from bookstructure.book import pages_structure
from tests.support.corpus import debian_pdf, scan_pages
from tests.translation.test_tesseract import DPI, _read
from translation.engines.tesseract import OcrReading

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tesseract") is None, reason="apt-get install tesseract-ocr tesseract-ocr-eng"),
]

LISTING_PAGE = 24  # the bzip2 manual's page 21: return values in a listing, a prose paragraph under it


def _scanned_page(book: str, page: int) -> OcrReading:
    try:
        pdf = debian_pdf(book)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    (scan,) = scan_pages(pdf, page, page, dpi=DPI)  # turned 1.9 degrees, blurred, noisy, JPEG 60
    return _read(scan)


@pytest.fixture(scope="module")
def listing() -> OcrReading:
    return _scanned_page("bzip2", LISTING_PAGE)


def _lines(reading: OcrReading) -> list[tuple[str, bool]]:
    """Each layout line's text and whether it is marked monospace."""
    return [
        (" ".join(span["text"] for span in line["spans"]), all(span["mono"] for span in line["spans"]))
        for block in reading.layout["blocks"]
        for line in block["lines"]
    ]


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def test_a_scanned_listing_is_marked_monospace_and_fenced_and_its_prose_is_not(listing: OcrReading) -> None:
    reading = listing
    lines = _lines(reading)

    mono = [_squeezed(text) for text, is_mono in lines if is_mono]
    assert "BZ_PARAM_ERROR" in mono
    assert any(text.startswith("if b is NULL or buf is NULL or len") for text in mono)
    assert any(text.startswith("if the compressed file ended before") for text in mono)
    assert len(mono) >= 15
    prose = [text for text, is_mono in lines if not is_mono]
    assert any(text.startswith("Returns data which was read from the compressed file") for text in prose)

    fences = re.findall(r"^```\n(.*?)\n```$", reading.markdown, flags=re.DOTALL | re.MULTILINE)
    (listing_block,) = [fence for fence in fences if "BZ_PARAM_ERROR" in fence]
    # One block however Tesseract parted the listing, its lines in order and indented as set:
    # a condition sits under its error code.
    code_lines = listing_block.splitlines()
    assert code_lines[0] == "BZ_PARAM_ERROR"
    assert re.match(r" {1,4}if b is NULL", code_lines[1]), code_lines[:2]
    assert code_lines[-1].strip() == "otherwise."
    assert len(code_lines) >= 20
    fenced = "\n".join(fences)
    assert "Returns data which was read" not in fenced
    assert "Returns data which was read" in reading.markdown


def test_the_book_structure_makes_a_scanned_listing_a_code_block(listing: OcrReading) -> None:
    (body,) = pages_structure(
        [listing.layout], first_index=1, start=1, ready_through=1, carried_in={}, words=frozenset()
    )

    blocks = re.findall(r"^```\n(.*?)\n```$", body.markdown, flags=re.DOTALL | re.MULTILINE)
    assert any("BZ_PARAM_ERROR" in block and "if b is NULL" in block for block in blocks), body.markdown
    assert "Returns data which was read" in body.markdown
    assert not any("Returns data which was read" in block for block in blocks)


def test_a_scanned_page_of_prose_has_no_line_marked_monospace() -> None:
    reading = _scanned_page("debian-faq", 11)  # 550 words of prose, URLs in a monospace font

    assert not any(is_mono for _, is_mono in _lines(reading))
    assert "```" not in reading.markdown
