"""The Word renderer: books in several scripts reopened with python-docx, their styles,
text and the WordprocessingML of direction and language inspected."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from docx import Document
from docx.document import Document as DocumentObject
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import qn
from docx.text.paragraph import Paragraph

from exports.book import ExportBook, ExportOptions, ExportPage
from exports.renderers import renderer_for
from exports.renderers.docx import DocxRenderer
from tests.exports.books import SAMPLES, SOURCE, sample_book

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
LANGUAGE_TAGS = {
    "en": ("w:val", "en-US"),
    "ru": ("w:val", "ru-RU"),
    "el": ("w:val", "el-GR"),
    "ar": ("w:bidi", "ar-SA"),
    "he": ("w:bidi", "he-IL"),
    "hi": ("w:bidi", "hi-IN"),
    "ja": ("w:eastAsia", "ja-JP"),
    "zh": ("w:eastAsia", "zh-CN"),
    "ko": ("w:eastAsia", "ko-KR"),
}


def render(book: ExportBook, options: ExportOptions | None = None) -> DocumentObject:
    out = io.BytesIO()
    DocxRenderer().render(book, options or ExportOptions(), out)
    return Document(io.BytesIO(out.getvalue()))


def body_paragraphs(document: DocumentObject) -> list[Paragraph]:
    """The paragraphs without the table of contents (its heading, its entries and the page
    break after them), which come after the title."""
    paragraphs = document.paragraphs
    names = [paragraph._p.style or "" for paragraph in paragraphs[:3]]
    if "TOCHeading" not in names:
        return paragraphs
    first = names.index("TOCHeading")
    last = next(
        number
        for number, paragraph in enumerate(paragraphs)
        if number > first and paragraph._p.xpath("./w:r/w:br[@w:type='page']") and not paragraph.text
    )
    return paragraphs[:first] + paragraphs[last + 1 :]


def styled(document: DocumentObject, *, contents: bool = False) -> list[tuple[str, str]]:
    """(style name, text) of every paragraph, the table of contents' only if `contents`.
    Read from the XML: python-docx's `paragraph.style` looks the default style up on every
    call, slow over a long book."""
    names = {style.style_id: style.name for style in document.styles}
    default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    result = []
    for paragraph in document.paragraphs if contents else body_paragraphs(document):
        style_id = paragraph._p.style
        result.append((names[style_id] if style_id else (default.name if default else ""), paragraph.text))
    return result


def single_page_book(translation: str, *, language: str = "en", source: str = "") -> ExportBook:
    page = ExportPage(1, True, translation, source, False, "", "")
    return replace(sample_book(language, pages=0), page_count=1, pages=lambda: iter([page]))


def is_rtl(paragraph: Paragraph) -> bool:
    ppr = paragraph._p.pPr
    return ppr is not None and ppr.find(qn("w:bidi")) is not None


def assert_runs_right_to_left(paragraph: Paragraph, *, expected: bool) -> None:
    assert paragraph.runs, paragraph.text
    for run in paragraph.runs:
        rpr = run._r.rPr
        assert (rpr is not None and rpr.find(qn("w:rtl")) is not None) is expected, paragraph.text


def assert_language_tagged(paragraph: Paragraph, language: str) -> None:
    attribute, tag = LANGUAGE_TAGS[language]
    for run in paragraph.runs:
        rpr = run._r.rPr
        lang = rpr.find(qn("w:lang")) if rpr is not None else None
        assert lang is not None, paragraph.text
        assert lang.get(qn(attribute)) == tag, paragraph.text


def test_registry_gives_the_docx_renderer() -> None:
    renderer = renderer_for("Docx")
    assert isinstance(renderer, DocxRenderer)
    assert (renderer.format, renderer.extension, renderer.mime_type) == ("Docx", "docx", DOCX_MIME)


def test_render_writes_a_docx_and_leaves_the_stream_open() -> None:
    out = io.BytesIO()
    DocxRenderer().render(sample_book("en", pages=1), ExportOptions(), out)
    assert not out.closed
    assert out.getvalue().startswith(b"PK")


def test_core_properties_carry_title_language_and_identifier() -> None:
    book = sample_book("ru", pages=1, title="Старый дом")
    properties = render(book).core_properties
    assert (properties.title, properties.language, properties.identifier) == ("Старый дом", "ru", book.identifier)


def test_book_is_laid_out_in_words_own_styles() -> None:
    document = render(sample_book("en", pages=2))
    assert styled(document)[:6] == [
        ("Title", "Sample book (en)"),
        ("Heading 1", "Chapter 1"),
        ("Normal", "The old house stood at the end of the long road."),
        ("List Bullet", "bread"),
        ("List Bullet", "water"),
        ("Normal", "Every morning the children walked to the river."),
    ]
    emphasised = body_paragraphs(document)[2].runs
    assert [(run.text, bool(run.bold), bool(run.italic)) for run in emphasised] == [
        ("The ", False, False),
        ("old", False, True),
        (" house stood at the end of the ", False, False),
        ("long", True, False),
        (" road.", False, False),
    ]


def test_heading_levels_quotes_and_numbered_lists_use_their_styles() -> None:
    markdown = "## Part\n\n### Section\n\n> A quote.\n\n1. one\n2. two\n   - inner\n\n```\ncode\n```"
    document = render(single_page_book(markdown))
    assert styled(document)[1:] == [
        ("Heading 2", "Part"),
        ("Heading 3", "Section"),
        ("Quote", "A quote."),
        ("List Number", "one"),
        ("List Number", "two"),
        ("List Bullet 2", "inner"),
        ("Normal", "code"),
    ]


def test_each_numbered_list_starts_at_its_own_first_number() -> None:
    book = single_page_book("3. three\n4. four\n\nBetween.\n\n1. again")
    document = render(book)
    numbered = [paragraph for paragraph in document.paragraphs if paragraph.style.name == "List Number"]
    ids = [paragraph._p.pPr.numPr.numId.val for paragraph in numbered]
    assert ids[0] == ids[1] != ids[2]
    numbering = document.part.numbering_part.element
    starts = []
    for num_id in (ids[0], ids[2]):
        num = numbering.num_having_numId(num_id)
        starts.append(int(num.find(f"{qn('w:lvlOverride')}/{qn('w:startOverride')}").get(qn("w:val"))))
    assert starts == [3, 1]


@pytest.mark.parametrize("language", ["en", "ar", "he", "hi", "ja", "ru", "zh", "ko", "el"])
def test_text_direction_and_language_follow_the_script(language: str) -> None:
    document = render(sample_book(language, pages=2))
    body = "\n".join(paragraph.text for paragraph in document.paragraphs)
    for number in (1, 2):
        for line in SAMPLES[language].format(n=number).split("\n"):
            assert line.removeprefix("# ").removeprefix("- ").replace("*", "") in body
    rtl = language in ("ar", "he")
    for paragraph in document.paragraphs:
        assert is_rtl(paragraph) is rtl, paragraph.text
        assert_runs_right_to_left(paragraph, expected=rtl)
        assert_language_tagged(paragraph, language)
    section_bidi = document.sections[0]._sectPr.find(qn("w:bidi"))
    assert (section_bidi is not None) is rtl


@pytest.mark.parametrize("language", ["ar", "he", "hi"])
def test_complex_script_emphasis_is_set_for_complex_scripts(language: str) -> None:
    paragraph = body_paragraphs(render(sample_book(language, pages=1)))[2]
    bold = next(run for run in paragraph.runs if run.bold)
    italic = next(run for run in paragraph.runs if run.italic)
    assert bold._r.rPr.find(qn("w:bCs")) is not None
    assert italic._r.rPr.find(qn("w:iCs")) is not None


@pytest.mark.parametrize(("language", "font"), [("ja", "MS Mincho"), ("zh", "SimSun"), ("ko", "Batang")])
def test_east_asian_text_gets_an_east_asian_font(language: str, font: str) -> None:
    for paragraph in render(sample_book(language, pages=1)).paragraphs:
        for run in paragraph.runs:
            fonts = run._r.rPr.rFonts
            assert fonts is not None
            assert (fonts.get(qn("w:eastAsia")), fonts.get(qn("w:hint"))) == (font, "eastAsia")


def test_document_default_language_is_the_books() -> None:
    document = render(sample_book("hi", pages=1))
    lang = document.styles.element.find(f"{qn('w:docDefaults')}/{qn('w:rPrDefault')}/{qn('w:rPr')}/{qn('w:lang')}")
    assert lang is not None
    assert lang.get(qn("w:bidi")) == "hi-IN"


def test_failed_and_untranslated_pages_are_visible_notices() -> None:
    book = sample_book("ar", pages=4, failed=frozenset({2}), untranslated=frozenset({4}))
    document = render(book)
    notices = [paragraph for paragraph in document.paragraphs if paragraph.style.name == "Translation Notice"]
    assert [paragraph.text for paragraph in notices] == [
        "[تعذرت ترجمة الصفحة 2: أخفق محرك الترجمة. يلي ذلك نصها الأصلي دون ترجمة.]",
        "[لم تترجم الصفحة 4 بعد.]",
    ]
    assert all(is_rtl(paragraph) for paragraph in notices)  # the notice is in the book's language
    kept = [paragraph.text for paragraph in document.paragraphs if paragraph.style.name == "Source Text"]
    assert kept == [SOURCE]  # the failed page keeps its original text; the pending one has none yet
    style_ppr = document.styles["Translation Notice"].element.pPr
    assert style_ppr.find(qn("w:shd")).get(qn("w:fill")) == "FDECEA"
    assert style_ppr.find(qn("w:pBdr")) is not None
    assert document.styles["Translation Notice"].font.bold is True


def test_page_markers_when_asked() -> None:
    document = render(sample_book("en", pages=3), ExportOptions(page_markers=True))
    markers = [text for style, text in styled(document) if style == "Page Marker"]
    assert markers == ["— 1 —", "— 2 —", "— 3 —"]
    assert not [style for style, _text in styled(render(sample_book("en", pages=3))) if style == "Page Marker"]


def test_each_chapter_after_the_first_starts_on_a_new_page() -> None:
    book = sample_book("en", pages=3, failed=frozenset({2}))
    document = render(book, ExportOptions(page_markers=True))
    breaks = [(p.text, bool(p.paragraph_format.page_break_before)) for p in document.paragraphs]
    assert [text for text, page_break in breaks if page_break] == ["— 3 —"]


def test_bilingual_interleaves_each_source_paragraph_before_its_translation() -> None:
    book = single_page_book("Un.\n\nDeux.", language="fr", source="Hello\nworld.\n\nSecond one.")
    document = render(replace(book, language="fr", source_language="en"), ExportOptions(bilingual=True))
    assert styled(document)[1:] == [
        ("Source Text", "Hello world."),
        ("Normal", "Un."),
        ("Source Text", "Second one."),
        ("Normal", "Deux."),
    ]


def test_bilingual_source_keeps_its_own_language_and_direction() -> None:
    document = render(sample_book("ar", pages=1, source_language="en"), ExportOptions(bilingual=True))
    source = [paragraph for paragraph in document.paragraphs if paragraph.style.name == "Source Text"]
    assert [paragraph.text for paragraph in source] == [SOURCE]
    assert not is_rtl(source[0])
    assert_language_tagged(source[0], "en")
    translated = next(paragraph for paragraph in document.paragraphs if paragraph.style.name == "Heading 1")
    assert is_rtl(translated)

    hebrew_source = render(sample_book("en", pages=1, source_language="he"), ExportOptions(bilingual=True))
    source_paragraph = next(p for p in hebrew_source.paragraphs if p.style.name == "Source Text")
    assert is_rtl(source_paragraph)
    assert_runs_right_to_left(source_paragraph, expected=True)


def test_control_characters_and_markup_from_the_book_stay_text() -> None:
    hostile = '<w:p>"x"</w:p> & <script>'
    book = replace(single_page_book(f"Body {hostile}\x0c end\x00"), title=f"Book {hostile}\x01")
    document = render(book)
    assert styled(document) == [("Title", f"Book {hostile}"), ("Normal", f"Body {hostile} end")]
    assert document.core_properties.title == f"Book {hostile}"


def test_a_thousand_page_book_renders_every_page() -> None:
    book = sample_book("he", pages=1000, failed=frozenset({500}))
    texts = styled(render(book, ExportOptions(page_markers=True)))
    assert sum(1 for style, _text in texts if style == "Heading 1") == 999
    markers = [text for style, text in texts if style == "Page Marker"]
    assert markers == [f"— {index} —" for index in range(1, 1001)]
    assert [text for style, text in texts if style == "Translation Notice"] == [
        "[לא ניתן היה לתרגם את עמוד 500: מנוע התרגום נכשל. הטקסט המקורי שלו מופיע להלן, ללא תרגום.]"
    ]
