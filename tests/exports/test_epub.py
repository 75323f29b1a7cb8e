"""The EPUB renderer: books in several scripts read back with ebooklib and checked with
epubcheck (the Debian package)."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from ebooklib import epub
from lxml import etree

from exports.blocks import blocks_of, first_heading
from exports.book import ExportBook, ExportOptions, ExportPage
from exports.renderers import renderer_for
from exports.renderers._epub_docx_text import chapter_heading
from exports.renderers.epub import EpubRenderer
from tests.exports.books import SAMPLES, SOURCE, sample_book

XHTML = "{http://www.w3.org/1999/xhtml}"
EPUB_NS = "{http://www.idpf.org/2007/ops}"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
OPF = "{http://www.idpf.org/2007/opf}"


def _epubcheck_command() -> list[str] | None:
    binary = shutil.which("epubcheck")
    if binary is None:
        return None
    real = os.path.realpath(binary)
    with open(real, "rb") as file:
        is_jar = file.read(2) == b"PK"
    # Debian installs the jar itself as /usr/bin/epubcheck and runs it through
    # binfmt_misc (jarwrapper), which containers usually lack: run it with java.
    return [shutil.which("java") or "java", "-jar", real] if is_jar else [binary]


EPUBCHECK = _epubcheck_command()


def render(book: ExportBook, options: ExportOptions | None = None) -> bytes:
    out = io.BytesIO()
    EpubRenderer().render(book, options or ExportOptions(), out)
    return out.getvalue()


def read_back(data: bytes, tmp_path: Path) -> epub.EpubBook:
    path = tmp_path / "book.epub"
    path.write_bytes(data)
    return epub.read_epub(str(path), {"ignore_ncx": True})


def chapters_of(package: epub.EpubBook) -> list[etree._Element]:
    """The chapter documents in spine order, parsed."""
    by_id = {item.get_id(): item for item in package.get_items()}
    documents = [by_id[idref] for idref, _linear in package.spine if not isinstance(by_id[idref], epub.EpubNav)]
    return [etree.fromstring(document.content) for document in documents]  # as stored (get_content re-renders)


def text_of(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def opf_of(data: bytes) -> etree._Element:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return etree.fromstring(archive.read("EPUB/content.opf"))


def without_headings(book: ExportBook, keep: frozenset[int] = frozenset()) -> ExportBook:
    """The book with each page's heading line removed, except on the pages in `keep`."""

    def pages() -> Iterator[ExportPage]:
        for page in book.pages():
            if page.index in keep:
                yield page
            else:
                yield replace(page, translation=re.sub(r"^# .*\n+", "", page.translation))

    return replace(book, pages=pages)


def assert_epubcheck_passes(data: bytes, tmp_path: Path) -> None:
    assert EPUBCHECK is not None
    path = tmp_path / "checked.epub"
    path.write_bytes(data)
    result = subprocess.run([*EPUBCHECK, str(path)], capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    errors = [line for line in output.splitlines() if line.startswith(("ERROR", "FATAL"))]
    assert result.returncode == 0, output
    assert errors == [], output


def test_registry_gives_the_epub_renderer() -> None:
    renderer = renderer_for("Epub")
    assert isinstance(renderer, EpubRenderer)
    assert (renderer.format, renderer.extension, renderer.mime_type) == ("Epub", "epub", "application/epub+zip")


def test_metadata_carries_title_language_identifier_and_a_modified_date(tmp_path: Path) -> None:
    book = sample_book("ru", pages=2, title="Старый дом")
    data = render(book)
    package = read_back(data, tmp_path)
    assert package.get_metadata("DC", "title")[0][0] == "Старый дом"
    assert package.get_metadata("DC", "language")[0][0] == "ru"
    assert package.get_metadata("DC", "identifier")[0][0] == book.identifier
    modified = opf_of(data).find(f"{OPF}metadata/{OPF}meta[@property='dcterms:modified']")
    assert modified is not None
    stamp = datetime.strptime(modified.text or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - stamp) < timedelta(minutes=5)


def test_package_starts_with_the_mimetype_stored_uncompressed() -> None:
    with zipfile.ZipFile(io.BytesIO(render(sample_book("en", pages=1)))) as archive:
        first = archive.infolist()[0]
        assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)
        assert archive.read("mimetype") == b"application/epub+zip"
        assert "EPUB/toc.ncx" in archive.namelist()


@pytest.mark.parametrize("language", ["en", "ar", "he", "hi", "ja", "ru", "zh", "ko", "el"])
def test_each_heading_page_is_a_chapter_listed_in_the_nav_with_its_text(language: str, tmp_path: Path) -> None:
    package = read_back(render(sample_book(language, pages=3)), tmp_path)
    headings = [SAMPLES[language].split("\n")[0].removeprefix("# ").format(n=n) for n in (1, 2, 3)]
    assert [link.title for link in package.toc] == headings
    chapters = chapters_of(package)
    assert len(chapters) == 3
    for number, chapter in enumerate(chapters, start=1):
        assert chapter.get("lang") == chapter.get(XML_LANG) == language
        assert chapter.findtext(f".//{XHTML}h1") == headings[number - 1]
        body = text_of(chapter)
        for line in SAMPLES[language].format(n=number).split("\n"):
            plain = line.removeprefix("# ").removeprefix("- ").replace("*", "")
            assert plain in body


def test_emphasis_and_lists_become_xhtml_elements(tmp_path: Path) -> None:
    chapter = chapters_of(read_back(render(sample_book("en", pages=1)), tmp_path))[0]
    assert chapter.findtext(f".//{XHTML}em") == "old"
    assert chapter.findtext(f".//{XHTML}strong") == "long"
    assert [li.text for li in chapter.iterfind(f".//{XHTML}ul/{XHTML}li")] == ["bread", "water"]


def test_nested_and_numbered_lists_keep_their_structure(tmp_path: Path) -> None:
    page = ExportPage(1, True, "3. three\n4. four\n   - inner\n5. five", "", False, "", "")
    book = replace(sample_book("en", pages=1), pages=lambda: iter([page]))
    chapter = chapters_of(read_back(render(book), tmp_path))[0]
    ordered = chapter.find(f".//{XHTML}ol")
    assert ordered is not None
    assert ordered.get("start") == "3"
    items = ordered.findall(f"{XHTML}li")
    assert [item.text for item in items] == ["three", "four", "five"]
    assert items[1].findtext(f"{XHTML}ul/{XHTML}li") == "inner"


@pytest.mark.parametrize(
    "markdown",
    ["# One\n\nText", "## Two", "### Three\n\nText", "Text\n\n# Late", "", "- # item", "> # quoted", *SAMPLES.values()],
)
def test_chapter_starts_agree_with_first_heading(markdown: str) -> None:
    assert chapter_heading(blocks_of(markdown)) == first_heading(markdown)


def test_without_headings_chapters_are_cut_every_pages_per_chapter(tmp_path: Path) -> None:
    book = without_headings(sample_book("en", pages=7))
    package = read_back(render(book, ExportOptions(pages_per_chapter=3)), tmp_path)
    assert [link.title for link in package.toc] == ["Pages 1–3", "Pages 4–6", "Page 7"]
    chapters = chapters_of(package)
    assert [text_of(chapter).count("Every morning") for chapter in chapters] == [3, 3, 1]


def test_pages_before_the_first_heading_form_their_own_chapter(tmp_path: Path) -> None:
    book = without_headings(sample_book("en", pages=5), keep=frozenset({3}))
    package = read_back(render(book, ExportOptions(pages_per_chapter=20)), tmp_path)
    assert [link.title for link in package.toc] == ["Pages 1–2", "Chapter 3"]
    assert [text_of(chapter).count("Every morning") for chapter in chapters_of(package)] == [2, 3]


@pytest.mark.parametrize("language", ["ar", "he"])
def test_right_to_left_books_progress_and_read_right_to_left(language: str, tmp_path: Path) -> None:
    data = render(sample_book(language, pages=2))
    spine = opf_of(data).find(f"{OPF}spine")
    assert spine is not None
    assert spine.get("page-progression-direction") == "rtl"
    for chapter in chapters_of(read_back(data, tmp_path)):
        body = chapter.find(f"{XHTML}body")
        assert body is not None
        assert chapter.get("dir") == body.get("dir") == "rtl"


@pytest.mark.parametrize("language", ["en", "hi", "ja", "ru"])
def test_left_to_right_books_keep_the_default_progression(language: str, tmp_path: Path) -> None:
    data = render(sample_book(language, pages=1))
    spine = opf_of(data).find(f"{OPF}spine")
    assert spine is not None
    assert spine.get("page-progression-direction") is None
    assert chapters_of(read_back(data, tmp_path))[0].get("dir") == "ltr"


def test_failed_and_untranslated_pages_are_marked_not_dropped(tmp_path: Path) -> None:
    book = sample_book("ar", pages=4, failed=frozenset({2}), untranslated=frozenset({4}))
    chapters = chapters_of(read_back(render(book), tmp_path))
    notices = [notice for chapter in chapters for notice in chapter.iterfind(f".//{XHTML}p[@class='notice']")]
    assert [notice.text for notice in notices] == [
        "[تعذرت ترجمة الصفحة 2: أخفق محرك الترجمة. يلي ذلك نصها الأصلي دون ترجمة.]",
        "[لم تترجم الصفحة 4 بعد.]",
    ]
    assert all(notice.get("dir") == "rtl" and notice.get("lang") == "ar" for notice in notices)  # the book's language
    kept = [p for chapter in chapters for p in chapter.iterfind(f".//{XHTML}p[@class='untranslated']")]
    assert [(p.text, p.get("lang")) for p in kept] == [(SOURCE, "en")]  # the failed page's original text


def test_page_markers_are_pagebreaks_listed_in_the_nav_page_list(tmp_path: Path) -> None:
    package = read_back(render(sample_book("en", pages=3), ExportOptions(page_markers=True)), tmp_path)
    markers = [span for chapter in chapters_of(package) for span in chapter.iterfind(f".//{XHTML}span[@{EPUB_NS}type]")]
    assert [(span.get(f"{EPUB_NS}type"), span.get("id"), span.text) for span in markers] == [
        ("pagebreak", "page-1", "1"),
        ("pagebreak", "page-2", "2"),
        ("pagebreak", "page-3", "3"),
    ]
    assert [(link.title, link.href) for link in package.pages] == [
        ("1", "chapter-0001.xhtml#page-1"),
        ("2", "chapter-0002.xhtml#page-2"),
        ("3", "chapter-0003.xhtml#page-3"),
    ]


def test_no_page_markers_unless_asked(tmp_path: Path) -> None:
    package = read_back(render(sample_book("en", pages=2)), tmp_path)
    assert not [span for chapter in chapters_of(package) for span in chapter.iterfind(f".//{XHTML}span")]
    assert package.pages == []


def test_bilingual_puts_each_source_paragraph_before_its_translation_in_its_own_language(tmp_path: Path) -> None:
    book = sample_book("ar", pages=1, source_language="en")
    chapter = chapters_of(read_back(render(book, ExportOptions(bilingual=True)), tmp_path))[0]
    body = chapter.find(f"{XHTML}body")
    assert body is not None
    first, second = body[0], body[1]
    assert (first.tag, first.get("class"), first.text) == (f"{XHTML}p", "source", SOURCE)
    assert first.get("lang") == first.get(XML_LANG) == "en"
    assert first.get("dir") == "ltr"
    assert second.tag == f"{XHTML}h1"


def test_bilingual_pairs_paragraph_by_paragraph_when_the_counts_match(tmp_path: Path) -> None:
    page = ExportPage(1, True, "Un.\n\nDeux.", "Hello\nworld.\n\nSecond one.", False, "", "")
    book = replace(sample_book("fr", pages=0), language="fr", pages=lambda: iter([page]))
    body = chapters_of(read_back(render(book, ExportOptions(bilingual=True)), tmp_path))[0].find(f"{XHTML}body")
    assert body is not None
    assert [(child.get("class"), child.text) for child in body] == [
        ("source", "Hello world."),
        (None, "Un."),
        ("source", "Second one."),
        (None, "Deux."),
    ]


def test_bilingual_right_to_left_source_in_a_left_to_right_book(tmp_path: Path) -> None:
    book = sample_book("en", pages=1, source_language="he")
    chapter = chapters_of(read_back(render(book, ExportOptions(bilingual=True)), tmp_path))[0]
    source = chapter.find(f".//{XHTML}p[@class='source']")
    assert source is not None
    assert (source.get("lang"), source.get("dir")) == ("he", "rtl")


def test_text_from_the_book_is_escaped_never_markup(tmp_path: Path) -> None:
    hostile = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    page = ExportPage(1, True, f"# Title {hostile}\n\nBody {hostile}\x0c end", f"Src {hostile}\x00", False, "", "")
    book = replace(sample_book("en", pages=0), title=f"Book {hostile}", pages=lambda: iter([page]))
    data = render(book, ExportOptions(bilingual=True))
    package = read_back(data, tmp_path)
    assert package.get_metadata("DC", "title")[0][0] == f"Book {hostile}"
    chapter = chapters_of(package)[0]
    assert chapter.find(f".//{XHTML}script") is None
    assert chapter.find(f".//{XHTML}img") is None
    assert f"Body {hostile} end" in text_of(chapter)
    assert package.toc[0].title == f"Title {hostile}"
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)


def test_a_book_without_pages_is_still_a_valid_epub(tmp_path: Path) -> None:
    data = render(sample_book("en", pages=0, title="Empty"))
    assert [link.title for link in read_back(data, tmp_path).toc] == ["Empty"]
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)


def test_render_leaves_the_stream_open_and_writes_a_zip() -> None:
    out = io.BytesIO()
    EpubRenderer().render(sample_book("en", pages=1), ExportOptions(), out)
    assert not out.closed
    assert zipfile.is_zipfile(io.BytesIO(out.getvalue()))


@pytest.mark.skipif(EPUBCHECK is None, reason="epubcheck is not installed (apt-get install epubcheck)")
@pytest.mark.parametrize(
    ("language", "options"),
    [
        ("en", ExportOptions(page_markers=True)),
        ("ar", ExportOptions(page_markers=True)),
        ("ja", ExportOptions()),
        ("hi", ExportOptions(page_markers=True)),
        ("ru", ExportOptions()),
        ("he", ExportOptions()),
        ("en", ExportOptions(bilingual=True, page_markers=True)),
    ],
    ids=["english", "arabic", "japanese", "hindi", "russian", "hebrew", "bilingual"],
)
def test_epubcheck_finds_no_errors(language: str, options: ExportOptions, tmp_path: Path) -> None:
    book = sample_book(language, pages=6, failed=frozenset({3}), untranslated=frozenset({5}))
    assert_epubcheck_passes(render(book, options), tmp_path)


def test_a_thousand_page_book_renders_every_page(tmp_path: Path) -> None:
    book = without_headings(sample_book("en", pages=1000), keep=frozenset({1}))
    data = render(book, ExportOptions(page_markers=True, pages_per_chapter=20))
    package = read_back(data, tmp_path)
    # One heading on page 1, none after: chapters are capped at 100 pages.
    assert [link.title for link in package.toc] == ["Chapter 1", *(f"Pages {n}01–{n + 1}00" for n in range(1, 10))]
    assert len(package.pages) == 1000
    assert sum(text_of(chapter).count("Every morning") for chapter in chapters_of(package)) == 1000
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)
