"""Code on a scan is code (translation/engines/tesseract.py, docs/book-structure.md "Code on a
scan"): a listing of the bzip2 manual, scanned, is read monospace from its words' ink, set
as a fenced code block in the page's Markdown and marked `mono` in its layout, so the book
structure makes it code; a scanned page of prose has no line marked."""

from __future__ import annotations

import re
import shutil

import pytest

from bookstructure.book import pages_structure
from tests.support.corpus import Degradation, debian_pdf, scan_pages
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


# A manual that sets its commands apart by their look: the Debian FAQ prints a listing, even a
# one-line command, in a grey monospace font on a shaded box, and a command, a path or a URL
# inside a sentence in the same grey monospace (a link's text in grey too, but in the text's
# font). Scanned as a user scans a book (200 dpi, turned a degree, blurred, noisy, JPEG).
FAQ_COMMANDS = 41  # 7.14: nine one-line commands, each in its box under the sentence that asks for it
FAQ_HOLD = 40  # 7.12: the hold states as a list, `apt-mark hold` and `apt-mark unhold` under a sentence each
FAQ_DPKG = 43  # 8.1: links to the Debian Reference, then `dpkg`'s commands inside a list's sentences


@pytest.fixture(scope="module")
def faq_pages() -> dict[int, OcrReading]:
    try:
        pdf = debian_pdf("debian-faq")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    readings = {}
    for number in (FAQ_HOLD, FAQ_COMMANDS, FAQ_DPKG):
        (scan,) = scan_pages(pdf, number, number, Degradation(angle=1.0), dpi=200)
        readings[number] = _read(scan)
    return readings


def _spans(reading: OcrReading) -> list[tuple[str, bool]]:
    return [
        (span["text"], span["mono"])
        for block in reading.layout["blocks"]
        for line in block["lines"]
        for span in line["spans"]
    ]


def test_one_line_commands_in_their_shaded_boxes_are_code(faq_pages: dict[int, OcrReading]) -> None:
    reading = faq_pages[FAQ_COMMANDS]
    mono = {_squeezed(text) for text, is_mono in _lines(reading) if is_mono}

    commands = {
        "apt-get source foo",
        "sudo apt-get build-dep foo",
        "debuild -us -uc",
        "sudo dpkg -i ../*.deb",
        "dpkg-source -x foo_version-revision.dsc",
        "dpkg-buildpackage -rfakeroot -b",
        "dpkg -i ../foo_version-revision_arch.deb",
    }
    assert commands <= mono, commands - mono
    assert len(mono) == 9  # `cd foo-*` and `dch -l local 'Blah blah blah'` too, as OCR reads them
    fences = re.findall(r"^```\n(.*?)\n```$", reading.markdown, flags=re.DOTALL | re.MULTILINE)
    assert "debuild -us -uc" in fences
    assert "And finally build your package:" in reading.markdown
    assert not any("build your package" in fence for fence in fences)


def test_a_sentence_between_two_commands_or_in_a_list_stays_prose(faq_pages: dict[int, OcrReading]) -> None:
    lines = _lines(faq_pages[FAQ_HOLD])
    mono = [_squeezed(text) for text, is_mono in lines if is_mono]
    prose = [_squeezed(text) for text, is_mono in lines if not is_mono]

    assert {"apt-mark hold package_name", "apt-mark unhold package_name", "aptitude hold package_name"} <= set(mono)
    # Widths fit a monospace font by chance on these lines; they read as sentences.
    assert any(text.startswith("and remove the hold with") for text in prose)
    assert any("the user has never indicated whether the package is wanted" in text for text in prose)
    # The list's bullets, which OCR reads as `*` or `+`, are bullets.
    items = [text for text in prose if text.startswith("\u2022 ")]
    assert [item.split()[1] for item in items] == ["unknown", "install", "remove", "purge", "hold"]


def test_code_inside_a_sentence_is_inline_code_and_a_links_text_is_not(faq_pages: dict[int, OcrReading]) -> None:
    reading = faq_pages[FAQ_DPKG]
    spans = _spans(reading)
    mono = [_squeezed(text) for text, is_mono in spans if is_mono]

    assert "dpkg --help" in mono
    assert "dpkg --info foo_VVV-RRR.deb" in mono
    assert "dpkg --remove foo" in mono
    # A URL's scheme and its `//` one word (OCR reads a space in the monospace `//`), the
    # brackets around it prose, as the links' text before it.
    urls = [text for text in mono if "debian.org" in text]
    assert len(urls) >= 3
    assert all(text.startswith("https://www.debian.org/doc/") for text in urls), urls
    assert not any("Debian reference" in text or "management" in text for text in mono)
    assert "`dpkg --help`." in reading.markdown
    assert re.search(r"\(`https://www\.debian\.org/doc/user-manuals#quick-reference`\)", reading.markdown)
    # The lines those spans sit in are sentences, not listings.
    assert not any(is_mono for text, is_mono in _lines(reading) if "Find out all the options" in text)
