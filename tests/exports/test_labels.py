"""The words the exports write themselves are in the book's language: the table of contents,
the skip link, chapters named by their pages, page markers' names, the notices of failed and
untranslated pages (the reason from the failure code, never the engine's English message),
each marked with the book's language, while a failed page's kept original stays marked with
the source language. Read back from every format for a Spanish, an Arabic and a Japanese book."""

from __future__ import annotations

import html
import io
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import docx
import html5lib
import pytest
from django.conf import settings
from docx.oxml.ns import qn

from exports.book import ExportBook, ExportOptions, ExportPage
from exports.labels import FAILURE_CODES, LANGUAGES, labels_for
from tests.exports.books import SOURCE, render_bytes, table_book
from tests.exports.test_epub import EPUBCHECK, XML_LANG, assert_epubcheck_passes, chapters_of, read_back
from tests.exports.test_html import _text, assert_valid_document
from tests.exports.test_pdf import (
    assert_contains_text,
    needs_tools,
    outline_titles,
    pdf_info,
    text_of,
)

XHTML = "{http://www.w3.org/1999/xhtml}"
EPUB_NS = "{http://www.idpf.org/2007/ops}"
ENGINE_WORDS = "the page is in pl and the engine has no pl pair"
# What a reader of each book sees (written out, not computed from the table under test).
EXPECTED = {
    "es": {
        "contents": "Índice",
        "skip": "Saltar al texto",
        "chapter": "Páginas 1–4",
        "failed": "[No se pudo traducir la página 3: está escrita en un idioma que no se puede traducir al idioma "
        "de este libro. A continuación figura su texto original, sin traducir.]",
        "pending": "[La página 4 aún no está traducida.]",
        "marker": "Página 2",
    },
    "ar": {
        "contents": "المحتويات",
        "skip": "انتقل إلى النص",
        "chapter": "الصفحات 1–4",
        "failed": "[تعذرت ترجمة الصفحة 3: إنها مكتوبة بلغة لا يمكن ترجمتها إلى لغة هذا الكتاب. "
        "يلي ذلك نصها الأصلي دون ترجمة.]",
        "pending": "[لم تترجم الصفحة 4 بعد.]",
        "marker": "الصفحة 2",
    },
    "ja": {
        "contents": "目次",
        "skip": "本文へ移動",
        "chapter": "1–4ページ",
        "failed": "[3ページは翻訳できませんでした：この本の言語に翻訳できない言語で書かれています。"
        "以下に原文を翻訳せずに掲載します。]",
        "pending": "[4ページはまだ翻訳されていません。]",
        "marker": "2ページ",
    },
}
BOOKS = tuple(EXPECTED)


def labelled_book(language: str) -> ExportBook:
    """Four pages without a heading (one chapter named by its pages): 1 and 2 translated
    (2 with a table), 3 failed for its language (its English original kept), 4 not yet."""
    book = table_book(language, pages=4, failed=frozenset({3}), untranslated=frozenset({4}))

    def pages() -> list[ExportPage]:
        changed = []
        for page in book.pages():
            if page.index == 1:
                page = replace(page, translation=page.translation.split("\n\n", 1)[1])
            if page.failed:
                page = replace(page, failure_code="language_unsupported", failure_reason=ENGINE_WORDS)
            changed.append(page)
        return changed

    return replace(book, pages=lambda: iter(pages()))


OPTIONS = ExportOptions(page_markers=True, partial=True)


def test_every_target_language_has_all_its_labels() -> None:
    assert set(settings.TARGET_LANGUAGES) == LANGUAGES
    english = labels_for("en")
    for language in settings.TARGET_LANGUAGES:
        labels = labels_for(language)
        assert labels.language == language
        assert "7" in labels.page_label(7, 7)
        assert "3" in labels.page_label(3, 9)
        assert "9" in labels.page_label(3, 9)
        assert set(labels.reasons) == set(FAILURE_CODES)
        notice = labels.failed.format(index=12, reason=labels.reason("internal_error"))
        assert "12" in notice
        assert labels.reasons["internal_error"] in notice
        assert "12" in labels.pending.format(index=12)
        assert all(text.strip() for text in (labels.contents, labels.skip_to_text, labels.kept, labels.table))
        if language != "en":
            assert labels.contents != english.contents
            assert labels.kept != english.kept
            assert set(labels.reasons.values()).isdisjoint(english.reasons.values())


def test_a_language_without_labels_gets_english_and_a_regional_tag_its_language() -> None:
    assert labels_for("fi") == labels_for("en")
    assert labels_for(None) == labels_for("en")
    assert labels_for("pt-BR") == labels_for("pt")
    assert labels_for("zh_Hant").contents == "目录"


def test_an_unknown_failure_code_reads_as_the_engine_failing() -> None:
    labels = labels_for("de")
    assert labels.reason("") == labels.reason("engine_error") == "Das Übersetzungssystem ist daran gescheitert."
    assert labels.reason("translation_incomplete") == "Die Übersetzung kam unvollständig zurück."


@pytest.mark.parametrize("export_format", ["Markdown", "PlainText"])
@pytest.mark.parametrize("language", BOOKS)
def test_text_formats_write_the_notices_in_the_books_language(export_format: str, language: str) -> None:
    text = render_bytes(export_format, labelled_book(language), OPTIONS).decode()

    plain = text.replace("\\", "")  # Markdown escapes the brackets
    assert EXPECTED[language]["failed"] in plain
    assert EXPECTED[language]["pending"] in plain
    assert SOURCE in text  # the failed page's original
    assert ENGINE_WORDS not in text


@pytest.mark.parametrize("language", BOOKS)
def test_html_names_contents_skip_link_chapters_markers_and_notices_in_the_books_language(language: str) -> None:
    expected = EXPECTED[language]
    root = assert_valid_document(render_bytes("Html", labelled_book(language), OPTIONS))

    assert _text(root.find("./body/a[@class='skip-link']")) == expected["skip"]
    assert _text(root.find("./body/nav/h2")) == expected["contents"]
    assert [_text(link) for link in root.findall("./body/nav//li/a")] == [expected["chapter"]]
    assert [section.get("aria-label") for section in root.findall("./body/main/section")] == [expected["chapter"]]
    assert root.find(".//span[@id='page-2']").get("aria-label") == expected["marker"]
    notices = root.findall(".//p[@class='page-notice']")
    assert [_text(notice) for notice in notices] == [expected["failed"], expected["pending"]]
    direction = "rtl" if language == "ar" else "ltr"
    assert all((notice.get("lang"), notice.get("dir")) == (language, direction) for notice in notices)
    (kept,) = root.findall(".//div[@class='untranslated']")
    assert (kept.get("lang"), kept.get("dir"), _text(kept).strip()) == ("en", "ltr", SOURCE)
    assert ENGINE_WORDS not in _text(root)
    assert not [element for element in root.iter() if element.get("lang") == "en" and element is not kept]


def test_html_screen_reader_strings_carry_no_english_in_a_spanish_book() -> None:
    document = render_bytes("Html", labelled_book("es"), OPTIONS).decode()
    root = html5lib.parse(document, namespaceHTMLElements=False)

    named = [element.get("aria-label") for element in root.iter() if element.get("aria-label")]
    assert "Tabla" in named
    assert not [name for name in named if re.search(r"\b(Page|Pages|Table)\b", name)]
    for english in ("Contents", "Skip to the text", "could not be translated", "not translated yet"):
        assert english not in document


@pytest.mark.parametrize("language", BOOKS)
def test_epub_navigation_chapters_and_notices_are_in_the_books_language(language: str, tmp_path: Path) -> None:
    expected = EXPECTED[language]
    data = render_bytes("Epub", labelled_book(language), OPTIONS)
    package = read_back(data, tmp_path)

    assert [link.title for link in package.toc] == [expected["chapter"]]
    nav = next(item for item in package.get_items() if item.get_name() == "nav.xhtml")
    navigation = nav.content.decode()
    assert f"<h2>{expected['contents']}</h2>" in navigation
    assert f"<h2>{labels_for(language).page_list}</h2>" in navigation  # the page list's heading
    chapter = chapters_of(package)[0]
    notices = list(chapter.iterfind(f".//{XHTML}p[@class='notice']"))
    assert [" ".join("".join(notice.itertext()).split()) for notice in notices] == [
        expected["failed"],
        expected["pending"],
    ]
    assert all((notice.get("lang"), notice.get(XML_LANG)) == (language, language) for notice in notices)
    (kept,) = chapter.iterfind(f".//{XHTML}p[@class='untranslated']")
    assert (kept.get("lang"), kept.get("dir")) == ("en", "ltr")
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)


@pytest.mark.parametrize("language", BOOKS)
def test_docx_notices_are_in_the_books_language_and_direction(language: str) -> None:
    document = docx.Document(io.BytesIO(render_bytes("Docx", labelled_book(language), OPTIONS)))

    notices = [paragraph for paragraph in document.paragraphs if paragraph.style.name == "Translation Notice"]
    assert [paragraph.text for paragraph in notices] == [EXPECTED[language]["failed"], EXPECTED[language]["pending"]]
    for notice in notices:
        assert (notice._p.pPr.find(qn("w:bidi")) is not None) == (language == "ar")
        lang = notice.runs[0]._r.rPr.find(qn("w:lang"))
        assert language in "".join(lang.attrib.values()).lower()
    (kept,) = [paragraph for paragraph in document.paragraphs if paragraph.style.name == "Source Text"]
    assert kept.text == SOURCE
    assert kept.runs[0]._r.rPr.find(qn("w:lang")).get(qn("w:val")) == "en-US"


@needs_tools
@pytest.mark.parametrize("language", BOOKS)
def test_pdf_outline_notices_and_subject_are_in_the_books_language(language: str, tmp_path: Path) -> None:
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(render_bytes("Pdf", labelled_book(language), OPTIONS))

    assert EXPECTED[language]["chapter"] in outline_titles(pdf)
    text = text_of(pdf)
    assert_contains_text(text, EXPECTED[language]["failed"])
    assert_contains_text(text, EXPECTED[language]["pending"])
    assert ENGINE_WORDS not in text
    assert pdf_info(pdf)["Subject"].strip() == f"{labels_for(language).translation} ({language})"


def _bilingual_text(export_format: str, data: bytes, tmp_path: Path) -> str:
    """The words of a bilingual file, as a reader reads them."""
    if export_format == "Pdf":
        pdf = tmp_path / "book.pdf"
        pdf.write_bytes(data)
        return text_of(pdf)
    if export_format == "Html":
        return _text(assert_valid_document(data))
    entries = ("word/document.xml",) if export_format == "Docx" else ()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = entries or tuple(name for name in archive.namelist() if name.endswith(".xhtml"))
        markup = " ".join(archive.read(name).decode() for name in names)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@needs_tools
@pytest.mark.parametrize("export_format", ["Html", "Epub", "Docx", "Pdf"])
def test_a_bilingual_file_does_not_say_the_original_follows_where_it_stands_beside(
    export_format: str, tmp_path: Path
) -> None:
    """In a bilingual file the failed page's original is in its own column or paragraph,
    so its notice does not announce it as following."""
    labels = labels_for("es")
    data = render_bytes(export_format, labelled_book("es"), ExportOptions(bilingual=True, partial=True))
    text = " ".join(_bilingual_text(export_format, data, tmp_path).split())

    assert "No se pudo traducir la página 3" in text
    assert labels.kept not in text
    assert SOURCE.split(".")[0] in text  # the original, in its column (a Pdf's two columns interleave)
