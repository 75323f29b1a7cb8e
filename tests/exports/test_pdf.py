"""The Pdf export, checked with the real tools: poppler's pdftoppm renders every page,
pdftotext gives the words back (right-to-left text in logical order), pdffonts shows every
font embedded. Skipped only where poppler or the Debian font packages are missing."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reportlab.lib.pagesizes import A4

from exports.blocks import Run, plain_text_of
from exports.book import RTL_LANGUAGES, ExportBook, ExportOptions, ExportPage, page_notice
from exports.renderers import renderer_for
from exports.renderers._pdf_bidi import embedding_levels, paragraph_level, visual_order
from exports.renderers._pdf_fonts import FONT_PACKAGES, ensure_fonts, missing_font_files
from exports.renderers._pdf_text import ShapedParagraph, TextStyle, text_flowable
from exports.renderers.pdf import PdfRenderer
from tests.exports.books import SAMPLES, SOURCE, sample_book

POPPLER = ("pdftoppm", "pdftotext", "pdffonts", "pdfinfo")
LANGUAGES = ("en", "ar", "he", "hi", "ja", "zh", "ko", "ru", "el")
# The font each language's text is set in (pdffonts names the embedded subsets).
EXPECTED_FONT = {
    "en": "NotoSerif-Regular",
    "ru": "NotoSerif-Regular",
    "el": "NotoSerif-Regular",
    "ar": "NotoNaskhArabic-Regular",
    "he": "NotoSerifHebrew-Regular",
    "hi": "NotoSerifDevanagari-Regular",
    "ja": "IPAMincho",
    "zh": "WenQuanYiMicroHei",
    "ko": "NanumMyeongjo",
}

needs_tools = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in POPPLER) or bool(missing_font_files()),
    reason=f"needs poppler-utils and the font packages {' '.join(FONT_PACKAGES)}",
)


def render(book: ExportBook, options: ExportOptions, tmp_path: Path, name: str = "book.pdf") -> Path:
    out = io.BytesIO()
    PdfRenderer().render(book, options, out)
    path = tmp_path / name
    path.write_bytes(out.getvalue())
    return path


def run_tool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(arg) for arg in args], capture_output=True, text=True, timeout=120, check=False)


def text_of(pdf: Path, *, raw: bool = False, page: int | None = None, half: str = "") -> str:
    """The text of the file, of one page, or of the left or right half of its pages."""
    pages = ["-f", str(page), "-l", str(page)] if page else []
    width, height = A4
    crop = {"left": (0, width / 2), "right": (width / 2, width / 2)}.get(half)
    area = ["-x", str(int(crop[0])), "-y", "0", "-W", str(int(crop[1])), "-H", str(int(height))] if crop else []
    result = run_tool("pdftotext", *(["-raw"] if raw else []), *pages, *area, "-enc", "UTF-8", pdf, "-")
    assert result.returncode == 0, result.stderr
    return result.stdout


def squashed(text: str) -> str:
    """Letters, marks and digits only, in order: what must survive extraction whatever
    the line breaks, the spacing, the bidi controls pdftotext adds or where it puts
    punctuation around right-to-left text."""
    normal = unicodedata.normalize("NFKC", text)
    return "".join(char for char in normal if unicodedata.category(char)[0] in "LMN")


def page_count(pdf: Path) -> int:
    result = run_tool("pdfinfo", pdf)
    assert result.returncode == 0, result.stderr
    match = re.search(r"^Pages:\s+(\d+)$", result.stdout, re.MULTILINE)
    assert match is not None
    return int(match.group(1))


def pdf_info(pdf: Path) -> dict[str, str]:
    result = run_tool("pdfinfo", pdf)
    return dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)


def assert_renders_every_page(pdf: Path, tmp_path: Path) -> None:
    pages = page_count(pdf)
    result = run_tool("pdftoppm", "-r", "36", "-png", pdf, tmp_path / "sheet")
    assert result.returncode == 0
    assert result.stderr == ""
    assert len(list(tmp_path.glob("sheet*.png"))) == pages


def assert_contains_text(extracted: str, expected: str) -> None:
    assert squashed(expected), expected
    assert squashed(expected) in squashed(extracted), f"{expected!r} not in the extracted text:\n{extracted}"


def assert_contains_words(extracted: str, expected: str) -> None:
    """Every word of `expected` is in the extracted text. For a sheet that mixes directions
    (an RTL book with a failed page's English original): pdftotext reads a sheet in one
    direction, so right-to-left lines may come back in visual order; the order of each
    script is checked on sheets of one direction (test_pdf_right_to_left_...)."""
    found = {squashed(word) for word in extracted.split()}
    missing = {squashed(word) for word in expected.split()} - found - {""}
    assert not missing, f"{missing} of {expected!r} not in the extracted text:\n{extracted}"


def assert_fonts_embedded(pdf: Path) -> list[str]:
    """Every font of the PDF is embedded; returns their names."""
    result = run_tool("pdffonts", pdf)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[2:]
    assert rows
    names = []
    for row in rows:
        columns = row.split()
        emb = columns[-5]  # name type encoding emb sub uni object ID
        assert emb == "yes", row
        names.append(columns[0])
    return names


def outline_titles(pdf: Path) -> list[str]:
    """The /Title strings of the file (the outline's entries and the document's title)."""
    return [_pdf_string(match.group(1)) for match in re.finditer(rb"/Title \(((?:\\.|[^\\)])*)\)", pdf.read_bytes())]


def _pdf_string(literal: bytes) -> str:
    escapes = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}

    def unescape(match: re.Match[bytes]) -> bytes:
        body = match.group(1)
        if body[:1].isdigit():
            return bytes([int(body, 8)])
        return escapes.get(body, body)

    raw = re.sub(rb"\\([0-7]{1,3}|.)", unescape, literal)
    return raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("pdfdoc")


def one_page_book(language: str, translation: str, *, source: str = SOURCE) -> ExportBook:
    def pages() -> Iterator[ExportPage]:
        yield ExportPage(
            index=1,
            translated=True,
            translation=translation,
            source_text=source,
            failed=False,
            failure_reason="",
            image_key="projects/sample/pages/1.png",
        )

    return ExportBook(
        identifier="3f2b1c4e-8d9a-4b7e-9c1d-2e3f4a5b6c7d",
        title="Mixed",
        language=language,
        source_language="en",
        created_at=datetime(2026, 11, 22, 12, 0, tzinfo=UTC),
        page_count=1,
        status="Complete",
        pages=pages,
    )


def test_pdf_renderer_is_the_registered_pdf_format() -> None:
    renderer = renderer_for("Pdf")
    assert isinstance(renderer, PdfRenderer)
    assert (renderer.format, renderer.extension, renderer.mime_type) == ("Pdf", "pdf", "application/pdf")


@needs_tools
@pytest.mark.parametrize("language", LANGUAGES)
def test_pdf_renders_every_page_and_gives_the_words_back(language: str, tmp_path: Path) -> None:
    book = sample_book(language, pages=4, failed=frozenset({2}))
    pdf = render(book, ExportOptions(page_markers=True), tmp_path)

    assert_renders_every_page(pdf, tmp_path)
    text = text_of(pdf)
    contains = assert_contains_words if language in RTL_LANGUAGES else assert_contains_text
    for page in book.pages():
        if not page.translated:
            assert_contains_text(text, page_notice(page, book.labels))
            assert_contains_text(text, SOURCE)  # the failed page keeps its original text
            continue
        for block in plain_text_of(page.translation).split("\n\n"):
            contains(text, block)
    assert EXPECTED_FONT[language] in " ".join(assert_fonts_embedded(pdf))


def rendered_with_its_text(language: str, translation: str, tmp_path: Path) -> Path:
    """A one-page book of the translation rendered to PDF, whose text extracts as the
    translation; the file."""
    pdf = render(one_page_book(language, translation), ExportOptions(), tmp_path)
    assert_contains_text(text_of(pdf), translation)
    return pdf


@needs_tools
@pytest.mark.parametrize("language", ["ar", "he"])
def test_pdf_right_to_left_text_comes_back_in_logical_order_not_reversed(language: str, tmp_path: Path) -> None:
    sentence = SAMPLES[language].split("\n\n")[-1]
    pdf = render(one_page_book(language, sentence), ExportOptions(), tmp_path)

    text = squashed(text_of(pdf))
    assert squashed(sentence) in text
    reversed_words = " ".join(reversed(sentence.split()))
    assert squashed(reversed_words) not in text
    assert squashed(sentence[::-1]) not in text


@needs_tools
def test_pdf_keeps_latin_names_and_numbers_inside_arabic_text_in_reading_order(tmp_path: Path) -> None:
    translation = "زار John Smith مدينة New York عام 1984 مع أطفاله."
    pdf = rendered_with_its_text("ar", translation, tmp_path)

    fonts = " ".join(assert_fonts_embedded(pdf))
    assert "NotoNaskhArabic" in fonts
    assert "NotoSerif" in fonts


@needs_tools
def test_pdf_gives_back_hindi_conjuncts_and_vowel_signs(tmp_path: Path) -> None:
    translation = "किताब लिए क्षत्रिय प्रेम श्री हिन्दी बच्चे में।"
    pdf = rendered_with_its_text("hi", translation, tmp_path)

    assert "किताब लिए क्षत्रिय प्रेम श्री हिन्दी बच्चे में" in text_of(pdf, page=2)


@needs_tools
def test_pdf_sets_mixed_scripts_each_in_its_own_font(tmp_path: Path) -> None:
    translation = "An English line with العربية and עברית, हिन्दी, 日本語 and かな, 中文, 한국어."
    pdf = rendered_with_its_text("en", translation, tmp_path)

    fonts = " ".join(assert_fonts_embedded(pdf))
    for expected in ("NotoSerif-Regular", "NotoNaskhArabic", "NotoSerifHebrew", "NotoSerifDevanagari", "IPAMincho"):
        assert expected in fonts


@needs_tools
def test_pdf_sets_code_in_a_monospace_font_with_its_indents_and_columns(tmp_path: Path) -> None:
    translation = "Run `make` first:\n\n```\nFlag    usage    Size\n -1    1200k   914704\n -9    7600k   828642\n```"
    pdf = render(one_page_book("en", translation), ExportOptions(), tmp_path)

    assert "DejaVuSansMono" in " ".join(assert_fonts_embedded(pdf))
    laid_out = run_tool("pdftotext", "-layout", "-enc", "UTF-8", pdf, "-").stdout.splitlines()
    rows = [line for line in laid_out if re.search(r"Flag|1200k|7600k", line)]
    assert [line.strip().split() for line in rows] == [
        ["Flag", "usage", "Size"],
        ["-1", "1200k", "914704"],
        ["-9", "7600k", "828642"],
    ]
    # Columns line up: each row's cells start where the header's do (a monospace font, no
    # spaces collapsed), and the indented rows stand one character in.
    starts = [[match.start() for match in re.finditer(r"\S+", line)] for line in rows]
    assert starts[1][1:] == starts[2][1:]
    assert starts[1][0] > starts[0][0]


@needs_tools
@pytest.mark.parametrize("language", ["en", "ar", "ja"])
def test_pdf_shows_page_markers_only_when_asked(language: str, tmp_path: Path) -> None:
    book = sample_book(language, pages=3)
    with_markers = text_of(render(book, ExportOptions(page_markers=True), tmp_path, "markers.pdf"), raw=True)
    without = text_of(render(book, ExportOptions(), tmp_path, "plain.pdf"), raw=True)

    for index in (1, 2, 3):
        assert re.search(rf"—\s*{index}\s*—", with_markers)
        assert not re.search(rf"—\s*{index}\s*—", without)


@needs_tools
def test_pdf_marks_failed_and_untranslated_pages_visibly(tmp_path: Path) -> None:
    book = sample_book("ru", pages=4, failed=frozenset({2}), untranslated=frozenset({3}))
    pdf = render(book, ExportOptions(partial=True), tmp_path)

    text = text_of(pdf)
    assert_contains_text(text, "[Страницу 2 не удалось перевести: сбой системы перевода.")  # the book's language
    assert_contains_text(text, "[Страница 3 ещё не переведена.]")
    assert_renders_every_page(pdf, tmp_path)


@needs_tools
@pytest.mark.parametrize("language", ["ar", "ja", "hi"])
def test_pdf_bilingual_puts_source_and_translation_side_by_side(language: str, tmp_path: Path) -> None:
    book = sample_book(language, pages=3, failed=frozenset({2}))
    pdf = render(book, ExportOptions(bilingual=True), tmp_path)

    assert_renders_every_page(pdf, tmp_path)
    # Sheet 1 is the title page; book pages 1 and 2 share sheet 2 (page 3 opens a chapter).
    source = text_of(pdf, page=2, half="left")
    translation = text_of(pdf, page=2, half="right")
    assert squashed(source).count(squashed(SOURCE)) == 2  # the failed page's source too
    contains = assert_contains_words if language in RTL_LANGUAGES else assert_contains_text
    for block in plain_text_of(SAMPLES[language].format(n=1)).split("\n\n"):
        contains(translation, block)
    failed = next(page for page in book.pages() if page.failed)
    # In the book's language, and not saying the original follows: it stands in the left column.
    assert_contains_text(translation, page_notice(failed, book.labels, source_follows=False))
    assert squashed(book.labels.kept) not in squashed(translation)
    assert squashed(SOURCE) not in squashed(translation)
    assert EXPECTED_FONT[language] in " ".join(assert_fonts_embedded(pdf))


@needs_tools
def test_pdf_bilingual_columns_flow_over_several_sheets(tmp_path: Path) -> None:
    sentence = SAMPLES["ar"].split("\n\n")[-1]
    book = one_page_book("ar", " ".join([sentence] * 120), source=" ".join([SOURCE] * 40))
    pdf = render(book, ExportOptions(bilingual=True), tmp_path)

    assert page_count(pdf) >= 3
    assert_renders_every_page(pdf, tmp_path)
    assert squashed(text_of(pdf, half="right")).count(squashed(sentence)) >= 100
    assert squashed(text_of(pdf, half="left")).count(squashed(SOURCE)) >= 30
    for sheet in (2, 3):  # both columns continue on the next sheet
        assert squashed(sentence)[:12] in squashed(text_of(pdf, page=sheet, half="right"))
        assert squashed(SOURCE)[:12] in squashed(text_of(pdf, page=sheet, half="left"))


@needs_tools
def test_pdf_splits_a_long_right_to_left_paragraph_across_pages(tmp_path: Path) -> None:
    sentence = SAMPLES["he"].split("\n\n")[-1]
    pdf = render(one_page_book("he", " ".join([sentence] * 200)), ExportOptions(), tmp_path)

    assert page_count(pdf) >= 3
    assert_renders_every_page(pdf, tmp_path)
    assert squashed(text_of(pdf)).count(squashed(sentence)) >= 190


@needs_tools
def test_pdf_carries_title_language_author_and_a_chapter_outline(tmp_path: Path) -> None:
    book = sample_book("ar", pages=3, title="البيت القديم")
    pdf = render(book, ExportOptions(), tmp_path)

    info = pdf_info(pdf)
    assert info["Title"].strip() == "البيت القديم"
    assert info["Author"].strip() == "Book Translation Service"
    assert b"/Lang (ar)" in pdf.read_bytes()
    titles = outline_titles(pdf)
    for index in (1, 2, 3):
        assert f"الفصل {index}" in titles


@needs_tools
def test_pdf_outline_cuts_a_book_without_headings_every_n_pages(tmp_path: Path) -> None:
    def pages() -> Iterator[ExportPage]:
        for index in range(1, 6):
            yield ExportPage(index, True, f"Plain text of page {index}.", "", False, "", f"p/{index}.png")

    book = ExportBook("id", "No headings", "en", "en", datetime(2026, 1, 1, tzinfo=UTC), 5, "Complete", pages)
    pdf = render(book, ExportOptions(pages_per_chapter=2), tmp_path)

    titles = outline_titles(pdf)
    assert {"Pages 1\N{EN DASH}2", "Pages 3\N{EN DASH}4", "Page 5"} <= set(titles)
    assert_contains_text(text_of(pdf), "Plain text of page 5.")


@needs_tools
def test_pdf_of_a_book_without_pages_or_title_is_still_a_valid_file(tmp_path: Path) -> None:
    book = ExportBook("id", " ", "he", None, datetime(2026, 1, 1, tzinfo=UTC), 0, "Complete", lambda: iter(()))
    pdf = render(book, ExportOptions(bilingual=True, page_markers=True), tmp_path)

    assert page_count(pdf) == 1
    assert_renders_every_page(pdf, tmp_path)


def test_bidi_levels_of_mixed_text_follow_the_paragraph_direction() -> None:
    assert paragraph_level("abc אבג", default_rtl=True) == 0
    assert paragraph_level("אבג abc", default_rtl=False) == 1
    assert paragraph_level("1984", default_rtl=True) == 1
    assert embedding_levels("ab אב", 0) == [0, 0, 0, 1, 1]
    assert embedding_levels("אב 12 ab", 1) == [1, 1, 1, 2, 2, 1, 2, 2]
    # Numbers after Arabic letters are Arabic numbers: above the right-to-left level.
    assert embedding_levels("عام 1984", 1) == [1, 1, 1, 1, 2, 2, 2, 2]


def test_bidi_visual_order_reverses_right_to_left_runs() -> None:
    assert visual_order([0, 0, 0]) == [0, 1, 2]
    assert visual_order([1, 1, 1]) == [2, 1, 0]
    assert visual_order([1, 2, 2, 1]) == [3, 1, 2, 0]
    assert visual_order([0, 1, 1, 0]) == [0, 2, 1, 3]


@given(st.lists(st.integers(min_value=0, max_value=4), max_size=30))
def test_bidi_visual_order_is_a_permutation_reversing_a_uniform_odd_line(levels: list[int]) -> None:
    order = visual_order(levels)
    assert sorted(order) == list(range(len(levels)))
    if len(set(levels)) == 1:
        expected = list(range(len(levels)))
        assert order == (expected[::-1] if levels[0] % 2 else expected)


@given(st.text(alphabet="abc אבג123 ,.()", max_size=40), st.booleans())
def test_bidi_levels_are_one_per_character_and_never_below_the_paragraph(text: str, rtl: bool) -> None:
    base = paragraph_level(text, default_rtl=rtl)
    levels = embedding_levels(text, base)
    assert len(levels) == len(text)
    assert all(base <= level <= base + 2 for level in levels)


def drawn_lines(flowable: Any, tmp_path: Path) -> list[tuple[float, float]]:
    """Each line of `flowable` drawn 300 pt wide at x = 100, top to bottom, as poppler reads
    it: (its left edge, its right edge); words within 6 pt of a line's top are on it."""
    from reportlab.pdfgen.canvas import Canvas

    from tests.exports.test_pdf_original import words_with_boxes

    path = tmp_path / "drawn.pdf"
    canvas = Canvas(str(path), pagesize=A4)
    _, height = flowable.wrap(300, 700)
    flowable.drawOn(canvas, 100, 780 - height)
    canvas.save()
    lines: list[tuple[float, float, float]] = []
    for _, _, x0, y0, x1, *_ in sorted(words_with_boxes(path), key=lambda word: word[3]):
        if lines and y0 - lines[-1][0] <= 6:
            top, left, right = lines[-1]
            lines[-1] = (top, min(left, x0), max(right, x1))
        else:
            lines.append((y0, x0, x1))
    return [(left, right) for _, left, right in lines]


@needs_tools
def test_a_justified_right_to_left_paragraph_fills_every_line_but_its_last(tmp_path: Path) -> None:
    ensure_fonts()
    sentence = SAMPLES["he"].split("\n\n")[-1]
    flowable = text_flowable(
        [Run(" ".join([sentence] * 8))], TextStyle(align="justify"), language="he", default_rtl=True
    )
    assert isinstance(flowable, ShapedParagraph)

    *full, last = drawn_lines(flowable, tmp_path)

    assert len(full) >= 3
    for left, right in full:
        assert abs(left - 100) <= 2, (left, right)
        assert abs(right - 400) <= 2, (left, right)
    assert abs(last[1] - 400) <= 2  # the last line set from the right, not stretched
    assert last[0] > 110


@needs_tools
@pytest.mark.parametrize("language", ["en", "he"])
def test_a_list_items_wrapped_lines_hang_under_its_text_not_under_its_bullet(language: str, tmp_path: Path) -> None:
    ensure_fonts()
    text = " ".join([SAMPLES[language].split("\n\n")[-1]] * 6)
    flowable = text_flowable([Run(text)], TextStyle(), language=language, default_rtl=language == "he", prefix="\u2022")
    assert flowable is not None

    first, *rest = drawn_lines(flowable, tmp_path)

    assert len(rest) >= 2
    if language == "he":  # the bullet at the right edge, the wrapped lines end left of it
        assert abs(first[1] - 400) <= 2
        assert all(395 >= right >= 390 for _, right in rest), (first, rest)
    else:
        assert abs(first[0] - 100) <= 2
        assert all(105 <= left <= 110 for left, _ in rest), (first, rest)
