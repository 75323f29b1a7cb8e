"""Tables found in a page's layout (bookstructure/tables.py).

Tables made with reportlab (borderless, as DocBook and LaTeX set them: a header, cells that
wrap) and the shared-mime-info specification's own tables, read from its DocBook source,
are found cell for cell; real Debian manuals' pages without a table (prose, code listings,
an index, tables of contents, lists, an API reference) give none. Layouts are read by
projects/intake/layout.py, as normalize reads them.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from collections.abc import Sequence
from functools import cache
from html import escape
from pathlib import Path
from typing import Any

import pytest
from reportlab.lib.pagesizes import letter
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.platypus import Frame, PageBreak, PageTemplate, Paragraph, Spacer, Table, TableStyle
from reportlab.platypus.doctemplate import BaseDocTemplate
from reportlab.platypus.flowables import Flowable

from bookstructure.book import pages_structure
from bookstructure.lines import page_lines
from bookstructure.tables import Table as FoundTable
from bookstructure.tables import tables_find
from bookstructure.words import word_list
from projects.intake.layout import pdf_layouts
from tests.support.corpus import debian_pdf

_STYLES = getSampleStyleSheet()
_BODY: ParagraphStyle = _STYLES["BodyText"]
_PROSE = (
    "The database is built from the source files by a tool that merges what each package "
    "installs, so that applications only read the result and never parse the sources."
)
_SPEC_XML = Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.xml.gz")


def _pdf(path: Path, story: Sequence[Flowable], *, columns: int = 1) -> Path:
    document = BaseDocTemplate(str(path), pagesize=letter)
    width = document.width / columns
    frames = [
        Frame(document.leftMargin + index * width, document.bottomMargin, width - 12, document.height)
        for index in range(columns)
    ]
    document.addPageTemplates([PageTemplate(frames=frames)])
    document.build(list(story))
    return path


def _table(rows: Sequence[Sequence[str]], *, widths: Sequence[float] | None, valign: str = "TOP") -> Table:
    """A borderless table with a bold header; long cells wrap (Paragraph cells); columns
    as wide as their text when `widths` is None."""
    cells = [[Paragraph(escape(text), _BODY) if len(text) > 25 else text for text in row] for row in rows]
    table = Table(cells, colWidths=list(widths) if widths else None)
    table.setStyle(
        TableStyle(
            [
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ("VALIGN", (0, 0), (-1, -1), valign),
            ]
        )
    )
    return table


def _page(path: Path) -> dict[str, Any]:
    return pdf_layouts(path, first=1, last=1)[0]


def _found(layout: dict[str, Any]) -> list[tuple[bool, tuple[tuple[str, ...], ...]]]:
    return [(table.header, table.rows) for table in tables_find(layout, page=0)]


_PACKAGES = [
    ("Package", "Version", "Size"),
    ("bzip2", "1.0.8", "96 kB"),
    ("nettle", "3.9.1", "1.2 MB"),
    ("valgrind", "3.22.0", "64 MB"),
]


def test_a_three_by_four_table_is_found_with_its_header_and_cells(tmp_path: Path) -> None:
    layout = _page(
        _pdf(
            tmp_path / "table.pdf",
            [Paragraph(_PROSE, _BODY), _table(_PACKAGES, widths=None), Paragraph(_PROSE, _BODY)],
        )
    )

    tables = tables_find(layout, page=0)

    assert [(table.header, table.rows) for table in tables] == [(True, tuple(_PACKAGES))]
    lines = {line.ref: line for line in page_lines(layout, page=0)}
    table = tables[0]
    # poppler reads the bold header, its words close together, as one line; the table
    # splits it into its cells
    assert "Package Version Size" in {lines[ref].text for ref in table.refs}
    assert sorted(word for ref in table.refs for word in lines[ref].text.split()) == sorted(
        word for row in _PACKAGES for cell in row for word in cell.split()
    )
    prose = [line for line in lines.values() if line.ref not in table.refs]
    assert prose  # every line outside the table is the prose's, every cell inside it
    assert all(set(line.text.split()) <= set(_PROSE.split()) for line in prose)
    assert table.top == min(lines[ref].top for ref in table.refs)
    assert table.markdown() == (
        "| Package | Version | Size |\n"
        "| --- | --- | --- |\n"
        "| bzip2 | 1.0.8 | 96 kB |\n"
        "| nettle | 3.9.1 | 1.2 MB |\n"
        "| valgrind | 3.22.0 | 64 MB |"
    )


def test_each_cell_gives_its_lines_and_a_header_read_as_one_line_its_words_share(tmp_path: Path) -> None:
    """`Table.cells` runs parallel to `rows`: a cell's lines are its text, and the header
    poppler read as one line gives each of its cells the share of that line its words take,
    where poppler's own word boxes put them."""
    pdf = _pdf(tmp_path / "table.pdf", [Paragraph(_PROSE, _BODY), _table(_PACKAGES, widths=None)])
    layout = _page(pdf)
    (table,) = tables_find(layout, page=0)
    lines = {line.ref: line for line in page_lines(layout, page=0)}

    assert [len(row) for row in table.cells] == [len(row) for row in table.rows]
    assert {part.ref for row in table.cells for cell in row for part in cell} == table.refs
    for cells, texts in zip(table.cells[1:], table.rows[1:], strict=True):
        assert [" ".join(lines[part.ref].text for part in cell) for cell in cells] == list(texts)
        assert all((part.start, part.end) == (0.0, 1.0) for cell in cells for part in cell)
    header = [part for cell in table.cells[0] for part in cell]
    assert len({part.ref for part in header}) == 1
    line = lines[header[0].ref]
    width = line.x1 - line.x0
    words = _word_boxes(pdf)
    for part, word in zip(header, _PACKAGES[0], strict=True):
        x0, x1 = line.x0 + width * part.start, line.x0 + width * part.end
        assert abs(x0 - words[word][0]) < 6, (word, x0, words[word])
        assert abs(x1 - words[word][1]) < 6, (word, x1, words[word])


def _word_boxes(pdf: Path) -> dict[str, tuple[float, float]]:
    """Each word's left and right edges as `pdftotext -bbox` reads them (the first page)."""
    out = subprocess.run(["pdftotext", "-bbox", "-l", "1", str(pdf), "-"], capture_output=True, text=True, check=True)
    return {
        word: (float(x0), float(x1))
        for x0, x1, word in re.findall(
            r'<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">(.*?)</word>', out.stdout
        )
    }


_OPTIONS = [
    ("Option", "Meaning", "Default"),
    ("-k", "Keep the input files instead of deleting them after the compression ends without an error.", "off"),
    ("-v", "Verbose output", "on"),
    ("-s", "Use less memory when decompressing, at the cost of speed, about half of it.", "off"),
]


@pytest.mark.parametrize("valign", ["TOP", "MIDDLE", "BOTTOM"])
def test_a_cell_that_wraps_over_lines_stays_one_cell(tmp_path: Path, valign: str) -> None:
    layout = _page(
        _pdf(
            tmp_path / "wrapped.pdf",
            [Paragraph(_PROSE, _BODY), _table(_OPTIONS, widths=[50, 190, 60], valign=valign), Spacer(1, 24)],
        )
    )

    assert _found(layout) == [(True, tuple(_OPTIONS))]
    wrapped = [line.text for line in page_lines(layout, page=0) if line.text.startswith("Keep the input")]
    assert wrapped
    assert wrapped[0] != _OPTIONS[1][1]  # it did wrap
    (table,) = tables_find(layout, page=0)
    lines = {line.ref: line for line in page_lines(layout, page=0)}
    cell = table.cells[1][1]  # the wrapped cell's lines, top to bottom
    assert len(cell) >= 2
    assert " ".join(lines[part.ref].text for part in cell) == _OPTIONS[1][1]


def _spec_tables() -> list[list[tuple[str, ...]]]:
    """The informaltables of the shared-mime-info specification's DocBook source, cells
    as text (tags dropped, whitespace collapsed)."""
    source = gzip.decompress(_SPEC_XML.read_bytes()).decode()
    tables = []
    for table in re.findall(r"<informaltable>(.*?)</informaltable>", source, re.S):
        rows = []
        for row in re.findall(r"<row>(.*?)</row>", table, re.S):
            cells = re.findall(r"<entry>(.*?)</entry>", row, re.S)
            rows.append(tuple(" ".join(_xml_text(cell).split()) for cell in cells))
        tables.append(rows)
    return tables


def _xml_text(fragment: str) -> str:
    text = re.sub(r"<[^>]+>", "", fragment)
    return text.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&").replace("&quot;", '"')


def test_the_specifications_own_tables_are_found_cell_for_cell(tmp_path: Path) -> None:
    """The Debian PDF of the spec draws its three tables as empty frames (their text is not
    in it: docs/book-structure.md, "Tables"); set from its DocBook source as DocBook
    does (borderless, cells top-aligned and wrapped), each is found whole."""
    if not _SPEC_XML.exists():
        pytest.skip("apt-get install shared-mime-info (scripts/lib.sh installs it)")
    expected = _spec_tables()
    assert [len(rows) for rows in expected] == [5, 7, 7, 5]
    story: list[Flowable] = []
    for rows in expected:
        story += [Paragraph(_PROSE, _BODY), _table(rows, widths=[90, 110, 230][-len(rows[0]) :]), PageBreak()]
    pdf = _pdf(tmp_path / "spec.pdf", story)
    layouts = pdf_layouts(pdf, first=1, last=len(expected))
    found = [table.rows for layout in layouts for table in tables_find(layout, page=0)]

    assert found == [tuple(rows) for rows in expected]


def test_two_columns_of_prose_are_not_a_table(tmp_path: Path) -> None:
    story = [Paragraph(f"{_PROSE} Paragraph {index}.", _BODY) for index in range(24)]
    layout = _page(_pdf(tmp_path / "columns.pdf", story, columns=2))
    lines = page_lines(layout, page=0)
    assert min(line.x0 for line in lines) < 150 < 300 < max(line.x0 for line in lines)  # two columns

    assert _found(layout) == []


@cache
def _debian_page(name: str, page: int) -> dict[str, Any]:
    return pdf_layouts(debian_pdf(name), first=page, last=page)[0]


@pytest.mark.parametrize(
    ("name", "page", "what"),
    [
        ("debian-faq", 10, "prose"),
        ("debian-faq", 29, "prose, numbered question headings"),
        ("debian-faq", 44, "command lines with arrows"),
        ("debian-faq", 3, "table of contents"),
        ("debian-faq", 4, "table of contents"),
        ("libtasn1", 3, "table of contents with numbers apart"),
        ("bzip2", 9, "a table set as a monospace listing: code, kept verbatim"),
        ("bzip2", 28, "C code"),
        ("bzip2", 29, "C code"),
        ("nettle", 108, "two-column index with dot leaders"),
        ("nettle", 34, "API reference: name ... [Function]"),
        ("libtasn1", 8, "options and their meaning, two columns"),
        ("shared-mime-info", 2, "bullets set apart from their items"),
        ("shared-mime-info", 11, "structure listing in a monospace font"),
        ("valgrind", 332, "a list of bug numbers with hanging indents"),
        ("valgrind", 140, "justified prose whose words poppler sets apart"),
        ("valgrind", 53, "two lines of names that happen to line up"),
        ("debian-faq", 65, "a numbered heading right under a line of prose"),
    ],
)
def test_real_pages_without_a_table_give_none(name: str, page: int, what: str) -> None:
    layout = _debian_page(name, page)
    assert page_lines(layout, page=0), what

    assert _found(layout) == [], what


def test_markdown_escapes_pipes_and_heads_a_table_without_header_with_blanks() -> None:
    table = FoundTable(
        refs=frozenset(),
        top=0.0,
        rows=(("a|b", "1"), ("c\\d", "2"), ("e", "")),
        header=False,
    )

    assert table.markdown() == "|  |  |\n| --- | --- |\n| a\\|b | 1 |\n| c\\\\d | 2 |\n| e |  |"


_LONG = [("Package", "Version", "Size")] + [(f"package-{n:02d}", f"1.{n}.0", f"{n * 7} kB") for n in range(1, 61)]


@pytest.mark.parametrize("window", [False, True])
def test_a_table_split_over_a_page_break_is_one_table_on_its_first_page(tmp_path: Path, window: bool) -> None:
    """60 rows set over two pages, the header repeated on the second (reportlab's
    repeatRows), after a paragraph: one table with every row once, on the page it starts
    on; the second page is carried from it. Read whole, or as normalize reads a book in
    windows (page 1 decided before page 2 is the start of the next window)."""
    table = _table(_LONG, widths=None)
    table.repeatRows = 1
    path = _pdf(tmp_path / "long.pdf", [Paragraph(_PROSE, _BODY), table, Paragraph(_PROSE, _BODY)])
    layouts = pdf_layouts(path, first=1, last=2)
    assert [len(tables_find(layout, page=page)) for page, layout in enumerate(layouts)] == [1, 1]

    words = word_list("en")
    whole = pages_structure(layouts, first_index=1, start=1, ready_through=2, carried_in={}, words=words)
    if window is None:
        bodies = whole
    else:  # page 1 stored, page 2 decided again in the next window, knowing what page 1 took
        carried = {carry.page: carry for carry in whole[0].carries_into}
        rest = pages_structure(layouts, first_index=1, start=2, ready_through=2, carried_in=carried, words=words)
        bodies = [whole[0], *rest]

    assert [body.carried_from for body in bodies] == [None, 1]
    rows = [line for line in bodies[0].markdown.splitlines() if line.startswith("|")]
    assert rows[0] == "| Package | Version | Size |"
    assert rows[2:] == [f"| package-{n:02d} | 1.{n}.0 | {n * 7} kB |" for n in range(1, 61)]
    assert "|" not in bodies[1].markdown
    assert bodies[1].markdown.strip() == _PROSE
