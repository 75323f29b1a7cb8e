"""Footnotes, as the structure layer writes them (Markdown footnotes: `text[^4]` and, at the
page's end, `[^4]: the note`), come out of every format as a reader expects them: Markdown
footnotes labelled per page, `[4]` and the notes after the page in PlainText, linked notes
with a way back in Html and Epub (EPUB 3's pop-up footnotes), Word footnotes in Docx, raised
marks and the notes in smaller type after their page in the Pdf. A label is unique within a
page only: the same label on two pages is two notes. Each format is read back as a reader
gets it (parsed HTML and XHTML, the Docx's footnotes part, pdftotext)."""

from __future__ import annotations

import io
import re
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from xml.etree.ElementTree import Element

import docx
import pikepdf
import pytest
from lxml import etree
from markdown_it import MarkdownIt
from mdit_py_plugins.footnote import footnote_plugin

from exports.blocks import Block, blocks_of, note_mark, notes_apart, plain_text_of
from exports.book import ExportBook, ExportOptions, ExportPage
from exports.renderers._html import markdown_html
from exports.toc import page_sections
from tests.exports.books import render_bytes, sample_book
from tests.exports.test_epub import assert_epubcheck_passes, chapters_of, read_back
from tests.exports.test_html import _text, assert_valid_document
from tests.exports.test_pdf import needs_tools, text_of

# Four pages: two chapters; page 1 refers to note 4 twice and to a starred note, page 2
# has a note 4 of its own, page 3's chapter heading carries a note, page 4 has none.
PAGES = {
    1: (
        "# Chapter 1\n\n"
        "A polystyrene micro-sphere (WGM)[^4] of glass.[^star] The sphere again[^4].\n\n"
        "[^4]: WGM occur at particular resonant wavelengths.\n"
        "[^star]: Measured at room temperature."
    ),
    2: "The second page refers to its own note[^4].\n\n[^4]: The second page's note four.",
    3: "# Chapter 2[^1]\n\nA page of the second chapter.\n\n[^1]: A note on the heading.",
    4: "A page without notes, **as before**.\n\n- one\n- two",
}
# Each note as a reader reads it: its id in the book, its mark, its text.
NOTES = [
    ("p1-4", "4", "WGM occur at particular resonant wavelengths."),
    ("p1-star", "*", "Measured at room temperature."),
    ("p2-4", "4", "The second page's note four."),
    ("p3-1", "1", "A note on the heading."),
]
NOTE_TEXT = {note: text for note, _mark, text in NOTES}
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
XHTML = "{http://www.w3.org/1999/xhtml}"
EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"


def notes_book(language: str = "en", pages: dict[int, str] | None = None) -> ExportBook:
    book = sample_book(language, pages=4)
    texts = pages or PAGES

    def page_iter() -> Iterator[ExportPage]:
        for page in book.pages():
            yield replace(page, translation=texts[page.index])

    return replace(book, pages=page_iter)


def markdown_parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark")
    footnote_plugin(parser)
    return parser


# Blocks -------------------------------------------------------------------------------


def test_a_reference_is_a_run_with_its_notes_id_and_mark_and_a_definition_a_note_block() -> None:
    body, notes = notes_apart(blocks_of(PAGES[1], page=1))

    paragraph = body[1]
    references = [run for run in paragraph.runs if run.note]
    assert [(run.text, run.note, run.reference) for run in references] == [
        ("4", "p1-4", 0),
        ("*", "p1-star", 0),
        ("4", "p1-4", 1),
    ]
    assert paragraph.text == "A polystyrene micro-sphere (WGM) of glass. The sphere again."  # marks left out
    assert [(note.note, note.mark, note.text, note.referenced) for note in notes] == [
        ("p1-4", "4", NOTE_TEXT["p1-4"], True),
        ("p1-star", "*", NOTE_TEXT["p1-star"], True),
    ]


def test_the_same_label_on_two_pages_is_two_notes() -> None:
    first = notes_apart(blocks_of(PAGES[1], page=1))[1][0]
    second = notes_apart(blocks_of(PAGES[2], page=2))[1][0]

    assert (first.mark, second.mark) == ("4", "4")
    assert first.note != second.note
    assert first.text != second.text


def test_a_heading_with_a_note_keeps_its_title_without_the_mark() -> None:
    blocks = blocks_of(PAGES[3], page=3)

    assert blocks[0].kind == "heading"
    assert blocks[0].text == "Chapter 2"
    assert [section.title for section in page_sections(3, blocks, chapter_heading=False)] == ["Chapter 2"]


@pytest.mark.parametrize(
    ("label", "mark"),
    [("4", "4"), ("12", "12"), ("star", "*"), ("dagger", "\u2020"), ("ddagger", "\u2021"), ("a", "a")],
)
def test_a_label_shows_the_books_own_mark(label: str, mark: str) -> None:
    assert note_mark(label) == mark
    body, notes = notes_apart(blocks_of(f"Text[^{label}].\n\n[^{label}]: The note.", page=7))
    assert [run.text for run in body[0].runs if run.note] == [mark]
    assert notes[0].mark == mark


def test_a_note_nothing_refers_to_and_a_label_defined_twice_are_kept() -> None:
    markdown = "Text[^1].\n\n[^1]: First.\n[^1]: Again.\n[^9]: Never referred to."

    _body, notes = notes_apart(blocks_of(markdown, page=5))

    assert [(note.note, note.text, note.referenced) for note in notes] == [
        ("p5-1", "First.", True),
        ("p5-1-again", "Again.", False),
        ("p5-9", "Never referred to.", False),
    ]


def test_a_note_of_several_paragraphs_keeps_them_as_lines() -> None:
    markdown = "Text[^1].\n\n[^1]: First paragraph.\n\n    Second paragraph.\n\nAfter the note."

    body, notes = notes_apart(blocks_of(markdown, page=1))

    assert notes[0].text == "First paragraph.\nSecond paragraph."
    assert [block.text for block in body] == ["Text.", "After the note."]


def test_text_without_footnotes_gives_the_blocks_it_gave() -> None:
    """No note runs, no note blocks, brackets and carets as text."""
    markdown = "# Title\n\nA [link](http://x) and [^not a note] and x^2.\n\n| a | b |\n|--|--|\n| 1 | 2 |"

    blocks = blocks_of(markdown, page=3)

    assert [block.kind for block in blocks] == ["heading", "paragraph", "table"]
    assert blocks[1].text == "A link and [^not a note] and x^2."
    assert not any(run.note for block in blocks for run in block.runs)


# Markdown and PlainText ---------------------------------------------------------------


def test_markdown_keeps_footnotes_with_labels_unique_in_the_book() -> None:
    text = render_bytes("Markdown", notes_book()).decode("utf-8")

    assert "(WGM)[^p1-4] of glass.[^p1-star]" in text
    assert "own note[^p2-4]." in text
    assert "[^p2-4]: The second page's note four." in text
    env: dict = {}
    tokens = markdown_parser().parse(text, env)
    references = [
        child.meta["label"]
        for token in tokens
        if token.type == "inline"
        for child in token.children or []
        if child.type == "footnote_ref"
    ]
    assert references == ["p1-4", "p1-star", "p1-4", "p2-4", "p3-1"]
    definitions = {}
    for position, token in enumerate(tokens):
        if token.type == "footnote_open":
            definitions[token.meta["label"]] = tokens[position + 2].content
    assert definitions == NOTE_TEXT


def test_markdown_of_a_page_without_notes_is_its_translation() -> None:
    text = render_bytes("Markdown", notes_book()).decode("utf-8")

    assert text.rstrip().endswith(PAGES[4])


def test_plain_text_marks_in_brackets_and_each_pages_notes_after_its_text() -> None:
    text = render_bytes("PlainText", notes_book()).decode("utf-8")

    assert "A polystyrene micro-sphere (WGM)[4] of glass.[*] The sphere again[4]." in text
    assert "Chapter 2[1]" in text
    order = [
        "The sphere again[4].",
        "[4] WGM occur at particular resonant wavelengths.",
        "[*] Measured at room temperature.",
        "The second page refers to its own note[4].",
        "[4] The second page's note four.",
        "A page of the second chapter.",
        "[1] A note on the heading.",
        "A page without notes, as before.",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert "[^" not in text
    assert plain_text_of(PAGES[4], page=4) == "A page without notes, as before.\n\n• one\n\n• two"


# Html ---------------------------------------------------------------------------------


def _html_notes(root: Element) -> dict[str, Element]:
    return {aside.get("id", ""): aside for aside in root.iter("aside") if aside.get("role") == "doc-footnote"}


def test_html_references_link_to_their_notes_and_back() -> None:
    root = assert_valid_document(render_bytes("Html", notes_book()))  # every in-page link lands, ids unique

    references = [link for link in root.iter("a") if link.get("role") == "doc-noteref"]
    assert [(link.get("href"), _text(link)) for link in references] == [
        ("#fn-p1-4", "4"),
        ("#fn-p1-star", "*"),
        ("#fn-p1-4", "4"),
        ("#fn-p2-4", "4"),
        ("#fn-p3-1", "1"),
    ]
    notes = _html_notes(root)
    assert list(notes) == [f"fn-{note}" for note, _mark, _text in NOTES]
    for note, mark, text in NOTES:
        aside = notes[f"fn-{note}"]
        assert " ".join(_text(aside).split()) == f"{mark} {text} \u21a9"
        back = [link for link in aside.iter("a") if link.get("role") == "doc-backlink"]
        assert [link.get("href") for link in back] == [f"#fnref-{note}"]
        assert back[0].get("aria-label") == "Back to the text"
    ids = {element.get("id") for element in root.iter()}
    assert {"fnref-p1-4", "fnref-p1-4-2", "fnref-p2-4"} <= ids


def test_html_notes_follow_their_page_and_the_contents_read_without_marks() -> None:
    root = assert_valid_document(render_bytes("Html", notes_book()))

    pages = [div for div in root.iter("div") if div.get("class") == "page"]
    held = [[aside.get("id") for aside in page.iter("aside")] for page in pages]
    assert held == [["fn-p1-4", "fn-p1-star"], ["fn-p2-4"], ["fn-p3-1"], []]
    nav = next(root.iter("nav"))
    assert [_text(link) for link in nav.iter("a")] == ["Chapter 1", "Chapter 2"]


def test_html_of_a_page_without_notes_is_markdown_its_own() -> None:
    html = markdown_html(PAGES[4], table_label="Table", page=4, back_label="Back to the text")

    assert html == MarkdownIt("commonmark", {"html": False}).render(PAGES[4])


def test_html_notes_in_a_right_to_left_bilingual_book_stay_in_the_translation() -> None:
    pages = {
        1: "# الفصل 1\n\nكان البيت القديم[^1] في نهاية الطريق.\n\n[^1]: ملاحظة عن البيت.",
        2: "صفحة ثانية[^1].\n\n[^1]: ملاحظة أخرى.",
        3: "صفحة.",
        4: "صفحة.",
    }
    root = assert_valid_document(render_bytes("Html", notes_book("ar", pages), ExportOptions(bilingual=True)))

    for div in root.iter("div"):
        if div.get("class") == "source":
            assert list(div.iter("aside")) == []
    assert list(_html_notes(root)) == ["fn-p1-1", "fn-p2-1"]


# Epub ---------------------------------------------------------------------------------


def _epub_notes(chapter: etree._Element) -> list[etree._Element]:
    return [element for element in chapter.iter(f"{XHTML}aside") if element.get(EPUB_TYPE) == "footnote"]


def test_epub_noterefs_pop_up_footnotes_at_the_end_of_their_chapter(tmp_path: Path) -> None:
    chapters = chapters_of(read_back(render_bytes("Epub", notes_book()), tmp_path))

    assert [[aside.get("id") for aside in _epub_notes(chapter)] for chapter in chapters] == [
        ["fn-p1-4", "fn-p1-star", "fn-p2-4"],
        ["fn-p3-1"],
    ]
    for chapter in chapters:
        body = next(chapter.iter(f"{XHTML}body"))
        ids = {element.get("id") for element in chapter.iter() if element.get("id")}
        references = [link for link in chapter.iter(f"{XHTML}a") if link.get(EPUB_TYPE) == "noteref"]
        for link in references:
            assert link.get("href", "").removeprefix("#") in ids  # in the same document
            assert link.getparent().tag == f"{XHTML}sup"
        notes = _epub_notes(chapter)
        last = body[-1]  # the notes come after all of the chapter's text
        assert last.get("class") == "footnotes"
        assert list(last) == notes
        for aside in notes:
            note = aside.get("id", "").removeprefix("fn-")
            assert " ".join("".join(aside.itertext()).split()).startswith(f"{note_mark(note.split('-')[1])} ")
            assert NOTE_TEXT[note] in "".join(aside.itertext())
            back = [link for link in aside.iter(f"{XHTML}a") if link.get("role") == "doc-backlink"]
            assert [link.get("href") for link in back] == [f"#fnref-{note}"]
            assert f"fnref-{note}" in ids


@pytest.mark.parametrize("options", [ExportOptions(), ExportOptions(bilingual=True, page_markers=True)])
def test_epub_with_notes_passes_epubcheck(options: ExportOptions, tmp_path: Path) -> None:
    assert_epubcheck_passes(render_bytes("Epub", notes_book(), options), tmp_path)


# Docx ---------------------------------------------------------------------------------


def _docx_parts(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        return {name: package.read(name) for name in package.namelist()}


def _paragraph_text(paragraph: etree._Element) -> str:
    return "".join(text.text or "" for text in paragraph.iter(f"{W}t"))


def test_docx_notes_are_word_footnotes_with_the_books_marks() -> None:
    parts = _docx_parts(render_bytes("Docx", notes_book()))

    assert b'PartName="/word/footnotes.xml"' in parts["[Content_Types].xml"]
    assert b"relationships/footnotes" in parts["word/_rels/document.xml.rels"]
    assert b'<w:footnotePr><w:footnote w:id="-1"/><w:footnote w:id="0"/></w:footnotePr>' in parts["word/settings.xml"]
    footnotes = etree.fromstring(parts["word/footnotes.xml"])
    by_id = {note.get(f"{W}id"): note for note in footnotes.iter(f"{W}footnote")}
    assert [by_id[key].get(f"{W}type") for key in ("-1", "0")] == ["separator", "continuationSeparator"]
    document = etree.fromstring(parts["word/document.xml"])
    references = list(document.iter(f"{W}footnoteReference"))
    marks = []
    for reference in references:
        run = reference.getparent()
        assert reference.get(f"{W}customMarkFollows") == "1"
        assert run.find(f"{W}rPr/{W}rStyle").get(f"{W}val") == "FootnoteReference"
        mark = "".join(text.text or "" for text in run.iter(f"{W}t"))
        note = by_id[reference.get(f"{W}id")]
        marks.append((mark, " ".join(_paragraph_text(paragraph) for paragraph in note.iter(f"{W}p"))))
    assert marks == [(mark, f"{mark} {text}") for _note, mark, text in NOTES]
    assert len(by_id) == 2 + len(NOTES)  # the separators, then one footnote per note
    # the second reference to page 1's note 4 is its raised mark, not a second footnote
    second = [
        run
        for run in document.iter(f"{W}r")
        if _paragraph_text(run) == "4" and run.find(f"{W}footnoteReference") is None
    ]
    assert len(second) == 1
    assert second[0].find(f"{W}rPr/{W}rStyle").get(f"{W}val") == "FootnoteReference"
    contents = [
        paragraph.text
        for paragraph in docx.Document(io.BytesIO(render_bytes("Docx", notes_book()))).paragraphs
        if paragraph.style is not None and paragraph.style.style_id == "TOC1"
    ]
    assert contents == ["Chapter 1", "Chapter 2"]  # the contents read without the heading's mark


def test_docx_styles_its_footnotes_as_word_does() -> None:
    document = docx.Document(io.BytesIO(render_bytes("Docx", notes_book())))

    text = document.styles["footnote text"]
    reference = document.styles["footnote reference"]
    assert (text.style_id, reference.style_id) == ("FootnoteText", "FootnoteReference")
    assert reference.font.superscript is True
    assert text.font.size is not None
    assert text.font.size.pt < 11


def test_docx_without_notes_has_no_footnotes_part() -> None:
    parts = _docx_parts(render_bytes("Docx", sample_book("en", pages=2)))

    assert "word/footnotes.xml" not in parts
    assert b"footnotes" not in parts["[Content_Types].xml"] + parts["word/_rels/document.xml.rels"]
    assert b"Footnote" not in parts["word/styles.xml"]


def test_docx_keeps_a_note_nothing_refers_to_at_the_end_of_its_page() -> None:
    pages = dict(PAGES)
    pages[4] = "A page with a note of its own.\n\n[^7]: Nothing refers to this note."
    document = etree.fromstring(_docx_parts(render_bytes("Docx", notes_book(pages=pages)))["word/document.xml"])

    texts = [_paragraph_text(paragraph) for paragraph in document.iter(f"{W}p")]
    assert texts[-2:] == ["A page with a note of its own.", "7 Nothing refers to this note."]


# Pdf ----------------------------------------------------------------------------------


def _words(pdf: Path) -> list[tuple[str, float]]:
    """Every word with its height (about its type size), in reading order."""
    result = subprocess.run(
        ["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, timeout=120, check=True
    )
    return [
        (word.group(5), float(word.group(4)) - float(word.group(2)))
        for word in re.finditer(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>', result.stdout
        )
    ]


@needs_tools
def test_pdf_raises_marks_and_sets_each_pages_notes_after_it_smaller(tmp_path: Path) -> None:
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(render_bytes("Pdf", notes_book()))

    text = " ".join(text_of(pdf).split())
    order = [
        "A polystyrene micro-sphere (WGM)4 of glass.* The sphere again4.",
        "4 WGM occur at particular resonant wavelengths.",
        "* Measured at room temperature.",
        "The second page refers to its own note4.",
        "4 The second page's note four.",
        "Chapter 21",
        "A page of the second chapter.",
        "1 A note on the heading.",
        "A page without notes, as before.",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    heights = dict(_words(pdf))
    assert heights["(WGM)"] > heights["WGM"]  # the note is set smaller than the text
    marks = [height for word, height in _words(pdf) if word == "4"]
    assert marks
    assert max(marks) < heights["(WGM)"]  # and so is a reference's raised mark


@needs_tools
def test_pdf_references_link_to_their_notes(tmp_path: Path) -> None:
    with pikepdf.open(io.BytesIO(render_bytes("Pdf", notes_book()))) as pdf:
        links = [
            annotation
            for page in pdf.pages
            for annotation in page.get("/Annots", [])
            if annotation.get("/Subtype") == "/Link"
        ]
        assert len(links) == 5  # one per reference
        for link in links:
            assert "/Dest" in link or "/A" in link


def test_note_blocks_are_not_the_pages_start() -> None:
    """A definition before the text (an odd page) does not hide its chapter heading."""
    blocks = blocks_of("[^1]: A note first.\n\n# Chapter 9[^1]\n\nText.", page=9)

    body, notes = notes_apart(blocks)
    assert body[0] == Block("heading", body[0].runs, level=1)
    assert [note.note for note in notes] == ["p9-1"]
