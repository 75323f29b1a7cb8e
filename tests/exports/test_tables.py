"""Tables in every export: a GFM pipe table in a page's translation comes back as a table —
read back from each format with its own tools (html5lib, ebooklib and epubcheck,
python-docx, poppler's word boxes) — in a left-to-right, a right-to-left and a CJK book,
in bilingual files too, and a wide or long table still fits the page."""

from __future__ import annotations

import io
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from xml.etree.ElementTree import Element

import docx
import pytest
from docx.oxml.ns import qn
from lxml import etree
from reportlab.lib.pagesizes import A4

from exports.blocks import Block, blocks_of, cell_text, plain_text_of
from exports.book import ExportOptions, ExportPage
from exports.renderers.pdf import MARGIN
from tests.exports.books import AFTER_TABLE, BEFORE_TABLE, TABLE_CELLS, TABLES, render_bytes, table_book
from tests.exports.test_epub import EPUBCHECK, assert_epubcheck_passes, chapters_of, read_back
from tests.exports.test_html import _text, assert_valid_document
from tests.exports.test_pdf import assert_renders_every_page, needs_tools, page_count, run_tool, squashed

LANGUAGES = ("es", "ar", "ja")
XHTML = "{http://www.w3.org/1999/xhtml}"
# A table wider than any page: eight columns, sentences, and a URL that has no place to break.
WIDE_TABLE = (
    "| " + " | ".join(f"Columna {n}" for n in range(1, 9)) + " |\n" + "|---" * 8 + "|\n"
    "| https://sources.debian.org/src/valgrind/1:3.19.0-1/memcheck/mc_main.c | "
    + " | ".join("una celda con varias palabras que debe ajustarse al ancho" for _ in range(7))
    + " |"
)


def the_table(markdown: str) -> Block:
    (table,) = [block for block in blocks_of(markdown) if block.kind == "table"]
    return table


def cells_of(table: Block) -> list[list[str]]:
    return [[cell_text(cell) for cell in row] for row in table.rows]


def test_a_pipe_table_is_a_table_block_with_its_header_alignment_and_inline_runs() -> None:
    table = the_table(f"{BEFORE_TABLE['es']}\n\n{TABLES['es']}\n\n{AFTER_TABLE['es']}")

    assert cells_of(table) == TABLE_CELLS["es"]
    assert (table.header, table.align, table.columns) == (True, ("left", "left", "right"), 3)
    code = table.rows[1][0]
    assert [(run.text, run.code) for run in code] == [("--leak-check=yes", True)]
    assert any(run.bold and run.text == "detallada" for run in table.rows[2][1])


def test_a_short_row_is_padded_and_an_empty_header_row_means_a_table_without_headings() -> None:
    table = the_table("|   |   |   |\n|---|---|---|\n| a | b | c |\n| d |")

    assert table.header is False
    assert cells_of(table) == [["a", "b", "c"], ["d", "", ""]]


def test_markdown_keeps_the_pipe_table_as_written() -> None:
    book = table_book("es")

    markdown = render_bytes("Markdown", book).decode()

    assert TABLES["es"] in markdown
    assert cells_of(the_table(markdown)) == TABLE_CELLS["es"]


@pytest.mark.parametrize("language", LANGUAGES)
def test_plain_text_sets_a_narrow_table_in_aligned_columns_under_a_ruled_header(language: str) -> None:
    narrow = "| Name | Size |\n|:--|--:|\n| valgrind | 1.2 |\n| bzip2 | 12.45 |\n| ひらがな | 3 |"
    text = render_bytes("PlainText", table_book(language, table=narrow)).decode()

    lines = text[text.index("Name") :].splitlines()[:5]
    assert lines == [
        "Name       Size",
        "--------  -----",
        "valgrind    1.2",
        "bzip2     12.45",
        "ひらがな      3",  # four wide characters take eight columns
    ]


def test_plain_text_writes_a_table_too_wide_for_columns_row_by_row_with_its_headings() -> None:
    text = render_bytes("PlainText", table_book("es", table=WIDE_TABLE)).decode()

    row = "\n".join(
        [
            "Columna 1: https://sources.debian.org/src/valgrind/1:3.19.0-1/memcheck/mc_main.c",
            *(f"Columna {n}: una celda con varias palabras que debe ajustarse al ancho" for n in range(2, 9)),
        ]
    )
    assert f"{BEFORE_TABLE['es']}\n\n{row}\n\n{AFTER_TABLE['es']}" in text
    assert "|" not in text


def html_table(root: Element) -> Element:
    (table,) = root.iter("table")
    return table


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("bilingual", [False, True], ids=["plain", "bilingual"])
def test_html_table_has_column_headers_a_body_alignment_and_a_named_scrolling_region(
    language: str, bilingual: bool
) -> None:
    book = table_book(language)

    root = assert_valid_document(render_bytes("Html", book, ExportOptions(bilingual=bilingual)))

    table = html_table(root)
    head = table.findall("./thead/tr/th")
    assert [_text(cell) for cell in head] == TABLE_CELLS[language][0]
    assert all(cell.get("scope") == "col" for cell in head)
    body = [[_text(cell) for cell in row.findall("./td")] for row in table.findall("./tbody/tr")]
    assert body == TABLE_CELLS[language][1:]
    assert [cell.get("class") for cell in head] == ["align-start", "align-start", "align-end"]
    assert table.find("./tbody/tr/td/code") is not None  # the command stays code
    assert all(cell.get("style") is None for cell in table.iter())  # the stylesheet aligns, not attributes
    region = root.find(".//div[@class='table-wrap']")
    assert region is not None
    assert (region.get("role"), region.get("tabindex"), region.get("aria-label")) == ("region", "0", book.labels.table)
    assert table in list(region)
    style = _text(root.find("./head/style"))
    assert ".table-wrap { margin-block: 1rem 1.25rem; overflow-x: auto; }" in style
    assert ".align-end { text-align: end; }" in style


@pytest.mark.parametrize("language", LANGUAGES)
def test_epub_table_is_xhtml_with_thead_and_tbody_and_passes_epubcheck(language: str, tmp_path: Path) -> None:
    data = render_bytes("Epub", table_book(language), ExportOptions(page_markers=True))

    (table,) = [table for chapter in chapters_of(read_back(data, tmp_path)) for table in chapter.iter(f"{XHTML}table")]
    rows = [
        [" ".join("".join(cell.itertext()).split()) for cell in row]
        for part in ("thead", "tbody")
        for row in table.iterfind(f"{XHTML}{part}/{XHTML}tr")
    ]
    assert rows == TABLE_CELLS[language]
    assert [cell.tag for cell in table.find(f"{XHTML}thead/{XHTML}tr")] == [f"{XHTML}th"] * 3
    assert [cell.get("class") for cell in table.find(f"{XHTML}tbody/{XHTML}tr")] == [
        "align-start",
        "align-start",
        "align-end",
    ]
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)


def test_epub_bilingual_keeps_the_table_after_its_source_paragraph(tmp_path: Path) -> None:
    data = render_bytes("Epub", table_book("ar"), ExportOptions(bilingual=True))

    chapter = etree.tostring(chapters_of(read_back(data, tmp_path))[0], encoding="unicode")
    assert chapter.count("<table") == 1
    assert chapter.index('class="source"') < chapter.index("<table")
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)


def docx_of(data: bytes) -> docx.document.Document:
    return docx.Document(io.BytesIO(data))


@pytest.mark.parametrize("language", LANGUAGES)
def test_docx_table_is_a_word_table_whose_header_row_is_bold_and_repeats(language: str) -> None:
    document = docx_of(render_bytes("Docx", table_book(language)))

    (table,) = document.tables
    assert [[cell.text for cell in row.cells] for row in table.rows] == TABLE_CELLS[language]
    assert table.style is not None
    assert table.style.name == "Table Grid"
    header = table.rows[0]
    assert header._tr.trPr.find(qn("w:tblHeader")) is not None  # repeated on each page it runs over
    assert all(run.bold for cell in header.cells for run in cell.paragraphs[0].runs)
    assert not any(run.bold for run in table.rows[1].cells[2].paragraphs[0].runs)
    code = table.rows[1].cells[0].paragraphs[0].runs[0]
    assert code.font.name == "Courier New"
    assert table.rows[1].cells[2].paragraphs[0].alignment is not None  # the right-aligned column
    assert table.rows[1].cells[2].paragraphs[0].alignment.name == "RIGHT"
    properties = table._tbl.tblPr
    assert (properties.find(qn("w:bidiVisual")) is not None) == (language == "ar")  # laid out from the right
    section = document.sections[0]
    text_width = (section.page_width - section.left_margin - section.right_margin) // 635
    widths = [int(column.get(qn("w:w"))) for column in table._tbl.tblGrid.iterchildren(qn("w:gridCol"))]
    assert sum(widths) == text_width
    assert widths[1] > widths[0] > widths[2]  # the sentences get the room, the short values little
    body = [paragraph.text for paragraph in document.paragraphs]
    assert body.index(BEFORE_TABLE[language]) + 1 == body.index(AFTER_TABLE[language])  # the table between them


def test_docx_tables_that_would_touch_are_kept_apart_and_the_body_ends_with_a_paragraph() -> None:
    two = f"{TABLES['es']}\n\n{TABLES['es']}"  # and nothing after them: the book ends with a table
    page = ExportPage(1, True, two, "", False, "", "")
    book = replace(table_book("es", pages=0), page_count=1, pages=lambda: iter([page]))

    document = docx_of(render_bytes("Docx", book))

    body = [child.tag.split("}")[1] for child in document.element.body.iterchildren()]
    assert body == ["p", "tbl", "p", "tbl", "p", "sectPr"]  # the title, each table, a paragraph after each
    assert [len(table.rows) for table in document.tables] == [4, 4]


def test_docx_bilingual_keeps_the_table_and_the_source_paragraphs() -> None:
    document = docx_of(render_bytes("Docx", table_book("es"), ExportOptions(bilingual=True)))

    (table,) = document.tables
    assert table.rows[0].cells[0].text == "Opción"
    assert [paragraph.style.name for paragraph in document.paragraphs].count("Source Text") == 3


@dataclass(frozen=True)
class Word:
    text: str
    x_min: float
    y_min: float
    x_max: float


def pdf_words(pdf: Path, sheet: int) -> list[Word]:
    """The words of one sheet with their boxes (pdftotext -bbox: right-to-left words come
    back in visual order, so they are matched by `find` either way round)."""
    result = run_tool("pdftotext", "-bbox", "-f", str(sheet), "-l", str(sheet), pdf, "-")
    assert result.returncode == 0, result.stderr
    pattern = r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>'
    return [
        Word(text, float(x_min), float(y_min), float(x_max))
        for x_min, y_min, x_max, text in re.findall(pattern, result.stdout)
    ]


def find(words: list[Word], text: str) -> Word:
    """The word whose letters are `text`'s, in logical or visual order."""
    wanted = squashed(text)
    found = [word for word in words if squashed(word.text) in (wanted, wanted[::-1])]
    assert found, f"{text!r} not among {[word.text for word in words]}"
    return found[0]


def assert_same(values: list[float]) -> None:
    assert max(values) - min(values) < 0.6, values


@needs_tools
def test_pdf_table_sets_each_column_in_line_and_aligned_as_written(tmp_path: Path) -> None:
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(render_bytes("Pdf", table_book("es")))

    words = pdf_words(pdf, 2)  # the title has sheet 1; book pages 1 and 2 share sheet 2
    first = [find(words, text) for text in ("Opción", "--leak-check=yes", "-v", "--num-callers")]
    second = [find(words, text) for text in ("Significado", "Busca", "Salida", "Profundidad")]
    third = [find(words, text) for text in ("Valor", "no", "apagado", "12")]
    assert_same([word.x_min for word in first])  # start-aligned
    assert_same([word.x_min for word in second])
    assert_same([word.x_max for word in third])  # end-aligned ("--:")
    assert max(word.x_max for word in first) < min(word.x_min for word in second)
    assert [word.y_min for word in first] == sorted(word.y_min for word in first)  # rows in order
    for column in (first, second, third):  # each row's cells on one line (code's font is a little taller)
        for cell, row_start in zip(column[1:], first[1:], strict=True):
            assert abs(cell.y_min - row_start.y_min) <= 3
    before, after = find(words, "Antes"), find(words, "Después")
    assert before.y_min < first[0].y_min < first[-1].y_min < after.y_min
    assert_renders_every_page(pdf, tmp_path)


@needs_tools
def test_pdf_table_in_a_right_to_left_book_runs_from_the_right(tmp_path: Path) -> None:
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(render_bytes("Pdf", table_book("ar")))

    words = pdf_words(pdf, 2)
    first = [find(words, text) for text in ("الخيار", "--leak-check=yes", "-v", "--num-callers")]
    second = find(words, "المعنى")
    third = [find(words, text) for text in ("القيمة", "معطل", "12")]
    assert_same([word.x_max for word in first])  # the first column on the right, its cells at its right
    assert second.x_max < min(word.x_min for word in first)
    assert_same([word.x_min for word in third])  # "--:" is the end: the left in a right-to-left table
    assert max(word.x_max for word in third) < second.x_min
    assert_renders_every_page(pdf, tmp_path)


@needs_tools
def test_pdf_wide_table_fits_the_text_frame_with_every_word_kept(tmp_path: Path) -> None:
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(render_bytes("Pdf", table_book("es", table=WIDE_TABLE)))

    words = pdf_words(pdf, 2)
    cells = [
        word for word in words if word.y_min > find(words, "Antes").y_min and word.y_min < find(words, "Después").y_min
    ]
    assert min(word.x_min for word in cells) >= MARGIN - 0.5
    assert max(word.x_max for word in cells) <= A4[0] - MARGIN + 0.5
    text = squashed(" ".join(word.text for word in words))
    assert squashed("https://sources.debian.org/src/valgrind/1:3.19.0-1/memcheck/mc_main.c") in text  # cut, not lost
    assert text.count(squashed("una celda con varias palabras que debe ajustarse al ancho")) == 7
    for n in range(1, 9):
        assert squashed(f"Columna {n}") in text
    assert_renders_every_page(pdf, tmp_path)


@needs_tools
def test_pdf_long_table_runs_over_sheets_repeating_its_header(tmp_path: Path) -> None:
    rows = "\n".join(f"| fila {n} | valor {n} |" for n in range(1, 121))
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(render_bytes("Pdf", table_book("es", table=f"| Nombre | Valor |\n|---|---|\n{rows}")))

    sheets = page_count(pdf)
    assert sheets >= 4
    with_table = [sheet for sheet in range(2, sheets + 1) if any(word.text == "fila" for word in pdf_words(pdf, sheet))]
    assert len(with_table) >= 2
    for sheet in with_table:
        assert any(word.text == "Nombre" for word in pdf_words(pdf, sheet))
    text = squashed(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout)
    assert all(squashed(f"fila {n} valor {n}") in text for n in (1, 60, 120))
    assert_renders_every_page(pdf, tmp_path)


@needs_tools
@pytest.mark.parametrize("language", ["ar", "ja"])
def test_pdf_bilingual_sets_the_table_in_the_translation_column(language: str, tmp_path: Path) -> None:
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(render_bytes("Pdf", table_book(language), ExportOptions(bilingual=True)))

    words = pdf_words(pdf, 2)
    middle = A4[0] / 2
    for text in ("--leak-check=yes", "--num-callers"):
        assert find(words, text).x_min > middle  # in the translation's column, not over the source
    assert max(word.x_max for word in words) <= A4[0] - MARGIN + 0.5
    assert_renders_every_page(pdf, tmp_path)


def test_plain_text_of_a_page_with_a_table_keeps_every_cell() -> None:
    text = plain_text_of(TABLES["ja"])

    for row in TABLE_CELLS["ja"]:
        for cell in row:
            assert cell in text
