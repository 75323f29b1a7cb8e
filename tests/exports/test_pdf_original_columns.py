"""A page in columns in the original-layout Pdf (docs/exports.md, "The original layout"):
ASME's two-column sample paper (texlive-publishers-doc), its pages as normalize stores
them, translated by the stand-in (every word backwards), exported with `layout: original`
and read back with poppler: each column's translation is set in that column, a paragraph
the structure joined over a column break is set in both columns, and no translated word
stands in the gutter."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from exports.book import ExportOptions
from exports.renderers import renderer_for
from tests.exports.original_books import paper_book
from tests.exports.test_pdf_original import words_with_boxes

# ASME's paper: columns from x 36 to 292 and from 320 to 576 points, the gutter between.
GUTTER = (292.5, 319.5)
Word = tuple[int, str, float, float, float, float, float, float]


@cache
def _exported(folder: Path) -> list[Word]:
    book = paper_book("asmeconf", pages=2, folder=folder)
    out = folder / "original.pdf"
    with out.open("wb") as target:
        renderer_for("Pdf").render(book, ExportOptions(layout="original"), target)
    return words_with_boxes(out)


def _found(words: list[Word], page: int, text: str) -> Word:
    """The first (highest) of the page's words that read `text`, punctuation aside."""
    found = [word for word in words if word[0] == page and word[1].strip(".,;:()") == text]
    assert found, f"{text!r} is not on page {page}"
    return min(found, key=lambda word: word[3])


def test_each_columns_translation_is_set_in_its_column_and_none_crosses_the_gutter(tmp_path: Path) -> None:
    words = _exported(tmp_path)

    # Page 1: the abstract's words in the left column, the introduction's in the right.
    # "setting", the abstract's first line; "typesets", the introduction's first sentence:
    # each in its column, where the column starts (under the authors, set across the page).
    setting, typesets = _found(words, 1, "gnittes"), _found(words, 1, "stesepyt")
    assert setting[4] <= GUTTER[0]
    assert typesets[2] >= GUTTER[1]
    assert 290 < setting[3] < 340
    assert 290 < typesets[3] < 340
    assert _found(words, 1, "ERUTALCNEMON")[4] <= GUTTER[0]
    # Below the title and the authors (set across the page), nothing crosses the gutter.
    body = [word for word in words if word[3] > 290 and word[5] < 735]
    assert body
    assert not [word for word in body if word[4] > GUTTER[0] + 2 and word[2] < GUTTER[1] - 2]


def test_a_paragraph_joined_over_a_column_break_is_set_in_both_columns(tmp_path: Path) -> None:
    words = _exported(tmp_path)

    # Page 2: "... Do not enclose them braces, e.g. {\cite{..}}," ends the left column and
    # "which will cause errors." heads the right one, past the two tables: one paragraph,
    # its translation set over both places.
    enclose = _found(words, 2, "esolcne")
    errors = _found(words, 2, "srorre")
    assert enclose[4] <= GUTTER[0]
    assert errors[2] >= GUTTER[1]
    assert errors[3] < 300  # at the head of the right column, under the tables
