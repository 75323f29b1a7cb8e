"""The table of contents in every export with navigation: a book whose structured pages
carry chapters, numbered sections and subsections is translated (echo engine) and exported
over HTTP, and each file is read back — the EPUB's nav and NCX, the Docx's TOC field and
heading styles, the Pdf's outline (poppler's `pdftohtml -xml`), the Html's contents list —
to find the same nested sections, each leading to its heading."""

from __future__ import annotations

import io
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docx
import html5lib
import pytest
from docx.oxml.ns import qn
from lxml import etree

from exports.book import ExportBook, ExportOptions, ExportPage
from exports.labels import labels_for
from exports.services import book_for
from projects.models import PageStatus, ProjectStatus
from tests.exports.books import render_bytes
from tests.exports.test_epub import EPUBCHECK, assert_epubcheck_passes
from tests.exports.test_export_api import run_export_queue
from tests.exports.test_html import assert_valid_document
from tests.exports.test_pdf import needs_tools
from tests.factories import ProjectFactory, pages_add
from tests.projects.test_book_structure import _book as book_from_upload
from tests.projects.test_processing import credit, run_worker
from tests.support.corpus import debian_pdf, pdf_window

XHTML = "{http://www.w3.org/1999/xhtml}"
NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"

PROSE = "The library compresses data with the Burrows-Wheeler transform and Huffman coding."
# The pages as the book-structure layer writes them: a chapter per level-1 heading, numbered
# sections and subsections under it, a `####` below the contents' depth, a section on a page
# that does not start a chapter, Markdown inside a heading.
PAGES = [
    f"# Getting started\n\n{PROSE}\n\n## 1.1 Installing *bzip2*\n\n{PROSE}\n\n### 1.1.1 From `source`\n\n"
    f"{PROSE}\n\n#### A detail too deep for the contents\n\n{PROSE}\n\n## 1.2 Running\n\n{PROSE}",
    f"{PROSE} It goes on from the page before.\n\n## 1.3 Options\n\n{PROSE}",
    f"# Reference\n\n{PROSE}\n\n## 2.1 Functions\n\n{PROSE}\n\n### 2.1.1 `BZ2_bzCompress`\n\n{PROSE}",
]
MARK = "[echo → es] "  # the echo engine's marker, in each page's first block
Tree = list[tuple[str, list[Any]]]  # (title, the entries nested under it)
SECTIONS: Tree = [
    (
        f"{MARK}Getting started",
        [
            ("1.1 Installing bzip2", [("1.1.1 From source", [])]),
            ("1.2 Running", []),
            ("1.3 Options", []),
        ],
    ),
    (f"{MARK}Reference", [("2.1 Functions", [("2.1.1 BZ2_bzCompress", [])])]),
]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):  # type: ignore[no-untyped-def]
    return local_storage


def exported(owner, client, export_format: str, **options: object) -> bytes:  # type: ignore[no-untyped-def]
    """The book of PAGES translated into Spanish by the echo engine, exported in the format."""
    project = ProjectFactory(owner=owner, target_language_code="es", name="Manual de bzip2")
    for number, markdown in enumerate(PAGES, start=1):
        pages_add(
            project,
            1,
            text_layer=markdown,
            has_text_layer=True,
            structured=True,
            source_markdown=markdown,
            word_count=len(markdown.split()),
        )
        assert project.pages.count() == number
    credit(owner, "20")
    assert client.post(f"/v1/projects/{project.pk}/process").status_code in (200, 202)
    run_worker()
    project.refresh_from_db()
    assert project.status == ProjectStatus.COMPLETE
    assert set(project.pages.values_list("status", flat=True)) == {PageStatus.APPROVED}
    response = client.post(f"/v1/projects/{project.pk}/export", {"format": export_format, **options}, format="json")
    assert response.status_code == 202, response.json()
    run_export_queue()
    (listed,) = client.get(f"/v1/projects/{project.pk}/exports").json()
    return b"".join(client.get(listed["url"]).streaming_content)


def titles(tree: list[tuple[str, str, list[Any]]]) -> Tree:
    """A tree of (title, link, children) without the links."""
    return [(title, titles(children)) for title, _link, children in tree]


def links(tree: list[tuple[str, str, list[Any]]]) -> list[tuple[str, str]]:
    """Every (title, link) of a tree, depth first."""
    return [pair for title, link, children in tree for pair in [(title, link), *links(children)]]


def xhtml_list(ol: etree._Element | None, namespace: str = XHTML) -> list[tuple[str, str, list[Any]]]:
    """A nav's nested `<ol>` as (title, href, children)."""
    if ol is None:
        return []
    entries = []
    for item in ol.findall(f"{namespace}li"):
        link = item.find(f"{namespace}a")
        assert link is not None
        entries.append(
            ("".join(link.itertext()), link.get("href") or "", xhtml_list(item.find(f"{namespace}ol"), namespace))
        )
    return entries


def ncx_points(parent: etree._Element) -> list[tuple[str, str, list[Any]]]:
    return [
        (
            point.findtext(f"{NCX}navLabel/{NCX}text") or "",
            point.find(f"{NCX}content").get("src") or "",  # type: ignore[union-attr]
            ncx_points(point),
        )
        for point in parent.findall(f"{NCX}navPoint")
    ]


def assert_links_lead_to_their_headings(archive: zipfile.ZipFile, tree: list[tuple[str, str, list[Any]]]) -> None:
    """A chapter's entry leads to its document; a section's to the heading of that title."""
    for _title, href, children in tree:
        assert "#" not in href
        for section, link in links(children):
            file_name, anchor = link.split("#")
            assert file_name == href
            chapter = etree.fromstring(archive.read(f"EPUB/{file_name}"))
            (heading,) = chapter.xpath("//*[@id=$anchor]", anchor=anchor)
            assert heading.tag in {f"{XHTML}h{level}" for level in range(1, 4)}
            assert " ".join("".join(heading.itertext()).split()) == section


def test_epub_nav_and_ncx_nest_each_chapters_sections_linking_to_their_headings(user, auth_client, tmp_path: Path):
    data = exported(user, auth_client, "Epub")
    archive = zipfile.ZipFile(io.BytesIO(data))
    nav = etree.fromstring(archive.read("EPUB/nav.xhtml"))
    (toc,) = [element for element in nav.iter(f"{XHTML}nav") if element.get(EPUB_TYPE) == "toc"]
    nav_tree = xhtml_list(toc.find(f"{XHTML}ol"))
    ncx_tree = ncx_points(etree.fromstring(archive.read("EPUB/toc.ncx")).find(f"{NCX}navMap"))  # type: ignore[arg-type]
    assert titles(nav_tree) == titles(ncx_tree) == SECTIONS
    assert links(nav_tree) == links(ncx_tree)

    assert_links_lead_to_their_headings(archive, nav_tree)
    assert [href.split("#")[0] for _title, href in links(nav_tree)] == ["chapter-0001.xhtml"] * 5 + [
        "chapter-0002.xhtml"
    ] * 3
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)


def test_docx_starts_with_a_toc_field_listing_the_headings_in_words_heading_styles(user, auth_client):
    document = docx.Document(io.BytesIO(exported(user, auth_client, "Docx")))
    paragraphs = document.paragraphs
    assert [paragraph.style.name for paragraph in paragraphs[:2]] == ["Title", "TOC Heading"]
    assert paragraphs[1].text == labels_for("es").contents
    instruction = "".join(text.text or "" for text in document.element.body.iter(qn("w:instrText")))
    assert instruction.strip() == 'TOC \\o "1-3" \\h \\z \\u'
    kinds = [char.get(qn("w:fldCharType")) for char in document.element.body.iter(qn("w:fldChar"))]
    assert kinds == ["begin", "separate", "end"]

    entries = [paragraph for paragraph in paragraphs if paragraph.style.name.startswith("toc ")]
    expected = [
        ("toc 1", f"{MARK}Getting started"),
        ("toc 2", "1.1 Installing bzip2"),
        ("toc 3", "1.1.1 From source"),
        ("toc 2", "1.2 Running"),
        ("toc 2", "1.3 Options"),
        ("toc 1", f"{MARK}Reference"),
        ("toc 2", "2.1 Functions"),
        ("toc 3", "2.1.1 BZ2_bzCompress"),
    ]
    assert [(paragraph.style.name, paragraph.text) for paragraph in entries] == expected
    headings = [paragraph for paragraph in paragraphs if paragraph.style.name.startswith("Heading ")]
    assert [(paragraph.style.name, paragraph.text) for paragraph in headings] == [
        (f"Heading {style[-1]}", text) for style, text in expected[:3]
    ] + [("Heading 4", "A detail too deep for the contents")] + [
        (f"Heading {style[-1]}", text) for style, text in expected[3:]
    ]
    bookmarks = {
        start.get(qn("w:name")): paragraph.text
        for paragraph in headings
        for start in paragraph._p.iter(qn("w:bookmarkStart"))
    }
    targets = [
        (link.get(qn("w:anchor")), "".join(text.text or "" for text in link.iter(qn("w:t"))))
        for paragraph in entries
        for link in paragraph._p.iter(qn("w:hyperlink"))
    ]
    assert [bookmarks[anchor] for anchor, _text in targets] == [text for _text_style, text in expected]
    assert [text for _anchor, text in targets] == [text for _style, text in expected]


def pdf_outline(item: etree._Element) -> Tree:
    """pdftohtml's <outline>: items, each followed by the <outline> nested under it."""
    tree: Tree = []
    for child in item:
        if child.tag == "item":
            tree.append(("".join(child.itertext()), []))
        elif child.tag == "outline":
            tree[-1] = (tree[-1][0], pdf_outline(child))
    return tree


@needs_tools
@pytest.mark.skipif(shutil.which("pdftohtml") is None, reason="needs poppler-utils (pdftohtml)")
def test_pdf_outline_nests_sections_under_their_chapters(user, auth_client, tmp_path: Path):
    path = tmp_path / "book.pdf"
    path.write_bytes(exported(user, auth_client, "Pdf"))
    xml = subprocess.run(
        ["pdftohtml", "-xml", "-i", "-stdout", "-q", str(path)], capture_output=True, check=True, timeout=120
    ).stdout
    outline = etree.fromstring(xml).find("outline")
    assert outline is not None
    assert pdf_outline(outline) == [("Manual de bzip2", []), *SECTIONS]


def test_html_contents_nest_sections_linking_to_their_headings(user, auth_client):
    root = assert_valid_document(exported(user, auth_client, "Html"))
    nav = root.find("./body/nav/ol")
    tree = xhtml_list(nav, namespace="")
    assert titles(tree) == SECTIONS
    ids = {element.get("id"): element for element in root.iter() if element.get("id")}
    for title, href in links(tree):
        target = ids[href.removeprefix("#")]
        if title.startswith(MARK):
            assert target.tag == "section"
        else:
            assert target.tag in {"h3", "h4"}  # `##` and `###`, one level down under the book's <h1>
            assert " ".join("".join(target.itertext()).split()) == title


def test_bilingual_files_keep_the_same_contents(user, auth_client):
    html = html5lib.parse(exported(user, auth_client, "Html", bilingual=True), namespaceHTMLElements=False)
    assert titles(xhtml_list(html.find("./body/nav/ol"), namespace="")) == SECTIONS


def in_memory_book(pages: list[str], *, language: str = "en", chapter_level: int = 2) -> ExportBook:
    def page_iter() -> Iterator[ExportPage]:
        for index, markdown in enumerate(pages, start=1):
            yield ExportPage(index, True, markdown, "", False, "", f"p/{index}.png")

    created = datetime(2026, 1, 1, tzinfo=UTC)
    return ExportBook("id", "Book", language, "en", created, len(pages), "Complete", page_iter, chapter_level)


def contents_of(export_format: str, book: ExportBook, options: ExportOptions, tmp_path: Path) -> Tree:
    """The contents each format shows (the Pdf's outline without the book's title)."""
    data = render_bytes(export_format, book, options)
    if export_format == "Epub":
        nav = etree.fromstring(zipfile.ZipFile(io.BytesIO(data)).read("EPUB/nav.xhtml"))
        (toc,) = [element for element in nav.iter(f"{XHTML}nav") if element.get(EPUB_TYPE) == "toc"]
        return titles(xhtml_list(toc.find(f"{XHTML}ol")))
    if export_format == "Html":
        return titles(xhtml_list(assert_valid_document(data).find("./body/nav/ol"), namespace=""))
    path = tmp_path / "book.pdf"
    path.write_bytes(data)
    xml = subprocess.run(["pdftohtml", "-xml", "-i", "-stdout", "-q", str(path)], capture_output=True, check=True)
    outline = etree.fromstring(xml.stdout).find("outline")
    assert outline is not None
    return pdf_outline(outline)[1:]


@needs_tools
@pytest.mark.parametrize("export_format", ["Epub", "Html", "Pdf"])
def test_sections_before_the_first_chapter_and_mid_page_headings_nest_alike_in_every_format(
    export_format: str, tmp_path: Path
) -> None:
    book = in_memory_book(
        [
            "A preface.\n\n### A note\n\nIts text.\n\n#### Too deep\n\nx",
            "More preface.",
            "# The chapter\n\nText.\n\n## A section\n\n### Its part\n\nText.\n\n# A level-1 heading mid-page\n\nText.",
            "Text going on.\n\n## Another section\n\nOn a page that starts no chapter.",
        ]
    )
    assert contents_of(export_format, book, ExportOptions(pages_per_chapter=2), tmp_path) == [
        ("Pages 1–2", [("A note", [])]),
        (
            "The chapter",
            [
                ("A section", [("Its part", [])]),
                ("A level-1 heading mid-page", []),  # at the chapter's level: it nests nothing
                ("Another section", []),
            ],
        ),
    ]


@needs_tools
@pytest.mark.parametrize("export_format", ["Epub", "Html", "Pdf"])
def test_a_book_without_chapter_headings_lists_its_sections_under_its_page_ranges(
    export_format: str, tmp_path: Path
) -> None:
    book = in_memory_book(["### Uno\n\nTexto.", "Texto.\n\n### Dos\n\nTexto.", "### Tres\n\nTexto."], language="es")
    assert contents_of(export_format, book, ExportOptions(pages_per_chapter=2), tmp_path) == [
        ("Páginas 1–2", [("Uno", []), ("Dos", [])]),
        ("Página 3", [("Tres", [])]),
    ]


def test_docx_of_a_book_without_headings_has_no_contents() -> None:
    data = render_bytes("Docx", in_memory_book(["Just text.", "#### Too deep to list\n\nMore text."]))
    document = docx.Document(io.BytesIO(data))
    assert [paragraph.style.name for paragraph in document.paragraphs] == ["Title", "Normal", "Heading 4", "Normal"]
    assert list(document.element.body.iter(qn("w:fldChar"))) == []


@pytest.mark.slow
def test_a_real_manual_gets_nested_sections_that_lead_to_their_headings(user, auth_client, settings, tmp_path: Path):
    """The bzip2 manual's pages 8-16 (sections 2.5-2.9, then chapter 3 and its sections),
    read by the book-structure layer, translated by the echo engine, exported to EPUB."""
    try:
        source = debian_pdf("bzip2")
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    settings.TRANSLATION_ENGINE = "echo"
    settings.TRANSLATION_ENGINE_OPTIONS = {}
    credit(user, "50")
    project_id = book_from_upload(
        auth_client, pdf_window(source, 8, 16, tmp_path / "bzip2.pdf").read_bytes(), target="es"
    )
    assert auth_client.post(f"/v1/projects/{project_id}/process").status_code == 202
    run_worker()
    assert auth_client.post(f"/v1/projects/{project_id}/export", {"format": "Epub"}, format="json").status_code == 202
    run_export_queue()
    (entry,) = auth_client.get(f"/v1/projects/{project_id}/exports").json()
    data = b"".join(auth_client.get(entry["url"]).streaming_content)
    archive = zipfile.ZipFile(io.BytesIO(data))
    nav = etree.fromstring(archive.read("EPUB/nav.xhtml"))
    (toc,) = [element for element in nav.iter(f"{XHTML}nav") if element.get(EPUB_TYPE) == "toc"]
    tree = xhtml_list(toc.find(f"{XHTML}ol"))
    assert_links_lead_to_their_headings(archive, tree)
    chapter_three = next(children for title, _link, children in tree if "3. Programming with libbzip2" in title)
    numbered = {
        title.split()[0]: [child[0].split()[0] for child in children] for title, _link, children in chapter_three
    }
    assert numbered["3.1."] == ["3.1.1.", "3.1.2.", "3.1.3."]  # subsections under their section
    assert {"3.2.", "3.3."} <= set(numbered)  # the sections after it stay the chapter's
    if EPUBCHECK is not None:
        assert_epubcheck_passes(data, tmp_path)


CHAPTERS_AND_A_SECTION_AT_A_PAGE_TOP = [
    "# One\n\nText.",
    "## 1.1 At the top of a page\n\nText.",
    "# Two\n\nText.\n\n## 2.1 Inside\n\nText.",
]


@needs_tools
@pytest.mark.parametrize("export_format", ["Epub", "Html", "Pdf"])
def test_in_a_book_of_level_1_chapters_a_level_2_heading_at_a_page_top_is_a_section(
    export_format: str, tmp_path: Path
) -> None:
    book = in_memory_book(CHAPTERS_AND_A_SECTION_AT_A_PAGE_TOP, chapter_level=1)
    assert contents_of(export_format, book, ExportOptions(), tmp_path) == [
        ("One", [("1.1 At the top of a page", [])]),
        ("Two", [("2.1 Inside", [])]),
    ]


@pytest.mark.parametrize(
    ("translations", "level"),
    [
        (CHAPTERS_AND_A_SECTION_AT_A_PAGE_TOP, 1),  # two pages start with `#`
        (["# The book's title", "## Chapter one\n\nText.", "## Chapter two\n\nText."], 2),  # `#` once
        (["Text.", "## Chapter one", "Text.\n\n# Mid-page"], 2),
    ],
)
def test_the_book_cuts_chapters_at_level_1_when_two_pages_start_with_one(translations: list[str], level: int) -> None:
    project = ProjectFactory()
    for translation in translations:
        pages_add(project, 1, status=PageStatus.APPROVED, translation=translation)
    pages_add(project, 1, status=PageStatus.FAILED, translation="# Not a translated page")
    assert book_for(project=project).chapter_level == level
