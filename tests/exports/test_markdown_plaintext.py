"""The Markdown and PlainText exports: the title first, every page in order with its
headings and paragraphs, failed and untranslated pages marked, page markers when asked,
UTF-8, and memory that does not grow with the book."""

from __future__ import annotations

import io
import re
import tracemalloc
from dataclasses import replace

import pytest
from markdown_it import MarkdownIt

from exports.blocks import blocks_of, plain_text_of
from exports.book import ExportBook, ExportOptions, page_notice
from exports.renderers import Renderer, renderer_for
from exports.renderers.markdown import MarkdownRenderer
from exports.renderers.plaintext import PlainTextRenderer
from tests.exports.books import SAMPLES, sample_book

LANGUAGES = sorted(SAMPLES)  # en, ar, he, hi, ja, ru and zh, ko, el
SIX_LANGUAGES = ["en", "ar", "he", "hi", "ja", "ru"]


class _Sink:
    """A binary stream that keeps nothing (so memory measures the renderer, not the output)."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        return len(data)


def _render(renderer: Renderer, book: ExportBook, options: ExportOptions | None = None) -> str:
    out = io.BytesIO()
    renderer.render(book, options or ExportOptions(), out)
    return out.getvalue().decode("utf-8")  # strict: fails if not UTF-8


def _heading(language: str, n: int) -> str:
    return blocks_of(SAMPLES[language].format(n=n))[0].text


def _paragraphs(language: str, n: int) -> list[str]:
    return [block.text for block in blocks_of(SAMPLES[language].format(n=n)) if block.kind == "paragraph"]


def _peak_memory(renderer: Renderer, pages: int) -> int:
    tracemalloc.start()
    try:
        renderer.render(
            sample_book("en", pages=pages, failed=frozenset({2})), ExportOptions(page_markers=True), _Sink()
        )
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_in_order(text: str, parts: list[str]) -> None:
    position = 0
    for part in parts:
        found = text.find(part, position)
        assert found >= 0, f"{part!r} missing or out of order after position {position}"
        position = found + len(part)


@pytest.mark.parametrize(
    ("export_format", "cls", "extension", "mime_type"),
    [
        ("Markdown", MarkdownRenderer, "md", "text/markdown; charset=utf-8"),
        ("PlainText", PlainTextRenderer, "txt", "text/plain; charset=utf-8"),
    ],
)
def test_registry_gives_the_text_renderers_with_their_file_types(export_format, cls, extension, mime_type):
    renderer = renderer_for(export_format)
    assert isinstance(renderer, cls)
    assert (renderer.format, renderer.extension, renderer.mime_type) == (export_format, extension, mime_type)


@pytest.mark.parametrize("language", LANGUAGES)
def test_markdown_keeps_title_then_every_page_heading_and_paragraph_in_order(language):
    book = sample_book(language, pages=4)

    text = _render(MarkdownRenderer(), book)

    blocks = blocks_of(text)
    assert blocks[0].kind == "heading"
    assert blocks[0].text == book.title
    headings = [block.text for block in blocks if block.kind == "heading" and block.level == 1]
    assert headings == [book.title] + [_heading(language, n) for n in range(1, 5)]
    paragraphs = [block.text for block in blocks if block.kind == "paragraph"]
    assert paragraphs == [p for n in range(1, 5) for p in _paragraphs(language, n)]
    assert [block.text for block in blocks if block.kind == "list_item"] == [
        item.text for n in range(1, 5) for item in blocks_of(SAMPLES[language].format(n=n)) if item.kind == "list_item"
    ]


@pytest.mark.parametrize("language", LANGUAGES)
def test_plaintext_keeps_title_then_every_page_without_markdown_syntax(language):
    book = sample_book(language, pages=4)

    text = _render(PlainTextRenderer(), book)

    assert text.splitlines()[0] == book.title
    assert_in_order(text, [book.title] + [plain_text_of(SAMPLES[language].format(n=n)) for n in range(1, 5)])
    assert not re.search(r"[*#`]", text)
    assert "<!--" not in text


@pytest.mark.parametrize("renderer", [MarkdownRenderer(), PlainTextRenderer()], ids=["Markdown", "PlainText"])
@pytest.mark.parametrize("language", SIX_LANGUAGES)
def test_failed_and_untranslated_pages_are_marked_in_place_never_dropped(renderer, language):
    book = sample_book(language, pages=5, failed=frozenset({2}), untranslated=frozenset({4}))
    pages = {page.index: page for page in book.pages()}

    text = _render(renderer, book)

    readable = text if isinstance(renderer, PlainTextRenderer) else plain_text_of(text)
    assert_in_order(
        readable,
        [
            _heading(language, 1),
            page_notice(pages[2], book.labels),
            _heading(language, 3),
            page_notice(pages[4], book.labels),
            _heading(language, 5),
        ],
    )
    assert book.labels.pending.format(index=4) in readable  # in the book's language
    assert "the engine timed out" not in readable  # the engine's own words are for operators


def _rendered_with_page_markers(renderer: Renderer, book: ExportBook, marker: str) -> tuple[str, str]:
    """The three-page book rendered with page markers (each page's number found once, in
    order, on a line matching `marker`) and without; both texts."""
    with_markers = _render(renderer, book, ExportOptions(page_markers=True))
    assert re.findall(marker, with_markers, flags=re.MULTILINE) == ["1", "2", "3"]
    return with_markers, _render(renderer, book)


@pytest.mark.parametrize("language", SIX_LANGUAGES)
def test_markdown_page_markers_are_comments_before_each_page_when_asked(language):
    book = sample_book(language, pages=3, failed=frozenset({2}))

    with_markers, without = _rendered_with_page_markers(MarkdownRenderer(), book, r"^<!-- page (\d+) -->$")

    assert_in_order(with_markers, ["<!-- page 1 -->", _heading(language, 1), "<!-- page 2 -->", "<!-- page 3 -->"])
    assert "<!-- page" not in without
    # Each marker is an HTML comment block of its own, which Markdown viewers do not show.
    comments = [
        token.content.strip() for token in MarkdownIt("commonmark").parse(with_markers) if token.type == "html_block"
    ]
    assert comments == ["<!-- page 1 -->", "<!-- page 2 -->", "<!-- page 3 -->"]


@pytest.mark.parametrize("language", SIX_LANGUAGES)
def test_plaintext_page_markers_are_lines_before_each_page_when_asked(language):
    book = sample_book(language, pages=3, untranslated=frozenset({3}))

    with_markers, without = _rendered_with_page_markers(PlainTextRenderer(), book, r"^— (\d+) —$")

    assert_in_order(with_markers, ["— 1 —", _heading(language, 1), "— 2 —", _heading(language, 2), "— 3 —"])
    assert "—" not in without


def test_markdown_title_with_markdown_and_html_syntax_reads_back_as_the_same_text():
    title = "Les *Misérables* <script>alert(1)</script> [part] #2 & `code`"
    book = sample_book("en", pages=1, title=title)

    text = _render(MarkdownRenderer(), book)

    first = blocks_of(text)[0]
    assert (first.kind, first.level, first.text) == ("heading", 1, title)
    assert not any(run.bold or run.italic or run.code for run in first.runs)
    assert "<script>" not in text


def test_notice_says_why_from_the_failure_code_never_with_the_engines_own_words():
    book = sample_book("en", pages=1, failed=frozenset({1}))
    page = replace(next(book.pages()), failure_reason="*x* <b> (HTTP 500)", failure_code="translation_incomplete")

    text = _render(MarkdownRenderer(), replace(book, pages=lambda: iter([page])))

    notice = (
        "[Page 1 could not be translated: the translation came back incomplete. "
        "Its original text follows, untranslated.]"
    )
    assert notice in plain_text_of(text)
    assert "HTTP 500" not in text


@pytest.mark.parametrize("renderer", [MarkdownRenderer(), PlainTextRenderer()], ids=["Markdown", "PlainText"])
def test_memory_does_not_grow_with_the_book(renderer):
    _peak_memory(renderer, 10)  # warm caches (imports, compiled patterns) outside the measure

    small = _peak_memory(renderer, 100)
    large = _peak_memory(renderer, 1000)

    assert large < 3 * small, f"peak {large} bytes for 1,000 pages vs {small} for 100"
