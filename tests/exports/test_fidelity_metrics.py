"""The measures of bench/bench_fidelity.py on small hand-made inputs, so the bench measures
what it says; and the corpus helpers on a real Debian book."""

from __future__ import annotations

import io
import random
import shutil
import xml.etree.ElementTree as ElementTree
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from bench import fidelity
from bench.fidelity import SourceLine
from tests.support.corpus import (
    PAPERS,
    SCANNERS,
    debian_pdf,
    pages_render,
    paper_pdf,
    pdf_page_count,
    scan_jpegs,
    scan_pages,
    scans_zip,
)

HEADER, FOOTER = 0.05, 0.95


def book_lines(pages: int) -> list[SourceLine]:
    """Pages with a running header (the section, changing), body lines and a page number."""
    lines = []
    for page in range(1, pages + 1):
        lines += [
            SourceLine(page, HEADER, f"CHAPTER 1. SECTION {page}"),
            SourceLine(page, 0.10, "Body text that runs across the page."),
            SourceLine(page, 0.50, "More body text, lower down."),
            SourceLine(page, 0.90 if page % 2 else 0.60, "A last line of the body."),
            SourceLine(page, FOOTER, str(page)),
        ]
    return lines


def test_furniture_is_the_edge_lines_that_repeat_in_a_band_even_when_their_text_changes():
    found = fidelity.furniture_lines(book_lines(5), page_count=5)
    assert found == {page: [f"CHAPTER 1. SECTION {page}", str(page)] for page in range(1, 6)}


def test_a_line_near_the_edge_on_one_page_only_is_not_furniture():
    lines = [SourceLine(1, 0.03, "A title near the top"), SourceLine(1, 0.5, "Body."), SourceLine(2, 0.5, "Body.")]
    assert fidelity.furniture_lines(lines, page_count=2) == {}


def test_a_full_pages_last_line_is_no_footer_though_it_sits_at_the_same_height_on_every_page():
    lines = [
        line
        for page in (1, 2, 3)
        for line in (
            SourceLine(page, 0.04, "CHAPTER 1. LEFT"),
            SourceLine(page, 0.045, f"SECTION {page} RIGHT"),  # one row with it
            SourceLine(page, 0.1, "Body."),
            SourceLine(page, 0.9, "Body line."),
            SourceLine(page, 0.915, "The last line of a full page."),
        )
    ]
    found = fidelity.furniture_lines(lines, page_count=3)
    assert found == {page: ["CHAPTER 1. LEFT", f"SECTION {page} RIGHT"] for page in (1, 2, 3)}


def test_furniture_leaks_count_header_lines_found_in_their_page_and_leave_page_numbers_out():
    furniture = {1: ["CHAPTER 1. SECTION 1", "1"], 2: ["CHAPTER 1. SECTION 2", "2"]}
    exported = {1: "CHAPTER 1.  SECTION 1\n\nText of page one.\n\n1", 2: "Text of page two.\n\n2"}
    assert fidelity.furniture_leaks(furniture, exported) == 1


def test_page_number_paragraphs_are_paragraphs_of_only_a_number():
    exported = {1: "Text.\n\n12\n\n", 2: "xiv\n\nThere were 12 of them.\n\n- 13 -", 3: "1984 was a year."}
    assert fidelity.page_number_paragraphs(exported) == 3


def test_hyphenations_are_line_end_splits_of_known_words_and_not_compounds():
    source = "a Pen-\ntium chip, a well-\nknown fact, a half-\nbaked idea; the well-known case"
    known, compounds = fidelity.vocabulary(source)
    split = fidelity.hyphenations(source, known | {"pentium", "wellknown", "halfbaked"}, compounds)
    assert split == [("Pen", "tium"), ("half", "baked")]  # "well-known" is a compound the text writes


def test_unjoined_hyphenations_count_each_form_a_split_word_keeps():
    split = [("Pen", "tium"), ("Dig", "ital")]
    exported = "A Pen- tium here, a Pen-\ntium there, a Pentium, Dig-ital and Digital; not Pen-tiumx."
    assert fidelity.unjoined_hyphenations(split, exported) == 3


def test_cut_sentences_look_through_page_numbers_and_running_headers():
    exported = {
        1: "It starts here and we are referring\n\n1",
        2: "HEADER\n\nto freedom, not price. A full sentence.\n\n2",
        3: "Another page that ends well.",
        4: "lowercase start after a full stop is no cut",
        6: "starts lowercase, but page 5 is not exported",
    }
    assert fidelity.cut_sentences(exported, {2: ["HEADER"]}) == 1
    assert fidelity.cut_sentences(exported) == 0  # the header hides the cut when it is not looked through


def test_code_lines_are_whole_monospace_lines_and_altered_when_not_verbatim():
    lines = [
        SourceLine(1, 0.2, "valgrind --leak-check=yes ./a.out", mono=True),
        SourceLine(1, 0.3, "#include <bzlib.h>", mono=True),
        SourceLine(1, 0.4, "Prose with an identifier", mono=False),
        SourceLine(1, 0.5, "{}", mono=True),
    ]
    code = fidelity.code_lines(lines)
    assert code == ["valgrind --leak-check=yes ./a.out", "#include <bzlib.h>"]
    exported = "valgrind  --leak-check=yes\n./a.out\n\n#Incluye <bzlib.h>"
    assert fidelity.not_verbatim(code, exported) == 1


def test_missing_words_count_repeats_and_ignore_case():
    assert fidelity.missing_words("The cat saw the cat. The end.", "the cat saw THE end") == (2, 7)
    # A running header's words are no text of the book, however often the body has them too.
    assert fidelity.missing_words("Cats: the cat. Cats: a cat.", "the cat. a cat.", excluded_text="Cats Cats") == (0, 4)


def test_headings_found_match_without_numbering_case_or_punctuation():
    markdown = "# The book\n\n## 1.1 What is this FAQ?\n\nText.\n\n### Getting Debian\n\n#not a heading\n"
    exported = fidelity.markdown_headings(markdown)
    assert exported == ["1.1 What is this FAQ?", "Getting Debian"]
    assert fidelity.headings_found(["What is this FAQ?", "Getting Debian.", "Installing"], exported) == (2, 3)


def test_large_lines_are_short_lines_bigger_than_the_body_and_not_furniture():
    lines = [
        SourceLine(1, 0.05, "Running header", size=14.0),
        SourceLine(1, 0.2, "2.1 Installing", size=14.0),
        SourceLine(1, 0.3, "Body text of the page, long enough to weigh the most.", size=10.0),
        SourceLine(1, 0.4, "More body text of the page, long enough too.", size=10.0),
    ]
    assert fidelity.large_lines(lines, furniture={1: ["Running header"]}) == ["2.1 Installing"]


def test_word_recall_counts_the_reference_words_read():
    assert fidelity.word_recall("one two two three", "two one four") == (2, 4)


def test_export_pages_split_a_markdown_export_at_its_page_markers_without_the_echo_marker():
    markdown = "# Title\n\n<!-- page 1 -->\n\n[echo → es] First page.\n\n<!-- page 2 -->\n\nSecond."
    pages = fidelity.export_pages(markdown)
    assert {number: fidelity.normalized(text) for number, text in pages.items()} == {1: "First page.", 2: "Second."}


def test_words_kept_is_the_exports_words_over_the_sources_furniture_aside():
    source, exported = "Cats: the cat sat. Cats: a cat.", "el gato se sentó, un gato"
    assert fidelity.words_kept(source, exported, excluded_text="Cats Cats") == (6, 5)  # 1.2: longer


# --- Reading order -------------------------------------------------------------------------


def test_invariant_tokens_are_numbers_identifiers_acronyms_and_names_not_starting_a_sentence():
    text = (
        "The Debian FAQ. See Section 2.1 of the IEEE guide, e.g. the file bzlib.h in /usr/share at www.debian.org.\n"
        "Run valgrind --leak-check=yes with LaTeX; call BZ2_bzCompress (Fig. 3).\n"
        "Written by Susan and Bob.\n"
        "\n"
        "Introduction to Linux"
    )
    assert fidelity.invariant_tokens(text) == [
        "Debian",  # "The" starts the text; "See", "Run", "Written" a sentence; "Introduction" a heading
        "FAQ",
        "Section",
        "2.1",
        "IEEE",
        "bzlib.h",  # "e.g." is no identifier: its parts are single letters
        "/usr/share",
        "www.debian.org",
        "--leak-check=yes",
        "LaTeX",
        "BZ2_bzCompress",
        "Fig",
        "3",
        "Susan",
        "Bob",
        "Linux",
    ]


def test_common_subsequence_length_agrees_with_the_textbook_table_on_random_sequences():
    chooser = random.Random(7)
    for _ in range(300):
        first = [chooser.choice("abcde") for _ in range(chooser.randrange(0, 12))]
        second = [chooser.choice("abcdef") for _ in range(chooser.randrange(0, 12))]
        table = [[0] * (len(second) + 1) for _ in range(len(first) + 1)]
        for i, a in enumerate(first):
            for j, b in enumerate(second):
                table[i + 1][j + 1] = table[i][j] + 1 if a == b else max(table[i][j + 1], table[i + 1][j])
        assert fidelity.common_subsequence_length(first, second) == table[-1][-1]


LEFT_COLUMN = "Results for 2019 from Alice and the IEEE 754 unit on x86."
RIGHT_COLUMN = "Then Bob measured 2020 with NASA data at 3.5 GHz on ARM64 and Intel i7 chips."


def test_reading_order_is_whole_when_every_token_is_there_in_order_whatever_is_added():
    tokens = fidelity.source_invariant_tokens({1: LEFT_COLUMN + "\n" + RIGHT_COLUMN}, {})
    assert tokens == ["2019", "Alice", "IEEE", "754", "x86", "Bob", "2020", "NASA", "3.5", "ARM64", "Intel", "i7"]
    exported = f"# Paper\n\n{LEFT_COLUMN}\n\nA leaked header 1999 by Carol.\n\n{RIGHT_COLUMN}"
    assert fidelity.reading_order(tokens, exported) == (12, 12)


def test_reading_order_loses_the_shorter_run_when_columns_are_read_in_the_wrong_order():
    tokens = fidelity.source_invariant_tokens({1: LEFT_COLUMN + "\n" + RIGHT_COLUMN}, {})
    found, total = fidelity.reading_order(tokens, f"{RIGHT_COLUMN}\n\n{LEFT_COLUMN}")
    assert (found, total) == (7, 12)  # the right column's 7 tokens in order; the left column's 5 out of it


def test_reading_order_counts_a_token_lost_or_changed_and_a_footnote_spliced_into_a_sentence():
    tokens = fidelity.invariant_tokens("Version 2.1 of Valgrind runs on Linux and Darwin since 2004.")
    assert tokens == ["2.1", "Valgrind", "Linux", "Darwin", "2004"]
    assert fidelity.reading_order(tokens, "La versión 2.1 de Valgrind funciona en Linux desde 2004.") == (4, 5)
    assert fidelity.reading_order(tokens, "Version 2,1 of Valgrind runs on Linux and Darwin since 2004.") == (4, 5)
    # pdftotext reads a footnote at its column's foot; an export that splices it into the
    # sentence it interrupts holds the sentence's end, or the note, out of order.
    source = fidelity.invariant_tokens(
        "Version 2.1 of Valgrind runs on Linux and Darwin since 2004.\n1 See Darwin, 2004."
    )
    assert source[5:] == ["1", "See", "Darwin", "2004"]
    spliced = "Version 2.1 of Valgrind runs on Linux\n\n1 See Darwin, 2004.\n\nand Darwin since 2004."
    assert fidelity.reading_order(source, spliced) == (7, 9)


def test_the_sources_tokens_leave_each_pages_running_header_and_footer_out():
    pages = {
        1: "Journal of Things 12 (2020)\n\nWe used Python 3.11 here.\n\n1",
        2: "Journal of Things 12 (2020)\n\nThen NumPy 2.0 there.\n\n2",
    }
    furniture = {1: ["Journal of Things 12 (2020)", "1"], 2: ["Journal of Things 12 (2020)", "2"]}
    assert fidelity.source_invariant_tokens(pages, furniture) == ["Python", "3.11", "NumPy", "2.0"]
    assert fidelity.source_invariant_tokens(pages, {})[:3] == ["Things", "12", "2020"]


def test_a_token_broken_or_dehyphenated_at_a_line_end_is_read_as_the_export_writes_it_whole():
    # pdftotext breaks a URL at its line end, and joins a compound's line-end hyphen
    # ("Debian-" / "based" read "Debianbased"): the export holding them whole is right.
    page = {1: "See https://www.\ndebian.org/doc/ for Debianbased systems on x86\n64 machines."}
    exported = "See https://www.debian.org/doc/ for Debian-based systems on x86 64 machines."
    tokens = fidelity.source_invariant_tokens(page, {}, export_text=exported)
    assert tokens == ["https://www.debian.org/doc/", "Debian-based", "x86", "64"]
    assert fidelity.reading_order(tokens, exported) == (4, 4)
    # Broken in the export too: the two halves are the tokens, and both are found.
    broken = "See https://www. debian.org/doc/ for Debianbased systems on x86 64 machines."
    tokens = fidelity.source_invariant_tokens(page, {}, export_text=broken)
    assert tokens == ["https://www", "debian.org/doc/", "Debianbased", "x86", "64"]
    assert fidelity.reading_order(tokens, broken) == (5, 5)
    assert fidelity.reading_order(tokens, "See https://www.debian.org/doc/ for Debian based systems.") == (0, 5)


def test_a_running_header_whose_page_number_pdftotext_sets_apart_is_left_out_token_by_token():
    page = {1: "3.1. WHICH DISTRIBUTION\n\nVersion 2.0 of Debian.\n\n13"}
    assert fidelity.source_invariant_tokens(page, {1: ["3.1. WHICH DISTRIBUTION 13"]}) == ["2.0", "Debian"]


# --- Section numbers -----------------------------------------------------------------------


def test_section_numbers_are_kept_only_where_number_and_title_are_one_heading():
    source = [("1", "Introduction"), ("2", "Template Overview"), ("2.1", "Fonts"), ("A.1", "Proofs"), ("IV", "RESULTS")]
    whole = (
        "# Paper\n\n## 1 Introduction\n\n## 2. Template Overview\n\n### 2.1 Fonts\n\n## A.1 Proofs\n\n## IV. RESULTS\n"
    )
    assert fidelity.section_numbers_kept(source, fidelity.markdown_headings(whole)) == (5, 5)
    parted = "# Paper\n\n## 1 Introduction\n\n2\n\n## Template Overview\n\n### 2.2 Fonts\n\nA.1 Proofs\n\n## RESULTS\n"
    assert fidelity.section_numbers_kept(source, fidelity.markdown_headings(parted)) == (1, 5)
    echoed = "# Paper\n\n## [echo → es] 1 Introduction\n\n## [echo → es] Template Overview\n"
    assert fidelity.section_numbers_kept(source, fidelity.markdown_headings(echoed)) == (1, 5)


def test_numbered_headings_come_from_the_outline_numbered_or_found_on_its_page():
    lines = [
        SourceLine(1, 0.2, "2 Template Overview", bold=True),
        SourceLine(1, 0.4, "2.1 Fonts. The class loads the fonts it needs and sets them."),
        SourceLine(2, 0.3, "Acknowledgments", bold=True),
    ]
    outline = [(1, "1 Introduction"), (1, "Template Overview"), (1, "Fonts"), (2, "Acknowledgments")]
    assert fidelity.numbered_headings(lines, outline, furniture={}) == [
        ("1", "Introduction"),
        ("2", "Template Overview"),
        ("2.1", "Fonts"),  # run into its paragraph
    ]


def test_numbered_headings_without_an_outline_are_bold_or_large_lines_with_a_number_and_a_title():
    body = [SourceLine(1, 0.1 + n / 100, "Body text set in the body size, long enough to weigh.") for n in range(10)]
    lines = [
        *body,
        SourceLine(1, 0.3, "3 Results and Discussion", bold=True),
        SourceLine(1, 0.4, "3.1 Timings", size=12.0),
        SourceLine(1, 0.5, "II. MATH AND EQUATIONS", bold=True),
        SourceLine(1, 0.55, "V. G. Mitts, Louisiana State University", size=12.0),  # an author's initial
        SourceLine(1, 0.6, "5 Document Structure 3", bold=True),  # a contents line
        SourceLine(1, 0.65, "2. The author may give keywords", size=10.0),  # a list item in the body's size
        SourceLine(1, 0.7, "4 the figures", bold=True),  # no capital
        SourceLine(1, 0.95, "7 Journal of Things", bold=True),  # furniture
    ]
    assert fidelity.numbered_headings(lines, [], furniture={1: ["7 Journal of Things"]}) == [
        ("3", "Results and Discussion"),
        ("3.1", "Timings"),
        ("II", "MATH AND EQUATIONS"),
    ]


def test_a_papers_headings_without_an_outline_are_its_bold_or_large_lines_outside_its_title_block():
    prose = "Body text of the paper set in its prose size, long enough to weigh."
    lines = [
        SourceLine(1, 0.05, "A Paper on Things", size=14.0),  # the title block, across the columns
        SourceLine(1, 0.08, "Ada Author", bold=True),
        SourceLine(1, 0.2, "Abstract", bold=True, column=1),
        *(
            SourceLine(1, 0.22 + n / 100, "A bold abstract set in the prose size here.", bold=True, column=1)
            for n in range(4)
        ),
        SourceLine(1, 0.3, "1 Introduction", bold=True, column=1),
        *(SourceLine(1, 0.32 + n / 100, prose, column=1) for n in range(10)),
        SourceLine(1, 0.5, "Fig. 1 A figure caption", bold=True, column=2),
        SourceLine(1, 0.55, "2 Methods", size=12.0, column=2),
        SourceLine(1, 0.6, "3 Results 4", bold=True, column=2),  # a contents line
        SourceLine(1, 0.65, "B. Author, C. Author,", bold=True, column=2),
        SourceLine(1, 0.95, "Journal of Things", bold=True),
        SourceLine(2, 0.1, "ACKNOWLEDGMENTS", bold=True, column=1),
    ]
    found = fidelity.heading_lines(lines, furniture={1: ["Journal of Things"]})
    assert found == ["Abstract", "1 Introduction", "2 Methods", "ACKNOWLEDGMENTS"]


# --- Columns -------------------------------------------------------------------------------


def two_column_page(rows: int = 30) -> list[tuple[float, float]]:
    """A page 600 wide: a title across it, then two columns of 250 with a gutter at 300."""
    return [(150.0, 450.0), (200.0, 400.0)] + [(50.0, 290.0)] * rows + [(310.0, 550.0)] * rows


def test_a_page_in_two_columns_has_one_gutter_between_them_though_a_title_crosses_it():
    (gutter,) = fidelity.page_gutters(two_column_page(), 600.0)
    assert 290 <= gutter <= 310


def test_a_page_in_one_column_a_table_or_tags_beside_prose_have_no_gutter():
    assert fidelity.page_gutters([(50.0, 550.0)] * 40, 600.0) == []
    prose_and_tags = [(50.0, 550.0)] * 10 + [(50.0, 260.0)] * 20 + [(480.0, 550.0)] * 20  # `[Function]` tags
    assert fidelity.page_gutters(prose_and_tags, 600.0) == []
    table = [(50.0, 120.0)] * 20 + [(400.0, 440.0)] * 20
    assert fidelity.page_gutters(table, 600.0) == []


def test_a_page_in_three_columns_has_two_gutters():
    spans = [(40.0, 190.0)] * 20 + [(210.0, 390.0)] * 20 + [(410.0, 560.0)] * 20
    gutters = fidelity.page_gutters(spans, 600.0)
    assert len(gutters) == 2
    assert 190 <= gutters[0] <= 210
    assert 390 <= gutters[1] <= 410


def test_lines_beside_each_other_in_two_columns_are_two_lines_and_read_column_by_column():
    texts = [
        '<text top="{top}" left="50" width="240" height="12" font="0">left {n} ends with a hyphen-</text>',
        '<text top="{top}" left="310" width="240" height="12" font="0">right {n} of the other column</text>',
    ]
    rows = "".join(text.format(top=100 + 14 * n, n=n) for n in range(15) for text in texts)
    xml = (
        '<pdf2xml><page number="1" height="800" width="600"><fontspec id="0" size="10" family="Times"/>'
        '<text top="60" left="150" width="300" height="16" font="0"><b>A Title Across</b></text>'
        f"{rows}</page></pdf2xml>"
    )
    lines = fidelity.pdftohtml_lines(ElementTree.fromstring(xml))  # noqa: S314 (our own text)
    assert len(lines) == 31
    assert lines[0].bold
    assert lines[0].column == 0
    assert {line.column for line in lines if line.text.startswith("left")} == {1}
    assert {line.column for line in lines if line.text.startswith("right")} == {2}
    text = fidelity.source_lines_text(lines).splitlines()
    assert text[0] == "A Title Across"
    assert text[15:17] == ["left 14 ends with a hyphen-", "right 0 of the other column"]


needs_poppler = pytest.mark.skipif(shutil.which("pdftohtml") is None, reason="poppler-utils is not installed")


@needs_poppler
def test_the_bzip2_manual_reads_with_its_code_lines_furniture_and_hyphenations():
    pdf = debian_pdf("bzip2")
    assert pdf_page_count(pdf) == 38
    lines, _ = fidelity.pdftohtml_read(pdf, 12, 14)
    assert "#include <bzlib.h>" not in fidelity.code_lines(lines)  # inline in prose: not a whole line
    assert "BZ_RUN_OK, BZ_FLUSH_OK, BZ_FINISH_OK" in fidelity.code_lines(lines)
    furniture = fidelity.furniture_lines(lines, page_count=3)
    assert furniture[12] == ["Programming with libbzip2", "9"]


@needs_poppler
def test_a_degraded_scan_is_the_same_on_every_run_and_turned():
    pdf = debian_pdf("debian-faq")
    first = scan_pages(pdf, 10, 10, dpi=60)[0]
    again = scan_pages(pdf, 10, 10, dpi=60)[0]
    assert first.tobytes() == again.tobytes()
    clean = pages_render(pdf, 10, 10, dpi=60)[0]
    assert first.size[0] > clean.size[0]  # turned (the corners widen it) and noisy
    assert first.tobytes() != clean.resize(first.size).tobytes()


@needs_poppler
@pytest.mark.parametrize(
    ("name", "page", "line"),
    [
        # A monospace run set a little lower than the prose around it.
        (
            "bzip2",
            30,
            "*destLen-1]. If the destination buffer is big enough, *destLen is set to the size of the "
            "uncompressed data,",
        ),
        # A footnote: its mark raised, its paths in monospace, its commas in the text font.
        (
            "debian-faq",
            32,
            "2 dists/stable/main, dists/stable/contrib, dists/stable/non-free, and dists/unstable/main/, etc.",
        ),
        # A listing's line with one raised letter in a TeX font.
        ("shared-mime-info", 7, '<comment xml:lang="af">verskille tussen lÃa ers</comment>'),
    ],
)
def test_a_line_of_runs_in_two_fonts_at_two_heights_is_one_line_read_as_pdftotext_reads_it(name, page, line):
    """Runs are one line when they share most of their height, and are spaced as pdftotext
    spaces words: the line is no code line of the measure, for it is not wholly monospace."""
    lines, _ = fidelity.pdftohtml_read(debian_pdf(name), page, page)
    texts = [source.text for source in lines]
    assert line in texts
    assert line in fidelity.normalized("".join(fidelity.pdftotext_pages(debian_pdf(name), page, page)))
    assert not any(source.mono for source in lines if source.text == line)
    assert not any(text in line for text in fidelity.code_lines(lines))


@needs_poppler
def test_the_source_text_holds_what_is_set_past_the_pages_right_edge():
    """Valgrind's manual, page 59: `info threads` lines end past the edge; the source's words
    are the whole lines, as the book's reader gets them."""
    (page,) = fidelity.pdftotext_pages(debian_pdf("valgrind"), 59, 59)
    assert "_dl_sysinfo_int80 () from /lib/ld-linux.so.2" in page
    assert '"called from London") at prog.c:20' in page


@needs_poppler
def test_a_paper_of_the_corpus_is_set_in_two_columns_and_read_in_them():
    if not Path(PAPERS["asmejour"][0]).exists():
        pytest.skip("texlive-publishers-doc is not installed")
    assert not any("acm" in installed.lower() for installed, _, _ in PAPERS.values())  # held back for acceptance
    pdf = paper_pdf("asmejour")
    assert pdf_page_count(pdf) == 7
    lines, outline = fidelity.pdftohtml_read(pdf, 2, 2)
    assert {line.column for line in lines} >= {1, 2}
    assert ("4", "Tables and Figures") in fidelity.numbered_headings(lines, outline[5:7], furniture={})
    (page,) = fidelity.pdftotext_pages(pdf, 2, 2)  # pdftotext's default mode reads a column after the other
    assert page.index("Landscape figures and tables may be produced") < page.index("Capitalization of Titles")


def test_scans_are_a_folder_of_jpeg_images_in_a_zip_at_their_resolution():
    dpi, degradation = SCANNERS["phone-300"]
    assert dpi == 300
    assert abs(degradation.angle) <= 2
    pdf = debian_pdf("bzip2")
    jpegs = scan_jpegs(pdf, 9, 10, degradation, dpi=60)
    assert jpegs == scan_jpegs(pdf, 9, 10, degradation, dpi=60)  # seeded: the same bytes on every run
    archive = zipfile.ZipFile(io.BytesIO(scans_zip(jpegs, folder="bzip2", first=9)))
    assert archive.namelist() == ["bzip2/page-9.jpg", "bzip2/page-10.jpg"]
    with Image.open(io.BytesIO(archive.read("bzip2/page-10.jpg"))) as image:
        assert image.format == "JPEG"
        assert image.info["dpi"] == (60, 60)
