"""The Html export: one valid, self-contained, accessible HTML5 document per book — lang
and dir from the book's language, a table of contents whose links resolve, headings kept,
failed pages in a visible note, page markers when asked, bilingual columns carrying the
source language, everything from the book escaped, and memory that does not grow with
the book. Validity is checked with html5lib (the WHATWG parsing algorithm), which must
report no parse error."""

from __future__ import annotations

import io
import tracemalloc
from collections import Counter
from dataclasses import replace
from html.parser import HTMLParser
from xml.etree.ElementTree import Element

import html5lib
import pytest

from exports.blocks import blocks_of
from exports.book import ExportBook, ExportOptions, ExportPage, page_notice
from exports.renderers import renderer_for
from exports.renderers.html import HtmlRenderer
from tests.exports.books import SAMPLES, SOURCE, sample_book

LANGUAGES = sorted(SAMPLES)  # en, ar, he, hi, ja, ru and zh, ko, el
SIX_LANGUAGES = ["en", "ar", "he", "hi", "ja", "ru"]
VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Sink:
    """A binary stream that keeps nothing (so memory measures the renderer, not the output)."""

    def write(self, data: bytes) -> int:
        return len(data)


class _TagBalance(HTMLParser):
    """Every element the renderer opens is closed, in order (html5lib repairs such slips
    silently in places; the renderer should not make them)."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID_ELEMENTS:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.open[-1:]} at {self.getpos()}")
        else:
            self.open.pop()


def _render(book: ExportBook, options: ExportOptions | None = None) -> bytes:
    out = io.BytesIO()
    HtmlRenderer().render(book, options or ExportOptions(), out)
    return out.getvalue()


def _parse(document: bytes) -> tuple[Element, list[str]]:
    parser = html5lib.HTMLParser(namespaceHTMLElements=False)
    root = parser.parse(document.decode("utf-8"))
    return root, [f"{code} {data}" for _position, code, data in parser.errors]


def _text(element: Element) -> str:
    return "".join(element.itertext())


def _with_pages(book: ExportBook, change) -> ExportBook:
    """The same book with each page passed through `change` (still streamed)."""
    return replace(book, pages=lambda: (change(page) for page in book.pages()))


def _without_heading(page: ExportPage) -> ExportPage:
    return replace(page, translation=page.translation.split("\n\n", 1)[1]) if page.translated else page


def _peak_memory(pages: int, options: ExportOptions) -> int:
    book = sample_book("ar", pages=pages, failed=frozenset({2}))
    tracemalloc.start()
    try:
        HtmlRenderer().render(book, options, _Sink())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_valid_document(document: bytes) -> Element:
    """A conforming parse (no html5lib error), balanced tags, unique ids, and every
    in-document link landing on an id. Returns the parsed `<html>` element."""
    root, errors = _parse(document)
    assert errors == []
    balance = _TagBalance()
    balance.feed(document.decode("utf-8"))
    balance.close()
    assert balance.problems == []
    assert balance.open == []
    ids = Counter(element.get("id") for element in root.iter() if element.get("id") is not None)
    assert [name for name, count in ids.items() if count > 1] == []
    for link in root.iter("a"):
        href = link.get("href") or ""
        if href.startswith("#"):
            assert href[1:] in ids, f"link {href} lands nowhere"
    for element in root.iter():
        labelled_by = element.get("aria-labelledby")
        if labelled_by:
            assert labelled_by in ids, f"aria-labelledby={labelled_by} names no element"
    return root


def assert_self_contained(root: Element) -> None:
    """Nothing loaded from elsewhere: no scripts, no external styles, images or frames."""
    assert [element.tag for element in root.iter() if element.tag in {"script", "link", "img", "iframe"}] == []
    assert [element.tag for element in root.iter() if element.get("src") or element.get("srcset")] == []
    assert len(root.findall("./head/style")) == 1


def assert_contents_link_to_chapters(root: Element, labels: list[str]) -> None:
    """The `<nav>` lists `labels` in order, each linking to a `<section>` in `<main>` (the
    chapters: their sections are in lists nested under them)."""
    nav = root.find("./body/nav")
    assert nav is not None
    links = nav.findall("./ol/li/a")  # the chapters (their sections are nested deeper)
    assert [_text(link) for link in links] == labels
    sections = {section.get("id"): section for section in root.findall("./body/main/section")}
    assert [link.get("href") for link in links] == [f"#{section_id}" for section_id in sections]


def _chapter_sections(root: Element) -> list[Element]:
    return root.findall("./body/main/section")


def _page_markers(root: Element) -> list[Element]:
    return [span for span in root.iter("span") if "page-marker" in (span.get("class") or "").split()]


def _notices(root: Element) -> list[Element]:
    return [element for element in root.iter() if element.get("role") == "note"]


def test_registry_gives_the_html_renderer_with_its_file_type():
    renderer = renderer_for("Html")
    assert isinstance(renderer, HtmlRenderer)
    assert (renderer.extension, renderer.mime_type) == ("html", "text/html; charset=utf-8")


@pytest.mark.parametrize("language", LANGUAGES)
def test_document_is_valid_html5_with_language_direction_charset_and_title(language):
    book = sample_book(language, pages=3)

    document = _render(book)

    assert document.startswith(b"<!DOCTYPE html>\n")
    root = assert_valid_document(document)
    assert root.get("lang") == language
    assert root.get("dir") == ("rtl" if language in {"ar", "he"} else "ltr")
    assert [meta.get("charset") for meta in root.iter("meta") if meta.get("charset")] == ["utf-8"]
    assert _text(root.find("./head/title")) == book.title
    assert [_text(h1) for h1 in root.iter("h1")] == [book.title]
    assert_self_contained(root)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_text_comes_back_with_headings_lists_and_emphasis(language):
    book = sample_book(language, pages=3)

    root = assert_valid_document(_render(book))

    main = root.find("./body/main")
    main_text = " ".join(_text(p) for p in main.iter("p"))
    for n in range(1, 4):
        for block in blocks_of(SAMPLES[language].format(n=n)):
            if block.kind == "paragraph":
                assert block.text in main_text
    # Chapter headings one level under the book's title, in page order.
    assert [_text(h2) for h2 in main.iter("h2")] == [
        blocks_of(SAMPLES[language].format(n=n))[0].text for n in (1, 2, 3)
    ]
    assert len(list(main.iter("em"))) == len(list(main.iter("strong"))) == 3
    assert len(list(main.iter("li"))) == 6


@pytest.mark.parametrize("language", SIX_LANGUAGES)
def test_contents_link_to_one_section_per_heading_chapter(language):
    book = sample_book(language, pages=4)

    root = assert_valid_document(_render(book))

    headings = [blocks_of(SAMPLES[language].format(n=n))[0].text for n in range(1, 5)]
    assert_contents_link_to_chapters(root, headings)
    for section, heading in zip(_chapter_sections(root), headings, strict=True):
        title = root.find(f".//*[@id='{section.get('aria-labelledby')}']")
        assert title is not None
        assert (title.tag, _text(title)) == ("h2", heading)
        assert title in list(section.iter())


def test_book_without_headings_is_cut_every_pages_per_chapter_pages():
    book = _with_pages(sample_book("ru", pages=7, failed=frozenset({7})), _without_heading)

    root = assert_valid_document(_render(book, ExportOptions(pages_per_chapter=3)))

    assert_contents_link_to_chapters(root, ["Страницы 1–3", "Страницы 4–6", "Страница 7"])
    sections = _chapter_sections(root)
    assert [section.get("aria-label") for section in sections] == ["Страницы 1–3", "Страницы 4–6", "Страница 7"]
    assert [len(section.findall("./div")) for section in sections] == [3, 3, 1]
    assert list(root.find("./body/main").iter("h2")) == []


def test_pages_before_the_first_heading_form_their_own_chapter():
    book = _with_pages(sample_book("he", pages=4), lambda page: _without_heading(page) if page.index <= 2 else page)

    root = assert_valid_document(_render(book))

    assert_contents_link_to_chapters(root, ["עמודים 1–2", "פרק 3", "פרק 4"])
    assert [len(section.findall("./div")) for section in _chapter_sections(root)] == [2, 1, 1]


def test_a_level_two_heading_starts_a_chapter_and_a_level_three_does_not():
    texts = {1: "## Part one\n\nText one.", 2: "### A scene\n\nText two.", 3: "Text three.\n\n# Late heading"}
    book = _with_pages(sample_book("en", pages=3), lambda page: replace(page, translation=texts[page.index]))

    root = assert_valid_document(_render(book))

    assert_contents_link_to_chapters(root, ["Part one"])
    assert [heading.tag for heading in root.find("./body/main").iter() if heading.tag[:1] == "h"] == ["h3", "h4", "h2"]


def test_an_empty_chapter_heading_is_named_by_its_page():
    texts = {1: "# One\n\nText one.", 2: "#\n\nText two."}
    book = _with_pages(sample_book("en", pages=2), lambda page: replace(page, translation=texts[page.index]))

    root = assert_valid_document(_render(book))

    assert_contents_link_to_chapters(root, ["One", "Page 2"])
    assert _chapter_sections(root)[1].get("aria-label") == "Page 2"


@pytest.mark.parametrize("language", SIX_LANGUAGES)
def test_failed_and_untranslated_pages_show_a_note_in_place(language):
    book = sample_book(language, pages=5, failed=frozenset({2}), untranslated=frozenset({4}))
    pages = {page.index: page for page in book.pages()}

    root = assert_valid_document(_render(book))

    notices = _notices(root)
    assert [_text(notice) for notice in notices] == [
        page_notice(pages[2], book.labels),
        page_notice(pages[4], book.labels),
    ]
    assert all(notice.get("class") == "page-notice" for notice in notices)
    assert "page-notice" in _text(root.find("./head/style"))
    page_divs = [div for section in _chapter_sections(root) for div in section.findall("./div")]
    assert len(page_divs) == 5
    assert notices[0] in list(page_divs[1].iter())
    assert notices[1] in list(page_divs[3].iter())


@pytest.mark.parametrize("language", SIX_LANGUAGES)
def test_page_markers_carry_page_ids_when_asked(language):
    book = sample_book(language, pages=4, failed=frozenset({3}))

    with_markers = assert_valid_document(_render(book, ExportOptions(page_markers=True)))
    without = assert_valid_document(_render(book))

    markers = _page_markers(with_markers)
    assert [marker.get("id") for marker in markers] == ["page-1", "page-2", "page-3", "page-4"]
    assert [_text(marker) for marker in markers] == ["— 1 —", "— 2 —", "— 3 —", "— 4 —"]
    assert _page_markers(without) == []


@pytest.mark.parametrize(("language", "source_language"), [("ar", "en"), ("en", "he"), ("hi", "ja"), ("ru", "ar")])
def test_bilingual_puts_source_and_translation_side_by_side_each_with_its_language(language, source_language):
    book = sample_book(language, pages=3, failed=frozenset({2}), source_language=source_language)

    root = assert_valid_document(_render(book, ExportOptions(bilingual=True, page_markers=True)))

    pages = [div for section in _chapter_sections(root) for div in section.findall("./div")]
    assert len(pages) == 3
    for page in pages:
        assert "bilingual" in page.get("class").split()
        source, translation = page.findall("./div")
        assert (source.get("class"), source.get("lang")) == ("source", source_language)
        assert source.get("dir") == ("rtl" if source_language in {"ar", "he"} else "ltr")
        assert [_text(p) for p in source.findall("./p")] == [SOURCE]
        assert (translation.get("class"), translation.get("lang")) == ("translation", language)
        assert translation.get("dir") == ("rtl" if language in {"ar", "he"} else "ltr")
    assert _notices(pages[1].findall("./div")[1])
    assert "grid-template-columns" in _text(root.find("./head/style"))


def test_bilingual_source_of_unknown_language_gets_an_empty_lang_and_auto_direction():
    book = replace(sample_book("en", pages=1), source_language=None)

    root = assert_valid_document(_render(book, ExportOptions(bilingual=True)))

    source = root.find(".//div[@class='source']")
    assert (source.get("lang"), source.get("dir")) == ("", "auto")


def test_bilingual_source_paragraphs_follow_blank_lines_and_are_escaped():
    source_text = "First <b>para</b>\nsame paragraph.\n\n\nSecond & <script>alert(1)</script>"
    book = _with_pages(sample_book("en", pages=1), lambda page: replace(page, source_text=source_text))

    root = assert_valid_document(_render(book, ExportOptions(bilingual=True)))

    source = root.find(".//div[@class='source']")
    assert [_text(p) for p in source.findall("./p")] == [
        "First <b>para</b>same paragraph.",
        "Second & <script>alert(1)</script>",
    ]
    assert list(source.iter("b")) == []
    assert_self_contained(root)


def test_title_with_markup_is_escaped_everywhere():
    title = 'Tom & Jerry <script>alert("x")</script> "quoted"'
    book = sample_book("en", pages=1, title=title)

    root = assert_valid_document(_render(book))

    assert _text(root.find("./head/title")) == title
    assert _text(root.find(".//h1")) == title
    assert_self_contained(root)


def test_raw_html_images_and_script_links_in_a_translation_stay_text():
    translation = (
        '# Chapter <img src="x" onerror="alert(1)">\n\n<script>alert(2)</script>\n\n'
        "Look: ![a cat](https://example.com/cat.png) and [a link](javascript:alert(3))."
    )
    book = _with_pages(sample_book("en", pages=1), lambda page: replace(page, translation=translation))

    root = assert_valid_document(_render(book))

    assert_self_contained(root)
    main_text = _text(root.find("./body/main"))
    assert '<img src="x" onerror="alert(1)">' in main_text
    assert "<script>alert(2)</script>" in main_text
    assert "a cat" in main_text
    assert [link.get("href") for link in root.find("./body/main").iter("a")] == []
    assert_contents_link_to_chapters(root, ['Chapter <img src="x" onerror="alert(1)">'])


def test_empty_book_is_still_a_valid_document():
    book = sample_book("en", pages=0)

    root = assert_valid_document(_render(book))

    assert _chapter_sections(root) == []


def test_memory_does_not_grow_with_the_book():
    options = ExportOptions(bilingual=True, page_markers=True)
    _peak_memory(10, options)  # warm caches (imports, compiled patterns) outside the measure

    small = _peak_memory(100, options)
    large = _peak_memory(1000, options)

    assert large < 3 * small, f"peak {large} bytes for 1,000 pages vs {small} for 100"
