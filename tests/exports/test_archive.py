"""The Archive of real books in several scripts, through the API and the export queue: its
zip entries, the manifest, the page images, and every format inside checked with the
same real tools as on its own (epubcheck, pdftoppm and pdftotext, html5lib, python-docx)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import docx
import html5lib
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from exports.blocks import blocks_of
from exports.labels import labels_for
from projects.models import PageStatus, ProjectStatus
from tests.exports.books import SAMPLES
from tests.exports.test_epub import EPUBCHECK, assert_epubcheck_passes
from tests.exports.test_export_api import run_export_queue
from tests.exports.test_pdf import (
    assert_contains_text,
    assert_contains_words,
    assert_renders_every_page,
    needs_tools,
    text_of,
)
from tests.factories import ProjectFactory, pages_add

pytestmark = pytest.mark.django_db

FILES = {
    "book.md": "Markdown",
    "book.txt": "PlainText",
    "book.html": "Html",
    "book.epub": "Epub",
    "book.docx": "Docx",
    "book.pdf": "Pdf",
}
FAILED_PAGE = 2


@pytest.fixture(autouse=True)
def _files_in_a_fresh_folder(local_storage):
    return local_storage


def book_in(owner, language: str, pages: int):  # type: ignore[no-untyped-def]
    """A CompletedWithErrors book in `language`: page images in storage, every page
    translated but page 2, which failed."""
    project = ProjectFactory(
        owner=owner, status=ProjectStatus.COMPLETED_WITH_ERRORS, name=f"Book {language}", target_language_code=language
    )
    for page in pages_add(project, pages, text_layer="Source words of the page.", has_text_layer=True):
        default_storage.save(page.image_key, ContentFile(b"\x89PNG image of page " + str(page.index).encode()))
    project.pages.update(
        status=PageStatus.APPROVED, translated_at=timezone.now(), engine="echo", detected_source_language="en"
    )
    for page in project.pages.all():
        page.translation = SAMPLES[language].format(n=page.index)
        page.save(update_fields=["translation"])
    project.pages.filter(index=FAILED_PAGE).update(
        status=PageStatus.FAILED, translation="", failure_reason="the engine timed out", failure_code="engine_error"
    )
    project.pages.filter(index=1).update(review_flags=[FLAG])
    return project


FLAG = "Low OCR confidence: the words were read with 52% confidence on average."


def plain(markdown: str) -> list[str]:
    """The text of each block of a page's Markdown."""
    return [block.text for block in blocks_of(markdown)]


@needs_tools
@pytest.mark.parametrize(("language", "pages"), [("hi", 3), ("ar", 4), ("ja", 2)])
def test_the_archive_holds_every_format_the_images_and_a_manifest(
    language: str, pages: int, user, auth_client, tmp_path: Path
):
    project = book_in(user, language, pages)
    response = auth_client.post(f"/v1/projects/{project.pk}/export", {"format": "Archive"}, format="json")
    assert response.status_code == 202, response.json()
    assert run_export_queue() == 1
    (entry,) = auth_client.get(f"/v1/projects/{project.pk}/exports").json()
    assert (entry["format"], entry["mimeType"]) == ("Archive", "application/zip")
    download = auth_client.get(entry["url"])
    assert download["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    assert archive.testzip() is None

    images = {f"images/page-{index:05d}.png" for index in range(1, pages + 1)}
    assert set(archive.namelist()) == {*FILES, *images, "manifest.json"}
    for index in range(1, pages + 1):
        stored = project.pages.get(index=index).image_key
        with default_storage.open(stored, "rb") as image:
            assert archive.read(f"images/page-{index:05d}.png") == image.read()

    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["project"] == {"id": str(project.pk), "name": project.name, "status": "CompletedWithErrors"}
    assert (manifest["targetLanguage"], manifest["sourceLanguage"], manifest["pageCount"]) == (language, "en", pages)
    assert {(file["name"], file["format"]) for file in manifest["files"]} == set(FILES.items())
    assert [page["index"] for page in manifest["pages"]] == list(range(1, pages + 1))
    failed = manifest["pages"][FAILED_PAGE - 1]
    assert (failed["translated"], failed["failed"], failed["failureCode"], failed["failureReason"]) == (
        False,
        True,
        "engine_error",
        "the engine timed out",
    )
    assert all(page["image"] == f"images/page-{page['index']:05d}.png" for page in manifest["pages"])
    assert [page["reviewFlags"] for page in manifest["pages"]] == [[FLAG]] + [[]] * (pages - 1)

    labels = labels_for(language)  # the notice is in the book's language
    notice = labels.failed.format(index=FAILED_PAGE, reason=labels.reason("engine_error"))
    translated = [SAMPLES[language].format(n=index) for index in range(1, pages + 1) if index != FAILED_PAGE]
    markdown = archive.read("book.md").decode()
    plain_text = archive.read("book.txt").decode()
    for text in (markdown, plain_text):
        assert notice in text
    for page in translated:
        assert page in markdown
        for block in plain(page):
            assert block in plain_text

    parser = html5lib.HTMLParser(namespaceHTMLElements=False)
    html = parser.parse(archive.read("book.html").decode())
    assert parser.errors == []
    assert html.get("lang") == language
    assert html.get("dir") == ("rtl" if language == "ar" else "ltr")
    assert notice in "".join(html.itertext())

    document = docx.Document(io.BytesIO(archive.read("book.docx")))
    paragraphs = "\n".join(paragraph.text for paragraph in document.paragraphs)
    assert notice in paragraphs
    for page in translated:
        for block in plain(page):
            assert block in paragraphs

    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(archive.read("book.pdf"))
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    assert_renders_every_page(pdf, sheets)
    extracted = text_of(pdf)
    assert_contains_text(extracted, notice)
    for page in translated:  # a sheet may mix directions (the failed page's English original)
        for block in plain(page):
            assert_contains_words(extracted, block)

    if EPUBCHECK is not None:
        assert_epubcheck_passes(archive.read("book.epub"), tmp_path)
