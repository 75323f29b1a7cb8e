"""Page layout from a PDF's text layer (docs/book-structure.md), read from real manuals that
Debian's documentation packages install: fonts, monospace code, running headers, paragraph
blocks, two columns, boxes, and the layout normalize stores on every page."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from core.errors import ServiceError
from projects.intake.layout import font_read, pdf_layouts
from projects.models import SourceKind
from projects.services.normalize import project_normalize
from tests.projects.test_normalize import project_with_source
from tests.support.corpus import debian_pdf, pdf_page_count, pdf_window
from tests.support.pdfs import pdf_bytes

Layout = dict[str, Any]


@cache
def book_layouts(name: str) -> tuple[Layout, ...]:
    """Every page's layout of a Debian book, read once per test run."""
    pdf = debian_pdf(name)
    return tuple(pdf_layouts(pdf, first=1, last=pdf_page_count(pdf)))


def page_layout(name: str, number: int) -> Layout:
    return book_layouts(name)[number - 1]


def line_text(line: Layout) -> str:
    """A line's text as the format says to read it: spans joined by a space unless glued."""
    text = ""
    for span in line["spans"]:
        text += span["text"] if span.get("glued") or not text else " " + span["text"]
    return text


def block_text(block: Layout) -> str:
    return " ".join(line_text(line) for line in block["lines"])


def spans(layout: Layout) -> Iterator[Layout]:
    for block in layout["blocks"]:
        for line in block["lines"]:
            yield from line["spans"]


def test_the_title_on_the_first_page_of_the_bzip2_manual_has_the_largest_font():
    layout = page_layout("bzip2", 1)

    largest = max(spans(layout), key=lambda span: span["size"])

    assert largest["text"] == "bzip2 and libbzip2, version 1.0.8"
    assert largest["font"] == "NimbusSanL-Bold"  # the subset prefix is gone
    assert largest["bold"]
    assert not largest["mono"]
    assert all(span["size"] < largest["size"] for span in spans(layout) if span is not largest)


def test_commands_and_identifiers_are_monospace_spans_and_the_prose_around_them_is_not():
    mono = [span["text"] for layout in book_layouts("bzip2") if layout for span in spans(layout) if span["mono"]]
    prose = [span["text"] for layout in book_layouts("bzip2") if layout for span in spans(layout) if not span["mono"]]

    assert "bzip2 -d" in mono
    assert "bzip2 -dc" in mono
    assert any(text.startswith("int BZ2_bzCompress") for text in mono)
    assert not any("bzip2 -d" in text or "BZ2_bzCompress (" in text for text in prose)
    # "(or bzip2 -d)": the parenthesis is in the text font, glued to the command before it.
    line = next(
        line
        for block in page_layout("bzip2", 6)["blocks"]
        for line in block["lines"]
        if "(or bzip2 -d)" in line_text(line)
    )
    texts = [(span["text"], span["mono"], bool(span.get("glued"))) for span in line["spans"]]
    assert texts[:3] == [("bunzip2", True, False), ("(or", False, False), ("bzip2 -d", True, False)]
    assert texts[3][0].startswith(") decompresses")
    assert texts[3][1:] == (False, True)


def test_a_command_line_in_the_valgrind_manual_is_one_courier_span():
    layout = pdf_layouts(debian_pdf("valgrind"), first=5, last=5)[0]

    command = next(span for span in spans(layout) if "--leak-check=yes" in span["text"])

    assert command["text"] == "valgrind --leak-check=yes myprog arg1 arg2"
    assert command["font"] == "Courier"
    assert command["mono"]


def test_the_running_header_of_a_body_page_is_its_own_block_at_the_top():
    layout = page_layout("bzip2", 7)
    header, first_body, *_ = layout["blocks"]

    assert block_text(header) == "How to use bzip2"
    assert len(header["lines"]) == 1
    assert header["bbox"][3] < 0.1 * layout["height"]
    assert header["bbox"][3] < first_body["bbox"][1]
    assert not any("How to use bzip2" in block_text(block) for block in layout["blocks"][1:])


def test_the_lines_of_a_paragraph_are_one_block_top_to_bottom():
    layout = page_layout("bzip2", 7)

    paragraph = next(block for block in layout["blocks"] if block_text(block).startswith("As a self-check"))

    lines = [line_text(line) for line in paragraph["lines"]]
    assert len(lines) == 6
    assert lines[0].startswith("As a self-check for your protection, bzip2 uses 32-bit CRCs")
    assert lines[1].startswith("identical to the original.")
    assert lines[4].endswith("You can use bzip2recover to")
    assert lines[5] == "try to recover data from damaged files."
    tops = [line["bbox"][1] for line in paragraph["lines"]]
    assert tops == sorted(tops)


def test_a_two_column_index_page_reads_the_left_column_before_the_right():
    layout = page_layout("nettle", 108)
    middle = layout["width"] / 2
    body = [block for block in layout["blocks"] if block["bbox"][1] > 90]  # below the running header
    columns = ["left" if block["bbox"][2] < middle else "right" for block in body]

    assert columns == sorted(columns)  # every left block, then every right one
    assert columns.count("left") >= 3
    assert columns.count("right") >= 3
    text = " ".join(block_text(block) for block in body)
    assert text.index("hkdf_expand") < text.index("hmac_update") < text.index("nettle_aeads")


@pytest.mark.parametrize("name", ["bzip2", "libtasn1"])
def test_every_box_lies_inside_its_page_and_every_line_inside_its_block(name):
    for layout in book_layouts(name):
        if not layout:
            continue
        assert layout["version"] == 1
        assert layout["source"] == "pdf"
        width, height = layout["width"], layout["height"]
        assert (width, height) == (612.0, 792.0)
        for block in layout["blocks"]:
            x0, y0, x1, y1 = block["bbox"]
            assert 0 <= x0 <= x1 <= width
            assert 0 <= y0 <= y1 <= height
            for line in block["lines"]:
                lx0, ly0, lx1, ly1 = line["bbox"]
                assert x0 - 0.1 <= lx0 <= lx1 <= x1 + 0.1
                assert y0 - 0.1 <= ly0 <= ly1 <= y1 + 0.1
                assert line["spans"]
                assert all(span["text"] for span in line["spans"])


def test_the_spans_hold_the_words_of_the_text_layer_no_more_no_fewer():
    """Glued spans join without a space: the words read back are pdftotext's words."""
    pdf = debian_pdf("bzip2")
    for number, layout in enumerate(book_layouts("bzip2"), start=1):
        text_layer = pdf_text(pdf, number)
        words = Counter(word for block in layout.get("blocks", []) for word in block_text(block).split())
        assert words == Counter(text_layer.split()), f"page {number}"


def pdf_text(pdf: Path, number: int) -> str:
    return subprocess.run(
        ["pdftotext", "-layout", "-f", str(number), "-l", str(number), "-enc", "UTF-8", str(pdf), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_a_page_without_a_text_layer_has_an_empty_layout(tmp_path):
    pdf = tmp_path / "drawing.pdf"
    pdf.write_bytes(pdf_bytes(2))

    assert pdf_layouts(pdf, first=1, last=2) == [{}, {}]


def test_a_file_poppler_cannot_read_is_file_corrupt(tmp_path):
    pdf = tmp_path / "broken.pdf"
    pdf.write_bytes(b"%PDF-1.4\nnot a PDF at all\n")

    with pytest.raises(ServiceError) as raised:
        pdf_layouts(pdf, first=1, last=1)
    assert raised.value.code == "file_corrupt"


@pytest.mark.parametrize(
    ("name", "bold", "italic", "mono"),
    [
        ("PYRIYB+NimbusSanL-Bold", True, False, False),
        ("XDVKOU+NimbusRomNo9L-ReguItal", False, True, False),
        ("NimbusRomNo9L-Medi", True, False, False),
        ("QYKIKI+NimbusMonL-Regu", False, False, True),
        ("Courier-Oblique", False, True, True),
        ("Helvetica-BoldOblique", True, True, False),
        ("Times-Roman", False, False, False),
        ("CMTT10", False, False, True),
        ("CMSLTT10", False, True, True),
        ("CMBX12", True, False, False),
        ("CMTI10", False, True, False),
        ("CMR10", False, False, False),
        ("SourceSansPro-BoldIt", True, True, False),
        ("DejaVuSansMono", False, False, True),
        ("Inter-SemiBold", True, False, False),
        ("Roboto-Black", True, False, False),
        ("Consolas", False, False, True),
        ("Menlo-Regular", False, False, True),
    ],
)
def test_bold_italic_and_monospace_are_read_from_the_font_name(name, bold, italic, mono):
    font = font_read(name, 10.04)

    assert (font.bold, font.italic, font.mono) == (bold, italic, mono)
    assert font.size == 10.0
    assert "+" not in font.name


@pytest.mark.django_db
def test_normalize_stores_the_layout_of_every_page_of_a_pdf(tmp_path):
    window = pdf_window(debian_pdf("bzip2"), 5, 8, tmp_path / "bzip2-5-8.pdf")
    project = project_with_source(window.read_bytes(), file_name="bzip2.pdf", kind=SourceKind.PDF, pages=4)

    project_normalize(project=project)

    pages = list(project.pages.order_by("index"))
    assert [page.index for page in pages] == [1, 2, 3, 4]
    assert [page.layout for page in pages] == pdf_layouts(window, first=1, last=4)
    for page in pages:
        assert page.layout["blocks"]
        words = Counter(word for block in page.layout["blocks"] for word in block_text(block).split())
        assert words == Counter(page.text_layer.split())
    assert block_text(pages[2].layout["blocks"][0]) == "How to use bzip2"  # page 7 of the book
