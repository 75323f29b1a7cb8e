"""Pages in columns and the parts of a paper (bookstructure/columns.py, paragraphs.py):
reading order from the page's geometry, paragraphs joined over a column break, tables
found within a column, section numbers kept with their titles, footnotes as notes.

Hand-made layouts pin each rule; real sample papers of publishers' templates
(texlive-publishers-doc, tests/support/corpus.py `paper_pdf`) and the single-column Debian
manuals check them on pages nobody here wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import pytest

from bookstructure.book import pages_paragraphs, pages_structure
from bookstructure.columns import LineBox, page_regions
from bookstructure.lines import page_lines, spans_text
from bookstructure.paragraphs import ParagraphKind, book_text_build
from bookstructure.words import word_list
from projects.intake.layout import pdf_layouts
from tests.support.corpus import debian_pdf, paper_pdf, pdf_page_count

NO_WORDS: frozenset[str] = frozenset()
PROSE = "the quick brown fox jumps over the lazy dog and runs on"  # 12 words, set to a column's measure
Span = dict[str, Any]


def _span(text: str, *, size: float = 10.0, mono: bool = False, glued: bool = False) -> Span:
    span: Span = {"text": text, "font": "Courier" if mono else "Times-Roman", "size": size, "bold": False}
    span.update({"italic": False, "mono": mono})
    if glued:
        span["glued"] = True
    return span


def _block(*lines: tuple[float, float, float, Sequence[Span]], height: float = 12.0) -> dict[str, Any]:
    return {
        "bbox": [min(x0 for x0, *_ in lines), lines[0][1], max(x1 for _, _, x1, _ in lines), lines[-1][1] + height],
        "lines": [{"bbox": [x0, top, x1, top + height], "spans": list(spans)} for x0, top, x1, spans in lines],
    }


def _column(x0: float, x1: float, top: float, texts: Sequence[str]) -> dict[str, Any]:
    """A block of prose lines set to the measure x0..x1 from `top`, 14 points apart."""
    return _block(*((x0, top + 14 * index, x1, [_span(text)]) for index, text in enumerate(texts)))


def _page(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "source": "pdf", "width": 612.0, "height": 792.0, "blocks": list(blocks)}


def _texts(layout: dict[str, Any]) -> list[str]:
    return [line.text for line in page_lines(layout, page=0)]


def test_a_page_in_two_columns_is_read_column_by_column() -> None:
    left = [f"left {number} {PROSE}" for number in range(12)]
    right = [f"right {number} {PROSE}" for number in range(12)]
    # poppler's blocks come row by row: a block of each column, in turns.
    layout = _page(
        _column(72, 296, 100, left[:6]),
        _column(316, 540, 100, right[:6]),
        _column(72, 296, 200, left[6:]),
        _column(316, 540, 200, right[6:]),
    )

    assert _texts(layout) == left + right


def test_a_part_across_the_page_between_two_runs_of_columns_splits_the_flow_there() -> None:
    wide = "A FIGURE CAPTION SET ACROSS THE WHOLE PAGE BETWEEN THE TWO RUNS OF COLUMNS"
    layout = _page(
        _column(72, 540, 60, ["A Title Set Across The Page Above The Columns Of The Paper"]),
        _column(72, 296, 100, [f"upper left {PROSE}"] * 8),
        _column(316, 540, 100, [f"upper right {PROSE}"] * 8),
        _column(72, 540, 230, [wide]),
        _column(72, 296, 260, [f"lower left {PROSE}"] * 8),
        _column(316, 540, 260, [f"lower right {PROSE}"] * 8),
    )

    order = [text.split(" the ")[0] for text in _texts(layout)]

    assert order == [
        "A Title Set Across The Page Above The Columns Of The Paper",
        *["upper left"] * 8,
        *["upper right"] * 8,
        wide,
        *["lower left"] * 8,
        *["lower right"] * 8,
    ]


def test_three_columns_are_read_left_to_right() -> None:
    texts = {name: [f"{name} {number} {PROSE}" for number in range(10)] for name in ("one", "two", "three")}
    layout = _page(
        _column(400, 540, 100, texts["three"]),
        _column(72, 212, 100, texts["one"]),
        _column(236, 376, 100, texts["two"]),
    )

    assert _texts(layout) == texts["one"] + texts["two"] + texts["three"]


def test_a_table_or_a_margin_of_notes_on_a_one_column_page_makes_no_columns() -> None:
    prose = _column(72, 540, 60, [f"{PROSE} {PROSE}"] * 5)
    # A two-column table of short cells, and headings set in the left margin beside the text.
    table = [_column(72, 200, 140, [f"cell {number}" for number in range(8)]), _column(300, 420, 140, ["9"] * 8)]
    margin = [_column(72, 150, 280, ["Heading", "Other"]), _column(170, 540, 280, [f"{PROSE} {PROSE}"] * 12)]

    for layout in (_page(prose, *table), _page(prose, *margin)):
        boxes = [
            [LineBox(*line["bbox"], len(spans_text(line["spans"]).split())) for line in block["lines"]]
            for block in layout["blocks"]
        ]
        (region,) = page_regions(boxes, width=612.0)
        assert region.columns == 1
        assert region.blocks == tuple(range(len(layout["blocks"])))


@pytest.mark.parametrize("name", ["debian-faq", "bzip2", "valgrind", "shared-mime-info"])
def test_the_single_column_manuals_have_no_page_in_columns(name: str) -> None:
    pdf = debian_pdf(name)
    last = min(pdf_page_count(pdf), 80)
    in_columns = [
        number
        for number, layout in enumerate(pdf_layouts(pdf, first=1, last=last), start=1)
        if any(line.column != 0 for line in page_lines(layout, page=number))
    ]

    assert in_columns == []


def test_a_paragraph_a_column_ends_goes_on_at_the_head_of_the_next_column() -> None:
    left = [f"{PROSE} line {number}" for number in range(8)] + [f"{PROSE} and the sentence runs on"]
    right = [f"past the column break {PROSE}", "and ends here."]
    layout = _page(
        _column(72, 296, 100, left),
        _column(316, 540, 100, right),
        _column(316, 540, 140, [f"Another {PROSE}."] * 7),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    first = page.paragraphs[0].text
    assert first.endswith("the sentence runs on past the column break " + PROSE + " and ends here.")
    assert len([paragraph for paragraph in page.paragraphs if "column break" in paragraph.text]) == 1


def test_a_section_number_set_apart_from_its_title_is_one_heading() -> None:
    heading = [_span("2", size=14.0)], [_span("Template Overview", size=14.0)]
    layout = _page(
        _block((72, 80, 80, heading[0]), height=16),
        _block((92, 80, 240, heading[1]), height=16),
        _column(72, 540, 110, [f"{PROSE} {PROSE}"] * 6),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    assert page.paragraphs[0].kind is ParagraphKind.HEADING
    assert page.markdown.startswith("## 2 Template Overview\n\n")


def test_an_option_broken_after_its_hyphen_is_one_code_span() -> None:
    layout = _page(
        _block(
            (72, 100, 540, [_span("Use the"), _span("--show-leak-", mono=True)]),
            (72, 114, 540, [_span("kinds=all", mono=True), _span("option to see every kind of leak.")]),
        ),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    assert page.markdown == "Use the `--show-leak-kinds=all` option to see every kind of leak."


def test_a_footnote_is_a_note_its_mark_in_the_text_a_reference() -> None:
    text = [
        (72, 100, 540, [_span(f"{PROSE} {PROSE} and a"), _span("word", size=10.0)]),
        (72, 114, 540, [_span("with a note"), _span("4", size=7.0, glued=True), _span(f"in it {PROSE} {PROSE}.")]),
        (72, 128, 300, [_span("The paragraph ends here.")]),
    ]
    note = (
        72,
        700,
        540,
        [_span("4", size=6.0), _span("The note set at the foot of the page, in small type.", size=8.0)],
    )
    layout = _page(_block(*text), _column(72, 540, 150, [f"{PROSE} {PROSE}."] * 6), _block(note, height=9))

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    *body, last = page.paragraphs
    assert "with a note[^4] in it" in body[0].markdown
    assert last.kind is ParagraphKind.NOTE
    assert last.markdown == "[^4]: The note set at the foot of the page, in small type."
    assert all("foot of the page" not in paragraph.text for paragraph in body)


def test_small_digits_that_no_note_has_are_left_as_the_page_sets_them() -> None:
    layout = _page(
        _block(
            (
                72,
                100,
                540,
                [
                    _span("Water is H"),
                    _span("2", size=7.0, glued=True),
                    _span("O and r", glued=True),
                    _span("0", size=7.0, glued=True),
                    _span("is a radius."),
                ],
            )
        ),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    assert page.markdown == "Water is H2O and r0 is a radius."


@cache
def _paper_pages(name: str, last: int) -> list[str]:
    pdf = paper_pdf(name)
    layouts = pdf_layouts(pdf, first=1, last=last)
    bodies = pages_structure(layouts, first_index=1, start=1, ready_through=last, carried_in={}, words=word_list("en"))
    return [body.markdown for body in bodies]


def test_a_two_column_conference_paper_reads_in_order_its_columns_prose_not_a_table() -> None:
    first, second = _paper_pages("asmeconf", 2)

    # Page 1: the abstract's column, then the introduction's; prose in columns is no table.
    assert "| ABSTRACT |" not in first
    assert "\n| " not in first
    assert first.index("Keywords: ASME conference paper") < first.index("## 1. INTRODUCTION")
    assert first.index("## 1. INTRODUCTION") < first.index("### 1.1 Essential Initial Commands")
    # The last paragraph of page 1 goes on past the figure at the head of page 2's first column.
    assert "by placing `\\CorrespondingAuthor{email}` after `\\affil{n}`. Two or more authors" in first
    # Page 2's first column, then its second (after the tables at its head).
    assert second.index("## 2. REFERRING") < second.index("## 3. SECTION HEADINGS") < second.index("### 3.1 Subsection")
    # The sentence the first column ends goes on past the tables at the head of the second.
    assert "Do not enclose them braces, e.g. `{\\cite{..}}`, which will cause errors." in second
    assert "| Run 11 | 12.5 | 103.4 |" in second


def test_an_elsevier_papers_footnotes_are_notes_and_no_sentence_is_cut_by_them() -> None:
    first, second, *_ = _paper_pages("elsarticle-5p", 4)

    assert "(WGM)[^4] of a polystyrene micro-sphere (PMS)." in first
    assert "[^4]: WGM occur at particular resonant wavelengths" in first
    assert first.index("[^4]: WGM occur") > first.index("The QE interacts with the gradient")
    assert "## 2. Evanescent vs. conventional quadrupole light-matter coupling" in second
    assert "placed at a small[^5] distance" in second


def test_stored_furniture_is_found_again_at_the_pages_edge_not_where_its_text_stands_in_the_body() -> None:
    # An author's affiliation mark "1" high on the page, the page number "1" at its foot.
    layout = _page(
        _column(72, 540, 80, ["Jane Author"]),
        _block((300, 96, 304, [_span("1", size=6.0)]), height=6),
        _column(72, 540, 110, [f"{PROSE} {PROSE}"] * 6),
        _block((303, 750, 309, [_span("1")])),
    )

    (page,) = pages_paragraphs(
        [layout],
        first_index=1,
        start=1,
        through=1,
        carried_in={},
        words=NO_WORDS,
        furniture=[({"kind": "page_number", "text": "1"},)],
    )

    texts = [paragraph.text for paragraph in page.paragraphs]
    assert "1" not in texts  # the page number is furniture, not a paragraph at the page's end
    assert texts[0].startswith("Jane Author")


def _front_page(*, names: str) -> dict[str, Any]:
    return _page(
        _block((150, 60, 460, [_span("A Study of Things Worth Studying", size=18.0)]), height=20),
        _block((200, 100, 420, [_span(names, size=12.0)]), height=14),
        _block((230, 120, 380, [_span("20 April 1999", size=12.0)]), height=14),
        _block((72, 160, 200, [_span("1 Introduction", size=12.0)]), height=14),
        _column(72, 540, 180, [f"{PROSE} {PROSE}"] * 4 + ["It ends here."]),
    )


def test_the_authors_and_the_date_under_a_books_title_are_front_matter_not_headings() -> None:
    names = "Jane Q. Public1, John Smith2,∗ and Ann van der Berg"
    layout = _front_page(names=names)

    (first,) = book_text_build([layout], words=NO_WORDS, first_page=True).pages
    (later,) = book_text_build([layout], words=NO_WORDS).pages  # the same page inside a book

    kinds = {paragraph.text: paragraph.kind for paragraph in first.paragraphs}
    assert kinds["A Study of Things Worth Studying"] is ParagraphKind.HEADING
    assert kinds[names] is ParagraphKind.PARAGRAPH
    assert kinds["20 April 1999"] is ParagraphKind.PARAGRAPH
    assert kinds["1 Introduction"] is ParagraphKind.HEADING
    assert {paragraph.text: paragraph.kind for paragraph in later.paragraphs}[names] is ParagraphKind.HEADING


def test_a_subtitle_under_a_books_title_stays_a_heading() -> None:
    subtitle = "A LATEX TEMPLATE FOR CONFERENCE PAPERS"
    (page,) = book_text_build([_front_page(names=subtitle)], words=NO_WORDS, first_page=True).pages

    assert {paragraph.text: paragraph.kind for paragraph in page.paragraphs}[subtitle] is ParagraphKind.HEADING


def test_a_name_set_as_code_and_hyphenated_by_the_typesetter_is_joined_whole() -> None:
    layout = _page(
        _block(
            (72, 100, 540, [_span("The style file"), _span("as-", mono=True)]),
            (
                72,
                114,
                540,
                [_span("mejour.bst", mono=True), _span("formats the references of"), _span("asmejour", mono=True)],
            ),
        ),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    assert page.markdown == "The style file `asmejour.bst` formats the references of `asmejour`"


def test_a_heading_numbered_in_roman_numerals_or_a_letter_is_a_heading_of_its_depth() -> None:
    bold = {"bold": True}
    layout = _page(
        _block((72, 80, 300, [{**_span("I. FIRST-LEVEL HEADING"), **bold}])),
        _column(72, 540, 100, [f"{PROSE} {PROSE}"] * 3 + ["It ends."]),
        _block((72, 170, 300, [{**_span("A. Second-level heading"), **bold}])),
        _column(72, 540, 190, [f"{PROSE} {PROSE}"] * 3 + ["It ends."]),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    headings = [
        (paragraph.level, paragraph.text) for paragraph in page.paragraphs if paragraph.kind is ParagraphKind.HEADING
    ]
    assert headings == [(2, "I. FIRST-LEVEL HEADING"), (3, "A. Second-level heading")]


def test_a_section_number_left_of_a_heading_in_another_block_joins_it_and_a_lone_accent_is_dropped() -> None:
    # The Debian FAQ's page 13: "2.2" a block of its own, its title in the next block after a
    # combining accent poppler could not place ("\u0300", set a little higher).
    layout = _page(
        _block((85, 598, 106, [_span("2.2", size=14.3)]), height=23),
        _block(
            (339, 595, 339, [_span("\u0300", size=14.3)]),
            (121, 598, 389, [_span("Are there upgrades?", size=14.3)]),
            height=23,
        ),
        _column(72, 540, 640, [f"{PROSE} {PROSE}"] * 3 + ["It ends."]),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    assert page.markdown.startswith("## 2.2 Are there upgrades?\n\n")


def test_a_numbered_display_equation_is_one_block_kept_as_it_is_set() -> None:
    _, second, *_ = _paper_pages("elsarticle-5p", 4)
    _, asme_second = _paper_pages("asmeconf", 2)

    # Elsevier's equation (1): a sum, a fraction and its number, in pieces poppler parts.
    block = second[second.index("can be written as \\[10\\]:") :].split("\n\n")[1]
    assert block.startswith("```\n")
    assert "Ei =" in block
    assert "(1)" in block
    assert "\n\n(1)\n\n" not in second
    assert "\n\n𝑞⃗ = −𝑘∇𝑇\n\n" not in asme_second
    assert "```\n𝑞⃗ = −𝑘∇𝑇" in asme_second


def test_a_list_of_references_is_a_list_each_entry_from_its_label() -> None:
    entries = [
        (72, 200, 540, "[1] Ning, Xiang and Lovell, Mary Rose. On the Sliding Friction of Deposits. ASME Journal"),
        (72, 214, 300, "of Tribology 141 (2019): 1-9."),
        (72, 228, 540, "[2] Gibson, Tom A. and Tucker, Matthew A. The Big Book of Cellular Studies. John Wiley"),
        (72, 242, 300, "and Sons, New York (2008)."),
        (72, 256, 540, "[3] Stevens, Thomas T. Stochastic Fields and Their Digital Simulation. Stochastic Methods."),
    ]
    layout = _page(
        _column(72, 540, 60, [f"{PROSE} {PROSE}"] * 3 + ["It ends."]),
        _block((72, 170, 160, [{**_span("REFERENCES"), "bold": True}])),
        _block(*((x0, top, x1, [_span(text)]) for x0, top, x1, text in entries)),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    kinds = [(paragraph.kind, paragraph.text[:12]) for paragraph in page.paragraphs[1:]]
    assert kinds == [
        (ParagraphKind.HEADING, "REFERENCES"),
        (ParagraphKind.LIST_ITEM, "[1] Ning, Xi"),
        (ParagraphKind.LIST_ITEM, "[2] Gibson, "),
        (ParagraphKind.LIST_ITEM, "[3] Stevens,"),
    ]
    assert page.paragraphs[2].markdown.endswith("ASME Journal of Tribology 141 (2019): 1-9.")


def test_a_bold_heading_naming_code_and_carrying_a_notes_mark_is_a_heading() -> None:
    layout = _page(
        _block(
            (
                72,
                80,
                400,
                [
                    {**_span("5. REFERENCE FORMATTING WITH"), "bold": True},
                    _span("asmeconf.bst", mono=True),
                    {**_span("3", size=7.0, glued=True), "bold": False},
                ],
            )
        ),
        _column(72, 540, 100, [f"{PROSE} {PROSE}"] * 3 + ["It ends."]),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    assert page.paragraphs[0].kind is ParagraphKind.HEADING
    assert page.paragraphs[0].markdown == "## 5. REFERENCE FORMATTING WITH `asmeconf.bst`3"


def test_a_copyright_box_at_the_foot_of_a_column_is_set_apart_and_the_sentence_goes_on_past_it() -> None:
    left = [f"{PROSE} line {number}" for number in range(8)] + [f"{PROSE} and the sentence runs on"]
    box = [
        (72, 700, 296, [_span("Permission to make digital or hard copies of all or part of this work", size=7.0)]),
        (72, 709, 296, [_span("for personal or classroom use is granted without fee provided that", size=7.0)]),
    ]
    layout = _page(
        _column(72, 296, 100, left),
        _block(*box, height=8),
        _column(316, 540, 100, [f"past the copyright box {PROSE}", "and ends here."]),
        _column(316, 540, 140, [f"Another {PROSE}."] * 7),
    )

    (page,) = book_text_build([layout], words=NO_WORDS).pages

    texts = [paragraph.text for paragraph in page.paragraphs]
    assert texts[0].endswith(f"the sentence runs on past the copyright box {PROSE} and ends here.")
    assert texts[-1].startswith("Permission to make digital or hard copies")
