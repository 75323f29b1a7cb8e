"""Code listings read whole from real manuals (issue 14, item 5): each listing of a real page
comes out of the layout and the structure step (a fenced code block of the page's Markdown)
with its lines as `pdftotext -layout` shows them when its crop is wide enough to hold the
whole line: the same lines, indented the same, the same words; a run of spaces inside a
line is one (-layout widens it from positions: nine spaces where the PDF's text has two).
Text set past the page's right edge is text of the book: poppler's `-bbox-layout` drops
it, the layout puts it back."""

from __future__ import annotations

import html
import re
import subprocess
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from bookstructure.paragraphs import ParagraphKind, book_text_build
from bookstructure.words import word_list
from projects.intake.layout import pdf_layouts
from projects.models import SourceKind
from projects.services.normalize import project_normalize
from tests.projects.test_layout import block_text, book_layouts
from tests.projects.test_normalize import project_with_source
from tests.support.corpus import debian_pdf, pdf_window

# A crop far wider than any page: plain pdftotext then keeps what lies past the page's edge.
WHOLE_LINE = ["-x", "0", "-y", "0", "-W", "5000", "-H", "5000"]


def pdftotext_layout(pdf: Path, *, whole_lines: bool = True) -> list[str]:
    """The PDF's pages as `pdftotext -layout` prints them."""
    crop = WHOLE_LINE if whole_lines else []
    text = subprocess.run(
        ["pdftotext", "-layout", *crop, "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    return text.split("\f")[:-1]


def window(name: str, page: int, folder: Path) -> Path:
    """One page of a Debian book as a PDF of its own."""
    return pdf_window(debian_pdf(name), page, page, folder / f"{name}-page-{page}.pdf")


def shape(line: str) -> str:
    """A line of code with its indent and its words, a run of spaces inside it one space."""
    return line[: len(line) - len(line.lstrip())] + " ".join(line.split())


def code_blocks(pdf: Path, *, shaped: bool = True) -> list[list[str]]:
    """The lines of each fenced code block of the page's Markdown, fences aside (shaped)."""
    book = book_text_build(pdf_layouts(pdf, first=1, last=1), words=word_list("en"))
    return [
        [shape(line) if shaped else line for line in paragraph.markdown.splitlines()[1:-1]]
        for paragraph in book.pages[0].paragraphs
        if paragraph.kind is ParagraphKind.CODE
    ]


def pdf_own_lines(pdf: Path) -> list[str]:
    """The page's text runs as the PDF sets them, spaces and all (`pdftohtml -xml`)."""
    xml = subprocess.run(
        ["pdftohtml", "-xml", "-i", "-stdout", "-q", str(pdf)], capture_output=True, text=True, check=True
    ).stdout
    return [html.unescape(run) for run in re.findall(r"<text [^>]*>(.*?)</text>", xml)]


def listing(page_text: str, first: str, last: str) -> list[str]:
    """The page's lines from the one starting with `first` to the next one that is `last`,
    indented as the listing is (its common indent taken out)."""
    lines = page_text.splitlines()
    start = next(index for index, line in enumerate(lines) if line.strip().startswith(first))
    end = next(index for index in range(start, len(lines)) if lines[index].strip() == last)
    return [shape(line) for line in textwrap.dedent("\n".join(lines[start : end + 1])).splitlines()]


def test_a_listing_whose_lines_run_past_the_right_edge_keeps_them_whole(tmp_path):
    """Valgrind's manual, page 59: `info threads` lists threads on lines longer than the page."""
    pdf = window("valgrind", 59, tmp_path)
    (page,) = pdftotext_layout(pdf)
    expected = listing(page, "(gdb) info threads", "(gdb)")
    (clipped,) = pdftotext_layout(pdf, whole_lines=False)
    assert "ld-linux.so.2" in page
    assert "ld-linux.so.2" not in clipped  # the page's edge cuts it

    assert expected in code_blocks(pdf)
    assert expected[1].endswith("from /lib/ld-linux.so.2")


def test_a_command_line_past_the_right_edge_is_one_line_of_code_with_its_end(tmp_path):
    """Valgrind's manual, page 45: a `callgrind_annotate` command ends 110 points past the edge."""
    pdf = window("valgrind", 45, tmp_path)
    (page,) = pdftotext_layout(pdf)
    command = next(shape(line.strip()) for line in page.splitlines() if line.strip().startswith("callgrind_annotate"))
    assert command.endswith("totFdB:100,totFdBk:100 xtmemory.kcg")
    (clipped,) = pdftotext_layout(pdf, whole_lines=False)
    assert "xtmemory.kcg mfg" in clipped  # the line before it is whole
    assert "totFdBk:100" not in clipped

    assert command in [line.strip() for block in code_blocks(pdf) for line in block]


def test_a_listing_line_with_a_glyph_in_another_font_stays_in_its_listing(tmp_path):
    """shared-mime-info's spec, page 6: the example's Afrikaans comment sets one letter in a
    TeX font inside the monospace line; the listing stays one block, that line in its place."""
    pdf = window("shared-mime-info", 6, tmp_path)
    (page,) = pdftotext_layout(pdf)
    expected = listing(page, '<?xml version="1.0"?>', "</mime-info>")
    assert '    <comment xml:lang="af">verskille tussen lÃa ers</comment>' in expected

    assert expected in code_blocks(pdf)


@pytest.mark.parametrize("name", ["valgrind", "shared-mime-info"])
def test_every_page_holds_the_words_pdftotext_reads_past_the_edge_too(name):
    """Each page's words are those of `pdftotext -layout` with a crop wider than the page
    (valgrind: 397 pages, 45 lines past the right edge), one for one."""
    pages = pdftotext_layout(debian_pdf(name))
    layouts = book_layouts(name)
    assert len(pages) == len(layouts)
    for number, (layout, text) in enumerate(zip(layouts, pages, strict=True), start=1):
        words = Counter(word for block in layout.get("blocks", []) for word in block_text(block).split())
        assert words == Counter(text.split()), f"page {number}"


def test_a_listings_aligned_columns_keep_the_spaces_the_pdf_sets_between_them(tmp_path):
    """Valgrind's manual, page 45: callgrind_annotate's table; each row is one line whose
    columns are as many spaces apart as in the PDF's own text (pdftotext -layout, placing
    words by position, puts one space where the PDF has two: "41 770")."""
    pdf = window("valgrind", 45, tmp_path)
    rows = [line for line in pdf_own_lines(pdf) if line.endswith(("PROGRAM TOTALS", "mfg.c:freeY", "file:function"))]
    assert " 528    41  770    60    242      19  PROGRAM TOTALS" in rows

    lines = [line for block in code_blocks(pdf, shaped=False) for line in block]

    assert set(rows) <= set(lines)


@pytest.mark.django_db
def test_normalize_stores_a_listing_line_past_the_edge_whole_in_the_text_layer_and_the_layout(tmp_path):
    pdf = window("valgrind", 59, tmp_path)
    project = project_with_source(pdf.read_bytes(), file_name="valgrind.pdf", kind=SourceKind.PDF, pages=1)

    project_normalize(project=project)

    (page,) = project.pages.all()
    assert "from /lib/ld-linux.so.2" in page.text_layer
    words = Counter(word for block in page.layout["blocks"] for word in block_text(block).split())
    assert words == Counter(page.text_layer.split())
