"""The measures of bench/bench_fidelity.py on small hand-made inputs, so the bench measures
what it says; and the corpus helpers on a real Debian book."""

from __future__ import annotations

import shutil

import pytest

from bench import fidelity
from bench.fidelity import SourceLine
from tests.support.corpus import debian_pdf, pages_render, pdf_page_count, scan_pages

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
