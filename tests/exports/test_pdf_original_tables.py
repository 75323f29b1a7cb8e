"""Tables in the original-layout Pdf (docs/exports.md, "Tables in the original layout"):
pages of a real paper with ruled tables (zlib's CRC paper, Debian's zlib1g-dev) uploaded,
normalized and translated through the API by the OpenAI-compatible stand-in (every word
spelled backwards), then exported with `layout: original` and read back with poppler,
cell by cell: each word cell's translation in its cell, its source words gone from there,
the numbers where they were, the rules and frames as they were; and a translation whose
table has another grid keeps the table as the source has it."""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from reportlab.lib import colors
from reportlab.platypus import Paragraph, Spacer, TableStyle

from bookstructure.lines import page_lines
from bookstructure.tables import number_like, tables_find
from exports.book import ExportOptions, ExportPage
from exports.renderers import renderer_for
from exports.services import book_for
from projects.intake.layout import pdf_layouts
from projects.models import Project
from tests.exports.test_pdf_original import (
    changed_outside_text,
    debian_window,
    exported,
    pdfinfo_sizes,
    rendered,
    translated_by_stand_in,
    words_with_boxes,
)
from tests.projects.test_processing import credit
from tests.projects.test_tables import _BODY, _OPTIONS, _PROSE, _pdf, _table
from tests.support.corpus import pdf_page_count
from tests.support.openai_server import fake_translation

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils"),
]

FIRST, LAST = 25, 27  # the CRC paper: two 4x4 timing tables and a third left unfound; a 6x4 table two pages on
Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class SourceCell:
    """A cell of a table found in the source: its text, its box, and its column's extent across."""

    page: int
    text: str
    box: Box
    column: tuple[float, float]


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):  # type: ignore[no-untyped-def]
    return local_storage


@pytest.fixture
def paper(tmp_path: Path) -> Path:
    return debian_window("crc-doc", FIRST, LAST, tmp_path / "crc.pdf")


@pytest.fixture
def translated(user, auth_client, settings, paper):  # type: ignore[no-untyped-def]
    """The paper's pages translated by the stand-in (words spelled backwards): the project id."""
    credit(user, "50")
    return translated_by_stand_in(auth_client, settings, paper)


def source_cells(pdf: Path) -> list[SourceCell]:
    """Every cell of every table the book structure finds in `pdf`, with its box (its
    lines, each cut to the cell's part) and its column's extent."""
    cells: list[SourceCell] = []
    for number, layout in enumerate(pdf_layouts(pdf, first=1, last=pdf_page_count(pdf)), start=1):
        lines = {line.ref: line for line in page_lines(layout, page=0)}
        for table in tables_find(layout, page=0):
            boxes: list[list[Box]] = []
            for row in table.cells:
                boxes.append([])
                for cell in row:
                    parts = []
                    for part in cell:
                        line = lines[part.ref]
                        width = line.x1 - line.x0
                        parts.append((line.x0 + width * part.start, line.top, line.x0 + width * part.end, line.bottom))
                    boxes[-1].append(_union(parts) if parts else (0.0, 0.0, 0.0, 0.0))
            for column in range(table.columns):
                filled = [row[column] for row in boxes if row[column][2] > 0]
                extent = (min(box[0] for box in filled), max(box[2] for box in filled))
                for text_row, box_row in zip(table.rows, boxes, strict=True):
                    if text_row[column]:
                        cells.append(SourceCell(number, text_row[column], box_row[column], extent))
    return cells


def _union(boxes: list[Box]) -> Box:
    return min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)


def words_in(
    words: list[tuple[int, str, float, float, float, float, float, float]], page: int, box: Box, *, placed: bool = False
) -> list[str]:
    """The words on `page` whose middle lies in `box`, in reading order (`placed`: each
    with its left and top edges, to the point)."""
    x0, top, x1, bottom = box
    inside = sorted(
        (round(y0), round(wx0), word)
        for number, word, wx0, y0, wx1, y1, *_ in words
        if number == page and x0 <= (wx0 + wx1) / 2 <= x1 and top <= (y0 + y1) / 2 <= bottom
    )
    return [f"{word}@{left},{upper}" if placed else word for upper, left, word in inside]


def test_a_tables_word_cells_are_translated_in_their_cells_and_its_numbers_and_rules_kept(
    auth_client, translated, paper, tmp_path
):
    _, content = exported(auth_client, translated, layout="original")
    out = tmp_path / "out.pdf"
    out.write_bytes(content)
    cells = source_cells(paper)
    source_words, output_words = words_with_boxes(paper), words_with_boxes(out)

    assert pdfinfo_sizes(out) == pdfinfo_sizes(paper)
    assert {cell.page for cell in cells} == {1, 3}
    worded = [cell for cell in cells if fake_translation(cell.text) != cell.text and not number_like(cell.text)]
    numbers = [cell for cell in cells if number_like(cell.text)]
    assert {cell.text for cell in worded} >= {"Method", "Improvement", "Input size", "Sarwate", "Black"}
    assert len(numbers) > 30
    for cell in worded:
        x0, top, x1, bottom = cell.box
        own = (x0 - 1, top - 1, x1 + 1, bottom + 1)
        column = (cell.column[0] - 6, top - 1, cell.column[1] + 6, bottom + 6)
        # The source's words are gone from the cell; the translation's words are set in it.
        assert not set(words_in(output_words, cell.page, own)) & set(cell.text.split()), cell
        assert words_in(output_words, cell.page, column) == fake_translation(cell.text).split(), cell
    for cell in numbers:  # each number where it was
        assert words_in(source_words, cell.page, cell.box, placed=True), cell
        assert words_in(output_words, cell.page, cell.box, placed=True) == words_in(
            source_words, cell.page, cell.box, placed=True
        ), cell
    # The rules, frames and every other drawing as they were: the pages differ only where words stand.
    boxes = [(page, tuple(box[:4])) for page, _, *box in source_words + output_words]
    sources, outputs = rendered(paper, tmp_path, "source"), rendered(out, tmp_path, "output")
    for number, (source, output) in enumerate(zip(sources, outputs, strict=True), start=1):
        words = [box for page, box in boxes if page == number]
        assert changed_outside_text(source, output, words) < 0.002, number  # type: ignore[arg-type]


def test_a_table_translated_in_another_grid_keeps_its_source_text(translated, paper, tmp_path, caplog):
    """The translation's tables lose their last column: their cells cannot be told apart,
    so the tables stay as the source has them, and the log says so."""
    book = book_for(project=Project.objects.get(pk=translated))

    def column_dropped(markdown: str) -> str:
        return re.sub(r"(?m)^(\|.*)\|[^|\n]*\|[ \t]*$", r"\1|", markdown)

    def pages() -> Iterator[ExportPage]:
        for page in book.pages():
            yield replace(page, translation=column_dropped(page.translation))

    out = tmp_path / "out.pdf"
    with caplog.at_level(logging.INFO, logger="exports.renderers._pdf_table"), out.open("wb") as file:
        renderer_for("Pdf").render(replace(book, pages=pages), ExportOptions(layout="original"), file)

    source_words, output_words = words_with_boxes(paper), words_with_boxes(out)
    cells = source_cells(paper)
    assert any(fake_translation(cell.text) != cell.text for cell in cells)
    for cell in cells:
        assert words_in(output_words, cell.page, cell.box) == words_in(source_words, cell.page, cell.box), cell
    assert "kept as it was" in caplog.text
    # The prose around the tables is translated all the same.
    text = " ".join(word for _, word, *_ in output_words)
    assert fake_translation("performance") in text


def test_a_longer_translation_of_a_wrapped_cell_stays_in_its_cell(user, auth_client, settings, tmp_path):
    """A ruled table whose middle column wraps (reportlab, as DocBook sets one), translated
    with every word of its cells said twice: each cell's words are set in its own column,
    above the next row, smaller where they must be; the rules stay."""
    table = _table(_OPTIONS, widths=[50, 190, 60])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    pdf = _pdf(tmp_path / "ruled.pdf", [Paragraph(_PROSE, _BODY), table, Spacer(1, 24)])
    credit(user, "50")
    book = book_for(project=Project.objects.get(pk=translated_by_stand_in(auth_client, settings, pdf)))

    def twice(markdown: str) -> str:
        return re.sub(
            r"(?m)^\|.*\|$", lambda row: re.sub(r"[^\W\d_]{2,}", lambda word: f"{word[0]} {word[0]}", row[0]), markdown
        )

    def pages() -> Iterator[ExportPage]:
        for page in book.pages():
            yield replace(page, translation=twice(page.translation))

    out = tmp_path / "out.pdf"
    with out.open("wb") as file:
        renderer_for("Pdf").render(replace(book, pages=pages), ExportOptions(layout="original"), file)

    cells = source_cells(pdf)
    assert sorted(cell.text for cell in cells) == sorted(text for row in _OPTIONS for text in row)
    output_words = words_with_boxes(out)
    rows = sorted({cell.box[1] for cell in cells})
    for cell in cells:
        if number_like(cell.text) or fake_translation(cell.text) == cell.text:
            continue
        below = next((top for top in rows if top > cell.box[1]), cell.box[3] + 6)
        column = (cell.column[0] - 6, cell.box[1] - 2, cell.column[1] + 6, below)
        wanted = twice(f"|{fake_translation(cell.text)}|").strip("|").split()
        assert words_in(output_words, 1, column) == wanted, cell
    sources, outputs = rendered(pdf, tmp_path, "source"), rendered(out, tmp_path, "output")
    boxes = [tuple(box[:4]) for page, _, *box in words_with_boxes(pdf) + output_words if page == 1]
    assert changed_outside_text(sources[0], outputs[0], boxes) < 0.002  # type: ignore[arg-type]


# A table of options long enough to go on over the page break after a page of prose, its
# header repeated on the next page (reportlab's repeatRows, as DocBook sets a long table).
_LONG_OPTIONS = [("Option", "Meaning", "Default")] + [
    (f"-{letter}", f"Keeps the {word} files after the run", "off")
    for letter, word in zip(
        "abcdefghijklmnopqrstuvwxyz",
        [
            "input",
            "output",
            "spare",
            "broken",
            "partial",
            "sorted",
            "hidden",
            "cached",
            "locked",
            "merged",
            "shared",
            "signed",
            "packed",
            "split",
            "staged",
            "traced",
            "zipped",
            "copied",
            "dumped",
            "empty",
            "frozen",
            "guarded",
            "joined",
            "linked",
            "mapped",
            "named",
        ],
        strict=True,
    )
]


def test_a_table_continued_over_a_page_break_is_translated_on_both_pages_its_repeated_header_too(
    user, auth_client, settings, tmp_path
):
    table = _table(_LONG_OPTIONS, widths=[60, 220, 60])
    table.repeatRows = 1
    pdf = _pdf(tmp_path / "long-table.pdf", [*[Paragraph(_PROSE, _BODY)] * 14, table])
    cells = source_cells(pdf)
    assert {cell.page for cell in cells} == {1, 2}, "the table must go on over the page break"
    credit(user, "50")
    book = book_for(project=Project.objects.get(pk=translated_by_stand_in(auth_client, settings, pdf)))

    out = tmp_path / "out.pdf"
    with out.open("wb") as file:
        renderer_for("Pdf").render(book, ExportOptions(layout="original"), file)

    output_words = words_with_boxes(out)
    # Every word cell on both pages, the header as the second page repeats it too.
    meanings = [cell for cell in cells if cell.text.startswith("Keeps") or cell.text in _LONG_OPTIONS[0]]
    assert {(cell.page, cell.text) for cell in meanings} >= {
        (2, "Meaning"),
        (2, "Keeps the signed files after the run"),
    }
    for cell in meanings:
        box = (cell.column[0] - 6, cell.box[1] - 2, cell.column[1] + 6, cell.box[3] + 2)
        assert words_in(output_words, cell.page, box) == fake_translation(cell.text).split(), cell
