"""The book-structure library (bookstructure): page furniture and paragraphs.

Hand-made layouts pin each rule exactly; real Debian manuals (tests/support/corpus.py),
read by projects/intake/layout.py, are checked against what poppler's `pdftotext -layout` shows
on the same pages.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from bookstructure.furniture import furniture_detect
from bookstructure.lines import page_lines
from bookstructure.paragraphs import BookText, book_text_build, lines_join
from bookstructure.words import Vocabulary, hyphenation_resolve, vocabulary_collect, word_list
from projects.intake.layout import pdf_layouts
from tests.support.corpus import debian_pdf

Line = tuple[float, float, float, str]  # x0, top, x1, text (10-point lines, 12 high)


def _layout(*blocks: Sequence[Line], height: float = 792.0) -> dict[str, Any]:
    return {
        "version": 1,
        "source": "pdf",
        "width": 612.0,
        "height": height,
        "blocks": [
            {
                "bbox": [
                    min(line[0] for line in block),
                    block[0][1],
                    max(line[2] for line in block),
                    block[-1][1] + 12,
                ],
                "lines": [
                    {
                        "bbox": [x0, top, x1, top + 12],
                        "spans": [
                            {
                                "text": text,
                                "font": "Times-Roman",
                                "size": 10.0,
                                "bold": False,
                                "italic": False,
                                "mono": False,
                            }
                        ],
                    }
                    for x0, top, x1, text in block
                ],
            }
            for block in blocks
        ],
    }


def _body(top: float, *texts: str) -> list[Line]:
    """Full-width body lines, 14 points apart."""
    return [(72.0, top + 14 * index, 540.0, text) for index, text in enumerate(texts)]


def _page_body(n: int) -> list[Line]:
    """A page's worth of body text: lines close together from the top margin down."""
    return _body(72.0, f"Body text of page {n}.", *(f"and its line {line}," for line in range(40)), "ends here.")


def _furniture(layouts: Sequence[dict[str, Any]]) -> list[list[tuple[str, str]]]:
    return [[(line.kind.value, line.text) for line in page.lines] for page in furniture_detect(layouts).pages]


def _texts(book: BookText) -> list[list[str]]:
    return [[paragraph.text for paragraph in page.paragraphs] for page in book.pages]


NO_WORDS: frozenset[str] = frozenset()


# --- Page furniture -------------------------------------------------------------------


def test_running_header_and_page_numbers_are_furniture_and_the_body_is_not() -> None:
    layouts = [
        _layout([(250.0, 36.0, 360.0, "A Book of Tests")], _page_body(n), [(300.0, 740.0, 310.0, str(n + 1))])
        for n in range(6)
    ]

    found = _furniture(layouts)

    assert found == [[("header", "A Book of Tests"), ("page_number", str(n + 1))] for n in range(6)]


def test_alternating_headers_on_even_and_odd_pages_are_both_running_headers() -> None:
    def header(n: int) -> Line:
        return (
            (72.0, 36.0, 200.0, "The Book Title")
            if n % 2 == 0
            else (400.0, 36.0, 540.0, f"Chapter {n // 4 + 1}: Tests")
        )

    layouts = [_layout([header(n)], _page_body(n)) for n in range(8)]

    assert [page[0][1] for page in _furniture(layouts)] == [header(n)[3] for n in range(8)]


def test_running_header_of_a_one_page_chapter_fills_the_header_slot() -> None:
    titles = ["Intro"] * 4 + ["Short chapter"] + ["Reference"] * 4
    layouts = [_layout([(400.0, 36.0, 540.0, title)], _page_body(n)) for n, title in enumerate(titles)]

    assert [page for page in _furniture(layouts)] == [[("header", title)] for title in titles]


def test_body_line_repeated_at_the_top_of_scattered_pages_is_not_a_header() -> None:
    layouts = [
        _layout(_body(72.0, "BZ_CONFIG_ERROR", "if the library has been mis-compiled"), _body(110.0, "Other lines."))
        if n in (1, 5, 9)
        else _layout(_page_body(n))
        for n in range(11)
    ]

    assert _furniture(layouts) == [[] for _ in range(11)]


def test_listing_line_numbers_running_across_a_page_break_are_body_text() -> None:
    layouts = [
        _layout(_body(72.0, "Text."), [(300.0, 740.0, 310.0, "1")]),
        _layout(_body(72.0, "Code:"), [(72.0, 700.0, 84.0, "11")], [(300.0, 740.0, 310.0, "2")]),
        _layout([(72.0, 72.0, 84.0, "12")], _body(100.0, "More code."), [(300.0, 740.0, 310.0, "3")]),
        _layout(_body(72.0, "End."), [(300.0, 740.0, 310.0, "4")]),
    ]

    assert _furniture(layouts) == [[("page_number", str(n))] for n in range(1, 5)]


@pytest.mark.parametrize(
    "numbers",
    [
        [f"Page {n}" for n in range(3, 7)],
        [f"{n} / 120" for n in range(3, 7)],
        [f"{n} of 120" for n in range(3, 7)],
        [f"- {n} -" for n in range(3, 7)],
        ["iii", "iv", "v", "vi"],
        ["III", "IV", "V", "VI"],
    ],
)
def test_page_numbers_in_their_usual_styles_are_found(numbers: list[str]) -> None:
    layouts = [_layout(_page_body(n), [(280.0, 740.0, 330.0, number)]) for n, number in enumerate(numbers)]

    assert _furniture(layouts) == [[("page_number", number)] for number in numbers]


def test_a_lone_number_at_the_foot_of_one_page_is_body_text() -> None:
    layouts = [_layout(_page_body(n), *([[(300.0, 740.0, 312.0, "42")]] if n == 2 else [])) for n in range(5)]

    assert _furniture(layouts) == [[] for _ in range(5)]


# --- Hyphenation ----------------------------------------------------------------------

EMPTY = Vocabulary(words=frozenset(), compounds=frozenset())


@pytest.mark.parametrize(
    ("head", "tail", "words", "vocabulary", "kept"),
    [
        ("Pen-", "tium", NO_WORDS, EMPTY, False),  # an unknown word split by the typesetter
        ("Dig-", "ital", "en", EMPTY, False),  # a known word
        ("decompres-", "sion", "en", EMPTY, False),
        ("well-", "known", NO_WORDS, vocabulary_collect(["a well-known fact"]), True),  # the book's compound
        ("data-", "base", NO_WORDS, vocabulary_collect(["the database and a well-known fact"]), False),
        ("non-", "existing", "en", EMPTY, True),  # two words, no whole word
        ("--gen-", "suppressions=yes", "en", EMPTY, True),  # an option
        ("day-to-", "day", "en", EMPTY, True),  # already a compound
        ("x86-", "64", "en", EMPTY, True),
        ("Anglo-", "Saxon", "en", EMPTY, True),
        ("co\u00ad", "operate", NO_WORDS, EMPTY, False),  # a soft hyphen
        ("/usr/lo-", "cal/src/", "en", EMPTY, False),  # a word inside a path
        ('"?CUR-', 'RENT"', "en", EMPTY, False),  # a keyword in quotes
        ("--enable-", "shared", "en", EMPTY, True),  # an option's own hyphen
    ],
)
def test_hyphenation_at_a_line_end_is_rejoined_unless_it_is_a_real_hyphen(
    head: str, tail: str, words: object, vocabulary: Vocabulary, kept: bool
) -> None:
    chosen = word_list("en") if words == "en" else NO_WORDS

    assert hyphenation_resolve(head, tail, vocabulary=vocabulary, words=chosen) is kept


def test_a_language_without_a_word_list_still_rejoins_by_the_books_vocabulary() -> None:
    assert "digital" not in word_list("sw")

    book = book_text_build(
        [_layout(_body(72.0, "A well-known and", "well-", "known fact, dig-", "ital."))], words=word_list("sw")
    )

    assert _texts(book) == [["A well-known and well-known fact, digital."]]


# --- Paragraphs -----------------------------------------------------------------------


def test_block_lines_split_into_paragraphs_on_gap_indent_short_line_and_bullet() -> None:
    block = [
        (72.0, 100.0, 540.0, "First paragraph runs over"),
        (72.0, 114.0, 300.0, "two lines."),
        (72.0, 128.0, 540.0, "Second starts after a short line"),
        (72.0, 142.0, 540.0, "and a capital."),
        (90.0, 156.0, 540.0, "Third is indented and runs"),
        (72.0, 170.0, 540.0, "on at the left edge"),
        (72.0, 184.0, 540.0, "to its end"),
        (72.0, 210.0, 540.0, "Fourth stands after a gap."),
        (72.0, 224.0, 540.0, "• a bullet item"),
    ]

    book = book_text_build([_layout(block)], words=NO_WORDS)

    assert _texts(book) == [
        [
            "First paragraph runs over two lines.",
            "Second starts after a short line and a capital.",
            "Third is indented and runs on at the left edge to its end",
            "Fourth stands after a gap.",
            "• a bullet item",
        ]
    ]


# As the shared-mime-info specification sets its list: each item's second line under its text,
# not under its bullet; the last item wrapped too, a paragraph after a gap.
HANGING_LIST = [
    (72.0, 100.0, 540.0, "• <MIME>/XMLnamespaces (a mapping from XML pairs to"),
    (84.0, 114.0, 160.0, "MIME types)"),
    (72.0, 128.0, 540.0, "• <MIME>/MEDIA/SUBTYPE.xml (one file for each type, including"),
    (84.0, 142.0, 260.0, "comment, icon and generic-icon)"),
    (72.0, 156.0, 540.0, "• <MIME>/mime.cache (the same information as the globs2,"),
    (84.0, 170.0, 300.0, "in a binary, mmappable format)"),
    (72.0, 196.0, 540.0, "The format of these files is explained below."),
]


@pytest.mark.parametrize(
    "blocks", [[HANGING_LIST], [[line] for line in HANGING_LIST]], ids=["one block", "a block per line"]
)
def test_a_list_item_wrapped_with_a_hanging_indent_is_one_item(blocks: list[list[Line]]) -> None:
    book = book_text_build([_layout(*blocks)], words=NO_WORDS)

    assert _texts(book) == [
        [
            "• <MIME>/XMLnamespaces (a mapping from XML pairs to MIME types)",
            "• <MIME>/MEDIA/SUBTYPE.xml (one file for each type, including comment, icon and generic-icon)",
            "• <MIME>/mime.cache (the same information as the globs2, in a binary, mmappable format)",
            "The format of these files is explained below.",
        ]
    ]


def test_an_indented_paragraph_after_a_one_line_item_still_starts_a_paragraph() -> None:
    block = [
        (72.0, 100.0, 540.0, "• a one-line item"),
        (90.0, 114.0, 540.0, "An indented first line"),
        (72.0, 128.0, 540.0, "goes on at the left edge."),
    ]

    book = book_text_build([_layout(block)], words=NO_WORDS)

    assert _texts(book) == [["• a one-line item", "An indented first line goes on at the left edge."]]


def test_paragraph_cut_by_a_page_break_is_one_paragraph_on_the_page_where_it_starts() -> None:
    def page(n: int, *blocks: Sequence[Line]) -> dict[str, Any]:
        return _layout([(400.0, 36.0, 540.0, "Running Head")], *blocks, [(300.0, 740.0, 310.0, str(n))])

    layouts = [
        page(
            1,
            [
                (72.0, 72.0, 200.0, "Opening sentence."),
                (72.0, 86.0, 540.0, "When we speak of free software, we are refer-"),
            ],
        ),
        page(2, _body(72.0, "ring to freedom, not price. The whole"), _body(110.0, "Second paragraph.")),
        page(3, _body(72.0, "Third page text.")),
    ]

    book = book_text_build(layouts, words=word_list("en"))

    assert _texts(book) == [
        ["Opening sentence.", "When we speak of free software, we are referring to freedom, not price. The whole"],
        ["Second paragraph."],
        ["Third page text."],
    ]
    carried = book.pages[0].paragraphs[1]
    assert (carried.page, carried.end_page, carried.carried, carried.kind.value) == (0, 1, True, "paragraph")
    assert [page.carried_from for page in book.pages] == [None, 0, None]


@pytest.mark.parametrize(
    "next_page",
    [
        _body(72.0, "New paragraph after a full stop."),
        [(90.0, 72.0, 540.0, "an indented first line"), (72.0, 86.0, 540.0, "starts a paragraph.")],
        _body(72.0, "• a bullet"),
    ],
)
def test_paragraph_is_not_carried_when_the_next_page_starts_a_new_one(next_page: list[Line]) -> None:
    ending = "ends with a sentence." if next_page[0][3].startswith("New") else "ends without one"
    layouts = [_layout(_body(72.0, "Text that", ending)), _layout(next_page)]

    book = book_text_build(layouts, words=NO_WORDS)

    assert [page.carried_from for page in book.pages] == [None, None]
    assert len(book.pages[1].paragraphs) == 1


# --- Real books -----------------------------------------------------------------------


@cache
def _poppler_pages(name: str, first: int, last: int) -> tuple[tuple[str, ...], ...]:
    """Each page's non-blank lines as `pdftotext -layout` prints them, stripped."""
    text = subprocess.run(
        ["pdftotext", "-layout", "-f", str(first), "-l", str(last), str(debian_pdf(name)), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return tuple(
        tuple(" ".join(line.split()) for line in page.splitlines() if line.strip())
        for page in text.split("\f")[: last - first + 1]
    )


def _expected_furniture(name: str, first: int, last: int) -> list[set[str]]:
    """What poppler shows as furniture: a first line that repeats as the first line of a
    page nearby, and a last line that is a page number."""
    pages = _poppler_pages(name, first, last)
    expected: list[set[str]] = []
    for index, lines in enumerate(pages):
        found: set[str] = set()
        nearby = [
            pages[other][0]
            for other in range(max(0, index - 2), min(len(pages), index + 3))
            if other != index and pages[other]
        ]
        if lines and lines[0] in nearby:
            found.add(lines[0])
        if lines and re.fullmatch(r"\d+|[ivxlc]+", lines[-1]):
            found.add(lines[-1])
        expected.append(found)
    return expected


@cache
def _real_book(name: str, first: int, last: int) -> tuple[list[dict[str, Any]], BookText]:
    layouts = pdf_layouts(Path(debian_pdf(name)), first=first, last=last)
    return layouts, book_text_build(layouts, words=word_list("en"))


@pytest.mark.parametrize(("name", "first", "last"), [("bzip2", 4, 23), ("valgrind", 20, 39)])
def test_real_manual_furniture_is_what_repeats_on_its_pages_and_nothing_else(name: str, first: int, last: int) -> None:
    layouts, _ = _real_book(name, first, last)

    found = [{line.text for line in page.lines} for page in furniture_detect(layouts).pages]

    assert found == _expected_furniture(name, first, last)
    assert sum(len(page) for page in found) >= 35  # a header and a number on nearly every page


@pytest.mark.parametrize(("name", "first", "last"), [("bzip2", 4, 23), ("valgrind", 20, 39)])
def test_real_manual_sentences_cut_by_a_page_break_are_joined(name: str, first: int, last: int) -> None:
    _, book = _real_book(name, first, last)
    pages = _poppler_pages(name, first, last)
    furniture = _expected_furniture(name, first, last)
    bodies = [[line for line in lines if line not in found] for lines, found in zip(pages, furniture, strict=True)]
    heading = re.compile(r"\d+(\.\d+)*\. ")
    cut = [
        index
        for index in range(len(bodies) - 1)
        if bodies[index]
        and bodies[index + 1]
        and not re.search(r"[.:!?]$", bodies[index][-1])
        and not heading.match(bodies[index][-1])
        and re.match(r"[a-z0-9_]", bodies[index + 1][0])
        and not heading.match(bodies[index + 1][0])
    ]

    carried = [index for index, page in enumerate(book.pages) if page.carried_from is not None]

    assert cut
    assert [index + 1 for index in cut] == carried
    for index in cut:
        paragraph = book.pages[index].paragraphs[-1] if book.pages[index].paragraphs else None
        last_words, first_words = bodies[index][-1].split()[-2:], bodies[index + 1][0].split()[:2]
        assert paragraph is not None
        assert paragraph.carried
        assert " ".join(last_words + first_words).rstrip("-") in paragraph.text.replace("- ", "-")


def test_real_manual_words_hyphenated_at_line_ends_are_rejoined_and_options_keep_theirs() -> None:
    _, bzip2 = _real_book("bzip2", 4, 38)
    _, valgrind = _real_book("valgrind", 20, 39)
    bzip2_text = " ".join(paragraph.text for page in bzip2.pages for paragraph in page.paragraphs)
    valgrind_text = " ".join(paragraph.text for page in valgrind.pages for paragraph in page.paragraphs)

    for split in ("decompres-sion", "compati-bility", "indi-cating", "Be-fore", "col-lect", "compres-sion"):
        assert split not in bzip2_text
        assert split.replace("-", "") in bzip2_text
    for option in ("--gen-suppressions=yes", "--error-exitcode", "--log-file"):
        assert option in valgrind_text


def test_a_span_glued_to_the_word_before_it_is_read_without_a_space():
    line = {
        "bbox": [72.0, 100.0, 300.0, 112.0],
        "spans": [
            {"text": "Run", "font": "Times-Roman", "size": 10.0, "bold": False, "italic": False, "mono": False},
            {"text": "bzip2", "font": "Courier", "size": 10.0, "bold": False, "italic": False, "mono": True},
            {
                "text": ", then",
                "font": "Times-Roman",
                "size": 10.0,
                "bold": False,
                "italic": False,
                "mono": False,
                "glued": True,
            },
        ],
    }
    layout = {
        "version": 1,
        "source": "pdf",
        "width": 612.0,
        "height": 792.0,
        "blocks": [{"bbox": line["bbox"], "lines": [line]}],
    }

    (read,) = page_lines(layout, page=1)

    assert read.text == "Run bzip2, then"


# --- Markdown of a page ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "joined"),
    [
        (["by Richard Stallman (`https://www.stallman.`", "`org/`). FSF"], "(`https://www.stallman.org/`). FSF"),
        (["the Guide (`https:`", "`//www.debian.org/releases/`) for"], "(`https://www.debian.org/releases/`) for"),
        (["see https://example.org/a-", "long-path now"], "see https://example.org/a-long-path now"),
        (["files in `/etc/`", "`/var/` too"], "files in `/etc/` `/var/` too"),  # two paths, not one
    ],
)
def test_a_url_broken_at_a_line_end_is_one_url(lines: list[str], joined: str) -> None:
    assert lines_join(lines, vocabulary=EMPTY, words=NO_WORDS).endswith(joined)


def test_a_page_reads_as_markdown_headings_code_lists_and_escaped_prose() -> None:
    def spans(text: str, *, size: float = 10.0, mono: bool = False, bold: bool = False) -> list[dict[str, Any]]:
        return [{"text": text, "size": size, "mono": mono, "bold": bold}]

    def block(top: float, *lines: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "bbox": [72.0, top, 540.0, top + 14.0 * len(lines)],
            "lines": [
                {
                    "bbox": [72.0, top + 14.0 * n, 72.0 + 6.0 * len(line[0]["text"]), top + 14.0 * n + 10.0],
                    "spans": line,
                }
                for n, line in enumerate(lines)
            ],
        }

    layout = {
        "width": 612.0,
        "height": 792.0,
        "blocks": [
            block(72.0, spans("2.5. Memory management", size=14.0)),
            block(100.0, [*spans("Use"), *spans("--fast", mono=True), *spans("on a_b *files*.")]),
            block(130.0, spans("int main(void)", mono=True), spans("  return 0;", mono=True)),
            block(170.0, spans("\u2022 an item")),
            block(190.0, spans("1. not a list, a sentence.")),
            # code broken at a line's end is one code span
            block(
                210.0,
                [*spans("It fills"), *spans("dest[0 ..", mono=True)],
                [*spans("*destLen-1]", mono=True), *spans("in place.")],
            ),
        ],
    }

    (page,) = book_text_build([layout], words=NO_WORDS, furniture=furniture_detect([])).pages

    assert page.markdown == (
        "## 2.5. Memory management\n\n"
        "Use `--fast` on a\\_b \\*files\\*.\n\n"
        "```\nint main(void)\nreturn 0;\n```\n\n"
        "- an item\n\n"
        "1\\. not a list, a sentence.\n\n"
        "It fills `dest[0 .. *destLen-1]` in place."
    )


def test_a_footnote_mark_on_a_line_of_its_own_ends_its_paragraph_as_a_superscript() -> None:
    block = {
        "bbox": [72.0, 100.0, 540.0, 140.0],
        "lines": [
            {"bbox": [72.0, 100.0, 400.0, 110.0], "spans": [{"text": "Sid destroyed toys :-)", "size": 10.0}]},
            {"bbox": [72.0, 112.0, 78.0, 118.0], "spans": [{"text": "1", "size": 6.0}]},
        ],
    }
    body = {
        "bbox": [72.0, 200.0, 540.0, 210.0],
        "lines": [
            {"bbox": [72.0, 200.0, 540.0, 210.0], "spans": [{"text": "More body text follows here.", "size": 10.0}]}
        ],
    }
    layout = {"width": 612.0, "height": 792.0, "blocks": [block, body]}

    (page,) = book_text_build([layout], words=NO_WORDS, furniture=furniture_detect([])).pages

    assert page.markdown == "Sid destroyed toys :-)\u00b9\n\nMore body text follows here."


def test_contents_entries_are_one_paragraph_each_their_leaders_one_ellipsis() -> None:
    block = [
        (72.0, 100.0, 540.0, "1.1 What is this FAQ? . . . . . . . . . . . . . . . 1"),
        (72.0, 114.0, 540.0, "1.5 What is the difference between Debian and other distributions? Why"),
        (72.0, 128.0, 500.0, "should I choose Debian? . . . . . . . . . . . . . . ."),
        (72.0, 142.0, 540.0, "1.6 How does one pronounce Debian? . . . . . . . . . 3"),
    ]

    (page,) = book_text_build([_layout(block)], words=NO_WORDS).pages

    assert page.markdown == (
        "1.1 What is this FAQ? \u2026 1\n\n"
        "1.5 What is the difference between Debian and other distributions? Why should I choose Debian? \u2026\n\n"
        "1.6 How does one pronounce Debian? \u2026 3"
    )
